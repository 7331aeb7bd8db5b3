"""Scenario 5 of web §8 against a real ``turnlog web`` process: handshakes and sign-ins that the
fence refuses change nothing on disk, a page from another local port can neither open ``/rpc`` nor
get the cookie, and after a real sign-in and turn the launch token and browser key are in no session
file, stderr line, later stdout line, page storage, URL or leftover launch file."""

from __future__ import annotations

import base64
import http.client
import json
import os
from pathlib import Path
from typing import Any

from tests.web.process_support import WebProcess, free_port

WAIT_MS = 20_000  # only guards against a hang


def request(port: int, method: str, path: str, headers: dict[str, str], body: str | None = None) -> int:
    """The status of one request on a fresh connection (``Host`` as given, or the server's own)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in {"Host": f"127.0.0.1:{port}", **headers}.items():
            connection.putheader(name, value)
        data = body.encode() if body is not None else b""
        if body is not None:
            connection.putheader("Content-Length", str(len(data)))
        connection.endheaders(data if body is not None else None)
        response = connection.getresponse()
        assert response.getheader("set-cookie") is None
        return response.status
    finally:
        connection.close()


def upgrade(extra: dict[str, str]) -> dict[str, str]:
    key = base64.b64encode(os.urandom(16)).decode()
    return {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": key,
            "Sec-WebSocket-Version": "13", **extra}


def test_the_fence_refuses_strangers_and_the_secrets_stay_out_of_sight(
    tmp_path: Path, chromium: Any, static_origin: str
) -> None:
    root = tmp_path / "s"
    with WebProcess(tmp_path, root) as web:
        port, origin = web.port, web.origin
        cookie = f"turnlog-web-{port}"
        mine = {"Origin": origin}
        token_body = json.dumps({"token": web.token})
        cases: list[tuple[str, str, dict[str, str], str | None, int]] = [
            ("GET", "/rpc", upgrade({}), None, 401),
            ("GET", "/rpc", upgrade({"Authorization": "Bearer " + "x" * 43}), None, 401),
            ("GET", "/rpc", upgrade({"Cookie": f"{cookie}={'y' * 43}", **mine}), None, 401),
            ("GET", "/rpc", upgrade({"Cookie": f"{cookie}={web.key()}", "Origin": "http://evil.example"}), None, 403),
            ("GET", "/rpc", upgrade({"Cookie": f"{cookie}={web.key()}", **mine, "Sec-Fetch-Site": "cross-site"}),
             None, 403),
            ("POST", "/auth", {**mine, "content-type": "application/json"}, json.dumps({"token": "z" * 43}), 401),
            ("POST", "/auth", {**mine, "content-type": "text/plain"}, token_body, 415),
            ("POST", "/auth", {"content-type": "application/json"}, token_body, 403),
        ]
        for host in (f"evil.example:{port}", f"127.0.0.1:{free_port()}"):
            cases += [
                ("GET", "/", {"Host": host}, None, 403),
                ("POST", "/auth", {"Host": host, **mine, "content-type": "application/json"}, token_body, 403),
                ("GET", "/rpc", upgrade({"Host": host, "Authorization": f"Bearer {web.key()}"}), None, 403),
            ]
        for method, path, headers, body, status in cases:
            assert request(port, method, path, headers, body) == status, (method, path, headers)
        assert not root.exists() or list(root.iterdir()) == []

        # A page served from another local port: its WebSocket never opens, its no-cors post gets no cookie.
        context = chromium.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
        try:
            stranger = context.new_page()
            stranger.set_default_timeout(WAIT_MS)
            stranger.goto(f"{static_origin}/")
            outcome = stranger.evaluate(
                """async ([url, token]) => {
                    const ws = await new Promise((done) => {
                        const socket = new WebSocket(url);
                        socket.onopen = () => { socket.close(); done("open"); };
                        socket.onclose = () => done("closed");
                    });
                    await fetch(url.replace("ws:", "http:").replace("/rpc", "/auth"),
                        {method: "POST", mode: "no-cors", body: JSON.stringify({token})}).catch(() => null);
                    return ws;
                }""",
                [f"ws://127.0.0.1:{port}/rpc", web.token],
            )
            assert outcome == "closed"
            assert [c for c in context.cookies() if c["name"] == cookie] == []

            # The real flow: the link signs in, a turn runs, the token leaves the URL.
            page = context.new_page()
            page.set_default_timeout(WAIT_MS)
            problems: list[str] = []
            page.on("pageerror", lambda error: problems.append(f"pageerror: {error}"))
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.goto(web.url)
            page.get_by_role("textbox", name="Message").fill("hi")
            page.get_by_role("button", name="Send").click()
            page.get_by_role("log", name="Conversation").locator('[data-kind="assistant"]').first.wait_for()
            assert problems == []
            storage = page.evaluate("() => JSON.stringify([{...localStorage}, {...sessionStorage}])")
            seen_urls = [page.url, stranger.url]
        finally:
            context.close()
        key = web.key()
    assert web.proc.returncode == 0
    secrets = (web.token, key)
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files, "the turn wrote its session file"
    leftovers = [p.name for p in tmp_path.iterdir() if p.is_file() and p.name != "web-key"]
    for secret in secrets:
        assert all(secret not in p.read_text() for p in files)
        assert all(secret not in line for line in web.stderr + web.stdout[1:])
        assert secret not in storage and all(secret not in url for url in seen_urls)
    assert [name for name in leftovers if "launch" in name] == []
