"""The model-adapter interface, failure classification, retry delays and chunk assembly.

Spec: host.md §3.6 (retries) and §6.1–§6.2 (interface, chunks, assembly). Everything here is pure
except :func:`run_attempt`, which drives one adapter stream.

A stream is a sequence of chunk dicts. Blocks are numbered from 0 in first-seen order; every
``block-end`` follows the last delta, then an optional ``usage``, then exactly one ``finish``.
Expected provider failures arrive as a ``finish`` whose reason kind is ``error``; an adapter that
raises, or ends without a ``finish``, is the terminal failure ``ADAPTER_ERROR``.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, Protocol, TypedDict

from host.tools import ToolSpec

# --- requests -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One model attempt's input (§6.1). ``messages`` is the derived history in log shapes."""

    session_id: str
    turn: int
    step: int
    provider: str
    model: str
    system: str | None
    messages: tuple[Mapping[str, Any], ...]
    tools: tuple[ToolSpec, ...]
    max_tokens: int | None
    reasoning_effort: str | None


# --- chunks ---------------------------------------------------------------------------------

BlockType = Literal["text", "reasoning", "tool-call"]
FinishKind = Literal["stop", "tool-calls", "max-tokens"]


class Failure(TypedDict):
    """A model failure; the optional keys follow in this order when present."""

    message: str
    code: str
    status: NotRequired[int]
    providerRetryAfterMs: NotRequired[int]
    requestId: NotRequired[str]


class Usage(TypedDict):
    inputTokens: int
    outputTokens: int
    cacheReadTokens: NotRequired[int]
    cacheWriteTokens: NotRequired[int]
    reasoningTokens: NotRequired[int]


BlockStartChunk = TypedDict("BlockStartChunk", {"type": Literal["block-start"], "index": int, "blockType": BlockType})
TextDeltaChunk = TypedDict("TextDeltaChunk", {"type": Literal["text-delta"], "index": int, "text": str})
ReasoningDeltaChunk = TypedDict(
    "ReasoningDeltaChunk", {"type": Literal["reasoning-delta"], "index": int, "text": str}
)
ToolCallDeltaChunk = TypedDict(
    "ToolCallDeltaChunk",
    {
        "type": Literal["tool-call-delta"],
        "index": int,
        "id": str,  # the known id, "" while unknown
        "name": NotRequired[str],  # present once known
        "argumentsDelta": str,
    },
)
BlockEndChunk = TypedDict("BlockEndChunk", {"type": Literal["block-end"], "index": int, "block": dict[str, Any]})
UsageChunk = TypedDict("UsageChunk", {"type": Literal["usage"], "usage": Usage})
FinishChunk = TypedDict("FinishChunk", {"type": Literal["finish"], "reason": dict[str, Any]})

Chunk = (
    BlockStartChunk
    | TextDeltaChunk
    | ReasoningDeltaChunk
    | ToolCallDeltaChunk
    | BlockEndChunk
    | UsageChunk
    | FinishChunk
)


class ModelAdapter(Protocol):
    """A model provider. ``stream`` yields chunks and reports expected failures as a ``finish``
    error chunk instead of raising. Callers close the iterator when they stop early."""

    provider: str

    def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]: ...


def make_failure(
    message: str,
    code: str,
    *,
    status: int | None = None,
    provider_retry_after_ms: int | None = None,
    request_id: str | None = None,
) -> Failure:
    """Build a failure with the keys in their written order, absent ones omitted."""
    failure: dict[str, Any] = {"message": message, "code": code}
    if status is not None:
        failure["status"] = status
    if provider_retry_after_ms is not None:
        failure["providerRetryAfterMs"] = provider_retry_after_ms
    if request_id is not None:
        failure["requestId"] = request_id
    return failure  # type: ignore[return-value]


def finish_chunk(kind: FinishKind) -> FinishChunk:
    return {"type": "finish", "reason": {"kind": kind}}


def failure_chunk(failure: Failure) -> FinishChunk:
    return {"type": "finish", "reason": {"kind": "error", "failure": failure}}


# --- failures and retries -------------------------------------------------------------------

RETRYABLE_CODES: frozenset[str] = frozenset({"RATE_LIMIT", "SERVER", "TIMEOUT", "TRANSPORT", "EMPTY_RESPONSE"})
MAX_RETRY_DELAY_MS = 10_000
_FIRST_RETRY_DELAY_MS = 500

EMPTY_RESPONSE_MESSAGE = "model returned a completed response with no content"


def is_retryable(failure: Mapping[str, Any]) -> bool:
    """Retry classification is a pure function of the failure's ``code`` (§3.6)."""
    return failure.get("code") in RETRYABLE_CODES


def retry_delay_ms(
    retry: int,
    failure: Mapping[str, Any] | None = None,
    *,
    uniform: Callable[[float, float], float] = random.uniform,
) -> int:
    """The delay before retry ``retry`` (1-based): ``round(min(10000, 500·2^(retry−1)) × u)`` with
    ``u = uniform(0.9, 1.1)``. A failure's ``providerRetryAfterMs`` of at most 10000 replaces it,
    without jitter."""
    if retry < 1:
        raise ValueError(f"retry numbers start at 1, got {retry}")
    after = failure.get("providerRetryAfterMs") if failure is not None else None
    if isinstance(after, int) and not isinstance(after, bool) and 0 <= after <= MAX_RETRY_DELAY_MS:
        return after
    base = min(MAX_RETRY_DELAY_MS, _FIRST_RETRY_DELAY_MS * 2 ** (retry - 1))
    return round(base * uniform(0.9, 1.1))


# --- assembly -------------------------------------------------------------------------------


class ChunkError(Exception):
    """An adapter broke the chunk protocol (§6.1); reported as ``ADAPTER_ERROR``."""


def adapter_failure(exc: BaseException) -> Failure:
    """The terminal failure for an adapter that raised or broke the stream protocol."""
    return make_failure(f"model adapter failed: {type(exc).__name__}: {exc}", "ADAPTER_ERROR")


@dataclass(frozen=True, slots=True)
class Assembled:
    """A successful attempt: message content in block order, the usage (if reported) and how it ended.
    On ``max-tokens`` the tool-call blocks are already removed."""

    content: list[dict[str, Any]]
    usage: dict[str, Any] | None
    finish: FinishKind


@dataclass(frozen=True, slots=True)
class Failed:
    """A failed attempt; ``failure`` holds only the keys of :class:`Failure`, in order."""

    failure: Failure


Outcome = Assembled | Failed

_DELTA_BLOCK_TYPES: dict[str, BlockType] = {
    "text-delta": "text",
    "reasoning-delta": "reasoning",
    "tool-call-delta": "tool-call",
}
_BLOCK_TYPES = frozenset(_DELTA_BLOCK_TYPES.values())
_FINISH_KINDS = frozenset({"stop", "tool-calls", "max-tokens"})
_FAILURE_OPTIONAL = ("status", "providerRetryAfterMs", "requestId")


class _Block:
    __slots__ = ("kind", "text", "call_id", "name")

    def __init__(self, kind: BlockType) -> None:
        self.kind = kind
        self.text = ""  # text, reasoning, or a tool call's arguments
        self.call_id = ""
        self.name = ""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Assembler:
    """Folds one attempt's chunks into an :class:`Outcome` (§6.2).

    Text and reasoning deltas are concatenated per block index; a tool call keeps its first
    non-empty id (else ``call-<turn>-<step>-<index>``) and name, and concatenates its
    ``argumentsDelta``s. :meth:`feed` raises :class:`ChunkError` on a malformed chunk or one that
    follows the ``finish``; :meth:`outcome` is final once :attr:`finished` is true.
    """

    def __init__(self, *, turn: int, step: int) -> None:
        self._turn = turn
        self._step = step
        self._blocks: dict[int, _Block] = {}
        self._usage: dict[str, Any] | None = None
        self._reason: Mapping[str, Any] | None = None

    @property
    def finished(self) -> bool:
        return self._reason is not None

    def feed(self, chunk: Mapping[str, Any]) -> None:
        if self._reason is not None:
            raise ChunkError("chunk after finish")
        if not isinstance(chunk, Mapping):
            raise ChunkError(f"chunk is not an object: {chunk!r}")
        kind = chunk.get("type")
        if kind == "block-start":
            block_type = chunk.get("blockType")
            if block_type not in _BLOCK_TYPES:
                raise ChunkError(f"block-start has an unknown blockType {block_type!r}")
            self._block(chunk, block_type)
        elif kind in _DELTA_BLOCK_TYPES:
            block = self._block(chunk, _DELTA_BLOCK_TYPES[kind])
            if kind == "tool-call-delta":
                call_id = _str_field(chunk, "id", default="")
                name = _str_field(chunk, "name", default="")
                block.text += _str_field(chunk, "argumentsDelta", default="")
                if not block.call_id:
                    block.call_id = call_id
                if not block.name:
                    block.name = name
            else:
                block.text += _str_field(chunk, "text")
        elif kind == "block-end":
            self._index(chunk)
        elif kind == "usage":
            usage = chunk.get("usage")
            if not isinstance(usage, Mapping):
                raise ChunkError("usage chunk without a usage object")
            self._usage = dict(usage)
        elif kind == "finish":
            self._reason = _checked_reason(chunk.get("reason"))
        else:
            raise ChunkError(f"unknown chunk type {kind!r}")

    def outcome(self) -> Outcome:
        """The attempt's result; an unfinished stream is ``ADAPTER_ERROR``."""
        reason = self._reason
        if reason is None:
            return Failed(adapter_failure(ChunkError("stream ended without a finish chunk")))
        if reason["kind"] == "error":
            return Failed(reason["failure"])
        finish: FinishKind = reason["kind"]
        content: list[dict[str, Any]] = []
        for index in sorted(self._blocks):
            block = self._blocks[index]
            if block.kind != "tool-call":
                content.append({"type": block.kind, "text": block.text})
            elif finish != "max-tokens":
                if not block.name:
                    return Failed(
                        make_failure(f"tool call {index} has no function name", "MALFORMED_RESPONSE")
                    )
                call_id = block.call_id or f"call-{self._turn}-{self._step}-{index}"
                content.append({"type": "tool-call", "id": call_id, "name": block.name, "arguments": block.text})
        if not content and finish != "max-tokens":
            return Failed(make_failure(EMPTY_RESPONSE_MESSAGE, "EMPTY_RESPONSE"))
        return Assembled(content=content, usage=self._usage, finish=finish)

    def _index(self, chunk: Mapping[str, Any]) -> int:
        index = chunk.get("index")
        if not _is_int(index) or index < 0:
            raise ChunkError(f"{chunk.get('type')} chunk has an invalid index {index!r}")
        return index

    def _block(self, chunk: Mapping[str, Any], block_type: BlockType) -> _Block:
        index = self._index(chunk)
        block = self._blocks.get(index)
        if block is None:
            block = self._blocks[index] = _Block(block_type)
        elif block.kind != block_type:
            raise ChunkError(f"block {index} is a {block.kind} block, not {block_type}")
        return block


def _str_field(chunk: Mapping[str, Any], key: str, *, default: str | None = None) -> str:
    value = chunk.get(key, default)
    if not isinstance(value, str):
        raise ChunkError(f"{chunk.get('type')} chunk has a non-string {key!r}")
    return value


def _checked_reason(reason: object) -> Mapping[str, Any]:
    if not isinstance(reason, Mapping):
        raise ChunkError("finish chunk without a reason object")
    kind = reason.get("kind")
    if kind in _FINISH_KINDS:
        return {"kind": kind}
    if kind != "error":
        raise ChunkError(f"finish chunk has an unknown reason kind {kind!r}")
    failure = reason.get("failure")
    if not isinstance(failure, Mapping):
        raise ChunkError("error finish without a failure object")
    message, code = failure.get("message"), failure.get("code")
    if not isinstance(message, str) or not isinstance(code, str) or not code:
        raise ChunkError("error finish needs a string message and a non-empty string code")
    normalised: dict[str, Any] = {"message": message, "code": code}
    for key in _FAILURE_OPTIONAL:
        if key in failure and failure[key] is not None:
            normalised[key] = failure[key]
    return {"kind": "error", "failure": normalised}


async def run_attempt(
    adapter: ModelAdapter,
    request: ModelRequest,
    on_chunk: Callable[[Chunk], None] | None = None,
) -> Outcome:
    """Run one model attempt: iterate the adapter's stream, hand each accepted chunk to
    ``on_chunk`` (live observers), and assemble it. Adapter exceptions and protocol violations
    become ``ADAPTER_ERROR``; the stream is closed after the ``finish``. Cancellation propagates."""
    try:
        iterator = aiter(adapter.stream(request))
    except Exception as exc:
        return Failed(adapter_failure(exc))
    try:
        outcome = await _consume(iterator, Assembler(turn=request.turn, step=request.step), on_chunk)
    except BaseException:
        # Cancellation or an observer's bug: close the stream, but what is propagating is the
        # cause worth reporting, not a second failure of the adapter's cleanup.
        with suppress(Exception):
            await _close(iterator)
        raise
    try:
        await _close(iterator)
    except Exception as exc:
        # Closing is part of the adapter's stream: raising there is an adapter failure too (§6.1),
        # unless the attempt had already failed for a reason of its own.
        return outcome if isinstance(outcome, Failed) else Failed(adapter_failure(exc))
    return outcome


async def _consume(
    iterator: AsyncIterator[Any], assembler: Assembler, on_chunk: Callable[[Chunk], None] | None
) -> Outcome:
    """Read chunks up to the ``finish`` (or the end of the stream) and assemble them."""
    while not assembler.finished:
        try:
            chunk = await anext(iterator)
        except StopAsyncIteration:
            break
        except Exception as exc:
            return Failed(adapter_failure(exc))
        try:
            assembler.feed(chunk)
        except ChunkError as exc:
            return Failed(adapter_failure(exc))
        if on_chunk is not None:
            on_chunk(chunk)
    return assembler.outcome()


async def _close(iterator: AsyncIterator[Any]) -> None:
    """Close an adapter's stream that supports it (async generators do)."""
    close = getattr(iterator, "aclose", None)
    if close is not None:
        await close()

