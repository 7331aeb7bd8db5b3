"""JSON-RPC over WebSockets (web §5): each accepted ``/rpc`` WebSocket is one
:class:`~host.rpc.Connection`, the same protocol as ``turnlog serve``.

A text message is one input line of the connection (``classify`` and the replies and silences of
host §4.1 and §8 are the connection's); each frame the connection queues goes out as one text
message, its bytes without the trailing LF (a notification's frame is one bytes object for every
connection, so it is encoded and decoded once whatever the number of tabs). The transport adds only
what a WebSocket needs:

- a binary message closes the socket with 1003 ``binary messages are not accepted``; an oversized
  one is Hypercorn's (1009); neither is answered;
- ``shutdown`` is refused with ``not-available`` (web §5.3);
- the output queue is bounded (:data:`OUTPUT_LIMIT`); past it the socket is closed with 1013
  ``client too slow; reconnect``, without writing what was still queued. The host's observer
  never waits, and prompts already admitted stay admitted (web §5.2);
- a bug in the transport closes that socket with 1011 (traceback on stderr), and the others serve
  on (web §7).

Requests in flight when a socket closes run to completion; their replies go nowhere.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

import trio
from starlette.websockets import WebSocket

from host.rpc import Connection, OutputLimit, Request
from host.runtime import Host, HostError

__all__ = ["CLOSE_WAIT_SECONDS", "OUTPUT_LIMIT", "Transport", "not_available"]

OUTPUT_LIMIT: Final = OutputLimit(frames=4096, bytes=32 * 1024 * 1024)
"""At most this much waits for one slow client (web §5.2)."""

CLOSE_WAIT_SECONDS: Final = 2.0
"""How long stopping waits for the sockets' closing handshakes before going on."""

GOING_AWAY: Final = (1001, "turnlog web is stopping")
BINARY: Final = (1003, "binary messages are not accepted")
INTERNAL: Final = (1011, "internal error")
TOO_SLOW: Final = (1013, "client too slow; reconnect")

_logger = logging.getLogger("host.web")


def not_available(request: Request) -> None:
    """The web transport's answer to ``shutdown`` (web §5.3): always a refusal."""
    raise HostError(
        "not-available",
        "shutdown is not available over the web transport; stop turnlog web with Ctrl-C",
    )


@dataclass(eq=False)
class _Socket:
    """One accepted WebSocket: its connection, the scope its reader and writer run in, and the
    close code chosen first (``None`` while it serves, and when the client closed it)."""

    connection: Connection
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    close: tuple[int, str] | None = None
    done: trio.Event = field(default_factory=trio.Event)

    def stop(self, close: tuple[int, str]) -> None:
        """Close with ``close`` unless a close was already decided; the reader and writer stop."""
        if self.close is None:
            self.close = close
        self.scope.cancel()


class Transport:
    """The WebSockets of one ``turnlog web`` process, over one :class:`Host`.

    :meth:`serve` runs one accepted socket until it closes. Stopping follows web §7: first
    :meth:`stop_forwarding` (each connection refuses new requests and forwards only late
    receipts), then — after the host shut down — :meth:`close_all` (1001). ``diagnostic(line)``
    receives each stderr line, prefix included.
    """

    def __init__(
        self,
        host: Host,
        *,
        diagnostic: Callable[[str], None],
        limit: OutputLimit = OUTPUT_LIMIT,
    ) -> None:
        self.host = host
        self._diagnostic = diagnostic
        self._limit = limit
        self._sockets: set[_Socket] = set()
        self._stopping = False
        self._closing = False
        self._last_frame = b""
        self._last_text = ""

    @property
    def open_sockets(self) -> int:
        return len(self._sockets)

    def _line(self, text: str) -> None:
        self._diagnostic(f"turnlog web: {text}")

    def stop_forwarding(self) -> None:
        """web §7 step 1 for every connection, and for those accepted from now on."""
        self._stopping = True
        for socket in self._sockets:
            socket.connection.stop_forwarding()

    async def close_all(self, *, wait_seconds: float = CLOSE_WAIT_SECONDS) -> None:
        """web §7 step 3: close every socket with 1001, waiting at most ``wait_seconds`` for them.
        Sockets accepted from now on are closed at once."""
        self._closing = True
        sockets = tuple(self._sockets)
        for socket in sockets:
            socket.stop(GOING_AWAY)
        with trio.move_on_after(wait_seconds):
            for socket in sockets:
                await socket.done.wait()

    async def serve(self, websocket: WebSocket) -> None:
        """Accept ``websocket`` and serve it as one connection until either side closes it."""
        await websocket.accept()
        connection = Connection(
            self.host, shutdown=not_available, diagnostic=self._line, limit=self._limit
        )
        socket = _Socket(connection)
        if self._stopping:
            connection.stop_forwarding()
        if self._closing:
            socket.stop(GOING_AWAY)
        self._sockets.add(socket)
        connection.subscribe()
        try:
            async with trio.open_nursery() as requests:  # in-flight requests finish first
                try:
                    with socket.scope:
                        async with trio.open_nursery() as io:
                            io.start_soon(self._write, websocket, socket)
                            await self._read(websocket, socket, requests)
                            io.cancel_scope.cancel()
                except Exception:  # a bug here: this socket closes, the others serve on
                    _logger.exception("internal error in the WebSocket transport")
                    socket.close = INTERNAL
                connection.unsubscribe()
                connection.close_output()
                if socket.close is not None:
                    await self._close(websocket, socket.close)
        finally:
            connection.unsubscribe()
            self._sockets.discard(socket)
            socket.done.set()

    async def _read(self, websocket: WebSocket, socket: _Socket, requests: trio.Nursery) -> None:
        """Feed text messages to the connection until the client closes or sends binary."""
        connection = socket.connection
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                socket.close = None  # nothing more can be sent
                socket.scope.cancel()
                return
            text = message.get("text")
            if text is None:
                socket.stop(BINARY)
                return
            await connection.receive(text.encode("utf-8"), requests)

    async def _write(self, websocket: WebSocket, socket: _Socket) -> None:
        """Send the connection's frames, one text message each, until its output ends; an
        overflow stops at once, dropping what is still queued."""
        connection = socket.connection
        async for frame in connection.output:
            if connection.overflowed.is_set():
                break
            await websocket.send_text(self._text(frame))
        if connection.overflowed.is_set():
            socket.stop(TOO_SLOW)

    def _text(self, frame: bytes) -> str:
        """A frame as one text message, its bytes without the trailing LF. A notification comes
        to every socket as one bytes object, taken by their writers in turn: it is decoded once."""
        if frame is not self._last_frame:
            self._last_frame = frame
            self._last_text = frame[:-1].decode("utf-8")
        return self._last_text

    async def _close(self, websocket: WebSocket, close: tuple[int, str]) -> None:
        code, reason = close
        try:
            await websocket.close(code, reason)
        except (OSError, RuntimeError, trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the client went away meanwhile
