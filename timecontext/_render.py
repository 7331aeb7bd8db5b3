"""The text of a time reading and the message that carries it (time-context §4-6, time-context §11).

Pure functions over values: nothing here reads a clock, a file or the environment.
"""

from __future__ import annotations

import json
import zoneinfo
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from eventlog.values import MAX_INSTANT_MS, MIN_INSTANT_MS

PLUGIN = "time-context"
"""``source.plugin`` of every reading, and the name of its one section."""

STEP_ONE_BASELINE = "model-visible message"
LATER_STEP_BASELINE = "step context"
UNAVAILABLE = "unavailable"

_POLICY_PREFIX = "Client time zone for this request: "
_ASK = "Ask the user to clarify otherwise-unqualified dates and times."

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_DAY = 86_400
# Epoch seconds of 0001-01-01T00:00:00 and 9999-12-31T23:59:59 as wall times.
_MIN_WALL = MIN_INSTANT_MS // 1000
_MAX_WALL = MAX_INSTANT_MS // 1000
# The offset is probed at an instant datetime can always convert: no zone changes its offset
# in the first or last day of that range, and every offset is shorter than a day.
_MIN_PROBE = _MIN_WALL + _DAY
_MAX_PROBE = _MAX_WALL - _DAY


def _require_ms(function: str, name: str, value: object) -> None:
    """Refuse a non-integer millisecond count (a ``bool`` too): time-context §5 and time-context §6
    work in integer ms, and a float would otherwise be truncated silently or rendered as
    ``1.0m 30.0s``."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{function}: {name} must be an int, got {type(value).__name__}")


def format_timestamp(epoch_ms: int, zone: str) -> str:
    """``YYYY-MM-DDTHH:MM:SS±HH:MM[zone]`` for the instant ``epoch_ms`` in ``zone`` (time-context §5).

    The instant is truncated to whole seconds with floor division (right before 1970 too).
    The offset is the zone's UTC offset at that instant, always signed, ``+00:00`` for zero
    (never ``Z``), and ``±HH:MM:SS`` when it has a seconds part (local mean time). ``zone`` is
    looked up with ``zoneinfo.ZoneInfo`` and written as given inside the brackets. Raises
    ``ValueError`` when the wall time falls outside the years 0001-9999, ``TypeError`` when
    ``epoch_ms`` is not an int, and zoneinfo's errors for an unknown zone.
    """
    _require_ms("format_timestamp", "epoch_ms", epoch_ms)
    tz = zoneinfo.ZoneInfo(zone)
    seconds = epoch_ms // 1000
    probe = _EPOCH + timedelta(seconds=min(max(seconds, _MIN_PROBE), _MAX_PROBE))
    offset = probe.astimezone(tz).utcoffset() or timedelta(0)
    offset_seconds = offset // timedelta(seconds=1)
    wall_seconds = seconds + offset_seconds
    if not _MIN_WALL <= wall_seconds <= _MAX_WALL:
        raise ValueError(
            f"instant {epoch_ms} ms is outside the years 0001-9999 in time zone {zone}"
        )
    wall = datetime(1970, 1, 1) + timedelta(seconds=wall_seconds)
    return (
        f"{wall.year:04d}-{wall.month:02d}-{wall.day:02d}"
        f"T{wall.hour:02d}:{wall.minute:02d}:{wall.second:02d}"
        f"{_format_offset(offset_seconds)}[{zone}]"
    )


def _format_offset(total: int) -> str:
    sign = "+" if total >= 0 else "-"
    hours, rest = divmod(abs(total), 3600)
    minutes, seconds = divmod(rest, 60)
    text = f"{sign}{hours:02d}:{minutes:02d}"
    return f"{text}:{seconds:02d}" if seconds else text


def format_duration(elapsed_ms: int) -> str:
    """Compact whole-second duration (time-context §6): ``2h 3m 4s``, ``1d 7m 0s``, ``0s``.

    A negative value counts as 0. Days, hours and minutes appear only when non-zero;
    seconds always appear. No padding, no weeks; days are unbounded. ``TypeError`` when
    ``elapsed_ms`` is not an int.
    """
    _require_ms("format_duration", "elapsed_ms", elapsed_ms)
    total = max(elapsed_ms, 0) // 1000
    days, rest = divmod(total, _DAY)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [f"{n}{unit}" for n, unit in ((days, "d"), (hours, "h"), (minutes, "m")) if n > 0]
    parts.append(f"{seconds}s")
    return " ".join(parts)


def policy_line(zones: Sequence[str]) -> str:
    """Line 2 of a reading for the open turn's client zones (time-context §4, time-context §7.3).

    No zone is *missing*, one is *unique*, two or more distinct zones are *mixed* (listed
    sorted by code point as compact JSON). ``zones`` is normally ``client_zones``' result;
    duplicates and order do not matter.
    """
    distinct = sorted(set(zones))
    if not distinct:
        return f"{_POLICY_PREFIX}{UNAVAILABLE}. {_ASK}"
    if len(distinct) == 1:
        return (
            f"{_POLICY_PREFIX}{distinct[0]}. "
            "Interpret otherwise-unqualified dates and times in this zone."
        )
    listed = json.dumps(distinct, separators=(",", ":"), ensure_ascii=False)
    return f"{_POLICY_PREFIX}mixed {listed}. {_ASK}"


def render_reading(
    turn: int,
    step: int,
    now_ms: int,
    zones: Sequence[str],
    fallback_zone: str,
    baseline_ms: int | None,
) -> str:
    """The three lines of a reading (time-context §4), joined by LF, without a trailing newline.

    The clock is shown in the unique client zone, else in ``fallback_zone`` (time-context §8.1). The
    elapsed time runs from ``baseline_ms`` to ``now_ms`` (time-context §6), or is ``unavailable`` when there
    is no baseline (time-context §9). Step 1 measures from the preceding model-visible message, later
    steps from the preceding step context.
    """
    distinct = sorted(set(zones))
    display = distinct[0] if len(distinct) == 1 else fallback_zone
    phrase = STEP_ONE_BASELINE if step == 1 else LATER_STEP_BASELINE
    elapsed = UNAVAILABLE if baseline_ms is None else format_duration(now_ms - baseline_ms)
    return (
        f"Time sampled while preparing turn {turn}, step {step}: "
        f"{format_timestamp(now_ms, display)}\n"
        f"{policy_line(distinct)}\n"
        f"Elapsed since the preceding {phrase}: {elapsed}."
    )


def reading_message(text: str) -> dict[str, Any]:
    """The batch message carrying a reading (time-context §11): exactly these keys, text in both places.

    The host adds the message ``id`` when it appends it, as for every batch message.
    """
    return {
        "role": "user",
        "source": {
            "kind": "plugin",
            "plugin": PLUGIN,
            "form": "snapshot",
            "sections": [{"name": PLUGIN, "text": text}],
        },
        "content": [{"type": "text", "text": text}],
    }
