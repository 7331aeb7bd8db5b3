"""Projections of a session log that the agent loop rebuilds from events (host §2, host §5.3).

Pure functions over events: the model-visible **derived history**, the **inbox** replayed for a
resume, and the turn counter. Each reads persisted data through the log's vocabulary
(``eventlog.vocab.decode``: typed decoding is the validation), so malformed persisted data is a
typed error naming its seq (:class:`MalformedPersisted`, :class:`InboxReplayError`), never a
crash. Nothing here appends, flushes or keeps state beyond an incremental cache whose result is
always what a fresh derivation over the same events would give.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import eventlog.surface
from eventlog import Event, InvalidEvent, vocab
from eventlog.format import SURFACE_TYPES
from eventlog.values import is_safe_int

from ._inbox import Target, UserMessage

INBOX_TARGETS: tuple[Target, ...] = ("next-turn", "next-step")


class MalformedPersisted(ValueError):
    """A persisted event whose data does not decode through the log's vocabulary: found while
    resuming, the session is corrupt (host §5.3). The message names the event's seq and, once
    known, its ``line`` in the file:
    ``invalid persisted turn/start at session seq 5 (line 7): Object missing required field `turn```."""

    def __init__(self, type: str, seq: int, detail: str, *, line: int | None = None) -> None:
        where = f"session seq {seq}" if line is None else f"session seq {seq} (line {line})"
        super().__init__(f"invalid persisted {type} at {where}: {detail}")
        self.type = type
        self.seq = seq
        self.detail = detail
        self.line = line

    def at_line(self, line: int) -> MalformedPersisted:
        """The same error, naming the line of the file that holds the event."""
        return MalformedPersisted(self.type, self.seq, self.detail, line=line)


def decode_persisted(event: Event) -> Any:
    """``vocab.decode(event)``: the vocabulary Struct of a core event (``None`` for another type),
    or :class:`MalformedPersisted`."""
    try:
        return vocab.decode(event)
    except InvalidEvent as exc:
        detail = str(exc).removeprefix(f"invalid {event.type} at seq {event.seq}: ")
        raise MalformedPersisted(event.type, event.seq, detail) from exc


def scan_turns(events: Sequence[Event]) -> tuple[int, bool]:
    """The ``turn`` of the last ``turn/start`` (0 if none; host §3.3 step 1) and whether the log
    holds a ``request/header`` (host §3.5). Raises :class:`MalformedPersisted` for a malformed
    ``turn/start``."""
    last_turn: int | None = None
    has_header = False
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if last_turn is None and event.type == vocab.TURN_START:
            start: vocab.TurnStart = decode_persisted(event)
            last_turn = start.turn
        has_header = has_header or event.type == vocab.REQUEST_HEADER
        if last_turn is not None and has_header:
            break
    return last_turn or 0, has_header


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
    turnlog) refolds from the start. Each surface event is decoded through the vocabulary once, as
    it is first seen: a malformed one raises :class:`MalformedPersisted` (and the view stays as it
    was), an unfoldable foreign log ``eventlog.SurfaceError``.
    """

    __slots__ = ("_history", "_seen")

    def __init__(self) -> None:
        self._seen = 0
        self._history: list[Mapping[str, Any]] = []  # of the events seen so far

    def update(self, events: Sequence[Event]) -> list[Mapping[str, Any]]:
        new = [events[i] for i in range(self._seen, len(events))]
        for event in new:
            if event.type in SURFACE_TYPES:
                decode_persisted(event)
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

    Each splice is decoded through the vocabulary (``AgentInboxSpliced``, or
    ``ForeignInboxSpliced`` for foreign sources), then removes ``removedCount`` items at ``start``
    and inserts ``inserted`` (the messages as logged) at ``start``. Splices inherited from a fork
    parent never count. Returns ``{"next-turn": [...], "next-step": [...]}``; a splice that is
    malformed or does not fit raises :class:`InboxReplayError` naming its seq.
    """
    queues: dict[Target, list[UserMessage]] = {target: [] for target in INBOX_TARGETS}
    for index in range(seed_length, len(events)):
        event = events[index]
        if event.type != vocab.AGENT_INBOX_SPLICED:
            continue
        try:
            spliced: vocab.AgentInboxSpliced | vocab.ForeignInboxSpliced = decode_persisted(event)
        except MalformedPersisted as exc:
            raise InboxReplayError(event.seq) from exc
        queue = queues[spliced.target]
        start = spliced.start
        removed = spliced.removed_count if isinstance(spliced.removed_count, int) else 0
        if not (_safe_index(start) and _safe_index(removed)) or start + removed > len(queue):
            raise InboxReplayError(event.seq)
        queue[start : start + removed] = event.value()["inserted"]
    return queues
