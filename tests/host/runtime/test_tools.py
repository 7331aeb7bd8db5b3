"""Tool registry, argument checks and result texts (host §3.7)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog.vocab import ToolError as ToolError_
from host.runtime import (
    FunctionTool,
    ToolArgumentsError,
    ToolContext,
    ToolError,
    ToolOutcome,
    ToolRegistrationError,
    ToolRegistry,
    ToolSpec,
    aborted_before_dispatch_result,
    aborted_result,
    check_schema,
    execute,
    parse_arguments,
    persistence_result,
    schedule_tools,
)
from schedule import InvalidToolArguments

# schedule §10.2, the create schema (descriptions dropped).
CREATE_SCHEMA = {
    "type": "object",
    "properties": {
        "prompt": {"type": "string"},
        "after_seconds": {"type": "number"},
        "every_seconds": {"type": "number"},
        "at": {"oneOf": [
            {"type": "string"},
            {"type": "object", "additionalProperties": False,
             "properties": {"date": {"type": "string"}, "time": {"type": "string"}, "time_zone": {"type": "string"}},
             "required": ["date", "time", "time_zone"]},
        ]},
    },
    "required": ["prompt"],
}


async def _noop(arguments: Any, ctx: ToolContext) -> Any:
    return arguments


def tool(name: str, fn: Any = _noop, parameters: dict[str, Any] | None = None) -> FunctionTool:
    return FunctionTool(ToolSpec(name, f"the {name} tool", parameters or {"type": "object"}), fn)


async def _flush() -> int:
    return 0


def context() -> ToolContext:
    return ToolContext(
        session_id="main", turn=1, step=2, call_id="call-1-2-0", events=(), seed_length=0,
        append=lambda type, data: None, flush=_flush, now_ms=lambda: 1770724800000,
    )


# --- registry -------------------------------------------------------------------------------


def test_registry_keeps_registration_order() -> None:
    registry = ToolRegistry()
    registry.register(tool("b"), tool("a"))
    registry.register(tool("c"))
    assert registry.names() == ("b", "a", "c")
    assert [s.name for s in registry.specs()] == ["b", "a", "c"]
    assert "a" in registry and "z" not in registry
    assert registry.get("z") is None


@pytest.mark.parametrize("name", ["", "a" * 65, "has space", "dot.name", "ünïcode", "slash/x", "a\n"])
def test_invalid_names_are_refused(name: str) -> None:
    registry = ToolRegistry()
    with pytest.raises(ToolRegistrationError):
        registry.register(tool(name))
    assert registry.names() == ()


@pytest.mark.parametrize("name", ["a", "A-z_09", "x" * 64, "schedule_create"])
def test_valid_names_are_accepted(name: str) -> None:
    registry = ToolRegistry()
    registry.register(tool(name))
    assert registry.names() == (name,)


def test_duplicate_registration_raises() -> None:
    registry = ToolRegistry()
    registry.register(tool("a"))
    with pytest.raises(ToolRegistrationError, match='tool "a" is already registered'):
        registry.register(tool("a"))


def test_multi_registration_is_atomic() -> None:
    registry = ToolRegistry()
    registry.register(tool("taken"))
    with pytest.raises(ToolRegistrationError):
        registry.register(tool("new1"), tool("taken"), tool("new2"))
    with pytest.raises(ToolRegistrationError):
        registry.register(tool("x"), tool("x"))
    with pytest.raises(ToolRegistrationError):
        registry.register(tool("ok"), tool("bad name"))
    assert registry.names() == ("taken",)


def test_unregister_is_atomic() -> None:
    registry = ToolRegistry()
    registry.register(tool("a"), tool("b"), tool("c"))
    with pytest.raises(ToolRegistrationError):
        registry.unregister("a", "missing")
    assert registry.names() == ("a", "b", "c")
    registry.unregister("a", "c")
    assert registry.names() == ("b",)
    registry.register(tool("a"))
    assert registry.names() == ("b", "a")


def test_spec_json_shape() -> None:
    spec = ToolSpec("schedule_list", "List.", {"type": "object", "properties": {}})
    assert msgspec.json.encode(spec).decode() == (
        '{"name":"schedule_list","description":"List.","parameters":{"type":"object","properties":{}}}'
    )


# --- arguments ------------------------------------------------------------------------------


def test_empty_arguments_mean_an_empty_object() -> None:
    assert parse_arguments("") == {}
    assert parse_arguments('{"a":[1,2.5,null,true]}') == {"a": [1, 2.5, None, True]}


@pytest.mark.parametrize("raw", ["{", "nope", "NaN", '{"a":Infinity}', "{'a':1}", " ", "[1,]", "1 2"])
def test_invalid_json_arguments(raw: str) -> None:
    with pytest.raises(ToolArgumentsError) as info:
        parse_arguments(raw)
    assert info.value.detail == "not valid JSON"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"prompt": "x"}, None),
        ({"prompt": "x", "after_seconds": 5}, None),
        ({"prompt": "x", "after_seconds": 5.5}, None),
        ({"prompt": "x", "at": "2026-02-10T12:00:00Z"}, None),
        ({"prompt": "x", "at": {"date": "2026-02-10", "time": "12:00", "time_zone": "UTC"}}, None),
        ({"prompt": "x", "unknown": 1}, None),  # root objects are open
        ([], "$: expected object"),
        (None, "$: expected object"),
        ({}, '$: missing required property "prompt"'),
        ({"prompt": 5}, "$.prompt: expected string"),
        ({"prompt": "x", "after_seconds": True}, "$.after_seconds: expected number"),
        ({"prompt": "x", "after_seconds": "5"}, "$.after_seconds: expected number"),
        ({"prompt": "x", "after_seconds": None}, "$.after_seconds: expected number"),
        ({"prompt": "x", "at": 5}, "$.at: must match exactly one of 2 schemas"),
        ({"prompt": "x", "at": {"date": 5, "time": "t", "time_zone": "z"}}, "$.at.date: expected string"),
        ({"prompt": "x", "at": {"date": "d", "time": "t"}}, '$.at: missing required property "time_zone"'),
        ({"prompt": "x", "at": {"date": "d", "time": "t", "time_zone": "z", "x": 1}},
         '$.at: unexpected property "x"'),
    ],
)
def test_schedule_create_schema(value: Any, expected: str | None) -> None:
    violation = check_schema(value, CREATE_SCHEMA)
    assert (None if violation is None else str(violation)) == expected


def test_integer_accepts_integral_floats_but_never_bools() -> None:
    schema = {"type": "integer"}
    assert check_schema(3, schema) is None
    assert check_schema(3.0, schema) is None
    assert str(check_schema(3.5, schema)) == "$: expected integer"
    assert str(check_schema(True, schema)) == "$: expected integer"
    assert str(check_schema(False, {"type": "number"})) == "$: expected number"


@pytest.mark.parametrize(
    ("type_name", "good", "bad"),
    [("string", "s", 1), ("boolean", False, 0), ("null", None, 0), ("array", [1], {}), ("object", {}, [])],
)
def test_each_type(type_name: str, good: Any, bad: Any) -> None:
    assert check_schema(good, {"type": type_name}) is None
    assert str(check_schema(bad, {"type": type_name})) == f"$: expected {type_name}"


def test_enum_compares_json_values() -> None:
    schema = {"enum": ["a", 1, None, "ü"]}
    assert check_schema("a", schema) is None
    assert check_schema(1.0, schema) is None
    assert str(check_schema(True, schema)) == '$: must be one of ["a",1,null,"ü"]'
    assert str(check_schema("b", schema)) == '$: must be one of ["a",1,null,"ü"]'


def test_one_of_needs_exactly_one_match() -> None:
    schema = {"oneOf": [{"type": "number"}, {"type": "integer"}]}
    assert check_schema(1.5, schema) is None
    assert str(check_schema(1, schema)) == "$: must match exactly one of 2 schemas"
    assert str(check_schema("x", schema)) == "$: must match exactly one of 2 schemas"


def test_items_and_nested_paths() -> None:
    schema = {"type": "object", "properties": {"list": {"type": "array", "items": {
        "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}}}
    assert check_schema({"list": [{"n": 1}, {"n": 2}]}, schema) is None
    assert str(check_schema({"list": [{"n": 1}, {"n": "2"}]}, schema)) == "$.list[1].n: expected integer"
    assert str(check_schema({"list": [{}]}, schema)) == '$.list[0]: missing required property "n"'


def test_closed_object_names_the_first_unexpected_key() -> None:
    schema = {"type": "object", "properties": {"a": {}}, "additionalProperties": False}
    assert str(check_schema({"a": 1, "b": 2, "c": 3}, schema)) == '$: unexpected property "b"'


@settings(max_examples=50, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
                    max_leaves=8))
def test_empty_schema_accepts_everything(value: Any) -> None:
    assert check_schema(value, {}) is None


# --- results --------------------------------------------------------------------------------


def test_success_is_one_compact_json_text_block_with_raw_non_ascii() -> None:
    result = ToolOutcome.success({"id": "schedule-1", "prompt": "Tee trinken ☕", "n": [1, 2]})
    assert result.text == '{"id":"schedule-1","prompt":"Tee trinken ☕","n":[1,2]}'
    assert not result.is_error and result.error is None


def test_result_data_shape_and_key_order() -> None:
    data = persistence_result("disk full").data(1, 2, "call-1-2-0", "m-1")
    assert msgspec.json.encode(data).decode() == (
        '{"turn":1,"step":2,"message":{"id":"m-1","role":"user","source":{"kind":"tool","callId":"call-1-2-0"},'
        '"content":[{"type":"tool-result","toolCallId":"call-1-2-0","isError":true,"content":[{"type":"text",'
        '"text":"Error: the session log could not be made durable: disk full"}]}]},'
        '"error":{"name":"PersistenceError","code":"PERSISTENCE"}}'
    )
    success = msgspec.to_builtins(ToolOutcome.success([]).data(1, 1, "c", "m"))
    assert "error" not in success
    assert success["message"]["content"][0]["isError"] is False


def test_abort_results() -> None:
    assert aborted_result() == ToolOutcome("Error: tool call aborted", ToolError_(name="AbortError", code="ABORTED"))
    assert aborted_before_dispatch_result() == ToolOutcome(
        "Error: tool call aborted before dispatch", ToolError_(name="AbortError", code="ABORTED_BEFORE_DISPATCH")
    )


# --- execute --------------------------------------------------------------------------------


def text_of(result: ToolOutcome) -> str:
    return result.text


def error_of(result: ToolOutcome) -> Any:
    return msgspec.to_builtins(result.error)


async def test_execute_unknown_tool() -> None:
    result = await execute(ToolRegistry(), "nope", "{}", context())
    assert text_of(result) == 'Error: unknown tool "nope"'
    assert result.is_error and error_of(result) == {"name": "ToolNotFoundError", "code": "UNKNOWN_TOOL"}


async def test_execute_invalid_json_and_schema_violation() -> None:
    registry = ToolRegistry()
    registry.register(tool("schedule_create", parameters=CREATE_SCHEMA))
    bad_json = await execute(registry, "schedule_create", "{oops", context())
    assert text_of(bad_json) == "Error: invalid arguments for schedule_create: not valid JSON"
    assert error_of(bad_json) == {"name": "ToolArgumentsError", "code": "INVALID_ARGS"}
    bad_schema = await execute(registry, "schedule_create", '{"prompt":1}', context())
    assert text_of(bad_schema) == "Error: invalid arguments for schedule_create: $.prompt: expected string"
    assert error_of(bad_schema) == {"name": "ToolArgumentsError", "code": "INVALID_ARGS"}
    missing = await execute(registry, "schedule_create", "", context())
    assert text_of(missing) == 'Error: invalid arguments for schedule_create: $: missing required property "prompt"'


async def test_execute_passes_parsed_arguments_and_context() -> None:
    seen: list[Any] = []

    async def body(arguments: Any, ctx: ToolContext) -> Any:
        seen.append((arguments, ctx.call_id, ctx.turn, ctx.step, ctx.now_ms()))
        return {"ok": True, "text": "ü"}

    registry = ToolRegistry()
    registry.register(tool("t", body))
    result = await execute(registry, "t", '{"a":1}', context())
    assert seen == [({"a": 1}, "call-1-2-0", 1, 2, 1770724800000)]
    assert result == ToolOutcome('{"ok":true,"text":"ü"}')


class QuotaExceeded(ToolError):
    pass


@pytest.mark.parametrize(
    ("exc", "text", "error"),
    [
        (InvalidToolArguments("schedule_create prompt must be a string"),
         "Error: invalid arguments for t: schedule_create prompt must be a string",
         {"name": "ToolArgumentsError", "code": "INVALID_ARGS"}),
        (ToolError("no such file", "NOT_FOUND"), "Error: no such file", {"name": "ToolError", "code": "NOT_FOUND"}),
        (QuotaExceeded("too many", "QUOTA"), "Error: too many", {"name": "QuotaExceeded", "code": "QUOTA"}),
        (ValueError("bad value"), "Error: bad value", {"name": "ValueError", "code": "TOOL_FAILED"}),
        (RuntimeError(), "Error: RuntimeError", {"name": "RuntimeError", "code": "TOOL_FAILED"}),
    ],
)
async def test_execute_maps_tool_exceptions(exc: Exception, text: str, error: dict[str, str]) -> None:
    async def body(arguments: Any, ctx: ToolContext) -> Any:
        raise exc

    registry = ToolRegistry()
    registry.register(tool("t", body))
    result = await execute(registry, "t", "{}", context())
    assert (text_of(result), result.is_error, error_of(result)) == (text, True, error)


async def test_execute_reports_an_unserialisable_value_as_tool_failed() -> None:
    async def body(arguments: Any, ctx: ToolContext) -> Any:
        return {"when": object()}

    registry = ToolRegistry()
    registry.register(tool("t", body))
    result = await execute(registry, "t", "{}", context())
    assert result.is_error and error_of(result) == {"name": "TypeError", "code": "TOOL_FAILED"}


async def test_execute_reports_a_value_too_deep_to_render_as_tool_failed() -> None:
    # An error result never ends the turn (host §3.7): a value the encoder gives up on is the tool's
    # failure, not a bug of the driver.
    async def body(arguments: Any, ctx: ToolContext) -> Any:
        value: list[Any] = []
        for _ in range(100_000):
            value = [value]
        return value

    registry = ToolRegistry()
    registry.register(tool("t", body))
    result = await execute(registry, "t", "{}", context())
    assert result.is_error and error_of(result) == {"name": "RecursionError", "code": "TOOL_FAILED"}


async def test_execute_lets_cancellation_propagate() -> None:
    async def body(arguments: Any, ctx: ToolContext) -> Any:
        await trio.sleep_forever()

    registry = ToolRegistry()
    registry.register(tool("t", body))
    with trio.CancelScope() as scope:
        scope.cancel()
        await execute(registry, "t", "{}", context())
    assert scope.cancelled_caught


async def test_schedule_tools_call_the_handler_with_the_agent_port() -> None:
    calls: list[Any] = []

    class FakeScheduleSpec:
        def __init__(self, name: str) -> None:
            self.name = name
            self.description = f"{name} description"
            self.parameters = {"type": "object", "properties": {}}
            self.exclusive = True

        async def handler(self, args: Any, *, caller: object) -> Any:
            calls.append((self.name, args, caller))
            return []

    port = object()
    tools = schedule_tools([FakeScheduleSpec("schedule_create"), FakeScheduleSpec("schedule_list")], port)
    registry = ToolRegistry()
    registry.register(*tools)
    assert registry.names() == ("schedule_create", "schedule_list")
    assert registry.specs()[0] == ToolSpec("schedule_create", "schedule_create description",
                                           {"type": "object", "properties": {}})
    result = await execute(registry, "schedule_list", "", context())
    assert calls == [("schedule_list", {}, port)]
    assert text_of(result) == "[]"
