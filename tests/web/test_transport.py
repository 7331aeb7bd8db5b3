"""The WebSocket transport in process (web §5, web §7, web §8): Hypercorn on port 0 in the test's
nursery, ``trio-websocket`` clients signed in with the bearer token.

The conformance test runs one request script through the stdio server and through ``/rpc`` and
requires the same frames, after normalising what differs by nature (uuids, times, the root)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
import trio_websocket

from eventlog import read_log
from host.models import Chunk, ModelRequest, ScriptedAdapter
from host.rpc import Connection
from tests.host.rpc_support import events_of, prompt, request, running_server
from tests.web.server_support import running_web

MAX = 9007199254740991

# --- the conformance script -----------------------------------------------------------------------

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
_INSTANT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
_MILLIS = re.compile(r'"(time|createdAt)":\d+')


def normalised(lines: list[str], root: Path) -> list[str]:
    """The frames with uuids numbered by first appearance, times and instants zeroed and the
    root replaced."""
    names: dict[str, str] = {}

    def uuid(match: re.Match[str]) -> str:
        return names.setdefault(match.group(), f"<uuid-{len(names) + 1}>")

    out = []
    for line in lines:
        line = line.replace(json.dumps(str(root))[1:-1], "<root>")
        line = _UUID.sub(uuid, line)
        line = _INSTANT.sub("<instant>", line)
        out.append(_MILLIS.sub(r'"\1":0', line))
    return out


def script_steps(cwd: Path) -> list[tuple[dict[str, Any] | str, str | None]]:
    """(what to send, what ends the step): the reply to an id, ``idle:<session>``, or ``None`` for
    input that is never answered (the next step's reply shows that nothing came in between)."""
    return [
        # before streamDeltas: a reply naming an instant would be cut into deltas where it is
        (prompt("p-0", "main", "remind me in 300 seconds to stretch"), "idle:main"),
        (request("i", "initialize", {"cwd": str(cwd), "streamDeltas": True}), "i"),
        (prompt("p-1", "main", "hi", clientTimeZone="Asia/Calcutta"), "idle:main"),
        (prompt("p-3", "main", "hi", clientTimeZone="GMT"), "p-3"),
        (request("h-1", "session/history", {"sessionId": "main", "fromSeq": 0, "limit": 5}), "h-1"),
        (request("h-2", "session/history", {"sessionId": "main", "beforeSeq": MAX, "limit": 3}), "h-2"),
        (request("h-3", "session/history", {"sessionId": "main", "fromSeq": 1, "beforeSeq": 2}), "h-3"),
        (request("n-1", "session/inspect", {"sessionId": "main", "atSeq": 3}), "n-1"),
        (request("n-2", "session/inspect", {"sessionId": "main"}), "n-2"),
        (request("n-3", "session/inspect", {"sessionId": "main", "atSeq": 10_000}), "n-3"),
        (request("c-1", "session/cancel", {"sessionId": "main"}), "c-1"),
        (request("f-1", "session/fork", {"sessionId": "main", "childSessionId": "alt"}), "f-1"),
        (request("f-2", "session/fork", {"sessionId": "main", "boundarySeq": 5}), "f-2"),
        (request("l-1", "session/list"), "l-1"),
        (request("h-4", "session/history", {"sessionId": "alt"}), "h-4"),
        (request("w-1", "session/working-directory/get", {"sessionId": "main"}), "w-1"),
        (request("r-1", "session/resume", {"sessionId": "ghost"}), "r-1"),
        (request("u-1", "no/such-method", {}), "u-1"),
        ("{not json", None),
        ('{"jsonrpc":"2.0","method":"session.event","params":{}}', None),
        ("[1,2]", None),
        ('{"jsonrpc":"2.0","id":"s-1","method":"session/list","params":{"x":"\\ud800"}}', "s-1"),
        (request(7, "session/list"), "7"),
        (request(2.5, "session/resume", {"sessionId": "main"}), "2.5"),
    ]


def step_done(end: str, frame: dict[str, Any]) -> bool:
    if end.startswith("idle:"):
        return frame.get("method") == "session.status" and frame["params"] == {
            "sessionId": end.removeprefix("idle:"),
            "status": "idle",
        }
    return "method" not in frame and json.dumps(frame.get("id")).strip('"') == end


async def test_one_script_gives_the_same_frames_over_stdio_and_the_websocket(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    stdio_root, web_root = tmp_path / "stdio", tmp_path / "web"

    async with running_server(stdio_root, cwd=work) as s:
        for sent, end in script_steps(work):
            await s.wire.send(sent if isinstance(sent, dict) else sent.encode() + b"\n")
            if end is not None:
                await s.wire.until(lambda f, end=end: step_done(end, f))
        stdio_lines = [line.decode() for line in s.wire.raw_lines]

    async with running_web(web_root, cwd=work) as web, web.client() as client:
        for sent, end in script_steps(work):
            await client.send(sent)
            if end is not None:
                await client.until(lambda f, end=end: step_done(end, f))
        web_lines = list(client.raw)

    assert len(stdio_lines) > 45
    assert normalised(web_lines, web_root) == normalised(stdio_lines, stdio_root)
    # the frames name what the script did: deltas, a reminder, both refusals, the fork child
    text = "\n".join(web_lines)
    for needle in ('"session.delta"', '"schedule/change"', '"invalid-time-zone"', '"subagent.started"',
                   '"unsupported-json"', '"unknown-method"', '"open-turn"'):
        assert needle in text
    # the same diagnostic on both, with each front door's prefix
    assert s.diagnostics == ["ignored a line that is not valid JSON (9 bytes)"]
    assert web.lines == ["turnlog web: ignored a line that is not valid JSON (9 bytes)"]


async def test_invalid_json_is_one_stderr_line(tmp_path: Path) -> None:
    async with running_web(tmp_path) as web, web.client() as client:
        await client.send("  {not json\r\n", "   ", request("l", "session/list"))
        await client.reply("l")
    assert web.lines == ["turnlog web: ignored a line that is not valid JSON (13 bytes)"]


# --- what only the WebSocket does -------------------------------------------------------------------


async def test_a_binary_message_closes_with_1003_and_is_not_answered(tmp_path: Path) -> None:
    async with running_web(tmp_path) as web, web.client() as client:
        await client.send(json.dumps(prompt("p", "main", "hi")).encode())
        reason = await client.closed()
        assert (reason.code, reason.reason) == (1003, "binary messages are not accepted")
        assert client.seen == []
    assert not (tmp_path / "main.jsonl").exists() and web.host.live("main") is None


async def test_a_message_over_the_limit_closes_with_1009(tmp_path: Path) -> None:
    async with running_web(tmp_path, max_message_bytes=1024) as web:
        async with web.client() as client:
            await client.send(prompt("p", "main", "x" * 1100))
            reason = await client.closed()
            assert reason.code == 1009 and client.seen == []
        async with web.client() as client:  # the server serves on; a message at the limit is fine
            small = prompt("q", "main", "")
            small["params"]["contentBlocks"][0]["text"] = "y" * (1024 - len(json.dumps(small, separators=(",", ":"))))
            await client.send(small)
            assert len(client.raw) == 0
            await client.reply("q")
    assert not any("x" * 100 in e.to_json().decode() for e in read_log(tmp_path / "main.jsonl").events)


async def test_shutdown_is_not_available_over_the_web(tmp_path: Path) -> None:
    async with running_web(tmp_path) as web, web.client() as client:
        await client.send(request("s", "shutdown"))
        assert await client.reply("s") == {
            "jsonrpc": "2.0",
            "id": "s",
            "error": {
                "code": -32603,
                "message": "shutdown is not available over the web transport; stop turnlog web with Ctrl-C",
                "data": {"code": "not-available"},
            },
        }
        await client.send(prompt("p", "main", "hi"))
        await client.idle("main")  # it still serves
    assert web.served[0].exit_code == 0


async def test_a_client_that_does_not_read_is_closed_with_1013(tmp_path: Path) -> None:
    """Replies pile up while the client reads nothing; past 32 MiB the socket closes with 1013,
    without the rest of the queue. The host never waited, and the prompt stays admitted."""
    big = "z" * 60_000
    async with running_web(tmp_path) as web:
        async with web.client() as writer:
            for index in range(40):  # about 2.4 MB of log to page through
                await writer.send(prompt(f"p-{index}", "main", big))
            for index in range(40):
                await writer.reply(f"p-{index}")
        live = web.host.live("main")
        assert live is not None
        with trio.fail_after(60):
            while live.status != "idle" or live.session.events[-1].type != "turn/end":
                await trio.sleep(0.05)
        async with web.client() as slow:
            page = request("h", "session/history", {"sessionId": "main", "limit": 10000})
            for index in range(40):  # ~100 MB of replies, never read meanwhile
                page["id"] = f"h-{index}"
                await slow.send(page)
            await slow.send(prompt("after", "main", "still admitted"))
            received = 0
            with trio.fail_after(60):
                while True:
                    try:
                        await slow.socket.get_message()
                        received += 1
                    except trio_websocket.ConnectionClosed as closed:
                        assert closed.reason is not None
                        assert (closed.reason.code, closed.reason.reason) == (1013, "client too slow; reconnect")
                        break
            assert received < 40
        with trio.fail_after(60):
            while not any("still admitted" in e.to_json().decode() for e in live.session.events):
                await trio.sleep(0.05)
        async with web.client() as fresh:  # others are served as before
            await fresh.send(request("l", "session/list"))
            assert "result" in await fresh.reply("l")


# --- several tabs ---------------------------------------------------------------------------------


async def test_every_connection_gets_every_notification_and_deltas_only_when_asked(tmp_path: Path) -> None:
    async with running_web(tmp_path) as web, web.client() as a, web.client() as b:
        await a.send(request("i", "initialize", {"streamDeltas": True}))
        await a.reply("i")
        await b.send(prompt("p", "main", "a reply long enough for several deltas"))
        a_frames = await a.idle("main")
        b_frames = await b.idle("main")
    assert events_of(a_frames) == events_of(b_frames) and len(events_of(a_frames)) == 9
    assert any(f.get("method") == "session.delta" for f in a_frames)
    assert not any(f.get("method") == "session.delta" for f in b_frames)
    assert [f["id"] for f in b_frames if "id" in f] == ["p"]  # the reply goes to the sender only
    assert not any("id" in f for f in a_frames if f.get("method") is None and f.get("id") == "p")


def drained(connection: Connection) -> list[bytes]:
    frames = []
    while True:
        try:
            frames.append(connection.output.receive_nowait())
        except trio.WouldBlock:
            return frames


async def test_a_notification_is_encoded_once_for_every_connection(tmp_path: Path) -> None:
    """Every connection forwards a notification as the very same bytes object (web §5.2): the
    host's fan-out encodes it once, not once per tab."""
    async with running_web(tmp_path) as web, web.client() as sender:
        tabs = [Connection(web.host, shutdown=lambda r: None, diagnostic=lambda line: None) for _ in range(3)]
        for tab in tabs:
            tab.stream_deltas = True
            tab.subscribe()
        await sender.send(prompt("p", "main", "a reply long enough for several deltas"))
        await sender.idle("main")
        for tab in tabs:
            tab.unsubscribe()
    first, *others = [drained(tab) for tab in tabs]
    assert any(b'"session.delta"' in frame for frame in first)
    assert len([f for f in first if b'"session.event"' in f]) == 9
    for frames in others:
        assert len(frames) == len(first)
        assert all(mine is theirs for mine, theirs in zip(frames, first, strict=True))


async def test_a_tab_that_does_not_read_holds_up_no_other(tmp_path: Path) -> None:
    """web §5.2: each socket drains its own queue. While one client reads nothing and its
    socket's buffers are full (megabytes still queued for it), another client's prompt is answered
    and its turn streams to the end (a fan-out waiting on each socket in turn would hang here)."""
    big = "z" * 60_000
    async with running_web(tmp_path) as web:
        async with web.client() as writer:
            for index in range(40):  # about 2.4 MB of log
                await writer.send(prompt(f"p-{index}", "main", big))
            for index in range(40):
                await writer.reply(f"p-{index}")
            await writer.idle("main")
        async with web.client() as stuck, web.client() as other:
            page = request("h", "session/history", {"sessionId": "main", "limit": 10000})
            for index in range(4):  # about 20 MB of replies, under the 32 MiB limit, never read
                page["id"] = f"h-{index}"
                await stuck.send(page)
            await other.send(prompt("q", "main", "hi"))
            with trio.fail_after(20):
                await other.reply("q")
                frames = await other.idle("main")
            assert [f["params"]["event"]["type"] for f in frames if f.get("method") == "session.event"][-1] == "turn/end"
            with trio.fail_after(60):  # nothing was dropped: the stuck client still gets every reply
                replies = [await stuck.reply(f"h-{index}") for index in range(4)]
            assert all(len(r["result"]["events"]) > 40 for r in replies)


async def test_admissions_keep_arrival_order_across_connections(tmp_path: Path) -> None:
    async with running_web(tmp_path) as web, web.client() as a, web.client() as b:
        for index in range(6):
            client = a if index % 2 == 0 else b
            await client.send(prompt(f"p-{index}", "main", f"prompt {index}"))
            await client.reply(f"p-{index}")
    texts = [
        e.value()["inserted"][0]["content"][0]["text"]
        for e in read_log(tmp_path / "main.jsonl").events
        if e.type == "agent/inbox/spliced" and e.value().get("inserted")
    ]
    assert texts == [f"prompt {index}" for index in range(6)]


# --- the additions over the WebSocket ----------------------------------------------------------------


class HoldFirst(ScriptedAdapter):
    """Rules mode, except that the first request waits (after ``started``) until cancelled."""

    def __init__(self) -> None:
        super().__init__()
        self.started = trio.Event()

    async def stream(self, request: ModelRequest) -> AsyncIterator[Chunk | Mapping[str, Any]]:
        if not self.started.is_set():
            self.started.set()
            await trio.sleep_forever()
        async for chunk in super().stream(request):
            yield chunk


async def test_cancel_inspect_and_before_seq_over_the_websocket(tmp_path: Path) -> None:
    adapter = HoldFirst()
    async with running_web(tmp_path, adapter=adapter) as web, web.client() as client:
        await client.send(prompt("p-1", "main", "first"))
        with trio.fail_after(20):
            await adapter.started.wait()
        await client.send(prompt("p-2", "main", "queued"))
        await client.reply("p-2")
        await client.send(request("n", "session/inspect", {"sessionId": "main"}))
        state = (await client.reply("n"))["result"]
        assert state["openTurn"] == {"turn": 1, "step": 1} and state["live"] is True
        assert [m["content"][0]["text"] for m in state["inbox"]["next-turn"]] == ["queued"]
        await client.send(request("c", "session/cancel", {"sessionId": "main"}))
        assert (await client.reply("c"))["result"] == {"cancelled": True}
        frames = await client.idle("main")
        ends = [e["data"]["reason"] for e in events_of(frames) if e["type"] == "turn/end"]
        assert ends == [{"kind": "aborted", "reason": {"kind": "user"}}, {"kind": "completed"}]
        await client.send(request("h", "session/history", {"sessionId": "main", "beforeSeq": MAX, "limit": 2}))
        page = (await client.reply("h"))["result"]
        count = len(web.host.live("main").session.events)  # type: ignore[union-attr]
        assert [e["seq"] for e in page["events"]] == [count - 2, count - 1] and page["done"] is True


# --- handshakes and the fence ----------------------------------------------------------------------


async def test_refused_handshakes_get_the_http_answer_and_dispatch_nothing(tmp_path: Path) -> None:
    async with running_web(tmp_path) as web:
        port = web.binding.port
        cases = [
            ([], 401, "unauthorized: open the link printed by turnlog web\n", "no valid credential"),
            ([(b"Authorization", b"Bearer wrong")], 401, None, "no valid credential"),
            (web.cookie("not-the-key"), 401, None, "no valid credential"),
            ([*web.cookie(), (b"Origin", b"http://evil.example")], 403, "forbidden: cross-origin request\n",
             "cross-origin request"),
            ([*web.bearer(), (b"Sec-Fetch-Site", b"cross-site")], 403, "forbidden: cross-site request\n",
             "cross-site request"),
        ]
        for headers, status, body, rule in cases:
            with pytest.raises(trio_websocket.ConnectionRejected) as rejected:
                async with web.client(headers):
                    pass
            assert rejected.value.status_code == status
            if body is not None:
                assert rejected.value.body == body.encode()
            names = {name.lower() for name, _ in rejected.value.headers}
            assert b"content-security-policy" in names and b"server" not in names
            assert web.lines[-1] == f"turnlog web: refused GET /rpc: {rule}"
        # Host is checked before anything else (DNS rebinding)
        other_port = port + 1 if port < 65535 else port - 1
        for forged in (f"evil.example:{port}", f"127.0.0.1:{other_port}"):
            answer = await websocket_handshake(web.base, {"Host": forged, "Authorization": f"Bearer {web.launch_token}"})
            assert (answer.status_code, answer.text) == (403, "forbidden: unexpected Host header\n")
            assert web.lines[-1] == "turnlog web: refused GET /rpc: unexpected Host header"
        async with web.client(web.cookie()) as client:  # the browser's way in
            await client.send(request("l", "session/list"))
            assert (await client.reply("l"))["result"] == {"sessions": [], "skipped": []}
    assert list(tmp_path.iterdir()) == []


async def websocket_handshake(base: str, headers: dict[str, str]) -> httpx.Response:
    """A raw WebSocket handshake to ``/rpc`` with ``headers`` (which may forge ``Host``)."""
    upgrade = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    }
    async with httpx.AsyncClient() as http:
        return await http.get(f"{base}/rpc", headers={**upgrade, **headers})


# --- stopping ---------------------------------------------------------------------------------------


async def test_stopping_refuses_requests_and_closes_sockets_with_1001(tmp_path: Path) -> None:
    async with running_web(tmp_path) as web, web.client() as client:
        await client.send(prompt("p", "main", "hi"))
        await client.idle("main")
        web.stop.request(0)
        reason = await client.closed()
        assert (reason.code, reason.reason) == (1001, "turnlog web is stopping")
    assert web.served[0].exit_code == 0 and web.served[0].report.ok
    assert web.host.live("main") is None  # flushed and closed: the lock is released
    assert [e.type for e in read_log(tmp_path / "main.jsonl").events][-1] == "turn/end"


async def test_a_transport_bug_closes_that_socket_with_1011_and_the_server_serves_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real = Connection.receive

    async def receive(self: Connection, line: bytes, nursery: trio.Nursery) -> None:
        if line == b"boom":
            raise RuntimeError("a transport bug")
        await real(self, line, nursery)

    monkeypatch.setattr(Connection, "receive", receive)
    async with running_web(tmp_path) as web, web.client() as broken, web.client() as other:
        await broken.send("boom")
        reason = await broken.closed()
        assert reason.code == 1011
        await other.send(request("l", "session/list"))
        assert "result" in await other.reply("l")
    (record,) = [r for r in caplog.records if r.name == "host.web"]
    assert record.getMessage() == "internal error in the WebSocket transport"
    assert record.exc_info is not None and "RuntimeError: a transport bug" in caplog.text
