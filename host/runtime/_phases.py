"""The phase gate of one agent: ``idle``, ``maintenance`` or ``running`` (host §3.1, host §3.2,
host §3.10).

The public status is ``running`` in phase ``running`` and ``idle`` otherwise. A wake while idle
flips to ``running`` at once (the driver then opens a turn); during maintenance it is latched and
runs when the maintenance task settles, if input is queued; while running it does nothing.
``when_idle`` waiters resume only when the driver reports ``idle``, which it never does between
back-to-back turns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeVar

import trio

from schedule import AgentBusy

from ._notifications import Status

T = TypeVar("T")
Phase = Literal["idle", "running", "maintenance"]


class AgentClosed(Exception):
    """Input offered to an agent that is shutting down or closed; nothing was enqueued."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f'the agent of session "{session_id}" is closed')
        self.session_id = session_id


class PhaseGate:
    """The phase of the agent of session ``session_id``.

    ``on_status(status)`` is called synchronously on each public status flip; every idle
    callback (:meth:`add_idle_callback`) each time the status becomes ``idle`` while the gate is
    open. ``has_input()`` tells whether either inbox queue holds a message.
    """

    def __init__(
        self, session_id: str, *, on_status: Callable[[Status], None], has_input: Callable[[], bool]
    ) -> None:
        self._session_id = session_id
        self._on_status = on_status
        self._has_input = has_input
        self._on_idle: list[Callable[[], None]] = []
        self._phase: Phase = "idle"
        self._latched = False
        self._closing = False
        self._idle = trio.Event()
        self._idle.set()
        self._wakeup = trio.Event()
        self._stopped = trio.Event()

    @property
    def phase(self) -> Phase:
        return self._phase

    @property
    def status(self) -> Status:
        return "running" if self._phase == "running" else "idle"

    @property
    def closing(self) -> bool:
        """True once :meth:`close` was called: no more wakes, no more idle callbacks."""
        return self._closing

    def add_idle_callback(self, callback: Callable[[], None]) -> None:
        self._on_idle.append(callback)

    def wake(self) -> None:
        """Idle: become ``running`` (publishing it) and wake the driver. Maintenance: latch the
        wake. Running or closing: nothing."""
        if self._closing:
            return
        if self._phase == "idle":
            self._phase = "running"
            self._idle = trio.Event()
            self._on_status("running")
            self._wakeup.set()
        elif self._phase == "maintenance":
            self._latched = True

    async def next_activity(self) -> bool:
        """The driver's wait: return once woken, True if the phase is ``running`` (an activity
        runs; one woken just before :meth:`close` still ends with ``idle``)."""
        await self._wakeup.wait()
        self._wakeup = trio.Event()
        return self._phase == "running"

    def become_idle(self) -> None:
        """The driver ends an activity: publish ``idle``, resolve the waiters, run the idle
        callbacks (unless closing)."""
        self._phase = "idle"
        self._on_status("idle")
        self._idle.set()
        if not self._closing:
            for callback in self._on_idle:
                callback()

    async def when_idle(self) -> None:
        """Return once the phase is ``idle`` (at once if it is). Raises :class:`AgentClosed` if
        the driver stopped without becoming idle."""
        while self._phase != "idle":
            if self._stopped.is_set():
                raise AgentClosed(self._session_id)  # the driver is gone (an abandoned session)
            await self._idle.wait()

    def run_maintenance(self, task: Callable[[], T]) -> T:
        """Run a synchronous ``task()`` in the maintenance phase (schedule §8).

        Raises ``schedule.AgentBusy`` without calling ``task`` unless the phase is ``idle``. While
        the task runs, arriving input is parked and its wake latched; the phase is released however
        the task ends, then the latched wake runs if input is queued. The task's result or
        exception passes through unchanged.
        """
        if self._phase != "idle" or self._closing:
            raise AgentBusy(f'agent "{self._session_id}" is {"closing" if self._closing else self._phase}')
        self._phase = "maintenance"
        self._latched = False
        try:
            return task()
        finally:
            self._phase = "idle"
            if self._latched and self._has_input():
                self._latched = False
                self.wake()

    def close(self) -> None:
        """Stop admitting wakes and idle callbacks, and wake the driver so it can stop."""
        self._closing = True
        self._wakeup.set()

    def driver_stopped(self) -> None:
        """The driver task has ended: ``when_idle`` waiters re-check and give up."""
        self._stopped.set()
        self._idle.set()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()
