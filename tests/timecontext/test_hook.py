"""The pre-step hook: construction, the algorithm of time-context §3.3, baselines, the gate
(time-context §8-10, time-context §14)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from schedule import ScheduleInputError
from schedule import canonicalize_time_zone as canonicalize
from timecontext import (
    ClientZoneError,
    Enter,
    PreStep,
    PreStepHook,
    Reject,
    TimeContext,
    TimeContextConfigError,
    reading_message,
)

from .support import B, Ev, ManualClock, Session, U, assistant, readings, text_of

UNIQUE_BERLIN = ("Client time zone for this request: Europe/Berlin. "
                 "Interpret otherwise-unqualified dates and times in this zone.")
MISSING = ("Client time zone for this request: unavailable. "
           "Ask the user to clarify otherwise-unqualified dates and times.")
MIXED_SAO_BERLIN = ('Client time zone for this request: mixed ["America/Sao_Paulo","Europe/Berlin"]. '
                    "Ask the user to clarify otherwise-unqualified dates and times.")
INTERVAL = "time-context: refreshIntervalMs must be a non-negative safe integer, got "


def make(clock: ManualClock | None = None, **settings: Any) -> TimeContext:
    settings.setdefault("time_zone", "UTC")
    return TimeContext(clock or ManualClock(), canonicalize=canonicalize, **settings)


def lines(decision: Any) -> list[str]:
    assert isinstance(decision, Enter)
    return text_of(decision.messages[-1]).split("\n")


def close_turn(s: Session, turn: int, step: int, time: int) -> None:
    s.append("assistant/message", {"turn": turn, "step": step, "message": assistant()}, time)
    s.append("step/end", {"turn": turn, "step": step}, time)
    s.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}}, time)


# --- time-context §8.3, time-context §10 construction ---------------------------------------

@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (-250, "-250"), (2.5, "2.5"), (True, "true"), (False, "false"),
        (float("-inf"), "-Infinity"), (float("inf"), "Infinity"), (float("nan"), "NaN"),
        (-1.0, "-1"), (-0.5, "-0.5"), (2**53, "9007199254740992"),
        (1e20, "100000000000000000000"), (1e21, "1e+21"), (2.0**53, "9007199254740992"),
        ("60000", "60000"), ("", ""), ([60000], "[60000]"), ({"ms": 1}, "{'ms': 1}"),
    ],
)
def test_e10_bad_intervals(value: object, shown: str) -> None:
    with pytest.raises(TimeContextConfigError) as caught:
        make(refresh_interval_ms=value)
    assert str(caught.value) == INTERVAL + shown
    assert isinstance(caught.value, ValueError)


HUGE = 10**5000  # past sys.get_int_max_str_digits(), where str() of an int raises ValueError


@pytest.mark.parametrize(
    ("value", "shown"),
    [(HUGE, "1" + "0" * 5000), (-HUGE, "-1" + "0" * 5000)],
    ids=["huge", "minus-huge"],
)
def test_a_huge_interval_is_named_in_decimal(value: int, shown: str) -> None:
    # time-context §10: "decimal for an int". str() refused it, so construction raised a bare ValueError
    # about Python's digit limit instead of TimeContextConfigError.
    with pytest.raises(TimeContextConfigError) as caught:
        make(refresh_interval_ms=value)
    assert str(caught.value) == INTERVAL + shown


@pytest.mark.parametrize(
    ("value", "stored"),
    [(None, 0), (0, 0), (60000.0, 60000), (-0.0, 0), (300000, 300000),
     (2**53 - 1, 2**53 - 1), (float(2**53 - 1), 2**53 - 1)],
)
def test_e10_good_intervals(value: object, stored: int) -> None:
    hook = make(refresh_interval_ms=value)
    assert hook.refresh_interval_ms == stored
    assert type(hook.refresh_interval_ms) is int


def test_the_interval_is_checked_before_the_zone() -> None:
    with pytest.raises(TimeContextConfigError, match="refreshIntervalMs"):
        make(time_zone="utc", refresh_interval_ms=-1)
    with pytest.raises(TimeContextConfigError, match="refreshIntervalMs"):
        TimeContext(ManualClock(), canonicalize=canonicalize, refresh_interval_ms=True,
                    environ={"TZ": "CET-1CEST"})


@pytest.mark.parametrize(
    ("value", "quoted"),
    [("utc", '"utc"'), ("EST", '"EST"'), ("", '""'), ("Europe/Zürich", '"Europe/Zürich"'),
     ("Asia/Shanghai\n", '"Asia/Shanghai\\n"'), (5, "5"), (["Europe/Berlin"], '["Europe/Berlin"]'),
     (b"UTC", "\"b'UTC'\""), (False, "false")],
)
def test_invalid_configured_zone(value: object, quoted: str) -> None:
    with pytest.raises(TimeContextConfigError) as caught:
        make(time_zone=value)
    assert str(caught.value) == f"time-context: invalid IANA timeZone {quoted}"


def _cycle() -> list[object]:
    value: list[object] = []
    value.append(value)
    return value


@pytest.mark.parametrize(
    "value", [HUGE, [HUGE], {(1, 2): "UTC"}, _cycle()],
    ids=["huge", "huge-in-list", "tuple-key", "cycle"],
)
def test_a_configured_zone_json_cannot_write_is_still_a_config_error(value: object) -> None:
    # time-context §8.3: any non-str timeZone is refused with TimeContextConfigError. Building <q> with
    # json.dumps raised ValueError (digit limit, cycle) or TypeError (tuple key) instead.
    with pytest.raises(TimeContextConfigError, match=r"^time-context: invalid IANA timeZone "):
        make(time_zone=value)


def test_a_huge_configured_zone_is_quoted_in_decimal() -> None:
    with pytest.raises(TimeContextConfigError) as caught:
        make(time_zone=HUGE)
    assert str(caught.value) == "time-context: invalid IANA timeZone 1" + "0" * 5000


def test_an_unknown_configured_zone_is_raised_from_the_canonicaliser_error() -> None:
    with pytest.raises(TimeContextConfigError) as caught:
        make(time_zone="Mars/Olympus")
    assert str(caught.value) == 'time-context: invalid IANA timeZone "Mars/Olympus"'
    assert isinstance(caught.value.__cause__, ScheduleInputError)


@pytest.mark.parametrize(
    ("value", "fallback"),
    [("UTC", "UTC"), ("Etc/UTC", "UTC"), ("Asia/Calcutta", "Asia/Kolkata"),
     ("europe/berlin", "Europe/Berlin"), ("Etc/GMT+5", "Etc/GMT+5")],
)
def test_configured_zone_is_canonicalised(value: str, fallback: str) -> None:
    hook = make(time_zone=value, environ={"TZ": "CET-1CEST"})  # TZ is not consulted
    assert hook.fallback_zone == fallback


def test_settings_are_read_only() -> None:
    hook = make()
    with pytest.raises(AttributeError):
        hook.fallback_zone = "Europe/Berlin"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        hook.refresh_interval_ms = 5  # type: ignore[misc]


def test_system_zone_failure() -> None:
    with pytest.raises(TimeContextConfigError) as caught:
        TimeContext(ManualClock(), canonicalize=canonicalize, environ={"TZ": "CET-1CEST"})
    assert str(caught.value) == "time-context: failed to resolve the system time zone"


def test_the_process_zone_is_resolved_once(tmp_path: Path) -> None:
    localtime = tmp_path / "localtime"
    os.symlink("/usr/share/zoneinfo/Europe/Oslo", localtime)
    environ = {"TZ": ":Asia/Calcutta"}
    hook = TimeContext(ManualClock(), canonicalize=canonicalize, environ=environ,
                       localtime_path=str(localtime))
    environ["TZ"] = "Europe/Berlin"
    assert hook.fallback_zone == "Asia/Kolkata"
    del environ["TZ"]
    hook = TimeContext(ManualClock(), canonicalize=canonicalize, environ=environ,
                       localtime_path=str(localtime))
    localtime.unlink()
    os.symlink("/usr/share/zoneinfo/Asia/Tokyo", localtime)
    assert hook.fallback_zone == "Europe/Oslo"
    s = Session()
    s.append("turn/start", {"turn": 1})
    assert lines(s.enter(hook, 1, 1, [U("r")]))[0].endswith("[Europe/Oslo]")


def test_environ_defaults_to_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "America/Sao_Paulo")
    hook = TimeContext(ManualClock(), canonicalize=canonicalize)
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    assert hook.fallback_zone == "America/Sao_Paulo"


def test_time_context_is_a_pre_step_hook() -> None:
    hook: PreStepHook = make()
    assert callable(hook.pre_step)


# --- time-context §3.3 steps 1, 2 and 6 ---------------------------------------------------------

def started(turn: int = 1) -> Session:
    s = Session()
    s.append("turn/start", {"turn": turn})
    return s


def test_reject_is_returned_unchanged_without_reading_the_clock() -> None:
    clock = ManualClock()
    hook, s = make(clock), started()
    reject = Reject()
    assert hook.pre_step(s.pre(1, 1), reject) is reject
    assert hook.pre_step(s.pre(1, 2, continuation=True), reject) is reject
    assert clock.reads == 0


@pytest.mark.parametrize("continuation", [False, True])
def test_a_cancelled_turn_gets_no_reading(continuation: bool) -> None:
    clock = ManualClock()
    hook, s = make(clock), started()
    decision = Enter((U("r", "Europe/Berlin"),))
    assert hook.pre_step(s.pre(1, 1, continuation=continuation, cancelled=True), decision) \
        is decision
    assert clock.reads == 0


def test_an_empty_batch_that_opens_no_step_gets_no_reading() -> None:
    clock = ManualClock()
    hook, s = make(clock), started()
    for step in (1, 2):
        empty = Enter(())
        assert hook.pre_step(s.pre(1, step), empty) is empty
    assert clock.reads == 0


def test_an_empty_continuation_gets_a_reading_and_one_clock_sample() -> None:
    clock = ManualClock()
    hook, s = make(clock), started()
    decision = hook.pre_step(s.pre(1, 2, continuation=True), Enter(()))
    assert isinstance(decision, Enter) and len(decision.messages) == 1
    assert decision.messages[0]["source"]["plugin"] == "time-context"
    assert clock.reads == 1


@pytest.mark.parametrize("now", [B + 0.5, float("nan"), True, "1770724800000", None])
def test_a_clock_that_returns_no_integer_is_a_type_error(now: object) -> None:
    # time-context §3.1: the clock gives integer epoch ms. A float used to render "0.0s"-style durations or
    # pass the gate silently; NaN and str failed deep inside datetime or the gate arithmetic.
    hook, s = make(ManualClock(now)), started()  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^time-context: clock\.now_ms\(\) must return an int"):
        hook.pre_step(s.pre(1, 2, continuation=True), Enter(()))


def test_the_reading_is_appended_last_and_the_batch_is_untouched() -> None:
    clock = ManualClock()
    hook, s = make(clock), started()
    batch = (U("a", "Europe/Berlin"), {"role": "user", "source": {"kind": "plugin",
             "plugin": "schedule"}, "content": [{"type": "text", "text": "x"}]}, U("b"))
    decision = hook.pre_step(s.pre(1, 1), Enter(batch))
    assert isinstance(decision, Enter) and isinstance(decision.messages, tuple)
    assert len(decision.messages) == 4
    assert all(got is sent for got, sent in zip(decision.messages, batch))
    text = text_of(decision.messages[3])
    assert decision.messages[3] == reading_message(text)
    assert clock.reads == 1


def test_one_instance_serves_every_session() -> None:
    shared = make(ManualClock(), refresh_interval_ms=60000)
    one, two = started(), started()
    one.enter(shared, 1, 1, [U("a", "Europe/Berlin")])
    # Session one's reading neither skips session two nor lends it a zone.
    got = shared.pre_step(two.pre(1, 1), Enter((U("b"),)))
    own = make(ManualClock(), refresh_interval_ms=60000).pre_step(two.pre(1, 1), Enter((U("b"),)))
    assert lines(got) == lines(own)
    assert lines(got)[1] == MISSING


# --- time-context §14 worked examples -------------------------------------------------------

def e1_session() -> tuple[Session, TimeContext]:
    s = Session(ManualClock(B - 120000))
    hook = TimeContext(s.clock, canonicalize=canonicalize, time_zone="Asia/Calcutta")
    s.append("turn/start", {"turn": 1})
    s.append("step/start", {"turn": 1, "step": 1})
    s.message(U("r-1", "Europe/Berlin"))
    close_turn(s, 1, 1, B - 89750)
    s.append("turn/start", {"turn": 2}, B)
    return s, hook


def test_e1_unique_zone_and_baseline_in_the_previous_turn() -> None:
    s, hook = e1_session()
    s.clock.now = B + 400
    decision = s.enter(hook, 2, 1, [U("r-2", "Europe/Berlin")], append_at=B + 412)
    assert lines(decision) == [
        "Time sampled while preparing turn 2, step 1: 2026-02-10T13:00:00+01:00[Europe/Berlin]",
        UNIQUE_BERLIN,
        "Elapsed since the preceding model-visible message: 1m 30s.",
    ]


def test_e2_steering_makes_the_turn_mixed() -> None:
    s, hook = e1_session()
    assert hook.fallback_zone == "Asia/Kolkata"
    s.clock.now = B + 400
    first = s.enter(hook, 2, 1, [U("r-2", "Europe/Berlin")], append_at=B + 412)
    s.append("assistant/message", {"turn": 2, "step": 1, "message": assistant()}, B + 60000)
    s.append("tool/call", {"turn": 2, "step": 1, "callId": "c", "name": "t", "arguments": "{}"},
             B + 60001)
    s.append("tool/result", {"turn": 2, "step": 1, "message": {}}, B + 124900)
    s.append("step/end", {"turn": 2, "step": 1}, B + 124900)
    s.clock.now = B + 125000
    second = s.enter(hook, 2, 2, [U("r-3", "America/Sao_Paulo")], continuation=True)
    assert lines(second) == [
        "Time sampled while preparing turn 2, step 2: 2026-02-10T17:32:05+05:30[Asia/Kolkata]",
        MIXED_SAO_BERLIN,
        "Elapsed since the preceding step context: 2m 4s.",
    ]
    # Every later step of the turn stays mixed; the earlier reading is left as it was.
    s.append("step/end", {"turn": 2, "step": 2}, B + 130000)
    s.clock.now = B + 130000
    third = s.enter(hook, 2, 3, [], continuation=True)
    assert lines(third)[1] == MIXED_SAO_BERLIN
    assert lines(third)[2] == "Elapsed since the preceding step context: 5s."
    assert [text_of(e.value()) for e in readings(s.events)] == [
        text_of(first.messages[-1]), text_of(second.messages[-1]), text_of(third.messages[-1])]
    assert lines(first)[1] == UNIQUE_BERLIN


def test_e3_fresh_session_without_zone_uses_the_process_fallback(tmp_path: Path) -> None:
    localtime = tmp_path / "localtime"
    os.symlink("/usr/share/zoneinfo/Australia/Adelaide", localtime)
    clock = ManualClock(B)
    hook = TimeContext(clock, canonicalize=canonicalize, environ={},
                       localtime_path=str(localtime))
    s = Session(clock)
    s.append("turn/start", {"turn": 1})
    assert lines(s.enter(hook, 1, 1, [U("rpc-1")])) == [
        ("Time sampled while preparing turn 1, step 1: "
         "2026-02-10T22:30:00+10:30[Australia/Adelaide]"),
        MISSING,
        "Elapsed since the preceding model-visible message: unavailable.",
    ]


def e4_session() -> tuple[Session, TimeContext]:
    s = Session(ManualClock(B - 1000))
    hook = TimeContext(s.clock, canonicalize=canonicalize, time_zone="UTC",
                       refresh_interval_ms=300000)
    for turn in (1, 2, 3):
        s.append("turn/start", {"turn": turn})
        s.append("turn/end", {"turn": turn, "reason": {"kind": "blocked"}})
    s.append("turn/start", {"turn": 4})
    s.clock.now = B
    s.enter(hook, 4, 1, [U("r-4")])
    s.append("assistant/message", {"turn": 4, "step": 1, "message": assistant()}, B + 1000)
    s.append("tool/result", {"turn": 4, "step": 1, "message": {}}, B + 2000)
    s.append("step/end", {"turn": 4, "step": 1}, B + 2000)
    assert [e.time for e in readings(s.events)] == [B]
    return s, hook


def test_e4_interval_gate() -> None:
    s, hook = e4_session()
    pre = s.pre(4, 2, continuation=True)
    empty = Enter(())
    s.clock.now = B + 299999
    assert hook.pre_step(pre, empty) is empty
    s.clock.now = B + 300000
    assert lines(hook.pre_step(pre, empty))[2] == "Elapsed since the preceding step context: 5m 0s."
    s.clock.now = B - 2000
    assert lines(hook.pre_step(pre, empty)) == [
        "Time sampled while preparing turn 4, step 2: 2026-02-10T11:59:58+00:00[UTC]",
        MISSING,
        "Elapsed since the preceding step context: 0s.",
    ]


# --- time-context §10 the gate --------------------------------------------------------------

def test_gate_with_no_reading_in_the_log_injects() -> None:
    s = started()
    s.append("user/message", {"role": "user", "source": {"kind": "plugin", "plugin": "other"},
                              "content": []}, B)
    assert isinstance(s.enter(make(s.clock, refresh_interval_ms=2**53 - 1), 1, 1, [U("r")]),
                      Enter)
    assert len(readings(s.events)) == 1


def test_gate_carries_across_turns_and_restarts() -> None:
    s, hook = e4_session()
    close_turn(s, 4, 2, B + 3000)
    s.append("turn/start", {"turn": 5}, B + 4000)
    s.clock.now = B + 299999
    batch = Enter((U("r-5", "Europe/Berlin"),))
    assert hook.pre_step(s.pre(5, 1), batch) is batch
    # A resumed process: a new instance sees the same durable log and decides the same.
    resumed = TimeContext(s.clock, canonicalize=canonicalize,
                          time_zone="UTC", refresh_interval_ms=300000)
    assert resumed.pre_step(s.pre(5, 1), batch) is batch
    s.clock.now = B + 300000
    assert lines(resumed.pre_step(s.pre(5, 1), batch))[0].endswith(
        "2026-02-10T13:05:00+01:00[Europe/Berlin]")


def test_a_positive_interval_never_changes_the_text() -> None:
    s, hook = e4_session()
    every = make(ManualClock(B + 400000))
    s.clock.now = B + 400000
    pre = s.pre(4, 2, continuation=True)
    assert lines(hook.pre_step(pre, Enter(()))) == lines(every.pre_step(pre, Enter(())))


def reading_event(seq: int, time: int,
                  text: str = "x\nBrowser time zone for this request: X\ny") -> Ev:
    """A reading as another implementation may have logged it (only its source matters)."""
    return Ev(seq, "user/message", time, json.dumps({"id": f"m{seq}", **reading_message(text)}))


def test_gate_finds_readings_in_seeded_history_and_foreign_readings() -> None:
    # A fork child: the parent's events (with their own times) come first, then the marker.
    s = Session(ManualClock(B + 1000))
    s.events.append(Ev(0, "turn/start", B - 5000, '{"turn":1}'))
    s.events.append(reading_event(1, B - 4000))
    s.append("session/end-seed", {})
    s.append("turn/start", {"turn": 2})
    hook = make(s.clock, refresh_interval_ms=10000)
    skipped = Enter((U("r"),))
    assert hook.pre_step(s.pre(2, 1), skipped) is skipped
    s.clock.now = B + 6000
    assert isinstance(hook.pre_step(s.pre(2, 1), skipped), Enter)


def test_when_the_gate_skips_nothing_is_validated() -> None:
    s, hook = e4_session()
    s.clock.now = B + 1
    bad = Enter((U("x", "Asia/Calcutta"),))
    assert hook.pre_step(s.pre(4, 2), bad) is bad
    s.clock.now = B + 300000
    with pytest.raises(ClientZoneError, match=r'^client time zone must be canonical: "Asia/Calcutta"$'):
        hook.pre_step(s.pre(4, 2), bad)


def test_gate_skipped_reading_moves_the_later_baseline_back() -> None:
    s, hook = e4_session()
    s.clock.now = B + 100000
    skipped = s.enter(hook, 4, 2, [], continuation=True)
    assert isinstance(skipped, Enter) and skipped.messages == ()
    s.append("step/end", {"turn": 4, "step": 2}, B + 200000)
    s.clock.now = B + 301000
    assert lines(s.enter(hook, 4, 3, [], continuation=True))[2] == \
        "Elapsed since the preceding step context: 5m 1s."


# --- time-context §9 baselines ------------------------------------------------------------

@pytest.mark.parametrize(
    "kind", ["user/message", "assistant/message", "tool/result"]
)
def test_step_one_baseline_is_the_latest_message_of_any_source(kind: str) -> None:
    s = Session(ManualClock(B))
    s.append("turn/start", {"turn": 1}, B - 900000)
    data = ({"role": "user", "source": {"kind": "plugin", "plugin": "schedule"}, "content": []}
            if kind == "user/message" else {"turn": 1, "step": 1, "message": assistant()})
    s.append(kind, data, B - 61000)
    # None of these is a message, so none of them is the baseline.
    for other in ("step/end", "turn/end", "agent/inbox/spliced", "request/header", "tool/call",
                  "session/title", "turn/start"):
        s.append(other, {"turn": 2}, B - 1000)
    assert lines(s.enter(make(s.clock), 2, 1, [U("r")]))[2] == \
        "Elapsed since the preceding model-visible message: 1m 1s."


def test_step_one_in_a_new_session_has_no_baseline() -> None:
    s = started()
    assert lines(s.enter(make(s.clock), 1, 1, [U("r")]))[2] == \
        "Elapsed since the preceding model-visible message: unavailable."


def test_later_step_stops_at_its_turn_start() -> None:
    s, hook = e1_session()  # turn 1 had no reading; turn 1 baseline rules do not apply
    s.events.insert(2, reading_event(2, B - 110000, "an older reading"))
    s.clock.now = B + 5000
    assert lines(s.enter(hook, 2, 2, [], continuation=True))[2] == \
        "Elapsed since the preceding step context: unavailable."


def test_later_step_walks_past_other_turn_starts() -> None:
    s = Session(ManualClock(B))
    s.events.append(reading_event(0, B - 7000, "a reading"))
    s.append("turn/start", {"turn": 2}, B - 6000)
    s.append("turn/start", {"turn": True}, B - 5000)
    s.append("turn/start", {"turn": 3.0}, B - 4000)
    # No turn/start of turn 3 with an int: the walk reaches the reading.
    assert lines(s.enter(make(s.clock), 3, 2, [], continuation=True))[2] == \
        "Elapsed since the preceding step context: 7s."


# --- time-context §7 which turn's messages count -------------------------------------------

def test_zones_of_earlier_turns_and_queued_follow_ups_never_count() -> None:
    s, hook = e1_session()
    s.clock.now = B + 400
    s.enter(hook, 2, 1, [U("r-2", "Europe/Berlin")])
    close_turn(s, 2, 1, B + 500)
    s.append("turn/start", {"turn": 3}, B + 600)
    follow_up = {"role": "user", "source": {"kind": "plugin", "plugin": "schedule"},
                 "content": [{"type": "text", "text": "[SCHEDULE REMINDER] x"}]}
    decision = s.enter(hook, 3, 1, [follow_up])
    assert lines(decision)[1] == MISSING
    assert lines(decision)[0].endswith("[Asia/Kolkata]")


def test_only_messages_after_the_last_turn_start_of_the_turn_count() -> None:
    s = Session()
    s.append("turn/start", {"turn": 1})
    s.message(U("a", "Asia/Tokyo"))
    s.append("turn/start", {"turn": 1})  # e.g. a retried turn: the last one is the open turn
    s.message(U("b", "Europe/Berlin"))
    s.append("agent/inbox/spliced", {"target": "next-step", "start": 0,
                                     "inserted": [U("c", "America/Sao_Paulo")]})
    assert lines(s.enter(make(s.clock), 1, 2, [], continuation=True))[1] == UNIQUE_BERLIN


def test_a_bad_zone_already_in_the_log_raises() -> None:
    s = started()
    s.message(U("a", "Etc/UTC"))
    with pytest.raises(ClientZoneError) as caught:
        s.enter(make(s.clock), 1, 2, [], continuation=True)
    assert str(caught.value) == 'client time zone must be canonical: "Etc/UTC"'
    assert readings(s.events) == []


# --- cost: scans stop early (not timed; checked by which events are decoded) ------------------

@dataclass(frozen=True)
class Poison:
    seq: int
    type: str
    time: int = 0

    def value(self) -> Any:
        raise AssertionError(f"event {self.seq} was decoded")


def test_scans_do_not_decode_events_before_the_open_turn() -> None:
    old: list[Any] = [Poison(i, "user/message") for i in range(50)]
    old += [Poison(50 + i, "turn/start") for i in range(5)]
    s = Session(ManualClock(B))
    s.events.extend(old)
    s.append("assistant/message", {}, B - 3000)
    s.append("turn/start", {"turn": 7}, B - 2000)
    s.enter(make(s.clock), 7, 1, [U("r", "Europe/Berlin")])
    s.clock.now = B + 1000
    s.enter(make(s.clock, refresh_interval_ms=500), 7, 2, [], continuation=True)
    assert len(readings(s.events[len(old):])) == 2


def test_the_gate_stops_at_the_first_reading_it_meets() -> None:
    s = Session(ManualClock(B))
    s.events.extend(Poison(i, "user/message") for i in range(20))
    s.events.append(reading_event(20, B - 60000, "the latest reading"))
    s.append("turn/start", {"turn": 2})
    hook = make(s.clock, refresh_interval_ms=60001)
    batch = Enter((U("r"),))
    assert hook.pre_step(s.pre(2, 1), batch) is batch


class CountingView(Sequence[Any]):
    """A read-only view that records which positions were read."""

    def __init__(self, events: list[Any]) -> None:
        self._events = events
        self.read: set[int] = set()

    def __len__(self) -> int:
        return len(self._events)

    def __getitem__(self, index: Any) -> Any:
        assert isinstance(index, int) and index >= 0
        self.read.add(index)
        return self._events[index]


def test_events_may_be_a_read_only_view() -> None:
    s, hook = e4_session()
    view = CountingView(s.events)
    s.clock.now = B + 300000
    decision = hook.pre_step(PreStep(4, 2, view, True, False), Enter(()))
    assert lines(decision)[2] == "Elapsed since the preceding step context: 5m 0s."
    turn_start = max(i for i, e in enumerate(s.events) if e.type == "turn/start")
    assert min(view.read) == turn_start
