"""The JSON-RPC 2.0 server on stdio, compatible with the ``deepseek-harness-sdk`` client
(host.md §4, §8).

:class:`Server` is the thin effect around the pure wire rules of :mod:`host.jsonrpc`: one reader
task splitting and classifying input lines, one task per request, one writer task serialising
whole frames, and the notification forwarder observing the in-process :class:`~host.app.Host`.
:func:`serve_stdio` adds the process edges: stdin, stdout and the signals of §4.3.9.

Guarantees: stdout carries nothing but frames, one compact JSON line each, never interleaved;
every handler failure is ``-32603`` with a stable ``data.code``; a prompt's receipt
``session.event`` is queued before its reply; admissions to one session keep arrival order.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import trio

from host._process import EXIT_SIGINT, package_version
from host.jsonrpc import (
    DEFAULT_MAX_LINE_BYTES,
    SERVER_INFO,
    Invalid,
    Line,
    LineSplitter,
    Overlong,
    Request,
    classify,
    content_blocks_param,
    error_frame,
    event_frame,
    flush_failed_at_shutdown,
    fork_params,
    history_params,
    initialize_params,
    internal,
    line_too_long,
    mode_param,
    notification_bytes,
    overlong_id,
    path_param,
    result_frame,
    rpc_id_text,
    session_id_param,
    unknown_method,
    unsupported_json,
)
from host.runtime import (
    EventAppended,
    Host,
    HostError,
    Notification,
    ShutdownReport,
    StatusChanged,
    shutting_down,
)

EXIT_DRAIN_SECONDS = 0.5  # how long the final frames may take to leave after shutdown

_log = logging.getLogger("host.rpc")


# --- the server ----------------------------------------------------------------------------------


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


class Server:
    """The JSON-RPC server over one in-process :class:`Host`.

    :meth:`run` serves until shutdown: a ``shutdown`` request, end of input, a closed output, or
    :meth:`stop` (signals). It then runs §4.3.9 (refuse new requests, stop forwarding
    notifications, shut the host down, answer pending ``shutdown`` requests), lets the last
    frames leave for at most :data:`EXIT_DRAIN_SECONDS`, and returns the exit code: the first
    trigger's (0, or 130 for SIGINT), or 1 when a session could not be flushed (except after
    SIGINT). Diagnostics go to ``diagnostic(line)``, one line each.
    """

    def __init__(
        self,
        host: Host,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        diagnostic: Callable[[str], None] | None = None,
    ) -> None:
        self.host = host
        self.max_line_bytes = max_line_bytes
        self._diagnostic = diagnostic or (lambda line: _log.warning("%s", line))
        self._stream_deltas = False
        self._exit_code: int | None = None
        self._stop = trio.Event()
        self._pending_shutdowns: list[str | int | float] = []
        self._send: trio.MemorySendChannel[bytes] | None = None
        self._written = trio.Event()
        self._prompts: dict[tuple[str, str], list[_Prompt]] = {}
        self._due: _Prompt | None = None

    @property
    def stopping(self) -> bool:
        """True once shutdown has been triggered."""
        return self._exit_code is not None

    def stop(self, exit_code: int = 0) -> None:
        """Trigger shutdown; the first trigger decides the exit code, later ones change nothing.

        Notifications stop here, not when :meth:`run` next gets to run: tasks woken together with
        the trigger (a reminder's follow-up, a streaming turn) are not forwarded (§4.3.9 step 2).
        """
        if self._exit_code is None:
            self._exit_code = exit_code
            self._stop.set()

    # --- output -----------------------------------------------------------------------------------

    def _queue(self, frame: bytes) -> None:
        if self._send is None:
            return
        try:
            self._send.send_nowait(frame)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass  # the output is gone or closed: nothing more can be said

    def _forward(self, value: Notification) -> None:
        """The observer of the host: queue the notification's frame. A prompt's reply goes out
        right after its receipt, or after the ``running`` flip the receipt caused (§4.3.2).

        Once shutdown has begun only replies are written (§4.3.9 step 2), with one exception: a
        prompt that arrived earlier and is admitted now still gets its receipt before its reply
        (§4.3.2 step 6, §4.5 2)."""
        if self.stopping:
            if isinstance(value, EventAppended) and self._prompts and value.event.type == "agent/inbox/spliced":
                prompt = self._receipt_of(value)
                if prompt is not None and not prompt.replied:
                    self._queue(event_frame(value))
                    self._reply(prompt)
            return
        frame = notification_bytes(value, deltas=self._stream_deltas)
        due, self._due = self._due, None
        if due is not None:
            if isinstance(value, StatusChanged) and value.status == "running" and value.session_id == due.session_id:
                assert frame is not None
                self._queue(frame)
                self._reply(due)
                return
            self._reply(due)
        if frame is not None:
            self._queue(frame)
        if isinstance(value, EventAppended) and self._prompts and value.event.type == "agent/inbox/spliced":
            self._due = self._receipt_of(value)

    def _receipt_of(self, value: EventAppended) -> _Prompt | None:
        """The pending prompt whose receipt ``value`` is, if any."""
        inserted = value.event.value().get("inserted") or ()
        if len(inserted) != 1:
            return None
        message = inserted[0]
        source = message.get("source") or {}
        waiting = self._prompts.get((value.session_id, source.get("rpcId")))
        if source.get("kind") != "user" or not waiting:
            return None
        prompt = waiting[0]
        prompt.message_id = message.get("id")
        return prompt

    def _reply(self, prompt: _Prompt) -> None:
        if not prompt.replied:
            prompt.replied = True
            self._queue(result_frame(prompt.request_id, {"messageId": prompt.message_id}))

    async def _write(self, frames: trio.MemoryReceiveChannel[bytes], stdout: trio.abc.SendStream) -> None:
        """The single writer: whole frames, in queue order, several per write when queued."""
        try:
            await self._write_frames(frames, stdout)
        finally:
            self._written.set()

    async def _write_frames(self, frames: trio.MemoryReceiveChannel[bytes], stdout: trio.abc.SendStream) -> None:
        async with frames:
            async for frame in frames:
                batch = [frame]
                while True:
                    try:
                        batch.append(frames.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                try:
                    await stdout.send_all(b"".join(batch))
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    self.stop(0)  # a closed stdout is an end of input (§8)
                    return

    # --- input ------------------------------------------------------------------------------------

    async def _read(self, stdin: trio.abc.ReceiveStream, nursery: trio.Nursery) -> None:
        splitter = LineSplitter(self.max_line_bytes)
        try:
            while True:
                data = await stdin.receive_some(65536)
                if not data:
                    break
                for item in splitter.feed(data):
                    await self._take(item, nursery)
            for item in splitter.finish():
                await self._take(item, nursery)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            self._diagnostic(f"stdin failed: {exc}")
        self.stop(0)

    async def _take(self, item: Line | Overlong, nursery: trio.Nursery) -> None:
        if isinstance(item, Overlong):
            self._diagnostic(f"ignored a line longer than {self.max_line_bytes} bytes")
            rid = overlong_id(item.head)
            if rid is not None:
                self._queue(error_frame(rid, line_too_long(self.max_line_bytes)))
            return
        line = item.data.strip()
        if not line:
            return
        frame = classify(line)
        if isinstance(frame, Invalid):
            self._diagnostic(f"ignored a line that is not valid JSON ({len(item.data)} bytes)")
        elif isinstance(frame, Request):
            # start() returns once the handler holds its place (a prompt: in its session's line).
            await nursery.start(self._serve_request, frame)

    async def _serve_request(self, request: Request, *, task_status: trio.TaskStatus[None]) -> None:
        once = _Once(task_status)
        try:
            result = await self._dispatch(request, once)
            if result is not _NO_REPLY:
                self._queue(result_frame(request.id, result))
        except HostError as exc:
            self._queue(error_frame(request.id, exc))
        except Exception as exc:  # a bug: the traceback to stderr, `internal` to the client
            self._diagnostic(f"internal error in {request.method}:")
            for text in traceback.format_exception(exc):
                for line in text.rstrip("\n").split("\n"):
                    self._diagnostic(line)
            self._queue(error_frame(request.id, internal(exc)))
        finally:
            once.started()

    async def _dispatch(self, request: Request, once: _Once) -> Any:
        if self.stopping and request.method != "shutdown":
            raise shutting_down()
        if request.unsupported:
            raise unsupported_json()
        handler = _HANDLERS.get(request.method)
        if handler is None:
            raise unknown_method(request.method)
        if request.method != "session/prompt":
            once.started()
        return await handler(self, request, once)

    # --- lifecycle --------------------------------------------------------------------------------

    async def run(self, stdin: trio.abc.ReceiveStream, stdout: trio.abc.SendStream) -> int:
        send, frames = trio.open_memory_channel[bytes](math.inf)
        self._send = send
        # Kept through the host's shutdown: after stop(), _forward passes on only late receipts.
        unsubscribe = self.host.subscribe(self._forward)
        async with trio.open_nursery() as outer:
            outer.start_soon(self._write, frames, stdout)
            async with trio.open_nursery() as requests:
                requests.start_soon(self._read, stdin, requests)
                await self._stop.wait()
                report = await self.host.shutdown()
                unsubscribe()
                self._answer_shutdowns(report)
                requests.cancel_scope.cancel()
            send.close()  # the writer drains what is queued, then ends
            with trio.move_on_after(EXIT_DRAIN_SECONDS):
                await self._written.wait()
            outer.cancel_scope.cancel()
        assert self._exit_code is not None
        if self._exit_code == EXIT_SIGINT:
            return EXIT_SIGINT
        return 1 if report.failed else self._exit_code

    def _answer_shutdowns(self, report: ShutdownReport) -> None:
        """§4.3.9 step 5: ``{}`` to every pending ``shutdown``, or ``persistence-failed`` naming
        a session that could not be flushed (with a stderr line for each such session)."""
        for session_id, message in report.failed.items():
            self._diagnostic(f'shutdown: session "{session_id}" could not be flushed: {message}')
        failed = next(iter(report.failed.items()), None)
        for rid in self._pending_shutdowns:
            if failed is None:
                self._queue(result_frame(rid, {}))
            else:
                self._queue(error_frame(rid, flush_failed_at_shutdown(*failed)))

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
        self._stream_deltas = bool(p.stream_deltas)
        return {"serverInfo": SERVER_INFO, "turnlog": {"version": package_version(), "root": str(self.host.root)}}

    async def _prompt(self, request: Request, once: _Once) -> Any:
        method = "session/prompt"
        params = request.params
        session_id = session_id_param(method, params)
        blocks = content_blocks_param(method, params)
        mode = mode_param(method, params)
        zone = {"client_time_zone": params["clientTimeZone"]} if "clientTimeZone" in params else {}
        rpc_id = rpc_id_text(request.id)
        prompt = _Prompt(session_id, request.id)
        waiting = self._prompts.setdefault((session_id, rpc_id), [])
        waiting.append(prompt)
        try:
            prompt.message_id = await self.host.admit(
                session_id,
                blocks,
                rpc_id=rpc_id,
                mode=mode,  # type: ignore[arg-type]  # checked above
                task_status=once,  # type: ignore[arg-type]  # a TaskStatus in all but name
                **zone,
            )
        except Exception as exc:
            if not prompt.replied:
                raise
            # The receipt is in the log and its reply is out: the prompt was admitted.
            self._diagnostic(f"after admitting {rpc_id}: {type(exc).__name__}: {exc}")
            return _NO_REPLY
        finally:
            waiting.remove(prompt)
            if not waiting:
                del self._prompts[(session_id, rpc_id)]
        self._reply(prompt)  # unless the forwarder already sent it after the receipt
        return _NO_REPLY

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
        return await self.host.history(p.session_id, from_seq=p.from_seq, limit=p.limit)

    async def _shutdown(self, request: Request, once: _Once) -> Any:
        self._pending_shutdowns.append(request.id)
        self.stop(0)
        return _NO_REPLY  # answered by run() once every session is flushed


_NO_REPLY: Any = object()

_HANDLERS: dict[str, Callable[[Server, Request, _Once], Awaitable[Any]]] = {
    "initialize": Server._initialize,
    "session/prompt": Server._prompt,
    "session/resume": Server._resume,
    "session/working-directory/get": Server._cwd_get,
    "session/working-directory/set": Server._cwd_set,
    "session/fork": Server._fork,
    "session/list": Server._list,
    "session/history": Server._history,
    "shutdown": Server._shutdown,
}


# --- the process edges ---------------------------------------------------------------------------


class FdReceiveStream(trio.abc.ReceiveStream):
    """Reads a file descriptor in a worker thread (abandoned on cancel), leaving the descriptor's
    blocking mode alone — stdin may be a terminal shared with a shell."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        return await trio.to_thread.run_sync(os.read, self._fd, max_bytes or 65536, abandon_on_cancel=True)

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


class FdSendStream(trio.abc.SendStream):
    """Writes whole buffers to a file descriptor in a worker thread (abandoned on cancel)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await trio.to_thread.run_sync(self._write_all, bytes(data), abandon_on_cancel=True)

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


async def serve_stdio(
    host: Host,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    stdout_fd: int = 1,
    diagnostic: Callable[[str], None] | None = None,
) -> int:
    """Serve ``host`` on the process's stdin and ``stdout_fd`` until shutdown and return the exit
    code. SIGTERM shuts down with 0, SIGINT with 130 (§4.3.9).

    Once the code is decided, SIGTERM and SIGINT are ignored for the rest of the process: a
    client may signal right after the shutdown reply, and a later trigger changes nothing.
    """
    server = Server(host, max_line_bytes=max_line_bytes, diagnostic=diagnostic)
    # What trio restores on leaving the receiver, and redelivers signals still queued to.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_IGN)
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:

        async def watch() -> None:
            async for signum in signals:
                server.stop(EXIT_SIGINT if signum == signal.SIGINT else 0)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch)
            code = await server.run(FdReceiveStream(0), FdSendStream(stdout_fd))
            nursery.cancel_scope.cancel()
    return code
