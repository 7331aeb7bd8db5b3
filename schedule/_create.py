"""Pure record constructors and id allocation (schedule §3.4, schedule §5).

Each constructor takes an allocated id and one clock sample, runs the checks of schedule §5 in
order and raises ``ScheduleInputError`` at the first failure; nothing is stored here.
``check_create_arguments`` runs the same clock-free checks on tool arguments, so the tools'
pre-queue stage (schedule §10.5 step 3) and the constructors share one implementation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from eventlog.values import MAX_SAFE_INTEGER, safe_int

from ._errors import ScheduleInputError
from ._records import MIN_EVERY_SECONDS, AfterRecord, AtRecord, EveryRecord
from ._timeparse import OUT_OF_RANGE, check_target, now_sample, parse_at_string, resolve_local_at
from ._trim import js_trim

_EMPTY_PROMPT = "prompt must be non-empty after trimming."
_BAD_AFTER = "after_seconds must be a positive safe integer."
_BAD_EVERY = "every_seconds must be a safe integer."
_TOO_FREQUENT = "every_seconds must be at least 300."
_BAD_AT = "at must be an explicit-offset string or local calendar object."


def _prompt(prompt: object) -> str:
    """The trimmed prompt; ``invalid_prompt`` when nothing (or no string) remains."""
    p = js_trim(prompt) if isinstance(prompt, str) else ""
    if p == "":
        raise ScheduleInputError("invalid_prompt", _EMPTY_PROMPT)
    return p


def _after_seconds(after_seconds: object) -> int:
    """The delay as an ``int``; ``invalid_rule`` unless it is a positive safe integer."""
    seconds = safe_int(after_seconds)
    if seconds is None or seconds <= 0:
        raise ScheduleInputError("invalid_rule", _BAD_AFTER)
    return seconds


def _every_seconds(every_seconds: object) -> int:
    """The interval as an ``int``: a safe integer (``invalid_rule``) of at least 300
    (``frequency_too_high``)."""
    seconds = safe_int(every_seconds)
    if seconds is None:
        raise ScheduleInputError("invalid_rule", _BAD_EVERY)
    if seconds < MIN_EVERY_SECONDS:
        raise ScheduleInputError("frequency_too_high", _TOO_FREQUENT)
    return seconds


def check_create_arguments(args: Mapping[str, object]) -> None:
    """The constructor checks that need neither a log nor a clock, on ``schedule_create``
    arguments (schedule §10.5 step 3 b–e): the prompt, then ``after_seconds`` and ``every_seconds`` when
    present, raising exactly what the constructors would. ``at`` is left to ``create_at``."""
    _prompt(args["prompt"])
    if "after_seconds" in args:
        _after_seconds(args["after_seconds"])
    if "every_seconds" in args:
        _every_seconds(args["every_seconds"])


def _require_id(id: str) -> None:
    # A programming error, not model input: a bad id would write a record the decoder rejects.
    if not isinstance(id, str) or not id or js_trim(id) != id:
        raise ValueError(f"schedule id {id!r} must be non-empty without surrounding whitespace")


def create_after(id: str, prompt: object, after_seconds: object, now_ms: object) -> AfterRecord:
    """An ``after`` record due ``after_seconds`` after ``now_ms`` (schedule §5.1).

    Order: prompt → ``after_seconds`` a positive safe integer (``invalid_rule``) →
    range/future. An integral float delay is stored as ``int``.
    """
    _require_id(id)
    p = _prompt(prompt)
    seconds = _after_seconds(after_seconds)
    now = now_sample(now_ms)
    return AfterRecord(id, p, seconds, check_target(now + seconds * 1000, now))


def create_every(id: str, prompt: object, every_seconds: object, now_ms: object) -> EveryRecord:
    """An ``every`` record whose first target is ``now_ms + every_seconds * 1000`` (schedule §5.1).

    Order: prompt → safe integer (``invalid_rule``) → ``>= 300`` (``frequency_too_high``)
    → interval in ms safe (``time_out_of_range``) → range/future.
    """
    _require_id(id)
    p = _prompt(prompt)
    seconds = _every_seconds(every_seconds)
    interval = seconds * 1000
    if interval > MAX_SAFE_INTEGER:
        raise ScheduleInputError("time_out_of_range", OUT_OF_RANGE)
    now = now_sample(now_ms)
    return EveryRecord(id, p, seconds, check_target(now + interval, now))


def create_at(id: str, prompt: object, at: object, now_ms: object) -> AtRecord:
    """An ``at`` record from a strict offset string or a local ``{date, time, time_zone}``
    (schedule §5.2, schedule §5.3).

    Only the resolved UTC instant is kept: no offset, local field or zone name.
    """
    _require_id(id)
    p = _prompt(prompt)
    if isinstance(at, str):
        t = parse_at_string(at)
    elif isinstance(at, dict):
        t = resolve_local_at(at)
    else:
        raise ScheduleInputError("invalid_rule", _BAD_AT)
    return AtRecord(id, p, check_target(t, now_ms))


def allocate_id(seen_ids: Iterable[str]) -> str:
    """The next id (schedule §3.4): ``schedule-N`` from ``N = len(seen) + 1``, skipping taken names.

    ``seen_ids`` is every id ever created in the folded suffix (deleted and finished ones
    included); the result is never among them.
    """
    seen = set(seen_ids)
    n = len(seen) + 1
    while f"schedule-{n}" in seen:
        n += 1
    return f"schedule-{n}"
