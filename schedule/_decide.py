"""Fixed-rate arithmetic and the due decision (schedule §7).

Pure functions over records and integer instants; nothing here reads a clock. ``decide`` is the
public decision over a sequence of records (it parses every ``scheduledAt``); the incremental
fold state of ``_fold`` reaches the same decisions from targets it parsed once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eventlog.values import MAX_INSTANT_MS, MAX_SAFE_INTEGER, MIN_INSTANT_MS, format_instant, safe_int

from ._errors import ScheduleLogError
from ._records import EveryRecord, Record
from ._timeparse import parse_instant


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


def resolve(target: int, every_seconds: object, accepted: object) -> tuple[int, int | None]:
    """``resolve_every`` from the current target in ms (schedule §7.1, same errors)."""
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
    return resolve(parse_instant(record.scheduled_at), record.every_seconds, accepted_ms)


def decision_time(now: object) -> int:
    """``now`` as an ``int`` of epoch ms; ``ValueError`` unless it is a safe integer."""
    t_now = safe_int(now)
    if t_now is None:
        raise ValueError(f"the decision time must be a safe integer, not {now!r}")
    return t_now


# --- the decision (schedule §7.2) ----------------------------------------------------------


def decide(active: Sequence[Record], now: int) -> OneShot | EveryBatch | Wait:
    """What is due at ``now`` (epoch ms) among ``active`` (in create order).

    A due one-shot wins alone: the earliest by (``scheduledAt``, create position). Else all
    due every records form one batch ordered by (current ``scheduledAt``, create position),
    each with its latest occurrence ``<= now``. Else ``Wait`` for the earliest target.
    Raises ``ValueError`` if ``now`` is not a safe integer and ``ScheduleLogError`` if a due
    every record cannot be resolved at ``now`` (e.g. ``now`` beyond year 9999).
    """
    t_now = decision_time(now)
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
            (record, resolve(target, record.every_seconds, t_now)[0])
            for target, _, record in due
        )
        return EveryBatch(items, format_instant(t_now))
    return Wait(earliest)
