"""One client's JSON-RPC session with the host (host §4, web §5.2), whatever carries its lines.

A :class:`Connection` holds one client's protocol state and behaviour: whether it asked for
``streamDeltas``, its output queue of whole frames, the bookkeeping that sends a prompt's receipt
``session.event`` before its reply (and the reply right after the ``running`` flip the receipt
caused), the forwarder of the host's notifications, and the serving of requests through the
handler table. A transport feeds it complete lines (:meth:`Connection.receive`) and drains
:attr:`Connection.output`; it decides what ``shutdown`` does and when the connection stops.

Guarantees: every handler failure is ``-32603`` with a stable ``data.code``; a prompt's receipt
is queued before its reply; admissions to one session keep arrival order; once
:meth:`Connection.stop_forwarding` was called only replies are queued (and the receipts of prompts
admitted late, each just before its reply).
"""

from __future__ import annotations

import math
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import trio

from host._process import package_version, process_instance
from host.runtime import EventAppended, Host, HostError, Notification, StatusChanged, shutting_down

from ._params import (
    content_blocks_param,
    fork_params,
    history_params,
    initialize_params,
    inspect_params,
    mode_param,
    path_param,
    session_id_param,
)
from ._wire import (
    MAX_NESTING,
    SERVER_INFO,
    Invalid,
    Request,
    TooDeep,
    classify,
    error_frame,
    event_frame,
    history_frame,
    internal,
    notification_bytes,
    result_frame,
    rpc_id_text,
    too_deep,
    unknown_method,
    unsupported_json,
)


class _Once:
    """Forwards only the first ``started()`` to a nursery's task status."""

    def __init__(self, status: trio.TaskStatus[None]) -> None:
        self._status = status
        self._done = False

    def started(self, value: None = None) -> None:
        if not self._done:
            self._done = True
            self._status.started()


@dataclass(slots=True)
class _Prompt:
    """A ``session/prompt`` being admitted, waiting for its receipt."""

    session_id: str
    request_id: str | int | float
    message_id: str | None = None
    replied: bool = False


class _HandlerBug(Exception):
    """An exception a handler did not mean (``exc``): a bug, answered with ``internal``."""

    def __init__(self, exc: Exception) -> None:
        super().__init__(str(exc))
        self.exc = exc


NO_REPLY: Any = object()
"""What a handler returns when its reply is sent some other way (or later)."""


@dataclass(frozen=True, slots=True)
class OutputLimit:
    """The most a connection's output queue may hold: ``frames`` frames or ``bytes`` bytes."""

    frames: int
    bytes: int


class _Output(trio.abc.ReceiveChannel[bytes]):
    """The receiving end of a connection's output: frames in queue order, counted out as they
    are taken so that the queue's size in bytes is known."""

    def __init__(self, frames: trio.MemoryReceiveChannel[bytes], connection: Connection) -> None:
        self._frames = frames
        self._connection = connection

    async def receive(self) -> bytes:
        frame = await self._frames.receive()
        self._connection._queued_bytes -= len(frame)
        return frame

    def receive_nowait(self) -> bytes:
        frame = self._frames.receive_nowait()
        self._connection._queued_bytes -= len(frame)
        return frame

    def statistics(self) -> trio.MemoryChannelStatistics:
        return self._frames.statistics()

    async def aclose(self) -> None:
        await self._frames.aclose()


class Connection:
    """One client of ``host``.

    ``shutdown(request)`` is the transport's answer to a ``shutdown`` request: it returns once
    the request is taken care of (the transport replies later, :data:`NO_REPLY`) or raises a
    :class:`HostError` that is the reply. ``diagnostic(line)`` receives one stderr line at a time.
    Output frames are queued on :attr:`output`; :meth:`close_output` ends it. Without a ``limit``
    the queue is unbounded. With one, a frame that would take the queue past it is not queued:
    the output ends at once, after the frames already queued, and :attr:`overflowed` is set (the
    transport then drops the client; the host is never made to wait, web §5.2).
    """

    def __init__(
        self,
        host: Host,
        *,
        shutdown: Callable[[Request], None],
        diagnostic: Callable[[str], None],
        limit: OutputLimit | None = None,
    ) -> None:
        self.host = host
        self._shutdown = shutdown
        self._diagnostic = diagnostic
        self._limit = limit
        self.stream_deltas = False
        self._stopping = False
        self._send, frames = trio.open_memory_channel[bytes](math.inf)
        self._queued_bytes = 0
        self.output = _Output(frames, self)
        self.overflowed = trio.Event()
        self._prompts: dict[tuple[str, str], list[_Prompt]] = {}
        self._due: _Prompt | None = None
        self._unsubscribe: Callable[[], None] | None = None

    # --- output -----------------------------------------------------------------------------------

    def send(self, frame: bytes) -> None:
        """Queue one frame; once the output is gone or closed nothing more can be said. A frame
        over the limit ends the output instead (:attr:`overflowed`)."""
        limit = self._limit
        if limit is not None and not self.overflowed.is_set():
            queued = self._send.statistics().current_buffer_used
            if queued + 1 > limit.frames or self._queued_bytes + len(frame) > limit.bytes:
                self.overflowed.set()
                self._send.close()
                return
        try:
            self._send.send_nowait(frame)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            return
        self._queued_bytes += len(frame)

    def close_output(self) -> None:
        """End :attr:`output` after the frames already queued."""
        self._send.close()

    # --- notifications ----------------------------------------------------------------------------

    def subscribe(self) -> None:
        """Start forwarding the host's notifications (kept until :meth:`unsubscribe`)."""
        if self._unsubscribe is None:
            self._unsubscribe = self.host.subscribe(self._forward)

    def unsubscribe(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    @property
    def stopping(self) -> bool:
        """True once :meth:`stop_forwarding` was called."""
        return self._stopping

    def stop_forwarding(self) -> None:
        """Shutdown began (host §4.3.9 steps 1–2): refuse every request but ``shutdown`` and
        forward nothing but the receipts of prompts admitted from now on. Takes effect at once,
        so tasks woken together with the trigger are not forwarded."""
        self._stopping = True

    def _forward(self, value: Notification) -> None:
        """The observer of the host: queue the notification's frame. A prompt's reply goes out
        right after its receipt, or after the ``running`` flip the receipt caused (host §4.3.2).

        Once forwarding stopped, a prompt that arrived earlier and is admitted now still gets its
        receipt before its reply (host §4.3.2 step 6, host §4.5 2), and nothing else is forwarded."""
        if self._stopping:
            if (
                isinstance(value, EventAppended)
                and self._prompts
                and value.event.type == "agent/inbox/spliced"
            ):
                prompt = self._receipt_of(value)
                if prompt is not None and not prompt.replied:
                    self.send(event_frame(value))
                    self._reply(prompt)
            return
        frame = notification_bytes(value, deltas=self.stream_deltas)
        due, self._due = self._due, None
        if due is not None:
            if (
                isinstance(value, StatusChanged)
                and value.status == "running"
                and value.session_id == due.session_id
            ):
                assert frame is not None
                self.send(frame)
                self._reply(due)
                return
            self._reply(due)
        if frame is not None:
            self.send(frame)
        if isinstance(value, EventAppended) and self._prompts and value.event.type == "agent/inbox/spliced":
            self._due = self._receipt_of(value)

    def _receipt_of(self, value: EventAppended) -> _Prompt | None:
        """The pending prompt whose receipt ``value`` is, if any."""
        inserted = value.event.value().get("inserted")
        if not isinstance(inserted, list) or len(inserted) != 1:
            return None
        message = inserted[0]
        source = message.get("source") or {}
        rpc_id = source.get("rpcId")
        if source.get("kind") != "user" or not isinstance(rpc_id, str):
            return None
        waiting = self._prompts.get((value.session_id, rpc_id))
        if not waiting:
            return None
        prompt = waiting[0]
        prompt.message_id = message.get("id")
        return prompt

    def _reply(self, prompt: _Prompt) -> None:
        if not prompt.replied:
            prompt.replied = True
            self.send(result_frame(prompt.request_id, {"messageId": prompt.message_id}))

    # --- requests ---------------------------------------------------------------------------------

    async def receive(self, line: bytes, nursery: trio.Nursery) -> None:
        """Handle one input line (its terminator removed): stripped, empty lines skipped,
        classified (host §4.1); a request starts its own task in ``nursery`` and this returns
        once it holds its place (a prompt: in its session's line), so admissions keep arrival
        order. Invalid JSON gets one diagnostic line, and so does a line nested too deeply (plus
        ``too-deep`` under its id, when it is a request); other frames are dropped."""
        stripped = line.strip()
        if not stripped:
            return
        frame = classify(stripped)
        if isinstance(frame, Invalid):
            self._diagnostic(f"ignored a line that is not valid JSON ({len(line)} bytes)")
        elif isinstance(frame, TooDeep):
            self._diagnostic(f"ignored a line nested deeper than {MAX_NESTING} levels ({len(line)} bytes)")
            if frame.id is not None:
                self.send(error_frame(frame.id, too_deep()))
        elif isinstance(frame, Request):
            await nursery.start(self._serve_request, frame)

    async def _serve_request(self, request: Request, *, task_status: trio.TaskStatus[None]) -> None:
        once = _Once(task_status)
        try:
            result = await self._dispatch(request, once)
            if result is not NO_REPLY:
                self.send(result_frame(request.id, result))
        except HostError as exc:
            self.send(error_frame(request.id, exc))
        except _HandlerBug as bug:  # the traceback to stderr, `internal` to the client
            self._diagnostic(f"internal error in {request.method}:")
            for text in traceback.format_exception(bug.exc):
                for line in text.rstrip("\n").split("\n"):
                    self._diagnostic(line)
            self.send(error_frame(request.id, internal(bug.exc)))
        finally:
            once.started()

    async def _dispatch(self, request: Request, once: _Once) -> Any:
        if self._stopping and request.method != "shutdown":
            raise shutting_down()
        if request.unsupported:
            raise unsupported_json()
        handler = _HANDLERS.get(request.method)
        if handler is None:
            raise unknown_method(request.method)
        if request.method != "session/prompt":
            once.started()
        try:
            return await handler(self, request, once)
        except HostError:
            raise
        except Exception as exc:
            raise _HandlerBug(exc) from exc

    # --- methods ----------------------------------------------------------------------------------

    async def _initialize(self, request: Request, once: _Once) -> Any:
        p = initialize_params(request.params)
        self.host.initialize(
            cwd=p.cwd,
            provider=p.provider,
            model=p.model,
            max_tokens=p.max_tokens,
            reasoning_effort=p.reasoning_effort,
        )
        self.stream_deltas = bool(p.stream_deltas)
        return {
            "serverInfo": SERVER_INFO,
            "turnlog": {
                "version": package_version(),
                "root": str(self.host.root),
                "instance": process_instance(),
            },
        }

    async def _prompt(self, request: Request, once: _Once) -> Any:
        method = "session/prompt"
        params = request.params
        session_id = session_id_param(method, params)
        blocks = content_blocks_param(method, params)
        mode = mode_param(method, params)
        zone = {"client_time_zone": params["clientTimeZone"]} if "clientTimeZone" in params else {}
        assert request.id is not None  # only an unsupported request lacks one, refused before this
        rpc_id = rpc_id_text(request.id)
        prompt = _Prompt(session_id, request.id)
        waiting = self._prompts.setdefault((session_id, rpc_id), [])
        waiting.append(prompt)
        try:
            prompt.message_id = await self.host.admit(
                session_id, blocks, rpc_id=rpc_id, mode=mode, task_status=once, **zone
            )
        except Exception as exc:
            if not prompt.replied:
                raise
            # The receipt is in the log and its reply is out: the prompt was admitted.
            self._diagnostic(f"after admitting {rpc_id}: {type(exc).__name__}: {exc}")
            return NO_REPLY
        finally:
            waiting.remove(prompt)
            if not waiting:
                del self._prompts[(session_id, rpc_id)]
        self._reply(prompt)  # unless the forwarder already sent it after the receipt
        return NO_REPLY

    async def _resume(self, request: Request, once: _Once) -> Any:
        session_id = session_id_param("session/resume", request.params)
        disposition = await self.host.resume(session_id)
        return {"sessionId": session_id, "disposition": disposition}

    async def _cwd_get(self, request: Request, once: _Once) -> Any:
        session_id = session_id_param("session/working-directory/get", request.params)
        return {"cwd": await self.host.working_directory(session_id)}

    async def _cwd_set(self, request: Request, once: _Once) -> Any:
        method = "session/working-directory/set"
        session_id = session_id_param(method, request.params)
        path = path_param(method, request.params)
        return {"cwd": await self.host.set_working_directory(session_id, path)}

    async def _fork(self, request: Request, once: _Once) -> Any:
        p = fork_params(request.params)
        return await self.host.fork(p.parent, boundary_seq=p.boundary_seq, child_id=p.child_id)

    async def _list(self, request: Request, once: _Once) -> Any:
        return await self.host.list_sessions()

    async def _history(self, request: Request, once: _Once) -> Any:
        p = history_params(request.params)
        page = await self.host.history_page(
            p.session_id, from_seq=p.from_seq, before_seq=p.before_seq, limit=p.limit
        )
        self.send(history_frame(request.id, page))
        return NO_REPLY

    async def _cancel(self, request: Request, once: _Once) -> Any:
        session_id = session_id_param("session/cancel", request.params)
        return {"cancelled": self.host.cancel(session_id)}

    async def _inspect(self, request: Request, once: _Once) -> Any:
        p = inspect_params(request.params)
        return await self.host.inspect(p.session_id, at_seq=p.at_seq)

    async def _shutdown_request(self, request: Request, once: _Once) -> Any:
        self._shutdown(request)
        return NO_REPLY


_HANDLERS: dict[str, Callable[[Connection, Request, _Once], Awaitable[Any]]] = {
    "initialize": Connection._initialize,
    "session/prompt": Connection._prompt,
    "session/resume": Connection._resume,
    "session/working-directory/get": Connection._cwd_get,
    "session/working-directory/set": Connection._cwd_set,
    "session/fork": Connection._fork,
    "session/list": Connection._list,
    "session/history": Connection._history,
    "session/cancel": Connection._cancel,
    "session/inspect": Connection._inspect,
    "shutdown": Connection._shutdown_request,
}
