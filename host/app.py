"""The host: live sessions, their wiring, and the operations every front door uses (host.md §4–§5).

A :class:`Host` owns one ``eventlog.SessionStore`` and the live sessions of this process. Each live
session runs in its own task and nursery: the eventlog writer, the agent's driver (:mod:`host.agent`)
and the schedule runtime. Front doors (JSON-RPC, chat, demo, tests) call the methods here; they
never touch sessions directly. Failures that a client must see are :class:`HostError`\\ s carrying a
stable ``code`` (the JSON-RPC ``data.code``) and extra ``data`` members.

Use it through :func:`open_host`::

    async with open_host(HostConfig(root=...), adapters={"scripted": ScriptedAdapter()}) as host:
        message_id = await host.admit("main", [{"type": "text", "text": "hi"}], rpc_id="r-1")
"""

from __future__ import annotations

import logging
import os
import random
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import trio

import schedule
from eventlog import Clock, Event, PersistenceError, Session, SessionStore, SystemClock
from host.agent import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_STEPS,
    DEFAULT_SYSTEM_PROMPT,
    Agent,
    AgentClosed,
    Route,
    Status,
)
from host.boundary import (  # HostError and the boundary rules are importable from here too
    SESSION_ID_RULE,
    HostError,
    as_host_error,
    canonical_client_zone,
    check_session_id,
    history_page,
    list_result,
    resolve_root,
    shutting_down,
)
from host.history import replay_inbox
from host.models import Chunk, ModelAdapter
from host.tools import ToolRegistry, schedule_tools
from timecontext import PreStepHook, TimeContext

T = TypeVar("T")

__all__ = [
    "SESSION_ID_RULE",
    "Adapters",
    "ChildCreated",
    "Delta",
    "EventAppended",
    "Host",
    "HostConfig",
    "HostError",
    "LiveSession",
    "Notification",
    "ShutdownReport",
    "StatusChanged",
    "canonical_client_zone",
    "check_session_id",
    "open_host",
    "resolve_root",
    "sole_exception",
]

_log = logging.getLogger("host")


def sole_exception(exc: BaseException) -> BaseException:
    """The one exception inside nested single-member groups (trio's nurseries wrap what their
    bodies raise); ``exc`` itself otherwise."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


# --- values ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EventAppended:
    """An event appended to a live session (not the events eventlog writes while opening)."""

    session_id: str
    event: Event


@dataclass(frozen=True, slots=True)
class StatusChanged:
    """A live session's public status flipped."""

    session_id: str
    status: Status


@dataclass(frozen=True, slots=True)
class Delta:
    """One streamed model chunk (host.md §6.1); live only, never persisted."""

    session_id: str
    turn: int
    step: int
    chunk: Chunk


@dataclass(frozen=True, slots=True)
class ChildCreated:
    """``fork`` published a child session."""

    parent_session_id: str
    child_session_id: str


Notification = EventAppended | StatusChanged | Delta | ChildCreated


class Adapters(Protocol):
    """Where model adapters come from: ``host.models.ModelAdapters`` or a plain dict. ``get``
    returns the provider's adapter, and ``None`` or raises for a provider without one."""

    def get(self, provider: str, /) -> ModelAdapter | None: ...


@dataclass(frozen=True, slots=True)
class HostConfig:
    """Everything a host is started with (the command-line choices of host.md §7).

    ``provider``/``model``/``max_tokens``/``reasoning_effort`` are the default route; ``model``
    ``None`` means ``scripted`` for the scripted provider and "not configured" for others.
    ``cwd`` (default: the process cwd) becomes the header ``cwd`` of created sessions until
    ``initialize`` changes it. ``time_context`` registers ``TimeContext`` (with ``time_zone`` and
    ``time_refresh_ms``) last in the pre-step chain.
    """

    root: str | os.PathLike[str]
    provider: str = "scripted"
    model: str | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    system: str | None = DEFAULT_SYSTEM_PROMPT
    max_steps: int = DEFAULT_MAX_STEPS
    max_retries: int = DEFAULT_MAX_RETRIES
    time_context: bool = False
    time_zone: str | None = None
    time_refresh_ms: int | None = None
    cwd: str | os.PathLike[str] | None = None
    write_delay_ms: int = 5
    schedule_segment_ms: int = 60_000


@dataclass(frozen=True, slots=True)
class ShutdownReport:
    """What shutdown could not make durable: session id → the flush or close error message."""

    failed: Mapping[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed


# --- live sessions --------------------------------------------------------------------------------


class LiveSession:
    """One live session of this process: its eventlog ``session``, ``agent``, schedule ``runtime``
    (whose tools ``schedule_tools`` name in the agent's registry) and in-memory working directory
    ``cwd``."""

    def __init__(
        self,
        session: Session,
        agent: Agent,
        runtime: schedule.ScheduleRuntime,
        schedule_tools: tuple[str, ...],
        cwd: Path,
        scope: trio.CancelScope,
    ) -> None:
        self.session = session
        self.agent = agent
        self.runtime = runtime
        self.schedule_tools = schedule_tools
        self.cwd = cwd
        self._stop = trio.Event()
        self._scope = scope  # cancelled only to abandon the session (a simulated crash)
        self._done = trio.Event()
        self.flush_error: str | None = None

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def status(self) -> Status:
        return self.agent.status


_ABSENT: Any = object()


class Host:
    """The live sessions of one process and the operations on them.

    Guarantees: one live agent per session id, even under concurrent first requests; sessions stay
    live (holding their writer lock) until :meth:`shutdown`; observers see every appended event of
    every live session, status flips, deltas and fork children, synchronously and in order.
    Construct it with :func:`open_host`, which provides the nursery the sessions run in.
    """

    def __init__(
        self,
        config: HostConfig,
        *,
        adapters: Adapters,
        clock: Clock | None = None,
        hooks: Sequence[PreStepHook] = (),
        uniform: Callable[[float, float], float] = random.uniform,
    ) -> None:
        self.config = config
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._store = SessionStore(config.root, clock=self._clock, write_delay_ms=config.write_delay_ms)
        self._adapters = adapters
        self.route = Route(
            config.provider,
            self._default_model(config.provider, None),
            config.max_tokens,
            config.reasoning_effort,
        )
        self._adapter(config.provider)
        self.cwd = Path(config.cwd if config.cwd is not None else os.getcwd()).resolve()
        chain = list(hooks)
        if config.time_context:
            chain.append(
                TimeContext(
                    self._clock,
                    canonicalize=schedule.canonicalize_time_zone,
                    time_zone=config.time_zone,
                    refresh_interval_ms=config.time_refresh_ms,
                )
            )
        self._hooks = tuple(chain)
        self._uniform = uniform
        self._observers: list[Callable[[Notification], None]] = []
        self._live: dict[str, LiveSession] = {}
        self._lines: dict[str, trio.StrictFIFOLock] = {}
        self._nursery: trio.Nursery | None = None
        self._closing = False
        self._shutdown_done = trio.Event()
        self._report = ShutdownReport()

    # --- configuration ----------------------------------------------------------------------------

    @property
    def root(self) -> Path:
        return self._store.root

    @property
    def store(self) -> SessionStore:
        """The store (for read-only use: ``inspect``, ``list``)."""
        return self._store

    def _adapter(self, provider: str) -> ModelAdapter:
        """The provider's adapter, or ``unknown-provider``."""
        try:
            adapter = self._adapters.get(provider)
        except Exception:
            adapter = None
        if adapter is None:
            raise HostError("unknown-provider", f'no adapter registered for provider "{provider}"', provider=provider)
        return adapter

    def _default_model(self, provider: str, model: str | None) -> str | None:
        if model:
            return model
        if self.config.model:
            return self.config.model
        return "scripted" if provider == "scripted" else None

    def initialize(
        self,
        *,
        cwd: str | os.PathLike[str] | None = None,
        provider: str | None = None,
        model: str | None = None,
        max_tokens: int | None = None,
        reasoning_effort: str | None = None,
    ) -> Route:
        """Apply ``initialize`` (host.md §4.3.1): a new route for every later request in every
        session (absent members fall back to the configured defaults) and, with ``cwd``, the
        directory of sessions created afterwards. A provider without an adapter raises
        ``unknown-provider`` and changes nothing. Returns the new route."""
        chosen = provider if provider is not None else self.config.provider
        self._adapter(chosen)
        route = Route(
            chosen,
            self._default_model(chosen, model),
            max_tokens if max_tokens is not None else self.config.max_tokens,
            reasoning_effort if reasoning_effort is not None else self.config.reasoning_effort,
        )
        if cwd is not None:
            self.cwd = Path(cwd).resolve()
        self.route = route
        return route

    # --- observers --------------------------------------------------------------------------------

    def subscribe(self, observer: Callable[[Notification], None]) -> Callable[[], None]:
        """Deliver every :data:`Notification` to ``observer`` synchronously, in order; returns the
        unsubscribe callable. An observer's exception is logged and contained."""
        self._observers.append(observer)

        def unsubscribe() -> None:
            if observer in self._observers:
                self._observers.remove(observer)

        return unsubscribe

    def _emit(self, value: Notification) -> None:
        for observer in tuple(self._observers):
            try:
                observer(value)
            except Exception:
                _log.exception("host observer failed")

    # --- getting a live session -------------------------------------------------------------------

    def live(self, session_id: str) -> LiveSession | None:
        """The live session ``session_id`` of this process, if any."""
        return self._live.get(session_id)

    def live_sessions(self) -> tuple[LiveSession, ...]:
        return tuple(self._live.values())

    def _check_open(self) -> None:
        if self._closing:
            raise shutting_down()

    def _line(self, session_id: str) -> trio.StrictFIFOLock:
        line = self._lines.get(session_id)
        if line is None:
            line = self._lines[session_id] = trio.StrictFIFOLock()
        return line

    async def _with_live(
        self,
        session_id: str,
        then: Callable[[LiveSession], T],
        *,
        create: bool = True,
        already: Callable[[LiveSession], T] | None = None,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> T:
        """Run ``then(live)`` on the live session ``session_id`` (§5.2), in arrival order, or
        ``already(live)`` instead, if given, when the session was live before this call's turn.

        ``task_status.started()`` is reported once the call holds its place in the session's line.
        A session made live here runs ``then`` before its schedule runtime starts (§5.3 step 6).
        """
        self._check_open()
        check_session_id(session_id)
        line = self._line(session_id)
        task_status.started()
        async with line:
            self._check_open()
            live = self._live.get(session_id)
            if live is not None:
                return (already or then)(live)
            assert self._nursery is not None, "use the host inside open_host()"
            path = self._store.path(session_id)
            resume = await trio.to_thread.run_sync(os.path.lexists, path)
            if not resume:
                if not create:
                    raise HostError("session-not-found", f'session "{session_id}" not found')
                try:
                    await self._store.ensure_root()
                except PersistenceError as exc:
                    raise HostError(
                        "persistence-failed", f'cannot create session "{session_id}": {exc}', sessionId=session_id
                    ) from exc
            try:
                return await self._nursery.start(self._run_session, session_id, resume, then)
            except BaseException as raised:
                exc = sole_exception(raised)
                if not isinstance(exc, Exception):
                    raise
                mapped = as_host_error(exc, session_id, f'cannot open session "{session_id}"')
                if mapped is exc and exc is raised:
                    raise
                raise mapped from exc

    async def _run_session(
        self,
        session_id: str,
        resume: bool,
        then: Callable[[LiveSession], T],
        *,
        task_status: trio.TaskStatus[T] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """One live session, from open to close (§5.2, §5.3, §4.3.9 steps 3–4)."""
        live: LiveSession | None = None
        started = False
        opening = self._store.open(session_id) if resume else self._store.create(id=session_id, cwd=str(self.cwd))
        scope = trio.CancelScope()
        try:
            with scope:
                async with opening as session:
                    session.on_event(lambda s, e: self._emit(EventAppended(s.id, e)))
                    inbox = replay_inbox(session.events, session.seed_length) if resume else None
                    session.add_append_guard(
                        "schedule/change", lambda s, d: schedule.check_append(s.events, s.seed_length, d)
                    )
                    live = self._wire(session, inbox, scope)
                    self._live[session_id] = live
                    async with trio.open_nursery() as nursery:
                        await nursery.start(live.agent.run)
                        live.agent.wake()  # §5.3 step 4: input queued before the restart
                        result = then(live)  # §5.3 step 6: the triggering request goes first
                        await nursery.start(live.runtime.run)
                        task_status.started(result)
                        started = True
                        if not self._closing:
                            await live._stop.wait()
                        await self._stop_session(live)
                    await self._flush_for_close(live)
        except BaseException as exc:
            failure = sole_exception(exc)
            if live is None or not started or not isinstance(failure, Exception):
                # Failed before it was live (the caller of start() sees it); or cancelled, or a
                # KeyboardInterrupt trio delivered in this task: those end the process, not a
                # session, so they must reach main (exit 130), never be logged as its failure.
                raise
            if not isinstance(failure, PersistenceError):
                _log.exception('live session "%s" failed', session_id)
            live.flush_error = live.flush_error or f"{failure}"
        finally:
            if live is not None:
                if self._live.get(session_id) is live:
                    del self._live[session_id]
                live._done.set()

    def _wire(
        self, session: Session, inbox: Mapping[str, Sequence[Mapping[str, Any]]] | None, scope: trio.CancelScope
    ) -> LiveSession:
        """Build the agent, schedule queue, runtime and tools of one live session (§5.2)."""
        registry = ToolRegistry()
        session_id = session.id
        agent = Agent(
            session,
            route=lambda: self.route,
            adapter_for=self._adapter,
            tools=registry,
            hooks=self._hooks,
            clock=self._clock,
            system=self.config.system,
            max_steps=self.config.max_steps,
            max_retries=self.config.max_retries,
            uniform=self._uniform,
            inbox=inbox,
            on_status=lambda status: self._emit(StatusChanged(session_id, status)),
            on_delta=lambda turn, step, chunk: self._emit(Delta(session_id, turn, step, chunk)),
        )
        queue = schedule.ScheduleQueue()
        runtime = schedule.ScheduleRuntime(
            session=session,
            agent=agent.port,
            clock=self._clock,
            queue=queue,
            segment_ms=self.config.schedule_segment_ms,
        )
        tools = schedule.ScheduleTools(
            session=session,
            owner=agent.port,
            clock=self._clock,
            queue=queue,
            on_durable_change=runtime.request_drive,
        )
        registered = schedule_tools(tools.specs(), agent.port)
        registry.register(*registered)
        agent.add_idle_callback(runtime.on_agent_idle)
        cwd = Path(session.header.cwd) if session.header.cwd else self.cwd
        return LiveSession(session, agent, runtime, tuple(t.spec.name for t in registered), cwd, scope)

    async def _stop_session(self, live: LiveSession) -> None:
        """§4.3.9 step 3 and schedule.md §9's disposal: cancel the agent (``disposed``, queued input
        kept; its idle notifications stop at once) and stop the runtime, then unregister the
        schedule tools."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(live.agent.aclose)
            nursery.start_soon(live.runtime.aclose)
        live.agent.tools.unregister(*live.schedule_tools)

    async def _flush_for_close(self, live: LiveSession) -> None:
        try:
            await live.session.flush()
        except PersistenceError as exc:
            live.flush_error = str(exc)

    # --- operations -------------------------------------------------------------------------------

    async def admit(
        self,
        session_id: str,
        content: Sequence[Mapping[str, Any]],
        *,
        rpc_id: str,
        client_time_zone: object = _ABSENT,
        mode: Literal["queue", "steer"] = "queue",
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> str:
        """Admit a prompt (host.md §4.3.2 steps 3–6) and return its message id.

        ``client_time_zone`` is checked only if given (``None`` included, which is refused); the
        canonical zone is stored on the source. The session is made live (created or resumed) if
        needed, then the message is queued with ``followup`` (``mode="queue"``) or ``steer``; its
        receipt is appended before this returns. On any refusal nothing is appended. Admissions
        to one session are served in the order they take their place in its line, which happens
        before ``task_status.started()`` is reported: start callers with ``nursery.start`` to
        keep arrival order.
        """
        self._check_open()
        check_session_id(session_id)
        source: dict[str, Any] = {"kind": "user", "rpcId": rpc_id}
        if client_time_zone is not _ABSENT:
            source["clientTimeZone"] = canonical_client_zone(client_time_zone)
        blocks = [dict(block) for block in content]

        def enqueue(live: LiveSession) -> str:
            try:
                if mode == "steer":
                    return live.agent.steer(blocks, source)
                return live.agent.followup(blocks, source)
            except AgentClosed as exc:
                raise shutting_down() from exc
            except PersistenceError as exc:
                raise as_host_error(exc, session_id, f'cannot admit a prompt to session "{session_id}"') from exc

        return await self._with_live(session_id, enqueue, task_status=task_status)

    async def session(self, session_id: str) -> LiveSession:
        """The live session ``session_id``: already live, resumed from disk, or created (§5.2)."""
        return await self._with_live(session_id, lambda live: live)

    async def resume(self, session_id: str) -> Literal["resumed", "already-live"]:
        """Make an existing session live without input (host.md §4.3.3); never creates one."""
        return await self._with_live(
            session_id, lambda live: "resumed", already=lambda live: "already-live", create=False
        )

    async def working_directory(self, session_id: str) -> str:
        """The session's effective directory (header ``cwd``, else the host's), made live first."""
        return await self._with_live(session_id, lambda live: str(live.cwd))

    async def set_working_directory(self, session_id: str, path: str) -> str:
        """Set the session's in-memory directory: ``path`` resolved against the current one must
        be an existing directory (``not-a-directory`` otherwise). Never logged."""
        current = Path(await self.working_directory(session_id))
        target = await trio.to_thread.run_sync(lambda: (current / path).resolve())
        if not await trio.to_thread.run_sync(target.is_dir):
            raise HostError(
                "not-a-directory", f"working directory does not exist or is not a directory: {target}", path=str(target)
            )

        def change(live: LiveSession) -> str:
            live.cwd = target
            return str(target)

        return await self._with_live(session_id, change)

    async def fork(
        self, parent: str, *, boundary_seq: int | None = None, child_id: str | None = None
    ) -> dict[str, Any]:
        """Fork ``parent`` at ``boundary_seq`` (inclusive; default its last seq) into ``child_id``
        (default ``session-<32 hex>``) through eventlog (host.md §4.3.5). A live parent is flushed
        first; the child stays cold. Observers get :class:`ChildCreated` once the child is durable.
        Returns ``{"sessionId","parentSessionId","seedLength"}``."""
        self._check_open()
        child = child_id if child_id is not None else f"session-{uuid.uuid4().hex}"
        try:
            header = await self._store.fork(parent, at=boundary_seq, id=child)
        except Exception as exc:
            raise as_host_error(exc, parent, f'cannot fork session "{parent}"') from exc
        self._emit(ChildCreated(parent, child))
        return {"sessionId": child, "parentSessionId": parent, "seedLength": header.seed_length or 0}

    async def list_sessions(self) -> dict[str, Any]:
        """``{"sessions":[…],"skipped":[…]}`` of host.md §4.3.6, from headers only, never locking."""
        infos = await self._store.list()
        return list_result(infos, lambda session_id: live.status if (live := self._live.get(session_id)) else None)

    async def history(self, session_id: str, *, from_seq: int = 0, limit: int = 1000) -> dict[str, Any]:
        """A page of a session's events (host.md §4.3.7). A live session answers from memory
        (appended events not yet durable included); a cold one is read without locking or
        repair (a torn tail left out, an unfinished turn shown as it is)."""
        check_session_id(session_id)
        live = self._live.get(session_id)
        if live is not None:
            return history_page(session_id, live.session.header, live.session.events, from_seq, limit)
        try:
            snapshot = await self._store.inspect(session_id)
        except Exception as exc:
            raise as_host_error(exc, session_id, f'cannot read session "{session_id}"') from exc
        return history_page(session_id, snapshot.header, snapshot.events, from_seq, limit)

    # --- shutdown ---------------------------------------------------------------------------------

    async def shutdown(self) -> ShutdownReport:
        """host.md §4.3.9 steps 3–4 for every live session: ``cancel("disposed",
        keep_inbox=True)``, stop the schedule runtime, flush, close (releasing the lock). Returns
        which sessions failed to flush. Idempotent: later calls wait for the first."""
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
            self._report = ShutdownReport({s.id: s.flush_error for s in sessions if s.flush_error is not None})
        finally:
            self._shutdown_done.set()
        return self._report

    async def abandon(self) -> dict[str, int]:
        """Stop every live session as a crash would, for restart testing (:mod:`host.testing`):
        no cleanup events and no shutdown. Returns each session's ``durable_through`` at this
        moment; everything after it counts as lost (the caller cuts the files back). The writer
        locks are released. The host refuses all requests afterwards."""
        self._closing = True
        durable = {live.id: live.session.durable_through for live in self._live.values()}
        sessions = tuple(self._live.values())
        for live in sessions:
            live._scope.cancel()
        for live in sessions:
            await live._done.wait()
        self._shutdown_done.set()
        return durable


@asynccontextmanager
async def open_host(
    config: HostConfig,
    *,
    adapters: Adapters,
    clock: Clock | None = None,
    hooks: Sequence[PreStepHook] = (),
    uniform: Callable[[float, float], float] = random.uniform,
) -> AsyncIterator[Host]:
    """Run a :class:`Host` for the duration of the block; leaving it shuts the host down (unless
    that already happened) and closes every session."""
    host = Host(config, adapters=adapters, clock=clock, hooks=hooks, uniform=uniform)
    async with trio.open_nursery() as nursery:
        host._nursery = nursery
        try:
            yield host
        finally:
            with trio.CancelScope(shield=True):
                await host.shutdown()
