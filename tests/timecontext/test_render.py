"""Reading text, timestamps, durations and the logged message (time-context §4-6, time-context §11)."""

from __future__ import annotations

import calendar
import json
import re
import zoneinfo
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timecontext import (
    format_duration,
    format_timestamp,
    policy_line,
    reading_message,
    render_reading,
)

from .support import B


def utc_ms(year: int, month: int, day: int, hour: int = 0, minute: int = 0,
           second: int = 0) -> int:
    """Epoch ms of a UTC calendar time, computed by the standard library."""
    return calendar.timegm((year, month, day, hour, minute, second)) * 1000


# --- time-context §5: its table, then DST, odd offsets, truncation, ranges ----

@pytest.mark.parametrize(
    ("epoch_ms", "zone", "rendered"),
    [
        (1770724800000, "UTC", "2026-02-10T12:00:00+00:00[UTC]"),
        (1770724800000, "Europe/Lisbon", "2026-02-10T12:00:00+00:00[Europe/Lisbon]"),
        (1774745999999, "Europe/Berlin", "2026-03-29T01:59:59+01:00[Europe/Berlin]"),
        (1774746000000, "Europe/Berlin", "2026-03-29T03:00:00+02:00[Europe/Berlin]"),
        (1792888200000, "Europe/Berlin", "2026-10-25T02:30:00+02:00[Europe/Berlin]"),
        (1792891800000, "Europe/Berlin", "2026-10-25T02:30:00+01:00[Europe/Berlin]"),
        (1770724800000, "Asia/Kathmandu", "2026-02-10T17:45:00+05:45[Asia/Kathmandu]"),
        (1770724800000, "Etc/GMT+5", "2026-02-10T07:00:00-05:00[Etc/GMT+5]"),
        (1798759800000, "Pacific/Kiritimati", "2027-01-01T13:30:00+14:00[Pacific/Kiritimati]"),
        (-2208988800000, "Asia/Shanghai", "1900-01-01T08:05:43+08:05:43[Asia/Shanghai]"),
    ],
)
def test_spec_table(epoch_ms: int, zone: str, rendered: str) -> None:
    assert format_timestamp(epoch_ms, zone) == rendered


@pytest.mark.parametrize(
    ("epoch_ms", "zone", "rendered"),
    [
        # New York, spring 2026: 02:00 EST becomes 03:00 EDT at 07:00Z on 8 March.
        (utc_ms(2026, 3, 8, 7, 0, 0) - 1, "America/New_York",
         "2026-03-08T01:59:59-05:00[America/New_York]"),
        (utc_ms(2026, 3, 8, 7, 0, 0), "America/New_York",
         "2026-03-08T03:00:00-04:00[America/New_York]"),
        # ... and autumn: 01:30 happens twice on 1 November.
        (utc_ms(2026, 11, 1, 5, 30, 0), "America/New_York",
         "2026-11-01T01:30:00-04:00[America/New_York]"),
        (utc_ms(2026, 11, 1, 6, 30, 0), "America/New_York",
         "2026-11-01T01:30:00-05:00[America/New_York]"),
        # Sydney, southern autumn: 03:00 AEDT becomes 02:00 AEST at 16:00Z on 4 April.
        (utc_ms(2026, 4, 4, 15, 30, 0), "Australia/Sydney",
         "2026-04-05T02:30:00+11:00[Australia/Sydney]"),
        (utc_ms(2026, 4, 4, 16, 30, 0), "Australia/Sydney",
         "2026-04-05T02:30:00+10:00[Australia/Sydney]"),
        # Lord Howe moves by half an hour.
        (B, "Australia/Lord_Howe", "2026-02-10T23:00:00+11:00[Australia/Lord_Howe]"),
        (utc_ms(2026, 7, 1, 0, 0, 0), "Australia/Lord_Howe",
         "2026-07-01T10:30:00+10:30[Australia/Lord_Howe]"),
        # Unusual offsets: -02:30 (Newfoundland summer), +13:45 (Chatham summer), +14:00,
        # -09:30, and the winter counterparts.
        (utc_ms(2026, 7, 1, 12, 0, 0), "America/St_Johns",
         "2026-07-01T09:30:00-02:30[America/St_Johns]"),
        (B, "America/St_Johns", "2026-02-10T08:30:00-03:30[America/St_Johns]"),
        (B, "Pacific/Chatham", "2026-02-11T01:45:00+13:45[Pacific/Chatham]"),
        (utc_ms(2026, 7, 1, 12, 0, 0), "Pacific/Chatham",
         "2026-07-02T00:45:00+12:45[Pacific/Chatham]"),
        (B, "Pacific/Kiritimati", "2026-02-11T02:00:00+14:00[Pacific/Kiritimati]"),
        (B, "Pacific/Marquesas", "2026-02-10T02:30:00-09:30[Pacific/Marquesas]"),
        (B, "Asia/Kolkata", "2026-02-10T17:30:00+05:30[Asia/Kolkata]"),
        # Local mean time with a negative seconds part.
        (utc_ms(1800, 1, 1, 0, 0, 0), "America/New_York",
         "1799-12-31T19:03:58-04:56:02[America/New_York]"),
    ],
)
def test_dst_boundaries_and_unusual_offsets(epoch_ms: int, zone: str, rendered: str) -> None:
    assert format_timestamp(epoch_ms, zone) == rendered


@pytest.mark.parametrize("zone", ["UTC", "Europe/London", "Africa/Abidjan", "Atlantic/Reykjavik",
                                  "Europe/Lisbon", "Etc/UTC", "America/Danmarkshavn"])
def test_zero_offset_is_never_z(zone: str) -> None:
    text = format_timestamp(B, zone)
    assert text == f"2026-02-10T12:00:00+00:00[{zone}]"
    assert "Z" not in text.split("[")[0]


@pytest.mark.parametrize(
    ("epoch_ms", "rendered"),
    [
        (0, "1970-01-01T00:00:00+00:00[UTC]"),
        (999, "1970-01-01T00:00:00+00:00[UTC]"),
        (1000, "1970-01-01T00:00:01+00:00[UTC]"),
        (-1, "1969-12-31T23:59:59+00:00[UTC]"),
        (-1000, "1969-12-31T23:59:59+00:00[UTC]"),
        (-1001, "1969-12-31T23:59:58+00:00[UTC]"),
        (B + 59999, "2026-02-10T12:00:59+00:00[UTC]"),
    ],
)
def test_seconds_are_truncated_with_floor_division(epoch_ms: int, rendered: str) -> None:
    assert format_timestamp(epoch_ms, "UTC") == rendered


def test_years_are_four_digits_and_bounded() -> None:
    first = utc_ms(1, 1, 1, 0, 0, 0)
    last = utc_ms(9999, 12, 31, 23, 59, 59)
    assert format_timestamp(first, "UTC") == "0001-01-01T00:00:00+00:00[UTC]"
    assert format_timestamp(utc_ms(999, 7, 4, 5, 6, 7), "UTC") == "0999-07-04T05:06:07+00:00[UTC]"
    assert format_timestamp(last + 999, "UTC") == "9999-12-31T23:59:59+00:00[UTC]"
    with pytest.raises(ValueError):
        format_timestamp(first - 1, "UTC")
    with pytest.raises(ValueError):
        format_timestamp(last + 1000, "UTC")
    # The wall time decides: the last UTC second is already year 10000 in Tokyo...
    with pytest.raises(ValueError):
        format_timestamp(last, "Asia/Tokyo")
    # ... and the last second of UTC year 0 is year 1 there (local mean time +09:18:59).
    assert format_timestamp(first - 1000, "Asia/Tokyo") == \
        "0001-01-01T09:18:58+09:18:59[Asia/Tokyo]"
    with pytest.raises(ValueError):
        format_timestamp(-(10**20), "UTC")
    with pytest.raises(ValueError):
        format_timestamp(10**20, "Europe/Berlin")


_ZONES = sorted(zoneinfo.available_timezones())
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@settings(max_examples=300, deadline=None)
@given(
    seconds=st.integers(utc_ms(2, 1, 1, 0, 0, 0) // 1000, utc_ms(9998, 12, 31, 0, 0, 0) // 1000),
    millis=st.integers(0, 999),
    zone=st.sampled_from(_ZONES),
)
def test_format_timestamp_agrees_with_zoneinfo(seconds: int, millis: int, zone: str) -> None:
    wall = (_EPOCH + timedelta(seconds=seconds)).astimezone(zoneinfo.ZoneInfo(zone))
    # isoformat pads the year to four digits, writes a zero offset as +00:00 and adds the
    # offset's seconds when it has some: the format of time-context §5 once microseconds are zero.
    assert format_timestamp(seconds * 1000 + millis, zone) == f"{wall.isoformat()}[{zone}]"


@pytest.mark.parametrize(
    "epoch_ms", [B + 0.5, float(B), float("nan"), float("inf"), True, "1", None]
)
def test_format_timestamp_takes_only_integer_milliseconds(epoch_ms: object) -> None:
    # time-context §5 formats an integer instant; a float would be truncated silently and NaN used to
    # fail deep in datetime with "cannot convert float NaN to integer".
    with pytest.raises(TypeError, match=r"^format_timestamp: epoch_ms must be an int, got "):
        format_timestamp(epoch_ms, "UTC")  # type: ignore[arg-type]


# --- time-context §6 durations -------------------------------------------------------------

@pytest.mark.parametrize(
    ("elapsed_ms", "text"),
    [
        (0, "0s"), (999, "0s"), (59999, "59s"), (60000, "1m 0s"), (3601000, "1h 1s"),
        (3660000, "1h 1m 0s"), (7384000, "2h 3m 4s"), (86820000, "1d 7m 0s"),
        (172805000, "2d 5s"), (34560005000, "400d 5s"), (-2500, "0s"),
        (86400000, "1d 0s"), (90061000, "1d 1h 1m 1s"), (-1, "0s"),
    ],
)
def test_duration_table(elapsed_ms: int, text: str) -> None:
    assert format_duration(elapsed_ms) == text


def test_duration_comes_from_the_millisecond_difference() -> None:
    baseline, now = B + 999, B + 1998  # …:00.999 and …:01.998
    assert format_duration(now - baseline) == "0s"


@pytest.mark.parametrize(
    "elapsed_ms", [90150.0, 1.5, float("nan"), float("-inf"), False, "5", None]
)
def test_format_duration_takes_only_integer_milliseconds(elapsed_ms: object) -> None:
    # time-context §6 works in integer ms, never floats: 90150.0 rendered as "1.0m 30.0s" and NaN as "nans",
    # text the validator's own pattern (time-context §13 check 2) refuses.
    with pytest.raises(TypeError, match=r"^format_duration: elapsed_ms must be an int, got "):
        format_duration(elapsed_ms)  # type: ignore[arg-type]


_DURATION = re.compile(r"(?:([0-9]+)d )?(?:([0-9]+)h )?(?:([0-9]+)m )?([0-9]+)s")


def parse_duration(text: str) -> int:
    match = _DURATION.fullmatch(text)
    assert match is not None, text
    days, hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    assert hours < 24 and minutes < 60 and seconds < 60
    assert all(g is None or not g.startswith("0") for g in match.groups()[:3])
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


@settings(max_examples=300, deadline=None)
@given(st.integers(-(10**12), 10**14), st.integers(-(10**12), 10**14))
def test_format_duration_is_monotonic_and_parses_back(a: int, b: int) -> None:
    low, high = sorted((a, b))
    assert parse_duration(format_duration(low)) == max(low, 0) // 1000
    assert parse_duration(format_duration(high)) == max(high, 0) // 1000
    assert parse_duration(format_duration(low)) <= parse_duration(format_duration(high))


# --- time-context §4 policy line and reading text ----------------------------------------

UNIQUE = ("Client time zone for this request: Europe/Berlin. "
          "Interpret otherwise-unqualified dates and times in this zone.")
MIXED = ('Client time zone for this request: mixed ["America/Sao_Paulo","Europe/Berlin"]. '
         "Ask the user to clarify otherwise-unqualified dates and times.")
MISSING = ("Client time zone for this request: unavailable. "
           "Ask the user to clarify otherwise-unqualified dates and times.")


def test_policy_lines() -> None:
    assert policy_line(()) == MISSING
    assert policy_line(("Europe/Berlin",)) == UNIQUE
    assert policy_line(("America/Sao_Paulo", "Europe/Berlin")) == MIXED
    assert policy_line(["Europe/Berlin", "America/Sao_Paulo", "Europe/Berlin"]) == MIXED
    assert policy_line(("UTC", "Asia/Tokyo")) == (
        'Client time zone for this request: mixed ["Asia/Tokyo","UTC"]. '
        "Ask the user to clarify otherwise-unqualified dates and times."
    )


def test_reading_unique_is_rendered_in_the_client_zone() -> None:
    text = render_reading(2, 1, B + 400, ("Europe/Berlin",), "Asia/Kolkata", B - 89750)
    assert text.split("\n") == [
        "Time sampled while preparing turn 2, step 1: 2026-02-10T13:00:00+01:00[Europe/Berlin]",
        UNIQUE,
        "Elapsed since the preceding model-visible message: 1m 30s.",
    ]
    assert not text.endswith("\n")


def test_reading_mixed_is_rendered_in_the_fallback_zone() -> None:
    text = render_reading(2, 2, B + 125000, ("America/Sao_Paulo", "Europe/Berlin"),
                          "Asia/Kolkata", B + 412)
    assert text == (
        "Time sampled while preparing turn 2, step 2: 2026-02-10T17:32:05+05:30[Asia/Kolkata]\n"
        f"{MIXED}\n"
        "Elapsed since the preceding step context: 2m 4s."
    )


def test_reading_missing_without_baseline() -> None:
    text = render_reading(1, 1, B, (), "Australia/Adelaide", None)
    assert text == (
        "Time sampled while preparing turn 1, step 1: "
        "2026-02-10T22:30:00+10:30[Australia/Adelaide]\n"
        f"{MISSING}\n"
        "Elapsed since the preceding model-visible message: unavailable."
    )


def test_reading_later_step_without_baseline_and_backward_clock() -> None:
    assert render_reading(12, 7, B, (), "UTC", None).endswith(
        "\nElapsed since the preceding step context: unavailable.")
    assert render_reading(3, 2, B - 2000, (), "UTC", B).split("\n")[::2] == [
        "Time sampled while preparing turn 3, step 2: 2026-02-10T11:59:58+00:00[UTC]",
        "Elapsed since the preceding step context: 0s.",
    ]


# --- time-context §11 the message --------------------------------------------------------

def test_reading_message_shape() -> None:
    text = "Time sampled…\nline 2\nline 3."
    assert reading_message(text) == {
        "role": "user",
        "source": {"kind": "plugin", "plugin": "time-context", "form": "snapshot",
                   "sections": [{"name": "time-context", "text": text}]},
        "content": [{"type": "text", "text": text}],
    }
    assert list(reading_message(text)) == ["role", "source", "content"]
    assert list(reading_message(text)["source"]) == ["kind", "plugin", "form", "sections"]
    assert reading_message(text) is not reading_message(text)


E1_TEXT = (
    "Time sampled while preparing turn 2, step 1: 2026-02-10T13:00:00+01:00[Europe/Berlin]\n"
    "Client time zone for this request: Europe/Berlin. Interpret otherwise-unqualified dates "
    "and times in this zone.\nElapsed since the preceding model-visible message: 1m 30s."
)

E8_LINE = (
    '{"type":"user/message","seq":11,"time":1770724800412,"data":{"id":"msg-6","role":"user",'
    '"source":{"kind":"plugin","plugin":"time-context","form":"snapshot","sections":[{"name":'
    '"time-context","text":"Time sampled while preparing turn 2, step 1: 2026-02-10T13:00:00+01:00'
    '[Europe/Berlin]\\nClient time zone for this request: Europe/Berlin. Interpret otherwise-'
    'unqualified dates and times in this zone.\\nElapsed since the preceding model-visible '
    'message: 1m 30s."}]},"content":[{"type":"text","text":"Time sampled while preparing turn 2, '
    "step 1: 2026-02-10T13:00:00+01:00[Europe/Berlin]\\nClient time zone for this request: "
    "Europe/Berlin. Interpret otherwise-unqualified dates and times in this zone.\\nElapsed "
    'since the preceding model-visible message: 1m 30s."}]},"surfaceOp":"append"}'
)


def test_e8_logged_line() -> None:
    """E8: the message, given an id in front, is exactly the data of the logged line."""
    assert render_reading(2, 1, B + 400, ("Europe/Berlin",), "UTC", B - 89750) == E1_TEXT
    data = {"id": "msg-6", **reading_message(E1_TEXT)}
    line = json.dumps(
        {"type": "user/message", "seq": 11, "time": 1770724800412, "data": data,
         "surfaceOp": "append"},
        separators=(",", ":"), ensure_ascii=False,
    )
    assert line == E8_LINE
