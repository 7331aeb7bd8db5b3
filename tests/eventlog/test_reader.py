"""eventlog.reader on real files: read_header, read_log, read_log_fd, iter_events
(log-format §5.5, log-format §7, log-format §12)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from eventlog.errors import CorruptLog, SessionNotFound, UnsupportedFormat
from eventlog.format import Event, SessionHeader
from eventlog.reader import LogSnapshot, index_log, iter_events, read_header, read_log, read_log_fd, tail
from tests.eventlog.spec_examples import (
    E1_LINES,
    E4_CLOSERS,
    E5_CLOSERS,
    E5_LINES,
    E9_EVENTS,
    E9_ROW,
    log_bytes,
)

DAMAGED_4 = b'{"type":"user/message","seq":2,"time":1767261600102,"data":{"id":"msg-1"'


def write(tmp_path: Path, data: bytes, name: str = "demo-1.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def fingerprint(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def lines(snapshot: LogSnapshot) -> list[bytes]:
    return [e.to_json() for e in snapshot.events]


# --------------------------------------------------------------------------- E1 and friends


def test_e1_reads_cleanly(tmp_path: Path) -> None:
    path = write(tmp_path, log_bytes(E1_LINES))
    snapshot = read_log(path, expected_id="demo-1")
    assert snapshot.path == path
    assert snapshot.header == SessionHeader(id="demo-1", created_at=1767261600000, cwd="/home/ana")
    assert lines(snapshot) == E1_LINES[1:]
    assert (snapshot.file_bytes, snapshot.committed_bytes, snapshot.repair) == (887, 887, None)
    assert read_header(path) == snapshot.header
    assert [e.to_json() for e in iter_events(path)] == E1_LINES[1:]
    assert [e.seq for e in iter_events(path, start_seq=4)] == [4, 5]
    assert list(iter_events(path, start_seq=99)) == []


def test_e2_torn_tail(tmp_path: Path) -> None:
    path = write(tmp_path, log_bytes(E1_LINES) + b'{"type":"turn/start","seq":6,"ti')
    before = fingerprint(path)
    snapshot = read_log(path, expected_id="demo-1")
    assert len(snapshot.events) == 6
    assert (snapshot.file_bytes, snapshot.committed_bytes) == (919, 887)
    repair = json.loads(msgspec.json.encode(snapshot.repair))
    detail = repair["defect"].pop("detail")
    assert isinstance(detail, str) and detail
    assert repair == {
        "truncateTo": 887,
        "droppedBytes": 32,
        "droppedRecords": 0,
        "defect": {"line": 8, "offset": 887, "reason": "torn final record"},
        "openTurn": None,
        "closers": [],
    }
    assert [e.seq for e in iter_events(path)] == list(range(6))
    assert fingerprint(path) == before


def test_e3_committed_corruption(tmp_path: Path) -> None:
    path = write(tmp_path, log_bytes([*E1_LINES[:3], DAMAGED_4, *E1_LINES[4:]]))
    before = fingerprint(path)
    with pytest.raises(CorruptLog) as info:
        read_log(path)
    assert str(info.value).startswith(
        f'corrupt session log "{path}": unparsable committed event at line 4, byte 256: '
    )
    with pytest.raises(CorruptLog, match="unparsable committed event at line 4, byte 256"):
        list(iter_events(path))
    assert fingerprint(path) == before


def test_e4_defect_without_later_turn_end(tmp_path: Path) -> None:
    path = write(tmp_path, log_bytes([*E1_LINES[:3], DAMAGED_4, *E1_LINES[4:6]]))
    before = fingerprint(path)
    snapshot = read_log(path)
    assert lines(snapshot) == E1_LINES[1:3]
    repair = snapshot.repair
    assert repair is not None
    assert (repair.truncate_to, repair.dropped_bytes, repair.dropped_records) == (256, 411, 3)
    assert repair.defect is not None
    assert (repair.defect.line, repair.defect.offset, repair.defect.reason) == (4, 256, "unparsable committed event")
    assert repair.open_turn == 1
    assert [c.to_json() for c in repair.closers] == E4_CLOSERS
    assert snapshot.committed_bytes == 256 and snapshot.file_bytes == 667
    assert fingerprint(path) == before


def test_e5_interrupted_tool_calls(tmp_path: Path) -> None:
    path = write(tmp_path, log_bytes([*E1_LINES, *E5_LINES]))
    snapshot = read_log(path)
    assert len(snapshot.events) == 11
    repair = snapshot.repair
    assert repair is not None
    assert (repair.truncate_to, repair.dropped_bytes, repair.dropped_records, repair.defect) == (None, 0, 0, None)
    assert repair.open_turn == 2
    assert [c.to_json() for c in repair.closers] == E5_CLOSERS
    # After the closers are appended the log is balanced.
    path.write_bytes(log_bytes([*E1_LINES, *E5_LINES, *E5_CLOSERS]))
    assert read_log(path).repair is None


def test_e9_packed_row(tmp_path: Path) -> None:
    path = write(tmp_path, log_bytes([*E1_LINES[:5], E9_ROW]))
    snapshot = read_log(path)
    assert lines(snapshot)[4:] == E9_EVENTS
    assert snapshot.repair is not None and snapshot.repair.open_turn == 1


E10 = [
    (b'{"type":"turn/start","seq":6.0,"time":1,"data":{"turn":2}}', "invalid event envelope"),
    (b'{"type":"turn/start","seq":6,"time":9007199254740992,"data":{"turn":2}}', "invalid event envelope"),
    (b'{"type":"turn/start","seq":6,"time":1}', "invalid event envelope"),
    (b'{"type":"turn/start","seq":6,"time":1,"data":{"turn":2},"ignorable":false}', "invalid event envelope"),
    (b'{"type":"turn/start","seq":6,"time":1,"data":{"turn":2},"surfaceOp":"append"}', "invalid event envelope"),
    (b'{"type":"Turn_Start","seq":6,"time":1,"data":{}}', "invalid event envelope"),
    (b'{"type":"turn/start","seq":7,"time":1,"data":{"turn":2}}', "seq gap in committed region"),
]


@pytest.mark.parametrize(("record", "reason"), E10)
def test_e10_defects_then_the_tail_rule(tmp_path: Path, record: bytes, reason: str) -> None:
    path = write(tmp_path, log_bytes([*E1_LINES, record]))
    snapshot = read_log(path)
    assert len(snapshot.events) == 6
    repair = snapshot.repair
    assert repair is not None and repair.defect is not None
    assert (repair.defect.line, repair.defect.offset, repair.defect.reason) == (8, 887, reason)
    assert (repair.truncate_to, repair.dropped_records) == (887, 1)
    if reason == "seq gap in committed region":
        assert repair.defect.detail == "expected 6, got 7"
    # The same defect followed by a turn/end is committed corruption.
    path.write_bytes(log_bytes([*E1_LINES, record, b'{"type":"turn/end","seq":7,"time":1,"data":{}}']))
    with pytest.raises(CorruptLog, match=f"{reason} at line 8, byte 887"):
        read_log(path)


def test_e10_valid_record(tmp_path: Path) -> None:
    record = b'{"type":"turn/start","seq":6,"time":-5,"data":{"turn":2},"ignorable":true}'
    path = write(tmp_path, log_bytes([*E1_LINES, record]))
    snapshot = read_log(path)
    assert lines(snapshot)[-1] == record
    assert snapshot.events[-1].ignorable is True
    assert snapshot.repair is not None and snapshot.repair.defect is None  # only the open turn 2
    assert [c.type for c in snapshot.repair.closers] == ["turn/end"]


def test_seq_gap_message(tmp_path: Path) -> None:
    record = b'{"type":"turn/end","seq":7,"time":1,"data":{"turn":2}}'
    path = write(tmp_path, log_bytes([*E1_LINES, record]))
    with pytest.raises(CorruptLog) as info:
        read_log(path)
    assert str(info.value) == (
        f'corrupt session log "{path}": seq gap in committed region at line 8, byte 887 (expected 6, got 7)'
    )


def test_e11_version_refusal(tmp_path: Path) -> None:
    path = write(tmp_path, b'{"type":"session","version":3,"id":"x"}\n', "x.jsonl")
    message = (
        'session "x" uses log format v3, but this turnlog reads only v0: the log was written by a '
        f"newer program — upgrade turnlog to open it (raw log: {path})"
    )
    for read in (read_log, read_header, lambda p: list(iter_events(p))):
        with pytest.raises(UnsupportedFormat) as info:
            read(path)
        assert str(info.value) == message and info.value.version == 3
    path.write_bytes(b"[0]\n")
    with pytest.raises(CorruptLog, match="first line is not a session header"):
        read_log(path)


def test_a_damaged_zstandard_file_is_a_corrupt_zstandard_log(tmp_path: Path) -> None:
    path = write(tmp_path, b"\x28\xb5\x2f\xfd\x04\x00\x00\x00", "session.jsonl.zstd")
    for read in (read_log, read_header):
        with pytest.raises(CorruptLog) as info:
            read(path)
        assert str(info.value) == f'corrupt Zstandard session log "{path}": empty or header-less Zstandard session log'


def test_identity_and_missing_files(tmp_path: Path) -> None:
    path = write(tmp_path, log_bytes(E1_LINES), "renamed.jsonl")
    assert read_log(path).header.id == "demo-1"  # by path: the file name is never interpreted
    with pytest.raises(CorruptLog) as info:
        read_log(path, expected_id="renamed")
    assert str(info.value) == (
        f'corrupt session log "{path}": requested id "renamed" does not match header id "demo-1"'
    )
    with pytest.raises(SessionNotFound) as by_id:
        read_log(tmp_path / "nope.jsonl", expected_id="nope")
    assert str(by_id.value) == 'session "nope" not found'  # byte for byte, as before
    assert by_id.value.id == "nope" and by_id.value.path == tmp_path / "nope.jsonl"


@pytest.mark.parametrize(
    "read",
    [
        read_log,
        index_log,
        read_header,
        lambda path: list(iter_events(path)),
        lambda path: trio.run(lambda: _tail_all(path)),
    ],
    ids=["read_log", "index_log", "read_header", "iter_events", "tail"],
)
def test_a_missing_file_read_by_path_is_session_not_found(tmp_path: Path, read: Any) -> None:
    # log-format §5.5: the typed not-found error, naming the path, never a bare FileNotFoundError
    path = tmp_path / "nope.jsonl"
    with pytest.raises(SessionNotFound) as info:
        read(path)
    assert str(info.value) == f'session log "{path}" not found'
    assert info.value.id is None and info.value.path == path
    assert not isinstance(info.value, OSError)
    with pytest.raises(SessionNotFound, match='^session "nope" not found$'):
        read_header(path, expected_id="nope")


async def _tail_all(path: Path) -> list[Event]:
    return [event async for event in tail(path, follow=False)]


def test_symlinks_are_not_followed(tmp_path: Path) -> None:
    target = write(tmp_path, log_bytes(E1_LINES), "real.jsonl")
    link = tmp_path / "demo-1.jsonl"
    link.symlink_to(target)
    for read in (read_log, read_header, lambda p: list(iter_events(p))):
        with pytest.raises(OSError):
            read(link)


def test_only_regular_files_are_read(tmp_path: Path) -> None:
    # A directory or FIFO given as a log is refused with an OSError naming it (log-format §5.6: errors
    # name the path), never a bare read error, and a FIFO's open never waits for a writer.
    directory = tmp_path / "logs"
    directory.mkdir()
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    # A writer end, so that opening the FIFO for reading cannot block even unrefused.
    writer = os.open(fifo, os.O_RDWR)
    try:
        for path in (directory, fifo):
            for read in (read_log, read_header, lambda p: list(iter_events(p))):
                with pytest.raises(OSError) as info:
                    read(path)
                assert info.value.filename == str(path)
    finally:
        os.close(writer)


def test_read_log_fd_reads_from_offset_zero(tmp_path: Path) -> None:
    path = write(tmp_path, log_bytes([*E1_LINES, *E5_LINES]))
    fd = os.open(path, os.O_RDWR)
    try:
        os.lseek(fd, 500, os.SEEK_SET)
        snapshot = read_log_fd(fd, path, expected_id="demo-1")
        assert os.lseek(fd, 0, os.SEEK_CUR) == 500
    finally:
        os.close(fd)
    assert len(snapshot.events) == 11 and snapshot.repair is not None
    assert [c.to_json() for c in snapshot.repair.closers] == E5_CLOSERS


def test_unrepairable_open_turn_is_corrupt(tmp_path: Path) -> None:
    path = write(tmp_path, log_bytes([*E1_LINES, b'{"type":"turn/start","seq":6,"time":1,"data":{"turn":"two"}}']))
    with pytest.raises(CorruptLog, match="cannot repair interrupted turn: turn/start at seq 6 has malformed data"):
        read_log(path)
    with pytest.raises(CorruptLog, match="cannot repair interrupted turn: turn/start at seq 6 has malformed data"):
        list(iter_events(path))
    # Once the turn has ended, nothing needs repair and its data is never read.
    path.write_bytes(log_bytes([*E1_LINES, b'{"type":"turn/start","seq":6,"time":1,"data":{"turn":"two"}}', b'{"type":"turn/end","seq":7,"time":1,"data":{}}']))
    assert read_log(path).repair is None and len(list(iter_events(path))) == 8


def test_iter_events_start_seq_must_be_a_count(tmp_path: Path) -> None:
    path = write(tmp_path, log_bytes(E1_LINES))
    with pytest.raises(ValueError):
        list(iter_events(path, start_seq=-1))


def test_read_header_limits(tmp_path: Path) -> None:
    path = write(tmp_path, b'{"type":"session","version":0,"id":"x","createdAt":1,"pad":"' + b"p" * 20000 + b'"}\n')
    assert read_header(path).id == "x"
    with pytest.raises(CorruptLog, match="longer than 10000 bytes"):
        read_header(path, max_bytes=10000)
    path.write_bytes(b'{"type":"session","version":0,"id":"x","createdAt":1}')
    with pytest.raises(CorruptLog, match="empty or header-less session log"):
        read_header(path)
    path.write_bytes(b"")
    with pytest.raises(CorruptLog, match="empty or header-less session log"):
        read_log(path)


# --------------------------------------------------------------------------- deepseek-harness logs


def _records(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")[1:-1]


@pytest.mark.parametrize(
    ("name", "records", "events"),
    [
        ("fork-parent.jsonl", 49, 200),
        ("fork-child.jsonl", 41, None),
        ("tool-edit-packed-rows.jsonl", 47, None),
        ("multi-turn-packed-rows.jsonl", 182, None),
    ],
)
def test_deepseek_harness_logs(dsh: Path, name: str, records: int, events: int | None) -> None:
    path = dsh / name
    before = fingerprint(path)
    snapshot = read_log(path)
    raw = _records(path)
    assert len(raw) == records
    expected = 0
    for record in raw:
        obj = json.loads(record)
        expected += len(obj["data"]["texts" if "texts" in obj["data"] else "args"]) if "seq0" in obj else 1
    assert len(snapshot.events) == expected
    if events is not None:
        assert expected == events
    assert [e.seq for e in snapshot.events] == list(range(expected))
    assert snapshot.repair is None
    assert snapshot.committed_bytes == snapshot.file_bytes == path.stat().st_size
    # Every event line re-encodes to its own value (deepseek-harness writes sourceEventSeqs
    # before surfaceOp, so bytes can differ in key order); rows expand into assistant/chunk.
    by_seq = {e.seq: e for e in snapshot.events}
    for record in raw:
        obj = json.loads(record)
        if "seq0" in obj:
            assert all(by_seq[obj["seq0"] + k].type == "assistant/chunk" for k in range(len(obj["data"].get("texts", obj["data"].get("args", [])))))
        else:
            assert json.loads(by_seq[obj["seq"]].to_json()) == obj
            if b'"sourceEventSeqs"' not in record:
                assert by_seq[obj["seq"]].to_json() == record
    assert [e.seq for e in iter_events(path)] == list(range(expected))
    assert fingerprint(path) == before


def test_deepseek_headers(dsh: Path) -> None:
    child = read_header(dsh / "fork-child.jsonl")
    assert child == SessionHeader(
        id="ada8966c-9fa3-441b-8721-37ff1e795e6a",
        created_at=1783352137161,
        cwd="/home/user/project",
        parent_session="96cf59c9-b347-48b9-b234-a5200913ad05",
        seed_length=42,
        origin="subagent",
        delegation_depth=1,
    )
    web = read_header(dsh / "multi-turn-packed-rows.jsonl")
    assert web.delegation_depth == 0 and web.cwd == "/home/user/project/workspace"
    assert read_log(dsh / "multi-turn-packed-rows.jsonl").header == web


def test_fork_parent_row_expansion(dsh: Path) -> None:
    path = dsh / "fork-parent.jsonl"
    row = next(r for r in _records(path) if r.startswith(b'{"type":"reasoning-chunks"'))
    obj = json.loads(row)
    snapshot = read_log(path)
    seq0, time0, data = obj["seq0"], obj["time0"], obj["data"]
    running = time0
    for k, text in enumerate(data["texts"]):
        if k:
            running += data["dt"][k - 1]
        event = snapshot.events[seq0 + k]
        assert (event.seq, event.time) == (seq0 + k, running)
        assert event.value() == {
            "turn": data["turn"],
            "step": data["step"],
            "chunk": {"type": "reasoning-delta", "index": data["index"], "text": text},
        }
