"""What a model adapter is given and what it must be (host §6.1)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from eventlog.vocab import ToolSpec

from ._chunks import Chunk


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One model attempt's input. ``messages`` is the derived history in its log shapes
    (sources included); ``tools`` are the session's tools in registration order."""

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


class ModelAdapter(Protocol):
    """A model provider. ``stream`` yields the attempt's chunks — the chunk Structs, or the
    plain dicts of host §6.1 — and reports an expected failure as a ``finish`` error chunk
    instead of raising. Callers close the iterator when they stop early."""

    provider: str

    def stream(self, request: ModelRequest) -> AsyncIterator[Chunk | Mapping[str, Any]]: ...
