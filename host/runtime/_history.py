"""Projections of a session log that the agent loop rebuilds from events (host §2, host §5.3).

Pure functions over events: the model-visible **derived history** and the **inbox** replayed for
a resume. Nothing here appends, flushes or keeps state beyond an incremental cache whose result is
always what a fresh derivation over the same events would give.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import eventlog.surface
from eventlog import Event
from eventlog.format import SURFACE_TYPES
from eventlog.values import is_safe_int

from ._inbox import Target, UserMessage

INBOX_TARGETS: tuple[Target, ...] = ("next-turn", "next-step")


def surface_message(event: Event) -> Mapping[str, Any]:
    """The message a surface event contributes: a ``user/message``'s data, or the ``message`` of
    an ``assistant/message`` or ``tool/result``."""
    data: Mapping[str, Any] = event.value()
    if event.type == "user/message":
        return data
    message: Mapping[str, Any] = data["message"]
    return message


def _visible(message: Mapping[str, Any]) -> bool:
    """An assistant message with empty ``content`` is skipped (a reply cut to nothing)."""
    return not (message.get("role") == "assistant" and not message.get("content"))


def derive_history(events: Sequence[Event]) -> list[Mapping[str, Any]]:
    """The model's view (host §2): surface messages in log order, inherited seed events included,
    with foreign ``replace`` operations applied (eventlog's surface fold) and empty assistant
    messages skipped. Raises ``eventlog.SurfaceError`` for an unfoldable foreign log."""
    return HistoryView().update(events)


class HistoryView:
    """An incremental :func:`derive_history` over one growing log.

    ``update(events)`` returns the derived history of ``events``, which must extend the events of
    the previous call (an append-only log). Plain appends cost only the new events (and a copy of
    the list returned); a ``replace`` operation (written by deepseek-harness compaction, never by
    turnlog) refolds from the start.
    """

    __slots__ = ("_history", "_seen")

    def __init__(self) -> None:
        self._seen = 0
        self._history: list[Mapping[str, Any]] = []  # of the events seen so far

    def update(self, events: Sequence[Event]) -> list[Mapping[str, Any]]:
        new = [events[i] for i in range(self._seen, len(events))]
        if any(e.type in SURFACE_TYPES and e.surface_op != "append" for e in new):
            self._history = _visible_messages(events[seq] for seq in eventlog.surface.fold(events))
        else:
            self._history.extend(_visible_messages(e for e in new if e.type in SURFACE_TYPES))
        self._seen = len(events)
        return list(self._history)


def _visible_messages(events: Iterable[Event]) -> list[Mapping[str, Any]]:
    # Filtered once, as the nodes arrive: a node never changes afterwards (a replace refolds).
    return [message for event in events if _visible(message := surface_message(event))]


# --- inbox replay -------------------------------------------------------------------------------


class InboxReplayError(ValueError):
    """A persisted ``agent/inbox/spliced`` event that does not fit the replayed queues."""

    def __init__(self, seq: int) -> None:
        super().__init__(f"invalid persisted inbox splice at session seq {seq}")
        self.seq = seq


def _safe_index(value: object) -> bool:
    return isinstance(value, int) and is_safe_int(value) and value >= 0


def replay_inbox(events: Sequence[Event], seed_length: int) -> dict[Target, list[UserMessage]]:
    """Rebuild the two inbox queues from the splices with ``seq >= seed_length`` (host §5.3 step 2).

    Each splice removes ``removedCount`` items at ``start``, then inserts ``inserted`` at
    ``start``. Splices inherited from a fork parent never count. Returns
    ``{"next-turn": [...], "next-step": [...]}``; a splice that is malformed or does not fit
    raises :class:`InboxReplayError` naming its seq.
    """
    queues: dict[Target, list[UserMessage]] = {target: [] for target in INBOX_TARGETS}
    for index in range(seed_length, len(events)):
        event = events[index]
        if event.type != "agent/inbox/spliced":
            continue
        data = event.value()
        if not isinstance(data, dict):
            raise InboxReplayError(event.seq)
        target = data.get("target")
        queue = next((queue for name, queue in queues.items() if name == target), None)
        start = data.get("start")
        removed = data.get("removedCount", 0)
        inserted = data.get("inserted")
        if (
            queue is None
            or not _safe_index(start)
            or not _safe_index(removed)
            or not isinstance(inserted, list)
            or not all(isinstance(m, dict) for m in inserted)
            or start + removed > len(queue)
        ):
            raise InboxReplayError(event.seq)
        queue[start : start + removed] = inserted
    return queues
