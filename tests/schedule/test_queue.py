"""ScheduleQueue: the per-agent FIFO (schedule §9)."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from schedule import ScheduleQueue


async def test_transactions_run_one_at_a_time_in_arrival_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    queue = ScheduleQueue()
    order: list[tuple[str, int]] = []
    inside = 0

    async def transaction(i: int) -> None:
        nonlocal inside
        async with queue:
            inside += 1
            assert inside == 1
            order.append(("start", i))
            await trio.sleep(1)
            order.append(("end", i))
            inside -= 1

    async with trio.open_nursery() as nursery:
        for i in range(5):
            nursery.start_soon(transaction, i)
            await trio.testing.wait_all_tasks_blocked()
    assert order == [(kind, i) for i in range(5) for kind in ("start", "end")]


async def test_a_failed_transaction_releases_the_queue_for_the_next(
    autojump_clock: trio.testing.MockClock,
) -> None:
    queue = ScheduleQueue()
    order: list[str] = []

    async def failing() -> None:
        with pytest.raises(RuntimeError, match="boom"):
            async with queue:
                order.append("failing")
                await trio.sleep(1)
                raise RuntimeError("boom")
        order.append("failed")

    async def next_one() -> None:
        async with queue:
            order.append("next")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(failing)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(next_one)
    assert order == ["failing", "failed", "next"]
    assert not queue.locked()


async def test_a_cancelled_wait_takes_nothing_and_keeps_the_order_of_the_others() -> None:
    queue = ScheduleQueue()
    order: list[str] = []
    release = trio.Event()

    async def holder() -> None:
        async with queue:
            order.append("holder")
            await release.wait()

    async def waiter(name: str, task_status: trio.TaskStatus[trio.CancelScope]) -> None:
        with trio.CancelScope() as scope:
            task_status.started(scope)
            async with queue:
                order.append(name)
                return
        order.append(f"{name} cancelled")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(holder)
        await trio.testing.wait_all_tasks_blocked()
        await nursery.start(waiter, "a")
        b = await nursery.start(waiter, "b")
        await nursery.start(waiter, "c")
        await trio.testing.wait_all_tasks_blocked()
        b.cancel()
        await trio.testing.wait_all_tasks_blocked()
        release.set()
    assert order == ["holder", "b cancelled", "a", "c"]
    assert not queue.locked()
