"""eventlog.vocab: Struct encodings in log-format §9 key order, strict decode with invariants,
log-format §9.3 structure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from eventlog import vocab
from eventlog.errors import InvalidEvent
from eventlog.format import Event, build_event
from eventlog.reader import read_log
from eventlog.repair import NOT_STARTED_TEXT
from eventlog.vocab import (
    AbortByHook,
    AbortByUser,
    Aborted,
    AdapterDefaults,
    AgentInboxSpliced,
    AssistantMessage,
    Completed,
    ErrorInfo,
    Failed,
    ForeignMessage,
    Message,
    ModelSource,
    PluginSource,
    RequestConfig,
    RequestHeader,
    RequestSnapshot,
    Section,
    SessionEndSeed,
    StepEnd,
    StepStart,
    TextBlock,
    ToolCall,
    ToolCallBlock,
    ToolError,
    ToolResult,
    ToolResultBlock,
    ToolSource,
    ToolSpec,
    TurnEnd,
    TurnStart,
    Usage,
    UserSource,
)
from tests.eventlog.spec_examples import E1_LINES, E5_CLOSERS, E5_LINES, log_bytes


def data_of(line: bytes) -> bytes:
    """The exact ``data`` bytes of a record line of a worked example (log-format §12)."""
    obj = msgspec.json.decode(line, type=dict[str, msgspec.Raw])
    return bytes(obj["data"])


def enc(value: object) -> bytes:
    return msgspec.json.encode(value)


# --------------------------------------------------------------------------- encodings


def test_e1_data_from_structs() -> None:
    built = [
        TurnStart(turn=1),
        StepStart(turn=1, step=1),
        Message(id="msg-1", role="user", source=UserSource(rpc_id="7"), content=[TextBlock(text="Café at 9?")]),
        AssistantMessage(
            turn=1,
            step=1,
            message=Message(
                id="msg-2",
                role="assistant",
                source=ModelSource(provider="scripted", model="demo"),
                content=[TextBlock(text="Sure, 9:00.")],
            ),
        ),
        StepEnd(turn=1, step=1),
        TurnEnd(turn=1, reason=Completed()),
    ]
    assert [enc(value) for value in built] == [data_of(line) for line in E1_LINES[1:]]


def test_e5_data_from_structs() -> None:
    assert enc(
        Message(id="msg-3", role="user", source=UserSource(), content=[TextBlock(text="Read notes.txt and todo.txt")])
    ) == data_of(E5_LINES[2])
    assert enc(
        ToolCall(turn=2, step=1, call_id="call-a", name="read_file", arguments='{"path":"notes.txt"}')
    ) == data_of(E5_LINES[4])
    assistant = AssistantMessage(
        turn=2,
        step=1,
        message=Message(
            id="msg-4",
            role="assistant",
            source=ModelSource(provider="scripted", model="demo"),
            content=[
                ToolCallBlock(id="call-a", name="read_file", arguments='{"path":"notes.txt"}'),
                ToolCallBlock(id="call-b", name="read_file", arguments='{"path":"todo.txt"}'),
            ],
        ),
    )
    assert enc(assistant) == data_of(E5_LINES[3])
    result = ToolResult(
        turn=2,
        step=1,
        message=Message(
            id="interrupted-tool-result-call-b-12",
            role="user",
            source=ToolSource(call_id="call-b"),
            content=[ToolResultBlock(tool_call_id="call-b", is_error=True, content=[TextBlock(text=NOT_STARTED_TEXT)])],
        ),
        error=ToolError(name="ToolNotStartedError", code="TOOL_NOT_STARTED"),
    )
    assert enc(result) == data_of(E5_CLOSERS[1])


def test_key_orders_of_the_other_shapes() -> None:
    header = RequestHeader(
        header=RequestSnapshot(
            config=RequestConfig(provider="p", model="m", reasoning_effort="high", temperature=0.5, max_tokens=9, stop=["x"]),
            adapter_defaults=AdapterDefaults(reasoning_effort=True, max_tokens=True),
            system="sys",
            tools=[ToolSpec(name="t", description="d", parameters={"type": "object"})],
        ),
        reason="initial",
    )
    assert enc(header) == (
        b'{"header":{"config":{"provider":"p","model":"m","reasoningEffort":"high","temperature":0.5,'
        b'"maxTokens":9,"stop":["x"]},"adapterDefaults":{"reasoningEffort":true,"maxTokens":true},'
        b'"system":"sys","tools":[{"name":"t","description":"d","parameters":{"type":"object"}}]},"reason":"initial"}'
    )
    assert enc(RequestHeader(header=RequestSnapshot(config=RequestConfig(provider="p", model="m")), reason="change")) == (
        b'{"header":{"config":{"provider":"p","model":"m"}},"reason":"change"}'
    )
    assert enc(UserSource(rpc_id="r-1", client_time_zone="Europe/Berlin")) == (
        b'{"kind":"user","rpcId":"r-1","clientTimeZone":"Europe/Berlin"}'
    )
    reading = PluginSource(plugin="time-context", form="snapshot", sections=[Section(name="time-context", text="T")])
    assert enc(reading) == (
        b'{"kind":"plugin","plugin":"time-context","form":"snapshot","sections":[{"name":"time-context","text":"T"}]}'
    )
    assert enc(PluginSource(plugin="schedule")) == b'{"kind":"plugin","plugin":"schedule"}'
    assert enc(ModelSource(provider="p", model="m", replay_state={"a": [1]})) == (
        b'{"kind":"model","provider":"p","model":"m","replayState":{"a":[1]}}'
    )
    assert enc(ToolResultBlock(tool_call_id="c", content=[])) == b'{"type":"tool-result","toolCallId":"c","content":[]}'
    assert enc(
        AssistantMessage(
            turn=1,
            step=2,
            message=Message(id="m", role="assistant", source=ModelSource(provider="p", model="m"), content=[]),
            usage=Usage(input_tokens=1, output_tokens=2, cache_read_tokens=3, cache_write_tokens=4, reasoning_tokens=5),
            interrupted=True,
        )
    ) == (
        b'{"turn":1,"step":2,"message":{"id":"m","role":"assistant","source":{"kind":"model","provider":"p",'
        b'"model":"m"},"content":[]},"usage":{"inputTokens":1,"outputTokens":2,"cacheReadTokens":3,'
        b'"cacheWriteTokens":4,"reasoningTokens":5},"interrupted":true}'
    )
    assert enc(TurnEnd(turn=3, reason=Aborted(reason=AbortByUser()))) == (
        b'{"turn":3,"reason":{"kind":"aborted","reason":{"kind":"user"}}}'
    )
    assert enc(Aborted(reason=AbortByHook(reason="policy"))) == b'{"kind":"aborted","reason":{"kind":"hook","reason":"policy"}}'
    assert enc(Failed(error=ErrorInfo(message="boom", code="E", status=500, provider_retry_after_ms=10, request_id="r"))) == (
        b'{"kind":"error","error":{"message":"boom","code":"E","status":500,"providerRetryAfterMs":10,"requestId":"r"}}'
    )
    assert enc(
        AgentInboxSpliced(
            target="next-turn",
            start=0,
            removed_count=1,
            inserted=[Message(id="u", role="user", source=UserSource(), content=[])],
            outcome="canceled",
        )
    ) == (
        b'{"target":"next-turn","start":0,"removedCount":1,"inserted":[{"id":"u","role":"user",'
        b'"source":{"kind":"user"},"content":[]}],"outcome":"canceled"}'
    )
    assert enc(SessionEndSeed()) == b"{}"


def test_structs_are_accepted_by_build_event() -> None:
    event = build_event("turn/end", 5, 1767261601502, TurnEnd(turn=1, reason=Completed()))
    assert event.to_json() == E1_LINES[6]


# --------------------------------------------------------------------------- decode


def _events(tmp_path: Path, lines: list[bytes]) -> list[Event]:
    path = tmp_path / "v.jsonl"
    path.write_bytes(log_bytes([E1_LINES[0], *lines]))
    return list(read_log(path).events)


def test_decode_spec_examples(tmp_path: Path) -> None:
    events = _events(tmp_path, [*E1_LINES[1:], *E5_LINES, *E5_CLOSERS])
    decoded = [vocab.decode(e) for e in events]
    assert decoded[0] == TurnStart(turn=1)
    assert decoded[2] == Message(id="msg-1", role="user", source=UserSource(rpc_id="7"), content=[TextBlock(text="Café at 9?")])
    assert isinstance(decoded[11], ToolResult) and decoded[11].error == ToolError(
        name="ToolOutcomeUnknownError", code="TOOL_OUTCOME_UNKNOWN"
    )
    assert decoded[-1] == TurnEnd(turn=2, reason=vocab.Interrupted())
    assert vocab.check_structure(events) == []


def test_decode_returns_none_for_other_types() -> None:
    assert vocab.decode(build_event("schedule/change", 0, 0, {"anything": 1})) is None


@pytest.mark.parametrize(
    "name", ["fork-parent.jsonl", "fork-child.jsonl", "tool-edit-packed-rows.jsonl", "multi-turn-packed-rows.jsonl"]
)
def test_deepseek_harness_logs_are_valid(dsh: Path, name: str) -> None:
    events = read_log(dsh / name).events
    decoded = [vocab.decode(e) for e in events]
    assert vocab.check_structure(events) == []
    if name == "multi-turn-packed-rows.jsonl":
        # deepseek-harness "goal" sources read as foreign messages.
        assert any(isinstance(d, ForeignMessage) and d.source["kind"] == "goal" for d in decoded)
        assert any(isinstance(d, vocab.ForeignInboxSpliced) for d in decoded)


def _message(role: str = "user", source: Any = None, content: Any = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "m",
        "role": role,
        "source": {"kind": "user"} if source is None else source,
        "content": [{"type": "text", "text": "t"}] if content is None else content,
        **extra,
    }


def _assistant(message: dict[str, Any]) -> tuple[str, Any]:
    return "assistant/message", {"turn": 1, "step": 1, "message": message}


def _result(message: dict[str, Any], **extra: Any) -> tuple[str, Any]:
    return "tool/result", {"turn": 1, "step": 1, "message": message, **extra}


MODEL = {"kind": "model", "provider": "p", "model": "m"}
TOOL = {"kind": "tool", "callId": "c"}
RESULT_BLOCK = {"type": "tool-result", "toolCallId": "c", "isError": False, "content": [{"type": "text", "text": "ok"}]}

INVALID = [
    (("user/message", {"role": "user", "source": {"kind": "user"}, "content": []}), "lacks an identified message"),
    (("user/message", _message(id="")), "lacks an identified message"),
    (("user/message", "text"), "lacks an identified message"),
    (("user/message", _message(role="assistant")), 'must have role "user"'),
    (("user/message", _message(source=MODEL)), "invalid source"),
    (("user/message", _message(source=TOOL)), "invalid source"),
    (("user/message", _message(source={"kind": ""})), "invalid source"),
    (("user/message", _message(source={"goal": 1})), "invalid source"),
    (("user/message", _message(source={"kind": "user", "rpcId": 7})), "invalid source"),
    (("user/message", _message(source={"kind": "user", "clientTimeZone": "UTC"})), "invalid source"),
    (("user/message", _message(source={"kind": "user", "rpcId": "1", "clientTimeZone": ""})), "invalid source"),
    (("user/message", _message(source={"kind": "user", "x": 1})), "invalid source"),
    (("user/message", _message(source={"kind": "plugin", "plugin": "p", "form": "snapshot"})), "invalid source"),
    (("user/message", _message(source={"kind": "plugin", "plugin": "p", "form": "other"})), "invalid source"),
    (("user/message", _message(content="t")), "invalid content"),
    (("user/message", _message(content=[{"type": "text"}])), "invalid content"),
    (("user/message", _message(content=[{"type": "reasoning", "text": "r"}])), "invalid content"),
    (("user/message", _message(content=[{"type": "video"}])), "invalid content"),
    (("user/message", _message(extra=1)), "Object contains unknown field"),
    (_assistant(_message(role="assistant")), "must have model source"),
    (_assistant(_message(role="assistant", source={"kind": "model", "provider": "", "model": "m"})), "must have model source"),
    (_assistant(_message(role="user", source=MODEL)), 'must have role "assistant"'),
    (_assistant(_message(role="assistant", source=MODEL, content=[RESULT_BLOCK])), "invalid content"),
    (_result(_message(source=MODEL, content=[RESULT_BLOCK])), "must have tool source"),
    (_result(_message(source=TOOL, content=[])), "must contain one tool-result block"),
    (_result(_message(source=TOOL, content=[RESULT_BLOCK, RESULT_BLOCK])), "must contain one tool-result block"),
    (_result(_message(source={"kind": "tool", "callId": "d"}, content=[RESULT_BLOCK])), "mismatched tool call ids"),
    (_result(_message(source=TOOL, content=[RESULT_BLOCK]), error={"name": "E"}), "error"),
    (("turn/start", {"turn": 0}), "turn must be"),
    (("turn/start", {"turn": 1, "x": 1}), "unknown field"),
    (("step/start", {"turn": 1, "step": 0}), "step must be"),
    (("step/end", {"turn": 1}), "step must be"),
    (("tool/call", {"turn": 1, "step": 1, "callId": "c", "name": "n"}), "arguments"),
    (("turn/end", {"turn": 1, "reason": {"kind": "completed", "x": 1}}), "unknown field"),
    (("turn/end", {"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "bored"}}}), "reason"),
    (("turn/end", {"turn": 1, "reason": {"kind": "error", "error": {"message": "m"}}}), "code"),
    (("request/header", {"header": {"config": {"provider": "", "model": "m"}}, "reason": "initial"}), "provider"),
    (("request/header", {"header": {"config": {"provider": "p", "model": "m", "reasoningEffort": ""}}, "reason": "initial"}), "reasoningEffort"),
    (("request/header", {"header": {"config": {"provider": "p", "model": "m"}, "adapterDefaults": {"maxTokens": True}}, "reason": "initial"}), "adapterDefaults maxTokens requires config maxTokens"),
    (("request/header", {"header": {"config": {"provider": "p", "model": "m"}, "adapterDefaults": {"maxTokens": False}}, "reason": "initial"}), "maxTokens"),
    (("request/header", {"header": {"config": {"provider": "p", "model": "m"}}, "reason": "later"}), "reason"),
    (("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [_message(role="assistant")]}), 'inserted message 0 must have role "user"'),
    (("agent/inbox/spliced", {"target": "now", "start": 0, "inserted": []}), "target"),
    (("session/end-seed", {"x": 1}), "unknown field"),
]


@pytest.mark.parametrize(("event", "fragment"), INVALID)
def test_decode_refuses(event: tuple[str, Any], fragment: str) -> None:
    type_, data = event
    surface = "append" if type_ in ("user/message", "assistant/message", "tool/result") else None
    built = build_event(type_, 7, 0, data, surface_op=surface)  # type: ignore[arg-type]
    with pytest.raises(InvalidEvent) as info:
        vocab.decode(built)
    assert fragment in str(info.value)
    assert f"{type_} at seq 7" in str(info.value)


VALID = [
    ("user/message", _message(source={"kind": "goal", "goalId": "g", "revision": 1})),
    ("user/message", _message(source={"kind": "plugin", "plugin": "schedule"})),
    ("user/message", _message(source={"kind": "plugin", "plugin": "p", "form": "notice", "summary": "s"})),
    ("user/message", _message(content=[{"type": "image", "attachment": {"url": "x"}}])),
    _assistant(_message(role="assistant", source=MODEL, content=[])),
    _assistant(_message(role="assistant", source=dict(MODEL, replayState=[1, None]), content=[{"type": "reasoning", "text": "r"}])),
    _result(_message(source=TOOL, content=[RESULT_BLOCK]), error={"name": "E", "code": "C"}, meta={"any": [1]}, mutations=[{"p": 1}]),
    _result(_message(source=TOOL, content=[{"type": "tool-result", "toolCallId": "c", "content": []}])),
    ("turn/end", {"turn": 1, "reason": {"kind": "max-tokens"}}),
    ("turn/end", {"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "hook", "reason": "x"}}}),
    ("request/header", {"header": {"config": {"provider": "p", "model": "m"}, "tools": []}, "reason": "resume"}),
    ("agent/inbox/spliced", {"target": "next-step", "start": 2, "removedCount": 1, "inserted": [], "outcome": "canceled"}),
    ("session/end-seed", {}),
]


@pytest.mark.parametrize("event", VALID)
def test_decode_accepts(event: tuple[str, Any]) -> None:
    type_, data = event
    surface = "append" if type_ in ("user/message", "assistant/message", "tool/result") else None
    decoded = vocab.decode(build_event(type_, 7, 0, data, surface_op=surface))  # type: ignore[arg-type]
    assert json.loads(enc(decoded)) == data


# --------------------------------------------------------------------------- structure


def _e(seq: int, type_: str, data: Any) -> Event:
    surface = "append" if type_ in ("user/message", "assistant/message", "tool/result") else None
    return build_event(type_, seq, 0, data, surface_op=surface)  # type: ignore[arg-type]


def _log(*items: tuple[str, Any]) -> list[Event]:
    return [_e(seq, type_, data) for seq, (type_, data) in enumerate(items)]


TS = ("turn/start", {"turn": 1})
SS = ("step/start", {"turn": 1, "step": 1})
SE = ("step/end", {"turn": 1, "step": 1})
TE = ("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
CALL = ("tool/call", {"turn": 1, "step": 1, "callId": "c", "name": "n", "arguments": "{}"})
RESULT = _result(_message(source=TOOL, content=[RESULT_BLOCK]))
ASK = _assistant(_message(role="assistant", source=MODEL, content=[{"type": "tool-call", "id": "c", "name": "n", "arguments": "{}"}]))


def test_structure_accepts_well_formed_turns() -> None:
    assert vocab.check_structure(_log(TS, SS, ASK, CALL, RESULT, SE, TE)) == []
    assert vocab.check_structure(_log(TS, SS, ASK, RESULT, SE, TE)) == []  # crash-repair result
    two_steps = _log(TS, SS, SE, ("step/start", {"turn": 1, "step": 2}), ("step/end", {"turn": 1, "step": 2}), TE,
                     ("turn/start", {"turn": 2}), ("turn/end", {"turn": 2, "reason": {"kind": "blocked"}}))
    assert vocab.check_structure(two_steps) == []
    assert vocab.check_structure(_log(TS, SS, ("x/y", {}), SE, TE, ("session/end-seed", {}))) == []


@pytest.mark.parametrize(
    ("items", "fragment"),
    [
        ((TS, TS), "opens turn 1 while turn 1 is still open"),
        ((("turn/start", {"turn": 2}),), "has turn 2, expected 1"),
        ((TS, TE, TS), "has turn 1, expected 2"),
        ((TE,), "no turn is open"),
        ((TS, ("turn/end", {"turn": 2, "reason": {"kind": "completed"}})), "ends turn 2, but turn 1 is open"),
        ((TS, SS, TE), "while step 1 is still open"),
        ((SS,), "outside a turn"),
        ((TS, ("step/start", {"turn": 2, "step": 1})), "names turn 2, but turn 1 is open"),
        ((TS, SS, SS), "while step 1 is still open"),
        ((TS, ("step/start", {"turn": 1, "step": 2})), "has step 2, expected 1"),
        ((TS, SE), "no step is open"),
        ((TS, SS, ("step/end", {"turn": 1, "step": 2})), "ends turn 1 step 2, but turn 1 step 1 is open"),
        ((TS, CALL), "tool/call at seq 1 is outside an open step"),
        ((TS, SS, ("tool/call", {"turn": 1, "step": 2, "callId": "c", "name": "n", "arguments": "{}"})), "names turn 1 step 2"),
        ((TS, SS, RESULT), "answers call 'c'"),
        ((TS, SS, CALL, SE, ("step/start", {"turn": 1, "step": 2}), _result(_message(source=TOOL, content=[RESULT_BLOCK]))), "answers call 'c'"),
    ],
)
def test_structure_violations(items: tuple[tuple[str, Any], ...], fragment: str) -> None:
    problems = vocab.check_structure(_log(*items))
    assert any(fragment in p for p in problems), problems
