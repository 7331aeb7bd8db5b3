"""Serving ``turnlog web`` (web §1, web §2, web §7): Hypercorn on trio, inside the host's own
``trio.run``, around :class:`~host.web.app.WebApp`.

:func:`bind` takes the port before anything is served, so the fence knows the real port of
``--port 0`` from the first request on and a port in use is one clear error. :func:`serve_web`
serves until :meth:`Stop.request` is called (``turnlog web`` calls it from its signal handler)
and then stops in the order of web §7: the connections stop forwarding, the host shuts down
(turns disposed keeping their inbox, runtimes stopped, sessions flushed, locks released), the
WebSockets close with 1001, Hypercorn stops. Hypercorn's access log is off; its error log goes to
the ``hypercorn.error`` logger, never with headers.
"""

from __future__ import annotations

import errno
import functools
import logging
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, cast

import hypercorn.trio
import trio
from hypercorn.config import Config
from hypercorn.typing import ASGIFramework

from host.runtime import Host, ShutdownReport

from .app import Page, WebApp
from .fence import Binding
from .launch import LaunchError
from .transport import Transport

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_PORT",
    "GRACEFUL_SECONDS",
    "Served",
    "Stop",
    "bind",
    "hypercorn_config",
    "serve_web",
]

DEFAULT_PORT: Final = 8357
DEFAULT_MAX_MESSAGE_BYTES: Final = 16 * 1024 * 1024
GRACEFUL_SECONDS: Final = 1.0
"""How long Hypercorn lets connections finish once the sockets were closed."""

_logger = logging.getLogger("hypercorn.error")


def bind(address: str, port: int) -> socket.socket:
    """A listening TCP socket on ``address`` (``127.0.0.1`` or ``::1``) and ``port`` (``0``: any free
    one). A port in use raises :class:`LaunchError` with web §2's message (exit 1); any other
    failure to bind is a :class:`LaunchError` naming the address."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((address, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise LaunchError(
                f"turnlog: web: port {port} is in use; pass --port N, or --port 0 for any free port"
            ) from exc
        raise LaunchError(f"turnlog: web: cannot listen on {address} port {port}: {exc.strerror}") from exc
    return sock


def hypercorn_config(sock: socket.socket, *, max_message_bytes: int) -> Config:
    """Hypercorn's configuration: serve the bound socket, no access log, errors to logging, no
    ``server`` header, WebSocket messages up to ``max_message_bytes`` (larger ones close with
    1009). The socket's descriptor passes to Hypercorn, which closes it when it stops."""
    config = Config()
    config.bind = [f"fd://{sock.detach()}"]
    config.accesslog = None
    config.errorlog = _logger
    config.include_server_header = False
    config.websocket_max_message_size = max_message_bytes
    config.graceful_timeout = GRACEFUL_SECONDS
    return config


class Stop:
    """The request to stop serving, with the exit code the first request chose (web §2: later
    requests change nothing)."""

    def __init__(self) -> None:
        self._event = trio.Event()
        self.exit_code: int | None = None

    def request(self, exit_code: int) -> None:
        if self.exit_code is None:
            self.exit_code = exit_code
            self._event.set()

    @property
    def requested(self) -> bool:
        return self.exit_code is not None

    async def wait(self) -> None:
        await self._event.wait()


@dataclass(frozen=True, slots=True)
class Served:
    """How serving ended: the exit code of the stop request and what the host could not flush."""

    exit_code: int
    report: ShutdownReport


async def serve_web(
    host: Host,
    sock: socket.socket,
    *,
    launch_token: str,
    browser_key: str,
    stop: Stop,
    diagnostic: Callable[[str], None],
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    on_ready: Callable[[Binding], Awaitable[None]] | None = None,
    page: Page | None = None,
) -> Served:
    """Serve ``host`` on the bound ``sock`` until ``stop`` is requested, then stop as web §7 says.

    ``on_ready(binding)`` runs once Hypercorn accepts connections (it prints the start-up lines
    and opens the browser); if it raises, serving stops and the exception propagates after the
    host shut down. Returns the exit code the stop asked for and the host's shutdown report.
    """
    address, port = sock.getsockname()[:2]
    binding = Binding(address, port)
    transport = Transport(host, diagnostic=diagnostic)
    app = WebApp(
        host,
        binding=binding,
        launch_token=launch_token,
        browser_key=browser_key,
        transport=transport,
        diagnostic=diagnostic,
        page=page,
    )
    config = hypercorn_config(sock, max_message_bytes=max_message_bytes)
    hypercorn_stop = trio.Event()
    async with trio.open_nursery() as nursery:
        await nursery.start(
            functools.partial(
                # Starlette's ASGI types are looser mappings than Hypercorn's TypedDicts; same protocol.
                hypercorn.trio.serve, cast(ASGIFramework, app), config, shutdown_trigger=hypercorn_stop.wait
            )
        )
        try:
            if on_ready is not None:
                await on_ready(binding)
            await stop.wait()
        finally:
            with trio.CancelScope(shield=True):
                transport.stop_forwarding()  # web §7 step 1
                report = await host.shutdown()  # step 2
                await transport.close_all()  # step 3
                hypercorn_stop.set()  # step 4
    assert stop.exit_code is not None  # on_ready raised otherwise, and that propagated
    return Served(stop.exit_code, report)
