"""The issue's reproduction on a real full disk (host §3.3, host §8; schedule §11.10): a 2 MiB tmpfs as
the session root, a reminder through ``turnlog serve``, a ballast file that fills the disk before it
falls due, then the ballast deleted and a prompt sent. The reminder's follow-up turn fails with
``PERSISTENCE`` while the disk is full and runs again once it frees, so ``Reminder:`` does come.
Needs permission to mount (root); skipped otherwise."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.host.process_support import clean_env
from tests.host.rpc_support import HANG_GUARD_S, Process, prompt, request


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs mounted for the test."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
        check=False,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(directory: Path) -> Path:
    """Write a ballast file until the disk is full (unbuffered, down to the last page)."""
    ballast = directory / "ballast"
    fd = os.open(ballast, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        for size in (1 << 16, 1 << 12, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return ballast


def is_status(frame: dict[str, Any], **params: str) -> bool:
    return frame.get("method") == "session.status" and frame["params"] == {"sessionId": "main", **params}


def event_types(frames: list[dict[str, Any]]) -> list[str]:
    return [f["params"]["event"]["type"] for f in frames if f.get("method") == "session.event"]


def replies(frames: list[dict[str, Any]]) -> list[str]:
    return [
        block["text"]
        for f in frames
        if f.get("method") == "session.event" and f["params"]["event"]["type"] == "assistant/message"
        for block in f["params"]["event"]["data"]["message"]["content"]
    ]


@pytest.mark.slow  # a real subprocess, a reminder and a shutdown: about 5 s
def test_a_reminder_due_while_the_tmpfs_is_full_is_shown_once_the_ballast_is_gone(tmpfs: Path) -> None:
    root = tmpfs / "sessions"
    proc = Process(["serve", "--root", str(root)], env=clean_env())
    guard = threading.Timer(3 * HANG_GUARD_S, proc.kill)  # a hang fails the test instead
    guard.start()
    try:
        proc.send(prompt("p-1", "main", "remind me in 1 seconds to breathe"))
        proc.until(lambda f: is_status(f, status="idle"))
        ballast = fill(tmpfs)
        # Due now: the receipt and the dispatch, then the follow-up turn's checkpoint fails.
        outage = proc.until(lambda f: is_status(f, status="running", storage="failing"))
        outage += proc.until(
            lambda f: f.get("method") == "session.event" and f["params"]["event"]["type"] == "turn/end"
        )
        assert outage[-1]["params"]["event"]["data"]["reason"]["error"]["code"] == "PERSISTENCE"
        ballast.unlink()
        proc.send(prompt("p-2", "main", "hi"))  # new input makes the session retry at once
        after = proc.until(lambda f: is_status(f, status="idle"))
        assert any(is_status(f, status="running", storage="ok") for f in after)
        assert replies(after) == ["Reminder: breathe", "You said: hi"]
        proc.send(request("bye", "shutdown"))
        assert proc.frame() == {"jsonrpc": "2.0", "id": "bye", "result": {}}
        assert proc.wait() == 0
    finally:
        guard.cancel()
        proc.kill()
    assert not [line for line in proc.stderr_lines if "Traceback" in line]
    inspected = subprocess.run(
        [
            sys.executable,
            "-m",
            "host",
            "inspect",
            "main",
            "--root",
            str(root),
            "--type",
            "turn/end",
            "--json",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **clean_env()},
        check=True,
    )
    ends = [e["data"]["reason"] for e in json.loads(inspected.stdout)["events"]]
    assert [r["kind"] for r in ends] == ["completed", "error", "completed", "completed"]
    assert ends[1]["error"]["code"] == "PERSISTENCE"
