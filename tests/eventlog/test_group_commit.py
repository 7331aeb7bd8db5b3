"""Write batching and group commit (log-format §6.1, log-format §6.5, E13), counted through the
``fileio`` seam."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import trio
import trio.testing

from eventlog import Session, SessionStore, fileio, read_log
from tests.eventlog.live_support import SetClock, TrioWallClock


async def test_e13_two_flushers_share_one_batch(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    store = SessionStore(tmp_path, clock=TrioWallClock(), write_delay_ms=5)
    flushed: list[tuple[float, int]] = []
    returned: list[tuple[int, int, int]] = []
    second_batch = trio.Event()
    with fileio.spy("pwrite") as pwrite, fileio.spy("sync") as sync:
        async with store.create(id="e13") as session:

            def on_flushed(s: Session, through: int) -> None:
                flushed.append((trio.current_time(), through))
                if through == 3:
                    second_batch.set()

            session.on_flushed(on_flushed)

            async def flusher() -> None:
                await trio.sleep_until(0.003)
                result = await session.flush()
                returned.append((result, pwrite.calls, sync.calls))

            async with trio.open_nursery() as nursery:
                for seq in range(3):
                    await trio.sleep_until(seq / 1000)
                    assert session.append("note/x", {"n": seq}).seq == seq
                nursery.start_soon(flusher)
                nursery.start_soon(flusher)
                await trio.sleep_until(0.004)
                assert session.append("note/x", {"n": 3}).seq == 3
            # both flushes returned 2 after one pwrite and one sync
            assert returned == [(2, 1, 1), (2, 1, 1)]
            await second_batch.wait()
            assert [through for _, through in flushed] == [2, 3]
            assert flushed[1][0] == pytest.approx(0.009)  # the window of the append at 4 ms
            assert (pwrite.calls, sync.calls) == (2, 2)
    assert [e.value() for e in read_log(tmp_path / "e13.jsonl").events] == [{"n": n} for n in range(4)]


class GatedSync:
    """A ``fileio.sync`` whose first call waits until the test opens the gate."""

    def __init__(self) -> None:
        self.real = fileio.sync
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.calls = 0

    def __call__(self, fd: int) -> None:
        self.calls += 1
        if self.calls == 1:
            self.entered.set()
            self.gate.wait(30)
        self.real(fd)


async def test_one_batch_in_flight_and_late_flushers_share_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SessionStore(tmp_path, clock=SetClock(), write_delay_ms=60000)
    sync = GatedSync()
    monkeypatch.setattr(fileio, "sync", sync)
    results: dict[str, int] = {}
    flushed: list[int] = []
    async with store.create(id="g") as session:
        session.on_flushed(lambda s, through: flushed.append(through))

        async def flush(name: str) -> None:
            results[name] = await session.flush()

        async with trio.open_nursery() as nursery:
            session.append("note/x", {"n": 0})
            nursery.start_soon(flush, "a")
            await trio.to_thread.run_sync(sync.entered.wait)  # batch 1 is in flight, held
            session.append("note/x", {"n": 1})
            session.append("note/x", {"n": 2})
            nursery.start_soon(flush, "b")
            nursery.start_soon(flush, "c")
            await trio.testing.wait_all_tasks_blocked()
            assert sync.calls == 1  # no second batch while the first is in flight
            sync.gate.set()
        # a was served by batch 1 and not held back by later appends; b and c shared batch 2
        assert results == {"a": 0, "b": 2, "c": 2}
        assert flushed == [0, 2] and sync.calls == 2
    assert [e.value() for e in read_log(tmp_path / "g.jsonl").events] == [{"n": n} for n in range(3)]


async def test_many_concurrent_flushers_share_syncs(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, clock=SetClock(), write_delay_ms=5)
    tasks, rounds = 16, 10
    with fileio.spy("sync") as sync:
        async with store.create(id="many") as session:
            flushed: list[int] = []
            session.on_flushed(lambda s, through: flushed.append(through))

            async def worker(w: int) -> None:
                for r in range(rounds):
                    seq = session.append("note/x", {"w": w, "r": r}).seq
                    through = await session.flush()
                    assert through >= seq and session.durable_through >= seq

            async with trio.open_nursery() as nursery:
                for w in range(tasks):
                    nursery.start_soon(worker, w)
    assert sync.calls < tasks * rounds
    assert flushed == sorted(set(flushed)) and flushed[-1] == tasks * rounds - 1
    events = read_log(tmp_path / "many.jsonl").events
    assert [e.seq for e in events] == list(range(tasks * rounds))
    for w in range(tasks):
        assert [e.value()["r"] for e in events if e.value()["w"] == w] == list(range(rounds))
