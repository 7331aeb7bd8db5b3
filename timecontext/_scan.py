"""Backward scans over a session's events (time-context §7.1, time-context §9, time-context §10,
time-context §13 check 4).

Every scan walks from the end of ``events[:end]`` towards the start and stops at the first
event that settles its answer, so a step costs about a scan back to the open turn's
``turn/start``, not a scan of the whole log. Event data is decoded (``value()``) only for the
types that are inspected.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._hook import EventLike
from ._render import PLUGIN

USER_MESSAGE = "user/message"
TURN_START = "turn/start"
# The events whose append time is a step-1 baseline (time-context §9).
_MESSAGE_TYPES = frozenset({USER_MESSAGE, "assistant/message", "tool/result"})


def is_reading(data: Any) -> bool:
    """True for the data of a time reading: a source ``{"kind":"plugin","plugin":"time-context"}``.

    Only the source decides, so readings written by other implementations count too.
    """
    if not isinstance(data, (dict, Mapping)):  # dict first: see message_zone
        return False
    source = data.get("source")
    return (
        isinstance(source, (dict, Mapping))
        and source.get("kind") == "plugin"
        and source.get("plugin") == PLUGIN
    )


def _field(data: Any, key: str) -> Any:
    return data.get(key) if isinstance(data, Mapping) else None


def starts_turn(event: EventLike, turn: int) -> bool:
    """True for a ``turn/start`` whose ``data["turn"]`` is an ``int`` (not a bool) equal to ``turn``."""
    if event.type != TURN_START:
        return False
    number = _field(event.value(), "turn")
    return type(number) is int and number == turn


@dataclass(frozen=True, slots=True)
class OpenTurn:
    """What one backward walk to a turn's last ``turn/start`` finds."""

    messages: tuple[Any, ...]
    """Decoded data of the ``user/message`` events after that ``turn/start``, in log order;
    empty when there is no such ``turn/start``."""
    reading_time: int | None
    """Append time of the latest reading after that ``turn/start`` (anywhere in the log when
    there is none): the baseline of a later step (time-context §9)."""
    start: int
    """Index of that ``turn/start``, or -1: the walk reached the start of the log."""


def open_turn(events: Sequence[EventLike], end: int, turn: int) -> OpenTurn:
    """Walk ``events[:end]`` back to the last ``turn/start`` of ``turn`` (time-context §7.1,
    time-context §9)."""
    found: list[Any] = []
    reading_time: int | None = None
    for index in range(end - 1, -1, -1):
        event = events[index]
        kind = event.type
        if kind == USER_MESSAGE:
            data = event.value()
            found.append(data)
            if reading_time is None and is_reading(data):
                reading_time = event.time
        elif kind == TURN_START and starts_turn(event, turn):
            found.reverse()
            return OpenTurn(tuple(found), reading_time, index)
    return OpenTurn((), reading_time, -1)


def latest_reading_time(events: Sequence[EventLike], end: int) -> int | None:
    """Append time of the latest reading in ``events[:end]``, any turn, hidden or not (time-context §10)."""
    for index in range(end - 1, -1, -1):
        event = events[index]
        if event.type == USER_MESSAGE and is_reading(event.value()):
            return event.time
    return None


def latest_message_time(events: Sequence[EventLike], end: int) -> int | None:
    """Append time of the latest user, assistant or tool-result message: the step-1 baseline
    (time-context §9)."""
    for index in range(end - 1, -1, -1):
        event = events[index]
        if event.type in _MESSAGE_TYPES:
            return event.time
    return None


@dataclass(frozen=True, slots=True)
class Position:
    """Where the agent loop stood after ``events[:end]`` (time-context §13 check 4)."""

    turn: Any
    """``data["turn"]`` of the open turn's ``turn/start``; ``None`` when no turn is open."""
    step: Any
    """``data["step"]`` of the open step's ``step/start``; ``None`` when no step is open."""
    requested: bool
    """A ``request/header`` was logged since the latest ``step/start`` or ``turn/start``."""


_UNSET: Any = object()


def position(events: Sequence[EventLike], end: int) -> Position:
    """The fold of time-context §13 check 4 over ``events[:end]``, computed backwards.

    Forwards, ``turn/start`` opens a turn and clears the step and the request flag;
    ``step/start`` sets the step and clears the flag; ``request/header`` sets the flag;
    ``step/end`` clears the step; ``turn/end`` clears all three. Each field is therefore set by
    the latest event that touches it, and the walk stops at the latest turn boundary.
    """
    step: Any = _UNSET
    requested: Any = _UNSET
    turn: Any = None
    for index in range(end - 1, -1, -1):
        event = events[index]
        kind = event.type
        if kind == "step/start":
            if step is _UNSET:
                step = _field(event.value(), "step")
            if requested is _UNSET:
                requested = False
        elif kind == "request/header":
            if requested is _UNSET:
                requested = True
        elif kind == "step/end":
            if step is _UNSET:
                step = None
        elif kind in (TURN_START, "turn/end"):
            if kind == TURN_START:
                turn = _field(event.value(), "turn")
            break
    return Position(
        turn=turn,
        step=None if step is _UNSET else step,
        requested=requested is True,
    )
