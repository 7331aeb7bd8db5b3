"""Forks (log-format §8, E6–E8): boundaries, refusals, markers, sources, and the
parent's bytes never changing."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventlog import (
    CorruptLog,
    ForkError,
    SessionExists,
    SessionNotFound,
    SessionStore,
    UnsupportedFormat,
    read_log,
)
from tests.eventlog.live_support import E1_BYTES, SetClock, TrioWallClock, place
from tests.eventlog.spec_examples import E1_LINES, E5_LINES, E9_EVENTS, E9_ROW, log_bytes

FORK_TIME = 1767268800000
E6_HEADER = (
    b'{"type":"session","version":0,"id":"demo-1-b","createdAt":1767268800000,"cwd":"/home/ana",'
    b'"parentSession":"demo-1","seedLength":6,"delegationDepth":0}'
)
E6_MARKER = b'{"type":"session/end-seed","seq":6,"time":1767268800000,"data":{}}'
E3_LINE4 = b'{"type":"user/message","seq":2,"time":1767261600102,"data":{"id":"msg-1"'


@pytest.fixture
def clock() -> SetClock:
    return SetClock(FORK_TIME)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "sessions"


@pytest.fixture
def store(root: Path, clock: SetClock) -> SessionStore:
    return SessionStore(root, clock=clock)


def snapshot(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


async def test_e6_fork(store: SessionStore, root: Path) -> None:
    parent = place(root, "demo-1.jsonl", E1_BYTES)
    before = snapshot(parent)
    header = await store.fork("demo-1", at=5, id="demo-1-b")
    assert header.to_json() == E6_HEADER
    child = root / "demo-1-b.jsonl"
    assert child.read_bytes() == log_bytes([E6_HEADER, *E1_LINES[1:], E6_MARKER])
    assert oct(child.stat().st_mode & 0o777) == oct(0o600)
    assert snapshot(parent) == before
    assert sorted(os.listdir(root)) == ["demo-1-b.jsonl", "demo-1.jsonl"]
    async with store.open("demo-1-b") as session:  # the child is closed: it opens for writing
        assert session.seed_length == 6 and session.next_seq == 7 and session.recovered is None


@pytest.mark.parametrize(
    ("at", "message", "code"),
    [
        (8, 'fork boundary 8 in session "demo-1" ends inside open turn 2', "OPEN_TURN"),
        (11, 'fork boundary 11 does not exist in session "demo-1" (last seq: 10)', "INVALID_BOUNDARY"),
        (True, 'fork boundary for session "demo-1" must be a non-negative safe integer, got True', "INVALID_BOUNDARY"),
        (-1, 'fork boundary for session "demo-1" must be a non-negative safe integer, got -1', "INVALID_BOUNDARY"),
        (2**53, f'fork boundary for session "demo-1" must be a non-negative safe integer, got {2**53}', "INVALID_BOUNDARY"),
        (5.0, 'fork boundary for session "demo-1" must be a non-negative safe integer, got 5.0', "INVALID_BOUNDARY"),
        (None, 'fork boundary 10 in session "demo-1" ends inside open turn 2', "OPEN_TURN"),
    ],
)
async def test_e7_refusals(
    store: SessionStore, root: Path, at: object, message: str, code: str
) -> None:
    parent = place(root, "demo-1.jsonl", E1_BYTES + log_bytes(E5_LINES))
    before = snapshot(parent)
    with pytest.raises(ForkError) as info:
        await store.fork("demo-1", at=at, id="child")  # type: ignore[arg-type]
    assert (str(info.value), info.value.code) == (message, code)
    place(root, "taken.jsonl", E1_BYTES.replace(b'"demo-1"', b'"taken"', 1))
    with pytest.raises(SessionExists, match='^session "taken" already exists$'):
        await store.fork("demo-1", at=at, id="taken")  # type: ignore[arg-type]
    assert snapshot(parent) == before
    assert sorted(os.listdir(root)) == ["demo-1.jsonl", "taken.jsonl"]
    assert (await store.fork("demo-1", at=5, id="ok")).seed_length == 6


async def test_e8_nested_forks(store: SessionStore, root: Path) -> None:
    place(root, "demo-1.jsonl", E1_BYTES)
    await store.fork("demo-1", at=5, id="demo-1-b")
    middle = snapshot(root / "demo-1-b.jsonl")
    at6 = await store.fork("demo-1-b", at=6, id="g6")
    at5 = await store.fork("demo-1-b", at=5, id="g5")
    assert (at6.parent_session, at6.seed_length) == ("demo-1-b", 7)
    assert (at5.parent_session, at5.seed_length) == ("demo-1-b", 6)
    g6 = read_log(root / "g6.jsonl").events
    assert [e.to_json() for e in g6] == [*E1_LINES[1:], E6_MARKER]  # no second marker
    g5 = read_log(root / "g5.jsonl").events
    assert [e.to_json() for e in g5] == [*E1_LINES[1:], E6_MARKER]  # a new marker at seq 6
    assert snapshot(root / "demo-1-b.jsonl") == middle


async def test_empty_parent(store: SessionStore, root: Path) -> None:
    place(root, "e.jsonl", b'{"type":"session","version":0,"id":"e","createdAt":1,"delegationDepth":0}\n')
    header = await store.fork("e", id="c")
    assert header.seed_length == 0 and header.parent_session == "e" and header.cwd is None
    assert (root / "c.jsonl").read_bytes() == log_bytes([
        b'{"type":"session","version":0,"id":"c","createdAt":1767268800000,"parentSession":"e","seedLength":0,"delegationDepth":0}',
        b'{"type":"session/end-seed","seq":0,"time":1767268800000,"data":{}}',
    ])
    with pytest.raises(ForkError, match=r'fork boundary 0 does not exist in session "e" \(last seq: none\)'):
        await store.fork("e", at=0, id="d")


async def test_live_parent_is_flushed_then_copied_from_memory(
    root: Path, clock: SetClock
) -> None:
    store = SessionStore(root, clock=clock, write_delay_ms=60000)
    place(root, "demo-1.jsonl", E1_BYTES)
    async with store.open("demo-1") as session:
        session.append("turn/start", {"turn": 2})
        session.append("turn/end", {"turn": 2, "reason": {"kind": "completed"}})
        assert session.durable_through == 5
        header = await store.fork("demo-1", id="child")
        assert session.durable_through == 7  # the child holds nothing the parent has not made durable
        assert header.seed_length == 8
        child = read_log(root / "child.jsonl").events
        assert [e.to_json() for e in child[:8]] == [e.to_json() for e in session.events]
        assert child[8].type == "session/end-seed"
        session.append("turn/start", {"turn": 3})
        with pytest.raises(ForkError, match="open turn 3"):
            await store.fork("demo-1", id="child2")


async def test_live_parent_events_appended_during_its_flush_are_not_copied(
    root: Path, clock: SetClock
) -> None:
    # log-format §8.2: a child never contains an event its parent has not made durable. An event appended
    # while fork's flush waits (here: by an on_flushed observer, before flushers are released)
    # is in memory but not in the batch that flush returned for.
    store = SessionStore(root, clock=clock, write_delay_ms=60000)
    place(root, "demo-1.jsonl", E1_BYTES)
    async with store.open("demo-1") as session:
        late: list[int] = []

        def append_once(s: object, through: int) -> None:
            if not late:
                late.append(session.append("note/late", {}).seq)

        session.on_flushed(append_once)
        session.append("note/early", {})
        header = await store.fork("demo-1", id="child")
        assert late == [7] and session.durable_through == 6
        assert header.seed_length == 7
        child = read_log(root / "child.jsonl").events
        assert [e.type for e in child[5:]] == ["turn/end", "note/early", "session/end-seed"]


async def test_fork_from_a_path_expands_packed_rows(store: SessionStore, tmp_path: Path) -> None:
    dsh = tmp_path / "--project--" / "abc"
    dsh.mkdir(parents=True)
    source = dsh / "session.jsonl"
    tail = [
        b'{"type":"step/end","seq":7,"time":1013,"data":{"turn":1,"step":1}}',
        b'{"type":"turn/end","seq":8,"time":1014,"data":{"turn":1,"reason":{"kind":"completed"}}}',
    ]
    head = b'{"type":"session","version":0,"id":"dsh-1","createdAt":5,"origin":"subagent","delegationDepth":1,"agentPreset":"x","owner":"me"}'
    source.write_bytes(log_bytes([head, *E1_LINES[1:5], E9_ROW, *tail]))
    before = snapshot(source)
    header = await store.fork(source, id="imported")
    assert header.parent_session == "dsh-1" and header.seed_length == 9
    assert (header.origin, header.delegation_depth, header.agent_preset, header.owner) == (None, 0, None, None)
    lines = (store.path("imported")).read_bytes().split(b"\n")
    assert lines[1:10] == [*E1_LINES[1:5], *E9_EVENTS, *tail]
    assert snapshot(source) == before
    with pytest.raises(SessionNotFound):
        await store.fork(tmp_path / "missing.jsonl", id="x")


async def test_cold_parent_sources(store: SessionStore, root: Path) -> None:
    torn = place(root, "demo-1.jsonl", E1_BYTES + log_bytes(E5_LINES) + b'{"type":"tool/res')
    before = snapshot(torn)
    header = await store.fork("demo-1", at=5, id="c1")
    assert header.seed_length == 6
    assert snapshot(torn) == before  # not repaired, truncated or touched
    corrupt = place(root, "bad.jsonl", log_bytes([E1_LINES[0].replace(b'"demo-1"', b'"bad"', 1), *E1_LINES[1:3], E3_LINE4, *E1_LINES[4:]]))
    before = snapshot(corrupt)
    with pytest.raises(CorruptLog, match="unparsable committed event at line 4"):
        await store.fork("bad", at=1, id="c2")
    assert snapshot(corrupt) == before
    place(root, "alias.jsonl", E1_BYTES)
    with pytest.raises(CorruptLog, match='requested id "alias" does not match header id "demo-1"'):
        await store.fork("alias", id="c3")
    with pytest.raises(SessionNotFound, match='session "nope" not found'):
        await store.fork("nope", id="c4")
    assert not (root / "c2.jsonl").exists() and not (root / "c3.jsonl").exists()


async def test_fork_by_id_names_the_requested_id_in_a_version_refusal(
    store: SessionStore, root: Path
) -> None:
    # log-format §5.6: the version message names the requested id, else the header's id.
    path = place(root, "asked.jsonl", b'{"type":"session","version":3,"id":"written"}\n')
    with pytest.raises(UnsupportedFormat) as info:
        await store.fork("asked", id="c5")
    assert str(info.value).startswith('session "asked" uses log format v3,')
    with pytest.raises(UnsupportedFormat) as info:
        await store.fork(path, id="c6")
    assert str(info.value).startswith('session "written" uses log format v3,')


# --------------------------------------------------------------------------- property


def _event(kind: str, seq: int, turn: int) -> str:
    data: object
    if kind == "turn/start":
        data = {"turn": turn}
    elif kind == "turn/end":
        data = {"turn": turn, "reason": {"kind": "completed"}}
    elif kind == "session/end-seed":
        data = {}
    else:
        data = {"n": seq, "text": "é/\u2028"}
    return json.dumps(
        {"type": kind, "seq": seq, "time": 1000 + seq, "data": data},
        separators=(",", ":"),
        ensure_ascii=False,
    )


@st.composite
def logs(draw: st.DrawFn) -> tuple[list[str], list[str], bytes]:
    """A parent log: (event lines, their types, a torn fragment or b"")."""
    lines: list[str] = []
    types: list[str] = []
    turn = 0
    for step in draw(st.lists(st.sampled_from(["turn", "note", "seed", "open"]), max_size=8)):
        kinds = {
            "turn": ["turn/start", "note/x", "turn/end"],
            "note": ["note/x"],
            "seed": ["session/end-seed"],
            "open": ["turn/start", "note/x"],
        }[step]
        if step in ("turn", "open"):
            turn += 1
        for kind in kinds:
            lines.append(_event(kind, len(lines), turn))
            types.append(kind)
    torn = draw(st.sampled_from([b"", b'{"type":"note/x","se']))
    return lines, types, torn


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(log=logs(), at=st.one_of(st.none(), st.integers(-1, 12), st.booleans()))
async def test_fork_never_changes_the_parent_and_follows_the_rules(
    tmp_path: Path, log: tuple[list[str], list[str], bytes], at: int | bool | None
) -> None:
    lines, types, torn = log
    root = tmp_path / uuid.uuid4().hex
    header = '{"type":"session","version":0,"id":"p","createdAt":1,"delegationDepth":0}'
    parent = place(root, "p.jsonl", log_bytes([line.encode() for line in [header, *lines]]) + torn)
    before = snapshot(parent)
    store = SessionStore(root, clock=SetClock(FORK_TIME))
    # The rules of log-format §8.1 and log-format §8.3, computed here from their text.
    valid_at = at is None or (type(at) is int and at >= 0)
    boundary = len(lines) - 1 if at is None else at
    markers = [t for t in types[: boundary + 1] if t in ("turn/start", "turn/end")] if valid_at else []
    try:
        child = await store.fork("p", at=at, id="c")
    except ForkError as exc:
        assert snapshot(parent) == before
        assert not valid_at or boundary >= len(lines) or (markers and markers[-1] == "turn/start")
        expected_code = (
            "OPEN_TURN" if valid_at and boundary < len(lines) else "INVALID_BOUNDARY"
        )
        assert exc.code == expected_code
        assert sorted(os.listdir(root)) == ["p.jsonl"]
        return
    assert snapshot(parent) == before
    assert valid_at and boundary < len(lines) and not (markers and markers[-1] == "turn/start")
    assert child.seed_length == boundary + 1 and child.parent_session == "p"
    written = (root / "c.jsonl").read_bytes().decode().split("\n")
    assert written[-1] == ""
    seed = written[1 : boundary + 2]
    assert seed == lines[: boundary + 1]  # byte for byte
    rest = written[boundary + 2 : -1]
    if boundary >= 0 and types[boundary] == "session/end-seed":
        assert rest == []
    else:
        marker = f'{{"type":"session/end-seed","seq":{boundary + 1},"time":{FORK_TIME},"data":{{}}}}'
        assert rest == [marker]


async def test_fork_reads_the_clock_in_trio(
    root: Path, autojump_clock: object
) -> None:
    # A wall clock derived from trio time only works in the trio thread.
    store = SessionStore(root, clock=TrioWallClock(FORK_TIME))
    place(root, "demo-1.jsonl", E1_BYTES)
    await trio.sleep(2)
    cold = await store.fork("demo-1", id="cold")
    async with store.open("demo-1"):
        live = await store.fork("demo-1", id="live")
    assert cold.created_at == live.created_at == FORK_TIME + 2000
    assert read_log(root / "cold.jsonl").events[-1].time == FORK_TIME + 2000
