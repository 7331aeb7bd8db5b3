"""Times as people read them (host §7, "Times"): a wall clock in the user's zone with a relative
hint, ``09:18 (in 5 min)``, and the same hint after the UTC instants a text shows,
``2026-12-02T01:18:14.448Z (09:18 in Asia/Shanghai, in 5 min)``. Pure: the zone and "now" are
arguments.

The user's zone is the process zone chat sends as ``clientTimeZone`` (``timecontext.sampled_zone``
by time-context §8.2 rules 1–3); when none can be sampled, times are shown in UTC and say so.
What the model and the log receive is never changed by any of this: it is display only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo

import schedule
import timecontext

_INSTANT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Zone:
    """A display zone: its canonical name (``UTC`` included) and rules."""

    name: str
    info: tzinfo

    @classmethod
    def named(cls, name: str | None) -> Zone:
        """The zone ``name`` (canonical, as ``schedule.canonicalize_time_zone`` returns), or UTC."""
        if name is None or name == "UTC":
            return cls("UTC", UTC)
        return cls(name, ZoneInfo(name))


def user_zone(environ: Mapping[str, str] = os.environ, *, utc: bool = False) -> Zone:
    """The zone to show times in: UTC with ``utc`` (``--utc``), else the process zone of
    time-context §8.2 rules 1–3 (``TZ``, else the ``/etc/localtime`` link), else UTC."""
    if utc:
        return Zone.named(None)
    return Zone.named(timecontext.sampled_zone(environ, "/etc/localtime", schedule.canonicalize_time_zone))


def _local(ms: int, zone: Zone) -> datetime:
    return (_EPOCH + timedelta(milliseconds=ms)).astimezone(zone.info)


def clock(ms: int, zone: Zone, now_ms: int) -> str:
    """The wall clock of ``ms`` in ``zone``, with as much date as it needs seen from ``now_ms``:
    ``09:18``, ``tomorrow 09:18``, ``yesterday 09:18``, ``Fri 4 Dec 09:18`` within a week,
    ``2026-12-24 09:18`` beyond. An instant outside years 1–9999 is its ISO text or the integer."""
    try:
        when, now = _local(ms, zone), _local(now_ms, zone)
    except OverflowError:
        return str(ms)
    hm = f"{when.hour:02d}:{when.minute:02d}"
    days = (when.date() - now.date()).days
    if days == 0:
        return hm
    if days == 1:
        return f"tomorrow {hm}"
    if days == -1:
        return f"yesterday {hm}"
    if -6 <= days <= 6:
        return f"{when.strftime('%a')} {when.day} {when.strftime('%b')} {hm}"
    return f"{when.year:04d}-{when.month:02d}-{when.day:02d} {hm}"


def span(ms: int) -> str:
    """A duration as people say it: ``45 s``, ``5 min``, ``2 h 5 min``, ``3 days``, ``5 weeks``,
    ``4 months``, ``56 years``."""
    seconds = abs(ms) // 1000
    if seconds < 60:
        return f"{seconds} s"
    minutes = (seconds + 30) // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, rest = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {rest} min" if rest else f"{hours} h"
    days = (hours + 12) // 24
    if days < 14:
        return "1 day" if days == 1 else f"{days} days"
    if days < 60:
        return f"{(days + 3) // 7} weeks"
    if days < 730:
        return f"{(days + 15) // 30} months"
    return f"{days // 365} years"


def relative(ms: int, now_ms: int) -> str:
    """``in 5 min``, ``5 min ago``, or ``now`` within a second."""
    delta = ms - now_ms
    if abs(delta) < 1000:
        return "now"
    return f"in {span(delta)}" if delta > 0 else f"{span(delta)} ago"


def when(ms: int, zone: Zone, now_ms: int) -> str:
    """``09:18 (in 5 min)``."""
    return f"{clock(ms, zone, now_ms)} ({relative(ms, now_ms)})"


def instant_note(text: str, zone: Zone, now_ms: int) -> str | None:
    """``(09:18 in Asia/Shanghai, in 5 min)`` for a canonical UTC instant ``text``; ``None`` for
    anything else (a calendar-invalid instant included)."""
    try:
        ms = schedule.parse_instant(text)
    except schedule.ScheduleLogError:
        return None
    where = "UTC" if zone.name == "UTC" else f"in {zone.name}"
    return f"({clock(ms, zone, now_ms)} {where}, {relative(ms, now_ms)})"


def annotate(text: str, zone: Zone, now_ms: int) -> str:
    """``text`` with :func:`instant_note` after every canonical UTC instant it contains."""

    def note(m: re.Match[str]) -> str:
        extra = instant_note(m[0], zone, now_ms)
        return m[0] if extra is None else f"{m[0]} {extra}"

    return _INSTANT.sub(note, text)
