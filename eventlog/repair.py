"""Interrupted-turn closers (log-format §7.3): pure, over committed events.

When the committed events end inside an open turn, ``plan_closers`` computes the events that
close it: a ``tool/result`` for every tool call still pending, a ``step/end`` for an open step
and a ``turn/end`` with reason ``interrupted``. Only the few fields log-format §7.3 names are read, through
lenient msgspec views (unknown keys ignored); a missing or mistyped one stops repair.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import msgspec

from . import vocab
from .errors import CorruptLog
from .format import Event, SafeInt, build_event

__all__ = ["NOT_STARTED_TEXT", "OUTCOME_UNKNOWN_TEXT", "TurnTracker", "plan_closers"]

NOT_STARTED_TEXT = (
    "The tool call was interrupted before the Harness recorded it as started. "
    "Retry it if it is still needed."
)
OUTCOME_UNKNOWN_TEXT = (
    "The tool call was interrupted after it was recorded, but no result was durably recorded. "
    "Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the "
    "operation is read-only or idempotent; if it may have side effects, first verify external "
    "state or ask the user. Do not retry blindly."
)
_NOT_STARTED_ERROR = vocab.ToolError(name="ToolNotStartedError", code="TOOL_NOT_STARTED")
_OUTCOME_UNKNOWN_ERROR = vocab.ToolError(name="ToolOutcomeUnknownError", code="TOOL_OUTCOME_UNKNOWN")


# A number outside the safe range (log-format §2) is not an integer of the log: the closers would have to
# carry it, so it is a field of the wrong type, not one repair may copy.
class _TurnView(msgspec.Struct):
    turn: SafeInt


class _StepView(msgspec.Struct):
    step: SafeInt


class _Block(msgspec.Struct):
    type: str
    id: Any = None  # read (and required to be a string) on tool-call blocks only


class _Content(msgspec.Struct):
    content: list[_Block]


class _AssistantView(msgspec.Struct):
    message: _Content


class _CallView(msgspec.Struct, rename="camel"):
    # tool/call data, and the source of a tool/result message
    call_id: str


class _ResultMessage(msgspec.Struct):
    source: _CallView


class _ResultView(msgspec.Struct):
    message: _ResultMessage


def _malformed(event: Event, path: str | os.PathLike[str]) -> CorruptLog:
    return CorruptLog(
        path, f"cannot repair interrupted turn: {event.type} at seq {event.seq} has malformed data"
    )


_TRACKED = frozenset(
    {
        vocab.TURN_START,
        vocab.TURN_END,
        vocab.STEP_START,
        vocab.STEP_END,
        vocab.ASSISTANT_MESSAGE,
        vocab.TOOL_CALL,
        vocab.TOOL_RESULT,
    }
)


# A turn that ends is never decoded: the open turn's tracked events wait (referencing the
# scanner's chunks) until ``closers()`` needs them. Past this much data the open turn is decoded
# as it goes instead, so a long turn keeps only a few chunks alive.
_DEFER_BYTES = 1 << 21
# What each event counts towards that limit besides its data: at least its record's envelope
# (``{"type":…,"seq":…,"time":…,"data":…}`` and LF), so the count bounds the file the deferred
# events span (and so the chunks they keep alive) even when the data is tiny.
_ENVELOPE_BYTES = 64


class TurnTracker:
    """The log-format §7.3 state of a log, fed its committed events in order. ``closers()`` gives what
    repair appends after them.

    Bounded memory: the open turn's pending tool calls, plus its tracked events while the
    records since its ``turn/start`` total under about 2 MiB. Those are decoded only if
    ``closers()`` is called while their turn is open, so a log of finished turns is streamed
    without decoding any data.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = path
        self._open_turn: int | None = None
        self._open_step: int | None = None
        self._pending: dict[str, tuple[int, int | None]] = {}  # callId -> (step, tool/call seq)
        self._malformed: Event | None = None  # first unreadable event of the open turn
        self._deferred: list[Event] = []  # the open turn's tracked events, not yet decoded
        self._deferred_bytes = 0  # about the record bytes since that turn/start
        self._next_seq = 0
        self._time = 0

    def feed(self, event: Event) -> None:
        self._next_seq = event.seq + 1
        self._time = event.time
        kind = event.type
        if kind == vocab.TURN_END:
            self._open_turn = self._open_step = self._malformed = None
            self._pending.clear()
            self._deferred.clear()
            return
        if kind == vocab.TURN_START:
            self._open_turn = 0  # open; its number is decoded with the rest, if needed
            self._deferred = [event]
            self._deferred_bytes = 0
            return
        if self._deferred:
            self._deferred_bytes += (
                len(event.data) + len(event.type) + _ENVELOPE_BYTES
                + 8 * len(event.source_event_seqs or ())
            )
            if kind in _TRACKED:
                self._deferred.append(event)
            if self._deferred_bytes > _DEFER_BYTES:
                self._catch_up()
        elif kind in _TRACKED:
            self._track(event)

    def _catch_up(self) -> None:
        deferred, self._deferred = self._deferred, []
        for event in deferred:
            self._track(event)

    def _track(self, event: Event) -> None:
        if event.type == vocab.TURN_START:
            self._open_turn = 0
            self._open_step = self._malformed = None
            self._pending.clear()
        elif self._open_turn is None or self._malformed is not None:
            return  # outside a turn nothing is read; after a malformed event repair cannot run
        try:
            self._apply(event)
        except msgspec.DecodeError:
            self._malformed = event

    def _apply(self, event: Event) -> None:
        # Each view decode raises msgspec.DecodeError on a missing or mistyped field.
        kind = event.type
        pending = self._pending
        if kind == vocab.TURN_START:
            self._open_turn = event.decode(_TurnView).turn
        elif kind == vocab.STEP_START:
            self._open_step = event.decode(_StepView).step
        elif kind == vocab.STEP_END:
            self._open_step = None
            pending.clear()
        elif kind == vocab.ASSISTANT_MESSAGE:
            calls = [b for b in event.decode(_AssistantView).message.content if b.type == "tool-call"]
            if calls:
                step = event.decode(_StepView).step
                if not all(isinstance(block.id, str) for block in calls):
                    raise msgspec.ValidationError("tool-call block without a string id")
                for block in calls:
                    pending.setdefault(block.id, (step, None))
        elif kind == vocab.TOOL_CALL:
            call_id = event.decode(_CallView).call_id
            if call_id in pending:
                pending[call_id] = (pending[call_id][0], event.seq)
        elif kind == vocab.TOOL_RESULT:
            pending.pop(event.decode(_ResultView).message.source.call_id, None)

    def closers(self) -> tuple[int | None, tuple[Event, ...]]:
        """``(open_turn, closers)`` after the events fed so far; ``(None, ())`` if no turn is
        open. Raises ``CorruptLog`` if the open turn has an event whose fields cannot be read."""
        self._catch_up()
        if self._open_turn is None:
            return None, ()
        if self._malformed is not None:
            raise _malformed(self._malformed, self._path)
        return self._open_turn, _closers(
            self._open_turn, self._open_step, self._pending, self._next_seq, self._time
        )


def plan_closers(events: Sequence[Event], path: str | os.PathLike[str]) -> tuple[int | None, tuple[Event, ...]]:
    """``(open_turn, closers)`` for the committed ``events`` of the log at ``path``.

    ``(None, ())`` when the last turn marker is a ``turn/end`` or there is none. Closers take
    seqs from ``len(events)`` on and the time of the last event. Raises ``CorruptLog``
    (``cannot repair interrupted turn: <type> at seq N has malformed data``) when a field it
    must read is missing or mistyped.
    """
    start = len(events) - 1
    while start >= 0 and events[start].type not in (vocab.TURN_START, vocab.TURN_END):
        start -= 1
    if start < 0 or events[start].type == vocab.TURN_END:
        return None, ()
    tracker = TurnTracker(path)
    for event in events[start:]:
        tracker.feed(event)
    return tracker.closers()


def _closers(
    open_turn: int,
    open_step: int | None,
    pending: dict[str, tuple[int, int | None]],
    seq: int,
    time: int,
) -> tuple[Event, ...]:
    closers: list[Event] = []
    for call_id, (step, call_seq) in pending.items():
        text, error = (
            (NOT_STARTED_TEXT, _NOT_STARTED_ERROR)
            if call_seq is None
            else (OUTCOME_UNKNOWN_TEXT, _OUTCOME_UNKNOWN_ERROR)
        )
        message = vocab.Message(
            id=f"interrupted-tool-result-{call_id}-{seq}",
            role="user",
            source=vocab.ToolSource(call_id=call_id),
            content=[
                vocab.ToolResultBlock(
                    tool_call_id=call_id, is_error=True, content=[vocab.TextBlock(text=text)]
                )
            ],
        )
        closers.append(
            build_event(
                vocab.TOOL_RESULT,
                seq,
                time,
                vocab.ToolResult(turn=open_turn, step=step, message=message, error=error),
                surface_op="append",
                source_event_seqs=None if call_seq is None else (call_seq,),
            )
        )
        seq += 1
    if open_step is not None:
        closers.append(
            build_event(vocab.STEP_END, seq, time, vocab.StepEnd(turn=open_turn, step=open_step))
        )
        seq += 1
    closers.append(
        build_event(
            vocab.TURN_END, seq, time, vocab.TurnEnd(turn=open_turn, reason=vocab.Interrupted())
        )
    )
    return tuple(closers)
