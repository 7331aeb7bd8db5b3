"""Benchmark of ``TimeContext.pre_step`` on a session of 100k events (run by hand).

    .venv/bin/python -m tests.bench.bench_timecontext [--quick] [--json]   (from the project root)

Events are real ``eventlog.Event`` values (data kept as raw JSON bytes, decoded by ``value()``,
as in a log read from disk). Each row prints a case's p50 per call next to the baseline measured in
the same run: a bare scan of every event (``.type`` only), a scan that decodes every
``user/message`` of the log, and one that decodes those of the open turn only.

Targets: a reading costs about a decoding scan back to the open turn (<= 2x), far below a scan of
the whole log (<= 0.1x at 100k events), except the interval gate's walk to the latest reading,
which stops at the first reading it meets: a log with no reading at all is the documented worst
case (<= 1.5x a decoding scan of the whole log). ``--quick`` uses 20k events.
"""

from __future__ import annotations

import statistics
import time
import zoneinfo
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from eventlog import Event
from schedule import canonicalize_time_zone
from tests.bench._rows import Row, bench_main, row
from timecontext import Enter, PreStep, TimeContext, reading_message, render_reading

B = 1770724800000


class Clock:
    def __init__(self, now: int) -> None:
        self.now = now

    def now_ms(self) -> int:
        return self.now


def _event(events: list[Event], type: str, time: int, data: Any) -> None:
    events.append(Event(type=type, seq=len(events), time=time,
                        data=msgspec.Raw(msgspec.json.encode(data))))


def _prompt(rpc: str, zone: str | None) -> dict[str, Any]:
    source: dict[str, Any] = {"kind": "user", "rpcId": rpc}
    if zone:
        source["clientTimeZone"] = zone
    return {"role": "user", "source": source,
            "content": [{"type": "text", "text": "please remind me about the meeting " * 4}]}


def _reading(turn: int, step: int, now: int, baseline: int | None) -> dict[str, Any]:
    return reading_message(render_reading(turn, step, now, ("Europe/Berlin",), "UTC", baseline))


def build_session(target: int, *, with_readings: bool = True) -> list[Event]:
    """About ``target`` events of two-step turns: prompt, reading, a tool round, a reply."""
    events: list[Event] = []
    now, turn = B, 0
    while len(events) < target:
        turn += 1
        _event(events, "turn/start", now, {"turn": turn})
        for step in (1, 2):
            _event(events, "step/start", now, {"turn": turn, "step": step})
            if step == 1:
                _event(events, "user/message", now,
                       {"id": f"u{turn}", **_prompt(f"r-{turn}", "Europe/Berlin")})
            if with_readings:
                _event(events, "user/message", now,
                       {"id": f"t{turn}.{step}", **_reading(turn, step, now, now - 5000)})
            _event(events, "request/header", now, {"header": {"config": {}}, "reason": "change"})
            now += 1500
            message = {"id": f"a{turn}.{step}", "role": "assistant",
                       "source": {"kind": "model", "provider": "p", "model": "m"},
                       "content": [{"type": "text", "text": "ok " * 40}]}
            _event(events, "assistant/message", now, {"turn": turn, "step": step, "message": message})
            if step == 1:
                _event(events, "tool/call", now, {"turn": turn, "step": 1, "callId": "c",
                                                  "name": "schedule_list", "arguments": "{}"})
                now += 200
                _event(events, "tool/result", now, {"turn": turn, "step": 1, "message": {
                    "id": f"x{turn}", "role": "user", "source": {"kind": "tool", "callId": "c"},
                    "content": [{"type": "tool-result", "toolCallId": "c", "isError": False,
                                 "content": [{"type": "text", "text": "[]"}]}]}})
            _event(events, "step/end", now, {"turn": turn, "step": step})
        _event(events, "turn/end", now, {"turn": turn, "reason": {"kind": "completed"}})
        now += 60000
    return events


def open_new_turn(events: list[Event], steps: int = 0) -> int:
    """Open the next turn (``turn/start``, step 1's ``step/start`` and the prompt), then complete
    ``steps`` steps, each with a reading; return the turn's number."""
    turn = sum(1 for e in events if e.type == "turn/start") + 1
    now = events[-1].time + 1000
    _event(events, "turn/start", now, {"turn": turn})
    _event(events, "step/start", now, {"turn": turn, "step": 1})
    _event(events, "user/message", now, {"id": "u", **_prompt("r", "Europe/Berlin")})
    for step in range(1, steps + 1):
        if step > 1:
            _event(events, "step/start", now, {"turn": turn, "step": step})
        _event(events, "user/message", now, {"id": f"t{step}", **_reading(turn, step, now, None)})
        _event(events, "assistant/message", now, {"turn": turn, "step": step, "message": {}})
        _event(events, "tool/result", now, {"turn": turn, "step": step, "message": {}})
        _event(events, "step/end", now, {"turn": turn, "step": step})
    return turn


def timed(call: Callable[[], object], calls: int) -> tuple[float, float]:
    """p50 and p99 in microseconds."""
    samples = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        call()
        samples.append((time.perf_counter_ns() - start) / 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.99))]


def bare_scan(events: Sequence[Event]) -> int:
    return sum(1 for e in events if e.type == "user/message")


def decode_scan(events: Sequence[Event]) -> int:
    return sum(1 for e in events if e.type == "user/message" and e.value() is not None)


def scan_to_turn_start(events: Sequence[Event]) -> int:
    for index in range(len(events) - 1, -1, -1):
        if events[index].type == "turn/start":
            return index
    return -1


def rows(quick: bool) -> list[Row]:
    """Every row: each ``pre_step`` case beside the scan it must stay near (or far below)."""
    n_events, calls = (20_000, 300) if quick else (100_000, 2000)
    zoneinfo.reset_tzpath(to=())

    base = build_session(n_events)
    late = base[-1].time + 600_000  # at least the interval after every reading: the gate injects
    soon = base[-1].time + 2_000  # within the interval of the latest reading: the gate skips

    def hook(now: int, interval: int = 0) -> TimeContext:
        return TimeContext(Clock(now), canonicalize=canonicalize_time_zone, time_zone="UTC",
                           refresh_interval_ms=interval)

    step1 = list(base)
    turn1 = open_new_turn(step1)
    del step1[-2:]  # keep only turn/start: at step 1 the prompt is still in the batch
    step2 = list(base)
    turn2 = open_new_turn(step2, steps=1)
    long_turn = list(base)
    turn_long = open_new_turn(long_turn, steps=250)
    no_readings = build_session(n_events, with_readings=False)
    turn_bare = open_new_turn(no_readings)
    del no_readings[-2:]
    prompt = (_prompt("r-new", "Europe/Berlin"),)

    def call(hook: TimeContext, events: list[Event], turn: int, step: int) -> Callable[[], object]:
        pre = PreStep(turn, step, events, continuation=step > 1, cancelled=False)
        decision = Enter(prompt if step == 1 else ())
        return lambda: hook.pre_step(pre, decision)

    few = max(calls // 10, 20)
    full_scan = timed(lambda: bare_scan(base), 20)[0]
    full_decode = timed(lambda: decode_scan(base), 5)[0]
    turn_decode = timed(lambda: decode_scan(long_turn[len(base):]), few)[0]
    session = f"{n_events // 1000}k-event session"
    out = []
    for label, run in (
        ("step 1, interval 0", call(hook(late), step1, turn1, 1)),
        ("step 2 (continuation), interval 0", call(hook(late), step2, turn2, 2)),
        ("step 1, interval 300000, injects", call(hook(late, 300_000), step1, turn1, 1)),
        ("step 1, interval 300000, skips", call(hook(soon, 300_000), step1, turn1, 1)),
        ("step 2, interval 300000, injects", call(hook(late, 300_000), step2, turn2, 2)),
    ):
        p50 = timed(run, calls)[0]
        out.append(row(f"pre_step {label}, {session} (ceiling: bare scan of every event)",
                       p50, full_scan, "us", "ratio <= 0.1", p50 <= 0.1 * full_scan))
    p50 = timed(call(hook(late), long_turn, turn_long, 251), few)[0]
    out.append(row("pre_step step 251 of a 250-step open turn (ceiling: decoding scan of that turn)",
                   p50, turn_decode, "us", "ratio <= 2", p50 <= 2 * turn_decode))
    p50 = timed(call(hook(late, 300_000), no_readings, turn_bare, 1), 5)[0]
    out.append(row(f"worst case: no reading anywhere, {session} (ceiling: decoding scan of all)",
                   p50, full_decode, "us", "ratio <= 1.5", p50 <= 1.5 * full_decode))
    return out


if __name__ == "__main__":
    bench_main(__doc__, rows)
