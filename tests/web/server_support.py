"""``turnlog web`` in process for the transport tests (web §8): Hypercorn on port 0 in the test's
nursery over a host with the scripted model, and WebSocket clients (``trio-websocket``) that sign in
with ``Authorization: Bearer <launch token>``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio
import trio_websocket

from host.models import ModelAdapter, ScriptedAdapter
from host.runtime import Host, HostConfig, open_host
from host.web.fence import Binding
from host.web.launch import new_secret
from host.web.server import DEFAULT_MAX_MESSAGE_BYTES, Served, Stop, bind, serve_web

HANG_GUARD_S = 20.0  # only guards against a hang; never an assertion about speed
CLIENT_MAX_MESSAGE = 64 * 1024 * 1024


@dataclass
class WebServer:
    """A running ``turnlog web``: where it listens, its two secrets, its host and its stderr lines."""

    host: Host
    binding: Binding
    launch_token: str
    browser_key: str
    stop: Stop
    lines: list[str]
    served: list[Served] = field(default_factory=list)

    @property
    def authority(self) -> str:
        return self.binding.authority

    @property
    def base(self) -> str:
        return f"http://{self.authority}"

    def bearer(self) -> list[tuple[bytes, bytes]]:
        return [(b"Authorization", f"Bearer {self.launch_token}".encode())]

    def cookie(self, value: str | None = None) -> list[tuple[bytes, bytes]]:
        key = self.browser_key if value is None else value
        return [(b"Cookie", f"turnlog-web-{self.binding.port}={key}".encode())]

    @asynccontextmanager
    async def client(
        self, headers: Sequence[tuple[bytes, bytes]] | None = None, *, queue: int = 1
    ) -> AsyncIterator[Client]:
        """A WebSocket client of ``/rpc``, signed in with the bearer unless ``headers`` say otherwise.
        ``queue`` is how many received messages trio-websocket buffers before it stops reading."""
        async with trio_websocket.open_websocket_url(
            f"ws://{self.authority}/rpc",
            extra_headers=list(self.bearer() if headers is None else headers),
            max_message_size=CLIENT_MAX_MESSAGE,
            message_queue_size=queue,
        ) as socket:
            yield Client(socket)


@dataclass
class Client:
    """One WebSocket client: sends frames, reads whole frames (one text message each)."""

    socket: trio_websocket.WebSocketConnection
    seen: list[dict[str, Any]] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)

    async def send(self, *frames: dict[str, Any] | str | bytes) -> None:
        for frame in frames:
            if isinstance(frame, dict):
                await self.socket.send_message(json.dumps(frame, separators=(",", ":")))
            else:
                await self.socket.send_message(frame)

    async def frame(self) -> dict[str, Any]:
        with trio.fail_after(HANG_GUARD_S):
            message = await self.socket.get_message()
        assert isinstance(message, str)
        self.raw.append(message)
        value: dict[str, Any] = json.loads(message)
        self.seen.append(value)
        return value

    async def until(self, done: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        out = []
        while True:
            frame = await self.frame()
            out.append(frame)
            if done(frame):
                return out

    async def reply(self, rid: Any) -> dict[str, Any]:
        return (await self.until(lambda f: "method" not in f and f.get("id") == rid))[-1]

    async def idle(self, session_id: str) -> list[dict[str, Any]]:
        return await self.until(
            lambda f: f.get("method") == "session.status"
            and f["params"] == {"sessionId": session_id, "status": "idle"}
        )

    async def closed(self) -> trio_websocket.CloseReason:
        """Read until the server closes the socket; the close reason."""
        with trio.fail_after(HANG_GUARD_S):
            while True:
                try:
                    await self.socket.get_message()
                except trio_websocket.ConnectionClosed as closed:
                    reason = closed.reason
                    assert reason is not None
                    return reason


@asynccontextmanager
async def running_web(
    root: Path,
    *,
    adapter: ModelAdapter | None = None,
    time_context: bool = False,
    cwd: Path | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> AsyncIterator[WebServer]:
    """``turnlog web`` on ``127.0.0.1:0`` over a host on ``root``. Leaving the block stops it as a
    SIGTERM would (web §7) and records how it ended in ``served``."""
    config = HostConfig(root=root, time_context=time_context, time_zone="UTC" if time_context else None, cwd=cwd)
    adapters = {"scripted": adapter if adapter is not None else ScriptedAdapter()}
    lines: list[str] = []
    async with open_host(config, adapters=adapters) as host:
        sock = bind("127.0.0.1", 0)
        stop = Stop()
        ready: list[Binding] = []
        started = trio.Event()
        server = WebServer(host, Binding("127.0.0.1", sock.getsockname()[1]), new_secret(), new_secret(), stop, lines)

        async def on_ready(binding: Binding) -> None:
            ready.append(binding)
            started.set()

        async def serve() -> None:
            server.served.append(
                await serve_web(
                    host,
                    sock,
                    launch_token=server.launch_token,
                    browser_key=server.browser_key,
                    stop=stop,
                    diagnostic=lines.append,
                    max_message_bytes=max_message_bytes,
                    on_ready=on_ready,
                )
            )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            with trio.fail_after(HANG_GUARD_S):
                await started.wait()
            assert ready == [server.binding]
            try:
                yield server
            finally:
                stop.request(0)
