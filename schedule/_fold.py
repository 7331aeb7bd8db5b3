"""The pure fold of ``schedule/change`` events, fixed-rate arithmetic and the due decision.

See schedule §6.2–6.4 and schedule §7. Everything here is a function over values: the fold
reads events through the ``LoggedEvent`` Protocol (``.type`` and ``.value()``) and never
touches a clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice

import msgspec

from eventlog.values import (
    MAX_INSTANT_MS,
    MAX_SAFE_INTEGER,
    MIN_INSTANT_MS,
    compact_json,
    format_instant,
    safe_int,
)

from ._errors import ScheduleLogError
from ._protocols import LoggedEvent
from ._records import (
    CHANGE_TYPE,
    Create,
    Delete,
    Dispatch,
    EveryRecord,
    Record,
    ScheduleChange,
    decode_checked,
)
from ._timeparse import parse_instant


@dataclass(frozen=True, slots=True)
class Fold:
    """The folded suffix: ``active`` records in create order (every records advanced), and
    ``seen_ids``, every id ever created there, in first-create order."""

    active: tuple[Record, ...]
    seen_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OneShot:
    """Deliver this one-shot (``after``/``at``) record now."""

    record: Record


@dataclass(frozen=True, slots=True)
class EveryBatch:
    """Deliver these due every records together: ``items`` are ``(record, occurrence_ms)`` in
    batch order; ``accepted_at`` is the decision time, canonical UTC, shared by all dispatches."""

    items: tuple[tuple[EveryRecord, int], ...]
    accepted_at: str


@dataclass(frozen=True, slots=True)
class Wait:
    """Nothing is due; ``target`` is the earliest ``scheduledAt`` in ms, or ``None`` if none."""

    target: int | None


# --- fixed-rate arithmetic (schedule §7.1) -------------------------------------------------


def _resolve(target: int, every_seconds: object, accepted: object) -> tuple[int, int | None]:
    a = safe_int(accepted)
    if a is None or not MIN_INSTANT_MS <= a <= MAX_INSTANT_MS:
        raise ScheduleLogError("every acceptedAt must be a representable four-digit-year instant")
    seconds = safe_int(every_seconds)
    interval = None if seconds is None else seconds * 1000
    if interval is None or not 0 < interval <= MAX_SAFE_INTEGER:
        raise ScheduleLogError("every interval milliseconds must be a positive safe integer")
    if a < target:
        raise ScheduleLogError("every dispatch cannot precede the active scheduledAt")
    occurrence = target + (a - target) // interval * interval
    following = occurrence + interval
    return occurrence, (following if following <= MAX_INSTANT_MS else None)


def resolve_every(record: EveryRecord, accepted_ms: int) -> tuple[int, int | None]:
    """``(occurrence_ms, next_ms | None)`` of an every record dispatched at ``accepted_ms``.

    The occurrence is the latest aligned target ``<= accepted_ms``, the next one the first
    aligned target strictly after it; ``None`` when that lies past year 9999 (a final
    dispatch). Missed occurrences in between are skipped. Raises ``ScheduleLogError`` for
    an unrepresentable decision time, a bad interval, or ``accepted_ms < scheduledAt``.
    """
    return _resolve(parse_instant(record.scheduled_at), record.every_seconds, accepted_ms)


# --- the fold (schedule §6.2–6.4) ----------------------------------------------------------


class _Folding:
    """Mutable accumulator of one fold. Dicts keep create order and in-place replacement.
    Every targets advance as integers; a moved record is re-made (its target formatted) once,
    in the next ``result()``, so repeated results cost only what changed in between."""

    __slots__ = ("active", "seen", "seen_ids", "stale", "targets")

    def __init__(self) -> None:
        self.active: dict[str, Record] = {}  # as of the last result()
        self.targets: dict[str, int] = {}  # current scheduledAt in ms
        self.stale: set[str] = set()  # every records whose target moved since the last result()
        self.seen: dict[str, None] = {}  # an ordered set
        self.seen_ids: tuple[str, ...] = ()  # seen, as of the last result()

    def apply(self, change: ScheduleChange, instant: int | None) -> None:
        """Apply one decoded change; ``instant`` is what ``decode_checked`` parsed. A change
        that raises leaves the state untouched."""
        if type(change) is Create:
            record = change.schedule
            rid = record.id
            if rid in self.seen:
                raise ScheduleLogError(f"schedule id {compact_json(rid)} was reused")
            assert instant is not None  # decode_checked parses the scheduledAt of every create
            self.seen[rid] = None
            self.active[rid] = record
            self.targets[rid] = instant
            return
        rid = change.id
        current = self.active.get(rid)
        if current is None:
            verb = "delete" if type(change) is Delete else "dispatch"
            raise ScheduleLogError(f"schedule {verb} targets inactive id {compact_json(rid)}")
        if type(change) is Dispatch:
            if type(current) is not EveryRecord:
                if change.accepted_at is not msgspec.UNSET:
                    raise ScheduleLogError("one-shot dispatch must not contain acceptedAt")
            elif change.accepted_at is msgspec.UNSET:
                raise ScheduleLogError("every dispatch must contain acceptedAt")
            else:
                _, following = _resolve(self.targets[rid], current.every_seconds, instant)
                if following is not None:
                    self.targets[rid] = following
                    self.stale.add(rid)
                    return
        del self.active[rid]
        del self.targets[rid]
        self.stale.discard(rid)

    def result(self) -> Fold:
        active, targets = self.active, self.targets
        for rid in self.stale:  # replacing a value keeps its create position
            moved = format_instant(targets[rid])
            active[rid] = msgspec.structs.replace(active[rid], scheduled_at=moved)
        self.stale.clear()
        if len(self.seen_ids) != len(self.seen):
            self.seen_ids = tuple(self.seen)
        return Fold(tuple(active.values()), self.seen_ids)


def _check_seed_length(events: Sequence[LoggedEvent], seed_length: int) -> None:
    if type(seed_length) is not int or not 0 <= seed_length <= len(events):
        raise ScheduleLogError("schedule seedLength must be within the supplied event log")


def _apply_events(state: _Folding, events: Iterable[LoggedEvent]) -> None:
    for event in events:
        if event.type != CHANGE_TYPE:
            continue
        # eventlog's Event keeps its payload as raw JSON: decode it once, without value().
        raw = getattr(event, "data", None)
        state.apply(*decode_checked(raw if isinstance(raw, msgspec.Raw) else event.value()))


def _fold_into(events: Sequence[LoggedEvent], seed_length: int) -> _Folding:
    _check_seed_length(events, seed_length)
    state = _Folding()
    _apply_events(state, islice(events, seed_length, None))
    return state


def fold(events: Sequence[LoggedEvent], seed_length: int) -> Fold:
    """Fold the ``schedule/change`` events of ``events[seed_length:]`` (schedule §6.2, schedule §6.3).

    Other event types are skipped; the seed prefix is ignored entirely (even if corrupt).
    Each change is decoded fully before its transition applies. Raises ``ScheduleLogError``
    for a bad ``seed_length``, a payload that fails schedule §6.1, or an invalid transition (reused
    id; delete or dispatch of an inactive id; a one-shot dispatch with ``acceptedAt``; an
    every dispatch without one, or before its target). Exceptions raised by an event's
    ``value()`` propagate unchanged.
    """
    return _fold_into(events, seed_length).result()


class IncrementalFold:
    """``fold`` of one session log that remembers where it stopped.

    The log is append-only and its events are immutable (schedule §8), so the fold of a prefix never
    changes: each call decodes and applies only the events appended since the last successful
    call, and returns the previous ``Fold`` itself when nothing was appended. Calling it with
    ``(events, seed_length)`` returns exactly what ``fold(events, seed_length)`` returns and
    raises exactly what it raises. A failure keeps nothing, so a corrupt or unreadable event
    fails every later call the same way. One instance serves one log (one runtime or one set of
    tools); a different ``seed_length`` or a shorter log starts over.
    """

    __slots__ = ("_end", "_result", "_seed_length", "_state")

    def __init__(self) -> None:
        self._state: _Folding | None = None
        self._seed_length = 0
        self._end = 0  # events[:_end] are folded into _state
        self._result = Fold((), ())

    def __call__(self, events: Sequence[LoggedEvent], seed_length: int) -> Fold:
        _check_seed_length(events, seed_length)
        end = len(events)
        state = self._state
        tail: Iterable[LoggedEvent]
        if state is None or seed_length != self._seed_length or end < self._end:
            state, tail = _Folding(), islice(events, seed_length, end)
        elif end == self._end:
            return self._result
        else:  # index the new events only: islice would walk the whole prefix
            tail = map(events.__getitem__, range(self._end, end))
        self._state = None  # nothing half-applied survives a failure
        _apply_events(state, tail)
        self._result = state.result()
        self._state, self._seed_length, self._end = state, seed_length, end
        return self._result


def check_append(events: Sequence[LoggedEvent], seed_length: int, data: object) -> None:
    """Raise ``ScheduleLogError`` unless ``events`` plus the candidate payload fold (schedule §6.4).

    ``data`` is the payload about to be appended (a mapping, a parsed value or raw bytes).
    """
    state = _fold_into(events, seed_length)
    state.apply(*decode_checked(dict(data) if isinstance(data, Mapping) else data))


# --- the decision (schedule §7.2) ----------------------------------------------------------


def decide(active: Sequence[Record], now: int) -> OneShot | EveryBatch | Wait:
    """What is due at ``now`` (epoch ms) among ``active`` (in create order).

    A due one-shot wins alone: the earliest by (``scheduledAt``, create position). Else all
    due every records form one batch ordered by (current ``scheduledAt``, create position),
    each with its latest occurrence ``<= now``. Else ``Wait`` for the earliest target.
    Raises ``ValueError`` if ``now`` is not a safe integer and ``ScheduleLogError`` if a due
    every record cannot be resolved at ``now`` (e.g. ``now`` beyond year 9999).
    """
    t_now = safe_int(now)
    if t_now is None:
        raise ValueError(f"the decision time must be a safe integer, not {now!r}")
    one_shot: Record | None = None
    one_shot_at = 0
    due: list[tuple[int, int, EveryRecord]] = []
    earliest: int | None = None
    for position, record in enumerate(active):
        target = parse_instant(record.scheduled_at)
        if target > t_now:
            if earliest is None or target < earliest:
                earliest = target
        elif type(record) is EveryRecord:
            due.append((target, position, record))
        elif one_shot is None or target < one_shot_at:
            one_shot, one_shot_at = record, target
    if one_shot is not None:
        return OneShot(one_shot)
    if due:
        due.sort(key=lambda item: (item[0], item[1]))
        items = tuple(
            (record, _resolve(target, record.every_seconds, t_now)[0])
            for target, _, record in due
        )
        return EveryBatch(items, format_instant(t_now))
    return Wait(earliest)
