"""The chunk stream of one model attempt (host §6.1), as a msgspec tagged union.

Each chunk is a frozen Struct tagged on ``type`` whose JSON encoding is exactly the shape of
host §6.1 (camelCase members, in the order shown there). The adapters of this repository yield
these Structs. A third-party adapter may yield the plain dicts of host §6.1 instead;
:func:`as_chunk` converts them, and that conversion is the validation: a missing member or one of
the wrong type is refused, unknown members are dropped.

What decoding cannot see — the order of chunks and the index rules — is the assembler's
(:mod:`host.models._assembly`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from eventlog import vocab

BlockType = Literal["text", "reasoning", "tool-call"]
FinishKind = Literal["stop", "tool-calls", "max-tokens"]

EMPTY_RESPONSE_MESSAGE = "model returned a completed response with no content"


class Failure(vocab.ErrorInfo, forbid_unknown_fields=False, kw_only=True):
    """A model failure, ``{"message","code"[,"status"][,"providerRetryAfterMs"][,"requestId"]}``.

    The log's ``ErrorInfo`` (it is one, and is written as one in ``turn/end`` and ``llm/retry``),
    read leniently from an adapter: unknown members are dropped. ``code`` is never empty.
    """

    code: Annotated[str, msgspec.Meta(min_length=1)]


def make_failure(
    message: str,
    code: str,
    *,
    status: int | None = None,
    provider_retry_after_ms: int | None = None,
    request_id: str | None = None,
) -> Failure:
    """A failure with the optional members that are not ``None``."""
    return Failure(
        message=message,
        code=code,
        status=UNSET if status is None else status,
        provider_retry_after_ms=UNSET if provider_retry_after_ms is None else provider_retry_after_ms,
        request_id=UNSET if request_id is None else request_id,
    )


class ChunkError(Exception):
    """An adapter broke the chunk protocol (host §6.1); the attempt fails as ``ADAPTER_ERROR``."""


class _Chunk(msgspec.Struct, tag_field="type", rename="camel", frozen=True, kw_only=True):
    """What every chunk shares: tagged on ``type``, camelCase members, immutable."""


class BlockStart(_Chunk, tag="block-start", frozen=True, kw_only=True):
    index: int
    block_type: BlockType


class TextDelta(_Chunk, tag="text-delta", frozen=True, kw_only=True):
    index: int
    text: str


class ReasoningDelta(_Chunk, tag="reasoning-delta", frozen=True, kw_only=True):
    index: int
    text: str


class ToolCallDelta(_Chunk, tag="tool-call-delta", frozen=True, kw_only=True):
    """``id`` repeats the call's id once known (``""`` until then); ``name`` is omitted until
    known."""

    index: int
    id: str = ""
    name: str | UnsetType = UNSET
    arguments_delta: str = ""


class BlockEnd(_Chunk, tag="block-end", frozen=True, kw_only=True):
    """``block`` is the assembled block (a ``vocab`` text, reasoning or tool-call block from this
    repository's adapters). Assembly uses the deltas, so a third-party adapter's block is passed
    on to observers unread."""

    index: int
    block: Any


class UsageReport(_Chunk, tag="usage", frozen=True, kw_only=True):
    usage: vocab.Usage


class _Reason(msgspec.Struct, tag_field="kind", frozen=True, kw_only=True):
    """What every finish reason shares: tagged on ``kind``."""


class FinishStop(_Reason, tag="stop", frozen=True, kw_only=True):
    pass


class FinishToolCalls(_Reason, tag="tool-calls", frozen=True, kw_only=True):
    pass


class FinishMaxTokens(_Reason, tag="max-tokens", frozen=True, kw_only=True):
    pass


class FinishError(_Reason, tag="error", frozen=True, kw_only=True):
    failure: Failure


FinishReason = FinishStop | FinishToolCalls | FinishMaxTokens | FinishError


class Finish(_Chunk, tag="finish", frozen=True, kw_only=True):
    reason: FinishReason


Chunk = BlockStart | TextDelta | ReasoningDelta | ToolCallDelta | BlockEnd | UsageReport | Finish

_FINISHES: dict[FinishKind, Finish] = {
    "stop": Finish(reason=FinishStop()),
    "tool-calls": Finish(reason=FinishToolCalls()),
    "max-tokens": Finish(reason=FinishMaxTokens()),
}


def finish(kind: FinishKind) -> Finish:
    """The ``finish`` chunk of a successful attempt."""
    return _FINISHES[kind]


def fail(failure: Failure) -> Finish:
    """The ``finish`` chunk reporting ``failure``: how adapters report expected failures."""
    return Finish(reason=FinishError(failure=failure))


def as_chunk(value: object) -> Chunk:
    """``value`` as a chunk: a chunk Struct as it is, anything else converted from the JSON shape
    of host §6.1. Raises :class:`ChunkError` naming what is wrong."""
    if isinstance(
        value, (BlockStart, TextDelta, ReasoningDelta, ToolCallDelta, BlockEnd, UsageReport, Finish)
    ):
        return value
    try:
        chunk: Chunk = msgspec.convert(value, Chunk)
    except msgspec.ValidationError as exc:
        raise ChunkError(f"invalid chunk: {exc}") from None
    return chunk
