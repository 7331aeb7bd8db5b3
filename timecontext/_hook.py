"""The pre-step hook contract (time-context §3.1).

These are the only shapes timecontext shares with its host: the decision a pre-step hook
receives and returns, the view of the session it is given, and the two things it needs from
outside (a wall clock and the shared zone canonicaliser). ``host`` implements or supplies them.
The wall clock is ``eventlog.values.Clock`` itself (the package re-exports it as ``Clock``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

Message = Mapping[str, Any]
"""The ``data`` of a ``user/message`` event: ``id``, ``role``, ``source``, ``content``."""


@dataclass(frozen=True, slots=True)
class Enter:
    """Enter the step with this batch, appended in this order after ``step/start``."""

    messages: tuple[Message, ...]


@dataclass(frozen=True, slots=True)
class Reject:
    """Do not enter the step: the turn ends as blocked, with no ``step/start``."""


Decision = Enter | Reject


class EventLike(Protocol):
    """One logged event; ``eventlog.Event`` satisfies it."""

    @property
    def seq(self) -> int: ...

    @property
    def type(self) -> str: ...

    @property
    def time(self) -> int:
        """Epoch milliseconds at append."""
        ...

    def value(self) -> Any:
        """Untyped decode of ``data`` (dict, list, str, int, float, bool or None)."""
        ...


class ZoneCanonicalizer(Protocol):
    """The shared canonicaliser (time-context §12): the canonical name, or an exception for an
    invalid one."""

    def __call__(self, name: str, /) -> str: ...


@dataclass(frozen=True, slots=True)
class PreStep:
    """What the host knows when it is about to enter a step (time-context §3.2 item 3)."""

    turn: int
    """Number of the open turn, as in its ``turn/start``; >= 1."""
    step: int
    """1-based step within the turn."""
    events: Sequence[EventLike]
    """Every event of the session so far, in seq order; the proposed batch is not in it."""
    continuation: bool
    """The host enters this step even if the batch is empty (it follows a tool request)."""
    cancelled: bool
    """The turn was cancelled before this call."""


class PreStepHook(Protocol):
    """A synchronous hook run just before a step is entered."""

    def pre_step(self, pre: PreStep, decision: Decision) -> Decision: ...
