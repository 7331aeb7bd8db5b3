"""The offline, deterministic ``scripted`` model adapter (host §6.3).

Rules mode answers from the trigger message (the last one that is not a time reading): tool
results are summarised, reminder framings are echoed, and a few reminder phrases become schedule
tool calls; after those exact patterns, the everyday phrases of :mod:`._phrases` are tried, so a
request about reminders gets a tool call or help, never an echo. Script mode replays a validated
JSONL file, one line per model attempt, through one cursor per adapter instance (the CLI builds
one instance per process).

Chunk building is pure (:func:`rules_chunks`, :func:`line_chunks`); :class:`ScriptedAdapter`
only adds the cursor and the trio sleeps.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from typing import Any

import msgspec
import trio

from eventlog.values import compact_json
from eventlog.vocab import ReasoningBlock, TextBlock, ToolCallBlock, Usage

from ._adapter import ModelRequest
from ._chunks import (
    BlockEnd,
    BlockStart,
    Chunk,
    Failure,
    Finish,
    FinishKind,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    UsageReport,
    fail,
    finish,
    make_failure,
)
from ._phrases import understand

SCRIPT_ENV = "TURNLOG_SCRIPT"
TEXT_PIECE_CHARS = 16
SCRIPT_EXHAUSTED = make_failure("scripted model: script exhausted", "SCRIPT_EXHAUSTED")


# --- chunk building -------------------------------------------------------------------------


class _Chunks:
    """Collects one response's chunks in the stream order of host §6.1: starts and deltas, then
    every ``block-end``, then usage and the finish."""

    def __init__(self) -> None:
        self._body: list[Chunk] = []
        self._ends: list[Chunk] = []

    def text(self, block: TextBlock | ReasoningBlock) -> None:
        """A text or reasoning block in pieces of at most 16 characters; an empty text makes none."""
        text = block.text
        if not text:
            return
        index = len(self._ends)
        reasoning = isinstance(block, ReasoningBlock)
        self._body.append(BlockStart(index=index, block_type="reasoning" if reasoning else "text"))
        delta = ReasoningDelta if reasoning else TextDelta
        for start in range(0, len(text), TEXT_PIECE_CHARS):
            self._body.append(delta(index=index, text=text[start : start + TEXT_PIECE_CHARS]))
        self._ends.append(BlockEnd(index=index, block=block))

    def tool_call(self, call: ToolCallBlock) -> None:
        index = len(self._ends)
        self._body.append(BlockStart(index=index, block_type="tool-call"))
        self._body.append(
            ToolCallDelta(index=index, id=call.id, name=call.name, arguments_delta=call.arguments)
        )
        self._ends.append(BlockEnd(index=index, block=call))

    def finish(self, last: Finish, usage: Usage | None = None) -> list[Chunk]:
        tail: list[Chunk] = [] if usage is None else [UsageReport(usage=usage)]
        return [*self._body, *self._ends, *tail, last]


# --- rules mode -----------------------------------------------------------------------------

_UNIT = r"(second|seconds|minute|minutes|hour|hours)"
_UNIT_SECONDS = {"second": 1, "seconds": 1, "minute": 60, "minutes": 60, "hour": 3600, "hours": 3600}
_FLAGS = re.IGNORECASE | re.ASCII
_REMIND_IN = re.compile(rf"remind me in ([0-9]+) {_UNIT} to (.+)", _FLAGS)
_REMIND_EVERY = re.compile(rf"remind me every ([0-9]+) {_UNIT} to (.+)", _FLAGS)
_REMIND_AT = re.compile(r"remind me at (\S+) to (.+)", _FLAGS)
_LIST = re.compile(r"(list|show)( my)? reminders", _FLAGS)
_DELETE = re.compile(r"(delete|cancel) reminder (\S+)", _FLAGS)

_ONE_SHOT_PREFIX = "reminder_prompt_json: "
_BATCH_PREFIX = "reminders_json: "


def _text_of(blocks: object) -> str:
    if not isinstance(blocks, list):
        return ""
    return "".join(
        b["text"]
        for b in blocks
        if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )


def _source(message: Mapping[str, Any]) -> Mapping[str, Any]:
    source = message.get("source")
    return source if isinstance(source, Mapping) else {}


def _is_time_reading(message: Mapping[str, Any]) -> bool:
    source = _source(message)
    return source.get("kind") == "plugin" and source.get("plugin") == "time-context"


def _tool_result_block(message: Mapping[str, Any]) -> Mapping[str, Any] | None:
    content = message.get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "tool-result":
                return block
    return None


def _plain(value: object) -> str:
    return value if isinstance(value, str) else compact_json(value)


def _tool_result_reply(block: Mapping[str, Any]) -> str:
    text = _text_of(block.get("content"))
    if block.get("isError") is True:
        return f"The tool failed: {text}"
    try:
        x = json.loads(text)
    except ValueError:
        return f"Done: {text}"
    if isinstance(x, dict):
        if "code" in x and "message" in x:
            return f"The tool reported {_plain(x['code'])}: {_plain(x['message'])}"
        if "id" in x and "scheduledAt" in x:
            return f"Reminder {_plain(x['id'])} is set for {_plain(x['scheduledAt'])}."
        if x.get("deleted") is True:
            return f"Deleted reminder {_plain(x.get('id'))}."
        if x.get("deleted") is False:
            return f"No active reminder {_plain(x.get('id'))}."
    if x == []:
        return "You have no active reminders."
    if isinstance(x, list) and all(isinstance(item, dict) for item in x):
        listed = "; ".join(f"{_plain(item.get('id'))} at {_plain(item.get('scheduledAt'))}" for item in x)
        return f"Active reminders: {listed}"
    return f"Done: {text}"


def _step_results_reply(messages: Sequence[Mapping[str, Any]]) -> str:
    """Rule 1's reply to the trigger, a tool result; when the step ran several calls (everyday
    phrases: cancel all), to each of the results since the assistant's message, in order."""
    replies: list[str] = []
    deleted: list[str] = []
    for message in reversed(messages):
        if _is_time_reading(message):
            continue
        block = _tool_result_block(message)
        if block is None and _source(message).get("kind") != "tool":
            break
        replies.insert(0, _tool_result_reply(block or {}))
        if (view := _deleted_view(block)) is not None:
            deleted.insert(0, view)
    if len(replies) > 1 and len(deleted) == len(replies):
        return f"Deleted {len(deleted)} reminders: {', '.join(deleted)}."
    return " ".join(replies)


def _deleted_view(block: Mapping[str, Any] | None) -> str | None:
    """The id of a successful ``schedule_delete`` result, else ``None``."""
    if block is None or block.get("isError") is True:
        return None
    try:
        x = json.loads(_text_of(block.get("content")))
    except ValueError:
        return None
    return _plain(x.get("id")) if isinstance(x, dict) and x.get("deleted") is True else None


def _reminder_reply(text: str) -> str | None:
    lines = text.split("\n")
    for line in lines:
        if line.startswith(_BATCH_PREFIX):
            try:
                items = json.loads(line[len(_BATCH_PREFIX) :])
            except ValueError:
                return None
            if not isinstance(items, list):
                return None
            prompts = [
                _plain(item.get("reminder_prompt")) if isinstance(item, dict) else _plain(item)
                for item in items
            ]
            return f"Reminders: {'; '.join(prompts)}"
    for line in lines:
        if line.startswith(_ONE_SHOT_PREFIX):
            try:
                return f"Reminder: {_plain(json.loads(line[len(_ONE_SHOT_PREFIX) :]))}"
            except ValueError:
                return None
    return None


def _captured(text: str) -> str:
    """``<X>``: surrounding whitespace and one trailing ``.`` or ``!`` removed."""
    text = text.strip()
    if text.endswith((".", "!")):
        text = text[:-1].rstrip()
    return text


def _user_reply(
    s: str, messages: Sequence[Mapping[str, Any]], client_zone: str | None
) -> list[tuple[str, dict[str, Any]]] | str:
    """Schedule tool calls ``[(name, arguments), …]`` or a text reply for a user's text ``s``:
    the patterns of host §6.3 rule 3 first, exactly, then the everyday phrases, then the echo."""
    exact = _exact_reply(s)
    if exact is not None:
        return [exact]
    understood = understand(s, messages, client_zone)
    return f"You said: {s}" if understood is None else understood


def _exact_reply(s: str) -> tuple[str, dict[str, Any]] | None:
    """The tool call of the first host §6.3 rule 3 pattern that matches ``s``, if any."""
    if m := _REMIND_IN.fullmatch(s):
        return "schedule_create", {
            "prompt": _captured(m[3]),
            "after_seconds": int(m[1]) * _UNIT_SECONDS[m[2].lower()],
        }
    if m := _REMIND_EVERY.fullmatch(s):
        return "schedule_create", {
            "prompt": _captured(m[3]),
            "every_seconds": int(m[1]) * _UNIT_SECONDS[m[2].lower()],
        }
    if m := _REMIND_AT.fullmatch(s):
        return "schedule_create", {"prompt": _captured(m[2]), "at": m[1]}
    if _LIST.fullmatch(s):
        return "schedule_list", {}
    if m := _DELETE.fullmatch(s):
        return "schedule_delete", {"id": m[2]}
    return None


def _client_zone(source: Mapping[str, Any]) -> str | None:
    zone = source.get("clientTimeZone")
    return zone if isinstance(zone, str) else None


def rules_reply(request: ModelRequest) -> list[ToolCallBlock] | str:
    """Rules mode's answer to ``request``: tool calls (one, except for "cancel all reminders")
    or a text (host §6.3). The calls' ids are ``call-<turn>-<step>-<i>``."""
    trigger = next((m for m in reversed(request.messages) if not _is_time_reading(m)), None)
    if trigger is None:
        return "OK."
    source = _source(trigger)
    result = _tool_result_block(trigger)
    if source.get("kind") == "tool" or result is not None:
        return _step_results_reply(request.messages)
    if source.get("kind") == "plugin" and source.get("plugin") == "schedule":
        return _reminder_reply(_text_of(trigger.get("content"))) or "OK."
    if source.get("kind") == "user":
        reply = _user_reply(_text_of(trigger.get("content")).strip(), request.messages, _client_zone(source))
        if isinstance(reply, str):
            return reply
        return [
            ToolCallBlock(
                id=f"call-{request.turn}-{request.step}-{i}", name=name, arguments=compact_json(arguments)
            )
            for i, (name, arguments) in enumerate(reply)
        ]
    return "OK."


def rules_chunks(request: ModelRequest) -> list[Chunk]:
    reply = rules_reply(request)
    chunks = _Chunks()
    if isinstance(reply, str):
        chunks.text(TextBlock(text=reply))
        return chunks.finish(finish("stop"))
    for call in reply:
        chunks.tool_call(call)
    return chunks.finish(finish("tool-calls"))


# --- script mode ----------------------------------------------------------------------------


class ScriptError(ValueError):
    """An unreadable or invalid script: a usage error, ``script line <n>: <problem>``."""


@dataclass(frozen=True, slots=True)
class ScriptToolCall:
    name: str
    arguments: str
    id: str | None


@dataclass(frozen=True, slots=True)
class ScriptLine:
    """One validated response of a script; ``line`` is its 1-based line number in the file."""

    line: int
    reasoning: str | None = None
    text: str | None = None
    tool_calls: tuple[ScriptToolCall, ...] = ()
    finish: FinishKind | None = None
    usage: Usage | None = None
    error: Failure | None = None
    delay_ms: float = 0
    hang: bool = False
    chunks: tuple[Mapping[str, Any], ...] | None = None


_LINE_KEYS = ("reasoning", "text", "toolCalls", "finish", "usage", "error", "delayMs", "hang", "chunks")
_USAGE_KEYS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens")
_FINISHES = ("stop", "tool-calls", "max-tokens")


class _Invalid(Exception):
    pass


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _string(obj: Mapping[str, Any], key: str) -> str | None:
    if key not in obj:
        return None
    value = obj[key]
    if not isinstance(value, str):
        raise _Invalid(f'"{key}" must be a string')
    return value


def _tool_calls(value: object) -> tuple[ScriptToolCall, ...]:
    if not isinstance(value, list) or not all(isinstance(call, dict) for call in value):
        raise _Invalid('"toolCalls" must be a list of objects')
    calls = []
    for i, call in enumerate(value):
        for key in call:
            if key not in ("name", "arguments", "id"):
                raise _Invalid(f'toolCalls[{i}] has an unknown key "{key}"')
        name = call.get("name")
        if not isinstance(name, str) or not name:
            raise _Invalid(f"toolCalls[{i}].name must be a non-empty string")
        arguments = call.get("arguments", {})
        if isinstance(arguments, dict):
            arguments = compact_json(arguments)
        elif not isinstance(arguments, str):
            raise _Invalid(f"toolCalls[{i}].arguments must be an object or a string")
        call_id = call.get("id")
        if call_id is not None and (not isinstance(call_id, str) or not call_id):
            raise _Invalid(f"toolCalls[{i}].id must be a non-empty string")
        calls.append(ScriptToolCall(name, arguments, call_id))
    return tuple(calls)


def _usage(value: object) -> Usage:
    problem = '"usage" must be an object with non-negative integer inputTokens and outputTokens'
    if not isinstance(value, dict) or "inputTokens" not in value or "outputTokens" not in value:
        raise _Invalid(problem)
    for key, count in value.items():
        if key not in _USAGE_KEYS:
            raise _Invalid(f'"usage" has an unknown key "{key}"')
        if not _count(count):
            raise _Invalid(f"usage.{key} must be a non-negative integer")
    return msgspec.convert(value, Usage)


def _error(value: object) -> Failure:
    if not isinstance(value, dict):
        raise _Invalid('"error" must be an object with a string message and code')
    for key in value:
        if key not in ("message", "code", "status", "retryAfterMs"):
            raise _Invalid(f'"error" has an unknown key "{key}"')
    message, code = value.get("message"), value.get("code")
    if not isinstance(message, str) or not isinstance(code, str) or not code:
        raise _Invalid('"error" must have a string message and a non-empty string code')
    status, retry_after = value.get("status"), value.get("retryAfterMs")
    if status is not None and not _count(status):
        raise _Invalid("error.status must be a non-negative integer")
    if retry_after is not None and not _count(retry_after):
        raise _Invalid("error.retryAfterMs must be a non-negative integer")
    return make_failure(message, code, status=status, provider_retry_after_ms=retry_after)


def _chunks(value: object) -> tuple[Mapping[str, Any], ...]:
    if not isinstance(value, list) or not all(
        isinstance(c, dict) and isinstance(c.get("type"), str) for c in value
    ):
        raise _Invalid('"chunks" must be a list of objects with a string "type"')
    return tuple(value)


def _script_line(number: int, obj: object) -> ScriptLine:
    if not isinstance(obj, dict):
        raise _Invalid("expected a JSON object")
    for key in obj:
        if key not in _LINE_KEYS:
            raise _Invalid(f'unknown key "{key}"')
    delay = obj.get("delayMs", 0)
    if (
        isinstance(delay, bool)
        or not isinstance(delay, (int, float))
        or not math.isfinite(delay)
        or delay < 0
    ):
        raise _Invalid('"delayMs" must be a non-negative number')
    hang = obj.get("hang", False)
    if not isinstance(hang, bool):
        raise _Invalid('"hang" must be a boolean')
    if "chunks" in obj:
        for key in obj:
            if key not in ("chunks", "delayMs"):
                raise _Invalid(f'"chunks" cannot be combined with "{key}"')
        return ScriptLine(number, delay_ms=delay, chunks=_chunks(obj["chunks"]))
    finish = obj.get("finish")
    if "finish" in obj and finish not in _FINISHES:
        raise _Invalid('"finish" must be "stop", "tool-calls" or "max-tokens"')
    return ScriptLine(
        number,
        reasoning=_string(obj, "reasoning"),
        text=_string(obj, "text"),
        tool_calls=_tool_calls(obj["toolCalls"]) if "toolCalls" in obj else (),
        finish=finish,
        usage=_usage(obj["usage"]) if "usage" in obj else None,
        error=_error(obj["error"]) if "error" in obj else None,
        delay_ms=delay,
        hang=hang,
    )


def _reject_constant(token: str) -> Any:
    raise ValueError(token)


def parse_script(data: bytes | str) -> tuple[ScriptLine, ...]:
    """Validate a whole JSONL script; blank lines are skipped. Raises :class:`ScriptError`
    ``script line <n>: <problem>`` for the first invalid line."""
    pieces: Sequence[bytes | str] = data.split(b"\n") if isinstance(data, bytes) else data.split("\n")
    lines = []
    for number, piece in enumerate(pieces, start=1):
        try:
            try:
                raw = piece.decode("utf-8") if isinstance(piece, bytes) else piece
            except UnicodeDecodeError:
                raise _Invalid("not valid UTF-8") from None
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw, parse_constant=_reject_constant)
            except (ValueError, RecursionError):
                raise _Invalid("not valid JSON") from None
            lines.append(_script_line(number, obj))
        except _Invalid as exc:
            raise ScriptError(f"script line {number}: {exc}") from None
    return tuple(lines)


def load_script(path: str | PathLike[str]) -> tuple[ScriptLine, ...]:
    """Read and validate a script file; an unreadable file is a :class:`ScriptError` too."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ScriptError(f"cannot read script {path}: {exc.strerror or exc}") from None
    return parse_script(data)


def line_chunks(line: ScriptLine, request: ModelRequest) -> list[Chunk | Mapping[str, Any]]:
    """The chunks of one script line: its raw ``chunks`` (copies of the dicts, verbatim), or
    reasoning, text, tool calls, then usage and the finish (or the line's error). A tool call's
    default id is ``call-<turn>-<step>-<i>``."""
    if line.chunks is not None:
        return [dict(chunk) for chunk in line.chunks]
    chunks = _Chunks()
    chunks.text(ReasoningBlock(text=line.reasoning or ""))
    chunks.text(TextBlock(text=line.text or ""))
    for i, call in enumerate(line.tool_calls):
        call_id = call.id or f"call-{request.turn}-{request.step}-{i}"
        chunks.tool_call(ToolCallBlock(id=call_id, name=call.name, arguments=call.arguments))
    if line.error is not None:
        last = fail(line.error)
    else:
        last = finish(line.finish or ("tool-calls" if line.tool_calls else "stop"))
    return list(chunks.finish(last, line.usage))


class ScriptedAdapter:
    """The ``scripted`` provider. Without a script it runs rules mode; with one, each attempt
    consumes the next line (one cursor per instance, shared by every session using it) and,
    once the script is exhausted, fails with ``SCRIPT_EXHAUSTED``."""

    provider = "scripted"

    def __init__(self, script: Sequence[ScriptLine] | None = None) -> None:
        self._script = script
        self._cursor = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[Chunk | Mapping[str, Any]]:
        if self._script is None:
            for rule_chunk in rules_chunks(request):
                yield rule_chunk
            return
        if self._cursor >= len(self._script):
            yield fail(SCRIPT_EXHAUSTED)
            return
        line = self._script[self._cursor]
        self._cursor += 1
        if line.hang:
            await trio.sleep_forever()
        for chunk in line_chunks(line, request):
            if line.delay_ms:
                await trio.sleep(line.delay_ms / 1000)
            yield chunk
