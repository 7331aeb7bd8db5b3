"""Property tests of the pure core: zones, the fold against a model, local round trips, decoding."""

from __future__ import annotations

import functools
import json
import zoneinfo
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import msgspec
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from eventlog.values import MAX_INSTANT_MS as MAX_MS
from eventlog.values import MIN_INSTANT_MS as MIN_MS
from schedule import (
    AfterRecord,
    AtRecord,
    EveryRecord,
    Fold,
    ScheduleGuard,
    ScheduleInputError,
    ScheduleLogError,
    canonicalize_time_zone,
    check_append,
    create_at,
    decide,
    decode_change,
    fold,
    format_instant,
    parse_instant,
)
from schedule._fold import IncrementalFold
from tests.schedule import changelog as cl
from tests.schedule.changelog import BrokenEv, Ev, RawEv

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAMES = sorted(zoneinfo.available_timezones())

# --- zones ----------------------------------------------------------------------------------


@SETTINGS
@given(st.sampled_from(NAMES) | st.sampled_from(NAMES).map(str.swapcase) | st.text(max_size=25))
def test_canonicalize_is_idempotent_and_accepts_its_results(name: str) -> None:
    try:
        result = canonicalize_time_zone(name)
    except ScheduleInputError as err:
        assert err.code == "invalid_time_zone"
        assert err.message == "time_zone must be UTC or a valid IANA Area/Location name."
        return
    assert canonicalize_time_zone(result) == result
    assert result == "UTC" or (result in NAMES and "/" in result)


# --- the fold against a simple model --------------------------------------------------------

BASE = parse_instant("2027-01-10T08:00:00.000Z")
PREFIXES = ["schedule-", "x", "é ", "a\nb", "🙂", "q\u00a0"]


def _model_advance(target: int, interval: int, accepted: int) -> int | None:
    """The next target after a dispatch at ``accepted``, by stepping (no division)."""
    following = target + interval
    while following <= accepted:
        following += interval
    return following if following <= MAX_MS else None


def _history(data: st.DataObject) -> tuple[list[dict], Fold]:
    """A valid sequence of change payloads and the fold a simple model expects of it."""
    active: list[AfterRecord | AtRecord | EveryRecord] = []
    seen: list[str] = []
    payloads: list[dict] = []
    for _ in range(data.draw(st.integers(0, 30), label="steps")):
        op = data.draw(st.sampled_from(["create", "delete", "dispatch"] if active else ["create"]))
        if op == "create":
            rid = f"{data.draw(st.sampled_from(PREFIXES))}{len(seen)}"
            target = data.draw(st.integers(BASE - 10**9, BASE + 10**11)
                               | st.integers(MAX_MS - 10**7, MAX_MS), label="target")
            at = format_instant(target)
            kind = data.draw(st.sampled_from(["after", "at", "every"]))
            prompt = data.draw(st.sampled_from(["p", "drink water", "a\n b", "«x»"]))
            if kind == "after":
                seconds = data.draw(st.integers(1, 10**6))
                record: AfterRecord | AtRecord | EveryRecord = AfterRecord(rid, prompt, seconds, at)
                payloads.append(cl.after(rid, at, prompt=prompt, seconds=seconds))
            elif kind == "at":
                record = AtRecord(rid, prompt, at)
                payloads.append(cl.at(rid, at, prompt=prompt))
            else:
                seconds = data.draw(st.integers(300, 10**5))
                record = EveryRecord(rid, prompt, seconds, at)
                payloads.append(cl.every(rid, at, prompt=prompt, seconds=seconds))
            active.append(record)
            seen.append(rid)
            continue
        index = data.draw(st.integers(0, len(active) - 1))
        record = active[index]
        if op == "delete":
            payloads.append(cl.delete(record.id))
            del active[index]
        elif type(record) is not EveryRecord:
            payloads.append(cl.dispatch(record.id))
            del active[index]
        else:
            target = parse_instant(record.scheduled_at)
            interval = record.every_seconds * 1000
            accepted = min(MAX_MS, target + data.draw(st.integers(0, 40 * interval)))
            payloads.append(cl.dispatch(record.id, format_instant(accepted)))
            following = _model_advance(target, interval, accepted)
            if following is None:
                del active[index]
            else:
                active[index] = EveryRecord(record.id, record.prompt, record.every_seconds,
                                            format_instant(following))
    return payloads, Fold(tuple(active), tuple(seen))


@SETTINGS
@given(st.data())
def test_fold_equals_a_simple_model(data: st.DataObject) -> None:
    payloads, expected = _history(data)
    active, seen = expected.active, expected.seen_ids
    junk = [Ev("schedule/change", {"version": 7}), Ev("turn/start", {})][: data.draw(st.integers(0, 2))]
    assert fold(junk + cl.log(*payloads), len(junk)) == expected
    assert fold(junk + cl.log(*payloads, raw=True), len(junk)) == expected
    events = cl.log(*payloads)
    for i, payload in enumerate(payloads):
        check_append(events[:i], 0, payload)
    # any transition on an inactive id, or a reused id, corrupts the log
    gone = [rid for rid in seen if rid not in {r.id for r in active}] + ["never-created"]
    bad = data.draw(st.sampled_from(
        [cl.delete(gone[0]), cl.dispatch(gone[0])] + ([cl.at(seen[0], "2027-01-10T08:00:00.000Z")] if seen else [])))
    with pytest.raises(ScheduleLogError):
        fold(cl.log(*payloads, bad), 0)


def _outcome(fn: Callable[[], Fold]) -> Fold | tuple[type[BaseException], str]:
    try:
        return fn()
    except (ScheduleLogError, OSError) as exc:
        return type(exc), str(exc)


@SETTINGS
@given(st.data())
def test_incremental_fold_equals_the_full_fold(data: st.DataObject) -> None:
    """Fed a growing log in random chunks, ``IncrementalFold`` answers exactly what ``fold``
    answers after every append, including the error once a corrupt or unreadable event is in."""
    payloads, expected = _history(data)
    seed = data.draw(st.integers(0, 2), label="seed")
    complete = [Ev("schedule/change", {"version": 7}), Ev("turn/start", {})][:seed]
    complete += cl.log(*payloads)
    corrupt = data.draw(st.booleans(), label="corrupt")
    if corrupt:
        bad = data.draw(st.sampled_from(
            [Ev("schedule/change", {"version": 2}), BrokenEv(), Ev("schedule/change", cl.delete("nope"))]))
        complete.insert(data.draw(st.integers(seed, len(complete)), label="at"), bad)
    incremental = IncrementalFold()
    log: list = complete[:seed]
    while True:
        for _ in range(data.draw(st.integers(1, 2), label="calls")):  # a repeated call is cached
            expected_now = _outcome(functools.partial(fold, log, seed))
            assert _outcome(functools.partial(incremental, log, seed)) == expected_now
        if len(log) == len(complete):
            break
        log = log + complete[len(log): len(log) + data.draw(st.integers(1, 5), label="chunk")]
    if not corrupt:
        assert incremental(log, seed) == expected


# --- the incremental guard against check_append (schedule §6.4) ------------------------------

GUARD_IDS = ["a", "b", "schedule-1", "é"]


def _candidate(data: st.DataObject) -> object:
    """A ``schedule/change`` payload about to be appended: valid or not, as a dict or raw bytes."""
    rid = data.draw(st.sampled_from(GUARD_IDS), label="id")
    at = format_instant(BASE + data.draw(st.integers(-10**6, 10**7), label="offset"))
    payload = data.draw(st.sampled_from([
        cl.after(rid, at), cl.at(rid, at), cl.every(rid, at), cl.delete(rid), cl.dispatch(rid),
        cl.dispatch(rid, at), {"version": 2, "operation": "delete", "id": rid}, [rid],
    ]), label="payload")
    return json.dumps(payload).encode() if data.draw(st.booleans(), label="raw") else payload


def _other_event(data: st.DataObject) -> Ev | BrokenEv:
    """An event the host appends between changes; rarely one that corrupts the log."""
    return data.draw(st.sampled_from(
        [Ev("turn/start", {"turn": 1}), Ev("user/message", {"role": "user"}), Ev("step/end", {})] * 3
        + [Ev("schedule/change", {"version": 2}), BrokenEv()]), label="other")


@SETTINGS
@given(st.data())
def test_the_guard_answers_what_check_append_answers_at_every_step(data: st.DataObject) -> None:
    """Random valid and invalid candidates, appended when ``check_append`` accepts them, with
    other events (and the odd corrupt one) in between: ``ScheduleGuard.check`` gives the same
    outcome as ``check_append`` at every step, through refusals and after corruption."""
    seed = data.draw(st.integers(0, 2), label="seed")
    log: list[Ev | RawEv | BrokenEv] = [Ev("schedule/change", {"version": 7}), Ev("turn/start", {})][:seed]
    guard = ScheduleGuard()
    for _ in range(data.draw(st.integers(1, 40), label="steps")):
        if data.draw(st.integers(0, 4), label="other?") == 0:
            log.append(_other_event(data))
            continue
        candidate = _candidate(data)
        expected = _outcome(functools.partial(check_append, log, seed, candidate))
        assert _outcome(functools.partial(guard.check, log, seed, candidate)) == expected
        if expected is None:
            text = candidate if isinstance(candidate, bytes) else json.dumps(candidate).encode()
            log.append(RawEv("schedule/change", text))


# --- the fold state's decision against decide (schedule §7.2) --------------------------------


def _decision(fn: Callable[[], object]) -> object:
    try:
        return fn()
    except (ScheduleLogError, ValueError) as exc:
        return type(exc), str(exc)


def _now(data: st.DataObject, active: tuple[AfterRecord | AtRecord | EveryRecord, ...]) -> object:
    """A decision time near the targets of ``active`` (before, at, after, far after), or one
    that makes the decision fail."""
    targets = [parse_instant(r.scheduled_at) for r in active] or [BASE]
    target = data.draw(st.sampled_from(targets), label="near")
    return data.draw(st.sampled_from([target - 1, target, target + 1, target + 10**6, target + 10**10,
                                      MAX_MS, MAX_MS + 1, float(target), 1.5, True]), label="now")


@SETTINGS
@given(st.data())
def test_the_fold_state_decides_what_decide_decides(data: st.DataObject) -> None:
    """``IncrementalFold.state(...).decide(now)``, the runtime's decision from targets parsed
    once, equals ``decide(fold(...).active, now)`` (the public decision, which parses every
    record) for every prefix of random histories and decision times, errors included."""
    payloads, _ = _history(data)
    events = cl.log(*payloads, raw=data.draw(st.booleans(), label="raw"))
    incremental = IncrementalFold()
    end = 0
    while True:
        state = incremental.state(events[:end], 0)
        active = fold(events[:end], 0).active
        for _ in range(data.draw(st.integers(0, 3), label="decisions")):
            now = _now(data, active)
            assert _decision(functools.partial(state.decide, now)) == _decision(
                functools.partial(decide, active, now))
        if data.draw(st.booleans(), label="show?"):  # a shown fold refreshes moved records
            assert incremental(events[:end], 0).active == active
        if end == len(events):
            break
        end += data.draw(st.integers(1, 5), label="chunk")
        end = min(end, len(events))


# --- local wall time round trips ------------------------------------------------------------

ZONES = ["America/New_York", "Europe/London", "Australia/Sydney", "Australia/Lord_Howe",
         "Pacific/Chatham", "Europe/Paris", "Pacific/Apia", "America/St_Johns", "Asia/Kolkata",
         "America/Sao_Paulo", "Africa/Casablanca", "Europe/Dublin", "Antarctica/Troll", "UTC"]
TRANSITION_DAYS = ["2027-03-14", "2027-11-07", "2027-03-28", "2027-10-31", "2027-04-04", "2027-10-03",
                   "2027-09-26", "2011-12-30", "1918-03-31", "1883-11-18", "2026-03-29", "2026-10-25"]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _rules(name: str):
    return UTC if name == "UTC" else zoneinfo.ZoneInfo(name)


def _local_object(dt: datetime, name: str) -> dict[str, str]:
    return {"date": f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}",
            "time": f"{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}.{dt.microsecond // 1000:03d}",
            "time_zone": name}


def _resolve(local: dict[str, str]) -> int:
    return parse_instant(create_at("schedule-1", "p", local, MIN_MS - 1).scheduled_at)


def _wall(t: int, name: str) -> datetime:
    return (EPOCH + timedelta(milliseconds=t)).astimezone(_rules(name))


@SETTINGS
@given(st.sampled_from(ZONES),
       st.integers(MIN_MS, MAX_MS) | st.integers(-5 * 10**12, 5 * 10**12))
def test_instant_to_local_to_instant(name: str, t: int) -> None:
    try:
        wall = _wall(t, name)
    except OverflowError:  # the local wall time is outside years 1-9999
        assume(False)
    result = _resolve(_local_object(wall, name))
    if wall.fold == 0:
        assert result == t
    else:  # the second occurrence of an ambiguous wall time: the earlier instant is chosen
        assert result < t
        assert _wall(result, name).replace(tzinfo=None) == wall.replace(tzinfo=None, fold=0)


def _exists(naive: datetime, name: str) -> bool:
    """Whether some instant shows ``naive`` on the zone's clock (checked with datetime alone)."""
    zone = _rules(name)
    for f in (0, 1):
        try:
            back = naive.replace(tzinfo=zone, fold=f).astimezone(UTC).astimezone(zone)
        except OverflowError:
            continue
        if back.replace(tzinfo=None) == naive:
            return True
    return False


@SETTINGS
@given(st.sampled_from(ZONES),
       st.sampled_from(TRANSITION_DAYS).map(lambda d: datetime(*map(int, d.split("-"))))
       | st.datetimes(datetime(1, 1, 1), datetime(9999, 12, 31, 23, 59, 59)),
       st.integers(0, 86_400_000 - 1))
def test_local_to_instant_to_local(name: str, day: datetime, millis: int) -> None:
    naive = day.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(milliseconds=millis)
    assume(naive.year == day.year)  # stay inside datetime's range near year 9999
    local = _local_object(naive, name)
    try:
        result = _resolve(local)
    except ScheduleInputError as err:
        if err.code == "time_out_of_range":
            return
        assert (err.code, err.message) == (
            "invalid_rule", "The local at time does not exist in the selected time zone.")
        assert not _exists(naive, name)
        return
    assert _wall(result, name).replace(tzinfo=None) == naive


# --- decoding never raises anything else -----------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=15,
)
FIELDS = ["version", "operation", "schedule", "id", "kind", "prompt", "afterSeconds", "everySeconds",
          "scheduledAt", "acceptedAt"]
VALID = [cl.after("a", "2027-01-10T08:00:00.000Z"), cl.at("b", "2027-01-10T08:00:00.000Z"),
         cl.every("c", "2027-01-10T08:00:00.000Z"), cl.delete("d"), cl.dispatch("e"),
         cl.dispatch("f", "2027-01-10T08:00:00.000Z")]


@st.composite
def near_valid(draw: st.DrawFn) -> object:
    payload = json.loads(json.dumps(draw(st.sampled_from(VALID))))
    target = payload.get("schedule", payload) if draw(st.booleans()) else payload
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(FIELDS))
        action = draw(st.sampled_from(["set", "drop"]))
        if action == "drop":
            target.pop(key, None)
        else:
            target[key] = draw(JSON | st.sampled_from([1, 1.0, True, "1", "create", "delete",
                                                       "dispatch", "after", "at", "every", 300,
                                                       "2027-02-29T00:00:00.000Z", " a", ""]))
    return payload


@SETTINGS
@given(JSON | near_valid())
def test_decode_raises_only_schedule_log_errors(value: object) -> None:
    text = json.dumps(value)
    outcomes = []
    for data in (value, text.encode(), msgspec.Raw(text.encode())):
        try:
            outcomes.append(decode_change(data))
        except ScheduleLogError:
            outcomes.append(None)
    assert outcomes[0] == outcomes[1] == outcomes[2]


@SETTINGS
@given(st.binary(max_size=60))
def test_decode_of_arbitrary_bytes(raw: bytes) -> None:
    try:
        decode_change(raw)
    except ScheduleLogError:
        pass
