"""Typed errors of the timecontext package (time-context §7.2, time-context §8.3,
time-context §13), and the text that names a bad value inside their messages.

Every error is a ``ValueError`` whose message is one line, worded exactly as docs/time-context.md
words it.
"""

from __future__ import annotations

import json

# Digits per chunk when an int is too long for str(): below the smallest limit Python allows
# (sys.get_int_max_str_digits() is 0 or at least 640), so each chunk converts.
_CHUNK_DIGITS = 600
_CHUNK = 10**_CHUNK_DIGITS


def decimal_text(number: int) -> str:
    """``number`` in decimal, even past ``sys.get_int_max_str_digits()``.

    A setting or a logged integer can be longer than ``str()`` converts (it raises
    ``ValueError``); naming it in an error message must not fail.
    """
    number = int(number)
    try:
        return str(number)
    except ValueError:
        pass
    chunks: list[int] = []
    rest = abs(number)
    while rest:
        rest, chunk = divmod(rest, _CHUNK)
        chunks.append(chunk)
    head, *tail = reversed(chunks)
    sign = "-" if number < 0 else ""
    return sign + str(head) + "".join(f"{chunk:0{_CHUNK_DIGITS}d}" for chunk in tail)


def json_text(value: object) -> str:
    """``json.dumps(value, ensure_ascii=False, default=str)``: how time-context §8.3 names a value.

    An int is written in decimal at any length. A value JSON cannot write at all (a cycle, a
    key that is no str, a huge int inside a container) is named by its type instead, so the
    error that quotes it is still raised.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return decimal_text(value)
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return f"<{type(value).__name__} that JSON cannot write>"


class ClientZoneError(ValueError):
    """A ``clientTimeZone`` of the open turn is not a canonical, supported zone (time-context §7.2)."""


class TimeContextConfigError(ValueError):
    """``TimeContext`` cannot be constructed: a bad setting or no system zone (time-context §8.3)."""


class ReadingInvariantError(ValueError):
    """A time reading already in a log breaks one of the replay checks (time-context §13)."""
