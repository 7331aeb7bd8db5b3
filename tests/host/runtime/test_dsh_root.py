"""The host on a dsh root in Zstandard (dsh-roots §6): a session it creates sits where the
reference looks for it, in frames a reader of that layout loads, and a resumed session continues
and stays loadable."""

from __future__ import annotations

from pathlib import Path

from eventlog import read_log
from eventlog._dsh import project_key
from eventlog._zstd import read_text, scan_frames
from host.testing import open_harness


async def test_a_session_created_and_resumed_in_a_dsh_zstd_root(tmp_path: Path, autojump_clock: object) -> None:
    work = tmp_path / "work"
    work.mkdir()
    root = tmp_path / "dsh"
    log = root / project_key(str(work.resolve())) / "main" / "session.jsonl.zstd"
    async with open_harness(root, cwd=work, dsh_default=True) as h:
        await h.start()
        await h.prompt("main", "hi")
        await h.settle()
    first = log.read_bytes()
    assert scan_frames(first).torn_start is None and len(scan_frames(first).frames) >= 2
    async with open_harness(root, cwd=work) as h:  # detected: dsh in zstd
        await h.start()
        await h.prompt("main", "again")
        await h.settle()
    data = log.read_bytes()
    assert data.startswith(first)
    turns = [e.value()["turn"] for e in read_log(log).events if e.type == "turn/start"]
    assert turns == [1, 2]
    assert sorted(p.name for p in log.parent.iterdir()) == ["session.jsonl.zstd"]
    snapshot = read_log(log, expected_id="main")
    assert snapshot.repair is None and snapshot.encoding == "zstd"
    assert read_text(data).committed.count(b"\n") == len(snapshot.events) + 1
