"""The JSON-RPC server on stdio (host §4, host §4.3.9, host §8), compatible with the
``deepseek-harness-sdk`` client: the lifecycle around one :class:`~host.rpc._connection.Connection`.

:class:`Server` reads stdin in a task, splitting lines (the ``max_line_bytes`` rule of host §8),
writes the connection's frames from a single writer task, and runs shutdown when it is triggered:
a ``shutdown`` request, end of input, a closed stdout, or :meth:`Server.stop` (signals).
:func:`serve_stdio` adds the process edges: the file descriptors and SIGTERM/SIGINT.

Guarantees: stdout carries nothing but frames, one compact JSON line each, never interleaved;
the first trigger decides the exit code.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable

import trio

from host._process import EXIT_SIGINT
from host.runtime import Host, ShutdownReport

from ._connection import Connection
from ._wire import (
    DEFAULT_MAX_LINE_BYTES,
    Line,
    LineSplitter,
    Overlong,
    Request,
    error_frame,
    flush_failed_at_shutdown,
    line_too_long,
    overlong_id,
    result_frame,
)

EXIT_DRAIN_SECONDS = 0.5  # how long the final frames may take to leave after shutdown

_logger = logging.getLogger("host.rpc")


class Server:
    """The JSON-RPC server over one in-process :class:`Host`.

    :meth:`run` serves until shutdown is triggered. It then runs host §4.3.9 (refuse new
    requests, stop forwarding notifications, shut the host down, answer pending ``shutdown``
    requests), lets the last frames leave for at most :data:`EXIT_DRAIN_SECONDS`, and returns
    the exit code: the first trigger's (0, or 130 for SIGINT), or 1 when a session could not be
    flushed (except after SIGINT). Diagnostics go to ``diagnostic(line)``, one line each.
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
        self._diagnostic = diagnostic or (lambda line: _logger.warning("%s", line))
        self.connection = Connection(host, shutdown=self._shutdown_requested, diagnostic=self._diagnostic)
        self._exit_code: int | None = None
        self._stop = trio.Event()
        self._pending_shutdowns: list[str | int | float | None] = []
        self._written = trio.Event()

    @property
    def stopping(self) -> bool:
        """True once shutdown has been triggered."""
        return self._exit_code is not None

    def stop(self, exit_code: int = 0) -> None:
        """Trigger shutdown; the first trigger decides the exit code, later ones change nothing.

        Notifications stop here, not when :meth:`run` next gets to run: tasks woken together with
        the trigger (a reminder's follow-up, a streaming turn) are not forwarded (host §4.3.9
        step 2).
        """
        if self._exit_code is None:
            self._exit_code = exit_code
            self.connection.stop_forwarding()
            self._stop.set()

    def _shutdown_requested(self, request: Request) -> None:
        self._pending_shutdowns.append(request.id)
        self.stop(0)  # answered by run() once every session is flushed

    async def run(self, stdin: trio.abc.ReceiveStream, stdout: trio.abc.SendStream) -> int:
        connection = self.connection
        # Kept through the host's shutdown: once stopped, the connection passes on late receipts only.
        connection.subscribe()
        async with trio.open_nursery() as outer:
            outer.start_soon(self._write, stdout)
            async with trio.open_nursery() as requests:
                requests.start_soon(self._read, stdin, requests)
                await self._stop.wait()
                report = await self.host.shutdown()
                connection.unsubscribe()
                self._answer_shutdowns(report)
                requests.cancel_scope.cancel()
            connection.close_output()  # the writer drains what is queued, then ends
            with trio.move_on_after(EXIT_DRAIN_SECONDS):
                await self._written.wait()
            outer.cancel_scope.cancel()
        assert self._exit_code is not None
        if self._exit_code == EXIT_SIGINT:
            return EXIT_SIGINT
        return 1 if report.failed else self._exit_code

    def _answer_shutdowns(self, report: ShutdownReport) -> None:
        """host §4.3.9 step 5: ``{}`` to every pending ``shutdown``, or ``persistence-failed``
        naming a session that could not be flushed (with a stderr line for each such session)."""
        for session_id, message in report.failed.items():
            self._diagnostic(f'shutdown: session "{session_id}" could not be flushed: {message}')
        failed = next(iter(report.failed.items()), None)
        for rid in self._pending_shutdowns:
            if failed is None:
                self.connection.send(result_frame(rid, {}))
            else:
                self.connection.send(error_frame(rid, flush_failed_at_shutdown(*failed)))

    # --- output -----------------------------------------------------------------------------------

    async def _write(self, stdout: trio.abc.SendStream) -> None:
        """The single writer: whole frames, in queue order, several per write when queued."""
        try:
            await self._write_frames(stdout)
        finally:
            self._written.set()

    async def _write_frames(self, stdout: trio.abc.SendStream) -> None:
        frames = self.connection.output
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
                    self.stop(0)  # a closed stdout is an end of input (host §8)
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
                self.connection.send(error_frame(rid, line_too_long(self.max_line_bytes)))
            return
        await self.connection.receive(item.data, nursery)


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
    code. SIGTERM shuts down with 0, SIGINT with 130 (host §4.3.9).

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
