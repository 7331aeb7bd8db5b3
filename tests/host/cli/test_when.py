"""Times for people (host §7 "Times"): wall clocks in the user's zone with relative hints, the note
after UTC instants, and the zone a process shows times in. Expected texts are written out by hand
from the zones' known offsets (Asia/Shanghai is UTC+8 all year)."""

from __future__ import annotations

import zoneinfo
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventlog.values import MAX_INSTANT_MS, MIN_INSTANT_MS, format_instant
from host.cli._when import Zone, annotate, clock, instant_note, relative, span, user_zone, when

NOW = 1_796_174_594_448  # 2026-12-02T01:23:14.448Z, a Wednesday: 09:23 in Shanghai
MIN = 60_000
HOUR = 60 * MIN
DAY = 24 * HOUR


@pytest.fixture(autouse=True)
def _tzdata() -> Iterator[None]:
    zoneinfo.reset_tzpath(to=())
    yield
    zoneinfo.reset_tzpath()


def shanghai() -> Zone:
    return Zone.named("Asia/Shanghai")


@pytest.mark.parametrize(
    ("offset_ms", "expected"),
    [
        (0, "09:23"),
        (5 * MIN, "09:28"),
        (15 * HOUR, "tomorrow 00:23"),
        (-10 * HOUR, "yesterday 23:23"),
        (2 * DAY, "Fri 4 Dec 09:23"),
        (-3 * DAY, "Sun 29 Nov 09:23"),
        (30 * DAY, "2027-01-01 09:23"),
    ],
)
def test_clock_says_as_much_date_as_it_needs(offset_ms: int, expected: str) -> None:
    assert clock(NOW + offset_ms, shanghai(), NOW) == expected


def test_the_same_instant_in_utc() -> None:
    assert clock(NOW, Zone.named(None), NOW) == "01:23"
    assert clock(NOW + 23 * HOUR, Zone.named("UTC"), NOW) == "tomorrow 00:23"


@pytest.mark.parametrize(
    ("ms", "expected"),
    [(0, "0 s"), (45_000, "45 s"), (5 * MIN + 20_000, "5 min"), (5 * MIN + 40_000, "6 min"), (2 * HOUR, "2 h"),
     (2 * HOUR + 5 * MIN, "2 h 5 min"), (DAY, "1 day"), (3 * DAY + 13 * HOUR, "4 days"), (40 * DAY, "6 weeks"), (100 * DAY, "3 months"),
     (1000 * DAY, "2 years")],
)
def test_spans(ms: int, expected: str) -> None:
    assert span(ms) == expected
    assert span(-ms) == expected


def test_relative_and_when() -> None:
    assert relative(NOW + 5 * MIN, NOW) == "in 5 min"
    assert relative(NOW - 2 * HOUR, NOW) == "2 h ago"
    assert relative(NOW + 400, NOW) == "now"
    assert when(NOW + 5 * MIN, shanghai(), NOW) == "09:28 (in 5 min)"


def test_annotations_follow_utc_instants() -> None:
    text = "Reminder schedule-1 is set for 2026-12-02T01:28:14.448Z."
    assert annotate(text, shanghai(), NOW) == (
        "Reminder schedule-1 is set for 2026-12-02T01:28:14.448Z (09:28 in Asia/Shanghai, in 5 min).")
    assert annotate(text, Zone.named(None), NOW) == (
        "Reminder schedule-1 is set for 2026-12-02T01:28:14.448Z (01:28 UTC, in 5 min).")
    both = "Active reminders: a at 2026-12-02T01:28:14.448Z; b at 2026-12-03T01:23:14.448Z"
    assert annotate(both, shanghai(), NOW) == (
        "Active reminders: a at 2026-12-02T01:28:14.448Z (09:28 in Asia/Shanghai, in 5 min); "
        "b at 2026-12-03T01:23:14.448Z (tomorrow 09:23 in Asia/Shanghai, in 1 day)")
    assert instant_note("2026-02-30T00:00:00.000Z", shanghai(), NOW) is None  # not a real date
    assert annotate("no instant 2026-12-02T01:28:14Z here", shanghai(), NOW) == "no instant 2026-12-02T01:28:14Z here"


@given(st.integers(MIN_INSTANT_MS, MAX_INSTANT_MS), st.integers(MIN_INSTANT_MS, MAX_INSTANT_MS))
def test_every_canonical_instant_gets_exactly_one_note(ms: int, now: int) -> None:
    zoneinfo.reset_tzpath(to=())
    text = f"due {format_instant(ms)}."
    annotated = annotate(text, shanghai(), now)
    assert annotated.startswith(f"due {format_instant(ms)} (") and annotated.endswith(").")
    assert annotated.count(" in Asia/Shanghai, ") == 1


def test_the_user_zone_is_the_process_zone_or_utc() -> None:
    assert user_zone({"TZ": "Asia/Calcutta"}).name == "Asia/Kolkata"  # canonical, as chat sends it
    assert user_zone({"TZ": "Asia/Shanghai"}, utc=True).name == "UTC"
    assert user_zone({"TZ": "EST5EDT"}).name == "UTC"  # no IANA zone can be sampled: UTC, said so
