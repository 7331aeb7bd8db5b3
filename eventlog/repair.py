"""Interrupted-turn closers (spec eventlog.md §7.3): pure, over committed events.

When the committed events end inside an open turn, ``plan_closers`` computes the events that
close it: a ``tool/result`` for every tool call still pending, a ``step/end`` for an open step
and a ``turn/end`` with reason ``interrupted``. Only the few fields §7.3 names are read, through
lenient msgspec views (unknown keys ignored); a missing or mistyped one stops repair.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from . import vocab
from .errors import CorruptLog
from .format import Event, build_event

__all__ = ["NOT_STARTED_TEXT", "OUTCOME_UNKNOWN_TEXT", "plan_closers"]

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


class _TurnView(msgspec.Struct):
    turn: int


class _StepView(msgspec.Struct):
    step: int


class _Block(msgspec.Struct):
    type: str
    id: Any = None  # read (and required to be a string) on tool-call blocks only


class _Content(msgspec.Struct):
    content: list[_Block]


class _AssistantView(msgspec.Struct):
    message: _Content


class _CallView(msgspec.Struct, rename="camel"):
    call_id: str


class _ToolSource(msgspec.Struct, rename="camel"):
    call_id: str


class _ResultMessage(msgspec.Struct):
    source: _ToolSource


class _ResultView(msgspec.Struct):
    message: _ResultMessage


def _malformed(event: Event, path: str | Path) -> CorruptLog:
    return CorruptLog(
        path, f"cannot repair interrupted turn: {event.type} at seq {event.seq} has malformed data"
    )


def _read(event: Event, view: type[Any], path: str | Path) -> Any:
    try:
        return event.decode(view)
    except msgspec.DecodeError:
        raise _malformed(event, path) from None


def plan_closers(events: Sequence[Event], path: str | Path) -> tuple[int | None, tuple[Event, ...]]:
    """``(open_turn, closers)`` for the committed ``events`` of the log at ``path``.

    ``(None, ())`` when the last turn marker is a ``turn/end`` or there is none. Closers take
    seqs from ``len(events)`` on and the time of the last event. Raises ``CorruptLog``
    (``cannot repair interrupted turn: <type> at seq N has malformed data``) when a field it
    must read is missing or mistyped.
    """
    start = len(events) - 1
    while start >= 0 and events[start].type not in ("turn/start", "turn/end"):
        start -= 1
    if start < 0 or events[start].type == "turn/end":
        return None, ()
    open_turn = 0
    open_step: int | None = None
    pending: dict[str, tuple[int, int | None]] = {}  # callId -> (step, tool/call seq)
    for event in events[start:]:
        kind = event.type
        if kind == "turn/start":
            open_turn = _read(event, _TurnView, path).turn
            open_step = None
            pending.clear()
        elif kind == "step/start":
            open_step = _read(event, _StepView, path).step
        elif kind == "step/end":
            open_step = None
            pending.clear()
        elif kind == "assistant/message":
            blocks = _read(event, _AssistantView, path).message.content
            calls = [block for block in blocks if block.type == "tool-call"]
            if calls:
                step = _read(event, _StepView, path).step
                for block in calls:
                    if not isinstance(block.id, str):
                        raise _malformed(event, path)
                    pending.setdefault(block.id, (step, None))
        elif kind == "tool/call":
            call_id = _read(event, _CallView, path).call_id
            if call_id in pending:
                pending[call_id] = (pending[call_id][0], event.seq)
        elif kind == "tool/result":
            pending.pop(_read(event, _ResultView, path).message.source.call_id, None)

    seq = len(events)
    time = events[-1].time
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
    return open_turn, tuple(closers)
