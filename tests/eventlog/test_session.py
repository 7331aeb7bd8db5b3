"""The live Session handle (log-format §3.5, log-format §5.4, log-format §6.1, log-format §6.5,
log-format §6.6)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from eventlog import (
    Event,
    EventLogError,
    InvalidEvent,
    Session,
    SessionClosed,
    SessionStore,
    read_log,
)
from tests.eventlog.live_support import E1_BYTES, SetClock, TrioWallClock, place


@pytest.fixture
def clock() -> SetClock:
    return SetClock()


@pytest.fixture
def store(tmp_path: Path, clock: SetClock) -> SessionStore:
    return SessionStore(tmp_path / "sessions", clock=clock)


def records(path: Path) -> list[dict[str, Any]]:
    return [msgspec.json.decode(event.to_json()) for event in read_log(path).events]


@pytest.mark.parametrize(
    ("type_", "data", "kwargs", "fragment"),
    [
        ("tool/run", {"n": float("nan")}, {}, 'session event "tool/run" carries non-JSON-serializable data'),
        ("tool/run", {1: "x"}, {}, 'session event "tool/run" carries non-JSON-serializable data'),
        ("tool/run", {"n": 2**53}, {}, 'session event "tool/run" carries non-JSON-serializable data'),
        ("Tool Run", {}, {}, ""),
        ("session/end-seed", {}, {}, ""),
        ("turn/start", {"turn": 2}, {"surface_op": "append"}, ""),
        ("user/message", {}, {}, ""),  # a surface type needs surface_op
    ],
)
async def test_append_validation_e12(
    store: SessionStore, type_: str, data: Any, kwargs: dict[str, Any], fragment: str
) -> None:
    async with store.create(id="s") as session:
        session.append("turn/start", {"turn": 1})
        with pytest.raises(InvalidEvent) as info:
            session.append(type_, data, **kwargs)
        assert fragment in str(info.value)
        assert session.next_seq == 1 and len(session.events) == 1
        assert session.append("turn/end", {"turn": 1}).seq == 1


async def test_append_commits_to_memory_without_io(store: SessionStore, clock: SetClock, tmp_path: Path) -> None:
    async with store.create(id="s") as session:
        view = session.events
        clock.now = 42
        event = session.append(
            "user/message", {"text": "hi"}, surface_op="append", source_event_seqs=None
        )
        assert isinstance(event, Event)
        assert (event.type, event.seq, event.time, event.value()) == ("user/message", 0, 42, {"text": "hi"})
        assert event.to_json() == (
            b'{"type":"user/message","seq":0,"time":42,"data":{"text":"hi"},"surfaceOp":"append"}'
        )
        clock.now = -5  # times are not required to be monotonic
        assert session.append("note/x", None, ignorable=True).time == -5
        assert list(view) == list(session.events) and len(view) == 2 and view[0] is event
        assert not hasattr(view, "append")
        assert session.next_seq == 2 and session.durable_through == -1
        assert not (tmp_path / "sessions").exists()  # nothing written yet: no I/O in append
    assert records(tmp_path / "sessions" / "s.jsonl")[1] == {
        "type": "note/x", "seq": 1, "time": -5, "data": None, "ignorable": True,
    }


async def test_on_event_observers_order_containment_and_reentrancy(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[tuple[str, int]] = []
    async with store.create(id="obs") as session:

        def first(s: Session, event: Event) -> None:
            assert s is session and s.next_seq == event.seq + 1  # committed before observers
            seen.append(("first", event.seq))

        def broken(s: Session, event: Event) -> None:
            raise RuntimeError("observer bug")

        def reenter(s: Session, event: Event) -> None:
            with pytest.raises(EventLogError) as info:
                s.append("note/inner", {})
            assert str(info.value) == (
                "session append cannot reenter while another append is being published"
            )
            seen.append(("reenter", event.seq))

        session.on_event(first)
        session.on_event(broken)
        unsubscribe = session.on_event(reenter)
        with caplog.at_level(logging.ERROR, logger="eventlog"):
            session.append("note/a", {})
        unsubscribe()
        unsubscribe()  # removing twice is harmless
        session.append("note/b", {})
        assert seen == [("first", 0), ("reenter", 0), ("first", 1)]
        assert session.next_seq == 2  # neither the failing observer nor the refused inner append undid anything
        logged = [r for r in caplog.records if r.name == "eventlog"]
        assert len(logged) == 2 and all('"obs"' in r.getMessage() for r in logged)
        assert all(r.exc_info is not None for r in logged)


async def test_append_guards(store: SessionStore) -> None:
    calls: list[tuple[Session, Any]] = []

    class Refused(Exception):
        pass

    async with store.create(id="g") as session:

        def guard(s: Session, data: Any) -> None:
            calls.append((s, data))
            if data.get("bad"):
                raise Refused("no")

        remove = session.add_append_guard("schedule/change", guard)
        session.append("note/x", {"bad": True})  # other types are not guarded
        session.append("schedule/change", {"bad": False})
        with pytest.raises(Refused):
            session.append("schedule/change", {"bad": True})
        assert session.next_seq == 2
        with pytest.raises(InvalidEvent):  # envelope checks run before guards
            session.append("schedule/change", {"bad": float("inf")})
        assert calls == [(session, {"bad": False}), (session, {"bad": True})]
        remove()
        session.append("schedule/change", {"bad": True})
        assert session.next_seq == 3


async def test_flush_on_an_empty_session_publishes_nothing(store: SessionStore, tmp_path: Path) -> None:
    async with store.create(id="empty") as session:
        assert await session.flush() == -1
        assert await session.flush() == -1
    assert not (tmp_path / "sessions").exists()


async def test_closed_session_refuses_and_aclose_is_idempotent(store: SessionStore) -> None:
    async with store.create(id="c") as session:
        session.append("note/x", {})
        await session.aclose()
        await session.aclose()
        with pytest.raises(SessionClosed, match='^session "c" is closed$'):
            session.append("note/y", {})
        with pytest.raises(SessionClosed):
            await session.flush()
        assert session.durable_through == 0
    async with store.open("c") as again:  # the lock and the id were released by aclose
        assert again.next_seq == 1


async def test_aclose_persists_what_a_cancelled_host_appended(tmp_path: Path, clock: SetClock) -> None:
    store = SessionStore(tmp_path, clock=clock, write_delay_ms=0)
    with trio.CancelScope() as scope:
        async with store.create(id="cancelled") as session:
            session.append("turn/start", {"turn": 1})
            scope.cancel()
            await trio.sleep(1)
            pytest.fail("not cancelled")
    assert scope.cancelled_caught
    assert [r["type"] for r in records(tmp_path / "cancelled.jsonl")] == ["turn/start"]


async def test_write_delay_zero_writes_only_on_flush(tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    store = SessionStore(tmp_path, clock=TrioWallClock(), write_delay_ms=0)
    flushed: list[int] = []
    async with store.create(id="z") as session:
        session.on_flushed(lambda s, through: flushed.append(through))
        session.append("note/a", {})
        await trio.sleep(3600)
        assert not (tmp_path / "z.jsonl").exists() and flushed == []
        assert await session.flush() == 0
        session.append("note/b", {})
        await trio.sleep(3600)
        assert flushed == [0] and session.durable_through == 0
    assert flushed == [0, 1]  # aclose wrote the rest


async def test_background_window_is_fixed_not_a_debounce(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    store = SessionStore(tmp_path, clock=TrioWallClock(), write_delay_ms=5)
    flushed: list[tuple[float, int, int]] = []
    done = trio.Event()
    async with store.create(id="w") as session:

        def on_flushed(s: Session, through: int) -> None:
            flushed.append((trio.current_time(), through, s.durable_through))
            done.set()

        session.on_flushed(on_flushed)
        for t in range(5):  # appends at 0..4 ms all join the window opened at 0 ms
            await trio.sleep_until(t / 1000)
            session.append("note/x", {"t": t})
        await done.wait()
        assert flushed == [(pytest.approx(0.005), 4, 4)]


async def test_on_flushed_once_per_batch_before_flushers_are_released(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    order: list[str] = []
    async with store.create(id="f") as session:
        session.on_flushed(lambda s, through: order.append(f"flushed {through} {s.durable_through}"))
        session.on_flushed(lambda s, through: 1 / 0)
        with caplog.at_level(logging.ERROR, logger="eventlog"):
            session.append("note/a", {})
            session.append("note/b", {})
            order.append(f"returned {await session.flush()}")
            order.append(f"returned {await session.flush()}")  # nothing new: no batch
            session.append("note/c", {})
            order.append(f"returned {await session.flush()}")
    assert order == ["flushed 1 1", "returned 1", "returned 1", "flushed 2 2", "returned 2"]
    assert sum('"f"' in r.getMessage() for r in caplog.records if r.name == "eventlog") == 2


async def test_cancelling_flush_cancels_only_the_wait(tmp_path: Path, clock: SetClock) -> None:
    store = SessionStore(tmp_path, clock=clock, write_delay_ms=0)
    async with store.create(id="k") as session:
        durable = trio.Event()
        session.on_flushed(lambda s, through: durable.set())
        session.append("note/a", {})
        with trio.move_on_after(0) as scope:
            await session.flush()
        assert scope.cancelled_caught
        await durable.wait()  # the batch the flush asked for still happened
        assert session.durable_through == 0
        assert [r["type"] for r in records(tmp_path / "k.jsonl")] == ["note/a"]


async def test_opened_fork_child_exposes_seed_length(store: SessionStore, tmp_path: Path) -> None:
    place(tmp_path / "sessions", "demo-1.jsonl", E1_BYTES)
    await store.fork("demo-1", id="child", at=5)
    async with store.open("child") as session:
        assert session.seed_length == 6 and session.header.parent_session == "demo-1"
        assert session.events[6].type == "session/end-seed"
        assert session.events[6:][0].value() == {}
