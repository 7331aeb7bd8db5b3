"""The per-client Connection on its own, as a second transport uses it (web §5.2): lines go in
through ``receive``, whole frames come out of ``output``, and the transport decides what
``shutdown`` does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from host.models import ScriptedAdapter
from host.rpc import Connection, Request
from host.runtime import HostConfig, HostError, open_host


def line(frame: dict[str, Any]) -> bytes:
    return json.dumps(frame).encode()


async def frames_until_idle(connection: Connection, session_id: str) -> list[dict[str, Any]]:
    frames = []
    with trio.fail_after(20):
        async for raw in connection.output:
            assert raw.endswith(b"\n") and raw.count(b"\n") == 1
            frame = json.loads(raw)
            frames.append(frame)
            if frame.get("method") == "session.status" and frame["params"] == {
                "sessionId": session_id,
                "status": "idle",
            }:
                return frames
    raise AssertionError(f"output ended: {frames}")


async def test_a_connection_serves_lines_and_queues_frames_without_stdio(tmp_path: Path) -> None:
    diagnostics: list[str] = []

    def refuse_shutdown(request: Request) -> None:
        raise HostError("not-available", "shutdown is not available here")

    async with open_host(HostConfig(root=tmp_path), adapters={"scripted": ScriptedAdapter()}) as host:
        connection = Connection(host, shutdown=refuse_shutdown, diagnostic=diagnostics.append)
        connection.subscribe()
        async with trio.open_nursery() as nursery:
            await connection.receive(b"   \r", nursery)
            await connection.receive(b"{not json", nursery)
            prompt = {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "session/prompt",
                "params": {"sessionId": "web", "contentBlocks": [{"type": "text", "text": "hi"}]},
            }
            await connection.receive(b"  " + line(prompt) + b" \r", nursery)
            frames = await frames_until_idle(connection, "web")
            await connection.receive(line({"jsonrpc": "2.0", "id": "s", "method": "shutdown"}), nursery)
            with trio.fail_after(20):
                refusal = json.loads(await connection.output.receive())
        connection.unsubscribe()
    assert diagnostics == ["ignored a line that is not valid JSON (9 bytes)"]
    receipt, running, reply = frames[:3]
    assert receipt["params"]["event"]["type"] == "agent/inbox/spliced"
    assert receipt["params"]["event"]["data"]["inserted"][0]["source"] == {"kind": "user", "rpcId": "7"}
    assert running == {
        "jsonrpc": "2.0",
        "method": "session.status",
        "params": {"sessionId": "web", "status": "running"},
    }
    assert reply == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {"messageId": receipt["params"]["event"]["data"]["inserted"][0]["id"]},
    }
    assert frames[-2]["params"]["event"]["type"] == "turn/end"
    assert refusal == {
        "jsonrpc": "2.0",
        "id": "s",
        "error": {
            "code": -32603,
            "message": "shutdown is not available here",
            "data": {"code": "not-available"},
        },
    }
