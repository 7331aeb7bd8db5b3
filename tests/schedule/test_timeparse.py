"""Canonical instants (schedule §2.3), strict `at` strings (schedule §5.2) and the range/future
check (schedule §5.5)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from eventlog.values import MAX_INSTANT_MS as MAX_MS
from eventlog.values import MIN_INSTANT_MS as MIN_MS
from schedule import ScheduleInputError, ScheduleLogError, create_at, format_instant, parse_instant

NOW = 1799568000000  # 2027-01-10T08:00:00.000Z
SHAPE = "scheduledAt must be a canonical four-digit-year RFC 3339 UTC instant"
UNREAL = "scheduledAt is not a real UTC calendar instant"
AT_SHAPE = (
    "at must use YYYY-MM-DDTHH:mm:ss with optional 1-3 digit fractional seconds and an explicit"
    " Z or numeric offset."
)
AT_UNREAL = "The at value must be a real ISO calendar date and time."
AT_OFFSET = "The at numeric offset is invalid."
RANGE = "The scheduled time must be representable as a four-digit-year RFC 3339 UTC instant."
NOT_FUTURE = "The scheduled time must be strictly in the future."

_YEAR1 = datetime(1, 1, 1, tzinfo=UTC)


def oracle(ms: int) -> str:
    """The canonical text of ``ms``, computed with datetime (independent of the code under test)."""
    d = _YEAR1 + timedelta(milliseconds=ms - MIN_MS)
    return (
        f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{d.hour:02d}:{d.minute:02d}:{d.second:02d}"
        f".{d.microsecond // 1000:03d}Z"
    )


def test_constants() -> None:
    assert MIN_MS == -62135596800000 and MAX_MS == 253402300799999
    assert oracle(MIN_MS) == "0001-01-01T00:00:00.000Z"
    assert oracle(MAX_MS) == "9999-12-31T23:59:59.999Z"


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (0, "1970-01-01T00:00:00.000Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (NOW, "2027-01-10T08:00:00.000Z"),
        (MIN_MS, "0001-01-01T00:00:00.000Z"),
        (MAX_MS, "9999-12-31T23:59:59.999Z"),
        (951782400000, "2000-02-29T00:00:00.000Z"),
        (-2203891200000, "1900-03-01T00:00:00.000Z"),
        (-62104060800001, "0001-12-31T23:59:59.999Z"),
    ],
)
def test_format_and_parse_known_instants(ms: int, text: str) -> None:
    assert oracle(ms) == text
    assert format_instant(ms) == text
    assert parse_instant(text) == ms


@pytest.mark.parametrize("bad", [MIN_MS - 1, MAX_MS + 1, True, 1.0, "0", None])
def test_format_instant_rejects_values_outside_its_domain(bad: object) -> None:
    with pytest.raises(ValueError):
        format_instant(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        "0000-01-01T00:00:00.000Z",
        "2027-01-10T08:00:00Z",
        "2027-01-10T08:00:00.00Z",
        "2027-01-10T08:00:00.0000Z",
        "2027-01-10T08:00:00.000z",
        "2027-01-10t08:00:00.000Z",
        "2027-01-10 08:00:00.000Z",
        "2027-01-10T08:00:00.000+00:00",
        "2027-01-10T08:00:00.000Z\n",
        " 2027-01-10T08:00:00.000Z",
        "12027-01-10T08:00:00.000Z",
        "2027-1-10T08:00:00.000Z",
        "2027-13-10T08:00:00.000Z",
        "2027-00-10T08:00:00.000Z",
        "2027-01-00T08:00:00.000Z",
        "2027-01-32T08:00:00.000Z",
        "2027-01-10T24:00:00.000Z",
        "2027-01-10T08:60:00.000Z",
        "2027-01-10T08:00:60.000Z",
        "２０２７-01-10T08:00:00.000Z",
        "2027-01-10T08:00:00,000Z",
        "",
    ],
)
def test_parse_instant_shape_errors(text: str) -> None:
    with pytest.raises(ScheduleLogError) as err:
        parse_instant(text)
    assert err.value.message == SHAPE and err.value.code == "corrupt_schedule_log"


@pytest.mark.parametrize("value", [None, 5, b"2027-01-10T08:00:00.000Z", ["x"]])
def test_parse_instant_non_string_is_a_shape_error(value: object) -> None:
    with pytest.raises(ScheduleLogError, match=f"^{SHAPE}$"):
        parse_instant(value)


@pytest.mark.parametrize(
    "text",
    ["2027-02-29T00:00:00.000Z", "2026-04-31T00:00:00.000Z", "1900-02-29T00:00:00.000Z",
     "2027-06-31T12:00:00.000Z", "0001-02-29T00:00:00.000Z"],
)
def test_parse_instant_reality_errors(text: str) -> None:
    with pytest.raises(ScheduleLogError) as err:
        parse_instant(text)
    assert err.value.message == UNREAL


def test_parse_instant_accepts_real_leap_days() -> None:
    assert parse_instant("2028-02-29T00:00:00.000Z") == 1835395200000
    assert format_instant(parse_instant("2000-02-29T23:59:59.999Z")) == "2000-02-29T23:59:59.999Z"
    assert format_instant(parse_instant("0004-02-29T00:00:00.000Z")) == "0004-02-29T00:00:00.000Z"


@settings(max_examples=300, deadline=None)
@given(st.integers(MIN_MS, MAX_MS))
def test_format_matches_datetime_and_round_trips(ms: int) -> None:
    text = format_instant(ms)
    assert text == oracle(ms)
    assert parse_instant(text) == ms


@settings(max_examples=300, deadline=None)
@given(st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z", fullmatch=True)
       | st.text(max_size=30))
def test_parse_instant_accepts_exactly_canonical_text(text: str) -> None:
    try:
        ms = parse_instant(text)
    except ScheduleLogError as err:
        assert err.message in (SHAPE, UNREAL)
    else:
        assert format_instant(ms) == text


# --- `at` strings through the public constructor -------------------------------------------


def at_error(at: object, now: object = NOW) -> tuple[str, str]:
    with pytest.raises(ScheduleInputError) as err:
        create_at("schedule-1", "p", at, now)
    return err.value.code, err.value.message


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        ("2027-01-11T09:15:00.5-03:00", "2027-01-11T12:15:00.500Z"),  # E2
        ("2027-01-11T09:15:00.05-03:00", "2027-01-11T12:15:00.050Z"),
        ("2027-01-11T09:15:00.005+00:00", "2027-01-11T09:15:00.005Z"),
        ("2027-01-11T09:15:00.123Z", "2027-01-11T09:15:00.123Z"),
        ("2027-01-11T09:15:00Z", "2027-01-11T09:15:00.000Z"),
        ("2027-01-11T00:30:00+05:45", "2027-01-10T18:45:00.000Z"),
        ("2027-01-10T08:00:00.001Z", "2027-01-10T08:00:00.001Z"),
        ("2027-01-10T00:00:00.001-08:00", "2027-01-10T08:00:00.001Z"),
        ("2027-01-11T09:15:00+23:59", "2027-01-10T09:16:00.000Z"),
        ("2027-01-11T09:15:00-23:59", "2027-01-12T09:14:00.000Z"),
        ("2028-02-29T23:59:59.999+14:00", "2028-02-29T09:59:59.999Z"),
        ("9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z"),
        ("9999-12-31T23:59:59.999+01:00", "9999-12-31T22:59:59.999Z"),
    ],
)
def test_at_string_resolves_to_the_utc_instant(at: str, expected: str) -> None:
    record = create_at("schedule-1", "p", at, NOW)
    assert record.scheduled_at == expected


@pytest.mark.parametrize(
    "at",
    [
        "2027-01-11T09:15:00-0300",  # E2
        "2027-01-11T09:15:00",
        "2027-01-11t09:15:00Z",
        "2027-01-11T09:15:00z",
        "2027-01-11 09:15:00Z",
        "2027-01-11T09:15:00,5Z",
        "2027-01-11T09:15:00.1234Z",
        "2027-01-11T09:15:00.Z",
        "2027-01-11T09:15:00+0800",
        "2027-01-11T09:15:00+08",
        "12027-01-11T09:15:00Z",
        "2027-01-11T09:15Z",
        "2027-1-11T09:15:00Z",
        "２０２７-01-11T09:15:00Z",
        "2027-01-11T09:15:00Z\n",
        " 2027-01-11T09:15:00Z",
        "2027-01-11T09:15:00Z ",
        "2027-01-11T09:15:00 Z",
        "2027-01-11T09:15:00+08:00:00",
        "",
    ],
)
def test_at_string_shape_errors(at: str) -> None:
    assert at_error(at) == ("invalid_rule", AT_SHAPE)


@pytest.mark.parametrize(
    "at",
    [
        "2027-02-29T09:15:00Z",  # E2
        "0000-01-11T09:15:00Z",
        "2027-01-11T24:00:00Z",
        "2027-01-11T23:60:00Z",
        "2027-01-11T23:59:60Z",
        "2027-13-11T09:15:00Z",
        "2027-00-11T09:15:00Z",
        "2027-01-00T09:15:00Z",
        "2027-04-31T09:15:00Z",
        "2100-02-29T09:15:00Z",
        "2027-01-32T09:15:00Z",
        "2027-02-29T09:15:00+24:00",  # the calendar is checked before the offset
    ],
)
def test_at_string_calendar_errors(at: str) -> None:
    assert at_error(at) == ("invalid_rule", AT_UNREAL)


@pytest.mark.parametrize(
    "at",
    ["2027-01-11T09:15:00-00:00", "2027-01-11T09:15:00+24:00", "2027-01-11T09:15:00+23:60",
     "2027-01-11T09:15:00-99:99", "2027-01-11T09:15:00.5-00:00"],
)
def test_at_string_offset_errors(at: str) -> None:
    assert at_error(at) == ("invalid_rule", AT_OFFSET)


def test_at_string_future_and_range_checks() -> None:
    assert at_error("2027-01-10T05:00:00-03:00") == ("not_future", NOT_FUTURE)  # E2: = now
    assert at_error("2027-01-10T07:59:59.999Z") == ("not_future", NOT_FUTURE)
    assert at_error("0001-01-01T00:00:00.000+00:01") == ("time_out_of_range", RANGE)
    assert at_error("9999-12-31T23:59:59.999-00:01") == ("time_out_of_range", RANGE)
    # a range failure beats the future check: a target before year 1 is out of range, not past
    assert at_error("0001-01-01T00:30:00+01:00") == ("time_out_of_range", RANGE)
    # ... and the future check is relative to the sample, whatever the sample's year
    assert create_at("a", "p", "0001-01-01T00:00:00.000Z", MIN_MS - 1).scheduled_at == (
        "0001-01-01T00:00:00.000Z"
    )


@pytest.mark.parametrize("now", [None, "1799568000000", True, 1.5, float("nan"), 2**53])
def test_unusable_clock_sample_is_out_of_range(now: object) -> None:
    assert at_error("2027-01-11T09:15:00Z", now) == ("time_out_of_range", RANGE)


def test_integral_float_clock_sample_is_accepted() -> None:
    assert create_at("a", "p", "2027-01-11T09:15:00Z", float(NOW)).scheduled_at == (
        "2027-01-11T09:15:00.000Z"
    )


def test_at_shape_error_beats_a_bad_clock() -> None:
    assert at_error("tomorrow", None) == ("invalid_rule", AT_SHAPE)


@settings(max_examples=200, deadline=None)
@given(st.integers(MIN_MS, MAX_MS), st.integers(-(23 * 60 + 59), 23 * 60 + 59))
def test_at_string_round_trip(ms: int, offset_min: int) -> None:
    """Any instant written as local fields with any valid offset resolves back to itself."""
    shifted = ms + offset_min * 60_000
    assume(MIN_MS <= shifted <= MAX_MS)
    oh, om = divmod(abs(offset_min), 60)
    text = f"{oracle(shifted)[:-1]}{'-' if offset_min < 0 else '+'}{oh:02d}:{om:02d}"
    assert create_at("a", "p", text, MIN_MS - 1).scheduled_at == format_instant(ms)
