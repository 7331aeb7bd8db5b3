"""JSON-safe values every turnlog package shares: safe integers, compact JSON text, canonical UTC
instants and the wall clock.

This module is the one home of these rules; ``schedule``, ``timecontext`` and ``host`` import them
from here (they may depend on ``eventlog``; ``eventlog`` depends on nothing of theirs). Everything
here is pure except ``SystemClock.now_ms``.

- A **safe integer** is an ``int`` that is not a ``bool`` with ``|n| <= 2**53 - 1``: the integers a
  JavaScript reader of the same log sees exactly.
- **Compact JSON** is ``json.dumps(v, separators=(",", ":"), ensure_ascii=False)``: no whitespace,
  raw non-ASCII, insertion order, and every lone surrogate written as a lowercase ``\\udxxx``
  escape so the text always encodes as UTF-8 (what JavaScript's ``JSON.stringify`` writes).
- A **canonical UTC instant** is ``YYYY-MM-DDTHH:MM:SS.mmmZ`` for years 0001-9999.
"""

from __future__ import annotations

import functools
import json
import re
import time as _time
from datetime import date
from typing import Any, Protocol, TypeGuard

__all__ = [
    "MAX_INSTANT_MS",
    "MAX_SAFE_INTEGER",
    "MIN_INSTANT_MS",
    "Clock",
    "SystemClock",
    "compact_json",
    "format_instant",
    "is_safe_int",
    "safe_int",
]

MAX_SAFE_INTEGER = 2**53 - 1
"""The largest integer a JSON number carries exactly to every reader: ``2**53 - 1``."""

MIN_INSTANT_MS = -62135596800000
"""``0001-01-01T00:00:00.000Z``, the first instant ``format_instant`` writes."""

MAX_INSTANT_MS = 253402300799999
"""``9999-12-31T23:59:59.999Z``, the last instant ``format_instant`` writes."""

_DAY_MS = 86_400_000
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_SURROGATE = re.compile("[\ud800-\udfff]")


def is_safe_int(value: object) -> TypeGuard[int]:
    """True for an ``int`` (never a ``bool``) within ``±(2**53 - 1)``."""
    return type(value) is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER


def safe_int(value: object) -> int | None:
    """``value`` as an ``int`` when it denotes a safe integer, else ``None``.

    JSON does not tell ``5`` from ``5.0``, so an integral float in range counts and becomes its
    ``int``; ``bool``, NaN and the infinities never do.
    """
    if type(value) is int:
        return value if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER else None
    if type(value) is float and value.is_integer() and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return int(value)
    return None


def compact_json(value: Any) -> str:
    """Compact JSON text of ``value``, lone surrogates escaped (see the module docstring).

    Exactly ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` otherwise: only ``"``,
    ``\\`` and U+0000-U+001F are escaped, keys keep insertion order (never sorted), and a float
    NaN or infinity is written as ``json`` writes it. Raises ``TypeError`` for a value JSON cannot
    hold and ``RecursionError`` for one nested too deeply.
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


@functools.lru_cache(maxsize=4096)
def _date_text(days: int) -> str:
    day = date.fromordinal(days + _EPOCH_ORDINAL)
    return f"{day.year:04d}-{day.month:02d}-{day.day:02d}T"


def format_instant(ms: int) -> str:
    """Epoch milliseconds as the canonical UTC instant ``YYYY-MM-DDTHH:MM:SS.mmmZ``.

    Raises ``TypeError`` unless ``ms`` is an ``int`` (a ``bool`` is not), and ``ValueError`` when
    it lies outside ``MIN_INSTANT_MS..MAX_INSTANT_MS`` (years 0001-9999). Callers that display
    arbitrary event times catch the ``ValueError`` and show the integer instead.
    """
    if type(ms) is not int:
        raise TypeError(f"an instant is an int of epoch milliseconds, not {type(ms).__name__}")
    if not MIN_INSTANT_MS <= ms <= MAX_INSTANT_MS:
        raise ValueError(f"instant {ms} is outside years 0001-9999")
    days, rest = divmod(ms, _DAY_MS)
    rest, milli = divmod(rest, 1000)
    rest, second = divmod(rest, 60)
    hour, minute = divmod(rest, 60)
    return f"{_date_text(days)}{hour:02d}:{minute:02d}:{second:02d}.{milli:03d}Z"


class Clock(Protocol):
    """The wall clock: integer epoch milliseconds. It may jump, so callers re-read it for every
    decision instead of caching a reading."""

    def now_ms(self) -> int: ...


class SystemClock:
    """The system wall clock, ``time.time_ns() // 1_000_000``."""

    def now_ms(self) -> int:
        return _time.time_ns() // 1_000_000
