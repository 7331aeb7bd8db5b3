"""One model attempt: its chunks folded into an outcome (host §6.1, host §6.2).

:class:`Assembler` is pure. It checks what decoding a chunk cannot: indexes are never negative, a
block keeps its type, no block starts and no delta arrives after a ``block-end``, and nothing
follows the ``finish``. :func:`run_attempt` drives one adapter stream through it; an adapter that
raises, breaks the protocol or ends without a ``finish`` is the terminal failure
``ADAPTER_ERROR``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from eventlog import vocab

from ._adapter import ModelAdapter, ModelRequest
from ._chunks import (
    EMPTY_RESPONSE_MESSAGE,
    BlockEnd,
    BlockStart,
    BlockType,
    Chunk,
    ChunkError,
    Failure,
    Finish,
    FinishError,
    FinishKind,
    FinishMaxTokens,
    FinishReason,
    FinishToolCalls,
    TextDelta,
    ToolCallDelta,
    UsageReport,
    as_chunk,
    make_failure,
)

AssembledBlock = vocab.TextBlock | vocab.ReasoningBlock | vocab.ToolCallBlock


def adapter_failure(exc: BaseException) -> Failure:
    """The terminal failure for an adapter that raised or broke the stream protocol."""
    return make_failure(f"model adapter failed: {type(exc).__name__}: {exc}", "ADAPTER_ERROR")


@dataclass(frozen=True, slots=True)
class Assembled:
    """A successful attempt: the message content in block order, the usage (if reported) and how
    it ended. On ``max-tokens`` the tool-call blocks are already removed."""

    content: list[AssembledBlock]
    usage: vocab.Usage | None
    finish: FinishKind


@dataclass(frozen=True, slots=True)
class Failed:
    """A failed attempt."""

    failure: Failure


Outcome = Assembled | Failed


class _Block:
    __slots__ = ("call_id", "kind", "name", "text")

    def __init__(self, kind: BlockType) -> None:
        self.kind = kind
        self.text = ""  # text, reasoning, or a tool call's arguments
        self.call_id = ""
        self.name = ""


class Assembler:
    """Folds one attempt's chunks into an :class:`Outcome` (host §6.2).

    Text and reasoning deltas are concatenated per block index; a tool call keeps its first
    non-empty id (else ``call-<turn>-<step>-<index>``) and name, and concatenates its
    ``argumentsDelta``s. :meth:`feed` raises :class:`ChunkError` for a chunk out of order or with
    a bad index; :meth:`outcome` is final once :attr:`finished` is true.
    """

    def __init__(self, *, turn: int, step: int) -> None:
        self._turn = turn
        self._step = step
        self._blocks: dict[int, _Block] = {}
        self._ended = False  # a block-end was seen: the deltas are over
        self._usage: vocab.Usage | None = None
        self._reason: FinishReason | None = None

    @property
    def finished(self) -> bool:
        return self._reason is not None

    def feed(self, chunk: Chunk) -> None:
        if self._reason is not None:
            raise ChunkError("chunk after finish")
        if isinstance(chunk, Finish):
            self._reason = chunk.reason
        elif isinstance(chunk, UsageReport):
            self._usage = chunk.usage
        elif chunk.index < 0:
            raise ChunkError(f"{_tag(chunk)} chunk has an invalid index {chunk.index}")
        elif isinstance(chunk, BlockEnd):
            self._ended = True
        elif self._ended:
            raise ChunkError(f"{_tag(chunk)} chunk after a block-end")
        elif isinstance(chunk, BlockStart):
            self._block(chunk.index, chunk.block_type)
        elif isinstance(chunk, ToolCallDelta):
            block = self._block(chunk.index, "tool-call")
            block.text += chunk.arguments_delta
            if not block.call_id:
                block.call_id = chunk.id
            if not block.name and isinstance(chunk.name, str):
                block.name = chunk.name
        else:
            self._block(
                chunk.index, "text" if isinstance(chunk, TextDelta) else "reasoning"
            ).text += chunk.text

    def outcome(self) -> Outcome:
        """The attempt's result; an unfinished stream is ``ADAPTER_ERROR``."""
        reason = self._reason
        if reason is None:
            return Failed(adapter_failure(ChunkError("stream ended without a finish chunk")))
        if isinstance(reason, FinishError):
            return Failed(reason.failure)
        kind: FinishKind = (
            "tool-calls"
            if isinstance(reason, FinishToolCalls)
            else ("max-tokens" if isinstance(reason, FinishMaxTokens) else "stop")
        )
        content: list[AssembledBlock] = []
        for index in sorted(self._blocks):
            block = self._blocks[index]
            if block.kind == "text":
                content.append(vocab.TextBlock(text=block.text))
            elif block.kind == "reasoning":
                content.append(vocab.ReasoningBlock(text=block.text))
            elif kind != "max-tokens":
                if not block.name:
                    return Failed(
                        make_failure(f"tool call {index} has no function name", "MALFORMED_RESPONSE")
                    )
                call_id = block.call_id or f"call-{self._turn}-{self._step}-{index}"
                content.append(vocab.ToolCallBlock(id=call_id, name=block.name, arguments=block.text))
        if not content and kind != "max-tokens":
            return Failed(make_failure(EMPTY_RESPONSE_MESSAGE, "EMPTY_RESPONSE"))
        return Assembled(content=content, usage=self._usage, finish=kind)

    def _block(self, index: int, block_type: BlockType) -> _Block:
        block = self._blocks.get(index)
        if block is None:
            block = self._blocks[index] = _Block(block_type)
        elif block.kind != block_type:
            raise ChunkError(f"block {index} is a {block.kind} block, not {block_type}")
        return block


def _tag(chunk: Chunk) -> Any:
    """The chunk's ``type``, for messages."""
    return chunk.__struct_config__.tag


async def run_attempt(
    adapter: ModelAdapter,
    request: ModelRequest,
    on_chunk: Callable[[Chunk], None] | None = None,
) -> Outcome:
    """Run one model attempt: iterate the adapter's stream, hand each accepted chunk (as a chunk
    Struct) to ``on_chunk`` (live observers), and assemble them. Adapter exceptions and protocol
    violations become ``ADAPTER_ERROR``; the stream is closed after the ``finish``. Cancellation
    propagates."""
    try:
        return await _attempt(adapter, request, on_chunk)
    except _AdapterRaised as raised:
        return Failed(adapter_failure(raised.exc))


class _AdapterRaised(Exception):
    """What the adapter's own code raised (``exc``): the terminal ``ADAPTER_ERROR``."""

    def __init__(self, exc: Exception) -> None:
        super().__init__(str(exc))
        self.exc = exc


async def _attempt(
    adapter: ModelAdapter, request: ModelRequest, on_chunk: Callable[[Chunk], None] | None
) -> Outcome:
    try:
        iterator = aiter(adapter.stream(request))
    except Exception as exc:
        raise _AdapterRaised(exc) from exc
    try:
        outcome = await _consume(iterator, Assembler(turn=request.turn, step=request.step), on_chunk)
    except BaseException:
        # The adapter raised, an observer has a bug, or the attempt is cancelled: close the
        # stream, but what is propagating is the cause worth reporting, not a second failure of
        # the adapter's cleanup.
        with suppress(Exception):
            await _close(iterator)
        raise
    try:
        await _close(iterator)
    except Exception as exc:
        # Closing is part of the adapter's stream: raising there is an adapter failure too (host
        # host §6.1), unless the attempt had already failed for a reason of its own.
        if isinstance(outcome, Failed):
            return outcome
        raise _AdapterRaised(exc) from exc
    return outcome


async def _consume(
    iterator: AsyncIterator[Any], assembler: Assembler, on_chunk: Callable[[Chunk], None] | None
) -> Outcome:
    """Read chunks up to the ``finish`` (or the end of the stream) and assemble them."""
    while not assembler.finished:
        try:
            item = await anext(iterator)
        except StopAsyncIteration:
            break
        except Exception as exc:
            raise _AdapterRaised(exc) from exc
        try:
            chunk = as_chunk(item)
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
