"""The live sessions of one process (host §5.2, host §5.3, host §4.3.9 steps 3–4).

:class:`SessionRegistry` makes a session live at most once per id, in arrival order: it resumes
the file if there is one (repair, inbox replay) or creates it, wires the agent and schedule's
runtime and tools to it, runs it in its own task and nursery until shutdown, and closes it
(cancel, stop the runtime, flush, release the lock). It can also abandon every session as a crash
would, for restart testing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import trio

import schedule
from eventlog import EventLogError, PersistenceError, Session, SessionStore
from eventlog.scan import Scanner
from eventlog.values import Clock
from host.models import Chunk, ModelAdapter
from timecontext import PreStepHook

from ._agent import Agent
from ._boundary import HostError, as_host_error, check_session_id, shutting_down
from ._history import MalformedPersisted, replay_inbox
from ._inbox import Target, UserMessage
from ._notifications import Delta, EventAppended, Notification, Status, StatusChanged, StorageChanged
from ._requests import Route
from ._storage import Storage, StorageMonitor
from ._tools import ToolRegistry, schedule_tools

T = TypeVar("T")

_logger = logging.getLogger("host")


def sole_exception(exc: BaseException) -> BaseException:
    """The one exception inside nested single-member groups (trio's nurseries wrap what their
    bodies raise); ``exc`` itself otherwise."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


@dataclass(frozen=True, slots=True)
class ShutdownReport:
    """What shutdown could not make durable: session id → the flush or close error message."""

    failed: Mapping[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed


@dataclass(frozen=True, slots=True)
class Wiring:
    """What every live session is built with: the host's route and adapters (read at every
    request), its pre-step hooks, wall clock and limits, and where notifications go."""

    route: Callable[[], Route]
    adapter_for: Callable[[str], ModelAdapter]
    hooks: tuple[PreStepHook, ...]
    clock: Clock
    system: str | None
    max_steps: int
    max_retries: int
    uniform: Callable[[float, float], float]
    schedule_segment_ms: int
    emit: Callable[[Notification], None]


class LiveSession:
    """One live session of this process: its eventlog ``session``, ``agent``, schedule ``runtime``
    (whose tools ``schedule_tools`` name in the agent's registry), the ``storage`` monitor every
    flush goes through, and the in-memory working directory ``cwd``."""

    def __init__(
        self,
        session: Session,
        agent: Agent,
        runtime: schedule.ScheduleRuntime,
        storage: StorageMonitor,
        schedule_tools: tuple[str, ...],
        cwd: Path,
        scope: trio.CancelScope,
    ) -> None:
        self.session = session
        self.agent = agent
        self.runtime = runtime
        self.storage = storage
        self.schedule_tools = schedule_tools
        self.cwd = cwd
        self.flush_error: str | None = None
        self._stop = trio.Event()
        self._scope = scope  # cancelled only to abandon the session (a simulated crash)
        self._done = trio.Event()

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def status(self) -> Status:
        return self.agent.status


class _Place:
    """``async with _Place(line)``: hold a session's line, taken at once when nobody holds it or
    waits for it (so admitting to a live session costs no scheduling round), else in turn."""

    __slots__ = ("_line",)

    def __init__(self, line: trio.StrictFIFOLock) -> None:
        self._line = line

    async def __aenter__(self) -> None:
        try:
            self._line.acquire_nowait()
        except trio.WouldBlock:
            await self._line.acquire()

    async def __aexit__(self, *exc_info: object) -> None:
        self._line.release()


class SessionRegistry:
    """The live sessions of one process, each running in a task of ``nursery`` (:meth:`bind`).

    Guarantees: one live agent per session id, even under concurrent first requests; calls for
    one id are served in arrival order; sessions stay live, holding their writer lock, until
    :meth:`shutdown`. ``cwd()`` is the header ``cwd`` of sessions created now.
    """

    def __init__(self, store: SessionStore, wiring: Wiring, *, cwd: Callable[[], Path]) -> None:
        self._store = store
        self._wiring = wiring
        self._cwd = cwd
        self._live: dict[str, LiveSession] = {}
        self._lines: dict[str, trio.StrictFIFOLock] = {}
        self._nursery: trio.Nursery | None = None
        self._closing = False
        self._shutdown_done = trio.Event()
        self._report = ShutdownReport()

    def bind(self, nursery: trio.Nursery) -> None:
        """The nursery live sessions run in (``open_host``'s)."""
        self._nursery = nursery

    @property
    def closing(self) -> bool:
        """True once shutdown (or abandonment) began: nothing more is made live."""
        return self._closing

    def check_open(self) -> None:
        """Raise ``shutting-down`` once shutdown began."""
        if self._closing:
            raise shutting_down()

    def live(self, session_id: str) -> LiveSession | None:
        return self._live.get(session_id)

    def live_sessions(self) -> tuple[LiveSession, ...]:
        return tuple(self._live.values())

    def _line(self, session_id: str) -> trio.StrictFIFOLock:
        line = self._lines.get(session_id)
        if line is None:
            line = self._lines[session_id] = trio.StrictFIFOLock()
        return line

    async def with_live(
        self,
        session_id: str,
        then: Callable[[LiveSession], T],
        *,
        create: bool = True,
        already: Callable[[LiveSession], T] | None = None,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> T:
        """Run ``then(live)`` on the live session ``session_id`` (host §5.2), in arrival order, or
        ``already(live)`` instead, if given, when the session was live before this call's turn.
        Without ``create`` a session with no file is ``session-not-found``.

        ``task_status.started()`` is reported once the call holds its place in the session's line.
        A session made live here runs ``then`` before its schedule runtime starts (host §5.3
        step 6). Refusals are :class:`HostError`\\ s (eventlog's errors mapped to their codes).
        """
        self.check_open()
        check_session_id(session_id)
        line = self._line(session_id)
        task_status.started()
        async with _Place(line):
            self.check_open()
            live = self._live.get(session_id)
            if live is not None:
                return (already or then)(live)
            assert self._nursery is not None, "use the host inside open_host()"
            resume = await self._store.find(session_id) is not None
            if not resume:
                if not create:
                    raise HostError("session-not-found", f'session "{session_id}" not found')
                try:
                    await self._store.ensure_root()
                except PersistenceError as exc:
                    raise HostError(
                        "persistence-failed",
                        f'cannot create session "{session_id}": {exc}',
                        sessionId=session_id,
                    ) from exc
            try:
                result: T = await self._nursery.start(self._run_session, session_id, resume, then)
            except BaseException as raised:
                failure = sole_exception(raised)
                if not isinstance(failure, Exception):
                    raise
                mapped = as_host_error(failure, session_id, f'cannot open session "{session_id}"')
                if mapped is failure and failure is raised:
                    raise
                raise mapped from failure
            return result

    async def _run_session(
        self,
        session_id: str,
        resume: bool,
        then: Callable[[LiveSession], T],
        *,
        task_status: trio.TaskStatus[T] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """One live session, from open to close (host §5.2, host §5.3, host §4.3.9 steps 3–4)."""
        live: LiveSession | None = None
        started = False
        if resume:
            opening = self._store.open(session_id)
        else:
            opening = self._store.create(id=session_id, cwd=str(self._cwd()))
        scope = trio.CancelScope()
        emit = self._wiring.emit
        try:
            with scope:
                async with opening as session:
                    session.on_event(lambda s, e: emit(EventAppended(s.id, e)))
                    try:
                        inbox = replay_inbox(session.events, session.seed_length) if resume else None
                        # schedule's incremental guard: a change that would corrupt the fold is refused.
                        session.add_append_guard("schedule/change", schedule.ScheduleGuard())
                        live = self._wire(session, inbox, scope)
                    except MalformedPersisted as exc:  # host §5.3: corrupt, named by its line
                        line = await trio.to_thread.run_sync(_line_of, session.path, exc.seq)
                        raise (exc if line is None else exc.at_line(line)) from exc
                    self._live[session_id] = live
                    async with trio.open_nursery() as nursery:
                        await nursery.start(live.storage.run)
                        await nursery.start(live.agent.run)
                        live.agent.wake()  # host §5.3 step 4: input queued before the restart
                        result = then(live)  # host §5.3 step 6: the triggering request goes first
                        await nursery.start(live.runtime.run)
                        task_status.started(result)
                        started = True
                        if not self._closing:
                            await live._stop.wait()
                        await _stop_session(live)
                        nursery.cancel_scope.cancel()  # the storage retries: shutdown flushes once more
                    await _flush_for_close(live)
        except BaseException as exc:
            failure = sole_exception(exc)
            if live is None or not started or not isinstance(failure, Exception):
                # Failed before it was live (the caller of start() sees it); or cancelled, or a
                # KeyboardInterrupt trio delivered in this task: those end the process, not a
                # session, so they must reach main (exit 130), never be logged as its failure.
                raise
            if not isinstance(failure, PersistenceError):
                _logger.exception('live session "%s" failed', session_id)
            live.flush_error = live.flush_error or f"{failure}"
        finally:
            if live is not None:
                if self._live.get(session_id) is live:
                    del self._live[session_id]
                live._done.set()

    def _wire(
        self, session: Session, inbox: Mapping[Target, Sequence[UserMessage]] | None, scope: trio.CancelScope
    ) -> LiveSession:
        """Build the agent, schedule queue, runtime and tools of one live session (host §5.2,
        schedule §9)."""
        wiring = self._wiring
        registry = ToolRegistry()
        session_id = session.id

        def on_status(status: Status) -> None:
            wiring.emit(StatusChanged(session_id, status))

        def on_delta(turn: int, step: int, chunk: Chunk) -> None:
            wiring.emit(Delta(session_id, turn, step, chunk))

        def on_storage(storage: Storage) -> None:
            wiring.emit(StorageChanged(session_id, agent.status, storage))

        def on_recovered() -> None:
            runtime.request_drive()  # schedule §11.10: re-arm and drive once storage works

        monitor = StorageMonitor(session, on_change=on_storage, on_recovered=on_recovered)
        agent = Agent(
            session,
            storage=monitor,
            route=wiring.route,
            adapter_for=wiring.adapter_for,
            tools=registry,
            hooks=wiring.hooks,
            clock=wiring.clock,
            system=wiring.system,
            max_steps=wiring.max_steps,
            max_retries=wiring.max_retries,
            uniform=wiring.uniform,
            inbox=inbox,
            on_status=on_status,
            on_delta=on_delta,
        )
        queue = schedule.ScheduleQueue()
        runtime = schedule.ScheduleRuntime(
            session=monitor.log,
            agent=agent.port,
            clock=wiring.clock,
            queue=queue,
            segment_ms=wiring.schedule_segment_ms,
        )
        tools = schedule.ScheduleTools(
            session=monitor.log,
            owner=agent.port,
            clock=wiring.clock,
            queue=queue,
            on_durable_change=runtime.request_drive,
        )
        registered = schedule_tools(tools.specs(), agent.port)
        registry.register(*registered)
        agent.add_idle_callback(runtime.on_agent_idle)
        cwd = Path(session.header.cwd) if session.header.cwd else self._cwd()
        return LiveSession(
            session, agent, runtime, monitor, tuple(t.spec.name for t in registered), cwd, scope
        )

    async def shutdown(self) -> ShutdownReport:
        """host §4.3.9 steps 3–4 for every live session: ``cancel("disposed", keep_inbox=True)``,
        stop the schedule runtime, flush, close (releasing the lock). Returns which sessions
        failed to flush. Idempotent: later calls wait for the first."""
        if self._closing:
            await self._shutdown_done.wait()
            return self._report
        self._closing = True
        try:
            for line in tuple(self._lines.values()):
                async with line:  # a session being made live finishes starting first
                    pass
            sessions = tuple(self._live.values())
            for live in sessions:
                live._stop.set()
            for live in sessions:
                await live._done.wait()
            self._report = ShutdownReport(
                {s.id: s.flush_error for s in sessions if s.flush_error is not None}
            )
        finally:
            self._shutdown_done.set()
        return self._report

    async def abandon(self) -> dict[str, int]:
        """Stop every live session as a crash would: no cleanup events, no shutdown. Returns each
        session's ``durable_through`` at this moment (everything after it counts as lost); the
        writer locks are released; nothing is made live afterwards."""
        self._closing = True
        durable = {live.id: live.session.durable_through for live in self._live.values()}
        sessions = tuple(self._live.values())
        for live in sessions:
            live._scope.cancel()
        for live in sessions:
            await live._done.wait()
        self._shutdown_done.set()
        return durable


def _line_of(path: Path, seq: int) -> int | None:
    """The line of the session file that holds event ``seq`` (packed rows hold several), as
    eventlog's scanner counts lines; ``None`` if the file cannot tell (it no longer holds the
    event, or it is not a plain JSONL file). Only for naming malformed persisted data: it reads
    the whole file."""
    scanner = Scanner(path)
    try:
        with open(path, "rb") as file:
            for line in file:
                if any(event.seq == seq for event in scanner.feed(line)):
                    return scanner.committed_line
    except (OSError, EventLogError):
        pass
    return None


async def _stop_session(live: LiveSession) -> None:
    """host §4.3.9 step 3 and schedule §9's disposal: cancel the agent (``disposed``, queued input
    kept; its idle notifications stop at once) and stop the runtime, then unregister the schedule
    tools."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(live.agent.aclose)
        nursery.start_soon(live.runtime.aclose)
    live.agent.tools.unregister(*live.schedule_tools)


async def _flush_for_close(live: LiveSession) -> None:
    try:
        await live.session.flush()
    except PersistenceError as exc:
        live.flush_error = str(exc)
