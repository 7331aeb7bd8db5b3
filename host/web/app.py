"""The HTTP surface of ``turnlog web`` (web §3, web §4): a Starlette application behind the fence.

:class:`WebApp` is the ASGI application Hypercorn serves. Every HTTP request and every WebSocket
handshake passes :func:`~host.web.fence.check_fence` first; a refusal is answered at once (a
WebSocket before it is accepted, as an ASGI ``websocket.http.response``) with one stderr line, and
nothing else runs. Every response, refusals and errors included, carries the security headers of
web §3 and no ``server`` header. Behind the fence, Starlette routes the page, its static files,
the sign-in, two small JSON reads and the ``/rpc`` WebSocket, which :mod:`host.web.transport`
serves.

The page is read from the package once, when the application is made; ``index.html`` gets the
``turnlog-version`` meta element then.
"""

from __future__ import annotations

import importlib.resources
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

import trio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import Message, Receive, Scope, Send
from starlette.websockets import WebSocket

from eventlog import CorruptLog, log_text
from host._process import package_version, process_instance
from host.runtime import Host, HostError, check_session_id

from .fence import (
    UNAUTHORIZED,
    Binding,
    Refusal,
    auth_cookie,
    check_auth_post,
    check_credential,
    check_fence,
    refusal_line,
    security_headers,
)
from .transport import Transport

__all__ = ["MEDIA_TYPES", "Page", "WebApp", "load_page"]

MEDIA_TYPES: Final = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
"""The media type of each static file, by suffix (web §3); a name with another suffix is 404."""

_VERSION_META_AFTER: Final = b'<meta charset="utf-8">\n'


@dataclass(frozen=True, slots=True)
class Page:
    """The page as served: ``index.html`` with its version meta element, and the static files by
    name with their media types."""

    index: bytes
    files: Mapping[str, tuple[bytes, str]]


def with_version(index: bytes, version: str) -> bytes:
    """``index.html`` with ``<meta name="turnlog-version" content="<version>">`` inserted right after
    its charset declaration (web §3), the version's characters escaped for an attribute."""
    escaped = (
        version.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    )
    meta = f'<meta name="turnlog-version" content="{escaped}">\n'.encode()
    head, found, rest = index.partition(_VERSION_META_AFTER)
    if not found:
        raise ValueError("index.html has no <meta charset> line to put the version after")
    return head + found + meta + rest


def load_page(version: str | None = None) -> Page:
    """Read the page from the package's ``static`` directory."""
    static = importlib.resources.files("host.web") / "static"
    files: dict[str, tuple[bytes, str]] = {}
    index = b""
    for entry in static.iterdir():
        name = entry.name
        if name == "index.html":
            index = entry.read_bytes()
            continue
        suffix = name[name.rfind(".") :] if "." in name else ""
        if suffix in MEDIA_TYPES:
            files[name] = (entry.read_bytes(), MEDIA_TYPES[suffix])
    return Page(with_version(index, version if version is not None else package_version()), files)


def is_session_id(value: str) -> bool:
    """Whether ``value`` follows the session id rule (host §4.2)."""
    try:
        check_session_id(value)
    except HostError:
        return False
    return True


def _text(status: int, body: str) -> PlainTextResponse:
    return PlainTextResponse(body + "\n", status_code=status)


_NOT_FOUND: Final = "not found"


class WebApp:
    """The ASGI application of one ``turnlog web`` process.

    ``binding`` is the bound address and real port; ``launch_token`` and ``browser_key`` are the
    two credentials (web §4.3); ``transport`` serves accepted WebSockets; ``diagnostic(line)``
    receives each stderr line (refusals). Requests never reach a route before the fence passed.
    """

    def __init__(
        self,
        host: Host,
        *,
        binding: Binding,
        launch_token: str,
        browser_key: str,
        transport: Transport,
        diagnostic: Callable[[str], None],
        page: Page | None = None,
    ) -> None:
        self.host = host
        self.binding = binding
        self._launch_token = launch_token
        self._browser_key = browser_key
        self.transport = transport
        self._diagnostic = diagnostic
        self.page = page if page is not None else load_page()
        routes = [
            Route("/", self._index, methods=["GET"]),
            Route("/s/{session_id}", self._index, methods=["GET"]),
            Route("/s/{session_id}/log", self._index, methods=["GET"]),
            Route("/favicon.svg", self._favicon, methods=["GET"]),
            Route("/static/{name}", self._static, methods=["GET"]),
            Route("/auth", self._auth, methods=["POST"]),
            Route("/api/whoami", self._whoami, methods=["GET"]),
            Route("/api/sessions/{session_id}.jsonl", self._download, methods=["GET"]),
            Route("/rpc", self._rpc_over_http, methods=["GET"]),
            WebSocketRoute("/rpc", self._rpc),
        ]
        self._app = Starlette(routes=routes)
        self._app.router.redirect_slashes = False
        self._app.router.default = self._not_found

    # --- ASGI ---------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self._app(scope, receive, send)
            return
        headers = scope["headers"]
        method = scope.get("method", "GET")
        require_origin = scope["type"] == "http" and method == "POST" and scope["path"] == "/auth"
        host = next((value.decode("latin-1") for key, value in headers if key == b"host"), "")
        static = scope["path"] == "/favicon.svg" or scope["path"].startswith("/static/")
        extra = [(name.encode(), value.encode()) for name, value in security_headers(host, self.binding, static=static)]

        async def send_with_headers(message: Message) -> None:
            if message["type"] in ("http.response.start", "websocket.http.response.start"):
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        refusal = check_fence(headers, self.binding, require_origin=require_origin)
        if refusal is not None:
            await self._refuse(scope, receive, send_with_headers, refusal)
            return
        await self._app(scope, receive, send_with_headers)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, refusal: Refusal) -> None:
        """Answer a refused request or handshake with its ``text/plain`` body; one stderr line."""
        self._diagnostic(refusal_line(scope.get("method", "GET"), scope["path"], refusal))
        response = _text(refusal.status, refusal.body)
        if scope["type"] == "websocket":
            await WebSocket(scope, receive, send).send_denial_response(response)
        else:
            await response(scope, receive, send)

    def _credential(self, scope: Scope) -> Refusal | None:
        return check_credential(
            scope["headers"],
            port=self.binding.port,
            browser_key=self._browser_key,
            launch_token=self._launch_token,
        )

    def _unauthorized(self, request: Request, refusal: Refusal) -> Response:
        self._diagnostic(refusal_line(request.method, request.url.path, refusal))
        return _text(refusal.status, refusal.body)

    async def _not_found(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = _text(404, _NOT_FOUND)
        if scope["type"] == "websocket":
            await WebSocket(scope, receive, send).send_denial_response(response)
        else:
            await response(scope, receive, send)

    # --- the page -----------------------------------------------------------------------------------

    async def _index(self, request: Request) -> Response:
        session_id = request.path_params.get("session_id")
        if session_id is not None and not is_session_id(session_id):
            return _text(404, _NOT_FOUND)
        return Response(self.page.index, media_type="text/html; charset=utf-8")

    async def _favicon(self, request: Request) -> Response:
        return self._file("favicon.svg")

    async def _static(self, request: Request) -> Response:
        return self._file(request.path_params["name"])

    def _file(self, name: str) -> Response:
        found = self.page.files.get(name)
        if found is None:
            return _text(404, _NOT_FOUND)
        body, media_type = found
        return Response(body, headers={"content-type": media_type})

    # --- sign-in and reads --------------------------------------------------------------------------

    async def _auth(self, request: Request) -> Response:
        """``POST /auth`` (web §3): media type, then body, then token; the right token signs in."""
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > 1024:
                break  # too long: check_auth_post answers 400 (unless the media type is wrong)
        answer = check_auth_post(request.headers.get("content-type"), body, self._launch_token)
        if answer.signed_in:
            response = Response(status_code=204)
            response.headers["set-cookie"] = auth_cookie(self.binding.port, self._browser_key)
            return response
        if answer.status == 401:
            self._diagnostic(refusal_line(request.method, request.url.path, UNAUTHORIZED))
        return _text(answer.status, answer.body)

    async def _whoami(self, request: Request) -> Response:
        refusal = self._credential(request.scope)
        if refusal is not None:
            return self._unauthorized(request, refusal)
        body = json.dumps({"version": package_version(), "instance": process_instance()}, separators=(",", ":"))
        return Response(body.encode(), media_type="application/json")

    async def _download(self, request: Request) -> Response:
        """The session's JSONL, read without a lock (web §3): a raw log's bytes verbatim; a
        Zstandard log (dsh-roots §4) decoded to the same text, so the download is always the
        ``.jsonl`` the button promises. A log whose frames cannot be decoded is sent as it is on
        disk, named ``<id>.jsonl.zstd``: nothing is withheld."""
        refusal = self._credential(request.scope)
        if refusal is not None:
            return self._unauthorized(request, refusal)
        session_id = request.path_params["session_id"]
        if not is_session_id(session_id):
            return _text(404, _NOT_FOUND)
        path = await self.host.store.find(session_id)  # locating lists a dsh root: not in the event loop
        if path is None:
            return _text(404, _NOT_FOUND)
        name, media = f"{session_id}.jsonl", "application/x-ndjson"
        try:
            try:
                data = await trio.to_thread.run_sync(log_text, path)
            except CorruptLog:
                data = await trio.to_thread.run_sync(path.read_bytes)
                name, media = f"{session_id}.jsonl.zstd", "application/zstd"
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return _text(404, _NOT_FOUND)
        return Response(
            data, media_type=media, headers={"content-disposition": f'attachment; filename="{name}"'}
        )

    # --- the WebSocket ------------------------------------------------------------------------------

    async def _rpc_over_http(self, request: Request) -> Response:
        refusal = self._credential(request.scope)
        if refusal is not None:
            return self._unauthorized(request, refusal)
        return _text(426, "upgrade required: /rpc is a WebSocket")

    async def _rpc(self, websocket: WebSocket) -> None:
        refusal = self._credential(websocket.scope)
        if refusal is not None:
            self._diagnostic(refusal_line("GET", websocket.url.path, refusal))
            await websocket.send_denial_response(_text(refusal.status, refusal.body))
            return
        await self.transport.serve(websocket)

