"""The agent of one live session (host §3): its inbox, phase gate and turn runner, and the driver
task that turns queued input into turns. :class:`SchedulePort` adapts it to schedule's
``AgentPort``.

Everything the agent writes goes through the eventlog ``Session`` it is given; it keeps no state
that the log could not rebuild except the phase and the request-header bookkeeping of this
process.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import trio

from eventlog import PersistenceError, Session
from eventlog.values import Clock
from host.models import Chunk, ModelAdapter
from timecontext import PreStepHook

from ._inbox import Inbox, Target, UserMessage, user_message
from ._notifications import Status
from ._phases import AgentClosed, Phase, PhaseGate
from ._requests import DEFAULT_MAX_RETRIES, DEFAULT_SYSTEM_PROMPT, Route
from ._storage import StorageMonitor
from ._tools import ToolRegistry
from ._turns import DEFAULT_MAX_STEPS, CancelCause, TurnRunner

T = TypeVar("T")

_logger = logging.getLogger("host")


class Agent:
    """The agent of one live session.

    Construct it over an open eventlog ``Session`` (a resumed one included, with the inbox its
    log replays to), then run :meth:`run` in the session's nursery. Input enters through
    :meth:`followup` and :meth:`steer`, which append their receipt before returning;
    :meth:`cancel` aborts the active turn; :meth:`aclose` disposes of the agent. ``route()`` and
    ``adapter_for()`` are called at every request, so a new route (``initialize``) takes effect at
    the next step; ``system`` is fixed.

    Callbacks, called synchronously: ``on_status(status)`` on each public status flip,
    ``on_delta(turn, step, chunk)`` for every streamed chunk, and every idle callback
    (:meth:`add_idle_callback`) each time the status becomes ``idle`` while the agent is live.

    Every flush goes through ``storage``. While it is failing (and retrying), the driver opens no
    turn: it stays ``running`` with the input queued — a turn the failure stopped before its
    first model request included (:meth:`TurnRunner.run_turn`) — and carries on once storage
    works, so a client waiting for ``idle`` sees the turns run. New input meanwhile makes the
    storage retry at once. A cancel that empties the inbox, or disposal, ends the wait.
    """

    def __init__(
        self,
        session: Session,
        *,
        storage: StorageMonitor,
        route: Callable[[], Route],
        adapter_for: Callable[[str], ModelAdapter],
        tools: ToolRegistry,
        hooks: Sequence[PreStepHook] = (),
        clock: Clock,
        system: str | None = DEFAULT_SYSTEM_PROMPT,
        max_steps: int = DEFAULT_MAX_STEPS,
        max_retries: int = DEFAULT_MAX_RETRIES,
        uniform: Callable[[float, float], float] = random.uniform,
        inbox: Mapping[Target, Sequence[UserMessage]] | None = None,
        on_status: Callable[[Status], None] = lambda status: None,
        on_delta: Callable[[int, int, Chunk], None] = lambda turn, step, chunk: None,
    ) -> None:
        self._session = session
        self._storage = storage
        self.tools = tools
        self._inbox = Inbox(session, inbox)
        self._gate = PhaseGate(session.id, on_status=on_status, has_input=lambda: bool(self._inbox))
        self._storage_wait: trio.CancelScope | None = None  # cancelled to make a storage wait look again
        self._turns = TurnRunner(
            session,
            self._inbox,
            flush=storage.flush,
            route=route,
            adapter_for=adapter_for,
            tools=tools,
            hooks=hooks,
            clock=clock,
            system=system,
            max_steps=max_steps,
            max_retries=max_retries,
            uniform=uniform,
            on_delta=on_delta,
        )
        self.port = SchedulePort(self)

    # --- public state -----------------------------------------------------------------------------

    @property
    def id(self) -> str:
        return self._session.id

    @property
    def phase(self) -> Phase:
        return self._gate.phase

    @property
    def status(self) -> Status:
        """``running`` in phase ``running``, ``idle`` otherwise (maintenance included)."""
        return self._gate.status

    @property
    def is_live(self) -> bool:
        """True until disposal begins."""
        return not self._gate.closing

    def add_idle_callback(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` each time the status becomes ``idle`` while the agent is live."""
        self._gate.add_idle_callback(callback)

    # --- input ------------------------------------------------------------------------------------

    def followup(self, content: Sequence[Any], source: Mapping[str, Any]) -> str:
        """Queue a user message for a later turn (``next-turn``); returns its id. The receipt
        splice is appended before this returns, then the driver is woken. Raises
        :class:`AgentClosed` (nothing enqueued) once disposal has begun, or eventlog's error if
        the append is refused."""
        return self._enqueue("next-turn", user_message(content, source))

    def steer(self, content: Sequence[Any], source: Mapping[str, Any]) -> str:
        """Like :meth:`followup`, on ``next-step``: the message joins the running turn at its next
        step boundary (or opens a turn when idle)."""
        return self._enqueue("next-step", user_message(content, source))

    def _enqueue(self, target: Target, message: dict[str, Any]) -> str:
        if self._gate.closing:
            raise AgentClosed(self.id)
        self._inbox.insert(target, message)
        self._gate.wake()
        self._storage.kick()  # someone is waiting for it: see at once whether storage works
        return str(message["id"])

    def wake(self) -> None:
        """Start a turn for input already queued (a resumed inbox); nothing without input."""
        if self._inbox:
            self._gate.wake()

    # --- schedule's view --------------------------------------------------------------------------

    async def when_idle(self) -> None:
        """Return once the phase is ``idle`` (at once if it is). Never returns between back-to-back
        turns: the driver does not pass through ``idle`` while input is pending. Raises
        :class:`AgentClosed` if the driver stopped without becoming idle."""
        await self._gate.when_idle()

    def run_maintenance(self, task: Callable[[], T]) -> T:
        """Run a synchronous ``task()`` in the maintenance phase; see
        :meth:`PhaseGate.run_maintenance` (``schedule.AgentBusy`` unless idle)."""
        return self._gate.run_maintenance(task)

    # --- cancellation and disposal ----------------------------------------------------------------

    def cancel(self, cause: CancelCause, *, keep_inbox: bool = False) -> None:
        """Abort the active turn (host §3.9): unless ``keep_inbox``, clear the inbox with
        ``canceled`` splices; then cancel the turn's scope. Its cleanup (aborted tool results,
        ``step/end``, ``turn/end`` aborted with ``{"kind":cause}``) is written by the driver."""
        if not keep_inbox:
            self._inbox.cancel()
        self._turns.cancel(cause)
        self._nudge()

    async def aclose(self) -> None:
        """Dispose of the agent: no more input or idle callbacks, ``cancel("disposed",
        keep_inbox=True)`` (queued input stays in the log for a resume), and wait until the
        driver has written its cleanup and stopped. Idempotent."""
        if not self._gate.closing:
            self._gate.close()
            self.cancel("disposed", keep_inbox=True)
        await self._gate.wait_stopped()

    def _nudge(self) -> None:
        if self._storage_wait is not None:
            self._storage_wait.cancel()

    # --- the driver -------------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The driver task: wait for a wake, then run turns while input is queued (host §3.3)."""
        task_status.started()
        try:
            while not self._gate.closing:
                if await self._gate.next_activity():
                    await self._activity()
        finally:
            self._gate.driver_stopped()

    async def _activity(self) -> None:
        """Turns back to back while input is queued (waiting while storage is failing); then
        flush, check again, and go idle."""
        while not self._gate.closing:
            if self._inbox:
                if self._storage.retrying():
                    await self._wait_for_storage()
                    continue
                try:
                    await self._turns.run_turn()
                except PersistenceError as exc:
                    # The session failed for good (its file was removed or replaced): nothing can
                    # be appended, not even the turn's closing events. Stop this activity.
                    _logger.warning('session "%s": the turn could not be closed: %s', self.id, exc)
                    break
                except Exception:
                    # The turn's closing events could not be appended for another reason (a bug):
                    # stop this activity; the next input wakes a new one.
                    _logger.exception('agent of session "%s": a turn could not be closed', self.id)
                    break
                continue
            try:
                await self._storage.flush()
            except PersistenceError as exc:
                _logger.warning(
                    'session "%s": flush before idle failed (events stay pending): %s', self.id, exc
                )
            if not self._inbox:
                break
        self._gate.become_idle()

    async def _wait_for_storage(self) -> None:
        """Wait while storage is retrying and input is queued, until disposal."""
        while self._storage.retrying() and self._inbox and not self._gate.closing:
            with trio.CancelScope() as self._storage_wait:
                await self._storage.wait_changed()
            self._storage_wait = None


class SchedulePort:
    """The agent as ``schedule``'s ``AgentPort`` (schedule §8, host §3.10), exactly."""

    __slots__ = ("_agent",)

    def __init__(self, agent: Agent) -> None:
        self._agent = agent

    @property
    def id(self) -> str:
        return self._agent.id

    @property
    def is_live(self) -> bool:
        return self._agent.is_live

    async def when_idle(self) -> None:
        await self._agent.when_idle()

    def run_maintenance(self, task: Callable[[], T]) -> T:
        return self._agent.run_maintenance(task)

    def followup(self, text: str, *, source: Mapping[str, str]) -> None:
        self._agent.followup([{"type": "text", "text": text}], source)
