"""The host: the operations every front door uses (host §4.3, host §5), over the live sessions of one
process.

A :class:`Host` owns one ``eventlog.SessionStore``, the route of model requests, the observers,
and the :class:`~host.runtime._sessions.SessionRegistry` whose sessions run in the nursery of
:func:`open_host`. Front doors (JSON-RPC, chat, demo, tests) call the methods here; they never touch
sessions directly. Failures a client must see are :class:`HostError`\\ s carrying a stable
``code`` (the JSON-RPC ``data.code``) and extra ``data`` members; nothing is appended when one is
raised.

    async with open_host(HostConfig(root=...), adapters={"scripted": ScriptedAdapter()}) as host:
        message_id = await host.admit("main", [{"type": "text", "text": "hi"}], rpc_id="r-1")
"""

from __future__ import annotations

import errno
import logging
import os
import random
import stat
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import trio

import schedule
from eventlog import LogSnapshot, PersistenceError, SessionStore
from eventlog.values import Clock, SystemClock
from host.models import ModelAdapter
from timecontext import PreStepHook, TimeContext

from ._boundary import (
    HistoryPage,
    HostError,
    as_host_error,
    canonical_client_zone,
    check_session_id,
    history_page,
    list_result,
    shutting_down,
)
from ._inspect import inspect_state
from ._notifications import ChildCreated, Notification
from ._phases import AgentClosed
from ._requests import DEFAULT_MAX_RETRIES, DEFAULT_SYSTEM_PROMPT, Route
from ._sessions import LiveSession, SessionRegistry, ShutdownReport, Wiring
from ._turns import DEFAULT_MAX_STEPS

_logger = logging.getLogger("host")
_ABSENT: Any = object()
_UNRESOLVABLE = frozenset({errno.ELOOP, errno.ENAMETOOLONG})


class Adapters(Protocol):
    """Where model adapters come from: ``host.models.ModelAdapters`` or a plain dict. ``get``
    returns the provider's adapter, and ``None`` or raises for a provider without one."""

    def get(self, provider: str, /) -> ModelAdapter | None: ...


@dataclass(frozen=True, slots=True)
class HostConfig:
    """Everything a host is started with (the command-line choices of host §7).

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
    # The store's layout and encoding (dsh-roots §3): detected from the root unless asked;
    # an empty root from $DSH_SESSION_ROOT (dsh_default) gets the dsh layout in zstd.
    layout: Literal["auto", "flat", "dsh"] = "auto"
    compression: Literal["none", "zstd"] | None = None
    dsh_default: bool = False


class Host:
    """The live sessions of one process and the operations on them.

    Guarantees: one live agent per session id, even under concurrent first requests; sessions stay
    live (holding their writer lock) until :meth:`shutdown`; observers see every appended event of
    every live session, status flips, deltas and fork children, synchronously and in order.
    Construct it with :func:`open_host`, which provides the nursery the sessions run in. A bad
    time-context setting raises ``TimeContextConfigError``, a provider without an adapter
    ``unknown-provider``.
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
        self._store = SessionStore(
            config.root,
            layout=config.layout,
            compression=config.compression,
            dsh_default=config.dsh_default,
            clock=self._clock,
            write_delay_ms=config.write_delay_ms,
        )
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
        self._observers: list[Callable[[Notification], None]] = []
        wiring = Wiring(
            route=lambda: self.route,
            adapter_for=self._adapter,
            hooks=tuple(chain),
            clock=self._clock,
            system=config.system,
            max_steps=config.max_steps,
            max_retries=config.max_retries,
            uniform=uniform,
            schedule_segment_ms=config.schedule_segment_ms,
            emit=self._emit,
        )
        self._sessions = SessionRegistry(self._store, wiring, cwd=lambda: self.cwd)

    # --- configuration ----------------------------------------------------------------------------

    @property
    def root(self) -> Path:
        return self._store.root

    @property
    def store(self) -> SessionStore:
        """The store (for read-only use: ``inspect``, ``list``)."""
        return self._store

    def _adapter(self, provider: str) -> ModelAdapter:
        """The provider's adapter, or ``unknown-provider`` (whatever the source raised for it)."""
        refusal = HostError(
            "unknown-provider", f'no adapter registered for provider "{provider}"', provider=provider
        )
        try:
            adapter = self._adapters.get(provider)
        except Exception as exc:
            raise refusal from exc
        if adapter is None:
            raise refusal
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
        """Apply ``initialize`` (host §4.3.1): a new route for every later request in every
        session (absent members fall back to the configured defaults) and, with ``cwd``, the
        directory of sessions created afterwards. A ``cwd`` that cannot be resolved (too long, a
        symlink loop) raises ``not-a-directory``, a provider without an adapter
        ``unknown-provider``; either changes nothing. Returns the new route."""
        chosen = provider if provider is not None else self.config.provider
        directory = _resolved(Path(cwd)) if cwd is not None else None
        self._adapter(chosen)
        route = Route(
            chosen,
            self._default_model(chosen, model),
            max_tokens if max_tokens is not None else self.config.max_tokens,
            reasoning_effort if reasoning_effort is not None else self.config.reasoning_effort,
        )
        if directory is not None:
            self.cwd = directory
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
                _logger.exception("host observer failed")

    # --- live sessions ----------------------------------------------------------------------------

    def live(self, session_id: str) -> LiveSession | None:
        """The live session ``session_id`` of this process, if any."""
        return self._sessions.live(session_id)

    def live_sessions(self) -> tuple[LiveSession, ...]:
        return self._sessions.live_sessions()

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
        """Admit a prompt (host §4.3.2 steps 3–6) and return its message id.

        ``client_time_zone`` is checked only if given (``None`` included, which is refused); the
        canonical zone is stored on the source. The session is made live (created or resumed) if
        needed, then the message is queued with ``followup`` (``mode="queue"``) or ``steer``; its
        receipt is appended before this returns. On any refusal nothing is appended. Admissions
        to one session are served in the order they take their place in its line, which happens
        before ``task_status.started()`` is reported: start callers with ``nursery.start`` to
        keep arrival order.
        """
        self._sessions.check_open()
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
                raise as_host_error(
                    exc, session_id, f'cannot admit a prompt to session "{session_id}"'
                ) from exc

        return await self._sessions.with_live(session_id, enqueue, task_status=task_status)

    async def session(self, session_id: str) -> LiveSession:
        """The live session ``session_id``: already live, resumed from disk, or created (host §5.2)."""
        return await self._sessions.with_live(session_id, lambda live: live)

    async def resume(self, session_id: str) -> Literal["resumed", "already-live"]:
        """Make an existing session live without input (host §4.3.3); never creates one."""
        return await self._sessions.with_live(
            session_id, lambda live: "resumed", already=lambda live: "already-live", create=False
        )

    async def working_directory(self, session_id: str) -> str:
        """The session's effective directory (header ``cwd``, else the host's), made live first."""
        return await self._sessions.with_live(session_id, lambda live: str(live.cwd))

    async def set_working_directory(self, session_id: str, path: str) -> str:
        """Set the session's in-memory directory: ``path`` resolved against the current one must
        be an existing directory (``not-a-directory`` otherwise, a path that cannot be resolved
        included). Never logged."""
        current = Path(await self.working_directory(session_id))
        target = await trio.to_thread.run_sync(_existing_directory, current / path)

        def change(live: LiveSession) -> str:
            live.cwd = target
            return str(target)

        return await self._sessions.with_live(session_id, change)

    async def fork(
        self, parent: str, *, boundary_seq: int | None = None, child_id: str | None = None
    ) -> dict[str, Any]:
        """Fork ``parent`` at ``boundary_seq`` (inclusive; default its last seq) into ``child_id``
        (default ``session-<32 hex>``) through eventlog (host §4.3.5). A live parent is flushed
        first; the child stays cold. Observers get :class:`ChildCreated` once the child is
        durable. Returns ``{"sessionId","parentSessionId","seedLength"}``."""
        self._sessions.check_open()
        child = child_id if child_id is not None else f"session-{uuid.uuid4().hex}"
        try:
            header = await self._store.fork(parent, at=boundary_seq, id=child)
        except Exception as exc:
            raise as_host_error(exc, parent, f'cannot fork session "{parent}"') from exc
        self._emit(ChildCreated(parent, child))
        return {"sessionId": child, "parentSessionId": parent, "seedLength": header.seed_length or 0}

    async def list_sessions(self) -> dict[str, Any]:
        """``{"sessions":[…],"skipped":[…]}`` of host §4.3.6, from headers only, never locking;
        live sessions are listed from memory, those without a file yet included."""
        infos = await self._store.list()
        live = {s.id: (s.session.header, s.status) for s in self._sessions.live_sessions()}
        return list_result(infos, live)

    async def history(
        self, session_id: str, *, from_seq: int = 0, before_seq: int | None = None, limit: int = 1000
    ) -> dict[str, Any]:
        """A page of a session's events (host §4.3.7) as plain values: :meth:`history_page`'s
        :meth:`~HistoryPage.result`."""
        page = await self.history_page(session_id, from_seq=from_seq, before_seq=before_seq, limit=limit)
        return page.result()

    async def history_page(
        self, session_id: str, *, from_seq: int = 0, before_seq: int | None = None, limit: int = 1000
    ) -> HistoryPage:
        """A page of a session's events (host §4.3.7): forwards from ``from_seq``, or backwards
        before ``before_seq`` when given. A live session answers from memory (appended events
        not yet durable included); a cold one is read without locking or repair (a torn tail
        left out, an unfinished turn shown as it is)."""
        check_session_id(session_id)
        live = self._sessions.live(session_id)
        if live is not None:
            header, events = live.session.header, live.session.events
        else:
            snapshot = await self._snapshot(session_id)
            header, events = snapshot.header, snapshot.events
        return history_page(session_id, header, events, limit=limit, from_seq=from_seq, before_seq=before_seq)

    async def _snapshot(self, session_id: str) -> LogSnapshot:
        """The cold session read from disk (never locking, never writing), errors mapped."""
        try:
            return await self._store.inspect(session_id)
        except Exception as exc:
            raise as_host_error(exc, session_id, f'cannot read session "{session_id}"') from exc

    async def inspect(self, session_id: str, *, at_seq: int | None = None) -> dict[str, Any]:
        """What the log says at seq ``at_seq`` (default: the last), read-only (host §4.3.11): a
        live session from memory, a cold one through ``SessionStore.inspect`` with no repair
        applied (``repair`` is what opening would do). Never locks, resumes or writes. Raises
        ``invalid-params`` for an ``at_seq`` outside the session, and the store's refusals."""
        check_session_id(session_id)
        live = self._sessions.live(session_id)
        if live is not None:
            header, events, repair = live.session.header, live.session.events, None
        else:
            snapshot = await self._snapshot(session_id)
            header, events, repair = snapshot.header, snapshot.events, snapshot.repair
        return inspect_state(session_id, header, events, live=live is not None, repair=repair, at_seq=at_seq)

    def cancel(self, session_id: str) -> bool:
        """Stop the turn in progress (host §4.3.10): if the session is live and ``running``,
        ``cancel("user", keep_inbox=True)`` — the turn's cleanup and its ``turn/end`` aborted
        follow, queued prompts stay and run next — and return True once the cancel is requested.
        Otherwise (not live, idle, maintenance) nothing happens and it returns False. Never
        creates or resumes a session."""
        check_session_id(session_id)
        live = self._sessions.live(session_id)
        if live is None or live.agent.phase != "running":
            return False
        live.agent.cancel("user", keep_inbox=True)
        return True

    # --- shutdown ---------------------------------------------------------------------------------

    async def shutdown(self) -> ShutdownReport:
        """host §4.3.9 steps 3–4 for every live session: ``cancel("disposed",
        keep_inbox=True)``, stop the schedule runtime, flush, close (releasing the lock). Returns
        which sessions failed to flush. Idempotent: later calls wait for the first."""
        return await self._sessions.shutdown()

    async def abandon(self) -> dict[str, int]:
        """Stop every live session as a crash would, for restart testing (:mod:`host.testing`):
        no cleanup events and no shutdown. Returns each session's ``durable_through`` at this
        moment; everything after it counts as lost (the caller cuts the files back). The writer
        locks are released. The host refuses all requests afterwards."""
        return await self._sessions.abandon()


def _not_a_directory(path: Path) -> HostError:
    return HostError(
        "not-a-directory", f"working directory does not exist or is not a directory: {path}", path=str(path)
    )


def _resolved(path: Path) -> Path:
    """``path.resolve()``, which need not exist; ``not-a-directory`` naming the absolute path when
    it cannot be resolved: a name too long, a symlink loop (whichever way this Python reports
    them: ``RuntimeError`` before 3.13, an ``OSError``, or only when the result is used)."""
    try:
        target = path.resolve()
        os.stat(target)
    except FileNotFoundError:
        return target
    except OSError as exc:
        if exc.errno in _UNRESOLVABLE:
            raise _not_a_directory(Path(os.path.abspath(path))) from exc
    except RuntimeError as exc:
        raise _not_a_directory(Path(os.path.abspath(path))) from exc
    return target


def _existing_directory(path: Path) -> Path:
    """``path`` resolved, if it is an existing directory; else ``not-a-directory``."""
    target = _resolved(path)
    try:
        if stat.S_ISDIR(os.stat(target).st_mode):
            return target
    except OSError as exc:
        raise _not_a_directory(target) from exc
    raise _not_a_directory(target)


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
        host._sessions.bind(nursery)
        try:
            yield host
        finally:
            with trio.CancelScope(shield=True):
                await host.shutdown()
