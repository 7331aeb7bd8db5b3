"""The pure fold of ``schedule/change`` events, incremental folds and the append guard.

See schedule §6.2–6.4. Everything here is a function over values: the fold reads events through
the ``LoggedEvent`` Protocol (``.type`` and ``.value()``) and never touches a clock.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Protocol

import msgspec

from eventlog.values import compact_json, format_instant

from ._decide import EveryBatch, OneShot, Wait, decision_time, resolve
from ._errors import ScheduleLogError
from ._protocols import LoggedEvent
from ._records import (
    CHANGE_TYPE,
    Create,
    Delete,
    EveryRecord,
    Record,
    ScheduleChange,
    decode_checked,
)


@dataclass(frozen=True, slots=True)
class Fold:
    """The folded suffix: ``active`` records in create order (every records advanced), and
    ``seen_ids``, every id ever created there, in first-create order."""

    active: tuple[Record, ...]
    seen_ids: tuple[str, ...]


# An agenda entry: (target ms, create position, id). It is current while the id is active with
# that target; otherwise it is stale and is dropped when it reaches the top of its heap.
_Entry = tuple[int, int, str]


class FoldState:
    """The mutable state of one fold, and the agenda the runtime decides from.

    Dicts keep create order and in-place replacement. Targets are integers, parsed once when
    their change is decoded; an every record whose target moved is re-made (its target
    formatted) only when it is next shown: in ``result()``, or in a decision that includes it.

    The agenda is two heaps of entries ordered by (target, create position), one for one-shots
    and one for every records, built on the first ``decide`` and kept up to date by every later
    change. A change costs O(log n) there; entries left stale by a delete, a dispatch or an
    advance are dropped when they reach the top, and a heap that holds more stale entries than
    current ones is rebuilt (amortised O(1) per change).
    """

    __slots__ = ("active", "everies", "one_shots", "order", "seen", "seen_ids", "stale", "targets")

    def __init__(self) -> None:
        self.active: dict[str, Record] = {}  # records; an every's scheduledAt may be stale
        self.targets: dict[str, int] = {}  # current scheduledAt in ms
        self.order: dict[str, int] = {}  # create position among all creates
        self.stale: set[str] = set()  # every records whose target moved since they were shown
        self.seen: dict[str, None] = {}  # an ordered set
        self.seen_ids: tuple[str, ...] = ()  # seen, as of the last result()
        self.one_shots: list[_Entry] | None = None  # the agenda, once built
        self.everies: list[_Entry] | None = None

    def validate(self, change: ScheduleChange, instant: int | None) -> int | None:
        """Raise ``ScheduleLogError`` unless ``change`` (with the instant ``decode_checked``
        parsed) applies to this state (schedule §6.2), changing nothing.

        Returns the next target of an every record that a dispatch advances, else ``None``.
        """
        if type(change) is Create:
            if change.schedule.id in self.seen:
                raise ScheduleLogError(f"schedule id {compact_json(change.schedule.id)} was reused")
            return None
        rid = change.id
        current = self.active.get(rid)
        if current is None:
            verb = "delete" if type(change) is Delete else "dispatch"
            raise ScheduleLogError(f"schedule {verb} targets inactive id {compact_json(rid)}")
        if type(change) is Delete:
            return None
        if type(current) is not EveryRecord:
            if change.accepted_at is not msgspec.UNSET:
                raise ScheduleLogError("one-shot dispatch must not contain acceptedAt")
            return None
        if change.accepted_at is msgspec.UNSET:
            raise ScheduleLogError("every dispatch must contain acceptedAt")
        return resolve(self.targets[rid], current.every_seconds, instant)[1]

    def apply(self, change: ScheduleChange, instant: int | None) -> None:
        """Apply one decoded change (see ``validate``); a change that raises changes nothing."""
        following = self.validate(change, instant)
        if type(change) is Create:
            record = change.schedule
            assert instant is not None  # decode_checked parses the scheduledAt of every create
            rid = record.id
            self.order[rid] = len(self.seen)
            self.seen[rid] = None
            self.active[rid] = record
            self.targets[rid] = instant
            self._schedule(rid, type(record) is EveryRecord)
            return
        rid = change.id
        if following is not None:  # an every record advances, keeping its create position
            self.targets[rid] = following
            self.stale.add(rid)
            self._schedule(rid, True)
            return
        is_every = type(self.active.pop(rid)) is EveryRecord
        del self.targets[rid], self.order[rid]
        self.stale.discard(rid)
        self._compact(is_every)

    def result(self) -> Fold:
        """The ``Fold`` of the changes applied so far."""
        for rid in self.stale:
            self._refresh(rid)
        self.stale.clear()
        if len(self.seen_ids) != len(self.seen):
            self.seen_ids = tuple(self.seen)
        return Fold(tuple(self.active.values()), self.seen_ids)

    def decide(self, now: object) -> OneShot | EveryBatch | Wait:
        """``decide(self.result().active, now)``, with the same result and the same errors,
        at O(log n) per due record instead of a parse of every record."""
        t_now = decision_time(now)
        one_shots, everies = self._agenda()
        first = self._top(one_shots)
        if first is not None and first[0] <= t_now:
            return OneShot(self.active[first[2]])
        due: list[_Entry] = []
        try:
            while (top := self._top(everies)) is not None and top[0] <= t_now:
                due.append(heapq.heappop(everies))
            items = tuple(
                (self._shown(rid), resolve(target, self._every(rid).every_seconds, t_now)[0])
                for target, _, rid in due
            )
        finally:
            for entry in due:
                heapq.heappush(everies, entry)
        if items:
            return EveryBatch(items, format_instant(t_now))
        targets = [entry[0] for entry in (first, self._top(everies)) if entry is not None]
        return Wait(min(targets) if targets else None)

    # -- the agenda ------------------------------------------------------------------------------

    def _agenda(self) -> tuple[list[_Entry], list[_Entry]]:
        if self.one_shots is None or self.everies is None:
            self.one_shots, self.everies = self._entries(False), self._entries(True)
        return self.one_shots, self.everies

    def _entries(self, every: bool) -> list[_Entry]:
        """A heap of the current entries of one kind."""
        entries = [(self.targets[rid], self.order[rid], rid) for rid, record in self.active.items()
                   if (type(record) is EveryRecord) is every]
        heapq.heapify(entries)
        return entries

    def _schedule(self, rid: str, every: bool) -> None:
        """Enter the current target of ``rid`` in the agenda, if it is built."""
        heap = self.everies if every else self.one_shots
        if heap is not None:
            heapq.heappush(heap, (self.targets[rid], self.order[rid], rid))
            self._compact(every)

    def _compact(self, every: bool) -> None:
        """Rebuild a heap of one kind once it holds more stale entries than current ones."""
        heap = self.everies if every else self.one_shots
        if heap is not None and len(heap) > 2 * len(self.active) + 32:
            heap[:] = self._entries(every)

    def _top(self, heap: list[_Entry]) -> _Entry | None:
        """The first current entry of ``heap``, after dropping the stale ones above it."""
        while heap:
            target, _, rid = entry = heap[0]
            if self.targets.get(rid) == target:
                return entry
            heapq.heappop(heap)
        return None

    def _every(self, rid: str) -> EveryRecord:
        record = self.active[rid]
        assert type(record) is EveryRecord  # only every records enter that heap
        return record

    def _shown(self, rid: str) -> EveryRecord:
        """The every record ``rid`` with its current ``scheduledAt``."""
        if rid in self.stale:
            self._refresh(rid)
            self.stale.discard(rid)
        return self._every(rid)

    def _refresh(self, rid: str) -> None:
        # Replacing a value keeps its create position.
        moved = format_instant(self.targets[rid])
        self.active[rid] = msgspec.structs.replace(self.active[rid], scheduled_at=moved)


def _check_seed_length(events: Sequence[LoggedEvent], seed_length: int) -> None:
    if type(seed_length) is not int or not 0 <= seed_length <= len(events):
        raise ScheduleLogError("schedule seedLength must be within the supplied event log")


def _apply_events(state: FoldState, events: Iterable[LoggedEvent]) -> None:
    for event in events:
        if event.type != CHANGE_TYPE:
            continue
        # eventlog's Event keeps its payload as raw JSON: decode it once, without value().
        raw = getattr(event, "data", None)
        state.apply(*decode_checked(raw if isinstance(raw, msgspec.Raw) else event.value()))


def _fold_into(events: Sequence[LoggedEvent], seed_length: int) -> FoldState:
    _check_seed_length(events, seed_length)
    state = FoldState()
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

    The log is append-only and its events are immutable (schedule §8), so the fold of a prefix
    never changes: each call decodes and applies only the events appended since the last
    successful call. Calling it with ``(events, seed_length)`` returns exactly what
    ``fold(events, seed_length)`` returns (the previous ``Fold`` itself when nothing was
    appended) and raises exactly what it raises. ``state(events, seed_length)`` catches up the
    same way without building a ``Fold``. A failure keeps nothing, so a corrupt or unreadable
    event fails every later call the same way. One instance serves one log (one runtime, one set
    of tools, one guard); a different ``seed_length`` or a shorter log starts over.
    """

    __slots__ = ("_end", "_result", "_result_end", "_seed_length", "_state")

    def __init__(self) -> None:
        self._state: FoldState | None = None
        self._seed_length = 0
        self._end = 0  # events[:_end] are folded into _state
        self._result: Fold | None = None
        self._result_end = 0  # _result is the fold of events[:_result_end]

    def state(self, events: Sequence[LoggedEvent], seed_length: int) -> FoldState:
        """The fold state of ``events[seed_length:]``, caught up; raises what ``fold`` raises."""
        _check_seed_length(events, seed_length)
        end = len(events)
        state = self._state
        tail: Iterable[LoggedEvent]
        if state is None or seed_length != self._seed_length or end < self._end:
            state, tail = FoldState(), islice(events, seed_length, end)
            self._result = None
        elif end == self._end:
            return state
        else:  # index the new events only: islice would walk the whole prefix
            tail = map(events.__getitem__, range(self._end, end))
        self._state = None  # nothing half-applied survives a failure
        _apply_events(state, tail)
        self._state, self._seed_length, self._end = state, seed_length, end
        return state

    def __call__(self, events: Sequence[LoggedEvent], seed_length: int) -> Fold:
        state = self.state(events, seed_length)
        if self._result is None or self._result_end != self._end:
            self._result, self._result_end = state.result(), self._end
        return self._result


def _candidate(data: object) -> object:
    """The payload about to be appended, as ``decode_checked`` takes it."""
    return dict(data) if isinstance(data, Mapping) else data


def check_append(events: Sequence[LoggedEvent], seed_length: int, data: object) -> None:
    """Raise ``ScheduleLogError`` unless ``events`` plus the candidate payload fold (schedule §6.4).

    ``data`` is the payload about to be appended (a mapping, a parsed value or raw bytes). The
    log is folded first, so a log that does not fold fails with its own error. Each call folds
    the whole suffix; ``ScheduleGuard`` answers the same at amortised O(1).
    """
    _fold_into(events, seed_length).validate(*decode_checked(_candidate(data)))


class _Log(Protocol):
    """What the guard reads of a session: ``eventlog.Session`` and ``SessionHandle`` fit."""

    @property
    def events(self) -> Sequence[LoggedEvent]: ...

    @property
    def seed_length(self) -> int: ...


class ScheduleGuard:
    """``check_append`` of one append-only session log at amortised O(1) per check.

    ``check(events, seed_length, data)`` raises exactly what ``check_append(events,
    seed_length, data)`` raises, and nothing when it returns: it folds the suffix once, on the
    first check, and afterwards decodes only the events appended since the previous check
    (other event types cost one comparison each) before validating the candidate against the
    fold without changing it. So a refused candidate, or one a later guard refuses, leaves
    nothing behind: the guard reads the log, not its own guesses.

    As an append guard of ``eventlog.Session`` for ``schedule/change`` (which calls
    ``guard(session, data)`` before committing the event)::

        session.add_append_guard("schedule/change", schedule.ScheduleGuard())

    One instance serves one log. On a log whose suffix does not fold, every check fails like
    ``check_append`` and refolds (the fold keeps nothing after a failure).
    """

    __slots__ = ("_folded",)

    def __init__(self) -> None:
        self._folded = IncrementalFold()

    def check(self, events: Sequence[LoggedEvent], seed_length: int, data: object) -> None:
        """Raise ``ScheduleLogError`` unless the candidate payload ``data`` would fold after
        ``events[seed_length:]``; see ``check_append``."""
        state = self._folded.state(events, seed_length)
        state.validate(*decode_checked(_candidate(data)))

    def __call__(self, session: _Log, data: object) -> None:
        """``check(session.events, session.seed_length, data)``: the append-guard signature."""
        self.check(session.events, session.seed_length, data)
