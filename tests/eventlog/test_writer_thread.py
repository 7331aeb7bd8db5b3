"""The session's writer thread (log-format §6.2): every batch of a session written on one
thread of its own, which ends with the session; group commit while a batch is held there;
cancelled flushers; rollback when the thread's write fails."""

from __future__ import annotations

import errno
import threading
from pathlib import Path

import pytest
import trio
import trio.testing

from eventlog import PersistenceError, SessionStore, fileio, read_log
from tests.eventlog.live_support import SetClock


def writer_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("eventlog writer ")]


class HeldSync:
    """A ``fileio.sync`` that records the thread of every call and holds the ``hold``-th call
    (1-based) until the test opens the gate."""

    def __init__(self, hold: int = 0) -> None:
        self.real = fileio.sync
        self.hold = hold
        self.threads: list[str] = []
        self.entered = threading.Event()
        self.gate = threading.Event()

    def __call__(self, fd: int) -> None:
        self.threads.append(threading.current_thread().name)
        if len(self.threads) == self.hold:
            self.entered.set()
            assert self.gate.wait(30)
        self.real(fd)


async def test_every_batch_is_written_on_the_sessions_own_thread_which_ends_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sync = HeldSync()
    monkeypatch.setattr(fileio, "sync", sync)
    store = SessionStore(tmp_path, clock=SetClock(), write_delay_ms=0)
    before = writer_threads()
    async with store.create(id="a") as a, store.create(id="b") as b:
        assert writer_threads() == before  # no thread before a session's first batch
        for n in range(3):
            a.append("note/x", {"n": n})
            b.append("note/x", {"n": n})
            await a.flush()
            await b.flush()
        names = {t.name for t in writer_threads()}
        assert names == {"eventlog writer a", "eventlog writer b"}
    # the publishes' and batches' syncs ran on the session's thread, never on trio's
    assert sorted(set(sync.threads)) == ["eventlog writer a", "eventlog writer b"]
    assert writer_threads() == before
    assert [e.value() for e in read_log(tmp_path / "a.jsonl").events] == [{"n": n} for n in range(3)]


async def test_no_thread_is_left_when_the_body_fails_or_the_host_is_cancelled(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, clock=SetClock(), write_delay_ms=0)
    with pytest.raises(KeyError):
        async with store.create(id="failing") as session:
            session.append("note/x", {})
            await session.flush()
            raise KeyError("the body's own error")
    with trio.CancelScope() as scope:  # cancelled from inside: no real-time budget to miss
        async with store.create(id="cancelled") as session:
            session.append("note/x", {})
            await session.flush()
            session.append("note/x", {"after": True})
            scope.cancel()
            await trio.sleep_forever()
    assert scope.cancelled_caught
    assert writer_threads() == []
    # aclose still persisted what the cancelled body appended
    assert [e.value() for e in read_log(tmp_path / "cancelled.jsonl").events] == [{}, {"after": True}]


async def test_a_cancelled_flush_does_not_cancel_the_write_held_in_the_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sync = HeldSync(hold=1)
    monkeypatch.setattr(fileio, "sync", sync)
    store = SessionStore(tmp_path, clock=SetClock(), write_delay_ms=0)
    flushed: list[int] = []
    async with store.create(id="k") as session:
        session.on_flushed(lambda s, through: flushed.append(through))
        session.append("note/x", {"n": 0})
        scope = trio.CancelScope()

        async def cancelled_flush() -> None:
            with scope:
                await session.flush()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancelled_flush)
            await trio.to_thread.run_sync(sync.entered.wait)  # the publish is held in the thread
            scope.cancel()
        assert scope.cancelled_caught and flushed == []  # the wait ended, the write did not
        sync.gate.set()
        assert await session.flush() == 0  # the held batch completes: nothing left to write
        assert flushed == [0] and len(sync.threads) == 1
    assert [e.value() for e in read_log(tmp_path / "k.jsonl").events] == [{"n": 0}]


async def test_appends_and_flushes_made_while_a_batch_is_held_form_the_next_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sync = HeldSync(hold=2)  # the first sync publishes; hold the next batch's
    monkeypatch.setattr(fileio, "sync", sync)
    store = SessionStore(tmp_path, clock=SetClock(), write_delay_ms=0)
    results: dict[int, int] = {}
    flushed: list[int] = []
    with fileio.spy("pwrite") as pwrite:
        async with store.create(id="g") as session:
            session.append("note/x", {"w": -1})
            await session.flush()
            session.on_flushed(lambda s, through: flushed.append(through))
            session.append("note/x", {"w": 0})

            async def worker(w: int) -> None:
                if w:
                    session.append("note/x", {"w": w})
                results[w] = await session.flush()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(worker, 0)
                await trio.to_thread.run_sync(sync.entered.wait)  # batch {w: 0} is held
                for w in range(1, 9):
                    nursery.start_soon(worker, w)
                await trio.testing.wait_all_tasks_blocked()
                assert pwrite.calls == 2  # nothing more starts while a batch is in flight
                sync.gate.set()
            # one more write for the eight appends, which every late flusher shared
            assert pwrite.calls == 3 and len(sync.threads) == 3
            # worker 0 may return after the next batch too (a flush may return more than it asked)
            assert results[0] in (1, 9) and {results[w] for w in range(1, 9)} == {9}
            assert flushed == [1, 9]
    written = [e.value()["w"] for e in read_log(tmp_path / "g.jsonl").events]
    assert written[:2] == [-1, 0] and sorted(written[2:]) == list(range(1, 9))  # tasks run in any order


async def test_a_failed_write_in_the_thread_rolls_back_and_the_retry_writes_the_same_bytes(
    tmp_path: Path,
) -> None:
    store = SessionStore(tmp_path, clock=SetClock(), write_delay_ms=0)
    async with store.create(id="r") as session:
        session.append("note/x", {"n": 0})
        await session.flush()
        path = session.path
        durable = path.read_bytes()
        session.append("note/x", {"n": 1})
        session.append("note/x", {"n": 2})
        # the write lands, its sync fails: the thread cuts the file back to the durable size
        with fileio.fail("sync", errno.EIO) as fault, pytest.raises(PersistenceError) as failed:
            await session.flush()
        assert fault.failures == 1
        assert isinstance(failed.value.__cause__, OSError) and not failed.value.permanent
        assert path.read_bytes() == durable and session.durable_through == 0
        assert await session.flush() == 2  # the retry: the same batch, once
    assert [e.value() for e in read_log(path).events] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert writer_threads() == []


async def test_an_unexpected_error_in_the_thread_fails_the_batch_and_the_thread_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real = fileio.pwrite
    calls = 0

    def pwrite(fd: int, data: bytes, offset: int) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("a bug below the writer")
        real(fd, data, offset)

    monkeypatch.setattr(fileio, "pwrite", pwrite)
    store = SessionStore(tmp_path, clock=SetClock(), write_delay_ms=0)
    async with store.create(id="u") as session:
        session.append("note/x", {"n": 0})
        await session.flush()
        session.append("note/x", {"n": 1})
        with pytest.raises(PersistenceError, match="a bug below the writer") as failed:
            await session.flush()
        assert isinstance(failed.value.__cause__, RuntimeError)
        assert await session.flush() == 1
    assert 'writer of session "u" failed unexpectedly' in caplog.text
    assert [e.value() for e in read_log(tmp_path / "u.jsonl").events] == [{"n": 0}, {"n": 1}]
