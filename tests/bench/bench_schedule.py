"""Benchmarks of schedule (run by hand from the project root:
``.venv/bin/python -m tests.bench.bench_schedule [--quick] [--json]``; not collected by pytest).

Every row is ``figure  today  ceiling  ratio  target  ok/MISS``: *today* is the figure measured
now, *ceiling* what it is compared with, measured in the same run (a baseline, the way it was
done before, or the same figure at a smaller size), *ratio* is today / ceiling, and *target*
says what the row must show. The machine may be shared: compare the ratios of one run, not
absolute figures across runs.

- The fold of a log of 1M ``schedule/change`` events (100k with ``--quick``) that ends with
  ~10k active reminders, against ``json.loads`` of each payload.
- The runtime's decision (``FoldState.decide``, targets parsed once, two heaps) over those
  ~10k active reminders, against the public ``decide(active, now)``, which parses every record.
- One drive step after three new events (catch up and decide, twice, schedule §11.2–11.3),
  against refolding the whole log and deciding with the public ``decide``.
- The append guard: ``ScheduleGuard.check`` per ``schedule/change`` on that log, each check
  after one new change and 20 other events, against the same on a 10k-event log (the O(1)
  claim) and against ``check_append``, which refolds the whole suffix per call.
- Reminder fire lateness: 10k armed ``at`` reminders across 1k sessions (2k across 200 with
  ``--quick``), one ``ScheduleRuntime`` per session over an in-memory session (events are real
  ``eventlog.Event`` values; ``flush`` is a checkpoint) and an always-idle agent, on the real
  clocks; lateness is the wall time at which the follow-up is queued minus the target. The
  ceiling is a bare ``trio.sleep`` per reminder in the same run, given what the runtime is
  given: it reads the same integer-millisecond wall clock and sleeps ``(target - now_ms) /
  1000`` s, then measures the same way.

``rows(quick)`` returns the rows as dicts (``figure``, ``today``, ``ceiling``, ``unit``,
``ratio``, ``target``, ``ok``) so that one entry point can collect every benchmark.
"""

from __future__ import annotations

import functools
import json
import random
import re
import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
import trio

from eventlog.format import Event
from eventlog.values import SystemClock
from schedule import (
    EveryRecord,
    ScheduleGuard,
    ScheduleQueue,
    ScheduleRuntime,
    check_append,
    decide,
    fold,
    format_instant,
    parse_instant,
)
from schedule._fold import FoldState, IncrementalFold
from schedule._records import Create, Record
from tests.bench._rows import Row, bench_main, row

START = parse_instant("2027-01-10T08:00:00.000Z")
OTHER = msgspec.Raw(b'{"turn":1}')


def best(fn: Callable[[], object], repeat: int) -> float:
    """The best wall time of ``repeat`` runs, in seconds."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


# --- the log ------------------------------------------------------------------------------------


def build_log(n_events: int, n_active: int, seed: int = 7) -> list[Event]:
    """Creates of ``n_active`` every records, then churn until ``n_events``: dispatches of every
    records, one-shot creates that are later dispatched or deleted; 1 s of clock per event."""
    rng = random.Random(seed)
    lines: list[bytes] = []
    everies: list[list[Any]] = []  # [id, seconds, current target]
    for i in range(n_active):
        seconds = 300 + i % 3600
        rid, target = f"schedule-{i + 1}", START + seconds * 1000
        everies.append([rid, seconds, target])
        lines.append(b'{"version":1,"operation":"create","schedule":{"id":"%s","kind":"every","prompt":'
                     b'"every reminder %d","everySeconds":%d,"scheduledAt":"%s"}}'
                     % (rid.encode(), i, seconds, format_instant(target).encode()))
    next_id, now, pending = n_active + 1, START, []
    while len(lines) < n_events:
        now += 1000
        roll = rng.random()
        if roll < 0.4:
            record = everies[rng.randrange(len(everies))]
            rid, seconds, target = record
            accepted, interval = max(now, target), seconds * 1000
            record[2] = target + ((accepted - target) // interval + 1) * interval
            lines.append(b'{"version":1,"operation":"dispatch","id":"%s","acceptedAt":"%s"}'
                         % (rid.encode(), format_instant(accepted).encode()))
        elif roll < 0.7 or not pending:
            rid = f"schedule-{next_id}"
            next_id += 1
            pending.append(rid)
            lines.append(b'{"version":1,"operation":"create","schedule":{"id":"%s","kind":"after",'
                         b'"prompt":"stretch","afterSeconds":90,"scheduledAt":"%s"}}'
                         % (rid.encode(), format_instant(now + 90_000).encode()))
        else:
            rid = pending.pop(rng.randrange(len(pending)))
            operation = b"dispatch" if rng.random() < 0.8 else b"delete"
            lines.append(b'{"version":1,"operation":"%s","id":"%s"}' % (operation, rid.encode()))
    return [Event("schedule/change", seq, START + seq, msgspec.Raw(line)) for seq, line in enumerate(lines)]


# --- the fold and the decision ------------------------------------------------------------------


def fold_rows(events: list[Event]) -> tuple[list[Row], float]:
    n = len(events)
    json_s = fold_s = float("inf")
    for _ in range(2):  # interleaved, so that both meet the same load
        json_s = min(json_s, best(lambda: [json.loads(bytes(e.data)) for e in events], 1))
        fold_s = min(fold_s, best(lambda: fold(events, 0), 1))
    return [row(f"fold of {n:,} schedule/change events (ceiling: json.loads of each payload)",
                fold_s, json_s, "s", "ratio <= 1", fold_s <= json_s)], fold_s


def _state_of(records: tuple[Record, ...]) -> FoldState:
    """The fold state of a log that creates ``records`` as they are."""
    encoder = msgspec.json.Encoder()
    events = [Event("schedule/change", seq, START, msgspec.Raw(encoder.encode(Create(version=1, schedule=r))))
              for seq, r in enumerate(records)]
    return IncrementalFold().state(events, 0)


def decision_rows(events: list[Event], fold_s: float) -> list[Row]:
    state = IncrementalFold().state(events, 0)
    active = fold(events, 0).active
    targets = [parse_instant(r.scheduled_at) for r in active]
    out = []
    for label, now in (("nothing due (Wait)", min(targets) - 1), ("a due one-shot among them", max(targets))):
        assert state.decide(now) == decide(active, now)
        today = best(functools.partial(state.decide, now), 50)
        ceiling = best(functools.partial(decide, active, now), 3)
        out.append(row(f"runtime decision over {len(active):,} active, {label} (ceiling: decide)",
                       today * 1e3, ceiling * 1e3, "ms", "today <= 1 ms", today <= 1e-3))
    # Every record due at once: a batch of ~10k items is O(k) whatever the structure.
    everies = tuple(r for r in active if type(r) is EveryRecord)
    due_now = max(parse_instant(r.scheduled_at) for r in everies)
    every_state = _state_of(everies)
    assert every_state.decide(due_now) == decide(everies, due_now)
    today = best(functools.partial(every_state.decide, due_now), 3)
    ceiling = best(functools.partial(decide, everies, due_now), 3)
    out.append(row(f"runtime decision, all {len(everies):,} every records due (ceiling: decide)",
                   today * 1e3, ceiling * 1e3, "ms", "ratio <= 1", today <= ceiling))
    # One drive step after three new events: catch up and decide, twice (schedule §11.2-11.3).
    wait_now = min(targets) - 1

    def step() -> float:
        incremental = IncrementalFold()
        incremental.state(events[:-3], 0).decide(wait_now)  # the runtime's earlier drive step
        started = time.perf_counter()
        for _ in range(2):
            incremental.state(events, 0).decide(wait_now)
        return time.perf_counter() - started

    step_s = min(step() for _ in range(3))
    public_s = best(functools.partial(decide, active, wait_now), 3)
    out.append(row(f"drive step after 3 new events, {len(events):,}-event log "
                   "(ceiling: refold + decide, twice)",
                   step_s * 1e3, 2 * (fold_s + public_s) * 1e3, "ms", "today <= 1 ms", step_s <= 1e-3))
    return out


# --- the append guard ---------------------------------------------------------------------------


def _guard_per_check(events: list[Event], checks: int) -> float:
    """Median seconds of one ``ScheduleGuard.check`` on ``events``, each after one accepted
    change and 20 other events were appended (the first check, which folds, is not counted)."""
    log = list(events)
    guard = ScheduleGuard()
    guard.check(log, 0, _create(0))
    times = []
    for k in range(checks):
        change = msgspec.Raw(json.dumps(_create(k)).encode())
        log.append(Event("schedule/change", len(log), START, change))
        log.extend(Event("turn/start", len(log) + i, START, OTHER) for i in range(20))
        candidate = _create(k + 1)
        started = time.perf_counter()
        guard.check(log, 0, candidate)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _create(k: int) -> Row:
    return {"version": 1, "operation": "create", "schedule": {
        "id": f"bench-{k}", "kind": "after", "prompt": "stretch", "afterSeconds": 90,
        "scheduledAt": "2027-01-10T08:01:30.000Z"}}


def guard_rows(events: list[Event], small: list[Event]) -> list[Row]:
    big_s = _guard_per_check(events, 2000)
    small_s = _guard_per_check(small, 2000)
    refold_s = best(functools.partial(check_append, events, 0, _create(0)), 1)
    n = len(events)
    return [
        row(f"ScheduleGuard.check at {n:,} events (ceiling: the same at {len(small):,} events)",
            big_s * 1e6, small_s * 1e6, "us", "ratio <= 2 (O(1))", big_s <= 2 * small_s),
        row(f"ScheduleGuard.check at {n:,} events (ceiling: check_append, a refold per call)",
            big_s * 1e6, refold_s * 1e6, "us", "ratio <= 0.001", big_s <= refold_s / 1000),
    ]


# --- fire lateness ------------------------------------------------------------------------------


class _Session:
    """An in-memory ``SessionHandle`` of real ``eventlog.Event`` values whose events are durable
    once appended. Like ``eventlog.Session.flush``, the barrier returns at once when nothing was
    appended since the last one, and otherwise lets the writer run (one checkpoint)."""

    def __init__(self, payloads: list[Row]) -> None:
        self.events: list[Event] = []
        self.seed_length = 0
        self._durable = 0
        for payload in payloads:
            self.append("schedule/change", payload)

    def append(self, type: str, data: Mapping[str, Any]) -> object:
        event = Event(type, len(self.events), START, msgspec.Raw(msgspec.json.encode(data)))
        self.events.append(event)
        return event

    async def flush(self) -> int:
        if self._durable < len(self.events):
            await trio.lowlevel.checkpoint()
            self._durable = len(self.events)
        return len(self.events) - 1


_ID = re.compile(r'schedule_id_json: "([^"]*)"')


class _Agent:
    """An agent that is always idle; it records how late each follow-up is queued."""

    def __init__(self, name: str, targets: dict[str, int], lateness: list[float]) -> None:
        self.id = name
        self.is_live = True
        self._targets = targets
        self._lateness = lateness

    async def when_idle(self) -> None:
        await trio.lowlevel.checkpoint()

    def run_maintenance(self, task: Callable[[], Any]) -> Any:
        return task()

    def followup(self, text: str, *, source: Mapping[str, str]) -> None:
        match = _ID.search(text)
        assert match is not None
        self._lateness.append(time.time_ns() / 1e6 - self._targets[match[1]])


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _lateness(sessions: int, per_session: int, window_s: float) -> tuple[list[float], list[float]]:
    """Fire lateness of the runtimes and of bare sleeps, in ms, both in the same window of the
    same event loop, so that both meet the same load and the same machine noise."""
    clock = SystemClock()
    rng = random.Random(11)
    lead_ms = 3000 + sessions * 2  # room to start every runtime before the first target
    first = clock.now_ms() + lead_ms
    window_ms = int(window_s * 1000)
    plan = [[first + rng.randrange(window_ms) for _ in range(per_session)] for _ in range(sessions)]
    runtime_lateness: list[float] = []
    bare_lateness: list[float] = []

    async def sleeper(target: int) -> None:
        await trio.sleep((target - clock.now_ms()) / 1000)
        bare_lateness.append(time.time_ns() / 1e6 - target)

    async with trio.open_nursery() as nursery:
        runtimes = []
        for s, targets in enumerate(plan):
            ids = {f"r-{s}-{i}": target for i, target in enumerate(targets)}
            session = _Session([{"version": 1, "operation": "create", "schedule": {
                "id": rid, "kind": "at", "prompt": "p", "scheduledAt": format_instant(t)}}
                for rid, t in ids.items()])
            agent = _Agent(f"agent-{s}", ids, runtime_lateness)
            runtime = ScheduleRuntime(session=session, agent=agent, clock=clock, queue=ScheduleQueue())
            await nursery.start(runtime.run)
            runtimes.append(runtime)
        for _ in range(sessions * per_session):
            nursery.start_soon(sleeper, first + rng.randrange(window_ms))
        await trio.sleep((first + window_ms - clock.now_ms()) / 1000 + 0.5)
        for runtime in runtimes:
            await runtime.aclose()
    assert len(runtime_lateness) == len(bare_lateness) == sessions * per_session
    return runtime_lateness, bare_lateness


def lateness_rows(sessions: int, per_session: int, window_s: float) -> list[Row]:
    runtime, bare = trio.run(_lateness, sessions, per_session, window_s)
    bare_p99 = _percentile(bare, 0.99)
    label = f"{sessions * per_session:,} reminders across {sessions:,} sessions over {window_s:g} s"
    p50, p99 = _percentile(runtime, 0.5), _percentile(runtime, 0.99)
    return [
        row(f"fire lateness p50, {label} (ceiling: bare trio.sleep p99)", p50, bare_p99, "ms",
            "ratio <= 1.5", p50 <= 1.5 * bare_p99),
        row(f"fire lateness p99, {label} (ceiling: bare trio.sleep p99)", p99, bare_p99, "ms",
            "ratio <= 1.5", p99 <= 1.5 * bare_p99),
    ]


# --- entry points -------------------------------------------------------------------------------


def log_rows(n_events: int) -> list[Row]:
    """The rows measured over a log of ``n_events`` with ~10k active reminders at its end."""
    events = build_log(n_events, 10_000)
    out, fold_s = fold_rows(events)
    out += decision_rows(events, fold_s)
    out += guard_rows(events, build_log(10_000, 1_000))
    return out


def rows(quick: bool) -> list[Row]:
    """Every row of this benchmark; ``quick`` runs in under a minute at smaller sizes."""
    out = log_rows(100_000 if quick else 1_000_000)  # the log is freed before the lateness runs
    out += lateness_rows(200, 10, 10.0) if quick else lateness_rows(1_000, 10, 60.0)
    return out


if __name__ == "__main__":
    bench_main(__doc__, rows)
