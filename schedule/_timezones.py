"""The one shared time-zone canonicaliser of turnlog (schedule §5.4.1).

The host uses it for ``clientTimeZone``; timecontext receives it as ``canonicalize``.
The canonical name only selects rules; it is never stored by schedule.
"""

from __future__ import annotations

import functools
import re
import zoneinfo
from importlib import resources

from ._errors import ScheduleInputError

_SHAPE = re.compile(r"[A-Za-z][A-Za-z0-9_+.-]*(?:/[A-Za-z0-9_+.-]+)+", re.ASCII)

_UTC_ALIASES = frozenset(
    {
        "Etc/UTC",
        "Etc/UCT",
        "Etc/Universal",
        "Etc/Zulu",
        "Etc/GMT",
        "Etc/GMT0",
        "Etc/GMT+0",
        "Etc/GMT-0",
        "Etc/Greenwich",
    }
)

_INVALID = "time_zone must be UTC or a valid IANA Area/Location name."
_UNRESOLVED = "time_zone must resolve to UTC or an IANA Area/Location name."


@functools.cache
def _available() -> dict[str, str]:
    """Lower-cased name -> name, over ``zoneinfo.available_timezones()``."""
    return {name.lower(): name for name in zoneinfo.available_timezones()}


@functools.cache
def _tzdata_tables() -> tuple[frozenset[str], dict[str, str]]:
    """(names listed in zone.tab, link -> target from tzdata.zi), read once."""
    base = resources.files("tzdata").joinpath("zoneinfo")
    listed: set[str] = set()
    for line in base.joinpath("zone.tab").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            fields = line.split("\t")
            if len(fields) >= 3:
                listed.add(fields[2])
    links: dict[str, str] = {}
    for line in base.joinpath("tzdata.zi").read_text(encoding="utf-8").splitlines():
        if line.startswith("L "):
            _, target, link = line.split()[:3]
            links[link] = target
    return frozenset(listed), links


def canonicalize_time_zone(name: str) -> str:
    """Return the canonical name of ``name`` or raise ``ScheduleInputError``.

    ``"UTC"`` and every UTC alias give ``"UTC"``; a name listed in tzdata's ``zone.tab``
    is kept as it is; any other name follows tzdata's link lines to its zone. Lookup is
    case-insensitive; padded, slash-less, ``posix/``/``right/`` and unknown names are
    refused (code ``invalid_time_zone``). Idempotent: every result is accepted again and
    maps to itself.
    """
    if not isinstance(name, str):
        raise ScheduleInputError("invalid_time_zone", _INVALID)
    if name == "UTC":
        return "UTC"
    if not _SHAPE.fullmatch(name):
        raise ScheduleInputError("invalid_time_zone", _INVALID)
    found = _available().get(name.lower())
    if found is None:
        raise ScheduleInputError("invalid_time_zone", _INVALID)
    listed, links = _tzdata_tables()
    primary = found
    seen = {primary}
    while primary not in listed and primary in links:
        primary = links[primary]
        if primary in seen:  # a link cycle would be a broken tzdata; stop where we are
            break
        seen.add(primary)
    if primary in _UTC_ALIASES:
        return "UTC"
    if not _SHAPE.fullmatch(primary):
        raise ScheduleInputError("invalid_time_zone", _UNRESOLVED)
    return primary
