"""``session/inspect``: what a session's log says at one seq (host §4.3.11), as a pure function over
its header and events.

Nothing here reads files or touches a live session; :meth:`Host.inspect` hands in the events (from
memory, or read from disk without repair) and the repair a cold open would apply.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

import schedule
from eventlog import Event, Repair, SessionHeader

from ._boundary import HostError
from ._history import InboxReplayError, replay_inbox

AT_SEQ_MESSAGE = "session/inspect atSeq must be a seq of this session"


def bad_at_seq() -> HostError:
    """The refusal of an ``atSeq`` that is not a seq of the session (host §4.3.11)."""
    return HostError("invalid-params", AT_SEQ_MESSAGE, field="atSeq")


def open_turn(events: Sequence[Event]) -> dict[str, int | None] | None:
    """The last ``turn/start`` of ``events`` without a later ``turn/end``, as
    ``{"turn":T,"step":S|null}`` with its open step, or ``None`` when no turn is open."""
    turn: int | None = None
    step: int | None = None
    for event in events:
        kind = event.type
        if kind == "turn/start":
            turn, step = _number(event, "turn"), None
        elif kind == "turn/end":
            turn, step = None, None
        elif kind == "step/start" and turn is not None:
            step = _number(event, "step")
        elif kind == "step/end":
            step = None
    return None if turn is None else {"turn": turn, "step": step}


def _number(event: Event, key: str) -> int | None:
    data = event.value()
    value = data.get(key) if isinstance(data, dict) else None
    return value if type(value) is int else None


def inspect_state(
    session_id: str,
    header: SessionHeader,
    events: Sequence[Event],
    *,
    live: bool,
    repair: Repair | None,
    at_seq: int | None,
) -> dict[str, Any]:
    """The ``session/inspect`` result of host §4.3.11 over ``events[:at_seq + 1]``.

    ``at_seq`` ``None`` means the last seq (``None`` for an empty log); any other value outside
    ``0..last`` raises ``invalid-params`` (:func:`bad_at_seq`). ``inbox`` is the inbox replay from
    the header's ``seedLength``, ``reminders`` schedule's fold of the same prefix with each active
    record's view at the ``time`` of event ``at_seq``; a fold that raises puts
    ``{"error":<message>}`` in place of its member. ``repair`` is passed through (``None`` for a
    live session)."""
    last = len(events) - 1
    if at_seq is None:
        at = last if last >= 0 else None
    elif 0 <= at_seq <= last:
        at = at_seq
    else:
        raise bad_at_seq()
    prefix = events[: at + 1] if at is not None else events[:0]
    seed_length = header.seed_length or 0
    inbox: dict[str, Any]
    try:
        inbox = {target: queue for target, queue in replay_inbox(prefix, seed_length).items()}
    except InboxReplayError as exc:
        inbox = {"error": str(exc)}
    reminders: dict[str, Any]
    try:
        fold = schedule.fold(prefix, seed_length)
        now = prefix[-1].time if prefix else 0
        reminders = {
            "active": [schedule.view(record, now) for record in fold.active],
            "createdIds": list(fold.seen_ids),
        }
    except (schedule.ScheduleLogError, ValueError) as exc:  # a corrupt or unreadable schedule log
        reminders = {"error": str(exc)}
    return {
        "sessionId": session_id,
        "atSeq": at,
        "events": len(events),
        "live": live,
        "header": msgspec.json.decode(header.to_json()),
        # Through JSON: the closers hold their data as raw bytes.
        "repair": msgspec.json.decode(msgspec.json.encode(repair)) if repair is not None else None,
        "openTurn": open_turn(prefix),
        "inbox": inbox,
        "reminders": reminders,
    }
