"""Zone canonicalisation (schedule §5.4.1) and local wall time → instant (schedule §5.4.2) in real zones."""

from __future__ import annotations

import zoneinfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog.values import MIN_INSTANT_MS as MIN_MS
from schedule import ScheduleInputError, canonicalize_time_zone, create_at

INVALID = "time_zone must be UTC or a valid IANA Area/Location name."
SHAPE = r"[A-Za-z][A-Za-z0-9_+.-]*(?:/[A-Za-z0-9_+.-]+)+"
GAP = "The local at time does not exist in the selected time zone."
RANGE = "The scheduled time must be representable as a four-digit-year RFC 3339 UTC instant."
PAST = MIN_MS - 1  # a clock sample before every representable target


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("UTC", "UTC"),  # E5
        ("Etc/Zulu", "UTC"),
        ("asia/calcutta", "Asia/Kolkata"),
        ("America/Fort_Wayne", "America/Indiana/Indianapolis"),
        ("Etc/GMT-14", "Etc/GMT-14"),
        ("Asia/Calcutta", "Asia/Kolkata"),  # schedule §5.4.1 step 4
        ("US/Eastern", "America/New_York"),
        ("Europe/Kiev", "Europe/Kyiv"),
        ("Asia/Chongqing", "Asia/Shanghai"),
        ("Etc/GMT+5", "Etc/GMT+5"),
        ("Europe/Oslo", "Europe/Oslo"),  # listed in zone.tab although tzdata links it
        ("Europe/Amsterdam", "Europe/Amsterdam"),
        ("Atlantic/Reykjavik", "Atlantic/Reykjavik"),
        ("europe/oslo", "Europe/Oslo"),
        ("EUROPE/PARIS", "Europe/Paris"),
        ("America/New_York", "America/New_York"),
        ("Australia/Lord_Howe", "Australia/Lord_Howe"),
        ("Pacific/Chatham", "Pacific/Chatham"),
        ("America/Argentina/Buenos_Aires", "America/Argentina/Buenos_Aires"),
    ],
)
def test_canonical_names(name: str, canonical: str) -> None:
    assert canonicalize_time_zone(name) == canonical


@pytest.mark.parametrize(
    "alias",
    ["Etc/UTC", "Etc/UCT", "Etc/Universal", "Etc/Zulu", "Etc/GMT", "Etc/GMT0", "Etc/GMT+0",
     "Etc/GMT-0", "Etc/Greenwich", "etc/utc", "ETC/GREENWICH"],
)
def test_utc_aliases_become_utc(alias: str) -> None:
    assert canonicalize_time_zone(alias) == "UTC"


@pytest.mark.parametrize(
    "name",
    [
        "utc", "EST", "Etc/GMT+13", "right/UTC", " Europe/Paris",  # E5
        "", "GMT", "PRC", "+08:00", "Europe/Paris ", "Europe/Paris\n", "posix/Europe/Paris",
        "right/Europe/Paris", "America/../Asia/Tokyo", "Europe//Paris", "/Europe/Paris",
        "Europe/", "Mars/Olympus_Mons", "Europe/Pariss", "Europe\\Paris", "Europe/Parıs",
        "Ｅｕｒｏｐｅ/Paris", "Factory", "zone.tab/x", "tzdata.zi", "UTC/", "Etc/GMT+14",
    ],
)
def test_rejected_names(name: str) -> None:
    with pytest.raises(ScheduleInputError) as err:
        canonicalize_time_zone(name)
    assert (err.value.code, err.value.message) == ("invalid_time_zone", INVALID)


@pytest.mark.parametrize("value", [None, 5, b"UTC", ["UTC"]])
def test_non_strings_are_rejected(value: object) -> None:
    with pytest.raises(ScheduleInputError) as err:
        canonicalize_time_zone(value)  # type: ignore[arg-type]
    assert (err.value.code, err.value.message) == ("invalid_time_zone", INVALID)


def test_every_available_name_canonicalises_consistently() -> None:
    """Each result is ``UTC`` or a loadable Area/Location name that maps to itself."""
    import re

    results = set()
    for name in sorted(zoneinfo.available_timezones()):
        try:
            result = canonicalize_time_zone(name)
        except ScheduleInputError as err:
            assert err.message == INVALID
            assert re.fullmatch(SHAPE, name) is None  # only slash-less legacy names fail
            continue
        results.add(result)
        assert result == "UTC" or re.fullmatch(SHAPE, result)
        assert canonicalize_time_zone(result) == result
        assert canonicalize_time_zone(name.upper()) == result
        if result != "UTC":
            zoneinfo.ZoneInfo(result)
    assert "UTC" in results and len(results) > 300


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(sorted(zoneinfo.available_timezones())), st.randoms())
def test_case_does_not_matter(name: str, rnd) -> None:
    variant = "".join(c.upper() if rnd.random() < 0.5 else c.lower() for c in name)
    if name == "UTC" and variant != name:  # exactly `UTC` is the one case-sensitive name (step 1)
        with pytest.raises(ScheduleInputError):
            canonicalize_time_zone(variant)
        return
    try:
        expected = canonicalize_time_zone(name)
    except ScheduleInputError:
        with pytest.raises(ScheduleInputError):
            canonicalize_time_zone(variant)
        return
    assert canonicalize_time_zone(variant) == expected


# --- local wall time → instant ---------------------------------------------------------------


def local(date: str, time: str, zone: str, now: int = PAST) -> str:
    return create_at("schedule-1", "p", {"date": date, "time": time, "time_zone": zone}, now).scheduled_at


def local_error(date: str, time: str, zone: str, now: int = PAST) -> tuple[str, str]:
    with pytest.raises(ScheduleInputError) as err:
        local(date, time, zone, now)
    return err.value.code, err.value.message


@pytest.mark.parametrize(
    ("zone", "date", "time", "utc"),
    [
        # Paris (E3): CET +1 / CEST +2, switches 2027-03-28 02:00 and 2027-10-31 03:00
        ("Europe/Paris", "2027-10-31", "02:30:00", "2027-10-31T00:30:00.000Z"),
        ("Europe/Paris", "2027-10-31", "03:00:00", "2027-10-31T02:00:00.000Z"),
        ("Europe/Paris", "2027-03-28", "01:59:59.999", "2027-03-28T00:59:59.999Z"),
        ("Europe/Paris", "2027-03-28", "03:00:00", "2027-03-28T01:00:00.000Z"),
        # New York: EST -5 / EDT -4, 2027-03-14 02:00→03:00, 2027-11-07 02:00→01:00
        ("America/New_York", "2027-03-14", "01:59:59.999", "2027-03-14T06:59:59.999Z"),
        ("America/New_York", "2027-03-14", "03:00:00", "2027-03-14T07:00:00.000Z"),
        ("America/New_York", "2027-11-07", "00:59:59.999", "2027-11-07T04:59:59.999Z"),
        ("America/New_York", "2027-11-07", "01:00:00", "2027-11-07T05:00:00.000Z"),
        ("America/New_York", "2027-11-07", "01:30:00", "2027-11-07T05:30:00.000Z"),
        ("America/New_York", "2027-11-07", "01:59:59.999", "2027-11-07T05:59:59.999Z"),
        ("America/New_York", "2027-11-07", "02:00:00", "2027-11-07T07:00:00.000Z"),
        ("US/Eastern", "2027-11-07", "01:30:00", "2027-11-07T05:30:00.000Z"),
        # London: GMT / BST +1, 2027-03-28 01:00→02:00, 2027-10-31 02:00→01:00
        ("Europe/London", "2027-03-28", "00:59:59.999", "2027-03-28T00:59:59.999Z"),
        ("Europe/London", "2027-03-28", "02:00:00", "2027-03-28T01:00:00.000Z"),
        ("Europe/London", "2027-10-31", "01:30:00", "2027-10-31T00:30:00.000Z"),
        ("Europe/London", "2027-10-31", "02:00:00", "2027-10-31T02:00:00.000Z"),
        # Sydney: AEST +10 / AEDT +11, 2027-04-04 03:00→02:00, 2027-10-03 02:00→03:00
        ("Australia/Sydney", "2027-04-04", "02:30:00", "2027-04-03T15:30:00.000Z"),
        ("Australia/Sydney", "2027-04-04", "03:00:00", "2027-04-03T17:00:00.000Z"),
        ("Australia/Sydney", "2027-10-03", "01:59:59.999", "2027-10-02T15:59:59.999Z"),
        ("Australia/Sydney", "2027-10-03", "03:00:00", "2027-10-02T16:00:00.000Z"),
        # Lord Howe: +10:30 / +11 (a 30-minute shift), 2027-04-04 02:00→01:30, 2027-10-03 02:00→02:30
        ("Australia/Lord_Howe", "2027-04-04", "01:29:59.999", "2027-04-03T14:29:59.999Z"),
        ("Australia/Lord_Howe", "2027-04-04", "01:45:00", "2027-04-03T14:45:00.000Z"),
        ("Australia/Lord_Howe", "2027-04-04", "02:00:00", "2027-04-03T15:30:00.000Z"),
        ("Australia/Lord_Howe", "2027-10-03", "01:59:00", "2027-10-02T15:29:00.000Z"),
        ("Australia/Lord_Howe", "2027-10-03", "02:30:00", "2027-10-02T15:30:00.000Z"),
        # Chatham: +12:45 / +13:45, switching at 02:45 standard time
        # (2027-09-26 02:45→03:45, 2027-04-04 03:45→02:45)
        ("Pacific/Chatham", "2027-09-26", "02:44:59.999", "2027-09-25T13:59:59.999Z"),
        ("Pacific/Chatham", "2027-09-26", "03:45:00", "2027-09-25T14:00:00.000Z"),
        ("Pacific/Chatham", "2027-04-04", "02:44:00", "2027-04-03T12:59:00.000Z"),
        ("Pacific/Chatham", "2027-04-04", "03:00:00", "2027-04-03T13:15:00.000Z"),
        ("Pacific/Chatham", "2027-04-04", "03:45:00", "2027-04-03T15:00:00.000Z"),
        # fixed zones
        ("UTC", "2027-01-11", "09:15:00.5", "2027-01-11T09:15:00.500Z"),
        ("Etc/GMT-14", "2027-01-11", "09:15:00.05", "2027-01-10T19:15:00.050Z"),
        ("Etc/GMT+12", "2027-01-11", "09:15:00.005", "2027-01-11T21:15:00.005Z"),
        ("Asia/Kolkata", "2027-01-11", "09:15:00", "2027-01-11T03:45:00.000Z"),
        ("Asia/Calcutta", "2027-01-11", "09:15:00", "2027-01-11T03:45:00.000Z"),
    ],
)
def test_local_times_resolve(zone: str, date: str, time: str, utc: str) -> None:
    assert local(date, time, zone) == utc


@pytest.mark.parametrize(
    ("zone", "date", "time"),
    [
        ("Europe/Paris", "2027-03-28", "02:30:00"),  # E3
        ("Europe/Paris", "2027-03-28", "02:00:00"),
        ("Europe/Paris", "2027-03-28", "02:59:59.999"),
        ("America/New_York", "2027-03-14", "02:00:00"),
        ("America/New_York", "2027-03-14", "02:30:00"),
        ("America/New_York", "2027-03-14", "02:59:59.999"),
        ("Europe/London", "2027-03-28", "01:00:00"),
        ("Europe/London", "2027-03-28", "01:30:00"),
        ("Australia/Sydney", "2027-10-03", "02:00:00"),
        ("Australia/Sydney", "2027-10-03", "02:30:00"),
        ("Australia/Lord_Howe", "2027-10-03", "02:00:00"),
        ("Australia/Lord_Howe", "2027-10-03", "02:15:00"),
        ("Australia/Lord_Howe", "2027-10-03", "02:29:59.999"),
        ("Pacific/Chatham", "2027-09-26", "02:45:00"),
        ("Pacific/Chatham", "2027-09-26", "03:00:00"),
        ("Pacific/Chatham", "2027-09-26", "03:44:59.999"),
        # a whole day skipped: Samoa moved across the date line (2011-12-29 → 2011-12-31)
        ("Pacific/Apia", "2011-12-30", "12:00:00"),
    ],
)
def test_local_times_in_gaps_are_rejected(zone: str, date: str, time: str) -> None:
    assert local_error(date, time, zone) == ("invalid_rule", GAP)


def test_gap_is_checked_before_the_future() -> None:
    """A past time inside a gap is ``invalid_rule``, not ``not_future`` (schedule §5.4.2)."""
    now = 1799568000000
    assert local_error("2020-03-08", "02:30:00", "America/New_York", now) == ("invalid_rule", GAP)
    code, _ = local_error("2020-03-08", "03:30:00", "America/New_York", now)
    assert code == "not_future"


@pytest.mark.parametrize(
    ("zone", "date", "time", "utc"),
    [
        # local mean time before standard time: offsets with seconds
        ("America/New_York", "1850-06-01", "12:00:00", "1850-06-01T16:56:02.000Z"),  # -4:56:02
        ("Europe/Paris", "1850-06-01", "12:00:00", "1850-06-01T11:50:39.000Z"),  # +0:09:21
        ("Asia/Tokyo", "1850-06-01", "12:00:00", "1850-06-01T02:41:01.000Z"),  # +9:18:59
        ("Europe/London", "1800-02-29", "00:00:00", None),  # 1800 is not a leap year
        ("Europe/London", "1600-02-28", "23:58:45", "1600-02-29T00:00:00.000Z"),  # -0:01:15
        ("America/New_York", "0001-01-01", "00:00:00", "0001-01-01T04:56:02.000Z"),
        ("America/New_York", "9999-12-31", "12:00:00.001", "9999-12-31T17:00:00.001Z"),
        ("Asia/Tokyo", "9999-12-31", "23:59:59.999", "9999-12-31T14:59:59.999Z"),
        ("UTC", "0001-01-01", "00:00:00", "0001-01-01T00:00:00.000Z"),
        ("UTC", "9999-12-31", "23:59:59.999", "9999-12-31T23:59:59.999Z"),
        ("Etc/GMT+12", "9999-12-31", "11:59:59.999", "9999-12-31T23:59:59.999Z"),
        ("Etc/GMT-14", "0001-01-01", "14:00:00", "0001-01-01T00:00:00.000Z"),
    ],
)
def test_historic_and_extreme_dates(zone: str, date: str, time: str, utc: str | None) -> None:
    if utc is None:
        assert local_error(date, time, zone) == (
            "invalid_rule", "The at value must be a real ISO calendar date and time."
        )
    else:
        assert local(date, time, zone) == utc


@pytest.mark.parametrize(
    ("zone", "date", "time"),
    [
        ("Asia/Tokyo", "0001-01-01", "00:00:00"),
        ("Etc/GMT-14", "0001-01-01", "13:59:59.999"),
        ("America/New_York", "9999-12-31", "23:59:59.999"),
        ("Etc/GMT+12", "9999-12-31", "12:00:00"),
    ],
)
def test_results_outside_years_1_to_9999_are_out_of_range(zone: str, date: str, time: str) -> None:
    """Also where the naive local time is representable but the instant is not (schedule §5.4.2 step 3)."""
    assert local_error(date, time, zone) == ("time_out_of_range", RANGE)
