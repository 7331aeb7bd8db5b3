"""Benchmark of schedule's pure core (run by hand: ``.venv/bin/python tests/bench/bench_schedule.py``).

Prints fold throughput over a log of 1M ``schedule/change`` events that ends with ~10k active
reminders, and the cost of ``decide`` over 10k active reminders, next to baselines measured in
the same run: decoding the same payloads into dicts with stdlib ``json`` and with msgspec.
Then the cost of one runtime drive step after three new events (two folds of the suffix and two
decisions, schedule §11.2/schedule §11.3): refolding the whole log each time against ``IncrementalFold``.
Options: ``--events N`` (default 1_000_000), ``--active N`` (default 10_000).
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from eventlog.format import Event
from schedule import (
    EveryBatch,
    EveryRecord,
    decide,
    fold,
    format_instant,
    parse_instant,
    resolve_every,
)
from schedule._fold import IncrementalFold

START = parse_instant("2027-01-10T08:00:00.000Z")


class ValueOnly:
    """A ``LoggedEvent`` reachable only through ``value()`` (no raw bytes: the Protocol path)."""

    __slots__ = ("_raw", "type")

    def __init__(self, event: Event) -> None:
        self.type = event.type
        self._raw = event.data

    def value(self) -> Any:
        return msgspec.json.decode(self._raw)


def build_log(n_events: int, n_active: int, seed: int = 7) -> list[Event]:
    """Creates of ``n_active`` every records, then churn: every dispatches, one-shot creates that
    are dispatched or deleted; the clock advances 1 s per event."""
    rng = random.Random(seed)
    payloads: list[dict[str, Any]] = []
    everies: list[EveryRecord] = []
    for i in range(n_active):
        record = EveryRecord(f"schedule-{i + 1}", f"every reminder {i}", 300 + i % 3600,
                             format_instant(START + (300 + i % 3600) * 1000))
        everies.append(record)
        payloads.append({"version": 1, "operation": "create", "schedule": {
            "id": record.id, "kind": "every", "prompt": record.prompt,
            "everySeconds": record.every_seconds, "scheduledAt": record.scheduled_at}})
    next_id = n_active + 1
    now = START
    pending: list[str] = []
    while len(payloads) < n_events:
        now += 1000
        roll = rng.random()
        if roll < 0.4:
            index = rng.randrange(len(everies))
            record = everies[index]
            accepted = max(now, parse_instant(record.scheduled_at))
            _, following = resolve_every(record, accepted)
            assert following is not None
            everies[index] = msgspec.structs.replace(record, scheduled_at=format_instant(following))
            payloads.append({"version": 1, "operation": "dispatch", "id": record.id,
                             "acceptedAt": format_instant(accepted)})
        elif roll < 0.7 or not pending:
            rid = f"schedule-{next_id}"
            next_id += 1
            pending.append(rid)
            payloads.append({"version": 1, "operation": "create", "schedule": {
                "id": rid, "kind": "after", "prompt": "stretch", "afterSeconds": 90,
                "scheduledAt": format_instant(now + 90_000)}})
        else:
            rid = pending.pop(rng.randrange(len(pending)))
            operation = "dispatch" if rng.random() < 0.8 else "delete"
            payloads.append({"version": 1, "operation": operation, "id": rid})
    encoder = msgspec.json.Encoder()
    return [Event("schedule/change", seq, START + seq, msgspec.Raw(encoder.encode(p)))
            for seq, p in enumerate(payloads)]


def timed(fn: Callable[[], object], repeat: int = 1) -> tuple[float, object]:
    """Best wall time of ``repeat`` runs, and the last result."""
    best = float("inf")
    result: object = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def rate(label: str, seconds: float, count: int, baseline: float | None = None) -> None:
    extra = f"   ({seconds / baseline:.2f}x the stdlib json baseline)" if baseline else ""
    print(f"  {label:<48} {seconds:8.3f} s  {count / seconds / 1e3:9.0f} k events/s{extra}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--active", type=int, default=10_000)
    args = parser.parse_args(argv)

    started = time.perf_counter()
    events = build_log(args.events, args.active)
    print(f"built {len(events)} schedule/change events "
          f"({sum(len(e.data) for e in events) / len(events):.0f} bytes of data each) "
          f"in {time.perf_counter() - started:.1f} s")

    print("fold over the whole log:")
    json_s, _ = timed(lambda: [json.loads(bytes(e.data)) for e in events])
    rate("baseline: stdlib json.loads of each payload", json_s, len(events))
    untyped_s, _ = timed(lambda: [msgspec.json.decode(e.data) for e in events])
    rate("baseline: msgspec untyped decode of each payload", untyped_s, len(events), json_s)
    fold_s, result = timed(lambda: fold(events, 0), repeat=2)
    rate("fold (eventlog.Event, raw bytes)", fold_s, len(events), json_s)
    value_events = [ValueOnly(e) for e in events]
    value_s, value_result = timed(lambda: fold(value_events, 0))
    rate("fold (value() only, re-encoded)", value_s, len(value_events), json_s)
    assert value_result == result
    active = result.active  # type: ignore[attr-defined]
    print(f"  -> {len(active)} active, {len(result.seen_ids)} ids seen")  # type: ignore[attr-defined]

    print(f"decide over {len(active)} active reminders:")
    due_now = max(parse_instant(r.scheduled_at) for r in active)
    everies = tuple(r for r in active if type(r) is EveryRecord)
    cases = [("nothing due (Wait)", active, min(parse_instant(r.scheduled_at) for r in active) - 1),
             ("every record due (one batch)", everies, due_now),
             ("a due one-shot among them", active, due_now)]
    scan_s, _ = timed(lambda: [r.scheduled_at <= "x" for r in active], repeat=20)
    print(f"  {'baseline: one pass comparing scheduledAt strings':<48} {scan_s * 1e3:8.2f} ms")
    for label, records, now in cases:
        seconds, decision = timed(functools.partial(decide, records, now), repeat=10)
        kind = type(decision).__name__
        size = len(decision.items) if isinstance(decision, EveryBatch) else ""
        print(f"  {label:<48} {seconds * 1e3:8.2f} ms  -> {kind} {size}")

    print("one drive step after 3 new events (fold + decide, twice):")
    wait_now = cases[0][2]

    def full_step() -> None:
        for _ in range(2):
            decide(fold(events, 0).active, wait_now)

    full_s, _ = timed(full_step, repeat=2)
    print(f"  {'refold the whole log each time':<48} {full_s * 1e3:8.2f} ms")
    def incremental_step(with_decide: bool) -> float:
        best = float("inf")
        for _ in range(5):
            incremental = IncrementalFold()
            incremental(events[:-3], 0)
            started = time.perf_counter()
            for _ in range(2):
                folded = incremental(events, 0)
                if with_decide:
                    decide(folded.active, wait_now)
            best = min(best, time.perf_counter() - started)
            assert incremental(events, 0) == result
        return best

    step_s = incremental_step(True)
    print(f"  {'IncrementalFold (decodes the 3 new events)':<48} {step_s * 1e3:8.2f} ms"
          f"   ({full_s / step_s:.0f}x faster)")
    print(f"  {'  of which the two folds':<48} {incremental_step(False) * 1e3:8.2f} ms")

if __name__ == "__main__":
    main()
