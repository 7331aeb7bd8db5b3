"""Client zones of the open turn and the display fallback (time-context §7, time-context §8.2,
time-context §12).

The zone lookup and the shape gate are never done here: both belong to the shared canonicaliser
the host passes in (``schedule.canonicalize_time_zone``). timecontext keeps only the shape
pattern, so that its first client-zone error message can tell a malformed value from an unknown
one.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ._errors import ClientZoneError, TimeContextConfigError
from ._hook import ZoneCanonicalizer

ZONE_SHAPE = re.compile(r"[A-Za-z][A-Za-z0-9_+.\-]*(?:/[A-Za-z0-9_+.\-]+)+", re.ASCII)
"""The shape of an IANA ``Area/Location`` name; use ``fullmatch``."""

_SYSTEM_ZONE_FAILED = "time-context: failed to resolve the system time zone"


def message_zone(message: Any) -> str | None:
    """The ``clientTimeZone`` a message contributes (time-context §7.1), or ``None``.

    Only a user source with a string ``rpcId`` and a string ``clientTimeZone`` contributes;
    readings, plugin messages, sources without ``rpcId`` or without a zone contribute nothing.
    """
    # dict first: decoded log data is always a dict, and the abc check costs several times more.
    if not isinstance(message, (dict, Mapping)):
        return None
    source = message.get("source")
    if not isinstance(source, (dict, Mapping)) or source.get("kind") != "user":
        return None
    zone = source.get("clientTimeZone")
    if not isinstance(source.get("rpcId"), str) or not isinstance(zone, str):
        return None
    return zone


def _quote(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def client_zones(messages: Iterable[Any], canonicalize: ZoneCanonicalizer) -> tuple[str, ...]:
    """The sorted distinct client zones of the open-turn ``messages`` (time-context §7).

    Each contributed value is checked in message order, before de-duplication, and the first
    bad one raises ``ClientZoneError``: not ``UTC`` or ``Area/Location`` shaped, refused by
    ``canonicalize``, or not already canonical. The result is sorted by code point.
    """
    zones: set[str] = set()
    for message in messages:
        zone = message_zone(message)
        if zone is None:
            continue
        if zone != "UTC" and ZONE_SHAPE.fullmatch(zone) is None:
            raise ClientZoneError(
                f"client time zone must be canonical UTC or IANA Area/Location: {_quote(zone)}"
            )
        try:
            canonical = canonicalize(zone)
        except Exception as exc:
            raise ClientZoneError(f"client time zone is unsupported: {_quote(zone)}") from exc
        if canonical != zone:
            raise ClientZoneError(f"client time zone must be canonical: {_quote(zone)}")
        zones.add(zone)
    return tuple(sorted(zones))


def _name_from_path(path: str) -> str | None:
    """time-context §8.2 rule 3: the components after the last ``zoneinfo``, without ``posix``/``right``.

    ``None`` when the path names no zone, including a path the OS cannot take (a NUL byte or a
    lone surrogate makes ``realpath`` raise ``ValueError``).
    """
    try:
        parts = os.path.realpath(path).split("/")
    except ValueError:
        return None
    if "zoneinfo" not in parts:
        return None
    rest = parts[len(parts) - parts[::-1].index("zoneinfo") :]
    if rest and rest[0] in ("posix", "right"):
        rest = rest[1:]
    return "/".join(rest)


def _system_zone(name: str | None, canonicalize: ZoneCanonicalizer) -> str:
    """The canonical form of the process zone ``name``; ``TimeContextConfigError`` (from the
    canonicaliser's refusal, if any) when it names no zone the canonicaliser accepts."""
    if name is None:
        raise TimeContextConfigError(_SYSTEM_ZONE_FAILED)
    try:
        return canonicalize(name)
    except Exception as exc:
        raise TimeContextConfigError(_SYSTEM_ZONE_FAILED) from exc


def _sample(
    environ: Mapping[str, str], localtime_path: str, canonicalize: ZoneCanonicalizer
) -> str | None:
    """time-context §8.2 rules 1-3: the process zone, ``None`` for rule 4, or raise when ``TZ`` fails."""
    if "TZ" in environ:
        value = environ["TZ"]
        if not isinstance(value, str):
            # Only a mapping other than os.environ can hold one; it names no zone.
            raise TimeContextConfigError(_SYSTEM_ZONE_FAILED)
        if value == "":
            return "UTC"
        value = value.removeprefix(":")
        name = _name_from_path(value) if value.startswith("/") else value
        return _system_zone(name, canonicalize)
    if os.path.islink(localtime_path):
        try:
            return _system_zone(_name_from_path(localtime_path), canonicalize)
        except TimeContextConfigError:
            return None  # rule 4: a link that names no accepted zone falls back
    return None


def process_zone(
    environ: Mapping[str, str], localtime_path: str, canonicalize: ZoneCanonicalizer
) -> str:
    """The process's canonical zone, for display only (time-context §8.2).

    ``TZ`` wins when set (empty means ``UTC``; one leading ``:`` is dropped; an absolute path
    names the zone after its last ``zoneinfo`` component); a ``TZ`` that names no accepted zone
    raises ``TimeContextConfigError``. Without ``TZ``, a symbolic link at ``localtime_path``
    names the zone when ``canonicalize`` accepts it. Otherwise the result is ``UTC``.
    """
    zone = _sample(environ, localtime_path, canonicalize)
    return "UTC" if zone is None else zone


def sampled_zone(
    environ: Mapping[str, str], localtime_path: str, canonicalize: ZoneCanonicalizer
) -> str | None:
    """The process zone by rules 1-3 of time-context §8.2 only, or ``None``.

    ``None`` wherever ``process_zone`` would fall back to ``UTC`` or raise, so a client that
    sends its own zone never passes a default off as the user's.
    """
    try:
        return _sample(environ, localtime_path, canonicalize)
    except TimeContextConfigError:
        return None
