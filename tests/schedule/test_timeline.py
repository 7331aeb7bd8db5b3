"""A 30-day timeline with restarts (schedule §7, schedule §11.6, schedule §11.10; issue 3).

One session lives through four live windows separated by cold periods. Each restart is a fresh
runtime over the durable log (``FakeSession.reopen``). The expected deliveries are derived from
the rules, not from the code: a one-shot fires at its target while live, else once at the next
start; an every record fires on each anchor while live, and after a cold period only the latest
anchor before the restart is delivered (latest-only catch-up).
"""

from __future__ import annotations

import json

import trio
from trio.testing import MockClock

from schedule import fold, format_instant

from .doubles import FakeSession, TrioWallClock
from .runtime_rig import EPOCH, live, ms

H = 3_600_000
MIN = 60_000
TURN_SECONDS = 5.0
SLACK = 15_000  # a delivery may wait for earlier reminders' 5 s follow-up turns

# Live windows [start, stop) in ms after EPOCH (2027-01-10T08:00:00.000Z).
WINDOWS = [(0, 47 * H + 30 * MIN), (50 * H, 217 * H), (290 * H, 480 * H + MIN), (480 * H + 20 * MIN, 719 * H)]

ONE_SHOTS = {
    # id: (create arguments, target in ms after EPOCH)
    "schedule-1": ({"after_seconds": 3600}, 1 * H),
    "schedule-2": ({"at": "2027-01-11T13:37:00Z"}, 29 * H + 37 * MIN),
    "schedule-3": ({"at": {"date": "2027-01-15", "time": "11:17:00", "time_zone": "Asia/Shanghai"}}, 115 * H + 17 * MIN),
    "schedule-4": ({"at": "2027-01-20T10:00:00+02:00"}, 240 * H),  # cold: 217 h – 290 h
    "schedule-5": ({"after_seconds": (480 * 3600) + 5 * 60}, 480 * H + 5 * MIN),  # cold: a 19-minute gap
    "schedule-6": ({"at": "2027-02-07T21:30:00.000Z"}, 685 * H + 30 * MIN),
    "schedule-7": ({"at": "2027-02-19T00:00:00Z"}, None),  # after the timeline
}
EVERY = {
    # id: (interval ms, first anchor, last anchor or None) — anchors first + k * interval
    "schedule-8": (6 * H, 6 * H, None),
    "schedule-9": (168 * H, 168 * H, None),
    "schedule-10": (24 * H, 84 * H, 84 * H),  # created at 60 h, deleted at 100 h
}


def live_at(t: int) -> bool:
    return any(start <= t < stop for start, stop in WINDOWS)


def next_start(t: int) -> int | None:
    return next((start for start, _ in WINDOWS if start > t), None)


def expected_deliveries() -> set[tuple[str, int, int]]:
    """(id, occurrence, earliest delivery time) for every delivery the rules demand."""
    expected: set[tuple[str, int, int]] = set()
    for id, (_, target) in ONE_SHOTS.items():
        if target is None:
            continue
        start = target if live_at(target) else next_start(target)
        if start is not None:
            expected.add((id, target, start))
    end = WINDOWS[-1][1]
    for id, (interval, first, last) in EVERY.items():
        anchors = range(first, (last if last is not None else end) + 1, interval)
        for anchor in anchors:
            if anchor >= end:
                break
            if live_at(anchor):
                expected.add((id, anchor, anchor))
                continue
            start = next_start(anchor)
            # Cold: only the latest anchor before the restart is delivered, at the restart.
            if start is not None and not any(anchor < a <= start for a in anchors):
                expected.add((id, anchor, start))
    return expected


def parse(text: str) -> list[tuple[str, int]]:
    """(id, occurrence) pairs named by one framed reminder text."""
    lines = text.split("\n")
    if lines[0] == "[SCHEDULE REMINDER]":
        fields = dict(line.split(": ", 1) for line in lines[2:])
        return [(json.loads(fields["schedule_id_json"]), ms(fields["occurrence_at"]) - EPOCH)]
    items = json.loads(lines[2].removeprefix("reminders_json: "))
    return [(item["schedule_id"], ms(item["occurrence_at"]) - EPOCH) for item in items]


async def test_thirty_days_with_restarts(autojump_clock: MockClock) -> None:
    clock = TrioWallClock(EPOCH)
    session = FakeSession()
    delivered: list[tuple[str, int, int]] = []
    for index, (start, stop) in enumerate(WINDOWS):
        await trio.sleep_until(start / 1000)
        if index:
            session = session.reopen()
        async with live(session, clock, serve=TURN_SECONDS, segment_ms=H) as rt:
            if index == 0:
                for id, (args, _) in ONE_SHOTS.items():
                    view = await rt.tools.schedule_create({"prompt": f"one-shot {id}", **args}, caller=rt.agent)
                    assert view["id"] == id
                for id, (interval, _, _) in list(EVERY.items())[:2]:
                    view = await rt.tools.schedule_create(
                        {"prompt": f"every {id}", "every_seconds": interval // 1000}, caller=rt.agent
                    )
                    assert view["id"] == id
            if index == 1:
                await trio.sleep_until(60 * H / 1000)
                view = await rt.tools.schedule_create({"prompt": "daily", "every_seconds": 86400}, caller=rt.agent)
                assert (view["id"], view["scheduledAt"]) == ("schedule-10", format_instant(EPOCH + 84 * H))
                await trio.sleep_until(100 * H / 1000)
                assert await rt.tools.schedule_delete({"id": "schedule-10"}, caller=rt.agent) == {
                    "id": "schedule-10",
                    "deleted": True,
                }
            await trio.sleep_until(stop / 1000)
            for at, (text, _) in zip(rt.agent.followup_times, rt.agent.followups, strict=True):
                delivered.extend((id, occurrence, at - EPOCH) for id, occurrence in parse(text))

    expected = expected_deliveries()
    assert sorted((id, occ) for id, occ, _ in delivered) == sorted((id, occ) for id, occ, _ in expected)
    earliest = {(id, occ): at for id, occ, at in expected}
    for id, occurrence, at in delivered:
        # Never early, and late only by the follow-up turns of reminders due at the same time.
        assert earliest[id, occurrence] <= at <= earliest[id, occurrence] + SLACK, (id, occurrence, at)

    # The log agrees: one dispatch per delivery (one-shots exactly once), nothing re-delivered
    # by any restart, and the fold keeps what is still pending.
    dispatches = [c["id"] for c in session.changes() if c["operation"] == "dispatch"]
    assert sorted(dispatches) == sorted(id for id, _, _ in delivered)
    assert all(dispatches.count(id) == 1 for id in ONE_SHOTS if id != "schedule-7")
    active = {r.id: r.scheduled_at for r in fold(session.events, 0).active}
    assert active == {
        "schedule-7": "2027-02-19T00:00:00.000Z",
        "schedule-8": format_instant(EPOCH + 720 * H),
        "schedule-9": format_instant(EPOCH + 840 * H),
    }
