"""The tools and the runtime over a real ``eventlog`` session in a temporary directory.

Real files, real fsync; the wall clock (also eventlog's clock) is derived from a mock trio clock.
Wired as the host does it (schedule §9, host §5.2), including the optional append guard
(the incremental ``ScheduleGuard``).
"""

from __future__ import annotations

import errno
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
from trio.testing import MockClock

import eventlog
from eventlog import fileio
from schedule import ScheduleGuard, ScheduleLogError, compact_json

from .doubles import TrioWallClock
from .runtime_rig import EPOCH, Live, live

E1_VIEW = (
    '{"id":"schedule-1","kind":"after","prompt":"stretch","afterSeconds":90,'
    '"scheduledAt":"2027-01-10T08:01:30.000Z","state":"scheduled","deliveryMode":"session-local"}'
)


def changes_on_disk(path: Path) -> list[Any]:
    """The ``data`` of every ``schedule/change`` line of the file (header line skipped)."""
    lines = path.read_bytes().splitlines()[1:]
    records = [msgspec.json.decode(line) for line in lines]
    return [r["data"] for r in records if r["type"] == "schedule/change"]


@asynccontextmanager
async def live_session(
    store: eventlog.SessionStore, clock: TrioWallClock, *, id: str, create: bool = False
) -> AsyncIterator[tuple[eventlog.Session, Live]]:
    opened = store.create(id=id) if create else store.open(id)
    async with opened as session:
        session.add_append_guard("schedule/change", ScheduleGuard())
        async with live(session, clock, serve=5.0) as rt:
            yield session, rt


async def test_reminders_over_a_real_session_survive_restarts(
    autojump_clock: MockClock, tmp_path: Path
) -> None:
    clock = TrioWallClock(EPOCH)
    store = eventlog.SessionStore(tmp_path, clock=clock)
    path = store.path("main")

    async with live_session(store, clock, id="main", create=True) as (_session, rt):
        result = await rt.tools.schedule_create({"prompt": "  stretch  ", "after_seconds": 90}, caller=rt.agent)
        assert compact_json(result) == E1_VIEW
        # The create is durable when the tool answers.
        assert changes_on_disk(path) == [
            {
                "version": 1,
                "operation": "create",
                "schedule": {
                    "id": "schedule-1",
                    "kind": "after",
                    "prompt": "stretch",
                    "afterSeconds": 90,
                    "scheduledAt": "2027-01-10T08:01:30.000Z",
                },
            }
        ]
        await rt.tools.schedule_create({"prompt": "later", "after_seconds": 3600}, caller=rt.agent)
        await trio.sleep(120)
        await rt.settle()
        assert rt.agent.followup_times == [EPOCH + 90_000]
        assert changes_on_disk(path)[-1] == {"version": 1, "operation": "dispatch", "id": "schedule-1"}

    # Cold for two hours: schedule-2 becomes overdue and is delivered once on resume.
    await trio.sleep(2 * 3600)
    async with live_session(store, clock, id="main") as (_session, rt):
        await rt.settle()
        assert len(rt.agent.followups) == 1
        assert 'schedule_id_json: "schedule-2"' in rt.agent.followups[0][0]
        assert await rt.tools.schedule_list({}, caller=rt.agent) == []

    # Later restarts neither re-deliver nor queue anything.
    async with live_session(store, clock, id="main") as (_session, rt):
        await rt.settle()
        await trio.sleep(3600)
        assert rt.agent.followups == []
    assert [c["operation"] for c in changes_on_disk(path)] == ["create", "create", "dispatch", "dispatch"]


async def test_a_failed_sync_makes_the_result_uncertain_until_a_later_preflight(
    autojump_clock: MockClock, tmp_path: Path
) -> None:
    clock = TrioWallClock(EPOCH)
    store = eventlog.SessionStore(tmp_path, clock=clock, write_delay_ms=0)
    async with live_session(store, clock, id="main", create=True) as (_session, rt):
        await rt.tools.schedule_list({}, caller=rt.agent)
        with fileio.fail("sync", errno.EIO):
            result = await rt.tools.schedule_create({"prompt": "stretch", "after_seconds": 90}, caller=rt.agent)
        assert result == {
            "code": "persistence_uncertain",
            "message": "Schedule persistence is uncertain; retry with schedule_list before relying on this result.",
            "operation": "create",
            "id": "schedule-1",
        }
        # The record stays in the live log; the next preflight makes it durable and arms it.
        [view] = await rt.tools.schedule_list({}, caller=rt.agent)
        assert view["id"] == "schedule-1"
        await trio.sleep(120)
        await rt.settle()
        assert rt.agent.followup_times == [EPOCH + 90_000]
    assert [c["operation"] for c in changes_on_disk(store.path("main"))] == ["create", "dispatch"]


async def test_data_eventlog_refuses_is_an_internal_error(
    autojump_clock: MockClock,
    tmp_path: Path,
) -> None:
    clock = TrioWallClock(EPOCH)
    store = eventlog.SessionStore(tmp_path, clock=clock)
    async with live_session(store, clock, id="main", create=True) as (_session, rt):
        # A create whose prompt holds a lone surrogate cannot be stored: eventlog refuses it.
        result = await rt.tools.schedule_create({"prompt": "bad \ud800", "after_seconds": 90}, caller=rt.agent)
        assert result == {"code": "internal_error", "message": "The schedule operation failed."}
        assert await rt.tools.schedule_list({}, caller=rt.agent) == []


async def test_the_guard_refuses_a_corrupting_change_and_nothing_is_recorded(
    autojump_clock: MockClock, tmp_path: Path
) -> None:
    clock = TrioWallClock(EPOCH)
    store = eventlog.SessionStore(tmp_path, clock=clock)
    async with live_session(store, clock, id="main", create=True) as (session, rt):
        await rt.tools.schedule_create({"prompt": "stretch", "after_seconds": 90}, caller=rt.agent)
        before = session.next_seq
        delete = {"version": 1, "operation": "delete", "id": "schedule-1"}
        session.append("schedule/change", delete)
        with pytest.raises(ScheduleLogError, match='^schedule delete targets inactive id "schedule-1"$'):
            session.append("schedule/change", delete)  # the same delete again would corrupt the log
        with pytest.raises(ScheduleLogError, match='^schedule id "schedule-1" was reused$'):
            session.append("schedule/change", {"version": 1, "operation": "create", "schedule": {
                "id": "schedule-1", "kind": "at", "prompt": "p", "scheduledAt": "2027-01-11T00:00:00.000Z"}})
        assert session.next_seq == before + 1
        await session.flush()
    assert [c["operation"] for c in changes_on_disk(store.path("main"))] == ["create", "delete"]
