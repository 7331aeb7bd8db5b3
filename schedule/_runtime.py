"""The live schedule runtime of one root agent (schedule §11).

One trio task per live agent: it folds the session suffix, arms a bounded-segment timer for the
earliest target, and delivers due reminders by claiming the agent's maintenance phase, queuing one
follow-up and appending the dispatch — all synchronously — then waiting for the barrier. Every
drive step holds the agent's ``ScheduleQueue``, so it never interleaves with a tool transaction.
Durable state is only the session log; timers and waits are disposable projections of it.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any

from eventlog.values import Clock, compact_json

from ._decide import EveryBatch, OneShot, Wait
from ._diagnostics import Failure, describe, failing_as, schedule_logger
from ._errors import AgentBusy
from ._fold import FoldState, IncrementalFold
from ._framing import frame_batch, frame_one_shot
from ._protocols import AgentPort, SessionHandle
from ._queue import ScheduleQueue
from ._records import CHANGE_TYPE, Dispatch, change_to_dict

# trio is imported inside the functions that use it, not with the module: importing schedule (its
# pure functions, which the read-only log commands use) never loads it.
if TYPE_CHECKING:
    import trio

DEFAULT_SEGMENT_MS = 60_000

_SOURCE = {"kind": "plugin", "plugin": "schedule"}


class ScheduleRuntime:
    """Arms timers from the fold and delivers due reminders to one live root agent (schedule §11).

    Guarantees: a reminder is never delivered before its target by the wall clock read at the
    decision; each drive step re-reads the clock (timers sleep at most ``segment_ms`` per
    segment); a follow-up is queued and its dispatch appended with nothing in between; a
    faulted runtime does nothing until recreated; ``aclose`` never deletes or rewrites records.
    Delivery is at least once across crashes (schedule §11.10).
    """

    def __init__(
        self,
        *,
        session: SessionHandle,
        agent: AgentPort,
        clock: Clock,
        queue: ScheduleQueue,
        segment_ms: int = DEFAULT_SEGMENT_MS,
        logger: logging.Logger | None = None,
    ) -> None:
        import trio
        if type(segment_ms) is not int or segment_ms <= 0:
            raise ValueError(f"segment_ms must be a positive int, not {segment_ms!r}")
        self._session = session
        self._agent = agent
        self._clock = clock
        self._queue = queue
        self._segment_ms = segment_ms
        self._log = schedule_logger(logger)
        self._requested = False
        self._stopping = False
        self._faulted = False
        self._deadline: float | None = None  # trio time of the armed timer
        self._driving = False
        self._started = False
        self._done = trio.Event()  # run() has returned
        self._wake = trio.Event()  # replaced each time the loop goes to sleep
        self._changed = trio.Event()  # replaced on every settle-relevant change
        self._nursery: trio.Nursery | None = None
        self._idle_wait: trio.CancelScope | None = None
        self._queue_wait: trio.CancelScope | None = None
        self._folded = IncrementalFold()  # the suffix fold, decoding each event once
        self._scanned = 0  # events already checked by on_agent_idle (the log is append-only)
        self._has_changes = False

    @property
    def faulted(self) -> bool:
        """Whether a failure stopped this runtime for good (a new runtime is needed)."""
        return self._faulted

    async def run(self, *, task_status: Any = None) -> None:
        """Drive the agent's reminders until ``aclose()``; start with ``nursery.start(run)``.

        Reports started after requesting the first drive, so a preflight happens at start-up
        even without schedule events. If the host cancels it, the runtime is simply gone.
        """
        import trio
        if self._started:
            raise RuntimeError("ScheduleRuntime.run() can only be called once")
        self._started = True
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self.request_drive()
                if task_status is not None:  # started by nursery.start, not awaited directly
                    task_status.started()
                await self._loop()
                nursery.cancel_scope.cancel()
        finally:
            self._nursery = None
            self._idle_wait = None
            self._done.set()
            self._signal()

    def request_drive(self) -> None:
        """Ask for one drive step in the runtime's own task (sync, coalescing, non-blocking)."""
        if self._stopping or self._faulted:
            return
        self._deadline = None
        self._requested = True
        self._wake.set()

    def on_agent_idle(self) -> None:
        """The host's hook for each flip to idle: drive if the log holds any schedule change.

        Only the first sighting costs a scan of the whole log (seed included); sessions without
        schedule events therefore cause no flush.
        """
        if self._stopping or self._faulted:
            return
        if not self._has_changes:
            try:
                with failing_as("idle check failed"):
                    self._has_changes = self._scan_for_changes()
            except Failure as failure:
                self._failed(failure)
                return
        if self._has_changes:
            self.request_drive()

    async def aclose(self) -> None:
        """Stop for good and wait until ``run()`` has returned (idempotent; concurrent callers
        share the completion). Cancels the idle wait and any wait for the queue; a drive step
        already holding the queue finishes its current await and then does nothing more."""
        import trio
        if not self._stopping:
            self._stopping = True
            self._requested = False
            self._deadline = None
            for scope in (self._idle_wait, self._queue_wait):
                if scope is not None:
                    scope.cancel()
            self._wake.set()
            self._signal()
        if self._started:
            await self._done.wait()
        else:
            await trio.lowlevel.checkpoint()

    async def wait_settled(self) -> None:
        """Return once no drive is requested or running and no idle wait is pending (an armed
        timer does not count); at once if that holds or the runtime is faulted or closed."""
        while not self._settled():
            await self._changed.wait()

    # -- the loop ----------------------------------------------------------------------------

    async def _loop(self) -> None:
        import trio
        while not self._stopping:
            if self._requested and not self._faulted:
                self._requested = False
                await self._drive()
                continue
            self._signal()
            wake = self._wake = trio.Event()
            deadline = math.inf if self._deadline is None else self._deadline
            with trio.move_on_at(deadline):
                await wake.wait()
            if self._deadline is not None and trio.current_time() >= self._deadline:
                self.request_drive()

    async def _drive(self) -> None:
        """Take the queue (a wait ``aclose`` may cancel), run one drive step, release."""
        import trio
        self._driving = True
        try:
            with trio.CancelScope() as waiting:
                self._queue_wait = waiting
                async with self._queue:
                    self._queue_wait = None
                    try:
                        with failing_as("runtime failed", faults=True):
                            await self._drive_step()
                    except Failure as failure:
                        self._failed(failure)
        finally:
            self._queue_wait = None
            self._driving = False
            self._signal()

    async def _drive_step(self) -> None:
        """One drive step (schedule §11.2), holding the queue. A failure of the failure table
        (schedule §11.8) raises its ``Failure``; anything else escaping is the caller's
        "runtime failed"."""
        self._deadline = None
        if not self._runnable():
            return
        with failing_as("preflight failed", if_live=True):
            await self._session.flush()
        if not self._runnable():
            return
        decision = self._decide_or_arm(self._fold())
        if decision is None:
            return
        try:
            delivered = self._agent.run_maintenance(self._maintenance)
        except AgentBusy:
            if self._runnable():
                self._start_idle_wait()
            return
        if not delivered:
            return
        # No retry timer if this barrier fails: the next trigger's preflight covers it.
        with failing_as("dispatch barrier failed", if_live=True):
            await self._session.flush()
        if self._runnable():
            self.request_drive()

    def _maintenance(self) -> bool:
        """The maintenance task (schedule §11.3): synchronous, it MUST NOT await.

        Nothing can run between queuing the follow-up and appending its dispatch. A failure is
        handled here (logged, perhaps faulting) and gives ``False``: nothing was delivered.
        """
        if not self._runnable():
            return False
        try:
            decision = self._decide_or_arm(self._fold())
            if decision is None:
                return False
            with failing_as("framing or followup failed", if_live=True):
                if isinstance(decision, OneShot):
                    text = frame_one_shot(decision.record)
                else:
                    text = frame_batch(decision)
                self._agent.followup(text, source=dict(_SOURCE))
            with failing_as("dispatch append failed", faults=True):
                for payload in _dispatches(decision):
                    self._session.append(CHANGE_TYPE, payload)
        except Failure as failure:
            self._failed(failure)
            return False
        return True

    # -- steps shared by the drive and the maintenance task ------------------------------------

    def _fold(self) -> FoldState:
        """The fold of the suffix, caught up; any failure (a corrupt or unreadable log) faults."""
        with failing_as("corrupt schedule log", faults=True):
            return self._folded.state(self._session.events, self._session.seed_length)

    def _decide_or_arm(self, folded: FoldState) -> OneShot | EveryBatch | None:
        """Sample the wall clock once and decide what is due.

        ``Wait(target)`` arms the timer for ``min(target - now, segment_ms)`` from this sample
        (``Wait(None)`` arms nothing) and gives ``None``. A failing clock or decision raises
        "decision failed" (logged, no fault: the next trigger retries).
        """
        import trio
        with failing_as("decision failed"):
            now = self._clock.now_ms()
            decision = folded.decide(now)
        if not isinstance(decision, Wait):
            return decision
        if decision.target is not None:
            # decide() accepted the sample as a safe integer; an integral float becomes int.
            delay_ms = min(decision.target - int(now), self._segment_ms)
            self._deadline = trio.current_time() + delay_ms / 1000
        return None

    def _start_idle_wait(self) -> None:
        """At most one idle wait, in its own cancel scope inside the runtime's nursery."""
        import trio
        if self._idle_wait is not None or self._nursery is None:
            return
        scope = trio.CancelScope()
        self._idle_wait = scope
        self._nursery.start_soon(self._wait_for_idle, scope)

    async def _wait_for_idle(self, scope: trio.CancelScope) -> None:
        try:
            with scope, failing_as("idle wait failed", if_live=True):
                await self._agent.when_idle()
        except Failure as failure:
            self._failed(failure)
            return
        finally:
            self._end_idle_wait(scope)
        if not scope.cancelled_caught:
            self.request_drive()

    def _end_idle_wait(self, scope: trio.CancelScope) -> None:
        if self._idle_wait is scope:
            self._idle_wait = None
            self._signal()

    def _scan_for_changes(self) -> bool:
        events = self._session.events
        for index in range(self._scanned, len(events)):
            if events[index].type == CHANGE_TYPE:
                return True
        self._scanned = len(events)
        return False

    # -- state -----------------------------------------------------------------------------------

    def _runnable(self) -> bool:
        return not self._stopping and self._agent.is_live

    def _settled(self) -> bool:
        if self._faulted or self._stopping or self._done.is_set():
            return True
        return not (self._requested or self._driving or self._idle_wait is not None)

    def _failed(self, failure: Failure) -> None:
        """Handle a failure of the failure table (schedule §11.8): fault, or log (perhaps only while
        runnable), and in either case the current step stops."""
        if failure.faults:
            self._faulted = True
            self._requested = False
            self._deadline = None
            self._warn(failure.what, failure.cause)
            self._signal()
        elif not failure.if_live or self._runnable():
            self._warn(failure.what, failure.cause)

    def _signal(self) -> None:
        import trio
        self._changed.set()
        self._changed = trio.Event()

    def _warn(self, what: str, exc: BaseException) -> None:
        self._log.warning(
            "schedule: %s for agent %s: %s", what, compact_json(self._agent.id), describe(exc)
        )


def _dispatches(decision: OneShot | EveryBatch) -> list[dict[str, Any]]:
    """The dispatch payloads of a delivered decision: one id-only dispatch for a one-shot; for a
    batch one per record, in batch order, sharing the decision time as ``acceptedAt``."""
    if isinstance(decision, OneShot):
        return [change_to_dict(Dispatch(version=1, id=decision.record.id))]
    return [
        change_to_dict(Dispatch(version=1, id=record.id, accepted_at=decision.accepted_at))
        for record, _ in decision.items
    ]
