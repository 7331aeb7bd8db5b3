"""Acceptance audit of eventlog against docs/log-format.md, through the public API only.

Every expected value here is taken from that page (strings, key orders, shapes, byte counts of
the worked examples E1–E15), never from what the code produces. Sections follow the page:
format, files and ids, API, durability, repair, fork, vocabulary, command line and worked
examples (log-format §3–10, log-format §12); plus the real deepseek-harness logs.
"""

from __future__ import annotations

import errno
import importlib
import inspect
import json
import logging
import os
import stat
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

import eventlog
from eventlog import (
    CorruptLog,
    Defect,
    Event,
    EventLogError,
    ForkError,
    InvalidEvent,
    InvalidSessionId,
    LogSnapshot,
    PersistenceError,
    Repair,
    ReplaceOp,
    Session,
    SessionBusy,
    SessionClosed,
    SessionExists,
    SessionHeader,
    SessionNotFound,
    SessionStore,
    SurfaceError,
    UnsupportedFormat,
    default_root,
    iter_events,
    read_header,
    read_log,
    tail,
)
from tests.eventlog.live_support import SetClock, TrioWallClock, replay

# --------------------------------------------------------------------------- log-format §12 literals
# Copied from the worked examples of log-format §12 (⏎ removed; records joined with LF by ``log``).

E1 = [
    '{"type":"session","version":0,"id":"demo-1","createdAt":1767261600000,"cwd":"/home/ana","delegationDepth":0}',
    '{"type":"turn/start","seq":0,"time":1767261600100,"data":{"turn":1}}',
    '{"type":"step/start","seq":1,"time":1767261600101,"data":{"turn":1,"step":1}}',
    '{"type":"user/message","seq":2,"time":1767261600102,"data":{"id":"msg-1","role":"user","source":{"kind":"user","rpcId":"7"},"content":[{"type":"text","text":"Café at 9?"}]},"surfaceOp":"append"}',
    '{"type":"assistant/message","seq":3,"time":1767261601500,"data":{"turn":1,"step":1,"message":{"id":"msg-2","role":"assistant","source":{"kind":"model","provider":"scripted","model":"demo"},"content":[{"type":"text","text":"Sure, 9:00."}]}},"surfaceOp":"append"}',
    '{"type":"step/end","seq":4,"time":1767261601501,"data":{"turn":1,"step":1}}',
    '{"type":"turn/end","seq":5,"time":1767261601502,"data":{"turn":1,"reason":{"kind":"completed"}}}',
]
E1_OFFSETS = [0, 109, 178, 256, 452, 714, 790]
E1_SIZE = 887

E4_CLOSERS = [
    '{"type":"step/end","seq":2,"time":1767261600101,"data":{"turn":1,"step":1}}',
    '{"type":"turn/end","seq":3,"time":1767261600101,"data":{"turn":1,"reason":{"kind":"interrupted"}}}',
]

E5_TURN2 = [
    '{"type":"turn/start","seq":6,"time":1767265200000,"data":{"turn":2}}',
    '{"type":"step/start","seq":7,"time":1767265200001,"data":{"turn":2,"step":1}}',
    '{"type":"user/message","seq":8,"time":1767265200002,"data":{"id":"msg-3","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"Read notes.txt and todo.txt"}]},"surfaceOp":"append"}',
    '{"type":"assistant/message","seq":9,"time":1767265201200,"data":{"turn":2,"step":1,"message":{"id":"msg-4","role":"assistant","source":{"kind":"model","provider":"scripted","model":"demo"},"content":[{"type":"tool-call","id":"call-a","name":"read_file","arguments":"{\\"path\\":\\"notes.txt\\"}"},{"type":"tool-call","id":"call-b","name":"read_file","arguments":"{\\"path\\":\\"todo.txt\\"}"}]}},"surfaceOp":"append"}',
    '{"type":"tool/call","seq":10,"time":1767265201201,"data":{"turn":2,"step":1,"callId":"call-a","name":"read_file","arguments":"{\\"path\\":\\"notes.txt\\"}"}}',
]

# log-format §7.3, the two texts.
NOT_STARTED = (
    "The tool call was interrupted before the Harness recorded it as started. Retry it if it is "
    "still needed."
)
UNKNOWN = (
    "The tool call was interrupted after it was recorded, but no result was durably recorded. Its "
    "outcome is unknown. Decide whether to retry from the tool semantics: retry only if the "
    "operation is read-only or idempotent; if it may have side effects, first verify external "
    "state or ask the user. Do not retry blindly."
)

E5_CLOSERS = [
    line.replace("‹UNKNOWN›", UNKNOWN).replace("‹NOT_STARTED›", NOT_STARTED)
    for line in [
        '{"type":"tool/result","seq":11,"time":1767265201201,"data":{"turn":2,"step":1,"message":{"id":"interrupted-tool-result-call-a-11","role":"user","source":{"kind":"tool","callId":"call-a"},"content":[{"type":"tool-result","toolCallId":"call-a","isError":true,"content":[{"type":"text","text":"‹UNKNOWN›"}]}]},"error":{"name":"ToolOutcomeUnknownError","code":"TOOL_OUTCOME_UNKNOWN"}},"surfaceOp":"append","sourceEventSeqs":[10]}',
        '{"type":"tool/result","seq":12,"time":1767265201201,"data":{"turn":2,"step":1,"message":{"id":"interrupted-tool-result-call-b-12","role":"user","source":{"kind":"tool","callId":"call-b"},"content":[{"type":"tool-result","toolCallId":"call-b","isError":true,"content":[{"type":"text","text":"‹NOT_STARTED›"}]}]},"error":{"name":"ToolNotStartedError","code":"TOOL_NOT_STARTED"}},"surfaceOp":"append"}',
        '{"type":"step/end","seq":13,"time":1767265201201,"data":{"turn":2,"step":1}}',
        '{"type":"turn/end","seq":14,"time":1767265201201,"data":{"turn":2,"reason":{"kind":"interrupted"}}}',
    ]
]

E6_HEADER = '{"type":"session","version":0,"id":"demo-1-b","createdAt":1767268800000,"cwd":"/home/ana","parentSession":"demo-1","seedLength":6,"delegationDepth":0}'
E6_MARKER = '{"type":"session/end-seed","seq":6,"time":1767268800000,"data":{}}'

E9_ROW = '{"type":"text-chunks","seq0":4,"time0":1000,"data":{"turn":1,"step":1,"index":0,"dt":[12,-3],"texts":["Hel","lo","!"]}}'
E9_EVENTS = [
    '{"type":"assistant/chunk","seq":4,"time":1000,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"Hel"}}}',
    '{"type":"assistant/chunk","seq":5,"time":1012,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"lo"}}}',
    '{"type":"assistant/chunk","seq":6,"time":1009,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"!"}}}',
]

E11_VERSION_MESSAGE = (
    'session "x" uses log format v3, but this turnlog reads only v0: the log was written by a '
    "newer program — upgrade turnlog to open it (raw log: {path})"
)

E3_LINE4 = '{"type":"user/message","seq":2,"time":1767261600102,"data":{"id":"msg-1"'
E2_TORN = '{"type":"turn/start","seq":6,"ti'


def log(lines: list[str]) -> bytes:
    """The bytes of a file holding ``lines``, each followed by LF."""
    return "".join(line + "\n" for line in lines).encode("utf-8")


def put(path: Path, data: bytes) -> Path:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_bytes(data)
    os.chmod(path, 0o600)
    return path


def header(id: str = "x", **extra: Any) -> str:
    fields: dict[str, Any] = {"type": "session", "version": 0, "id": id, "createdAt": 1}
    fields.update(extra)
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False)


def event_line(type: str, seq: int, data: Any = None, time: int = 1, **extra: Any) -> str:
    fields: dict[str, Any] = {"type": type, "seq": seq, "time": time, "data": data}
    fields.update(extra)
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False)


def snapshot_of(tmp_path: Path, lines: list[str] | bytes, name: str = "x.jsonl") -> LogSnapshot:
    data = lines if isinstance(lines, bytes) else log(lines)
    return read_log(put(tmp_path / name, data))


def records(snapshot_events: Any) -> list[str]:
    return [event.to_json().decode("utf-8") for event in snapshot_events]


def read_error(tmp_path: Path, data: bytes, **kwargs: Any) -> BaseException:
    path = put(tmp_path / "x.jsonl", data)
    with pytest.raises((CorruptLog, UnsupportedFormat)) as info:
        read_log(path, **kwargs)
    return info.value


# =========================================================================== log-format §3.1 encoding


def test_3_1_non_utf8_record_is_unparsable(tmp_path: Path) -> None:
    data = log([header()]) + b'{"type":"a/b","seq":0,"time":1,"data":"\xff"}\n'
    snapshot = snapshot_of(tmp_path, data)
    assert snapshot.events == [] or list(snapshot.events) == []
    assert snapshot.repair is not None and snapshot.repair.defect is not None
    assert snapshot.repair.defect.reason == "unparsable committed event"
    assert snapshot.repair.defect.line == 2


def test_3_1_cr_before_lf_is_tolerated_but_a_blank_line_is_malformed(tmp_path: Path) -> None:
    data = (header() + "\r\n" + event_line("a/b", 0) + "\r\n").encode()
    snapshot = snapshot_of(tmp_path, data)
    assert [e.seq for e in snapshot.events] == [0] and snapshot.repair is None
    blank = snapshot_of(tmp_path, log([header(), event_line("a/b", 0), ""]), "y.jsonl")
    assert len(blank.events) == 1
    assert blank.repair is not None and blank.repair.defect is not None
    assert blank.repair.defect.line == 3
    assert blank.repair.defect.reason in ("unparsable committed event", "invalid event envelope")


def test_3_1_compact_encoding_raw_utf8_unescaped_slash() -> None:
    event = Event("a/b", 0, 1, msgspec.Raw(b'{"k":"caf\xc3\xa9/x"}'))
    assert event.to_json() == b'{"type":"a/b","seq":0,"time":1,"data":{"k":"caf\xc3\xa9/x"}}'


async def test_3_1_append_writes_compact_json_raw_utf8(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, clock=SetClock(5))
    async with store.create(id="enc") as s:
        s.append("note/x", {"a": [1, 2.5, None, True], "é": "/ü\n"})
        await s.flush()
    body = (tmp_path / "enc.jsonl").read_bytes().split(b"\n")[1]
    assert body == '{"type":"note/x","seq":0,"time":5,"data":{"a":[1,2.5,null,true],"é":"/ü\\n"}}'.encode()


# =========================================================================== log-format §3.2 header


def test_3_2_header_key_order_written_by_session_header() -> None:
    full = SessionHeader(
        id="h",
        created_at=7,
        cwd="/w",
        parent_session="p",
        seed_length=3,
        origin="subagent",
        delegation_depth=2,
        agent_preset="ap",
        owner="me",
    )
    assert full.to_json() == (
        b'{"type":"session","version":0,"id":"h","createdAt":7,"cwd":"/w","parentSession":"p",'
        b'"seedLength":3,"origin":"subagent","delegationDepth":2,"agentPreset":"ap","owner":"me"}'
    )
    assert SessionHeader(id="h", created_at=7).to_json() == (
        b'{"type":"session","version":0,"id":"h","createdAt":7,"delegationDepth":0}'
    )


def test_3_2_session_header_fields_in_on_disk_order_and_kw_only() -> None:
    assert SessionHeader.__struct_fields__ == (
        "version", "id", "created_at", "cwd", "parent_session", "seed_length", "origin",
        "delegation_depth", "agent_preset", "owner",
    )
    with pytest.raises(TypeError):
        SessionHeader(0, "x", 1)  # type: ignore[misc]
    h = SessionHeader(id="x", created_at=1)
    assert (h.version, h.delegation_depth, h.cwd, h.seed_length) == (0, 0, None, None)


@pytest.mark.parametrize(
    "data, fragment",
    [
        (b"", "empty or header-less session log"),
        (header().encode(), "empty or header-less session log"),
        (b"{not json\n", "header line is not valid JSON"),
        (b'{"type":"session","version":0,"id":"x","createdAt":NaN}\n', "header line is not valid JSON"),
        (b"[0]\n", "first line is not a session header"),
        (b'{"type":"session","version":"3","id":"x","createdAt":1}\n', "first line is not a session header"),
        (b'{"type":"session","version":true,"id":"x","createdAt":1}\n', "first line is not a session header"),
        (b'{"type":"session","id":"x","createdAt":1}\n', "first line is not a session header"),
        (b'{"type":"sessions","version":0,"id":"x","createdAt":1}\n', "first line is not a session header"),
        (b'{"type":"session","version":0,"createdAt":1}\n', "first line is not a session header"),
        (b'{"type":"session","version":0,"id":1,"createdAt":1}\n', "first line is not a session header"),
        (b'{"type":"session","version":0,"id":"x"}\n', "first line is not a session header"),
        (b'{"type":"session","version":0,"id":"x","createdAt":-0}\n', "first line is not a session header"),
        (b'{"type":"session","version":0,"id":"x","createdAt":-1}\n', "first line is not a session header"),
        (b'{"type":"session","version":0,"id":"x","createdAt":1.0}\n', "first line is not a session header"),
        (b'{"type":"session","version":0,"id":"x","createdAt":9007199254740992}\n', "first line is not a session header"),
        (b'{"type":"session","version":0,"id":"x","createdAt":1,"cwd":"rel/dir"}\n', "first line is not a session header"),
        (b'{"type":"session","version":0,"id":"x","createdAt":1,"cwd":null}\n', "first line is not a session header"),
        (b'{"type":"session","version":0,"id":"x","createdAt":1,"seedLength":-1}\n', "first line is not a session header"),
        (b'{"type":"session","version":0,"id":"x","createdAt":1,"origin":"user"}\n', "first line is not a session header"),
        (b'{"type":"session","version":0,"id":"x","createdAt":1,"delegationDepth":-0}\n', "first line is not a session header"),
        (b'{"type":"session","version":0,"id":"x","createdAt":1,"delegationDepth":true}\n', "first line is not a session header"),
        (b'{"type":"session","version":0,"id":"x","createdAt":1,"owner":""}\n', "first line is not a session header"),
        (b'{"type":"session","version":0,"id":"x","createdAt":1,"agentPreset":5}\n', "first line is not a session header"),
        (b'{"type":"session","version":0,"id":"x","createdAt":1,"parentSession":5}\n', "first line is not a session header"),
        (b'{"type":"session","version":0,"id":"x","createdAt":1,"sandboxMode":"x"}\n', "session header uses retired policy baseline fields"),
        (b'{"type":"session","version":0,"id":"x","createdAt":1,"approvalPolicy":"x"}\n', "session header uses retired policy baseline fields"),
    ],
)
def test_3_2_header_errors(tmp_path: Path, data: bytes, fragment: str) -> None:
    path = put(tmp_path / "x.jsonl", data)
    with pytest.raises(CorruptLog) as info:
        read_log(path)
    message = str(info.value)
    assert message.startswith(f'corrupt session log "{path}": {fragment}')
    if fragment == "first line is not a session header" and data != b"[0]\n":
        assert message.startswith(f'corrupt session log "{path}": first line is not a session header: ')
    assert "\n" not in message
    with pytest.raises(CorruptLog):
        read_header(path)


def test_3_2_version_first_even_if_everything_else_is_wrong(tmp_path: Path) -> None:
    for data in (
        b'{"version":3}\n',
        b'{"type":"nope","version":3,"id":5,"sandboxMode":1}\n',
        b'{"type":"session","version":3,"id":"x"}\n',
    ):
        path = put(tmp_path / "x.jsonl", data)
        with pytest.raises(UnsupportedFormat) as info:
            read_log(path)
        assert info.value.version == 3
        assert "uses log format v3, but this turnlog reads only v0" in str(info.value)
        with pytest.raises(UnsupportedFormat):
            read_header(path)


def test_e11_version_refusal_exact_message(tmp_path: Path) -> None:
    path = put(tmp_path / "x.jsonl", b'{"type":"session","version":3,"id":"x"}\n')
    with pytest.raises(UnsupportedFormat) as info:
        read_log(path)
    assert str(info.value) == E11_VERSION_MESSAGE.format(path=path)
    assert isinstance(info.value, EventLogError)
    path2 = put(tmp_path / "y.jsonl", b"[0]\n")
    with pytest.raises(CorruptLog) as corrupt:
        read_log(path2)
    assert "first line is not a session header" in str(corrupt.value)


def test_5_6_older_version_message_and_name_choice(tmp_path: Path) -> None:
    path = put(tmp_path / "x.jsonl", b'{"type":"session","version":-1,"id":"hdr"}\n')
    with pytest.raises(UnsupportedFormat) as info:
        read_log(path)
    assert str(info.value) == (
        f'session "hdr" uses log format v-1, older than the supported v0, and this build ships no '
        f"upgrade path for it (raw log: {path})"
    )
    assert info.value.version == -1
    # the requested id wins over the header's id
    with pytest.raises(UnsupportedFormat) as requested:
        read_log(path, expected_id="req")
    assert str(requested.value).startswith('session "req" uses log format v-1,')


async def test_5_6_version_message_names_the_requested_id_through_the_store(tmp_path: Path) -> None:
    put(tmp_path / "s1.jsonl", b'{"type":"session","version":2,"id":"other"}\n')
    store = SessionStore(tmp_path)
    with pytest.raises(UnsupportedFormat) as info:
        async with store.open("s1"):
            pass
    assert str(info.value).startswith('session "s1" uses log format v2, but this turnlog reads only v0')


def test_3_2_optional_keys_unknown_keys_and_missing_delegation_depth(tmp_path: Path) -> None:
    line = header(
        "x",
        cwd="C:\\work",
        parentSession="p",
        seedLength=0,
        origin="subagent",
        agentPreset="a",
        owner="o",
        futureKey={"a": 1},
    )
    snap = snapshot_of(tmp_path, [line])
    h = snap.header
    assert (h.cwd, h.parent_session, h.seed_length, h.origin, h.agent_preset, h.owner) == (
        "C:\\work", "p", 0, "subagent", "a", "o",
    )
    assert h.delegation_depth == 0  # absent: read as 0
    assert read_header(tmp_path / "x.jsonl") == h
    assert snapshot_of(tmp_path, [header(cwd="D:/x")], "w.jsonl").header.cwd == "D:/x"


def test_3_2_seed_length_beyond_committed_events_is_fatal(tmp_path: Path) -> None:
    path = put(tmp_path / "x.jsonl", log([header(seedLength=2), event_line("a/b", 0)]))
    with pytest.raises(CorruptLog):
        read_log(path)
    # a torn fragment does not count as an event
    path2 = put(tmp_path / "y.jsonl", log([header(seedLength=2), event_line("a/b", 0)]) + b'{"type":"a/b","seq":1')
    with pytest.raises(CorruptLog):
        read_log(path2)
    ok = put(tmp_path / "z.jsonl", log([header(seedLength=1), event_line("a/b", 0)]))
    assert read_log(ok).header.seed_length == 1


def test_3_2_identity_before_seed_length_and_repair(tmp_path: Path) -> None:
    path = put(tmp_path / "x.jsonl", log([header("x", seedLength=5)]) + b"torn")
    with pytest.raises(CorruptLog) as info:
        read_log(path, expected_id="y")
    assert str(info.value) == f'corrupt session log "{path}": requested id "y" does not match header id "x"'


# =========================================================================== log-format §3.3 events


E10_CASES = [
    ('{"type":"turn/start","seq":6.0,"time":1,"data":{"turn":2}}', "invalid event envelope"),
    ('{"type":"turn/start","seq":6,"time":9007199254740992,"data":{"turn":2}}', "invalid event envelope"),
    ('{"type":"turn/start","seq":6,"time":1}', "invalid event envelope"),
    ('{"type":"turn/start","seq":6,"time":1,"data":{"turn":2},"ignorable":false}', "invalid event envelope"),
    ('{"type":"turn/start","seq":6,"time":1,"data":{"turn":2},"surfaceOp":"append"}', "invalid event envelope"),
    ('{"type":"Turn_Start","seq":6,"time":1,"data":{}}', "invalid event envelope"),
    ('{"type":"turn/start","seq":7,"time":1,"data":{"turn":2}}', "seq gap in committed region"),
]


@pytest.mark.parametrize("record, reason", E10_CASES)
def test_e10_envelope_strictness(tmp_path: Path, record: str, reason: str) -> None:
    snapshot = snapshot_of(tmp_path, E1 + [record])
    assert len(snapshot.events) == 6
    assert snapshot.committed_bytes == E1_SIZE
    repair = snapshot.repair
    assert repair is not None and repair.defect is not None
    assert repair.defect.reason == reason
    assert (repair.defect.line, repair.defect.offset) == (8, E1_SIZE)
    assert repair.truncate_to == E1_SIZE
    assert repair.dropped_records == 1
    assert repair.dropped_bytes == len(record.encode()) + 1
    if reason == "seq gap in committed region":
        assert "expected 6, got 7" in repair.defect.detail
    # the same record followed by a turn/end is committed corruption (log-format §7.2)
    end = '{"type":"turn/end","seq":7,"time":1,"data":{"turn":2,"reason":{"kind":"completed"}}}'
    path = put(tmp_path / "c.jsonl", log(E1 + [record, end]))
    with pytest.raises(CorruptLog) as info:
        read_log(path)
    if reason == "seq gap in committed region":
        assert str(info.value) == (
            f'corrupt session log "{path}": seq gap in committed region at line 8, byte {E1_SIZE} '
            "(expected 6, got 7)"
        )
    else:
        assert str(info.value).startswith(
            f'corrupt session log "{path}": {reason} at line 8, byte {E1_SIZE}: '
        )
    assert (info.value.line, info.value.offset) == (8, E1_SIZE)


def test_e10_valid_negative_time_and_ignorable_kept(tmp_path: Path) -> None:
    record = '{"type":"turn/start","seq":6,"time":-5,"data":{"turn":2},"ignorable":true}'
    snapshot = snapshot_of(tmp_path, E1 + [record])
    assert snapshot.repair is not None  # an open turn: closers, but no defect
    assert snapshot.repair.defect is None and snapshot.repair.truncate_to is None
    event = snapshot.events[6]
    assert (event.seq, event.time, event.ignorable) == (6, -5, True)
    assert event.to_json().decode() == record


@pytest.mark.parametrize(
    "record, reason",
    [
        ('{"type":"a/b","seq":0,"time":1e3,"data":1}', "invalid event envelope"),
        ('{"type":"a/b","seq":0,"time":true,"data":1}', "invalid event envelope"),
        ('{"type":"a/b","seq":true,"time":1,"data":1}', "invalid event envelope"),
        ('{"type":"a/b","seq":0,"time":NaN,"data":1}', "unparsable committed event"),
        ('{"type":"a/b","seq":0,"time":1,"data":Infinity}', "unparsable committed event"),
        ('{"type":"a/b","seq":0,"time":1,"data":1,"extra":1}', "invalid event envelope"),
        ('{"type":"a/b","seq":0,"time":1,"data":1,"ignorable":null}', "invalid event envelope"),
        ('{"type":"a","seq":0,"time":1,"data":1}', "invalid event envelope"),
        ('{"type":"a/","seq":0,"time":1,"data":1}', "invalid event envelope"),
        ('{"type":"-a/b","seq":0,"time":1,"data":1}', "invalid event envelope"),
        ('{"type":"a/b/","seq":0,"time":1,"data":1}', "invalid event envelope"),
        ('{"type":"a/b\\n","seq":0,"time":1,"data":1}', "invalid event envelope"),
        ('{"type":5,"seq":0,"time":1,"data":1}', "invalid event envelope"),
        ('{"type":"user/message","seq":0,"time":1,"data":{}}', "invalid event envelope"),
        ('{"type":"user/message","seq":0,"time":1,"data":{},"surfaceOp":"prepend"}', "invalid event envelope"),
        ('{"type":"user/message","seq":0,"time":1,"data":{},"surfaceOp":null}', "invalid event envelope"),
        ('{"type":"a/b","seq":0,"time":1,"data":1,"sourceEventSeqs":[]}', "invalid event envelope"),
        ('{"type":"a/b","seq":0,"time":1,"data":1,"surfaceOp":{"op":"replace","start":0,"end":0}}', "invalid event envelope"),
        ('{"seq":0,"time":1,"data":1}', "invalid event envelope"),
        ('{"type":"a/b","seq":0,"time":1,"data":1', "unparsable committed event"),
    ],
)
def test_3_3_envelope_rules(tmp_path: Path, record: str, reason: str) -> None:
    snapshot = snapshot_of(tmp_path, [header(), record])
    assert list(snapshot.events) == []
    assert snapshot.repair is not None and snapshot.repair.defect is not None
    assert snapshot.repair.defect.reason == reason, snapshot.repair.defect


def _surface_log(record: str) -> list[str]:
    base = [
        header(),
        event_line("user/message", 0, {}, surfaceOp="append"),
        event_line("assistant/message", 1, {}, surfaceOp="append"),
    ]
    return base + [record]


@pytest.mark.parametrize(
    "record, valid",
    [
        ('{"type":"tool/result","seq":2,"time":1,"data":{},"surfaceOp":"append","sourceEventSeqs":[0,1]}', True),
        ('{"type":"assistant/message","seq":2,"time":1,"data":{},"surfaceOp":"append","sourceEventSeqs":[]}', True),
        ('{"type":"tool/result","seq":2,"time":1,"data":{},"surfaceOp":"append","sourceEventSeqs":[]}', False),
        ('{"type":"tool/result","seq":2,"time":1,"data":{},"surfaceOp":"append","sourceEventSeqs":[1,1]}', False),
        ('{"type":"tool/result","seq":2,"time":1,"data":{},"surfaceOp":"append","sourceEventSeqs":[2]}', False),
        ('{"type":"tool/result","seq":2,"time":1,"data":{},"surfaceOp":"append","sourceEventSeqs":[-1]}', False),
        ('{"type":"tool/result","seq":2,"time":1,"data":{},"surfaceOp":"append","sourceEventSeqs":[1.0]}', False),
        ('{"type":"tool/result","seq":2,"time":1,"data":{},"surfaceOp":"append","sourceEventSeqs":"1"}', False),
        ('{"type":"assistant/message","seq":2,"time":1,"data":{},"surfaceOp":{"op":"replace","start":0,"end":1},"sourceEventSeqs":[0,1]}', True),
        ('{"type":"assistant/message","seq":2,"time":1,"data":{},"surfaceOp":{"start":0,"op":"replace","end":1},"sourceEventSeqs":[0,1]}', False),
        ('{"type":"assistant/message","seq":2,"time":1,"data":{},"surfaceOp":{"op":"replace","start":0,"end":1,"x":1},"sourceEventSeqs":[0,1]}', False),
        ('{"type":"assistant/message","seq":2,"time":1,"data":{},"surfaceOp":{"op":"replace","start":0},"sourceEventSeqs":[0,1]}', False),
        ('{"type":"assistant/message","seq":2,"time":1,"data":{},"surfaceOp":{"op":"replace","start":0,"end":2},"sourceEventSeqs":[0,1]}', False),
        ('{"type":"assistant/message","seq":2,"time":1,"data":{},"surfaceOp":{"op":"replace","start":-1,"end":1},"sourceEventSeqs":[0,1]}', False),
        ('{"type":"assistant/message","seq":2,"time":1,"data":{},"surfaceOp":{"op":"swap","start":0,"end":1},"sourceEventSeqs":[0,1]}', False),
    ],
)
def test_3_3_surface_op_and_sources(tmp_path: Path, record: str, valid: bool) -> None:
    snapshot = snapshot_of(tmp_path, _surface_log(record))
    if valid:
        assert snapshot.repair is None
        assert snapshot.events[2].to_json().decode() == record
    else:
        assert len(snapshot.events) == 2
        assert snapshot.repair is not None and snapshot.repair.defect is not None
        assert snapshot.repair.defect.reason == "invalid event envelope"


def test_3_3_replace_op_decodes_and_encodes() -> None:
    op = ReplaceOp(start=1, end=2)
    assert msgspec.json.encode(op) == b'{"op":"replace","start":1,"end":2}'
    event = Event("assistant/message", 3, 1, msgspec.Raw(b"{}"), op, (1, 2))
    assert event.to_json() == (
        b'{"type":"assistant/message","seq":3,"time":1,"data":{},'
        b'"surfaceOp":{"op":"replace","start":1,"end":2},"sourceEventSeqs":[1,2]}'
    )
    full = Event("tool/result", 4, -1, msgspec.Raw(b"null"), "append", (0,), True)
    assert full.to_json() == (
        b'{"type":"tool/result","seq":4,"time":-1,"data":null,"surfaceOp":"append",'
        b'"sourceEventSeqs":[0],"ignorable":true}'
    )


def test_3_3_data_null_and_any_json_value(tmp_path: Path) -> None:
    lines = [header()] + [
        event_line("a/b", i, value) for i, value in enumerate([None, 0, "s", [1, {"a": None}], 1.5, False])
    ]
    snapshot = snapshot_of(tmp_path, lines)
    assert [e.value() for e in snapshot.events] == [None, 0, "s", [1, {"a": None}], 1.5, False]
    assert records(snapshot.events) == lines[1:]


# =========================================================================== log-format §3.5 append


async def test_e12_append_validation(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, clock=SetClock())
    async with store.create(id="e12") as s:
        s.append("turn/start", {"turn": 1})
        for data in ({"n": float("nan")}, {1: "x"}, {"n": 2**53}):
            with pytest.raises(InvalidEvent) as info:
                s.append("tool/run", data)
            assert 'session event "tool/run" carries non-JSON-serializable data' in str(info.value)
            assert isinstance(info.value, ValueError)
            assert s.next_seq == 1
        for type_ in ("Tool Run", "session/end-seed"):
            with pytest.raises(InvalidEvent):
                s.append(type_, {})
            assert s.next_seq == 1
        with pytest.raises(InvalidEvent):
            s.append("turn/start", {"turn": 2}, surface_op="append")
        assert s.next_seq == 1 and len(s.events) == 1
        await s.flush()
    assert len(read_log(tmp_path / "e12.jsonl").events) == 1


class Point(msgspec.Struct, rename="camel"):
    x_pos: int
    label: str = "p"


class BadPoint(msgspec.Struct):
    v: float


@pytest.mark.parametrize(
    "data",
    [
        float("inf"),
        float("-inf"),
        -0.0,
        {"a": -(2**53)},
        b"bytes",
        {1, 2},
        {"when": __import__("datetime").datetime(2026, 1, 1)},
        {(1, 2): 1},
        {True: 1},
        {None: 1},
        [object()],
        BadPoint(v=float("nan")),
    ],
)
async def test_3_5_non_json_data_is_refused(tmp_path: Path, data: Any) -> None:
    store = SessionStore(tmp_path, clock=SetClock())
    async with store.create(id="refuse") as s:
        with pytest.raises(InvalidEvent) as info:
            s.append("tool/run", data)
        assert 'session event "tool/run" carries non-JSON-serializable data' in str(info.value)
        assert s.next_seq == 0


async def test_3_5_cycles_are_refused(tmp_path: Path) -> None:
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    store = SessionStore(tmp_path, clock=SetClock())
    async with store.create(id="cyc") as s:
        with pytest.raises(InvalidEvent) as info:
            s.append("tool/run", {"c": cyclic})
        assert 'session event "tool/run" carries non-JSON-serializable data' in str(info.value)


async def test_3_5_lossless_values_and_structs(tmp_path: Path) -> None:
    clock = SetClock(10)
    store = SessionStore(tmp_path, clock=clock)
    async with store.create(id="ok") as s:
        event = s.append(
            "tool/run",
            {"i": 2**53 - 1, "j": -(2**53 - 1), "f": 0.5, "z": 0.0, "t": (1, "é"), "b": True, "n": None, "s": Point(x_pos=3)},
        )
        assert bytes(event.data) == (
            '{"i":9007199254740991,"j":-9007199254740991,"f":0.5,"z":0.0,"t":[1,"é"],"b":true,"n":null,'
            '"s":{"xPos":3,"label":"p"}}'
        ).encode()
        assert event.value()["s"] == {"xPos": 3, "label": "p"}
        assert s.append("tool/run", Point(x_pos=1, label="q")).to_json() == (
            b'{"type":"tool/run","seq":1,"time":10,"data":{"xPos":1,"label":"q"}}'
        )


# =========================================================================== log-format §3.6 packed rows


def test_e9_packed_row_expands(tmp_path: Path) -> None:
    prefix = [header()] + [event_line("a/b", i) for i in range(4)]
    snapshot = snapshot_of(tmp_path, prefix + [E9_ROW])
    assert snapshot.repair is None
    assert records(snapshot.events[4:]) == E9_EVENTS
    assert [e.type for e in iter_events(tmp_path / "x.jsonl", start_seq=4)] == ["assistant/chunk"] * 3


@pytest.mark.parametrize(
    "row",
    [
        E9_ROW.replace('"dt":[12,-3]', '"dt":[12]'),
        E9_ROW.replace('"texts":["Hel","lo","!"]', '"texts":[]').replace('"dt":[12,-3]', '"dt":[]'),
        E9_ROW.replace('"texts":["Hel","lo","!"]', '"texts":[]'),
        E9_ROW.replace('"seq0":4', '"seq0":5'),
        E9_ROW.replace('"time0":1000', '"time0":1000,"extra":1'),
        E9_ROW.replace('"index":0', '"index":0,"extra":1'),
        E9_ROW.replace('"texts":["Hel","lo","!"]', '"texts":["Hel",2,"!"]'),
        E9_ROW.replace('"dt":[12,-3]', '"dt":[12,1.5]'),
        E9_ROW.replace('"time0":1000', '"time0":9007199254740991'),
        E9_ROW.replace('"turn":1,', '"turn":"1",'),
        E9_ROW.replace('"seq0":4,', ""),
    ],
)
def test_e9_malformed_rows(tmp_path: Path, row: str) -> None:
    prefix = [header()] + [event_line("a/b", i) for i in range(4)]
    snapshot = snapshot_of(tmp_path, prefix + [row])
    assert len(snapshot.events) == 4
    assert snapshot.repair is not None and snapshot.repair.defect is not None
    assert snapshot.repair.defect.line == 6


def test_3_6_tool_call_and_reasoning_rows(tmp_path: Path) -> None:
    lines = [
        header(),
        '{"type":"reasoning-chunks","seq0":0,"time0":-5,"data":{"turn":2,"step":3,"index":1,"dt":[],"texts":["why"]}}',
        '{"type":"tool-call-chunks","seq0":1,"time0":10,"data":{"turn":2,"step":3,"index":0,"id":"c1","name":"read","dt":[1],"args":["{\\"p","\\":1}"]}}',
        '{"type":"tool-call-chunks","seq0":3,"time0":20,"data":{"turn":2,"step":3,"index":0,"id":"c1","dt":[0],"args":["a","b"]}}',
    ]
    snapshot = snapshot_of(tmp_path, lines)
    assert snapshot.repair is None
    assert records(snapshot.events) == [
        '{"type":"assistant/chunk","seq":0,"time":-5,"data":{"turn":2,"step":3,"chunk":{"type":"reasoning-delta","index":1,"text":"why"}}}',
        '{"type":"assistant/chunk","seq":1,"time":10,"data":{"turn":2,"step":3,"chunk":{"type":"tool-call-delta","index":0,"id":"c1","name":"read","argumentsDelta":"{\\"p"}}}',
        '{"type":"assistant/chunk","seq":2,"time":11,"data":{"turn":2,"step":3,"chunk":{"type":"tool-call-delta","index":0,"id":"c1","name":"read","argumentsDelta":"\\":1}"}}}',
        '{"type":"assistant/chunk","seq":3,"time":20,"data":{"turn":2,"step":3,"chunk":{"type":"tool-call-delta","index":0,"id":"c1","argumentsDelta":"a"}}}',
        '{"type":"assistant/chunk","seq":4,"time":20,"data":{"turn":2,"step":3,"chunk":{"type":"tool-call-delta","index":0,"id":"c1","argumentsDelta":"b"}}}',
    ]


def test_3_6_row_running_time_must_stay_safe(tmp_path: Path) -> None:
    row = '{"type":"text-chunks","seq0":0,"time0":9007199254740990,"data":{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a","b","c"]}}'
    snapshot = snapshot_of(tmp_path, [header(), row])
    assert list(snapshot.events) == []
    assert snapshot.repair is not None and snapshot.repair.defect is not None


# =========================================================================== log-format §3.7


def test_3_7_a_zstandard_log_is_read_and_its_damage_is_corruption(tmp_path: Path) -> None:
    # dsh-roots §4 replaces "not supported yet": frames are read, damage inside them is CorruptLog.
    path = put(tmp_path / "session.jsonl.zstd", b"\x28\xb5\x2f\xfd" + b"\x00" * 20)
    for reader in (read_log, read_header, lambda p: list(iter_events(p))):
        with pytest.raises(CorruptLog) as info:
            reader(path)
        assert str(info.value).startswith(f'corrupt Zstandard session log "{path}": ')


def test_3_7_deepseek_harness_layout_is_readable_by_path(tmp_path: Path) -> None:
    path = put(tmp_path / "--project--" / "abc" / "session.jsonl", log([header("abc"), event_line("a/b", 0)]))
    assert read_log(path).header.id == "abc"


# =========================================================================== log-format §4.1 root


def test_4_1_default_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TURNLOG_HOME", "/abs/tl")
    monkeypatch.setenv("XDG_DATA_HOME", "/abs/xdg")
    assert default_root() == Path("/abs/tl/sessions")
    monkeypatch.setenv("TURNLOG_HOME", "rel")
    assert default_root() == tmp_path / "rel" / "sessions"
    monkeypatch.setenv("TURNLOG_HOME", "")
    assert default_root() == Path("/abs/xdg/turnlog/sessions")
    monkeypatch.setenv("XDG_DATA_HOME", "relative/xdg")
    assert default_root() == tmp_path / "home" / ".local" / "share" / "turnlog" / "sessions"
    monkeypatch.setenv("XDG_DATA_HOME", "")
    assert default_root() == tmp_path / "home" / ".local" / "share" / "turnlog" / "sessions"
    monkeypatch.delenv("TURNLOG_HOME")
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_root() == tmp_path / "home" / ".local" / "share" / "turnlog" / "sessions"
    monkeypatch.setenv("TURNLOG_HOME", "/abs/tl")
    assert SessionStore().root == Path("/abs/tl/sessions")


async def test_4_1_root_created_on_first_publish_0700(tmp_path: Path) -> None:
    root = tmp_path / "a" / "b" / "sessions"
    store = SessionStore(root, clock=SetClock())
    async with store.create(id="s") as s:
        assert not root.exists()  # nothing before the first durable batch
        s.append("a/b", 1)
        await s.flush()
    for directory in (tmp_path / "a", tmp_path / "a" / "b", root):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE((root / "s.jsonl").stat().st_mode) == 0o600


async def test_4_1_ensure_root(tmp_path: Path) -> None:
    root = tmp_path / "x" / "sessions"
    store = SessionStore(root)
    assert await store.ensure_root() == root
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    existing = tmp_path / "existing"
    existing.mkdir(mode=0o755)
    os.chmod(existing, 0o755)
    await SessionStore(existing).ensure_root()
    assert stat.S_IMODE(existing.stat().st_mode) == 0o755  # left alone
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(PersistenceError):
        await SessionStore(blocker / "sessions").ensure_root()
    with pytest.raises(PersistenceError):
        await SessionStore(blocker).ensure_root()


async def test_4_1_list_ignores_non_store_files_and_reports_symlinks(tmp_path: Path) -> None:
    put(tmp_path / "b.jsonl", log([header("b")]))
    os.utime(tmp_path / "b.jsonl")
    put(tmp_path / "b.jsonl.0123456789ab.tmp", log([header("b")]))
    put(tmp_path / "notes.txt", b"x")
    put(tmp_path / "-bad.jsonl", log([header("-bad")]))
    (tmp_path / "dir.jsonl").mkdir()
    os.symlink(tmp_path / "b.jsonl", tmp_path / "link.jsonl")
    infos = await SessionStore(tmp_path).list()
    assert [info.id for info in infos] == ["b", "link"]
    assert infos[0].header is not None and infos[0].problem is None
    assert infos[1].header is None and infos[1].problem


# =========================================================================== log-format §4.2 ids


BAD_IDS = ["", "..", ".", "a/b", "a\x00b", "abc\n", "-abc", ".abc", "_a", "a" * 129, "a b", "é"]


@pytest.mark.parametrize("bad", BAD_IDS)
async def test_4_2_invalid_ids_raise_before_any_io(tmp_path: Path, bad: str) -> None:
    root = tmp_path / "never"
    store = SessionStore(root)
    with pytest.raises(InvalidSessionId) as info:
        store.path(bad)
    assert "invalid session id" in str(info.value)
    assert isinstance(info.value, ValueError) and isinstance(info.value, EventLogError)
    with pytest.raises(InvalidSessionId):
        async with store.create(id=bad):
            pass
    with pytest.raises(InvalidSessionId):
        async with store.open(bad):
            pass
    with pytest.raises(InvalidSessionId):
        await store.inspect(bad)
    with pytest.raises(InvalidSessionId):
        await store.delete(bad)
    with pytest.raises(InvalidSessionId):
        await store.fork(bad)
    with pytest.raises(InvalidSessionId):
        await store.fork("ok", id=bad)
    assert not root.exists()


def test_4_2_valid_ids(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    for good in ("a", "A" * 128, "0._-x", "9"):
        assert store.path(good) == tmp_path / f"{good}.jsonl"


async def test_4_2_new_ids_are_uuid4(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, clock=SetClock())
    async with store.create() as s:
        assert uuid.UUID(s.id).version == 4 and str(uuid.UUID(s.id)) == s.id


async def test_4_2_identity_check_by_id_and_not_by_path(tmp_path: Path) -> None:
    path = put(tmp_path / "a.jsonl", log([header("b"), event_line("a/b", 0)]))
    expected = f'corrupt session log "{path}": requested id "a" does not match header id "b"'
    store = SessionStore(tmp_path)
    with pytest.raises(CorruptLog) as opened:
        async with store.open("a"):
            pass
    assert str(opened.value) == expected
    with pytest.raises(CorruptLog) as inspected:
        await store.inspect("a")
    assert str(inspected.value) == expected
    with pytest.raises(CorruptLog) as read:
        read_log(path, expected_id="a")
    assert str(read.value) == expected
    # by path the file name is never interpreted
    assert read_log(path).header.id == "b"
    assert [e.seq for e in iter_events(path)] == [0]
    assert read_header(path).id == "b"


async def test_4_2_identity_runs_before_repair(tmp_path: Path) -> None:
    data = log([header("b"), event_line("a/b", 0)]) + b"torn"
    path = put(tmp_path / "a.jsonl", data)
    with pytest.raises(CorruptLog):
        async with SessionStore(tmp_path).open("a"):
            pass
    assert path.read_bytes() == data


# =========================================================================== log-format §4.4 locking


async def test_4_4_second_writer_in_process_is_busy(tmp_path: Path) -> None:
    put(tmp_path / "demo-1.jsonl", log(E1))
    store = SessionStore(tmp_path, clock=SetClock())
    other = SessionStore(tmp_path, clock=SetClock())
    async with store.open("demo-1"):
        with pytest.raises(SessionBusy) as info:
            async with store.open("demo-1"):
                pass
        assert str(info.value) == 'session "demo-1" is already open for writing'
        with pytest.raises(SessionBusy):
            async with other.open("demo-1"):
                pass
        with pytest.raises(SessionBusy):
            await other.delete("demo-1")
        assert len((await other.inspect("demo-1")).events) == 6
    assert (tmp_path / "demo-1.jsonl").read_bytes() == log(E1)


HOLDER = """
import sys, trio
from eventlog import SessionStore
async def main():
    async with SessionStore(sys.argv[1]).open("demo-1"):
        print("open", flush=True)
        await trio.to_thread.run_sync(sys.stdin.readline)
trio.run(main)
"""


async def test_e15_second_writer_in_another_process(tmp_path: Path) -> None:
    path = put(tmp_path / "demo-1.jsonl", log(E1))
    holder = await trio.lowlevel.open_process(
        [sys.executable, "-c", HOLDER, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None and holder.stdin is not None
        line = b""
        while not line.endswith(b"\n") and (more := await holder.stdout.receive_some()):
            line += more
        assert line == b"open\n"
        store = SessionStore(tmp_path, clock=SetClock(1767268800000))
        with pytest.raises(SessionBusy) as info:
            async with store.open("demo-1"):
                pass
        assert 'session "demo-1" is already open for writing' in str(info.value)
        before = path.read_bytes(), path.stat().st_mtime_ns
        assert len(read_log(path, expected_id="demo-1").events) == 6
        child = await store.fork("demo-1", at=5, id="demo-1-b")
        assert child.seed_length == 6
        assert (path.read_bytes(), path.stat().st_mtime_ns) == before
        result = await trio.run_process(
            [sys.executable, "-m", "eventlog", "inspect", "demo-1", "--root", str(tmp_path), "--json"],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["repair"] is None
        assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    finally:
        if holder.stdin is not None:
            await holder.stdin.send_all(b"\n")
            await holder.stdin.aclose()
        with trio.fail_after(30):
            await holder.wait()


# =========================================================================== log-format §5 public API


def test_5_public_names() -> None:
    for name in (
        "SessionStore", "Session", "Event", "SessionHeader", "ReplaceOp", "SurfaceOp", "Clock",
        "read_header", "read_log", "iter_events", "tail", "Defect", "Repair", "LogSnapshot",
        "default_root", "EventLogError", "InvalidSessionId", "SessionNotFound", "SessionExists",
        "SessionBusy", "SessionClosed", "InvalidEvent", "CorruptLog", "UnsupportedFormat",
        "ForkError", "SurfaceError", "PersistenceError",
    ):
        assert hasattr(eventlog, name), name
    assert callable(eventlog.surface.fold) and callable(eventlog.vocab.decode)
    # in a fresh interpreter, `import eventlog` alone gives the modules log-format §5.1 names
    probe = "import eventlog; eventlog.surface.fold; eventlog.vocab.decode; eventlog.cli.main; eventlog.fileio"
    subprocess.run([sys.executable, "-c", probe], check=True)
    for module in ("format", "scan", "repair", "surface", "vocab", "fileio", "store", "session", "reader", "cli"):
        importlib.import_module(f"eventlog.{module}")


def test_5_2_event_struct_shape() -> None:
    assert Event.__struct_fields__ == (
        "type", "seq", "time", "data", "surface_op", "source_event_seqs", "ignorable",
    )
    event = Event("a/b", 0, 1, msgspec.Raw(b'{"x":1}'))
    assert (event.surface_op, event.source_event_seqs, event.ignorable) == (None, None, False)
    with pytest.raises(AttributeError):
        event.seq = 2  # type: ignore[misc]
    assert ReplaceOp(start=1, end=2) == ReplaceOp(1, 2)
    with pytest.raises(AttributeError):
        ReplaceOp(1, 2).start = 3  # type: ignore[misc]

    class X(msgspec.Struct, forbid_unknown_fields=True):
        x: int

    assert event.decode(X) == X(x=1)
    assert event.value() == {"x": 1}
    with pytest.raises(msgspec.ValidationError):
        Event("a/b", 0, 1, msgspec.Raw(b'{"x":1,"y":2}')).decode(X)


def test_5_signatures() -> None:
    def params(fn: Any) -> list[tuple[str, Any, Any]]:
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    P, K = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY
    E = inspect.Parameter.empty
    assert params(SessionStore.__init__) == [
        ("self", P, E), ("root", P, None), ("layout", K, "auto"), ("compression", K, None),
        ("clock", K, None), ("write_delay_ms", K, 5), ("dsh_default", K, False),
    ]
    assert params(SessionStore.create) == [("self", P, E), ("id", K, None), ("cwd", K, None)]
    assert params(SessionStore.open) == [("self", P, E), ("id", P, E)]
    assert params(SessionStore.fork) == [("self", P, E), ("source", P, E), ("at", K, None), ("id", K, None)]
    assert params(SessionStore.path) == [("self", P, E), ("id", P, E)]
    for name in ("inspect", "delete"):
        assert params(getattr(SessionStore, name)) == [("self", P, E), ("id", P, E)]
    for name in ("list", "ensure_root", "fork", "inspect", "delete"):
        assert inspect.iscoroutinefunction(getattr(SessionStore, name)), name
    assert params(Session.append) == [
        ("self", P, E), ("type", P, E), ("data", P, E), ("surface_op", K, None),
        ("source_event_seqs", K, None), ("ignorable", K, False),
    ]
    assert inspect.iscoroutinefunction(Session.flush) and inspect.iscoroutinefunction(Session.aclose)
    assert params(read_log)[0][0] == "path" and params(read_log)[1] == ("expected_id", K, None)
    assert params(iter_events)[1] == ("start_seq", K, 0)
    tail_params = params(tail)
    assert tail_params[1] == ("start_seq", K, 0) and tail_params[2] == ("follow", K, True)
    assert [p[0] for p in params(read_header)][:1] == ["path"]
    assert params(eventlog.cli.main)[1:2] == [("checks", K, ())]


def test_5_5_values_shapes() -> None:
    assert Defect.__struct_fields__ == ("line", "offset", "reason", "detail")
    assert Repair.__struct_fields__ == (
        "truncate_to", "dropped_bytes", "dropped_records", "defect", "open_turn", "closers", "recovered",
    )
    assert LogSnapshot.__struct_fields__ == (
        "path", "header", "events", "file_bytes", "committed_bytes", "repair", "encoding", "frames",
    )


def test_5_6_error_hierarchy_and_attributes(tmp_path: Path) -> None:
    assert issubclass(InvalidSessionId, EventLogError) and issubclass(InvalidSessionId, ValueError)
    assert issubclass(SessionNotFound, EventLogError) and issubclass(SessionNotFound, LookupError)
    assert issubclass(InvalidEvent, ValueError) and issubclass(SurfaceError, ValueError)
    for cls in (SessionExists, SessionBusy, SessionClosed, CorruptLog, UnsupportedFormat, ForkError, PersistenceError):
        assert issubclass(cls, EventLogError)
    assert issubclass(EventLogError, Exception)
    path = put(tmp_path / "x.jsonl", log([header(), '{"type":"a/b","seq":0,"time":1,"data":', event_line("turn/end", 1)]))
    with pytest.raises(CorruptLog) as info:
        read_log(path)
    assert (info.value.path, info.value.line, info.value.offset) == (path, 2, len(header()) + 1)


# =========================================================================== log-format §5.3 store


async def test_5_3_write_delay_ms_range(tmp_path: Path) -> None:
    SessionStore(tmp_path, write_delay_ms=0)
    SessionStore(tmp_path, write_delay_ms=60000)
    for bad in (-1, 60001, 1.5, True):
        with pytest.raises((ValueError, TypeError)):
            SessionStore(tmp_path, write_delay_ms=bad)  # type: ignore[arg-type]


async def test_5_3_create_exists_and_no_trace_without_events(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, clock=SetClock(42))
    async with store.create(id="empty") as s:
        assert s.header == SessionHeader(id="empty", created_at=42)
        assert (s.next_seq, s.durable_through, s.seed_length, s.recovered) == (0, -1, 0, None)
        assert await s.flush() == -1
        assert not (tmp_path / "empty.jsonl").exists()
        assert await store.list() == []
        with pytest.raises(SessionExists) as busy:
            async with store.create(id="empty"):
                pass
        assert str(busy.value) == 'session "empty" already exists'
    assert not (tmp_path / "empty.jsonl").exists()
    assert os.listdir(tmp_path) == [] if tmp_path.exists() else True
    put(tmp_path / "taken.jsonl", log([header("taken")]))
    with pytest.raises(SessionExists) as exists:
        async with store.create(id="taken"):
            pass
    assert str(exists.value) == 'session "taken" already exists'


async def test_5_3_create_cwd_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = SessionStore(tmp_path / "root", clock=SetClock(1))
    async with store.create(id="c", cwd="sub") as s:
        assert s.header.cwd == str(tmp_path / "sub")
        s.append("a/b", 1)
    assert read_header(tmp_path / "root" / "c.jsonl").cwd == str(tmp_path / "sub")


async def test_5_3_open_not_found_and_inspect_not_found(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    with pytest.raises(SessionNotFound) as info:
        async with store.open("nope"):
            pass
    assert str(info.value) == 'session "nope" not found'
    with pytest.raises(SessionNotFound):
        await store.inspect("nope")
    with pytest.raises(SessionNotFound):
        await store.fork("nope")
    with pytest.raises(SessionNotFound):
        await store.delete("nope")


async def test_5_3_open_gives_durable_events(tmp_path: Path) -> None:
    put(tmp_path / "demo-1.jsonl", log(E1))
    store = SessionStore(tmp_path, clock=SetClock(1767261602000))
    async with store.open("demo-1") as s:
        assert (s.id, s.path, s.next_seq, s.durable_through, s.recovered) == (
            "demo-1", tmp_path / "demo-1.jsonl", 6, 5, None,
        )
        assert records(s.events) == E1[1:]
        assert isinstance(s.header, SessionHeader) and s.header.cwd == "/home/ana"
        event = s.append("turn/start", {"turn": 2})
        assert (event.seq, event.time) == (6, 1767261602000)
        assert await s.flush() == 6
    assert (tmp_path / "demo-1.jsonl").read_bytes() == log(E1 + [event.to_json().decode()])


async def test_5_3_list_sorted_and_problems_last(tmp_path: Path) -> None:
    put(tmp_path / "b.jsonl", log([header("b", createdAt=5)]))
    put(tmp_path / "a.jsonl", log([header("a", createdAt=5)]))
    put(tmp_path / "c.jsonl", log([header("c", createdAt=1)]))
    put(tmp_path / "z-bad.jsonl", b"nonsense\n")
    put(tmp_path / "y-bad.jsonl", log([header("other", createdAt=0)]))
    put(tmp_path / "v.jsonl", b'{"type":"session","version":9,"id":"v"}\n')
    infos = await SessionStore(tmp_path).list()
    assert [info.id for info in infos] == ["c", "a", "b", "v", "y-bad", "z-bad"]
    c = infos[0]
    assert (c.path, c.size, c.problem) == (tmp_path / "c.jsonl", len(header("c", createdAt=1)) + 1, None)
    assert c.header == SessionHeader(id="c", created_at=1)
    for info in infos[3:]:
        assert info.header is None and isinstance(info.problem, str) and info.problem


async def test_5_3_delete(tmp_path: Path) -> None:
    put(tmp_path / "d.jsonl", log([header("d")]))
    put(tmp_path / "e.jsonl", log([header("e", parentSession="d", seedLength=0)]))
    store = SessionStore(tmp_path)
    await store.delete("d")
    assert not (tmp_path / "d.jsonl").exists() and (tmp_path / "e.jsonl").exists()


# =========================================================================== log-format §5.4 session


async def test_5_4_append_observers_guards_and_reentry(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = SetClock(100)
    store = SessionStore(tmp_path, clock=clock)
    seen: list[tuple[str, int]] = []
    async with store.create(id="obs") as s:
        remove_a = s.on_event(lambda session, e: seen.append(("a", e.seq)))
        s.on_event(lambda session, e: seen.append(("b", e.seq)))

        def boom(session: Session, e: Event) -> None:
            raise RuntimeError("observer broke")

        s.on_event(boom)
        with caplog.at_level(logging.ERROR, logger="eventlog"):
            e0 = s.append("note/x", {"n": 0})
        assert e0.seq == 0 and e0.time == 100 and s.next_seq == 1
        assert seen == [("a", 0), ("b", 0)]
        assert any("obs" in r.getMessage() and r.name.startswith("eventlog") for r in caplog.records)
        remove_a()
        remove_a()  # idempotent
        s.append("note/x", {"n": 1})
        assert seen[-1] == ("b", 1) and ("a", 1) not in seen

        def reenter(session: Session, e: Event) -> None:
            with pytest.raises(EventLogError) as info:
                session.append("note/y", {})
            assert str(info.value) == "session append cannot reenter while another append is being published"
            seen.append(("reenter", e.seq))

        s.on_event(reenter)
        s.append("note/x", {"n": 2})
        assert ("reenter", 2) in seen and s.next_seq == 3

        class Refused(Exception):
            pass

        calls: list[Any] = []

        def guard(session: Session, data: Any) -> None:
            calls.append(data)
            if data.get("bad"):
                raise Refused("no")

        remove_guard = s.add_append_guard("guarded/x", guard)
        with pytest.raises(Refused):
            s.append("guarded/x", {"bad": True})
        assert s.next_seq == 3
        s.append("guarded/x", {"bad": False})
        assert calls == [{"bad": True}, {"bad": False}] and s.next_seq == 4
        s.append("other/x", {"bad": True})  # guards are per type
        remove_guard()
        s.append("guarded/x", {"bad": True})
        assert s.next_seq == 6
        # a guard does not run for an envelope that is already invalid
        s.add_append_guard("guarded/y", guard)
        with pytest.raises(InvalidEvent):
            s.append("guarded/y", {"bad": float("nan")})
        assert len(calls) == 2


async def test_5_4_events_view_and_closed(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, clock=SetClock())
    async with store.create(id="v") as s:
        view = s.events
        s.append("a/b", 1)
        assert len(view) == 1 and view[0].seq == 0  # a live view, not a copy
        assert not hasattr(view, "append") or not callable(getattr(view, "append", None))
        session = s
    with pytest.raises(SessionClosed) as info:
        session.append("a/b", 2)
    assert str(info.value) == 'session "v" is closed'
    with pytest.raises(SessionClosed):
        await session.flush()
    await session.aclose()  # idempotent


async def test_5_4_on_flushed_once_per_batch(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, clock=SetClock(), write_delay_ms=0)
    got: list[int] = []
    async with store.create(id="f") as s:
        s.on_flushed(lambda session, through: got.append(through))
        s.append("a/b", 1)
        s.append("a/b", 2)
        assert await s.flush() == 1
        assert await s.flush() == 1  # nothing new: no I/O, no notification
        s.append("a/b", 3)
        assert await s.flush() == 2
        assert s.durable_through == 2
    assert got == [1, 2]


# =========================================================================== log-format §5.5 readers


def test_5_5_iter_events_and_read_header(tmp_path: Path) -> None:
    path = put(tmp_path / "demo-1.jsonl", log(E1) + E2_TORN.encode())
    assert read_header(path) == SessionHeader(id="demo-1", created_at=1767261600000, cwd="/home/ana")
    assert records(iter_events(path)) == E1[1:]
    assert [e.seq for e in iter_events(path, start_seq=4)] == [4, 5]
    assert list(iter_events(path, start_seq=99)) == []
    bad = put(tmp_path / "bad.jsonl", log(E1[:3] + [E3_LINE4] + E1[4:]))
    with pytest.raises(CorruptLog):
        list(iter_events(bad))


async def test_5_5_tail_without_follow(tmp_path: Path) -> None:
    path = put(tmp_path / "demo-1.jsonl", log(E1) + E2_TORN.encode())
    got = [event async for event in tail(path, follow=False)]
    assert records(got) == E1[1:]
    got = [event async for event in tail(path, start_seq=5, follow=False)]
    assert [e.seq for e in got] == [5]
    assert path.read_bytes() == log(E1) + E2_TORN.encode()


async def test_5_5_tail_follow_sees_appended_records(tmp_path: Path) -> None:
    path = put(tmp_path / "demo-1.jsonl", log(E1[:3]))
    got: list[Event] = []
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:

            async def follow() -> None:
                async for event in tail(path, follow=True):
                    got.append(event)
                    if event.seq == 5:
                        nursery.cancel_scope.cancel()

            nursery.start_soon(follow)
            while len(got) < 2:
                await trio.sleep(0.01)
            async with await trio.open_file(path, "ab") as f:
                await f.write(log(E1[3:6]) + E1[6][:10].encode())
            while len(got) < 5:
                await trio.sleep(0.01)
            async with await trio.open_file(path, "ab") as f:
                await f.write(E1[6][10:].encode() + b"\n")
    assert records(got) == E1[1:]


def test_5_5_snapshot_is_read_only(tmp_path: Path) -> None:
    data = log(E1 + E5_TURN2) + E2_TORN.encode()
    path = put(tmp_path / "demo-1.jsonl", data)
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    snapshot = read_log(path)
    list(iter_events(path))
    read_header(path)
    assert path.read_bytes() == data and path.stat().st_mtime_ns == 1_000_000_000
    assert snapshot.path == path
    assert len(snapshot.events) == 11  # no closers in the snapshot's events
    assert snapshot.repair is not None and len(snapshot.repair.closers) == 4


# =========================================================================== log-format §6 durability


async def test_e13_group_commit(tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    store = SessionStore(tmp_path, clock=TrioWallClock(), write_delay_ms=5)
    notified: list[tuple[float, int]] = []
    results: list[int] = []
    second = trio.Event()

    def on_flushed(session: Session, through: int) -> None:
        notified.append((trio.current_time(), through))
        if through == 3:
            second.set()

    with eventlog.fileio.spy("pwrite") as pwrite, eventlog.fileio.spy("sync") as sync:
        async with store.create(id="e13") as s:
            s.on_flushed(on_flushed)

            async def flusher() -> None:
                await trio.sleep_until(0.003)
                results.append(await s.flush())

            async with trio.open_nursery() as nursery:
                nursery.start_soon(flusher)
                nursery.start_soon(flusher)
                for seq in range(3):
                    await trio.sleep_until(seq / 1000)
                    assert s.append("note/x", {"n": seq}).seq == seq
            assert results == [2, 2]
            assert (pwrite.calls, sync.calls) == (1, 1)
            assert [through for _, through in notified] == [2]
            await trio.sleep_until(0.004)
            assert s.append("note/x", {"n": 3}).seq == 3
            await trio.sleep_until(0.0085)
            assert [through for _, through in notified] == [2]
            # wait without a deadline of our own, so the mock clock stays at the window's end
            # while the batch is written in a worker thread
            await second.wait()
            assert [through for _, through in notified] == [2, 3]
            assert notified[1][0] == pytest.approx(0.009)
    assert len(read_log(tmp_path / "e13.jsonl").events) == 4


async def test_e14_failed_sync(tmp_path: Path) -> None:
    path = put(tmp_path / "demo-1.jsonl", log(E1))
    clock = SetClock()
    store = SessionStore(tmp_path, clock=clock, write_delay_ms=0)
    notified: list[int] = []
    async with store.open("demo-1") as s:
        s.on_flushed(lambda session, through: notified.append(through))
        replay(s, clock, E5_TURN2[:2])
        with eventlog.fileio.fail("sync", errno.EIO), pytest.raises(PersistenceError) as info:
            await s.flush()
        assert str(info.value).startswith('failed to persist session "demo-1": ')
        assert isinstance(info.value.__cause__, OSError) and info.value.__cause__.errno == errno.EIO
        assert info.value.permanent is False
        assert path.stat().st_size == E1_SIZE
        assert s.durable_through == 5 and notified == []
        assert await s.flush() == 7
        assert notified == [7]
    assert path.read_bytes() == log(E1 + E5_TURN2[:2])


async def test_6_1_zero_delay_writes_only_on_flush_or_close(tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    store = SessionStore(tmp_path, clock=TrioWallClock(), write_delay_ms=0)
    async with store.create(id="z") as s:
        s.append("a/b", 1)
        await trio.sleep(10)
        assert s.durable_through == -1 and not (tmp_path / "z.jsonl").exists()
        s.append("a/b", 2)
    assert [e.value() for e in read_log(tmp_path / "z.jsonl").events] == [1, 2]


async def test_6_1_background_window_writes_without_flush(tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    store = SessionStore(tmp_path, clock=TrioWallClock(), write_delay_ms=5)
    written = trio.Event()
    async with store.create(id="w") as s:
        s.on_flushed(lambda session, through: written.set())
        s.append("a/b", 1)
        await trio.sleep(0.004)
        assert s.durable_through == -1
        await written.wait()
        assert s.durable_through == 0
        assert trio.current_time() == pytest.approx(0.005)


async def test_6_3_publish_is_atomic_and_leaves_no_temp(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, clock=SetClock(), write_delay_ms=0)
    with eventlog.fileio.spy("link") as link:
        async with store.create(id="p") as s:
            s.append("a/b", 1)
            await s.flush()
            s.append("a/b", 2)
            await s.flush()
    assert link.calls == 1
    assert sorted(os.listdir(tmp_path)) == ["p.jsonl"]


async def test_6_4_background_failure_is_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    put(tmp_path / "demo-1.jsonl", log(E1))
    store = SessionStore(tmp_path, clock=SetClock(), write_delay_ms=5)
    prefix = 'background write for session "demo-1" failed (buffered events retained): '

    def warnings() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.getMessage().startswith(prefix)]

    async with store.open("demo-1") as s:
        with (
            caplog.at_level(logging.WARNING, logger="eventlog"),
            eventlog.fileio.fail("pwrite", errno.ENOSPC, times=100) as fault,
        ):
            s.append("a/b", 1)
            with trio.fail_after(20):
                while not warnings():
                    await trio.sleep(0.005)
            await trio.sleep(0.05)
            assert fault.calls == 1  # automatic retries pause until an append or a flush
        assert len(warnings()) == 1
        assert s.durable_through == 5
        assert await s.flush() == 6


async def test_6_4_removed_file_is_a_permanent_failure(tmp_path: Path) -> None:
    put(tmp_path / "demo-1.jsonl", log(E1))
    store = SessionStore(tmp_path, clock=SetClock(), write_delay_ms=0)
    async with store.open("demo-1") as s:
        os.unlink(tmp_path / "demo-1.jsonl")
        s.append("a/b", 1)
        with pytest.raises(PersistenceError) as info:
            await s.flush()
        assert info.value.permanent is True
        with pytest.raises(PersistenceError):
            s.append("a/b", 2)
        with pytest.raises(PersistenceError):
            await s.flush()
        with pytest.raises(PersistenceError):
            await s.aclose()


async def test_6_6_cancelled_host_still_persists(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, clock=SetClock(), write_delay_ms=60000)
    with trio.move_on_after(0.05):
        async with store.create(id="c") as s:
            s.append("a/b", 1)
            await trio.sleep_forever()
    assert [e.value() for e in read_log(tmp_path / "c.jsonl").events] == [1]
    # the lock is released: the session can be opened again
    async with store.open("c") as again:
        assert again.next_seq == 1


# =========================================================================== log-format §7 repair


def test_e2_torn_tail_inspect(tmp_path: Path) -> None:
    data = log(E1) + E2_TORN.encode()
    assert len(E2_TORN.encode()) == 32
    snapshot = snapshot_of(tmp_path, data, "demo-1.jsonl")
    assert len(snapshot.events) == 6
    assert (snapshot.file_bytes, snapshot.committed_bytes) == (919, 887)
    repair = snapshot.repair
    assert repair is not None
    assert (repair.truncate_to, repair.dropped_bytes, repair.dropped_records) == (887, 32, 0)
    assert repair.defect is not None
    assert (repair.defect.line, repair.defect.offset, repair.defect.reason) == (8, 887, "torn final record")
    assert (repair.open_turn, repair.closers) == (None, ())
    assert (tmp_path / "demo-1.jsonl").read_bytes() == data


async def test_e2_open_truncates_and_continues(tmp_path: Path) -> None:
    path = put(tmp_path / "demo-1.jsonl", log(E1) + E2_TORN.encode())
    store = SessionStore(tmp_path, clock=SetClock(1767265200000))
    async with store.open("demo-1") as s:
        assert path.stat().st_size == 887
        assert s.recovered is not None and s.recovered.truncate_to == 887
        assert s.append("turn/start", {"turn": 2}).seq == 6


def test_e1_offsets_and_size() -> None:
    data = log(E1)
    assert len(data) == E1_SIZE
    offsets = [0] + [i + 1 for i, byte in enumerate(data) if byte == 0x0A][:-1]
    assert offsets == E1_OFFSETS


async def test_e3_committed_corruption(tmp_path: Path) -> None:
    data = log(E1[:3] + [E3_LINE4] + E1[4:])
    path = put(tmp_path / "demo-1.jsonl", data)
    prefix = f'corrupt session log "{path}": unparsable committed event at line 4, byte 256: '
    with pytest.raises(CorruptLog) as read:
        read_log(path)
    assert str(read.value).startswith(prefix)
    store = SessionStore(tmp_path / "other", clock=SetClock())
    with pytest.raises(CorruptLog) as forked:
        await store.fork(path)
    assert str(forked.value).startswith(prefix)
    root_store = SessionStore(tmp_path, clock=SetClock())
    with pytest.raises(CorruptLog) as opened:
        async with root_store.open("demo-1"):
            pass
    assert str(opened.value).startswith(prefix)
    with pytest.raises(CorruptLog):
        await root_store.inspect("demo-1")
    with pytest.raises(CorruptLog):
        await root_store.fork("demo-1", at=1)
    assert path.read_bytes() == data


async def test_e4_defect_without_later_turn_end(tmp_path: Path) -> None:
    data = log(E1[:3] + [E3_LINE4] + E1[4:6])
    path = put(tmp_path / "demo-1.jsonl", data)
    snapshot = read_log(path)
    repair = snapshot.repair
    assert repair is not None
    assert (repair.truncate_to, repair.dropped_bytes, repair.dropped_records) == (256, 411, 3)
    assert repair.defect is not None and (repair.defect.line, repair.defect.offset) == (4, 256)
    assert repair.defect.reason == "unparsable committed event"
    assert repair.open_turn == 1
    assert records(repair.closers) == E4_CLOSERS
    assert path.read_bytes() == data
    store = SessionStore(tmp_path, clock=SetClock())
    async with store.open("demo-1") as s:
        assert records(s.events) == E1[1:3] + E4_CLOSERS
        assert s.durable_through == 3 and s.recovered == repair
    assert path.read_bytes() == log(E1[:3] + E4_CLOSERS)


async def test_e5_interrupted_tool_calls(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = put(tmp_path / "demo-1.jsonl", log(E1 + E5_TURN2))
    snapshot = read_log(path)
    assert snapshot.repair is not None and snapshot.repair.truncate_to is None
    assert (snapshot.repair.dropped_bytes, snapshot.repair.dropped_records, snapshot.repair.defect) == (0, 0, None)
    assert snapshot.repair.open_turn == 2
    assert records(snapshot.repair.closers) == E5_CLOSERS
    store = SessionStore(tmp_path, clock=SetClock(1767300000000))
    with (
        eventlog.fileio.spy("sync") as sync,
        eventlog.fileio.spy("pwrite") as pwrite,
        caplog.at_level(logging.WARNING, logger="eventlog"),
    ):
        async with store.open("demo-1") as s:
            assert records(s.events[11:]) == E5_CLOSERS
            assert s.durable_through == 14 and s.next_seq == 15
    assert pwrite.calls == 1 and sync.calls >= 1  # the closers: one synced batch
    assert path.read_bytes() == log(E1 + E5_TURN2 + E5_CLOSERS)
    assert any(r.getMessage().startswith('session "demo-1": repaired on open: ') for r in caplog.records)
    size = path.stat().st_size
    async with store.open("demo-1") as again:
        assert again.recovered is None and again.next_seq == 15
    assert path.stat().st_size == size


def test_7_3_malformed_field_stops_repair(tmp_path: Path) -> None:
    lines = [header(), event_line("turn/start", 0, {"turn": 1}), event_line("step/start", 1, {"turn": 1, "step": "one"})]
    path = put(tmp_path / "x.jsonl", log(lines))
    with pytest.raises(CorruptLog) as info:
        read_log(path)
    assert str(info.value) == (
        f'corrupt session log "{path}": cannot repair interrupted turn: step/start at seq 1 has malformed data'
    )


def test_7_3_closers_rules(tmp_path: Path) -> None:
    # a repeated call id keeps its first position; a tool/call for an unknown id is ignored;
    # a tool/result removes its call; a turn/end before the last turn/start is ignored.
    msg = lambda calls: {
        "turn": 3, "step": 2,
        "message": {"id": "m", "role": "assistant", "source": {"kind": "model", "provider": "p", "model": "m"},
                    "content": [{"type": "tool-call", "id": c, "name": "n", "arguments": "{}"} for c in calls]},
    }
    result = lambda c: {"turn": 3, "step": 2, "message": {"id": "r", "role": "user", "source": {"kind": "tool", "callId": c}, "content": []}}
    lines = [
        header(),
        event_line("turn/start", 0, {"turn": 3}, time=10),
        event_line("step/start", 1, {"turn": 3, "step": 2}, time=11),
        event_line("assistant/message", 2, msg(["b", "a", "b"]), time=12, surfaceOp="append"),
        event_line("tool/call", 3, {"callId": "zz"}, time=13),
        event_line("tool/call", 4, {"callId": "a"}, time=14),
        event_line("assistant/message", 5, msg(["c"]), time=15, surfaceOp="append"),
        event_line("tool/result", 6, result("c"), time=16, surfaceOp="append"),
        event_line("x/y", 7, None, time=-3),
    ]
    repair = snapshot_of(tmp_path, lines).repair
    assert repair is not None and repair.open_turn == 3
    got = [json.loads(e.to_json()) for e in repair.closers]
    assert [(g["type"], g["seq"], g["time"]) for g in got] == [
        ("tool/result", 8, -3), ("tool/result", 9, -3), ("step/end", 10, -3), ("turn/end", 11, -3),
    ]
    assert got[0]["data"]["message"]["id"] == "interrupted-tool-result-b-8"
    assert got[0]["data"]["error"]["code"] == "TOOL_NOT_STARTED" and "sourceEventSeqs" not in got[0]
    assert got[1]["data"]["message"]["id"] == "interrupted-tool-result-a-9"
    assert got[1]["sourceEventSeqs"] == [4] and got[1]["data"]["error"]["code"] == "TOOL_OUTCOME_UNKNOWN"
    assert got[2]["data"] == {"turn": 3, "step": 2}
    # no open step: no step/end
    closed_step = lines[:3] + [event_line("step/end", 2, {"turn": 3, "step": 2}, time=20)]
    repair2 = snapshot_of(tmp_path, closed_step, "y.jsonl").repair
    assert repair2 is not None
    assert records(repair2.closers) == [
        '{"type":"turn/end","seq":3,"time":20,"data":{"turn":3,"reason":{"kind":"interrupted"}}}'
    ]


def test_7_2_defect_then_any_turn_end_signal_is_corruption(tmp_path: Path) -> None:
    # the signal ignores seq and other keys, and the defective record itself may carry it
    for tail_lines in (
        ['{"type":"turn/end","seq":"x","bogus":1}'],
        [E2_TORN + '"', '{"type":"turn/end"}'],
    ):
        path = put(tmp_path / "x.jsonl", log(E1 + tail_lines))
        with pytest.raises(CorruptLog):
            read_log(path)
    # a torn fragment that is complete JSON is still only torn
    snapshot = snapshot_of(tmp_path, log(E1) + b'{"type":"turn/end"}', "t.jsonl")
    assert snapshot.repair is not None and snapshot.repair.defect is not None
    assert snapshot.repair.defect.reason == "torn final record"


# =========================================================================== log-format §8 fork


async def test_e6_fork(tmp_path: Path) -> None:
    parent = put(tmp_path / "demo-1.jsonl", log(E1))
    os.utime(parent, ns=(1_000_000_000, 1_000_000_000))
    store = SessionStore(tmp_path, clock=SetClock(1767268800000))
    child = await store.fork("demo-1", at=5, id="demo-1-b")
    assert child == SessionHeader(
        id="demo-1-b", created_at=1767268800000, cwd="/home/ana", parent_session="demo-1", seed_length=6,
    )
    assert (tmp_path / "demo-1-b.jsonl").read_bytes() == log([E6_HEADER] + E1[1:] + [E6_MARKER])
    assert parent.read_bytes() == log(E1) and parent.stat().st_mtime_ns == 1_000_000_000
    assert stat.S_IMODE((tmp_path / "demo-1-b.jsonl").stat().st_mode) == 0o600
    assert sorted(os.listdir(tmp_path)) == ["demo-1-b.jsonl", "demo-1.jsonl"]
    async with store.open("demo-1-b") as s:
        assert s.seed_length == 6 and s.next_seq == 7


async def test_e7_fork_refusals(tmp_path: Path) -> None:
    data = log(E1 + E5_TURN2)
    put(tmp_path / "demo-1.jsonl", data)
    store = SessionStore(tmp_path, clock=SetClock(1767268800000))
    with pytest.raises(ForkError) as open_turn:
        await store.fork("demo-1", at=8, id="c1")
    assert str(open_turn.value) == 'fork boundary 8 in session "demo-1" ends inside open turn 2'
    assert open_turn.value.code == "OPEN_TURN"
    with pytest.raises(ForkError) as missing:
        await store.fork("demo-1", at=11, id="c1")
    assert str(missing.value) == 'fork boundary 11 does not exist in session "demo-1" (last seq: 10)'
    assert missing.value.code == "INVALID_BOUNDARY"
    for bad in (True, -1, 2**53, 1.0, "3"):
        with pytest.raises(ForkError) as invalid:
            await store.fork("demo-1", at=bad, id="c1")  # type: ignore[arg-type]
        assert str(invalid.value) == (
            f'fork boundary for session "demo-1" must be a non-negative safe integer, got {bad!r}'
        )
        assert invalid.value.code == "INVALID_BOUNDARY"
    with pytest.raises(ForkError) as omitted:
        await store.fork("demo-1", id="c1")
    assert omitted.value.code == "OPEN_TURN"
    assert str(omitted.value) == 'fork boundary 10 in session "demo-1" ends inside open turn 2'
    assert not (tmp_path / "c1.jsonl").exists()
    await store.fork("demo-1", at=5, id="c1")
    for at in (8, 11, True, None, 5):
        with pytest.raises(SessionExists):
            await store.fork("demo-1", at=at, id="c1")  # type: ignore[arg-type]
    with pytest.raises(SessionExists):
        await store.fork("nope", at=5, id="c1")  # child exists comes before parent missing
    assert (tmp_path / "demo-1.jsonl").read_bytes() == data
    # a boundary after a turn/end but before the next turn/start is fine
    assert (await store.fork("demo-1", at=5, id="c2")).seed_length == 6
    assert [f for f in os.listdir(tmp_path) if f.endswith(".tmp")] == []


async def test_e7_empty_parent_boundary_message(tmp_path: Path) -> None:
    put(tmp_path / "e.jsonl", log([header("e")]))
    store = SessionStore(tmp_path, clock=SetClock(77))
    with pytest.raises(ForkError) as info:
        await store.fork("e", at=0, id="c")
    assert str(info.value) == 'fork boundary 0 does not exist in session "e" (last seq: none)'
    child = await store.fork("e", id="c")
    assert child.seed_length == 0
    assert (tmp_path / "c.jsonl").read_bytes() == log([
        '{"type":"session","version":0,"id":"c","createdAt":77,"parentSession":"e","seedLength":0,"delegationDepth":0}',
        '{"type":"session/end-seed","seq":0,"time":77,"data":{}}',
    ])


async def test_e8_nested_fork(tmp_path: Path) -> None:
    put(tmp_path / "demo-1.jsonl", log(E1))
    store = SessionStore(tmp_path, clock=SetClock(1767268800000))
    await store.fork("demo-1", at=5, id="demo-1-b")
    store2 = SessionStore(tmp_path, clock=SetClock(1767270000000))
    at6 = await store2.fork("demo-1-b", at=6, id="g6")
    assert (at6.seed_length, at6.parent_session) == (7, "demo-1-b")
    g6 = read_log(tmp_path / "g6.jsonl").events
    assert len(g6) == 7 and records(g6)[-1] == E6_MARKER
    at5 = await store2.fork("demo-1-b", at=5, id="g5")
    assert (at5.seed_length, at5.parent_session) == (6, "demo-1-b")
    g5 = read_log(tmp_path / "g5.jsonl").events
    assert records(g5) == E1[1:] + ['{"type":"session/end-seed","seq":6,"time":1767270000000,"data":{}}']


async def test_8_1_child_header_inherits_only_cwd(tmp_path: Path) -> None:
    lines = [header("p", cwd="/w", origin="subagent", agentPreset="a", owner="o", delegationDepth=3)]
    put(tmp_path / "p.jsonl", log(lines))
    child = await SessionStore(tmp_path, clock=SetClock(9)).fork("p", id="c")
    assert child == SessionHeader(id="c", created_at=9, cwd="/w", parent_session="p", seed_length=0)
    assert (tmp_path / "c.jsonl").read_bytes().split(b"\n")[0] == (
        b'{"type":"session","version":0,"id":"c","createdAt":9,"cwd":"/w","parentSession":"p","seedLength":0,"delegationDepth":0}'
    )


async def test_8_1_default_child_id_is_uuid4(tmp_path: Path) -> None:
    put(tmp_path / "demo-1.jsonl", log(E1))
    child = await SessionStore(tmp_path, clock=SetClock()).fork("demo-1")
    assert uuid.UUID(child.id).version == 4
    assert (tmp_path / f"{child.id}.jsonl").exists()


async def test_8_2_cold_parent_with_torn_tail_and_packed_rows(tmp_path: Path) -> None:
    prefix = [header("src")] + [event_line("a/b", i) for i in range(4)]
    data = log(prefix + [E9_ROW]) + b'{"type":"a/b"'
    src = put(tmp_path / "elsewhere" / "session.jsonl", data)
    store = SessionStore(tmp_path / "root", clock=SetClock(5))
    child = await store.fork(src, id="kid")
    assert (child.parent_session, child.seed_length) == ("src", 7)
    kid = read_log(tmp_path / "root" / "kid.jsonl")
    assert records(kid.events[4:7]) == E9_EVENTS
    assert records(kid.events[7:]) == ['{"type":"session/end-seed","seq":7,"time":5,"data":{}}']
    assert src.read_bytes() == data


async def test_8_2_live_parent_is_flushed_first(tmp_path: Path) -> None:
    clock = SetClock(1767261600000)
    store = SessionStore(tmp_path, clock=clock, write_delay_ms=60000)
    async with store.create(id="demo-1", cwd="/home/ana") as s:
        replay(s, clock, E1[1:])
        assert s.durable_through == -1
        clock.now = 1767268800000
        child = await store.fork("demo-1", at=5, id="demo-1-b")
        assert s.durable_through == 5
        assert child.seed_length == 6
        assert (tmp_path / "demo-1-b.jsonl").read_bytes() == log([E6_HEADER] + E1[1:] + [E6_MARKER])
    assert (tmp_path / "demo-1.jsonl").read_bytes() == log(E1)


# =========================================================================== log-format §3.3 surface fold


def _ev(type_: str, seq: int, op: Any = "append", sources: tuple[int, ...] | None = None) -> Event:
    return Event(type_, seq, 0, msgspec.Raw(b"{}"), op, sources)


def test_3_3_surface_fold() -> None:
    fold = eventlog.surface.fold
    base = [_ev("user/message", 0), Event("turn/start", 1, 0, msgspec.Raw(b"{}")), _ev("assistant/message", 2), _ev("tool/result", 3)]
    assert fold(base) == [0, 2, 3]
    assert fold(base + [_ev("assistant/message", 4, ReplaceOp(2, 3), (2, 3))]) == [0, 4]
    assert fold(base + [_ev("assistant/message", 4, ReplaceOp(0, 0), (0,))]) == [4, 2, 3]
    cases = [
        (ReplaceOp(1, 2), (1, 2), "start seq 1 not found in surface"),
        (ReplaceOp(0, 1), (0, 1), "end seq 1 not found in surface"),
        (ReplaceOp(3, 2), (2, 3), "start seq 3 is after end seq 2"),
        (ReplaceOp(0, 3), (0, 3), "sourceEventSeqs must include every shadowed surface node; missing "),
    ]
    for op, sources, message in cases:
        with pytest.raises(SurfaceError) as info:
            fold(base + [_ev("assistant/message", 4, op, sources)])
        assert str(info.value).startswith(message), str(info.value)
        assert isinstance(info.value, ValueError)
    with pytest.raises(SurfaceError) as missing:
        fold(base + [_ev("assistant/message", 4, ReplaceOp(0, 3), (0, 3))])
    assert "2" in str(missing.value).split("missing", 1)[1]


# =========================================================================== log-format §9 vocabulary


def _core(type_: str, data: Any, seq: int = 0, op: Any = None) -> Event:
    return Event(type_, seq, 0, msgspec.Raw(json.dumps(data).encode()), op)


def test_9_vocab_decode_valid_e1_events() -> None:
    snapshot_events = [msgspec.json.decode(line.encode()) for line in E1[1:] + E5_TURN2 + E5_CLOSERS]
    for record in snapshot_events:
        event = Event(record["type"], record["seq"], record["time"], msgspec.Raw(json.dumps(record["data"]).encode()), record.get("surfaceOp"))
        eventlog.vocab.decode(event)
    assert eventlog.vocab.decode(_core("custom/type", {"anything": 1})) is None


@pytest.mark.parametrize(
    "type_, data, fragment",
    [
        ("user/message", {"id": "", "role": "user", "source": {"kind": "user"}, "content": []}, "lacks an identified message"),
        ("user/message", {"id": "m", "role": "assistant", "source": {"kind": "user"}, "content": []}, 'must have role "user"'),
        ("user/message", {"id": "m", "role": "user", "source": {"kind": "model", "provider": "p", "model": "m"}, "content": []}, "invalid source"),
        ("user/message", {"id": "m", "role": "user", "source": {"kind": "tool", "callId": "c"}, "content": []}, "invalid source"),
        ("user/message", {"id": "m", "role": "user", "source": {"kind": "user"}, "content": [{"type": "bogus"}]}, "invalid content"),
        ("assistant/message", {"turn": 1, "step": 1, "message": {"id": "m", "role": "assistant", "source": {"kind": "user"}, "content": []}}, "must have model source"),
        ("assistant/message", {"turn": 1, "step": 1, "message": {"id": "m", "role": "assistant", "source": {"kind": "model", "provider": "", "model": "m"}, "content": []}}, "must have model source"),
        ("tool/result", {"turn": 1, "step": 1, "message": {"id": "m", "role": "user", "source": {"kind": "user"}, "content": []}}, "must have tool source"),
        ("tool/result", {"turn": 1, "step": 1, "message": {"id": "m", "role": "user", "source": {"kind": "tool", "callId": "c"}, "content": []}}, "must contain one tool-result block"),
        ("tool/result", {"turn": 1, "step": 1, "message": {"id": "m", "role": "user", "source": {"kind": "tool", "callId": "c"}, "content": [{"type": "tool-result", "toolCallId": "d", "isError": False, "content": []}]}}, "mismatched tool call ids"),
        ("turn/start", {"turn": 1, "extra": 2}, ""),
        ("turn/end", {"turn": 1, "reason": {"kind": "completed", "x": 1}}, ""),
        ("turn/end", {"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "nobody"}}}, ""),
    ],
)
def test_9_vocab_decode_invariants(type_: str, data: Any, fragment: str) -> None:
    op = "append" if type_ in ("user/message", "assistant/message", "tool/result") else None
    with pytest.raises(InvalidEvent) as info:
        eventlog.vocab.decode(_core(type_, data, seq=17, op=op))
    assert fragment in str(info.value)
    assert type_ in str(info.value) and "17" in str(info.value)


def test_9_vocab_foreign_source_kind_is_accepted() -> None:
    data = {"id": "m", "role": "user", "source": {"kind": "goal", "x": 1}, "content": [{"type": "text", "text": "t"}]}
    eventlog.vocab.decode(_core("user/message", data, op="append"))
    with pytest.raises(InvalidEvent):
        eventlog.vocab.decode(_core("user/message", {**data, "source": {"kind": ""}}, op="append"))


def test_9_vocab_structs_encode_in_spec_key_order() -> None:
    v = eventlog.vocab
    message = v.Message(
        id="msg-1", role="user", source=v.UserSource(rpc_id="7"), content=[v.TextBlock(text="Café at 9?")]
    )
    assert msgspec.json.encode(message) == json.dumps(
        json.loads(E1[3])["data"], separators=(",", ":"), ensure_ascii=False
    ).encode()
    end = v.TurnEnd(turn=1, reason=v.Completed())
    assert msgspec.json.encode(end) == b'{"turn":1,"reason":{"kind":"completed"}}'


# =========================================================================== log-format §10 command line


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = eventlog.cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_10_2_inspect_json_e2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = log(E1) + E2_TORN.encode()
    path = put(tmp_path / "demo-1.jsonl", data)
    code, out, err = cli(capsys, "inspect", "demo-1", "--root", str(tmp_path), "--json")
    assert (code, err) == (0, "")
    doc = json.loads(out)
    assert list(doc) == ["path", "id", "header", "events", "fileBytes", "committedBytes", "repair", "layout", "encoding", "frames"]
    assert doc["path"] == str(path) and doc["id"] == "demo-1"
    assert doc["header"] == json.loads(E1[0])
    assert list(doc["header"]) == list(json.loads(E1[0]))
    assert doc["events"] == [json.loads(line) for line in E1[1:]]
    assert (doc["fileBytes"], doc["committedBytes"]) == (919, 887)
    repair = doc["repair"]
    assert list(repair) == ["truncateTo", "droppedBytes", "droppedRecords", "defect", "openTurn", "closers"]
    assert {k: v for k, v in repair.items() if k != "defect"} == {
        "truncateTo": 887, "droppedBytes": 32, "droppedRecords": 0, "openTurn": None, "closers": [],
    }
    assert list(repair["defect"]) == ["line", "offset", "reason", "detail"]
    assert repair["defect"]["line"] == 8 and repair["defect"]["offset"] == 887
    assert repair["defect"]["reason"] == "torn final record"
    assert isinstance(repair["defect"]["detail"], str)
    assert path.read_bytes() == data
    # the events are the canonical records, byte for byte
    assert ",".join(E1[1:]) in out


def test_10_2_inspect_json_closers_and_by_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = put(tmp_path / "any-name.jsonl", log(E1 + E5_TURN2))
    code, out, _ = cli(capsys, "inspect", str(path), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["id"] == "demo-1"
    assert doc["repair"]["closers"] == [json.loads(line) for line in E5_CLOSERS]
    assert doc["repair"]["openTurn"] == 2 and doc["repair"]["truncateTo"] is None
    assert doc["repair"]["defect"] is None
    code, out, _ = cli(capsys, "inspect", str(path))
    assert code == 0
    assert "2026-01-01T10:00:00.100Z" in out  # 1767261600100 as UTC
    code, out, _ = cli(capsys, "inspect", str(path), "--json", "--from", "9", "--type", "tool/call")
    assert [e["seq"] for e in json.loads(out)["events"]] == [10]


def test_10_2_inspect_human_repair_none(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    put(tmp_path / "demo-1.jsonl", log(E1))
    code, out, _ = cli(capsys, "--root", str(tmp_path), "inspect", "demo-1")
    assert code == 0 and "repair: none needed" in out


@pytest.mark.parametrize(
    "data, fragment",
    [
        (log(E1[:3] + [E3_LINE4] + E1[4:]), "unparsable committed event at line 4, byte 256"),
        (b'{"type":"session","version":3,"id":"demo-1"}\n', "uses log format v3"),
    ],
)
def test_10_errors_are_one_line_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes, fragment: str) -> None:
    put(tmp_path / "demo-1.jsonl", data)
    code, out, err = cli(capsys, "inspect", "demo-1", "--root", str(tmp_path))
    assert code == 1 and out == ""
    assert err.startswith("turnlog: ") and err.endswith("\n") and err.count("\n") == 1
    assert fragment in err


def test_10_not_found_and_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "inspect", "nope", "--root", str(tmp_path))
    assert code == 1 and err == f'turnlog: session "nope" not found in {tmp_path}; see turnlog ls\n'
    code, _, err = cli(capsys, "inspect", "--root", str(tmp_path))
    assert code == 2 and err.startswith("turnlog: ") and err.count("\n") == 1
    code, _, err = cli(capsys, "frobnicate")
    assert code == 2 and err.startswith("turnlog: ")
    code, _, err = cli(capsys, "tail", "demo", "-n", "x", "--root", str(tmp_path))
    assert code == 2


def test_10_1_ls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A root not created yet is an error (log-format §10.1 as this round changes it); an
    # existing empty one lists nothing.
    missing = tmp_path / "missing"
    for json_flag in ([], ["--json"]):
        code, out, err = cli(capsys, "ls", "--root", str(missing), *json_flag)
        assert (code, out) == (1, "")
        assert err == f"turnlog: no session root at {missing} (nothing has been stored there yet; pass --root DIR)\n"
    missing.mkdir()
    assert cli(capsys, "ls", "--root", str(missing))[:2] == (0, "")
    code, out, _ = cli(capsys, "ls", "--root", str(missing), "--json")
    assert (code, json.loads(out)) == (0, [])
    put(tmp_path / "demo-1.jsonl", log(E1))
    put(tmp_path / "demo-1-b.jsonl", log([E6_HEADER] + E1[1:] + [E6_MARKER]))
    put(tmp_path / "bad.jsonl", b"garbage\n")
    code, out, _ = cli(capsys, "ls", "--root", str(tmp_path), "--json")
    assert code == 0
    doc = json.loads(out)
    assert [row["id"] for row in doc] == ["demo-1", "demo-1-b", "bad"]
    for row in doc:
        assert list(row) == ["id", "path", "bytes", "header", "problem", "layout", "encoding"]
    assert doc[0] == {
        "id": "demo-1", "path": str(tmp_path / "demo-1.jsonl"), "bytes": 887,
        "header": json.loads(E1[0]), "problem": None, "layout": "flat", "encoding": "none",
    }
    assert list(doc[1]["header"]) == list(json.loads(E6_HEADER))
    assert doc[2]["header"] is None and isinstance(doc[2]["problem"], str)
    code, out, _ = cli(capsys, "ls", "--root", str(tmp_path))
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["ID", "CREATED", "BYTES", "PARENT", "CWD"]
    row = next(line for line in lines if line.startswith("demo-1-b "))
    assert "demo-1@6" in row and "2026-01-01T12:00:00.000Z" in row and "/home/ana" in row
    demo = next(line for line in lines if line.startswith("demo-1 "))
    assert demo.split()[1:] == ["2026-01-01T10:00:00.000Z", "887", "-", "/home/ana"]


def test_10_3_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    put(tmp_path / "ok1.jsonl", log([header("ok1")] + E1[1:]))
    put(tmp_path / "torn.jsonl", log([header("torn")] + E1[1:]) + E2_TORN.encode())
    put(tmp_path / "open.jsonl", log([header("open")] + E1[1:] + E5_TURN2))
    put(tmp_path / "corrupt.jsonl", log([header("corrupt")] + E1[1:3] + [E3_LINE4] + E1[4:]))
    put(tmp_path / "new.jsonl", b'{"type":"session","version":1,"id":"new"}\n')
    put(tmp_path / "inv.jsonl", log([header("inv"), event_line("turn/start", 0, {"turn": 5}), event_line("turn/end", 1, {"turn": 5, "reason": {"kind": "completed"}})]))
    put(tmp_path / "x.jsonl.0123456789ab.tmp", b"")
    code, out, err = cli(capsys, "validate", "--root", str(tmp_path), "--json")
    assert code == 1
    doc = json.loads(out)
    by_path = {Path(row["path"]).name: row for row in doc}
    for row in doc:
        assert list(row) == ["id", "path", "status", "events", "messages"]
    assert by_path["ok1.jsonl"]["status"] == "ok" and by_path["ok1.jsonl"]["events"] == 6
    assert by_path["ok1.jsonl"]["messages"] == []
    assert by_path["torn.jsonl"]["status"] == "repairable"
    assert by_path["open.jsonl"]["status"] == "repairable"
    assert by_path["corrupt.jsonl"]["status"] == "corrupt" and by_path["corrupt.jsonl"]["events"] is None
    assert by_path["new.jsonl"]["status"] == "unsupported"
    assert by_path["inv.jsonl"]["status"] == "invalid" and by_path["inv.jsonl"]["messages"]
    assert "x.jsonl.0123456789ab.tmp" in out + err
    code, out, _ = cli(capsys, "validate", "ok1", "torn", "--root", str(tmp_path))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["ok", "ok1"] and lines[1].split()[:2] == ["repairable", "torn"]
    code, _, _ = cli(capsys, "validate", "ok1", "torn", "--root", str(tmp_path), "--strict")
    assert code == 1
    code, _, _ = cli(capsys, "validate", "ok1", "--root", str(tmp_path), "--strict")
    assert code == 0


def test_10_3_validate_checks_and_fork_seed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    put(tmp_path / "demo-1.jsonl", log(E1))
    put(tmp_path / "demo-1-b.jsonl", log([E6_HEADER] + E1[1:] + [E6_MARKER]))
    code, out, _ = cli(capsys, "validate", "demo-1-b", "--root", str(tmp_path), "--json")
    assert code == 0 and json.loads(out)[0]["status"] == "ok"
    # a child whose seed differs from the parent's events (one time changed)
    bad_child = [E6_HEADER] + E1[1:2] + [E1[2].replace("1767261600101", "1767261600109")] + E1[3:] + [E6_MARKER]
    put(tmp_path / "demo-1-c.jsonl", log([bad_child[0].replace("demo-1-b", "demo-1-c")] + bad_child[1:]))
    code, out, _ = cli(capsys, "validate", "demo-1-c", "--root", str(tmp_path), "--json")
    assert code == 1 and json.loads(out)[0]["status"] == "invalid"
    seen: list[LogSnapshot] = []

    def check(snapshot: LogSnapshot) -> list[str]:
        seen.append(snapshot)
        return ["package rule broken"]

    code = eventlog.cli.main(["validate", "demo-1", "--root", str(tmp_path), "--json"], checks=[check])
    out, _ = capsys.readouterr()
    assert code == 1 and json.loads(out)[0]["messages"] == ["package rule broken"]
    assert len(seen) == 1 and isinstance(seen[0], LogSnapshot)


def test_10_4_tail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    put(tmp_path / "demo-1.jsonl", log(E1) + E2_TORN.encode())
    code, out, _ = cli(capsys, "tail", "demo-1", "--root", str(tmp_path), "--json")
    assert code == 0 and out == "".join(line + "\n" for line in E1[1:])
    code, out, _ = cli(capsys, "tail", "demo-1", "--root", str(tmp_path), "--json", "-n", "2")
    assert out == "".join(line + "\n" for line in E1[5:])
    code, out, _ = cli(capsys, "tail", "demo-1", "--root", str(tmp_path), "--json", "--from", "3")
    assert out == "".join(line + "\n" for line in E1[4:])
    code, out, _ = cli(capsys, "tail", "demo-1", "--root", str(tmp_path))
    assert code == 0 and len(out.splitlines()) == 6
    assert out.splitlines()[0].startswith("0  2026-01-01T10:00:00.100Z  turn/start  ")


def test_10_5_fork(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parent = put(tmp_path / "demo-1.jsonl", log(E1 + E5_TURN2))
    code, out, err = cli(capsys, "fork", "demo-1", "--at", "5", "--id", "demo-1-b", "--root", str(tmp_path), "--json")
    assert (code, err) == (0, "")
    doc = json.loads(out)
    assert list(doc) == ["id", "path", "parentSession", "seedLength", "events", "layout", "encoding"]
    assert doc == {
        "id": "demo-1-b", "path": str(tmp_path / "demo-1-b.jsonl"), "parentSession": "demo-1",
        "seedLength": 6, "events": 7, "layout": "flat", "encoding": "none",
    }
    code, out, err = cli(capsys, "fork", "demo-1", "--at", "5", "--id", "demo-1-c", "--root", str(tmp_path))
    assert code == 0
    assert out.splitlines() == [
        "forked demo-1 at seq 5 -> demo-1-c (seedLength 6, 7 events)", str(tmp_path / "demo-1-c.jsonl"),
    ]
    code, out, err = cli(capsys, "fork", "demo-1", "--at", "8", "--root", str(tmp_path))
    assert code == 1 and out == ""
    assert err.startswith('turnlog: fork boundary 8 in session "demo-1" ends inside open turn 2')
    assert "5" in err.split("open turn 2", 1)[1] and err.count("\n") == 1
    code, _, err = cli(capsys, "fork", "demo-1", "--at", "11", "--root", str(tmp_path))
    assert code == 1 and err == 'turnlog: fork boundary 11 does not exist in session "demo-1" (last seq: 10)\n'
    code, _, err = cli(capsys, "fork", "demo-1", "--at", "5", "--id", "demo-1-b", "--root", str(tmp_path))
    assert code == 1 and err == 'turnlog: session "demo-1-b" already exists\n'
    assert parent.read_bytes() == log(E1 + E5_TURN2)


def test_10_python_m_eventlog_uses_default_root(tmp_path: Path) -> None:
    put(tmp_path / "home" / "sessions" / "demo-1.jsonl", log(E1))
    env = {**os.environ, "TURNLOG_HOME": str(tmp_path / "home")}
    result = subprocess.run(
        [sys.executable, "-m", "eventlog", "ls", "--json"], capture_output=True, env=env, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert [row["id"] for row in json.loads(result.stdout)] == ["demo-1"]
    result = subprocess.run(
        [sys.executable, "-m", "eventlog", "tail", "nope"], capture_output=True, env=env, text=True, check=False
    )
    root = tmp_path / "home" / "sessions"
    assert result.returncode == 1
    assert result.stderr == f'turnlog: session "nope" not found in {root}; see turnlog ls\n'


# =========================================================================== deepseek-harness logs


DSH_FILES = ["fork-parent.jsonl", "fork-child.jsonl", "tool-edit-packed-rows.jsonl", "multi-turn-packed-rows.jsonl"]
DSH_EVENTS = {"fork-parent.jsonl": 200, "fork-child.jsonl": 99, "multi-turn-packed-rows.jsonl": None, "tool-edit-packed-rows.jsonl": None}


@pytest.mark.parametrize("name", DSH_FILES)
def test_dsh_logs_read_inspect_validate(dsh: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = dsh / name
    data = path.read_bytes()
    snapshot = read_log(path)
    assert snapshot.repair is None and snapshot.committed_bytes == len(data)
    assert [e.seq for e in snapshot.events] == list(range(len(snapshot.events)))
    if DSH_EVENTS[name] is not None:
        assert len(snapshot.events) == DSH_EVENTS[name]
    # every event line keeps its value and its data bytes (deepseek-harness writes
    # sourceEventSeqs before surfaceOp, so only turnlog-written lines compare byte for byte)
    lines = data.split(b"\n")[1:-1]
    by_seq = {e.seq: e for e in snapshot.events}
    for line in lines:
        record = json.loads(line)
        if "seq" in record:
            event = by_seq[record["seq"]]
            assert json.loads(event.to_json()) == record
            assert json.loads(bytes(event.data)) == record["data"]
            assert bytes(event.data) in line
    code, out, _ = cli(capsys, "inspect", str(path), "--json")
    assert code == 0 and len(json.loads(out)["events"]) == len(snapshot.events)
    code, out, _ = cli(capsys, "validate", str(path), "--json")
    assert code == 0, out
    assert json.loads(out)[0]["status"] == "ok"
    assert path.read_bytes() == data


async def test_dsh_fork_by_path(dsh: Path, tmp_path: Path) -> None:
    parent = dsh / "fork-parent.jsonl"
    data = parent.read_bytes()
    header_id = json.loads(data.split(b"\n")[0])["id"]
    store = SessionStore(tmp_path / "root", clock=SetClock(5))
    child = await store.fork(parent, id="imported")
    events = read_log(parent).events
    assert (child.parent_session, child.seed_length) == (header_id, len(events))
    kid = read_log(tmp_path / "root" / "imported.jsonl", expected_id="imported")
    assert records(kid.events[: len(events)]) == records(events)
    assert kid.events[-1].type == "session/end-seed"
    assert parent.read_bytes() == data
    # the child of a subagent fork: origin and delegationDepth are not inherited
    sub = await store.fork(dsh / "fork-child.jsonl", id="sub")
    assert sub.origin is None and sub.delegation_depth == 0
    assert sub.parent_session == "ada8966c-9fa3-441b-8721-37ff1e795e6a"


def test_dsh_fork_by_path_cli(dsh: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "fork", str(dsh / "tool-edit-packed-rows.jsonl"), "--id", "imp", "--root", str(tmp_path / "r"), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["parentSession"] == "736c4bd8-41bd-43fb-9030-b4df3b2a4f83"
    assert doc["events"] == doc["seedLength"] + 1


async def test_turnlog_written_events_re_encode_to_line_bytes(tmp_path: Path) -> None:
    clock = SetClock(1767261600000)
    store = SessionStore(tmp_path, clock=clock)
    async with store.create(id="demo-1", cwd="/home/ana") as s:
        replay(s, clock, E1[1:])
        assert await s.flush() == 5
    data = (tmp_path / "demo-1.jsonl").read_bytes()
    assert data == log(E1)
    assert len(data) == E1_SIZE
    assert stat.S_IMODE((tmp_path / "demo-1.jsonl").stat().st_mode) == 0o600
    for event, line in zip(read_log(tmp_path / "demo-1.jsonl").events, data.split(b"\n")[1:]):
        assert event.to_json() == line


async def test_e1_fresh_session(tmp_path: Path) -> None:
    clock = SetClock(1767261600000)
    store = SessionStore(tmp_path, clock=clock)
    async with store.create(id="demo-1", cwd="/home/ana") as s:
        clock.now = 1767261600100
        s.append("turn/start", {"turn": 1})
        clock.now = 1767261600101
        s.append("step/start", {"turn": 1, "step": 1})
        clock.now = 1767261600102
        s.append(
            "user/message",
            {"id": "msg-1", "role": "user", "source": {"kind": "user", "rpcId": "7"},
             "content": [{"type": "text", "text": "Café at 9?"}]},
            surface_op="append",
        )
        clock.now = 1767261601500
        v = eventlog.vocab
        s.append(
            "assistant/message",
            v.AssistantMessage(
                turn=1, step=1,
                message=v.Message(id="msg-2", role="assistant", source=v.ModelSource(provider="scripted", model="demo"),
                                  content=[v.TextBlock(text="Sure, 9:00.")]),
            ),
            surface_op="append",
        )
        clock.now = 1767261601501
        s.append("step/end", v.StepEnd(turn=1, step=1))
        clock.now = 1767261601502
        s.append("turn/end", v.TurnEnd(turn=1, reason=v.Completed()))
        assert await s.flush() == 5
    assert (tmp_path / "demo-1.jsonl").read_bytes() == log(E1)


async def test_6_5_cancelling_flush_cancels_only_the_wait(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, clock=SetClock(), write_delay_ms=0)
    async with store.create(id="c") as s:
        s.append("a/b", 1)
        with trio.CancelScope() as scope:
            scope.cancel()
            await s.flush()
        assert scope.cancelled_caught
        assert await s.flush() == 0
        assert [e.value() for e in read_log(tmp_path / "c.jsonl").events] == [1]


async def test_6_6_failed_final_flush_raises_after_releasing(tmp_path: Path) -> None:
    put(tmp_path / "demo-1.jsonl", log(E1))
    store = SessionStore(tmp_path, clock=SetClock(), write_delay_ms=60000)
    with eventlog.fileio.fail("pwrite", errno.EIO, times=100), pytest.raises(PersistenceError) as info:
        async with store.open("demo-1") as s:
            s.append("a/b", 1)
    assert str(info.value).startswith('failed to persist session "demo-1": ')
    assert (tmp_path / "demo-1.jsonl").read_bytes() == log(E1)
    async with store.open("demo-1") as again:  # the lock was released
        assert again.next_seq == 6
