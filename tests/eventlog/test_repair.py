"""eventlog.repair: interrupted-turn closers (log-format §7.3, worked examples E4 and E5)."""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog import repair
from eventlog.errors import CorruptLog
from eventlog.format import Event, build_event
from eventlog.repair import NOT_STARTED_TEXT, OUTCOME_UNKNOWN_TEXT, TurnTracker, plan_closers
from eventlog.scan import scan_bytes
from tests.eventlog.spec_examples import (
    E1_LINES,
    E4_CLOSERS,
    E5_CLOSERS,
    E5_LINES,
    log_bytes,
)
from tests.eventlog.spec_examples import (
    NOT_STARTED_TEXT as SPEC_NOT_STARTED,
)
from tests.eventlog.spec_examples import (
    OUTCOME_UNKNOWN_TEXT as SPEC_UNKNOWN,
)


def events_of(lines: list[bytes]) -> list[Event]:
    return scan_bytes(log_bytes([E1_LINES[0], *lines]))[1]


def test_texts_are_the_spec_texts() -> None:
    assert NOT_STARTED_TEXT == SPEC_NOT_STARTED
    assert OUTCOME_UNKNOWN_TEXT == SPEC_UNKNOWN


def test_balanced_log_needs_no_closers() -> None:
    assert plan_closers(events_of(E1_LINES[1:]), "/p") == (None, ())
    assert plan_closers([], "/p") == (None, ())
    assert plan_closers(events_of([b'{"type":"a/b","seq":0,"time":1,"data":null}']), "/p") == (None, ())


def test_e4_closers() -> None:
    turn, closers = plan_closers(events_of(E1_LINES[1:3]), "/p")
    assert turn == 1
    assert [c.to_json() for c in closers] == E4_CLOSERS


def test_e5_closers() -> None:
    turn, closers = plan_closers(events_of([*E1_LINES[1:], *E5_LINES]), "/p")
    assert turn == 2
    assert [c.to_json() for c in closers] == E5_CLOSERS


def test_open_turn_without_step_gets_only_turn_end() -> None:
    turn, closers = plan_closers(events_of([*E1_LINES[1:], E5_LINES[0]]), "/p")
    assert turn == 2
    assert [c.to_json() for c in closers] == [
        b'{"type":"turn/end","seq":7,"time":1767265200000,"data":{"turn":2,"reason":{"kind":"interrupted"}}}'
    ]


def _event(seq: int, type_: str, data: object, **kw: object) -> Event:
    return build_event(type_, seq, 100 + seq, data, **kw)  # type: ignore[arg-type]


def _assistant(seq: int, step: int, *ids: str) -> Event:
    content = [{"type": "text", "text": "t"}] + [
        {"type": "tool-call", "id": i, "name": "n", "arguments": "{}"} for i in ids
    ]
    message = {"id": f"m{seq}", "role": "assistant", "source": {"kind": "model", "provider": "p", "model": "m"}, "content": content}
    return _event(seq, "assistant/message", {"turn": 1, "step": step, "message": message}, surface_op="append")


def _result(seq: int, call_id: str) -> Event:
    message = {"id": f"r{seq}", "role": "user", "source": {"kind": "tool", "callId": call_id}, "content": []}
    return _event(seq, "tool/result", {"turn": 1, "step": 1, "message": message}, surface_op="append")


def test_pending_calls_follow_the_rules() -> None:
    events = [
        _event(0, "turn/start", {"turn": 1}),
        _event(1, "step/start", {"turn": 1, "step": 1}),
        _assistant(2, 1, "a", "b"),
        _event(3, "tool/call", {"turn": 1, "step": 1, "callId": "a", "name": "n", "arguments": "{}"}),
        _result(4, "a"),
        _event(5, "step/end", {"turn": 1, "step": 1}),  # clears pending "b"
        _event(6, "step/start", {"turn": 1, "step": 2}),
        _assistant(7, 2, "c", "d", "c"),  # a repeated id keeps its first position
        _event(8, "tool/call", {"turn": 1, "step": 2, "callId": "zzz", "name": "n", "arguments": "{}"}),
        _event(9, "tool/call", {"turn": 1, "step": 2, "callId": "d", "name": "n", "arguments": "{}"}),
    ]
    turn, closers = plan_closers(events, "/p")
    assert turn == 1
    assert [json.loads(c.to_json()) for c in closers] == [
        {
            "type": "tool/result",
            "seq": 10,
            "time": 109,
            "data": {
                "turn": 1,
                "step": 2,
                "message": {
                    "id": "interrupted-tool-result-c-10",
                    "role": "user",
                    "source": {"kind": "tool", "callId": "c"},
                    "content": [
                        {
                            "type": "tool-result",
                            "toolCallId": "c",
                            "isError": True,
                            "content": [{"type": "text", "text": SPEC_NOT_STARTED}],
                        }
                    ],
                },
                "error": {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"},
            },
            "surfaceOp": "append",
        },
        {
            "type": "tool/result",
            "seq": 11,
            "time": 109,
            "data": {
                "turn": 1,
                "step": 2,
                "message": {
                    "id": "interrupted-tool-result-d-11",
                    "role": "user",
                    "source": {"kind": "tool", "callId": "d"},
                    "content": [
                        {
                            "type": "tool-result",
                            "toolCallId": "d",
                            "isError": True,
                            "content": [{"type": "text", "text": SPEC_UNKNOWN}],
                        }
                    ],
                },
                "error": {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"},
            },
            "surfaceOp": "append",
            "sourceEventSeqs": [9],
        },
        {"type": "step/end", "seq": 12, "time": 109, "data": {"turn": 1, "step": 2}},
        {"type": "turn/end", "seq": 13, "time": 109, "data": {"turn": 1, "reason": {"kind": "interrupted"}}},
    ]


def test_only_the_last_turn_counts() -> None:
    events = [
        _event(0, "turn/start", {"turn": 1}),
        _event(1, "step/start", {"turn": 1, "step": 1}),
        _assistant(2, 1, "a"),
        _event(3, "turn/start", {"turn": 7}),
    ]
    turn, closers = plan_closers(events, "/p")
    assert turn == 7 and [c.type for c in closers] == ["turn/end"]


def test_unknown_keys_are_ignored() -> None:
    events = [
        _event(0, "turn/start", {"turn": 1, "extra": [1]}),
        _event(1, "step/start", {"step": 3}),
        _event(2, "step/end", "anything"),
        _event(3, "x/y", {"turn": "not read"}),
    ]
    turn, closers = plan_closers(events, "/p")
    assert turn == 1 and [c.type for c in closers] == ["turn/end"]


@pytest.mark.parametrize(
    ("event", "type_"),
    [
        (_event(1, "step/start", {"turn": 1}), "step/start"),
        (_event(1, "step/start", {"step": "1"}), "step/start"),
        (_event(1, "tool/call", {"callId": 5}), "tool/call"),
        (_event(1, "tool/result", {"message": {}}, surface_op="append"), "tool/result"),
        (_event(1, "assistant/message", {"step": 1, "message": {"content": "x"}}, surface_op="append"), "assistant/message"),
        (_event(1, "assistant/message", {"message": {"content": [{"type": "tool-call", "id": "a"}]}}, surface_op="append"), "assistant/message"),
        (_event(1, "assistant/message", {"step": 1, "message": {"content": [{"type": "tool-call"}]}}, surface_op="append"), "assistant/message"),
        (_event(1, "assistant/message", {"step": 1, "message": {"content": [{"id": "a"}]}}, surface_op="append"), "assistant/message"),
    ],
)
def test_malformed_fields_stop_repair(event: Event, type_: str) -> None:
    with pytest.raises(CorruptLog) as info:
        plan_closers([_event(0, "turn/start", {"turn": 1}), event], "/logs/p.jsonl")
    assert str(info.value) == (
        f'corrupt session log "/logs/p.jsonl": cannot repair interrupted turn: {type_} at seq 1 has malformed data'
    )


def test_malformed_turn_start() -> None:
    with pytest.raises(CorruptLog, match="turn/start at seq 0 has malformed data"):
        plan_closers([_event(0, "turn/start", {"turn": True})], "/p")


def test_assistant_without_tool_calls_needs_no_step() -> None:
    events = [
        _event(0, "turn/start", {"turn": 1}),
        _event(1, "assistant/message", {"message": {"content": []}}, surface_op="append"),
    ]
    assert [c.type for c in plan_closers(events, "/p")[1]] == ["turn/end"]
    assert msgspec.json.decode(plan_closers(events, "/p")[1][0].data) == {
        "turn": 1,
        "reason": {"kind": "interrupted"},
    }


def test_tracker_fed_everything_matches_plan_closers() -> None:
    events = events_of([*E1_LINES[1:], *E5_LINES])
    tracker = TurnTracker("/p")
    for event in events:
        tracker.feed(event)
    assert tracker.closers() == plan_closers(events, "/p")
    # A malformed event in a turn that ended is never a problem.
    bad = [_event(0, "turn/start", {"turn": "x"}), _event(1, "turn/end", {}), _event(2, "turn/start", {"turn": 2})]
    tracker = TurnTracker("/p")
    for event in bad:
        tracker.feed(event)
    assert [c.type for c in tracker.closers()[1]] == ["turn/end"]


def _fed(events: list[Event]) -> tuple[int | None, tuple[Event, ...]] | str:
    tracker = TurnTracker("/p")
    for event in events:
        tracker.feed(event)
    try:
        return tracker.closers()
    except CorruptLog as exc:
        return str(exc)


def test_a_long_open_turn_is_decoded_as_it_goes_with_the_same_closers() -> None:
    # Over 2 MiB of data after the tool call: the tracker stops deferring mid-turn.
    big = "x" * (1 << 20)
    events = [
        _event(0, "turn/start", {"turn": 1}),
        _event(1, "step/start", {"turn": 1, "step": 1}),
        _assistant(2, 1, "a", "b"),
        *[_event(seq, "note/big", {"text": big}) for seq in (3, 4, 5)],
        _event(6, "tool/call", {"turn": 1, "step": 1, "callId": "b"}),
    ]
    turn, closers = _fed(events)  # type: ignore[misc]
    assert turn == 1
    assert [(c.type, c.source_event_seqs) for c in closers] == [
        ("tool/result", None),  # "a": never started
        ("tool/result", (6,)),  # "b": outcome unknown
        ("step/end", None),
        ("turn/end", None),
    ]
    malformed = [events[0], _event(1, "step/start", {"step": "1"}), *events[3:6]]
    assert _fed(malformed) == (
        'corrupt session log "/p": cannot repair interrupted turn: step/start at seq 1 has malformed data'
    )


_STEP_EVENTS = st.sampled_from(["turn/start", "turn/end", "step/start", "step/end", "assistant", "call", "result", "note", "bad"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_STEP_EVENTS, st.sampled_from(["a", "b"]), st.integers(0, 40)), max_size=30))
def test_deferring_never_changes_the_outcome(script: list[tuple[str, str, int]]) -> None:
    events: list[Event] = []
    for seq, (kind, call_id, size) in enumerate(script):
        if kind == "assistant":
            events.append(_assistant(seq, 1, call_id))
        elif kind == "call":
            events.append(_event(seq, "tool/call", {"turn": 1, "step": 1, "callId": call_id}))
        elif kind == "result":
            events.append(_result(seq, call_id))
        elif kind == "note":
            events.append(_event(seq, "note/x", "y" * size))
        elif kind == "bad":
            events.append(_event(seq, "step/start", {"step": None}))
        else:
            events.append(_event(seq, kind, {"turn": 1, "step": 1}))
    outcomes = []
    for limit in (-1, 20, 1 << 30):  # decode at once, switch mid-turn, never switch
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(repair, "_DEFER_BYTES", limit)
            outcomes.append(_fed(events))
    assert outcomes[0] == outcomes[1] == outcomes[2]


def test_a_long_open_turn_of_small_records_keeps_few_chunks_alive(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # log-format §11: iter_events is bounded by a chunk plus the largest record. A deferred
    # event keeps its whole chunk alive, so the deferral must be bounded by the file it spans,
    # not by the data alone: records of tiny data are mostly envelope (here ~45 bytes for 1 byte
    # of data), and one tracked event per chunk would otherwise pin every chunk of the turn.
    # Chunk and deferral limit are scaled down 16x (64 KiB, 128 KiB) with the file (1.5 MB
    # instead of 24 MB), so the test takes a fraction of a second; the ratios are the real ones.
    import tracemalloc

    from eventlog import iter_events, reader

    monkeypatch.setattr(reader, "CHUNK_SIZE", 1 << 16)
    monkeypatch.setattr(repair, "_DEFER_BYTES", 1 << 17)
    lines = [E1_LINES[0], b'{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}']
    seq, size = 1, 0
    while size < 1_500_000:
        if seq % 1_300 == 0:  # a tracked event in every chunk
            line = b'{"type":"tool/call","seq":%d,"time":0,"data":{"turn":1,"callId":"c"}}' % seq
        else:
            line = b'{"type":"x/y","seq":%d,"time":0,"data":0}' % seq
        lines.append(line)
        size += len(line) + 1
        seq += 1
    path = tmp_path / "long.jsonl"
    path.write_bytes(log_bytes(lines))
    tracemalloc.start()
    try:
        count = sum(1 for _ in iter_events(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == seq
    # a chunk, its events and a few deferred chunks (about 0.6 MB); not the turn's 1.5 MB
    # (about 1.9 MB when every chunk stays alive)
    assert peak < 1_000_000, peak


@pytest.mark.parametrize(
    ("lines", "type_", "seq"),
    [
        ([b'{"type":"turn/start","seq":0,"time":0,"data":{"turn":9007199254740992}}'], "turn/start", 0),
        (
            [
                b'{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}',
                b'{"type":"step/start","seq":1,"time":0,"data":{"turn":1,"step":-9007199254740992}}',
            ],
            "step/start",
            1,
        ),
        (
            [
                b'{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}',
                (
                    b'{"type":"assistant/message","seq":1,"time":0,"data":{"step":99999999999999999999,'
                    b'"message":{"content":[{"type":"tool-call","id":"c"}]}},"surfaceOp":"append"}'
                ),
            ],
            "assistant/message",
            1,
        ),
    ],
)
def test_an_unsafe_turn_or_step_number_stops_repair(tmp_path, lines: list[bytes], type_: str, seq: int) -> None:
    # log-format §2, log-format §7.3: a number outside the safe range is not an integer of the
    # log, so the field has the wrong type and the closers (which would carry it) cannot be
    # written: CorruptLog, not the InvalidEvent of building a closer.
    from eventlog import read_log

    path = tmp_path / "unsafe.jsonl"
    path.write_bytes(log_bytes([E1_LINES[0], *lines]))
    with pytest.raises(CorruptLog) as info:
        read_log(path)
    assert str(info.value) == (
        f'corrupt session log "{path}": cannot repair interrupted turn: {type_} at seq {seq} has malformed data'
    )
