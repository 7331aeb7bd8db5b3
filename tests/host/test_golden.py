"""Golden bytes: the log the scripted demo writes, and the stdout frames and logs of one recorded
JSON-RPC session, compared byte for byte with the files under ``tests/host/golden/``.

Both runs are deterministic: trio runs on ``MockClock(autojump_threshold=0)`` with a wall clock
derived from it (epoch 2026-02-10T12:00:00Z), time stands still while a worker thread writes, and
the zones are fixed (``TZ=Europe/Berlin``). What is random by nature is normalised before the
comparison, in order of first appearance within one run: UUID4s become ``<uuid-1>``, ``<uuid-2>``…,
generated session ids (``session-<32 hex>``, ``demo-<stamp>-<4 hex>``) ``<session-1>``…, the
temporary directory ``<tmp>``, the package version ``<version>`` and the process's instance id
``<instance>``.

The goldens pin behaviour, log bytes and the RPC wire across refactorings. When a change of
those is intended, regenerate them and review the diff:

    TURNLOG_REGENERATE_GOLDENS=1 .venv/bin/python -m pytest tests/host/test_golden.py
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

import host.cli
from host.rpc import Server
from host.testing import _hold_time_during_io, open_harness

GOLDEN = Path(__file__).with_name("golden")
REGENERATE = os.environ.get("TURNLOG_REGENERATE_GOLDENS") == "1"
BASE_MS = 1_770_724_800_000  # 2026-02-10T12:00:00Z
HANG_GUARD_S = 600.0  # virtual seconds; only guards against a hang

_UUID4 = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
_SESSION_ID = re.compile(rb"session-[0-9a-f]{32}|demo-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{4}")
_INSTANCE = re.compile(rb'"instance":"[0-9a-f]{32}"')


class Normaliser:
    """Replaces what differs from run to run, with one numbering across a run's artefacts."""

    def __init__(self, tmp: Path) -> None:
        self._tmp = str(tmp).encode()
        self._version = importlib.metadata.version("turnlog").encode()
        self._names: dict[bytes, bytes] = {}

    def _number(self, pattern: re.Pattern[bytes], label: str, data: bytes) -> bytes:
        def name(match: re.Match[bytes]) -> bytes:
            value = match.group()
            if value not in self._names:
                count = sum(1 for v in self._names.values() if v.startswith(b"<" + label.encode() + b"-"))
                self._names[value] = f"<{label}-{count + 1}>".encode()
            return self._names[value]

        return pattern.sub(name, data)

    def __call__(self, data: bytes) -> bytes:
        data = data.replace(self._tmp, b"<tmp>")
        data = data.replace(b'"version":"' + self._version + b'"', b'"version":"<version>"')
        data = _INSTANCE.sub(b'"instance":"<instance>"', data)
        data = self._number(_SESSION_ID, "session", data)
        return self._number(_UUID4, "uuid", data)


def check_golden(name: str, actual: bytes) -> None:
    path = GOLDEN / name
    if REGENERATE:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(actual)
        return
    assert path.exists(), f"no golden {path.name}; generate it with TURNLOG_REGENERATE_GOLDENS=1"
    expected = path.read_bytes()
    if actual != expected:
        for number, (got, want) in enumerate(zip(actual.split(b"\n"), expected.split(b"\n")), start=1):
            assert got == want, f"{name} line {number} differs"
        lengths = len(actual.split(b"\n")), len(expected.split(b"\n"))
        assert actual == expected, f"{name} has %d lines, the golden %d" % lengths


def session_logs(root: Path) -> list[Path]:
    return sorted(root.glob("*.jsonl"), key=lambda p: p.read_bytes().split(b"\n", 1)[0])


# --- the demo ------------------------------------------------------------------------------------


def test_demo_log_and_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``turnlog demo`` (the console script's entry point) on virtual time: its output and log."""
    clock = trio.testing.MockClock(autojump_threshold=0)
    real_run = trio.run

    def virtual_run(async_fn: Callable[[], Awaitable[Any]], *args: Any, **kwargs: Any) -> Any:
        async def main() -> Any:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_hold_time_during_io)
                try:
                    return await async_fn(*args)
                finally:
                    nursery.cancel_scope.cancel()

        return real_run(main, clock=clock)

    monkeypatch.setattr(trio, "run", virtual_run)
    monkeypatch.setattr(time, "time_ns", lambda: (BASE_MS + round(clock.current_time() * 1000)) * 1_000_000)
    monkeypatch.setenv("TZ", "Europe/Berlin")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    root = tmp_path / "sessions"

    assert host.cli.main(["demo", "--root", str(root)]) == 0

    normalise = Normaliser(tmp_path)
    check_golden("demo.stdout.txt", normalise(capsys.readouterr().out.encode()))
    [log] = session_logs(root)
    check_golden("demo.log.jsonl", normalise(log.read_bytes()))


# --- a recorded JSON-RPC session -----------------------------------------------------------------


class Client:
    """The client end of the server: sends one frame at a time, keeps every output byte."""

    def __init__(self, to_server: trio.abc.SendStream, from_server: trio.abc.ReceiveStream) -> None:
        self._to = to_server
        self._from = from_server
        self._buffer = b""
        self.output = b""

    async def send(self, rid: str | int, method: str, params: dict[str, Any] | None = None) -> None:
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            frame["params"] = params
        await self._to.send_all(json.dumps(frame, separators=(",", ":")).encode() + b"\n")

    async def until(self, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """Read frames up to the first one for which ``done`` holds, and return it."""
        with trio.fail_after(HANG_GUARD_S):
            while True:
                while b"\n" not in self._buffer:
                    data = await self._from.receive_some()
                    assert data, "the server closed its output early"
                    self._buffer += data
                line, self._buffer = self._buffer.split(b"\n", 1)
                self.output += line + b"\n"
                frame = json.loads(line)
                if done(frame):
                    return frame

    async def reply(self, rid: str) -> dict[str, Any]:
        return await self.until(lambda f: "method" not in f and f.get("id") == rid)

    async def idle(self, session_id: str) -> None:
        await self.until(
            lambda f: (
                f.get("method") == "session.status"
                and f["params"] == {"sessionId": session_id, "status": "idle"}
            )
        )

    async def rest(self) -> None:
        while data := await self._from.receive_some():
            self.output += data


def text(value: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": value}]


async def test_rpc_session_frames_and_logs(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """initialize, a prompt that creates a reminder, a plain prompt, a fork, history, list, the
    reminder firing, shutdown: every stdout byte and every log byte."""
    monkeypatch.setenv("TZ", "Europe/Berlin")
    root = tmp_path / "sessions"
    work = tmp_path / "work"
    work.mkdir()
    client_out, server_in = trio.testing.memory_stream_one_way_pair()
    server_out, client_in = trio.testing.memory_stream_one_way_pair()
    diagnostics: list[str] = []
    async with open_harness(root, base_ms=BASE_MS, time_context=True) as h:
        await h.start()
        server = Server(h.host, diagnostic=diagnostics.append)
        exit_code: list[int] = []
        c = Client(client_out, client_in)
        async with trio.open_nursery() as nursery:

            async def serve() -> None:
                exit_code.append(await server.run(server_in, server_out))
                await server_out.aclose()

            nursery.start_soon(serve)
            await c.send(
                "i-1",
                "initialize",
                {"cwd": str(work), "provider": "scripted", "model": "scripted", "streamDeltas": True},
            )
            await c.reply("i-1")
            await c.send(
                "p-1",
                "session/prompt",
                {
                    "sessionId": "main",
                    "contentBlocks": text("remind me in 5 seconds to stretch"),
                    "clientTimeZone": "Europe/Berlin",
                },
            )
            await c.idle("main")
            await c.send(
                "p-2",
                "session/prompt",
                {"sessionId": "main", "contentBlocks": text("hi ☕"), "clientTimeZone": "Asia/Calcutta"},
            )
            await c.idle("main")
            await c.send("f-1", "session/fork", {"sessionId": "main"})
            await c.reply("f-1")
            await c.send("h-1", "session/history", {"sessionId": "main", "fromSeq": 2, "limit": 3})
            await c.reply("h-1")
            await c.send("l-1", "session/list")
            await c.reply("l-1")
            await c.idle("main")  # the reminder fires five virtual seconds after its creation
            await c.send(7, "shutdown")
            await c.rest()
        assert exit_code == [0]
    assert diagnostics == []
    normalise = Normaliser(tmp_path)
    check_golden("rpc.stdout.jsonl", normalise(c.output))
    logs = session_logs(root)
    assert len(logs) == 2
    for name, log in zip(("rpc.main.jsonl", "rpc.child.jsonl"), logs):
        check_golden(name, normalise(log.read_bytes()))


# --- a third-party adapter's chunk dicts through the loop and the wire ---------------------------


def stream_of(
    *blocks: tuple[str, str], finish: dict[str, Any], usage: dict[str, int] | None = None
) -> list[dict[str, Any]]:
    """The host §6.1 chunk dicts of one attempt: ``(blockType, text or arguments)`` blocks, a
    tool call's name after ``:`` (``"schedule_list:{}"``), then block ends, usage and ``finish``."""
    chunks: list[dict[str, Any]] = []
    ends: list[dict[str, Any]] = []
    for index, (kind, body) in enumerate(blocks):
        chunks.append({"type": "block-start", "index": index, "blockType": kind})
        if kind == "tool-call":
            name, _, arguments = body.partition(":")
            call_id = f"c{index}"
            chunks.append(
                {"type": "tool-call-delta", "index": index, "id": "", "argumentsDelta": arguments[:1]}
            )
            chunks.append(
                {
                    "type": "tool-call-delta",
                    "index": index,
                    "id": call_id,
                    "name": name,
                    "argumentsDelta": arguments[1:],
                }
            )
            ends.append(
                {
                    "type": "block-end",
                    "index": index,
                    "block": {"type": "tool-call", "id": call_id, "name": name, "arguments": arguments},
                }
            )
        else:
            chunks.append({"type": f"{kind}-delta", "index": index, "text": body[:3]})
            chunks.append({"type": f"{kind}-delta", "index": index, "text": body[3:]})
            ends.append({"type": "block-end", "index": index, "block": {"type": kind, "text": body}})
    tail = [] if usage is None else [{"type": "usage", "usage": usage}]
    return [*chunks, *ends, *tail, {"type": "finish", "reason": finish}]


STOP = {"kind": "stop"}
ATTEMPTS: list[list[dict[str, Any]] | None] = [
    stream_of(
        ("reasoning", "thinking it over"),
        ("text", "hello there"),
        finish=STOP,
        usage={"inputTokens": 12, "outputTokens": 5, "cacheReadTokens": 3, "reasoningTokens": 2},
    ),
    stream_of(
        ("text", "partial, discarded"),
        finish={
            "kind": "error",
            "failure": {
                "message": "upstream overloaded",
                "code": "SERVER",
                "status": 503,
                "requestId": "req-1",
            },
        },
    ),
    stream_of(
        ("tool-call", "nope:{}"),
        ("tool-call", 'schedule_create:{"prompt":'),
        ("tool-call", 'schedule_delete:{"id":5}'),
        ("tool-call", "schedule_list:"),
        finish={"kind": "tool-calls"},
    ),
    stream_of(("text", "done"), finish=STOP),
    stream_of(("text", "cut short"), ("tool-call", "schedule_list:{}"), finish={"kind": "max-tokens"}),
    stream_of(
        finish={
            "kind": "error",
            "failure": {"message": "Incorrect API key provided", "code": "AUTH", "status": 401},
        }
    ),
    None,  # hangs until the shutdown aborts the turn
]


class ListedAdapter:
    """A third-party adapter yielding plain chunk dicts: one listed attempt per model call."""

    provider = "scripted"

    def __init__(self) -> None:
        self._attempts = iter(ATTEMPTS)

    async def stream(self, request: Any) -> Any:
        chunks = next(self._attempts)
        if chunks is None:
            await trio.sleep_forever()
        for chunk in chunks or ():
            await trio.sleep(0.001)
            yield chunk


async def test_adapter_chunks_retries_tool_failures_and_turn_ends(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reasoning and usage, a retry, unknown-tool / bad-JSON / schema / successful tool calls, a
    max-tokens finish, a terminal model failure and a turn aborted by shutdown: frames and log."""
    monkeypatch.setenv("TZ", "Europe/Berlin")
    root = tmp_path / "sessions"
    client_out, server_in = trio.testing.memory_stream_one_way_pair()
    server_out, client_in = trio.testing.memory_stream_one_way_pair()
    adapter = ListedAdapter()
    async with open_harness(
        root, base_ms=BASE_MS, adapters=lambda: {"scripted": adapter}, cwd=str(tmp_path)
    ) as h:
        await h.start()
        server = Server(h.host)
        exit_code: list[int] = []
        c = Client(client_out, client_in)
        async with trio.open_nursery() as nursery:

            async def serve() -> None:
                exit_code.append(await server.run(server_in, server_out))
                await server_out.aclose()

            nursery.start_soon(serve)
            await c.send("i", "initialize", {"streamDeltas": True, "maxTokens": 64, "reasoningEffort": "low"})
            await c.reply("i")
            for n in range(4):
                await c.send(n, "session/prompt", {"sessionId": "s", "contentBlocks": text(f"prompt {n}")})
                await c.idle("s")
            await c.send(
                "last", "session/prompt", {"sessionId": "s", "contentBlocks": text("hang"), "mode": "steer"}
            )
            await c.until(lambda f: f.get("method") == "session.event" and f["params"]["event"]["seq"] == 49)
            await c.send("bye", "shutdown")
            await c.rest()
        assert exit_code == [0]
    normalise = Normaliser(tmp_path)
    check_golden("adapter.stdout.jsonl", normalise(c.output))
    [log] = session_logs(root)
    check_golden("adapter.s.jsonl", normalise(log.read_bytes()))
