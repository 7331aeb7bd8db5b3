"""Helpers for the JSON-RPC tests: an in-process server over memory streams with a client end
that reads whole frames, and a subprocess client for the process-level tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio
import trio.testing

from host.models import ScriptedAdapter, parse_script
from host.rpc import DEFAULT_MAX_LINE_BYTES, Server
from host.runtime import Host, HostConfig, open_host

HANG_GUARD_S = 20.0  # only guards against a hang; never an assertion about speed


def request(rid: Any, method: str, params: Any = None) -> dict[str, Any]:
    frame: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        frame["params"] = params
    return frame


def prompt(rid: Any, session_id: str, text: str, **extra: Any) -> dict[str, Any]:
    return request(rid, "session/prompt", {"sessionId": session_id, "contentBlocks": [{"type": "text", "text": text}], **extra})


def error_of(frame: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """``(data.code, message, data)`` of an error frame, checking the fixed -32603 code."""
    error = frame["error"]
    assert error["code"] == -32603
    return error["data"]["code"], error["message"], error["data"]


def events_of(frames: Sequence[dict[str, Any]], session_id: str | None = None) -> list[dict[str, Any]]:
    return [
        f["params"]["event"]
        for f in frames
        if f.get("method") == "session.event" and (session_id is None or f["params"]["sessionId"] == session_id)
    ]


@dataclass
class Wire:
    """The client end of an in-process server: writes raw lines, reads whole frames."""

    to_server: trio.testing.MemorySendStream | trio.abc.SendStream
    from_server: trio.abc.ReceiveStream
    buffer: bytes = b""
    seen: list[dict[str, Any]] = field(default_factory=list)
    raw_lines: list[bytes] = field(default_factory=list)

    async def send(self, *frames: dict[str, Any] | bytes) -> None:
        """Send frames in one write (a dict is compact JSON plus LF; bytes are sent as they are)."""
        data = b"".join(
            f if isinstance(f, bytes) else json.dumps(f, separators=(",", ":")).encode() + b"\n" for f in frames
        )
        await self.to_server.send_all(data)

    async def close(self) -> None:
        await self.to_server.aclose()

    async def frame(self) -> dict[str, Any] | None:
        """The next frame, or ``None`` at the end of output."""
        with trio.fail_after(HANG_GUARD_S):
            while b"\n" not in self.buffer:
                data = await self.from_server.receive_some()
                if not data:
                    return None
                self.buffer += data
        line, self.buffer = self.buffer.split(b"\n", 1)
        self.raw_lines.append(line)
        value = json.loads(line)
        self.seen.append(value)
        return value

    async def until(self, done: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        """Frames up to and including the first one for which ``done`` holds."""
        out = []
        while True:
            f = await self.frame()
            assert f is not None, f"output ended before the expected frame; got {out}"
            out.append(f)
            if done(f):
                return out

    async def reply(self, rid: Any) -> dict[str, Any]:
        frames = await self.until(lambda f: "method" not in f and f.get("id") == rid)
        return frames[-1]

    async def rest(self) -> list[dict[str, Any]]:
        """Every frame until the end of output."""
        out = []
        while (f := await self.frame()) is not None:
            out.append(f)
        return out

    async def idle(self, session_id: str) -> list[dict[str, Any]]:
        return await self.until(
            lambda f: f.get("method") == "session.status" and f["params"] == {"sessionId": session_id, "status": "idle"}
        )


@dataclass
class Running:
    wire: Wire
    server: Server
    host: Host
    diagnostics: list[str]
    exit_code: list[int]


def script(*lines: str) -> ScriptedAdapter:
    return ScriptedAdapter(parse_script("\n".join(lines).encode()))


@asynccontextmanager
async def running_server(
    root: Path,
    *,
    adapter: ScriptedAdapter | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    time_context: bool = False,
    cwd: Path | None = None,
) -> AsyncIterator[Running]:
    """A host on ``root`` served over memory streams. Leaving the block ends the input (EOF) and
    waits for the server to shut down; its exit code lands in ``exit_code``."""
    config = HostConfig(root=root, time_context=time_context, time_zone="UTC" if time_context else None, cwd=cwd)
    adapters = {"scripted": adapter if adapter is not None else ScriptedAdapter()}
    client_out, server_in = trio.testing.memory_stream_one_way_pair()
    server_out, client_in = trio.testing.memory_stream_one_way_pair()
    diagnostics: list[str] = []
    exit_code: list[int] = []
    async with open_host(config, adapters=adapters) as host:
        server = Server(host, max_line_bytes=max_line_bytes, diagnostic=diagnostics.append)
        async with trio.open_nursery() as nursery:

            async def serve() -> None:
                exit_code.append(await server.run(server_in, server_out))
                await server_out.aclose()

            nursery.start_soon(serve)
            wire = Wire(client_out, client_in)
            yield Running(wire, server, host, diagnostics, exit_code)
            if not exit_code:
                await client_out.aclose()
            while True:  # drain so the writer never blocks on a full stream
                data = await client_in.receive_some()
                if not data:
                    break


# --- subprocess ----------------------------------------------------------------------------------


class Process:
    """``python -m host serve`` as a subprocess with line-oriented access to its output."""

    def __init__(self, args: Sequence[str], *, env: dict[str, str] | None = None, cwd: str | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "host", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
            cwd=cwd,
        )
        self.stderr_lines: list[str] = []
        self._stderr = threading.Thread(target=self._drain_stderr, daemon=True)
        self._stderr.start()

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_lines.append(line.decode("utf-8", "replace").rstrip("\n"))

    def send(self, *frames: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"".join(json.dumps(f).encode() + b"\n" for f in frames))
        self.proc.stdin.flush()

    def frame(self) -> dict[str, Any] | None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        return json.loads(line) if line else None

    def until(self, done: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        out = []
        while True:
            f = self.frame()
            assert f is not None, f"stdout closed; stderr: {self.stderr_lines}"
            out.append(f)
            if done(f):
                return out

    def wait(self) -> int:
        code = self.proc.wait(timeout=HANG_GUARD_S)
        self._stderr.join(timeout=HANG_GUARD_S)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
