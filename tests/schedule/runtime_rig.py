"""A live runtime, its agent and tools over a session, for the runtime and timeline tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import trio
import trio.testing

from schedule import ScheduleQueue, ScheduleRuntime, ScheduleTools, SessionHandle, parse_instant

from .doubles import FakeAgent, TrioWallClock

EPOCH = 1799568000000  # 2027-01-10T08:00:00.000Z
SOURCE = {"kind": "plugin", "plugin": "schedule"}


def ms(instant: str) -> int:
    return parse_instant(instant)


@dataclass
class Live:
    runtime: ScheduleRuntime
    agent: FakeAgent
    tools: ScheduleTools
    queue: ScheduleQueue

    async def settle(self) -> None:
        await trio.testing.wait_all_tasks_blocked()
        await self.runtime.wait_settled()


@asynccontextmanager
async def live(
    session: SessionHandle,
    clock: TrioWallClock,
    *,
    agent: FakeAgent | None = None,
    segment_ms: int = 60_000,
    serve: float | None = None,
    idle_hook: bool = True,
) -> AsyncIterator[Live]:
    """Wire one agent as the host does (schedule §9) and run its runtime in a nursery.

    ``serve``: end every turn that many seconds after it starts. On exit the runtime is closed.
    """
    if agent is None:
        agent = FakeAgent(journal=getattr(session, "journal", None), clock=clock)
    queue = ScheduleQueue()
    runtime = ScheduleRuntime(
        session=session, agent=agent, clock=clock, queue=queue, segment_ms=segment_ms
    )
    tools = ScheduleTools(
        session=session,
        owner=agent,
        clock=clock,
        queue=queue,
        on_durable_change=runtime.request_drive,
    )
    if idle_hook:
        agent.on_idle = runtime.on_agent_idle
    async with trio.open_nursery() as nursery:
        await nursery.start(runtime.run)
        if serve is not None:
            nursery.start_soon(agent.serve, serve)
        yield Live(runtime, agent, tools, queue)
        agent.on_idle = None
        await runtime.aclose()
        nursery.cancel_scope.cancel()
