"""Leftover publish temp names (``<id>.jsonl.<12 hex>.tmp``, log-format §6.3): a process killed
during a first publish leaves one behind. Opening the session for writing, or the first publish
of a new session of that id, removes that session's leftovers under its lock and syncs the root;
a temp name another publish still holds locked, and the names of other sessions, are kept.

The leftovers are made by the real publish code path, in a process killed at one of its steps.
"""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from eventlog import SessionStore, fileio, read_log
from eventlog.cli import main

KILLED_PUBLISH = """
import os, signal, sys
import trio
from eventlog import SessionStore, fileio

root, session_id, step = sys.argv[1:]
# The publish looks its steps up in fileio when it runs them: dying in one leaves the file
# system as a kill at that moment would (the temp file written and synced; linked or not).
setattr(fileio, step, lambda *args: os.kill(os.getpid(), signal.SIGKILL))

async def main():
    async with SessionStore(root).create(id=session_id) as session:
        session.append("note/x", {"n": 1})
        await session.flush()

trio.run(main)
"""


def killed_publish(root: Path, session_id: str, step: str) -> list[Path]:
    """Run a first publish of ``session_id`` killed at fileio ``step``; its leftover temp names."""
    result = subprocess.run(
        [sys.executable, "-c", KILLED_PUBLISH, str(root), session_id, step],
        capture_output=True, timeout=60, check=False,
    )
    assert result.returncode == -signal.SIGKILL, result.stderr
    leftovers = temps(root, session_id)
    assert len(leftovers) == 1
    return leftovers


def temps(root: Path, session_id: str) -> list[Path]:
    return sorted(root.glob(f"{session_id}.jsonl.*.tmp"))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    root.mkdir(mode=0o700)
    return root


async def test_open_removes_the_name_a_publish_killed_after_its_link_left(root: Path) -> None:
    [leftover] = killed_publish(root, "s", "sync_dir")  # linked; root not synced, temp kept
    assert leftover.stat().st_ino == (root / "s.jsonl").stat().st_ino  # a second name
    with fileio.spy("sync_dir") as synced:
        async with SessionStore(root).open("s") as session:
            assert temps(root, "s") == []
            assert [event.value() for event in session.events] == [{"n": 1}]
    assert synced.calls == 1  # the root, after the removal
    assert read_log(root / "s.jsonl").events[0].value() == {"n": 1}


async def test_the_first_publish_removes_a_temp_file_a_publish_killed_before_its_link_left(
    root: Path,
) -> None:
    [orphan] = killed_publish(root, "s", "link")  # written and synced, never linked
    assert not (root / "s.jsonl").exists()
    async with SessionStore(root).create(id="s") as session:
        session.append("note/x", {"n": 2})
        assert orphan.exists()  # nothing is published before the first batch
        with fileio.spy("sync_dir") as synced:
            assert await session.flush() == 0
        assert synced.calls == 1  # the publish's own root sync covers the removal
    assert temps(root, "s") == []
    assert [event.value() for event in read_log(root / "s.jsonl").events] == [{"n": 2}]


def test_validate_no_longer_warns_once_the_session_was_opened(root: Path, capsys) -> None:
    [leftover] = killed_publish(root, "s", "sync_dir")
    assert main(["validate", "--root", str(root)]) == 0
    assert f"leftover temp file {leftover}" in capsys.readouterr().out

    async def open_and_close() -> None:
        async with SessionStore(root).open("s"):
            pass

    trio.run(open_and_close)
    assert main(["validate", "--root", str(root)]) == 0
    assert "leftover" not in capsys.readouterr().out


async def test_a_temp_name_that_is_still_locked_and_other_sessions_names_are_kept(root: Path) -> None:
    [leftover] = killed_publish(root, "s", "sync_dir")
    killed_publish(root, "other", "link")
    live = root / "s.jsonl.0123456789ab.tmp"  # another publish of "s" in progress holds its lock
    live.write_bytes(b"")
    fd = os.open(live, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        async with SessionStore(root).open("s"):
            pass
        assert temps(root, "s") == [live]
    finally:
        os.close(fd)
    assert not leftover.exists()
    assert len(temps(root, "other")) == 1


async def test_removing_leftovers_is_best_effort(root: Path) -> None:
    # Through the fault seam: a failed unlink keeps the leftover (harmless, validate reports
    # it), a failed root sync after the removal leaves it undone at worst; neither fails open.
    [leftover] = killed_publish(root, "s", "sync_dir")
    with fileio.fail("unlink", errno.EIO) as failed_unlink:
        async with SessionStore(root).open("s") as session:
            assert session.next_seq == 1
    assert failed_unlink.failures == 1 and leftover.exists()
    with fileio.fail("sync_dir", errno.EIO) as failed_sync:
        async with SessionStore(root).open("s") as session:
            assert session.next_seq == 1
    assert failed_sync.failures == 1 and not leftover.exists()
