"""timecontext over logs read by eventlog: real ``eventlog.Event`` values (time-context §3.1,
time-context §13)."""

from __future__ import annotations

from pathlib import Path

from eventlog import read_log
from schedule import canonicalize_time_zone as canonicalize
from timecontext import Enter, PreStep, ReadingReport, TimeContext, validate_readings

from .support import ManualClock

REMINDERS = Path(__file__).resolve().parents[2] / "fixtures" / "reminders-1.jsonl"


def test_validate_readings_over_a_log_read_by_eventlog() -> None:
    events = read_log(REMINDERS).events
    assert validate_readings(events, canonicalize) == ReadingReport(6, 0, ())


def test_the_hook_reproduces_every_reading_of_the_fixture() -> None:
    """Replaying each step with the clock at the reading's append time gives its exact text."""
    events = read_log(REMINDERS).events
    replayed = 0
    for index, event in enumerate(events):
        data = event.value()
        if event.type != "user/message" or data["source"].get("plugin") != "time-context":
            continue
        start = max(i for i in range(index) if events[i].type == "step/start")
        position = events[start].value()
        batch = tuple({k: v for k, v in e.value().items() if k != "id"}
                      for e in events[start + 1:index])
        hook = TimeContext(ManualClock(event.time), canonicalize=canonicalize,
                           time_zone="Europe/Berlin")
        pre = PreStep(position["turn"], position["step"], events[:start],
                      continuation=position["step"] > 1, cancelled=False)
        decision = hook.pre_step(pre, Enter(batch))
        assert isinstance(decision, Enter)
        assert decision.messages[-1] == {k: v for k, v in data.items() if k != "id"}
        replayed += 1
    assert replayed == 6
