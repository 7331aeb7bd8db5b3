"""Instants, strict `at` parsing and local-time resolution (schedule §2.3, schedule §5.2–5.5).

Everything is integer epoch milliseconds on the proleptic Gregorian calendar: strings are
matched by the regular expressions of schedule §2.3 and schedule §5 and formatted field by
field, never with ``fromisoformat``/``strptime`` (too lenient) or ``isoformat``/``strftime``
(wrong shapes); ``datetime`` only supplies day ordinals and zone rules (schedule §12).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo

from eventlog import values
from eventlog.values import MAX_INSTANT_MS, MIN_INSTANT_MS, safe_int

from ._errors import ScheduleInputError, ScheduleLogError
from ._timezones import canonicalize_time_zone

_DAY_MS = 86_400_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_ONE_MS = timedelta(milliseconds=1)

_INSTANT = re.compile(  # schedule §2.3, verbatim
    r"(?!0000)[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
    r"T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{3}Z"
)
_AT = re.compile(
    r"(?P<y>[0-9]{4})-(?P<mo>[0-9]{2})-(?P<d>[0-9]{2})"
    r"T(?P<h>[0-9]{2}):(?P<mi>[0-9]{2}):(?P<s>[0-9]{2})(?:\.(?P<f>[0-9]{1,3}))?"
    r"(?P<z>Z|(?P<sign>[+-])(?P<oh>[0-9]{2}):(?P<om>[0-9]{2}))"
)
_LOCAL_DATE = re.compile("([0-9]{4})-([0-9]{2})-([0-9]{2})")
_LOCAL_TIME = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,3}))?")
_LOCAL_KEYS = frozenset({"date", "time", "time_zone"})

_BAD_INSTANT_SHAPE = "scheduledAt must be a canonical four-digit-year RFC 3339 UTC instant"
_BAD_INSTANT_DATE = "scheduledAt is not a real UTC calendar instant"

AT_SHAPE = (
    "at must use YYYY-MM-DDTHH:mm:ss with optional 1-3 digit fractional seconds"
    " and an explicit Z or numeric offset."
)
AT_UNREAL = "The at value must be a real ISO calendar date and time."
AT_OFFSET = "The at numeric offset is invalid."
LOCAL_KEYS = "Local at must contain exactly date, time, and time_zone."
LOCAL_TYPES = "Local at date and time must be strings."
LOCAL_SHAPE = (
    "Local at requires date YYYY-MM-DD and time HH:mm:ss"
    " with optional one-to-three digit milliseconds."
)
LOCAL_UNREAL = "The local at value must be a real ISO calendar date and time."
LOCAL_GAP = "The local at time does not exist in the selected time zone."
ZONE_NOT_STRING = "time_zone must be a string."
NOT_FUTURE = "The scheduled time must be strictly in the future."
OUT_OF_RANGE = (
    "The scheduled time must be representable as a four-digit-year RFC 3339 UTC instant."
)


# --- proleptic Gregorian calendar ---------------------------------------------------------
# ``date`` supplies day ordinals for years 1-9999 (every year that reaches these functions);
# everything else is integer millisecond arithmetic. Dates repeat a lot within one log, so the
# date conversion on the fold's hot path is memoised (a pure function, a bounded cache).


def _days_in_month(y: int, m: int) -> int:
    if m == 2:
        return 29 if y % 4 == 0 and (y % 100 != 0 or y % 400 == 0) else 28
    return 30 if m in (4, 6, 9, 11) else 31


def _is_real_date(y: int, m: int, d: int) -> bool:
    return 1 <= m <= 12 and 1 <= d <= _days_in_month(y, m)


def _fields_ms(y: int, mo: int, d: int, h: int, mi: int, s: int, milli: int) -> int:
    """The fields of a real date (year 1-9999) read as a UTC wall time, in epoch ms."""
    days = date(y, mo, d).toordinal() - _EPOCH_ORDINAL
    return days * _DAY_MS + ((h * 60 + mi) * 60 + s) * 1000 + milli


@functools.lru_cache(maxsize=4096)
def _instant_days(text: str) -> int | None:
    """Days since 1970-01-01 of a ``YYYY-MM-DD`` already matched by the shape; ``None`` if unreal."""
    y, mo, d = int(text[0:4]), int(text[5:7]), int(text[8:10])
    return date(y, mo, d).toordinal() - _EPOCH_ORDINAL if _is_real_date(y, mo, d) else None


# --- canonical UTC instants (schedule §2.3) ------------------------------------------------


def format_instant(ms: int) -> str:
    """``YYYY-MM-DDTHH:MM:SS.mmmZ`` for an ``int`` in ``MIN_INSTANT_MS..MAX_INSTANT_MS``.

    The rule is ``eventlog.values.format_instant``'s; schedule's public name raises one error,
    ``ValueError``, for anything outside that domain (a ``bool``, a float or any non-``int``
    included), where the shared function raises ``TypeError`` for a non-``int``.
    """
    try:
        return values.format_instant(ms)
    except TypeError:
        raise ValueError(f"instant {ms!r} is outside years 0001-9999") from None


def parse_instant(s: object) -> int:
    """Epoch ms of a canonical UTC instant; ``ScheduleLogError`` for a bad shape or date.

    Guarantee: ``format_instant(parse_instant(s)) == s`` whenever it returns.
    """
    if not isinstance(s, str) or _INSTANT.fullmatch(s) is None:
        raise ScheduleLogError(_BAD_INSTANT_SHAPE)
    days = _instant_days(s[:10])
    if days is None:
        raise ScheduleLogError(_BAD_INSTANT_DATE)
    clock = (int(s[11:13]) * 60 + int(s[14:16])) * 60 + int(s[17:19])
    return days * _DAY_MS + clock * 1000 + int(s[20:23])


# --- model input: `at` strings, local objects, range (schedule §5.2–5.5) -------------------


def _rule(message: str) -> ScheduleInputError:
    return ScheduleInputError("invalid_rule", message)


def _millis(fraction: str | None) -> int:
    """A 1–3 digit fraction right-padded to milliseconds (``5`` → 500, ``05`` → 50)."""
    return int(fraction.ljust(3, "0")) if fraction else 0


def parse_at_string(at: str) -> int:
    """Epoch ms of a strict offset-bearing RFC 3339 ``at`` string (schedule §5.2 steps 2–6).

    Raises ``ScheduleInputError`` (``invalid_rule``) with the shape, calendar or offset
    message. The result is not range-checked (see ``check_target``).
    """
    m = _AT.fullmatch(at)
    if m is None:
        raise _rule(AT_SHAPE)
    y, mo, d = int(m["y"]), int(m["mo"]), int(m["d"])
    h, mi, s = int(m["h"]), int(m["mi"]), int(m["s"])
    if y == 0 or h > 23 or mi > 59 or s > 59 or not _is_real_date(y, mo, d):
        raise _rule(AT_UNREAL)
    offset_min = 0
    if m["sign"] is not None:
        oh, om = int(m["oh"]), int(m["om"])
        if oh > 23 or om > 59 or (m["sign"] == "-" and oh == 0 and om == 0):
            raise _rule(AT_OFFSET)
        offset_min = (oh * 60 + om) * (1 if m["sign"] == "+" else -1)
    return _fields_ms(y, mo, d, h, mi, s, _millis(m["f"])) - offset_min * 60_000


def _zone(name: str) -> tzinfo:
    """Rules for a canonical zone name (``UTC`` or a name vetted by ``canonicalize_time_zone``)."""
    return UTC if name == "UTC" else ZoneInfo(name)


def _offset_ms(moment: datetime) -> int:
    """The UTC offset of an aware ``moment``, in ms."""
    offset = moment.utcoffset()
    assert offset is not None  # every tzinfo here (timezone.utc, ZoneInfo) gives one
    return offset // _ONE_MS


def local_to_instant(
    y: int, mo: int, d: int, h: int, mi: int, s: int, milli: int, zone_name: str
) -> int:
    """Epoch ms of a real local wall time in a canonical zone (schedule §5.4.2).

    An ambiguous (overlap) time gives the earlier instant; a time in a gap raises
    ``invalid_rule``; a result outside years 0001–9999 raises ``time_out_of_range`` (range
    is checked before the gap). ``zone_name`` must come from ``canonicalize_time_zone``.
    """
    zone = _zone(zone_name)
    local = _fields_ms(y, mo, d, h, mi, s, milli)
    o0 = _offset_ms(datetime(y, mo, d, h, mi, s, milli * 1000, tzinfo=zone, fold=0))
    t = local - o0
    if t < MIN_INSTANT_MS or t > MAX_INSTANT_MS:
        raise ScheduleInputError("time_out_of_range", OUT_OF_RANGE)
    o1: int | None
    try:
        o1 = _offset_ms((_EPOCH + timedelta(milliseconds=t)).astimezone(zone))
    except OverflowError:  # the local projection leaves datetime's range: not this wall time
        o1 = None
    if o1 != o0:
        raise _rule(LOCAL_GAP)
    return t


def resolve_local_at(at: Mapping[object, object]) -> int:
    """Epoch ms of a local ``{date, time, time_zone}`` object (schedule §5.3 steps 3–8).

    Checks in order: key set, date/time types, zone type, date/time shape, field ranges,
    calendar date, zone (``canonicalize_time_zone``), local resolution. The result is not
    range-checked against the clock (see ``check_target``).
    """
    if set(at) != _LOCAL_KEYS:
        raise _rule(LOCAL_KEYS)
    day_text, time_text, zone = at["date"], at["time"], at["time_zone"]
    if not isinstance(day_text, str) or not isinstance(time_text, str):
        raise _rule(LOCAL_TYPES)
    if not isinstance(zone, str):
        raise ScheduleInputError("invalid_time_zone", ZONE_NOT_STRING)
    dm = _LOCAL_DATE.fullmatch(day_text)
    tm = _LOCAL_TIME.fullmatch(time_text)
    if dm is None or tm is None:
        raise _rule(LOCAL_SHAPE)
    y, mo, d = int(dm[1]), int(dm[2]), int(dm[3])
    h, mi, s = int(tm[1]), int(tm[2]), int(tm[3])
    if y == 0 or h > 23 or mi > 59 or s > 59:
        raise _rule(LOCAL_UNREAL)
    if not _is_real_date(y, mo, d):
        raise _rule(AT_UNREAL)
    name = canonicalize_time_zone(zone)
    return local_to_instant(y, mo, d, h, mi, s, _millis(tm[4]), name)


def now_sample(now_ms: object) -> int:
    """The clock sample as an ``int``; ``time_out_of_range`` if it is not a safe integer."""
    now = safe_int(now_ms)
    if now is None:
        raise ScheduleInputError("time_out_of_range", OUT_OF_RANGE)
    return now


def check_target(t: int, now_ms: object) -> str:
    """The range and future check (schedule §5.5): ``scheduledAt`` of target ``t``.

    ``time_out_of_range`` if ``now_ms`` is not a safe integer or ``t`` is outside years
    0001–9999; ``not_future`` if ``t <= now_ms``.
    """
    now = now_sample(now_ms)
    if t < MIN_INSTANT_MS or t > MAX_INSTANT_MS:
        raise ScheduleInputError("time_out_of_range", OUT_OF_RANGE)
    if t <= now:
        raise ScheduleInputError("not_future", NOT_FUTURE)
    return values.format_instant(t)
