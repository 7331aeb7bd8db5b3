"""Fixed-rate arithmetic (schedule §7.1) and the due decision (schedule §7.2)."""

from __future__ import annotations

import pytest

from eventlog.values import MAX_INSTANT_MS as MAX_MS
from eventlog.values import MIN_INSTANT_MS as MIN_MS
from schedule import (
    AfterRecord,
    AtRecord,
    EveryBatch,
    EveryRecord,
    OneShot,
    ScheduleLogError,
    Wait,
    decide,
    fold,
    format_instant,
    parse_instant,
    resolve_every,
)
from schedule._fold import IncrementalFold
from tests.schedule import changelog as cl

MAX_SAFE = 2**53 - 1


def ms(text: str) -> int:
    return parse_instant(text)


def every(id: str, at: str, seconds: int = 300, prompt: str = "p") -> EveryRecord:
    return EveryRecord(id, prompt, seconds, at)


# --- resolve_every -------------------------------------------------------------------------


def test_e9_latest_only_catch_up() -> None:
    record = every("schedule-1", "2027-01-10T10:00:00.000Z", 900)
    occurrence, following = resolve_every(record, ms("2027-01-10T10:47:12.345Z"))
    assert format_instant(occurrence) == "2027-01-10T10:45:00.000Z"
    assert following is not None and format_instant(following) == "2027-01-10T11:00:00.000Z"


@pytest.mark.parametrize(
    ("accepted", "occurrence", "following"),
    [
        ("2027-01-10T10:00:00.000Z", "2027-01-10T10:00:00.000Z", "2027-01-10T10:05:00.000Z"),
        ("2027-01-10T10:04:59.999Z", "2027-01-10T10:00:00.000Z", "2027-01-10T10:05:00.000Z"),
        ("2027-01-10T10:05:00.000Z", "2027-01-10T10:05:00.000Z", "2027-01-10T10:10:00.000Z"),
        ("2027-01-10T10:05:00.001Z", "2027-01-10T10:05:00.000Z", "2027-01-10T10:10:00.000Z"),
        ("2027-01-11T10:00:00.000Z", "2027-01-11T10:00:00.000Z", "2027-01-11T10:05:00.000Z"),
        ("2037-01-10T10:02:00.000Z", "2037-01-10T10:00:00.000Z", "2037-01-10T10:05:00.000Z"),
    ],
)
def test_alignment(accepted: str, occurrence: str, following: str) -> None:
    record = every("a", "2027-01-10T10:00:00.000Z", 300)
    assert resolve_every(record, ms(accepted)) == (ms(occurrence), ms(following))


def test_anchor_alignment_survives_odd_intervals_and_offsets() -> None:
    record = every("a", "2027-01-10T10:00:00.009Z", 301)
    occurrence, following = resolve_every(record, ms("2027-01-10T12:00:00.000Z"))
    assert (occurrence - ms("2027-01-10T10:00:00.009Z")) % 301_000 == 0
    assert occurrence <= ms("2027-01-10T12:00:00.000Z") < following == occurrence + 301_000


def test_dispatch_before_target_is_refused() -> None:
    record = every("a", "2027-01-10T10:00:00.000Z")
    with pytest.raises(ScheduleLogError) as err:
        resolve_every(record, ms("2027-01-10T09:59:59.999Z"))
    assert err.value.message == "every dispatch cannot precede the active scheduledAt"


def test_final_dispatch_near_year_9999() -> None:
    record = every("a", "9999-12-31T23:58:00.000Z", 300)  # E10
    assert resolve_every(record, ms("9999-12-31T23:59:30.000Z")) == (ms("9999-12-31T23:58:00.000Z"), None)
    assert resolve_every(every("a", "9999-12-31T23:54:59.999Z"), MAX_MS) == (MAX_MS, None)
    assert resolve_every(every("a", "9999-12-31T23:54:59.999Z"), ms("9999-12-31T23:55:00.000Z")) == (
        ms("9999-12-31T23:54:59.999Z"), MAX_MS)
    huge = every("a", "0001-01-01T00:00:00.000Z", MAX_SAFE // 1000)
    assert resolve_every(huge, MIN_MS) == (MIN_MS, None)
    assert resolve_every(every("a", "0001-01-01T00:00:00.000Z"), MIN_MS) == (MIN_MS, MIN_MS + 300_000)


@pytest.mark.parametrize("accepted", [MAX_MS + 1, MIN_MS - 1, True, 1.5, None, "0", 2**53, float("nan")])
def test_unrepresentable_decision_time(accepted: object) -> None:
    with pytest.raises(ScheduleLogError) as err:
        resolve_every(every("a", "2027-01-10T10:00:00.000Z"), accepted)  # type: ignore[arg-type]
    assert err.value.message == "every acceptedAt must be a representable four-digit-year instant"


def test_integral_float_decision_time_is_accepted() -> None:
    record = every("a", "2027-01-10T10:00:00.000Z")
    assert resolve_every(record, float(ms("2027-01-10T10:00:00.000Z"))) == resolve_every(
        record, ms("2027-01-10T10:00:00.000Z"))


@pytest.mark.parametrize("seconds", [0, -300, MAX_SAFE // 1000 + 1, True, None, 1.5])
def test_bad_interval(seconds: object) -> None:
    with pytest.raises(ScheduleLogError) as err:
        resolve_every(EveryRecord("a", "p", seconds, "2027-01-10T10:00:00.000Z"), MAX_MS)  # type: ignore[arg-type]
    assert err.value.message == "every interval milliseconds must be a positive safe integer"


def test_decision_time_is_checked_before_the_interval() -> None:
    with pytest.raises(ScheduleLogError, match="acceptedAt"):
        resolve_every(EveryRecord("a", "p", 0, "2027-01-10T10:00:00.000Z"), MAX_MS + 1)


# --- decide --------------------------------------------------------------------------------

NOW = ms("2027-01-10T10:07:30.000Z")


def test_wait() -> None:
    assert decide((), NOW) == Wait(None)
    records = (AtRecord("a", "p", "2027-01-10T12:00:00.000Z"), every("b", "2027-01-10T11:00:00.000Z"),
               AfterRecord("c", "p", 5, "2027-01-10T10:07:30.001Z"))
    assert decide(records, NOW) == Wait(NOW + 1)
    assert decide(records, MIN_MS - 10) == Wait(NOW + 1)


def test_due_at_exactly_now() -> None:
    record = AtRecord("a", "p", "2027-01-10T10:07:30.000Z")
    assert decide((record,), NOW) == OneShot(record)
    assert decide((record,), NOW - 1) == Wait(NOW)


def test_one_shot_priority_and_order() -> None:
    e = every("e", "2027-01-10T09:00:00.000Z")
    late = AtRecord("late", "p", "2027-01-10T10:00:00.000Z")
    early = AfterRecord("early", "p", 5, "2027-01-10T09:30:00.000Z")
    twin = AtRecord("twin", "p", "2027-01-10T09:30:00.000Z")
    future = AtRecord("future", "p", "2027-01-10T11:00:00.000Z")
    assert decide((e, late, early, twin, future), NOW) == OneShot(early)
    assert decide((e, late, twin, early, future), NOW) == OneShot(twin)  # tie: create position
    assert decide((e, late, future), NOW) == OneShot(late)  # a one-shot beats an earlier every


def test_e11_batch_order_and_shared_accepted_at() -> None:
    one = every("schedule-1", "2027-01-10T10:00:00.000Z", 3600, "drink water")
    two = every("schedule-2", "2027-01-10T09:55:00.000Z", 300, "stand up")
    result = decide((one, two), NOW)
    assert result == EveryBatch(
        ((two, ms("2027-01-10T10:05:00.000Z")), (one, ms("2027-01-10T10:00:00.000Z"))),
        "2027-01-10T10:07:30.000Z",
    )


def test_batch_sorts_by_current_target_not_occurrence() -> None:
    # a (target 10:00, every 3600) → occurrence 10:00; b (target 10:01, every 300) → 10:06
    a = every("a", "2027-01-10T10:00:00.000Z", 3600)
    b = every("b", "2027-01-10T10:01:00.000Z", 300)
    c = every("c", "2027-01-10T10:00:00.000Z", 300)  # same target as a, created later
    later = every("later", "2027-01-10T10:07:30.001Z")
    result = decide((b, later, c, a), NOW)
    assert isinstance(result, EveryBatch)
    assert [r.id for r, _ in result.items] == ["c", "a", "b"]
    assert [format_instant(o) for _, o in result.items] == [
        "2027-01-10T10:05:00.000Z", "2027-01-10T10:00:00.000Z", "2027-01-10T10:06:00.000Z"]


def test_float_now_is_normalised() -> None:
    result = decide((every("a", "2027-01-10T10:00:00.000Z"),), float(NOW))
    assert isinstance(result, EveryBatch) and result.accepted_at == "2027-01-10T10:07:30.000Z"


@pytest.mark.parametrize("now", [None, True, "1", 1.5, float("nan"), float("inf"), 2**53, -(2**53)])
def test_now_must_be_a_safe_integer(now: object) -> None:
    with pytest.raises(ValueError):
        decide((), now)  # type: ignore[arg-type]


def test_due_every_beyond_year_9999_fails_the_decision() -> None:
    record = every("a", "9999-12-31T23:58:00.000Z")
    with pytest.raises(ScheduleLogError):
        decide((record,), MAX_MS + 1)
    # a due one-shot still wins without resolving anything
    shot = AtRecord("b", "p", "9999-12-31T23:59:00.000Z")
    assert decide((record, shot), MAX_MS + 1) == OneShot(shot)


# --- the fold state's agenda (the runtime's decision) ------------------------------------------


def test_the_agenda_decides_like_decide_through_long_churn() -> None:
    """Hundreds of advances and removals leave most agenda entries stale; the heaps drop them
    and are rebuilt, and every decision on the way equals ``decide`` over the folded records."""
    start = ms("2027-01-10T08:00:00.000Z")
    payloads = [cl.every(f"e{i}", format_instant(start + i * 1000), seconds=300 + i) for i in range(3)]
    payloads += [cl.at(f"s{i}", format_instant(start + 7_000 + i)) for i in range(60)]
    events = cl.log(*payloads)
    incremental = IncrementalFold()
    state = incremental.state(events, 0)
    checked = 0
    for round_ in range(200):
        active = fold(events, 0).active
        for now in (start - 1, start + 6_999, start + 7_000 + round_ // 4, start + 10**9):
            assert state.decide(now) == decide(active, now)
            checked += 1
        record = active[round_ % len(active)]
        if type(record) is EveryRecord:
            accepted = format_instant(parse_instant(record.scheduled_at) + (round_ % 3) * 1000)
            events += cl.log(cl.dispatch(record.id, accepted))
        elif round_ % 2:
            events += cl.log(cl.delete(record.id))
        else:
            events += cl.log(cl.dispatch(record.id))
        state = incremental.state(events, 0)
    assert checked == 800
    assert state.everies is not None and len(state.everies) <= 2 * len(state.active) + 32
