"""The pure constructors (schedule §5) — every input error code and message, in check order —
and ids (schedule §3.4)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog.values import MAX_INSTANT_MS as MAX_MS
from eventlog.values import MIN_INSTANT_MS as MIN_MS
from schedule import (
    AfterRecord,
    AtRecord,
    EveryRecord,
    ScheduleInputError,
    allocate_id,
    create_after,
    create_at,
    create_every,
    parse_instant,
)

NOW = 1799568000000  # 2027-01-10T08:00:00.000Z
MAX_SAFE = 2**53 - 1

PROMPT = ("invalid_prompt", "prompt must be non-empty after trimming.")
AFTER = ("invalid_rule", "after_seconds must be a positive safe integer.")
EVERY = ("invalid_rule", "every_seconds must be a safe integer.")
FREQ = ("frequency_too_high", "every_seconds must be at least 300.")
RANGE = ("time_out_of_range",
         "The scheduled time must be representable as a four-digit-year RFC 3339 UTC instant.")
FUTURE = ("not_future", "The scheduled time must be strictly in the future.")
AT_KIND = ("invalid_rule", "at must be an explicit-offset string or local calendar object.")
KEYS = ("invalid_rule", "Local at must contain exactly date, time, and time_zone.")
TYPES = ("invalid_rule", "Local at date and time must be strings.")
ZONE_TYPE = ("invalid_time_zone", "time_zone must be a string.")
ZONE = ("invalid_time_zone", "time_zone must be UTC or a valid IANA Area/Location name.")
LOCAL_SHAPE = ("invalid_rule", ("Local at requires date YYYY-MM-DD and time HH:mm:ss with optional "
                                "one-to-three digit milliseconds."))
LOCAL_UNREAL = ("invalid_rule", "The local at value must be a real ISO calendar date and time.")
UNREAL = ("invalid_rule", "The at value must be a real ISO calendar date and time.")
GAP = ("invalid_rule", "The local at time does not exist in the selected time zone.")
AT_SHAPE = ("invalid_rule", ("at must use YYYY-MM-DDTHH:mm:ss with optional 1-3 digit fractional "
                             "seconds and an explicit Z or numeric offset."))

BAD_NUMBERS = [True, False, None, "30", 1.5, float("nan"), float("inf"), -float("inf"),
               2**53, -(2**53), [30], {"n": 30}]


def error(make, *args) -> tuple[str, str]:
    with pytest.raises(ScheduleInputError) as err:
        make("schedule-1", *args)
    return err.value.code, err.value.message


# --- prompt -------------------------------------------------------------------------------


@pytest.mark.parametrize("prompt", ["", " ", "\t\n\v\f\r ", "\u00a0\u1680\u2000\u200a\u2028\u2029",
                                    "\u202f\u205f\u3000\ufeff", None, 5, ["x"]])
def test_empty_prompt_is_the_first_check(prompt: object) -> None:
    assert error(create_after, prompt, -1, None) == PROMPT
    assert error(create_every, prompt, 1, None) == PROMPT
    assert error(create_at, prompt, 5, None) == PROMPT


@pytest.mark.parametrize(
    ("prompt", "stored"),
    [
        ("  stretch  ", "stretch"),
        ("\ufeffhi\u3000", "hi"),
        ("\u0085x\u0085", "\u0085x\u0085"),  # NEL is not ECMAScript whitespace
        ("\x1cx\x1f", "\x1cx\x1f"),
        ("  line one\n  line two \n", "line one\n  line two"),
        ("\u200bzero-width\u200b", "\u200bzero-width\u200b"),
    ],
)
def test_prompt_is_js_trimmed(prompt: str, stored: str) -> None:
    assert create_after("schedule-1", prompt, 1, NOW).prompt == stored


# --- after --------------------------------------------------------------------------------


def test_e1_after_record() -> None:
    record = create_after("schedule-1", "  stretch  ", 90, NOW)
    assert record == AfterRecord("schedule-1", "stretch", 90, "2027-01-10T08:01:30.000Z")
    assert record.kind == "after"
    stored = create_after("schedule-1", "stretch", 90.0, NOW)
    assert stored == record and type(stored.after_seconds) is int


@pytest.mark.parametrize("seconds", [0, -1, 0.0, -0.0, *BAD_NUMBERS])
def test_after_seconds_must_be_a_positive_safe_integer(seconds: object) -> None:
    assert error(create_after, "p", seconds, NOW) == AFTER


def test_after_rule_check_precedes_the_clock() -> None:
    assert error(create_after, "p", 0, None) == AFTER
    assert error(create_after, "p", 5, None) == RANGE


def test_after_range() -> None:
    assert create_after("a", "p", 3e1, NOW).after_seconds == 30
    assert create_after("a", "p", 1, MAX_MS - 1000).scheduled_at == "9999-12-31T23:59:59.999Z"
    assert error(create_after, "p", 1, MAX_MS - 999) == RANGE
    assert error(create_after, "p", MAX_SAFE, NOW) == RANGE
    assert error(create_after, "p", 1, MIN_MS - 2000) == RANGE
    assert create_after("a", "p", 1, MIN_MS - 1000).scheduled_at == "0001-01-01T00:00:00.000Z"
    assert create_after("a", "p", 1, -1).scheduled_at == "1970-01-01T00:00:00.999Z"


def test_integral_floats_at_the_safe_bounds_are_safe_integers() -> None:
    # schedule §2.1: -MAX_SAFE <= v <= MAX_SAFE includes both ends for floats too (both are exact floats),
    # so these pass the rule check and fail later, on range or frequency; one step past is not safe.
    assert error(create_after, "p", float(MAX_SAFE), NOW) == RANGE
    assert error(create_every, "p", -float(MAX_SAFE), NOW) == FREQ
    assert error(create_after, "p", float(2**53), NOW) == AFTER
    assert error(create_every, "p", -float(2**53), NOW) == EVERY
    # a clock sample at the lower bound is usable too
    assert create_every("a", "p", MAX_SAFE // 1000, -float(MAX_SAFE)).scheduled_at == (
        "1969-12-31T23:59:59.009Z")


@pytest.mark.parametrize("now", [None, "0", True, 1.5, 2**53, -(2**53), float("nan")])
def test_unusable_clock_is_out_of_range(now: object) -> None:
    assert error(create_after, "p", 5, now) == RANGE
    assert error(create_every, "p", 300, now) == RANGE
    assert error(create_at, "p", "2027-01-11T00:00:00Z", now) == RANGE


# --- every --------------------------------------------------------------------------------


def test_every_record() -> None:
    created = parse_instant("2027-01-10T09:45:00.000Z")
    record = create_every("schedule-1", "p", 900, created)  # E9
    assert record == EveryRecord("schedule-1", "p", 900, "2027-01-10T10:00:00.000Z")
    assert record.kind == "every"
    assert create_every("a", "p", 300.0, NOW).every_seconds == 300
    assert type(create_every("a", "p", 300.0, NOW).every_seconds) is int


@pytest.mark.parametrize("seconds", BAD_NUMBERS)
def test_every_seconds_must_be_a_safe_integer(seconds: object) -> None:
    assert error(create_every, "p", seconds, NOW) == EVERY


@pytest.mark.parametrize("seconds", [299, 299.0, 1, 0, -0.0, -300, -MAX_SAFE])
def test_every_seconds_below_300_is_too_frequent(seconds: object) -> None:
    assert error(create_every, "p", seconds, NOW) == FREQ
    assert error(create_every, "p", seconds, None) == FREQ  # before the clock


def test_every_interval_must_stay_safe_in_milliseconds() -> None:
    assert error(create_every, "p", MAX_SAFE // 1000 + 1, NOW) == RANGE
    assert error(create_every, "p", MAX_SAFE, NOW) == RANGE
    # the largest safe interval is accepted by the rule, then fails the range check for now
    assert error(create_every, "p", MAX_SAFE // 1000, NOW) == RANGE
    # ... and is stored when an absurd (but safe) clock brings the target into range
    record = create_every("a", "p", MAX_SAFE // 1000, -MAX_SAFE)
    assert parse_instant(record.scheduled_at) == -MAX_SAFE + (MAX_SAFE // 1000) * 1000 == -991


# --- at -----------------------------------------------------------------------------------


@pytest.mark.parametrize("at", [None, 5, 1.5, True, ["2027-01-11T00:00:00Z"], b"x", ("a",)])
def test_at_must_be_a_string_or_an_object(at: object) -> None:
    assert error(create_at, "p", at, NOW) == AT_KIND


def test_at_record_keeps_only_the_instant() -> None:
    record = create_at("schedule-1", " p ", "2027-01-11T09:15:00.5-03:00", NOW)
    assert record == AtRecord("schedule-1", "p", "2027-01-11T12:15:00.500Z")
    assert record.kind == "at"
    assert set(type(record).__struct_fields__) == {"id", "prompt", "scheduled_at"}


def test_at_string_errors_come_after_the_prompt() -> None:
    assert error(create_at, " ", "nonsense", NOW) == PROMPT
    assert error(create_at, "p", "nonsense", NOW) == AT_SHAPE


def obj(date: object = "2027-03-01", time: object = "10:00:00", zone: object = "UTC") -> dict:
    return {"date": date, "time": time, "time_zone": zone}


@pytest.mark.parametrize(
    "at",
    [{}, {"date": "2027-03-01", "time": "10:00:00"}, {**obj(), "offset": "+01:00"},
     {"date": "2027-03-01", "time": "10:00:00", "timeZone": "UTC"},
     {"date": "2027-03-01T10:00:00", "time_zone": "UTC"}, {1: 2}],
)
def test_local_key_set(at: dict) -> None:
    assert error(create_at, "p", at, NOW) == KEYS


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        (obj(date=20270301), TYPES),
        (obj(time=None), TYPES),
        (obj(date=None, zone=5), TYPES),  # date/time types before the zone type
        (obj(zone=None), ZONE_TYPE),
        (obj(zone=["UTC"]), ZONE_TYPE),
        (obj(date="2027/03/01", zone=5), ZONE_TYPE),  # the zone type precedes the shapes
        (obj(date="2027/03/01", zone="Bad/Zone"), LOCAL_SHAPE),  # E4: shape before zone
        (obj(date="27-03-01"), LOCAL_SHAPE),
        (obj(date="2027-3-01"), LOCAL_SHAPE),
        (obj(date="2027-03-01 "), LOCAL_SHAPE),
        (obj(date="２０２７-03-01"), LOCAL_SHAPE),
        (obj(time="10:00"), LOCAL_SHAPE),
        (obj(time="10:00:00.1234"), LOCAL_SHAPE),
        (obj(time="10:00:00."), LOCAL_SHAPE),
        (obj(time="10:00:00Z"), LOCAL_SHAPE),
        (obj(time="10:00:00+01:00"), LOCAL_SHAPE),
        (obj(time="10:00:00\n"), LOCAL_SHAPE),
        (obj(time="T10:00:00"), LOCAL_SHAPE),
        (obj(date="0000-03-01"), LOCAL_UNREAL),
        (obj(time="24:00:00"), LOCAL_UNREAL),
        (obj(time="10:60:00"), LOCAL_UNREAL),  # E4
        (obj(time="10:00:60"), LOCAL_UNREAL),
        (obj(date="0000-02-30", zone="Bad/Zone"), LOCAL_UNREAL),  # the "local" message first
        (obj(date="2027-02-29"), UNREAL),  # E4: without "local"
        (obj(date="2027-13-01"), UNREAL),
        (obj(date="2027-00-01"), UNREAL),
        (obj(date="2027-04-31"), UNREAL),
        (obj(date="2027-04-00"), UNREAL),
        (obj(date="2027-02-29", zone="Bad/Zone"), UNREAL),  # the calendar before the zone
        (obj(zone="Bad/Zone"), ZONE),
        (obj(zone="utc"), ZONE),
        (obj(zone="EST"), ZONE),
        (obj(zone=" Europe/Paris"), ZONE),
        (obj("2027-03-28", "02:30:00", "Europe/Paris"), GAP),  # E3
        (obj("2027-01-10", "08:00:00", "UTC"), FUTURE),
        (obj("2027-01-10", "09:00:00", "Europe/Paris"), FUTURE),  # = now
        (obj("9999-12-31", "23:59:59.999", "America/New_York"), RANGE),
    ],
)
def test_local_object_checks_in_order(at: dict, expected: tuple[str, str]) -> None:
    assert error(create_at, "p", at, NOW) == expected


def test_local_object_results() -> None:
    def at(date: str, time: str, zone: str) -> str:
        return create_at("schedule-1", "p", obj(date, time, zone), NOW).scheduled_at

    assert at("2027-10-31", "02:30:00", "Europe/Paris") == "2027-10-31T00:30:00.000Z"  # E3
    assert at("2027-10-31", "03:00:00", "Europe/Paris") == "2027-10-31T02:00:00.000Z"
    assert at("2027-01-10", "09:00:00.001", "Europe/Paris") == "2027-01-10T08:00:00.001Z"
    assert at("2027-01-11", "09:15:00.5", "Etc/Zulu") == "2027-01-11T09:15:00.500Z"
    assert at("2027-01-11", "09:15:00.05", "Asia/Shanghai") == "2027-01-11T01:15:00.050Z"


def test_constructors_refuse_malformed_ids() -> None:
    for bad in ["", " schedule-1", "schedule-1\n", None]:
        with pytest.raises(ValueError):
            create_after(bad, "p", 5, NOW)  # type: ignore[arg-type]


# --- ids ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seen", "expected"),
    [
        ([], "schedule-1"),  # E6
        (["schedule-7"], "schedule-2"),
        (["alpha", "schedule-3", "schedule-4"], "schedule-5"),
        (["schedule-1"], "schedule-2"),
        (["schedule-2"], "schedule-3"),
        (["schedule-1", "schedule-2", "schedule-3"], "schedule-4"),
        (["a", "b", "c"], "schedule-4"),
        (["schedule-01"], "schedule-2"),
    ],
)
def test_allocate_id(seen: list[str], expected: str) -> None:
    assert allocate_id(seen) == expected
    assert allocate_id(tuple(seen)) == expected
    assert allocate_id(iter(seen)) == expected


@settings(max_examples=200, deadline=None)
@given(st.sets(st.integers(1, 30).map(lambda n: f"schedule-{n}") | st.text(max_size=3)))
def test_allocated_id_is_fresh_and_count_based(seen: set[str]) -> None:
    new = allocate_id(seen)
    assert new not in seen
    n = int(new.removeprefix("schedule-"))
    assert n >= len(seen) + 1
    assert all(f"schedule-{k}" in seen for k in range(len(seen) + 1, n))
