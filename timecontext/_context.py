"""``TimeContext``: the pre-step hook that appends a time reading (time-context §3,
time-context §8, time-context §10).

Settings are checked and the display fallback is resolved once, at construction. After that
the hook keeps no state: each result is a pure function of the call's arguments, one clock
sample and those settings, so one instance can serve every session.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Mapping

from eventlog.values import MAX_SAFE_INTEGER, Clock

from ._errors import TimeContextConfigError, decimal_text, json_text
from ._hook import Decision, Enter, PreStep, Reject, ZoneCanonicalizer
from ._render import reading_message, render_reading
from ._scan import latest_message_time, latest_reading_time, open_turn
from ._zones import client_zones, process_zone


def _js_string(value: object) -> str:
    """JavaScript's ``String(value)`` in the cases a setting can take (time-context §10)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    if isinstance(value, int):
        return decimal_text(value)
    return str(value)


def refresh_interval(value: object) -> int:
    """``refreshIntervalMs`` as an int (time-context §10): ``None`` is 0; otherwise a safe integer >= 0.

    An integral finite float is accepted as its int. Anything else raises
    ``TimeContextConfigError``, naming the value as JavaScript's ``String()`` would.
    """
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        number: int | None = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    else:
        number = None
    if number is None or not 0 <= number <= MAX_SAFE_INTEGER:
        raise TimeContextConfigError(
            "time-context: refreshIntervalMs must be a non-negative safe integer, "
            f"got {_js_string(value)}"
        )
    return number


def configured_zone(value: object, canonicalize: ZoneCanonicalizer) -> str:
    """The canonical form of a configured ``timeZone`` (time-context §8.2), or ``TimeContextConfigError``.

    The value must be a string that ``canonicalize`` accepts: the shape gate and the lookup are
    the shared canonicaliser's (time-context §12). Its refusal is the error's ``__cause__``
    (time-context §8.3).
    """
    message = f"time-context: invalid IANA timeZone {json_text(value)}"
    if not isinstance(value, str):
        raise TimeContextConfigError(message)
    try:
        return canonicalize(value)
    except Exception as exc:
        raise TimeContextConfigError(message) from exc


class TimeContext:
    """The pre-step hook of timecontext (implements ``PreStepHook``).

    ``pre_step`` returns the decision unchanged (no reading) for a reject, a cancelled turn, an
    empty batch that would open no step, or when the refresh interval has not elapsed since the
    latest reading in the log. Otherwise it returns ``Enter`` with the batch followed by one
    reading message, always last. Its only I/O is one ``clock.now_ms()`` per eligible call; it
    raises ``ClientZoneError`` for a bad ``clientTimeZone`` in the open turn, and ``TypeError``
    when the clock gives no int.

    Construction raises ``TimeContextConfigError`` for a bad ``refresh_interval_ms`` (checked
    first), a ``time_zone`` the canonicaliser refuses, or, without ``time_zone``, a ``TZ`` that
    names no zone. ``environ`` (default ``os.environ``) and ``localtime_path`` are read only here.
    """

    __slots__ = ("_canonicalize", "_clock", "_fallback_zone", "_refresh_interval_ms")

    def __init__(
        self,
        clock: Clock,
        *,
        canonicalize: ZoneCanonicalizer,
        time_zone: object = None,
        refresh_interval_ms: object = None,
        environ: Mapping[str, str] | None = None,
        localtime_path: str = "/etc/localtime",
    ) -> None:
        self._refresh_interval_ms = refresh_interval(refresh_interval_ms)
        if time_zone is None:
            zone = process_zone(
                os.environ if environ is None else environ, localtime_path, canonicalize
            )
        else:
            zone = configured_zone(time_zone, canonicalize)
        self._clock = clock
        self._canonicalize = canonicalize
        self._fallback_zone = zone

    @property
    def fallback_zone(self) -> str:
        """Canonical zone used to display the clock when the turn has no unique client zone."""
        return self._fallback_zone

    @property
    def refresh_interval_ms(self) -> int:
        """Minimum age of the latest reading before another is added; 0 adds one every step."""
        return self._refresh_interval_ms

    def pre_step(self, pre: PreStep, decision: Decision) -> Decision:
        """The algorithm of time-context §3.3: maybe append one reading, last, to an entering batch."""
        if isinstance(decision, Reject) or pre.cancelled:
            return decision
        if not decision.messages and not pre.continuation:
            return decision
        now = self._clock.now_ms()
        # The gate and the text do integer arithmetic on it; a float would pass the gate and
        # render silently, so refuse it here, naming the clock rather than a formatter.
        if not isinstance(now, int) or isinstance(now, bool):
            raise TypeError(
                "time-context: clock.now_ms() must return an int of epoch ms, "
                f"got {type(now).__name__}"
            )
        events = pre.events
        end = len(events)
        turn = open_turn(events, end, pre.turn)
        if self._refresh_interval_ms > 0:
            # The walk above already met the latest reading unless it stopped at turn/start.
            latest = turn.reading_time
            if latest is None and turn.start >= 0:
                latest = latest_reading_time(events, turn.start)
            if latest is not None and 0 <= now - latest < self._refresh_interval_ms:
                return decision
        zones = client_zones(
            itertools.chain(turn.messages, decision.messages), self._canonicalize
        )
        baseline = latest_message_time(events, end) if pre.step == 1 else turn.reading_time
        text = render_reading(pre.turn, pre.step, now, zones, self._fallback_zone, baseline)
        return Enter(tuple(decision.messages) + (reading_message(text),))

    def __repr__(self) -> str:
        return (
            f"TimeContext(fallback_zone={self._fallback_zone!r}, "
            f"refresh_interval_ms={self._refresh_interval_ms})"
        )
