"""The HTTP surface of ``turnlog web`` in process (web §3, web §4): routes, media types, the
fence on every request, sign-in, the two reads, and the headers every response carries."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from eventlog import read_header
from eventlog._zstd import scan_frames
from host._process import package_version, process_instance
from host.web.app import MEDIA_TYPES, load_page, with_version
from tests.eventlog.zstd_support import cli_decompress, reference_root, zstd_program
from tests.fixture_paths import DSH_FIXTURES
from tests.host.rpc_support import prompt, request
from tests.web.conftest import STATIC
from tests.web.server_support import WebServer, running_web

SECURITY = [
    "x-content-type-options",
    "referrer-policy",
    "cross-origin-opener-policy",
    "cross-origin-resource-policy",
    "cache-control",
    "content-security-policy",
]


def csp(authority: str) -> str:
    return (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src 'self' ws://{authority}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )


def check_headers(response: httpx.Response, authority: str, *, static: bool = False) -> None:
    headers = response.headers
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["cross-origin-opener-policy"] == "same-origin"
    assert headers["cross-origin-resource-policy"] == "same-origin"
    assert headers["cache-control"] == ("no-cache" if static else "no-store")
    assert headers["content-security-policy"] == csp(authority)
    assert "server" not in headers
    for name in SECURITY:
        assert len(headers.get_list(name)) == 1, name


async def get(web: WebServer, path: str, **kwargs: object) -> httpx.Response:
    async with httpx.AsyncClient(base_url=web.base) as http:
        return await http.request(str(kwargs.pop("method", "GET")), path, **kwargs)  # type: ignore[arg-type]


async def test_the_page_and_its_files(tmp_path: Path) -> None:
    async with running_web(tmp_path) as web:
        for path in ("/", "/s/main", "/s/a.b_c-1/log", "/s/main/log?seq=4"):
            page = await get(web, path)
            assert page.status_code == 200, path
            assert page.headers["content-type"] == "text/html; charset=utf-8"
            assert f'<meta name="turnlog-version" content="{package_version()}">' in page.text
            check_headers(page, web.authority)
        for name in sorted(p.name for p in STATIC.iterdir() if p.name != "index.html"):
            response = await get(web, f"/static/{name}")
            assert response.status_code == 200, name
            assert response.headers["content-type"] == MEDIA_TYPES[name[name.rfind("."):]]
            assert response.content == (STATIC / name).read_bytes()
            check_headers(response, web.authority, static=True)
        icon = await get(web, "/favicon.svg")
        assert (icon.status_code, icon.headers["content-type"]) == (200, "image/svg+xml")
        assert icon.content == (STATIC / "favicon.svg").read_bytes()
        for path in ("/static/index.html", "/static/nothing.js", "/static/", "/static/../app.js",
                     "/s/%2E%2E", "/s/-dash", "/s/main/", "/s/main/log/x", "/s/" + "a" * 129, "/nowhere", "/api",
                     "/api/sessions/main"):
            response = await get(web, path)
            assert response.status_code == 404, path
            assert response.headers["content-type"].startswith("text/plain")
            check_headers(response, web.authority, static=response.url.path.startswith("/static/"))
        for method, path in (("POST", "/"), ("PUT", "/s/main"), ("DELETE", "/static/app.js"), ("GET", "/auth"),
                             ("POST", "/api/whoami")):
            response = await get(web, path, method=method)
            assert response.status_code == 405, (method, path)
            check_headers(response, web.authority, static=response.url.path.startswith("/static/"))
        head = await get(web, "/", method="HEAD")
        assert head.status_code == 200 and head.content == b""
    assert web.lines == []  # nothing above was a refusal


def test_the_version_meta_goes_right_after_the_charset() -> None:
    index = (STATIC / "index.html").read_bytes()
    served = with_version(index, '1.0"<x>')
    assert served.count(b"turnlog-version") == 1
    assert b'<meta charset="utf-8">\n<meta name="turnlog-version" content="1.0&quot;&lt;x&gt;">\n' in served
    assert served.replace(b'<meta name="turnlog-version" content="1.0&quot;&lt;x&gt;">\n', b"") == index
    page = load_page("9.9")
    assert set(page.files) == {p.name for p in STATIC.iterdir()} - {"index.html"}
    with pytest.raises(ValueError):
        with_version(b"<html></html>", "1")


async def test_the_fence_answers_before_anything_else(tmp_path: Path) -> None:
    async with running_web(tmp_path) as web:
        port = web.binding.port
        allowed = [f"127.0.0.1:{port}", f"localhost:{port}", f"LocalHost:{port}"]
        for host in allowed:
            response = await get(web, "/", headers={"Host": host})
            assert response.status_code == 200, host
            assert response.headers["content-security-policy"] == csp(host)
        refused = [
            ({"Host": f"evil.example:{port}"}, "unexpected Host header"),
            ({"Host": f"127.0.0.1:{port + 1}"}, "unexpected Host header"),
            ({"Host": "127.0.0.1"}, "unexpected Host header"),
            ({"Host": f"[::1]:{port}"}, "unexpected Host header"),
            ({"Origin": "http://evil.example"}, "cross-origin request"),
            ({"Origin": "null"}, "cross-origin request"),
            ({"Origin": f"https://127.0.0.1:{port}"}, "cross-origin request"),
            ({"Sec-Fetch-Site": "cross-site"}, "cross-site request"),
            ({"Sec-Fetch-Site": "same-site"}, "cross-site request"),
        ]
        for path in ("/", "/auth", "/api/whoami", "/static/app.js"):
            for headers, rule in refused:
                method = "POST" if path == "/auth" else "GET"
                body = json.dumps({"token": web.launch_token}) if path == "/auth" else None
                sent = {"Origin": web.base, **headers} if path == "/auth" else headers  # /auth needs one
                response = await get(web, path, method=method, headers={**sent, "content-type": "application/json"},
                                     content=body)
                assert response.status_code == 403, (path, headers)
                assert response.text == f"forbidden: {rule}\n"
                assert response.headers["content-type"] == "text/plain; charset=utf-8"
                assert "set-cookie" not in response.headers
                # the CSP never names a Host the fence refused
                assert response.headers["content-security-policy"] == csp(web.authority)
                assert web.lines[-1] == f"turnlog web: refused {method} {path}: {rule}"
        for site in ("same-origin", "none"):
            assert (await get(web, "/", headers={"Sec-Fetch-Site": site})).status_code == 200
        assert (await get(web, "/", headers={"Origin": f"HTTP://LOCALHOST:{port}", "Host": f"localhost:{port}"})).status_code == 200
    assert list(tmp_path.iterdir()) == []


async def test_sign_in(tmp_path: Path) -> None:
    async with running_web(tmp_path) as web:
        origin = {"Origin": web.base}
        json_type = {"content-type": "application/json"}
        token = json.dumps({"token": web.launch_token})
        cases = [
            ({**json_type}, token, 403, "forbidden: cross-origin request\n"),  # no Origin
            ({**origin, "content-type": "text/plain"}, token, 415, None),
            ({**origin}, token, 415, None),
            ({**origin, **json_type}, "{}", 400, None),
            ({**origin, **json_type}, '{"token":1}', 400, None),
            ({**origin, **json_type}, '{"token":"x","more":1}', 400, None),
            ({**origin, **json_type}, "not json", 400, None),
            ({**origin, **json_type}, json.dumps({"token": "x" * 1100}), 400, None),
            ({**origin, **json_type}, '{"token":"wrong"}', 401, "unauthorized: open the link printed by turnlog web\n"),
        ]
        for headers, body, status, text in cases:
            response = await get(web, "/auth", method="POST", headers=headers, content=body)
            assert response.status_code == status, (headers, body)
            assert "set-cookie" not in response.headers
            if text is not None:
                assert response.text == text
            check_headers(response, web.authority)
        assert web.lines == [
            "turnlog web: refused POST /auth: cross-origin request",
            "turnlog web: refused POST /auth: no valid credential",
        ]
        signed = await get(web, "/auth", method="POST", headers={**origin, "content-type": "application/json; charset=utf-8"},
                           content=token)
        assert signed.status_code == 204 and signed.content == b""
        cookie = signed.headers["set-cookie"]
        name, _, rest = cookie.partition("=")
        value, *attributes = [part.strip() for part in rest.split(";")]
        assert (name, value) == (f"turnlog-web-{web.binding.port}", web.browser_key)
        assert {a.lower() for a in attributes} == {"path=/", "httponly", "samesite=strict"}
        check_headers(signed, web.authority)
        assert web.launch_token not in json.dumps(dict(signed.headers))


async def test_whoami_and_the_download(tmp_path: Path) -> None:
    async with running_web(tmp_path) as web:
        for path in ("/api/whoami", "/api/sessions/main.jsonl", "/rpc"):
            response = await get(web, path)
            assert (response.status_code, response.text) == (401, "unauthorized: open the link printed by turnlog web\n")
            assert web.lines[-1] == f"turnlog web: refused GET {path}: no valid credential"
            wrong = await get(web, path, headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401
        bearer = {"Authorization": f"Bearer {web.launch_token}"}
        cookie = {"Cookie": f"turnlog-web-{web.binding.port}={web.browser_key}"}
        for credential in (bearer, cookie):
            who = await get(web, "/api/whoami", headers=credential)
            assert who.status_code == 200 and who.headers["content-type"] == "application/json"
            assert who.content == json.dumps(
                {"version": package_version(), "instance": process_instance()}, separators=(",", ":")
            ).encode()
            check_headers(who, web.authority)
        assert (await get(web, "/rpc", headers=bearer)).status_code == 426
        async with web.client() as client:
            await client.send(request("i", "initialize"))
            assert (await client.reply("i"))["result"]["turnlog"]["instance"] == process_instance()
            await client.send(prompt("p", "main", "grüße"))
            await client.idle("main")
        await web.host.live("main").session.flush()  # type: ignore[union-attr]
        download = await get(web, "/api/sessions/main.jsonl", headers=cookie)
        assert download.status_code == 200
        assert download.content == (tmp_path / "main.jsonl").read_bytes()
        assert download.headers["content-type"] == "application/x-ndjson"
        assert download.headers["content-disposition"] == 'attachment; filename="main.jsonl"'
        check_headers(download, web.authority)
        assert (await get(web, "/api/sessions/ghost.jsonl", headers=bearer)).status_code == 404
        assert (await get(web, "/api/sessions/a%20b.jsonl", headers=bearer)).status_code == 404
    assert not re.search(re.escape(web.launch_token) + "|" + re.escape(web.browser_key), "\n".join(web.lines))


async def test_the_download_of_a_zstd_session_is_its_jsonl(tmp_path: Path) -> None:
    """A session in a reference-style Zstandard root downloads as the ``.jsonl`` the button
    promises: the raw log ``zstd -dc`` gives back (dsh-roots §4); a log whose frames cannot be
    decoded comes as it is on disk, under a ``.jsonl.zstd`` name."""
    raw = DSH_FIXTURES / "fork-parent.jsonl"
    (path,) = reference_root(tmp_path / "root", [raw], "zstd")
    session_id = read_header(path).id
    async with running_web(tmp_path / "root") as web:
        bearer = {"Authorization": f"Bearer {web.launch_token}"}
        download = await get(web, f"/api/sessions/{session_id}.jsonl", headers=bearer)
        assert download.status_code == 200
        assert download.content == raw.read_bytes() == cli_decompress(zstd_program(), path.read_bytes())
        assert download.headers["content-type"] == "application/x-ndjson"
        assert download.headers["content-disposition"] == f'attachment; filename="{session_id}.jsonl"'
        damaged = bytearray(path.read_bytes())
        damaged[scan_frames(damaged).frames[1].start] ^= 0xFF  # frame 1's magic: undecodable
        path.write_bytes(bytes(damaged))
        download = await get(web, f"/api/sessions/{session_id}.jsonl", headers=bearer)
        assert (download.status_code, download.content) == (200, bytes(damaged))
        assert download.headers["content-type"] == "application/zstd"
        assert download.headers["content-disposition"] == f'attachment; filename="{session_id}.jsonl.zstd"'
        check_headers(download, web.authority)
