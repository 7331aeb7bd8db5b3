"""Storage recovers by itself (host §3.3, host §4.4, host §8; schedule §11.10): after a failed flush
a live session reports ``failing``, retries its pending flush with backoff (1 s doubling to 30 s),
and once a flush succeeds it reports ``ok``, the schedule runtime drives again and a turn that
failed before its first model request runs again with the same inbox items. Faults come through
eventlog's file-I/O seam (``eventlog.fileio``), on virtual time."""

from __future__ import annotations

import errno
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.lowlevel
import trio.testing

import eventlog.fileio
from host.runtime import HostError, StatusChanged, StorageChanged
from host.testing import Harness, open_harness
from tests.host.loop_support import dispatches, of_type, texts, types


class Disk:
    """A disk that can be full: while ``full``, every write fails with ``ENOSPC`` (a batch is then
    cut back and kept pending by eventlog). ``attempts`` records the trio time of each write tried
    while full."""

    def __init__(self) -> None:
        self.full = False
        self.attempts: list[float] = []
        self._pwrite = eventlog.fileio.pwrite
        self._clock = trio.lowlevel.current_clock()  # read from the writer's worker thread

    def pwrite(self, fd: int, data: bytes, offset: int) -> None:
        if self.full:
            self.attempts.append(self._clock.current_time())
            raise OSError(errno.ENOSPC, "No space left on device")
        self._pwrite(fd, data, offset)


@contextmanager
def disk(monkeypatch: pytest.MonkeyPatch) -> Iterator[Disk]:
    fake = Disk()
    monkeypatch.setattr(eventlog.fileio, "pwrite", fake.pwrite)
    yield fake


class StorageChanges:
    """``(status, storage, trio time)`` of every storage notification of the running host."""

    def __init__(self, h: Harness) -> None:
        self.seen: list[tuple[str, str, float]] = []
        h.host.subscribe(self._observe)

    def _observe(self, value: object) -> None:
        if isinstance(value, StorageChanged):
            self.seen.append((value.status, value.storage, trio.current_time()))

    def states(self) -> list[tuple[str, str]]:
        return [(status, storage) for status, storage, _ in self.seen]


def replies(events: list[dict[str, Any]]) -> list[str]:
    return [texts(e["data"]["message"]) for e in of_type(events, "assistant/message")]


def turn_ends(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["data"]["reason"] for e in of_type(events, "turn/end")]


async def test_a_reminder_due_while_the_disk_is_full_reaches_the_model_once_it_frees(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reproduction, on virtual time: remind in 3 s, fill the disk, wait 5 s, free it.
    with disk(monkeypatch) as fake:
        async with open_harness(tmp_path) as h:
            await h.start()
            changes = StorageChanges(h)
            await h.prompt("main", "remind me in 3 seconds to breathe")
            await h.settle()
            start = trio.current_time()
            fake.full = True
            await trio.sleep(5)  # due at 3 s: receipt, dispatch, the follow-up turn fails
            live = h.host.live("main")
            assert live is not None and live.storage.state == "failing" and live.agent.status == "running"
            in_memory = [json.loads(e.to_json()) for e in live.session.events]
            fake.full = False
            await h.settle()  # the next retry succeeds; the turn runs again
            on_disk = h.events("main")
    reminder_turn = in_memory[in_memory.index(of_type(in_memory, "schedule/change")[-1]) :]
    assert dispatches(in_memory) == [{"version": 1, "operation": "dispatch", "id": "schedule-1"}]
    assert turn_ends(reminder_turn)[0]["error"]["code"] == "PERSISTENCE"
    assert replies(reminder_turn) == []  # no model request was made
    # The failed turn stays as it happened; its claim goes back to the front of next-turn,
    # the same message (id and source), in the same write batch as its turn/end.
    [receipt] = [
        m
        for e in of_type(in_memory, "agent/inbox/spliced")
        for m in e["data"]["inserted"][:1]
        if m["source"] == {"kind": "plugin", "plugin": "schedule"}
    ][:1]
    assert types(reminder_turn)[-3:] == ["step/end", "turn/end", "agent/inbox/spliced"]
    assert reminder_turn[-1]["data"] == {"target": "next-turn", "start": 0, "inserted": [receipt]}
    # Once storage works: the re-run reaches the model, without a second dispatch.
    assert on_disk[: len(in_memory)] == in_memory
    assert dispatches(on_disk) == dispatches(in_memory)
    assert replies(on_disk)[-1] == "Reminder: breathe"
    rerun = on_disk[len(in_memory) :]
    assert types(rerun)[:4] == ["turn/start", "agent/inbox/spliced", "step/start", "user/message"]
    assert rerun[3]["data"] == receipt
    assert turn_ends(rerun) == [{"kind": "completed"}]
    # The failure at 3 s, a retry 1 s later while still full, and the next, 2 s after that, finds
    # the disk freed at 5 s.
    assert [round(t - start, 3) for t in fake.attempts if t - start > 3.001] == [4.0]
    assert [(status, storage, round(t - start, 3)) for status, storage, t in changes.seen] == [
        ("running", "failing", 3.0),
        ("running", "ok", 6.0),
    ]


async def test_backoff_doubles_to_30_seconds_and_retries_at_once_when_input_arrives(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    with disk(monkeypatch) as fake:
        async with open_harness(tmp_path) as h:
            await h.start()
            changes = StorageChanges(h)
            await h.prompt("main", "first")
            await h.settle()
            start = trio.current_time()
            fake.full = True
            await h.prompt("main", "while full")
            await trio.sleep(100)
            gaps = [round(b - a, 3) for a, b in zip(fake.attempts, fake.attempts[1:], strict=False)]
            assert gaps == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
            await h.prompt("main", "still full")  # input makes it retry now, and the delays keep growing
            await trio.sleep(1)
            assert round(fake.attempts[-1] - start, 3) == 100.0
            await trio.sleep(29)
            assert round(fake.attempts[-1] - start, 3) == 100.0  # 30 s after the last retry, not 1 s
            fake.full = False
            await h.settle()
            events = h.events("main")
    assert replies(events) == ["You said: first", "You said: while full", "You said: still full"]
    assert [r["kind"] for r in turn_ends(events)] == ["completed", "error", "completed", "completed"]
    assert changes.states() == [("running", "failing"), ("running", "ok")]


async def test_a_failed_flush_before_idle_is_retried_and_a_due_reminder_then_fires(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue item 2: a due reminder and events pending while idle; freeing the space is enough.
    with disk(monkeypatch) as fake:
        async with open_harness(tmp_path) as h:
            await h.start()
            changes = StorageChanges(h)
            await h.prompt("main", "remind me in 10 seconds to stretch")
            await h.settle()
            live = h.host.live("main")
            assert live is not None
            statuses: list[str] = []
            h.host.subscribe(lambda n: statuses.append(n.status) if isinstance(n, StatusChanged) else None)
            fake.full = True
            live.session.append("test/note", {"pending": True})  # an event the disk cannot take
            with pytest.raises(eventlog.PersistenceError):
                await live.storage.flush()
            await trio.sleep(60)  # due at 10 s: the runtime's preflight fails, nothing is dispatched
            assert dispatches(h.events("main")) == []
            assert live.agent.status == "idle" and statuses == []
            fake.full = False
            await h.advance(30)  # idle: nothing but the next retry, due within the 30 s cap
            events = h.events("main")
    assert of_type(events, "test/note")
    assert dispatches(events) == [{"version": 1, "operation": "dispatch", "id": "schedule-1"}]
    assert replies(events)[-1] == "Reminder: stretch"
    assert changes.states() == [("idle", "failing"), ("idle", "ok")]
    # the retry that found the disk free came on the backoff schedule: 1+2+4+8+16+30 s after the failure
    assert round(changes.seen[1][2] - changes.seen[0][2], 3) == 61.0


@pytest.mark.parametrize("restart", ["crash", "stop"])
async def test_a_restart_between_failure_and_recovery_neither_loses_nor_repeats_the_reminder(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch, restart: str
) -> None:
    with disk(monkeypatch) as fake:
        async with open_harness(tmp_path) as h:
            await h.start()
            await h.prompt("main", "remind me in 3 seconds to breathe")
            await h.settle()
            fake.full = True
            await trio.sleep(5)
            live = h.host.live("main")
            assert live is not None and live.storage.state == "failing"
            if restart == "crash":
                await h.crash()
            else:
                report = await h.stop()
                assert list(report.failed) == ["main"]
            fake.full = False
            await h.start()
            await h.resume("main")
            await h.settle()
            events = h.events("main")
    assert dispatches(events) == [{"version": 1, "operation": "dispatch", "id": "schedule-1"}]
    assert replies(events).count("Reminder: breathe") == 1


async def test_a_dispatch_made_durable_just_before_the_disk_filled_runs_after_a_restart(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    # The other order: the receipt and the dispatch reached the disk, the follow-up turn did not.
    async with open_harness(tmp_path) as h:
        await h.start()
        await h.prompt("main", "remind me in 3 seconds to breathe")
        await h.advance(5)
        await h.stop()
    path = tmp_path / "main.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    dispatch = next(i for i, line in enumerate(lines) if b'"operation":"dispatch"' in line)
    path.write_bytes(b"".join(lines[: dispatch + 1]))  # what a full disk left after the barrier
    async with open_harness(tmp_path) as h:
        await h.start()
        await h.resume("main")
        await h.settle()
        events = h.events("main")
    assert len(dispatches(events)) == 1
    assert replies(events).count("Reminder: breathe") == 1


async def test_cancel_during_the_storage_wait_drops_the_queued_input_and_goes_idle(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    with disk(monkeypatch) as fake:
        async with open_harness(tmp_path) as h:
            await h.start()
            await h.prompt("main", "first")
            await h.settle()
            fake.full = True
            await h.prompt("main", "while full")
            await trio.sleep(0.5)
            live = h.host.live("main")
            assert live is not None and live.agent.status == "running"
            live.agent.cancel("user")  # chat's Ctrl-C: the inbox is cleared
            with trio.fail_after(0.1):  # no retry delay passes: the wait ends at once
                await live.agent.when_idle()
            assert live.storage.state == "failing"
            fake.full = False
            await h.advance(30)
            assert live.storage.state == "ok"
            events = h.events("main")
    assert replies(events) == ["You said: first"]
    assert of_type(events, "agent/inbox/spliced")[-1]["data"]["outcome"] == "canceled"


async def test_a_permanent_failure_is_not_retried_and_the_turn_does_not_run_again(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with open_harness(tmp_path) as h:
        await h.start()
        changes = StorageChanges(h)
        await h.prompt("main", "first")
        await h.settle()
        (tmp_path / "main.jsonl").unlink()  # removed behind the session: it can never write again
        with eventlog.fileio.spy("pwrite") as writes:
            await h.prompt("main", "second")
            await trio.sleep(120)
        live = h.host.live("main")
        assert live is not None and live.agent.status == "idle"
        events = [json.loads(e.to_json()) for e in live.session.events]
        with pytest.raises(HostError) as refused:
            await h.prompt("main", "third")
    assert writes.calls == 0  # the removal is seen before any write, and nothing retries
    assert types(events)[-1] == "user/message"  # the turn's closing events are refused too
    assert not replies(events[9:])
    assert changes.states() == [("running", "failing")]
    assert refused.value.code == "persistence-failed"
