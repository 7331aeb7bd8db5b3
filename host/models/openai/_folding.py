"""Folding the stream's payloads into chunks (host §6.4 Streaming and Finish). Pure."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from msgspec import UNSET

from eventlog import vocab

from .._chunks import (
    EMPTY_RESPONSE_MESSAGE,
    BlockEnd,
    BlockStart,
    BlockType,
    Chunk,
    Failure,
    Finish,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    UsageReport,
    fail,
    finish,
    make_failure,
)
from ._failures import error_message


class StreamFailure(Exception):
    """A payload that ends the stream with a failure (malformed or error payload)."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


def map_usage(usage: Mapping[str, Any]) -> vocab.Usage:
    """OpenAI usage as the log's: cached prompt tokens are not counted as input; cache reads and
    reasoning tokens only when reported."""

    def count(value: object) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    details = usage.get("prompt_tokens_details")
    cached = count(details.get("cached_tokens")) if isinstance(details, Mapping) else None
    if cached is None:
        cached = count(usage.get("prompt_cache_hit_tokens"))
    completion_details = usage.get("completion_tokens_details")
    reasoning = (
        count(completion_details.get("reasoning_tokens")) if isinstance(completion_details, Mapping) else None
    )
    return vocab.Usage(
        input_tokens=(count(usage.get("prompt_tokens")) or 0) - (cached or 0),
        output_tokens=count(usage.get("completion_tokens")) or 0,
        cache_read_tokens=UNSET if cached is None else cached,
        reasoning_tokens=UNSET if reasoning is None else reasoning,
    )


class _ToolCall:
    __slots__ = ("arguments", "id", "index", "name")

    def __init__(self, index: int) -> None:
        self.index = index
        self.id = ""
        self.name = ""
        self.arguments = ""


_SURROGATE = re.compile("[\ud800-\udfff]")


def whole_text(text: str) -> str:
    """``text`` with each surrogate pair joined into its character and any lone surrogate
    replaced by U+FFFD. JSON carries lone halves as escapes, but a log cannot store them
    (log-format §3.5), and servers split an emoji's pair across two payloads."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class StreamFolder:
    """Folds SSE payloads into chunks: ``choices[0]`` deltas open and extend one reasoning block,
    one text block and one block per tool-call ``index``; the last ``finish_reason`` and the latest
    ``usage`` are remembered for :meth:`end`."""

    def __init__(self, *, turn: int, step: int) -> None:
        self._turn = turn
        self._step = step
        self._kinds: list[BlockType] = []  # block kinds by index
        self._text: dict[int, str] = {}
        self._held: dict[int, str] = {}  # a high surrogate per block, awaiting its low half
        self._reasoning_index: int | None = None
        self._text_index: int | None = None
        self._calls: dict[object, _ToolCall] = {}
        self._unindexed = 0
        self.finish_reason: str | None = None
        self.usage: vocab.Usage | None = None
        self.done = False

    def payload(self, data: str) -> list[Chunk]:
        """The chunks of one SSE event; raises :class:`StreamFailure` for a malformed or error payload."""
        if data == "[DONE]":
            self.done = True
            return []
        try:
            obj = json.loads(data)
        except ValueError:
            obj = None
        if not isinstance(obj, dict):
            raise StreamFailure(make_failure(f"malformed SSE payload: {data[:120]}", "MALFORMED_RESPONSE"))
        if obj.get("error") is not None:
            raise StreamFailure(make_failure(error_message(obj) or "model API stream error", "STREAM_ERROR"))
        if isinstance(obj.get("usage"), Mapping):
            self.usage = map_usage(obj["usage"])
        choices = obj.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            return []
        choice = choices[0]
        if choice.get("finish_reason") is not None:
            self.finish_reason = str(choice["finish_reason"])
        delta = choice.get("delta")
        if not isinstance(delta, Mapping):
            return []
        chunks: list[Chunk] = []
        reasoning = delta.get("reasoning_content")
        if not (isinstance(reasoning, str) and reasoning):
            reasoning = delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            if self._reasoning_index is None:
                self._reasoning_index = self._open("reasoning", chunks)
            self._extend(self._reasoning_index, reasoning, chunks)
        content = delta.get("content")
        if isinstance(content, str) and content:
            if self._text_index is None:
                self._text_index = self._open("text", chunks)
            self._extend(self._text_index, content, chunks)
        tool_calls = delta.get("tool_calls")
        if isinstance(tool_calls, list):
            for position, entry in enumerate(tool_calls):
                if isinstance(entry, Mapping):
                    chunks.append(self._tool_call_delta(position, entry, chunks))
        return chunks

    def end(self) -> list[Chunk]:
        """Block ends, usage and the finish once the stream is over (host §6.4 Finish)."""
        if not self.done and self.finish_reason is None:
            return [fail(make_failure("model stream ended without [DONE]", "STREAM_CLOSED"))]
        last = self._finish()
        held: list[Chunk] = []
        for index in sorted(self._held):  # a high half whose low half never came
            if self._kinds[index] == "tool-call":
                call = next(c for c in self._calls.values() if c.index == index)
                held.append(self._call_delta(call, self._piece(index, "", last=True)))
            else:
                self._extend(index, "", held, last=True)
        ends: list[Chunk] = [BlockEnd(index=i, block=self._block(i)) for i in range(len(self._kinds))]
        usage: list[Chunk] = [] if self.usage is None else [UsageReport(usage=self.usage)]
        return [*held, *ends, *usage, last]

    def _finish(self) -> Finish:
        reason = self.finish_reason
        if reason == "length":
            return finish("max-tokens")
        if reason in (None, "stop", "tool_calls", "function_call"):
            calls = sorted(self._calls.values(), key=lambda c: c.index)
            nameless = next((c for c in calls if not c.name), None)
            if nameless is not None:
                return fail(
                    make_failure(f"tool call {nameless.index} has no function name", "MALFORMED_RESPONSE")
                )
            if calls:
                return finish("tool-calls")
            if self._kinds:
                return finish("stop")
            return fail(make_failure(EMPTY_RESPONSE_MESSAGE, "EMPTY_RESPONSE"))
        code = re.sub(r"[^A-Za-z0-9]", "_", reason.upper())
        return fail(make_failure(f"model stopped: {reason}", code))

    def _open(self, kind: BlockType, chunks: list[Chunk]) -> int:
        index = len(self._kinds)
        self._kinds.append(kind)
        chunks.append(BlockStart(index=index, block_type=kind))
        return index

    def _piece(self, index: int, text: str, *, last: bool = False) -> str:
        # What of ``text`` can be passed on now: a high surrogate at its end waits for the low
        # half the next payload may start with, unless ``last``.
        text = self._held.pop(index, "") + text
        if not last and text and "\ud800" <= text[-1] <= "\udbff":
            self._held[index] = text[-1]
            text = text[:-1]
        return whole_text(text)

    def _extend(self, index: int, text: str, chunks: list[Chunk], *, last: bool = False) -> None:
        piece = self._piece(index, text, last=last)
        if piece:
            self._text[index] = self._text.get(index, "") + piece
            delta = ReasoningDelta if self._kinds[index] == "reasoning" else TextDelta
            chunks.append(delta(index=index, text=piece))

    def _tool_call_delta(self, position: int, entry: Mapping[str, Any], chunks: list[Chunk]) -> Chunk:
        function = entry.get("function")
        function = function if isinstance(function, Mapping) else {}
        call_id = value if isinstance(value := entry.get("id"), str) else ""
        name = value if isinstance(value := function.get("name"), str) else ""
        arguments = value if isinstance(value := function.get("arguments"), str) else ""
        key: object = entry.get("index")
        if not isinstance(key, int) or isinstance(key, bool):
            # Servers that omit `index` send each call whole; a new id means a new call.
            key = ("unindexed", self._unindexed)
            known = self._calls.get(key)
            if known is not None and call_id and known.id and call_id != known.id:
                self._unindexed += 1
                key = ("unindexed", self._unindexed)
        call = self._calls.get(key)
        if call is None:
            call = self._calls[key] = _ToolCall(self._open("tool-call", chunks))
        if not call.id:
            call.id = call_id
        if not call.name:
            call.name = name
        return self._call_delta(call, self._piece(call.index, arguments))

    def _call_delta(self, call: _ToolCall, arguments: str) -> ToolCallDelta:
        call.arguments += arguments
        return ToolCallDelta(index=call.index, id=call.id, name=call.name or UNSET, arguments_delta=arguments)

    def _block(self, index: int) -> vocab.TextBlock | vocab.ReasoningBlock | vocab.ToolCallBlock:
        kind = self._kinds[index]
        if kind == "text":
            return vocab.TextBlock(text=self._text.get(index, ""))
        if kind == "reasoning":
            return vocab.ReasoningBlock(text=self._text.get(index, ""))
        call = next(c for c in self._calls.values() if c.index == index)
        return vocab.ToolCallBlock(
            id=call.id or f"call-{self._turn}-{self._step}-{index}", name=call.name, arguments=call.arguments
        )
