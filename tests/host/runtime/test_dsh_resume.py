"""A session the reference wrote, resumed by the host from a reference-style Zstandard root
(dsh-roots §6, §7): the real deepseek-harness logs, re-encoded frame per batch, continue with a
new turn, and the root stays loadable by a reader of that layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventlog import read_log
from eventlog._zstd import scan_frames
from host.testing import open_harness
from tests.eventlog.zstd_support import cli_decompress, reference_root, zstd_program
from tests.fixture_paths import DSH_FIXTURES


@pytest.mark.parametrize("name", ["fork-parent", "multi-turn-packed-rows"])
async def test_a_reference_session_resumes_continues_and_stays_loadable(
    tmp_path: Path, autojump_clock: object, name: str
) -> None:
    raw = DSH_FIXTURES / f"{name}.jsonl"
    (path,) = reference_root(tmp_path / "root", [raw], "zstd")
    before = path.read_bytes()
    old = read_log(path)
    id = old.header.id
    last_turn = max(e.value()["turn"] for e in old.events if e.type == "turn/start")
    async with open_harness(tmp_path / "root") as h:  # detected: dsh in zstd
        await h.start()
        assert await h.resume(id) == "resumed"
        await h.prompt(id, "what is the codeword?")
        await h.settle()
        assert h.read(id).path == path
    data = path.read_bytes()
    assert data.startswith(before)  # the reference's frames are untouched
    snapshot = read_log(path, expected_id=id)
    assert snapshot.repair is None and snapshot.encoding == "zstd"
    new = list(snapshot.events[len(old.events) :])
    ends = [e.value() for e in new if e.type == "turn/end"]
    assert [e.value()["turn"] for e in new if e.type == "turn/start"] == [last_turn + 1]
    assert ends == [{"turn": last_turn + 1, "reason": {"kind": "completed"}}]
    # A reader of that layout that knows nothing of turnlog: the raw file, then the new records.
    appended = b"".join(event.to_json() + b"\n" for event in new)
    assert cli_decompress(zstd_program(), data) == raw.read_bytes() + appended
    assert sorted(p.name for p in path.parent.iterdir()) == ["session.jsonl.zstd"]


async def test_a_crash_in_a_zstd_root_leaves_a_torn_frame_that_the_next_host_repairs(
    tmp_path: Path, autojump_clock: object
) -> None:
    # The harness's crash cuts a Zstandard log at frames: the records before the matching event
    # stay (as a frame of their own), the matching record is left as a frame cut short.
    root = tmp_path / "root"
    async with open_harness(root, cwd=tmp_path, dsh_default=True) as h:
        await h.start()
        await h.prompt("main", "hi")
        await h.settle()
        h.crash_when(lambda _id, e: e.type == "assistant/message", survivors="before-match", torn_tail=True)
        await h.prompt("main", "again")
        await h.crashed()
        path = h.read("main").path
        assert path.name == "session.jsonl.zstd"
        cut = path.read_bytes()
        assert scan_frames(cut).torn_start is not None
        crashed = h.read("main")
        assert crashed.repair is not None and crashed.repair.recovered == ()
        assert crashed.events[-1].type != "assistant/message"
        await h.start()
        await h.resume("main")
        await h.settle()
        after = h.read("main")
    assert after.repair is None
    assert [e.to_json() for e in after.events[: len(crashed.events)]] == [e.to_json() for e in crashed.events]
    ends = [e.value() for e in after.events if e.type == "turn/end"]
    assert ends[-1] == {"turn": 2, "reason": {"kind": "interrupted"}}
