"""The tool registry, argument checks and tool-result texts (host §3.7).

Pure parts: :class:`ToolRegistry`, :func:`parse_arguments`, :func:`check_schema` and the
:class:`ToolOutcome` builders, which produce the exact texts and error objects of host §3.7. The one
effect is :func:`execute`, which runs steps 3–6 for one call; steps 1–2 (cancel before dispatch,
``tool/call`` and its flush) and the cancellation result belong to the agent loop.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from msgspec import UNSET

from eventlog import vocab
from eventlog.values import compact_json
from eventlog.vocab import ToolSpec
from schedule import InvalidToolArguments

TOOL_NAME_PATTERN = "[A-Za-z0-9_-]{1,64}"
_TOOL_NAME = re.compile(TOOL_NAME_PATTERN)


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a running tool may see and do; the agent loop fills it in for each call.

    ``events`` is a read-only view of the session's events (inherited ones included),
    ``append(type, data)`` appends a log-only event, ``flush()`` is the persistence barrier
    (it raises on failure) and ``now_ms()`` the wall clock.
    """

    session_id: str
    turn: int
    step: int
    call_id: str
    events: Sequence[Any]
    seed_length: int
    append: Callable[[str, Mapping[str, Any]], object]
    flush: Callable[[], Awaitable[int]]
    now_ms: Callable[[], int]


class Tool(Protocol):
    """A registered tool: its spec plus an async body returning a JSON value."""

    @property
    def spec(self) -> ToolSpec: ...

    async def call(self, arguments: Any, ctx: ToolContext) -> Any: ...


@dataclass(frozen=True, slots=True)
class FunctionTool:
    """A tool whose body is ``await fn(arguments, ctx)``."""

    spec: ToolSpec
    fn: Callable[[Any, ToolContext], Awaitable[Any]]

    async def call(self, arguments: Any, ctx: ToolContext) -> Any:
        return await self.fn(arguments, ctx)


class ScheduleSpec(Protocol):
    """The part of ``schedule.ToolSpec`` the host uses (schedule §9): schedule keeps its own spec
    type on purpose, since it cannot import host's; :func:`schedule_tools` maps it to ours."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def parameters(self) -> Mapping[str, Any]: ...
    @property
    def handler(self) -> Callable[..., Awaitable[Any]]: ...


@dataclass(frozen=True, slots=True)
class ScheduleTool:
    """One of schedule's tools bound to the session's agent port: ``call`` is
    ``await handler(arguments, caller=caller)``."""

    spec: ToolSpec
    handler: Callable[..., Awaitable[Any]]
    caller: object

    async def call(self, arguments: Any, ctx: ToolContext) -> Any:
        return await self.handler(arguments, caller=self.caller)


def schedule_tools(specs: Iterable[ScheduleSpec], caller: object) -> list[ScheduleTool]:
    """Turn ``ScheduleTools.specs()`` into registry tools, in order. ``caller`` is the session's
    agent port, the same object given to ``ScheduleTools`` as ``owner``."""
    return [
        ScheduleTool(ToolSpec(s.name, s.description, dict(s.parameters)), s.handler, caller) for s in specs
    ]


class ToolRegistrationError(ValueError):
    """A tool name that is invalid, already registered, or (on unregister) unknown."""


class ToolRegistry:
    """One session's tools, in registration order. Registration is atomic: if any tool of a call
    has an invalid or taken name, none is registered."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    def register(self, *tools: Tool) -> None:
        seen: set[str] = set()
        for tool in tools:
            name = tool.spec.name
            if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
                raise ToolRegistrationError(
                    f"invalid tool name {name!r}: names must match {TOOL_NAME_PATTERN}"
                )
            if name in self._tools or name in seen:
                raise ToolRegistrationError(f'tool "{name}" is already registered')
            seen.add(name)
        for tool in tools:
            self._tools[tool.spec.name] = tool

    def unregister(self, *names: str) -> None:
        """Remove tools by name, atomically; an unknown name removes none and raises."""
        for name in names:
            if name not in self._tools:
                raise ToolRegistrationError(f'tool "{name}" is not registered')
        for name in names:
            del self._tools[name]

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(tool.spec for tool in self._tools.values())

    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools


# --- arguments ------------------------------------------------------------------------------


class ToolArgumentsError(Exception):
    """Arguments that are not JSON or break the tool's schema; ``detail`` is the text after
    ``invalid arguments for <name>: ``."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


def parse_arguments(raw: str) -> Any:
    """Parse a tool call's raw arguments: ``""`` is ``{}``; anything that is not strict JSON
    (``NaN`` and ``Infinity`` included) raises ``ToolArgumentsError("not valid JSON")``."""
    if raw == "":
        return {}
    try:
        return json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        raise ToolArgumentsError("not valid JSON") from None


_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "number": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and math.isfinite(v))
    ),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())
    ),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class SchemaViolation:
    """The first problem found: ``<path>: <problem>``."""

    path: str
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


def _child_path(path: str, key: str) -> str:
    return f"{path}.{key}" if _IDENTIFIER.fullmatch(key) else f"{path}[{compact_json(key)}]"


def _type_matches(value: Any, expected: object) -> bool:
    names = expected if isinstance(expected, list) else [expected]
    return any(_TYPE_CHECKS.get(name, lambda _v: True)(value) for name in names if isinstance(name, str))


def _json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: ``true`` is not ``1``; ``1`` equals ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def check_schema(value: Any, schema: Mapping[str, Any], path: str = "$") -> SchemaViolation | None:
    """Check ``value`` against the JSON-schema subset of host §3.7 and return the first violation.

    Checked: ``type`` (a name or a list of names), ``enum``, ``oneOf``, and for objects
    ``required`` (in its order), ``additionalProperties: false`` and ``properties``, for arrays
    ``items``. Other keywords are ignored. When no ``oneOf`` branch matches and exactly one branch
    accepts the value's type, that branch's own violation is reported (it names the deeper path).
    """
    if "type" in schema and not _type_matches(value, schema["type"]):
        expected = schema["type"]
        names = " or ".join(expected) if isinstance(expected, list) else str(expected)
        return SchemaViolation(path, f"expected {names}")
    if "enum" in schema:
        options = list(schema["enum"])
        if not any(_json_equal(value, option) for option in options):
            return SchemaViolation(path, f"must be one of {compact_json(options)}")
    if "oneOf" in schema:
        branches = list(schema["oneOf"])
        results = [check_schema(value, branch, path) for branch in branches]
        matched = sum(1 for r in results if r is None)
        if matched != 1:
            typed = [
                r
                for branch, r in zip(branches, results)
                if r is not None and _type_matches(value, branch.get("type", []))
            ]
            if matched == 0 and len(typed) == 1:
                return typed[0]
            return SchemaViolation(path, f"must match exactly one of {len(branches)} schemas")
    if isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties", {})
        for key in schema.get("required", ()):
            if key not in value:
                return SchemaViolation(path, f'missing required property "{key}"')
        closed = schema.get("additionalProperties") is False
        for key, item in value.items():
            if key in properties:
                violation = check_schema(item, properties[key], _child_path(path, key))
                if violation is not None:
                    return violation
            elif closed:
                return SchemaViolation(path, f'unexpected property "{key}"')
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            violation = check_schema(item, schema["items"], f"{path}[{index}]")
            if violation is not None:
                return violation
    return None


def checked_arguments(raw: str, schema: Mapping[str, Any]) -> Any:
    """Parse and schema-check raw arguments; raise :class:`ToolArgumentsError` on either failure."""
    arguments = parse_arguments(raw)
    violation = check_schema(arguments, schema)
    if violation is not None:
        raise ToolArgumentsError(str(violation))
    return arguments


# --- results --------------------------------------------------------------------------------


class ToolError(Exception):
    """Raised by a tool to fail with its own code: the result is ``Error: <message>`` with error
    ``{"name":<exception class>,"code":<code>}``."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """How one tool call ended: the text of its result's one text block and, for a failure, the
    ``{"name","code"}`` error the ``tool/result`` carries (host §3.7)."""

    text: str
    error: vocab.ToolError | None = None

    @property
    def is_error(self) -> bool:
        return self.error is not None

    @classmethod
    def success(cls, value: Any) -> ToolOutcome:
        """The compact JSON of ``value`` (raw non-ASCII, lone surrogates escaped). Raises
        ``TypeError``/``ValueError`` for a value JSON cannot hold, ``RecursionError`` for one
        nested too deeply."""
        return cls(compact_json(value))

    @classmethod
    def failure(cls, text: str, name: str, code: str) -> ToolOutcome:
        return cls(text, vocab.ToolError(name=name, code=code))

    def data(self, turn: int, step: int, call_id: str, message_id: str) -> vocab.ToolResult:
        """The ``tool/result`` data: ``{"turn","step","message"[,"error"]}``."""
        block = vocab.ToolResultBlock(
            tool_call_id=call_id, is_error=self.is_error, content=[vocab.TextBlock(text=self.text)]
        )
        message = vocab.Message(
            id=message_id, role="user", source=vocab.ToolSource(call_id=call_id), content=[block]
        )
        return vocab.ToolResult(
            turn=turn, step=step, message=message, error=UNSET if self.error is None else self.error
        )


def unknown_tool_result(name: str) -> ToolOutcome:
    return ToolOutcome.failure(f'Error: unknown tool "{name}"', "ToolNotFoundError", "UNKNOWN_TOOL")


def invalid_arguments_result(name: str, detail: str) -> ToolOutcome:
    return ToolOutcome.failure(
        f"Error: invalid arguments for {name}: {detail}", "ToolArgumentsError", "INVALID_ARGS"
    )


def aborted_result() -> ToolOutcome:
    """The result of a call cancelled while it ran."""
    return ToolOutcome.failure("Error: tool call aborted", "AbortError", "ABORTED")


def aborted_before_dispatch_result() -> ToolOutcome:
    """The result of a call whose turn was cancelled before it started."""
    return ToolOutcome.failure(
        "Error: tool call aborted before dispatch", "AbortError", "ABORTED_BEFORE_DISPATCH"
    )


def persistence_result(detail: str) -> ToolOutcome:
    """The result of a call that did not run because the ``tool/call`` flush failed."""
    return ToolOutcome.failure(
        f"Error: the session log could not be made durable: {detail}", "PersistenceError", "PERSISTENCE"
    )


def exception_result(name: str, exc: Exception) -> ToolOutcome:
    """Map an exception raised by tool ``name``'s body to its result (host §3.7 steps 4 and 6)."""
    if isinstance(exc, InvalidToolArguments):
        return invalid_arguments_result(name, exc.message)
    if isinstance(exc, ToolArgumentsError):
        return invalid_arguments_result(name, exc.detail)
    if isinstance(exc, ToolError):
        return ToolOutcome.failure(f"Error: {exc.message}", type(exc).__name__, exc.code)
    return ToolOutcome.failure(f"Error: {str(exc) or type(exc).__name__}", type(exc).__name__, "TOOL_FAILED")


async def execute(registry: ToolRegistry, name: str, raw_arguments: str, ctx: ToolContext) -> ToolOutcome:
    """Steps 3–6 of host §3.7 for one call: look the tool up, parse and check its arguments, run it,
    and render the result. Exceptions become error results; ``trio.Cancelled`` (a
    ``BaseException``) propagates, and the agent then records :func:`aborted_result`."""
    tool = registry.get(name)
    if tool is None:
        return unknown_tool_result(name)
    try:
        arguments = checked_arguments(raw_arguments, tool.spec.parameters)
    except ToolArgumentsError as exc:
        return invalid_arguments_result(name, exc.detail)
    try:
        return await _call(tool, arguments, ctx)
    except _ToolRaised as raised:
        return exception_result(name, raised.exc)


class _ToolRaised(Exception):
    """What a tool's own code raised (``exc``): the call's failure, reported as its result."""

    def __init__(self, exc: Exception) -> None:
        super().__init__(str(exc))
        self.exc = exc


async def _call(tool: Tool, arguments: Any, ctx: ToolContext) -> ToolOutcome:
    """The tool's success; anything it raises, or a value that is not JSON (``TypeError``,
    ``ValueError``) or too deep (``RecursionError``), is :class:`_ToolRaised`."""
    try:
        return ToolOutcome.success(await tool.call(arguments, ctx))
    except Exception as exc:
        raise _ToolRaised(exc) from exc
