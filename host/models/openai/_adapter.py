"""The ``openai`` adapter: the pure parts run on one ``httpx.AsyncClient`` (host §6.4).

httpx is imported when the first adapter is made, not with this module: every ``turnlog``
command imports host, and only a remote provider needs the HTTP client.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Self

import trio

from eventlog.values import SystemClock, compact_json

from .._adapter import ModelRequest
from .._chunks import Chunk, Failure, fail, make_failure
from ._failures import http_failure
from ._folding import StreamFailure, StreamFolder
from ._request import request_body, request_headers
from ._sse import SSEDecoder

if TYPE_CHECKING:
    import httpx

DEFAULT_STREAM_IDLE_TIMEOUT = 300.0
DEFAULT_CONNECT_TIMEOUT = 30.0
ERROR_BODY_LIMIT = 64 * 1024
_DRAIN_SECONDS = 0.5
_SYSTEM_CLOCK = SystemClock()


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


_ERRNO_WORDS = {
    errno.ECONNREFUSED: "connection refused",
    errno.ECONNRESET: "connection reset",
    errno.EHOSTUNREACH: "host unreachable",
    errno.ENETUNREACH: "network unreachable",
    errno.ETIMEDOUT: "connection timed out",
}


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, what caused it, and the members of any exception group among them."""
    seen: set[int] = set()
    pending = [exc]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)


def _detail(exc: BaseException) -> str:
    """What went wrong, in words a person recognises where the cause is a known socket error
    (``connection refused``, ``name not resolved: …``), else the exception's own text."""
    for cause in _causes(exc):
        if isinstance(cause, socket.gaierror):
            return f"name not resolved: {cause.strerror or cause}"
        if isinstance(cause, OSError) and cause.errno in _ERRNO_WORDS:
            return _ERRNO_WORDS[cause.errno]
    return str(exc) or type(exc).__name__


class OpenAIAdapter:
    """An OpenAI-compatible chat-completions endpoint at ``base_url`` (``/chat/completions`` is
    appended). ``stream_idle_timeout`` bounds the silence before the response and between reads;
    ``connect_timeout`` bounds connecting. Close it with :meth:`aclose` (or ``async with``)."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None = None,
        provider: str = "openai",
        stream_idle_timeout: float = DEFAULT_STREAM_IDLE_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        client: httpx.AsyncClient | None = None,
        now_ms: Callable[[], int] = _SYSTEM_CLOCK.now_ms,
    ) -> None:
        import httpx  # deferred: see the module docstring

        self.provider = provider
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self._headers = request_headers(api_key)
        self._idle = stream_idle_timeout
        self._timeout = httpx.Timeout(stream_idle_timeout, connect=connect_timeout, pool=None)
        self._client = client if client is not None else httpx.AsyncClient()
        self._now_ms = now_ms

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        import httpx

        body = compact_json(request_body(request)).encode("utf-8")
        folder = StreamFolder(turn=request.turn, step=request.step)
        responded = False
        failure: Failure | None = None
        try:
            async with self._client.stream(
                "POST", self.url, content=body, headers=self._headers, timeout=self._timeout
            ) as response:
                responded = True
                if not 200 <= response.status_code < 300:
                    failure = http_failure(
                        response.status_code,
                        response.headers,
                        await _read_limited(response),
                        self.url,
                        self._now_ms(),
                    )
                else:
                    decoder = SSEDecoder()
                    # httpx types aiter_bytes() as an AsyncIterator; it is an async generator (aclose).
                    async with aclosing(response.aiter_bytes()) as parts:  # type: ignore[type-var]
                        async for part in parts:
                            for chunk in _fold(decoder.feed(part), folder):
                                yield chunk
                            if folder.done:
                                break
                        if folder.done:
                            await _drain(parts)
                    if not folder.done:
                        for chunk in _fold(decoder.close(), folder):
                            yield chunk
        except StreamFailure as exc:
            failure = exc.failure
        except httpx.TimeoutException as exc:
            if isinstance(exc, httpx.ReadTimeout):
                failure = make_failure(f"no data from the model API for {_seconds(self._idle)} s", "TIMEOUT")
            else:
                failure = self._transport(responded, exc)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            failure = self._transport(responded, exc)
        if failure is not None:
            yield fail(failure)
            return
        for chunk in folder.end():
            yield chunk

    def _transport(self, responded: bool, exc: BaseException) -> Failure:
        if responded:
            return make_failure(f"model API stream from {self.base_url} failed: {_detail(exc)}", "TRANSPORT")
        return make_failure(f"model API request to {self.base_url} failed: {_detail(exc)}", "TRANSPORT")


async def _drain(parts: AsyncIterator[bytes]) -> None:
    """Read the rest of a body after ``[DONE]`` (normally nothing) so the connection can be
    reused; a slow or broken remainder is abandoned, since the response is already complete."""
    import httpx

    with trio.move_on_after(_DRAIN_SECONDS):
        try:
            async for _ in parts:
                pass
        except httpx.HTTPError:
            pass


def _fold(payloads: list[str], folder: StreamFolder) -> list[Chunk]:
    """The chunks of some SSE payloads, up to ``[DONE]``."""
    chunks: list[Chunk] = []
    for payload in payloads:
        chunks.extend(folder.payload(payload))
        if folder.done:
            break
    return chunks


async def _read_limited(response: httpx.Response) -> bytes:
    """Up to 64 KiB of an error body; a read failure keeps what arrived."""
    import httpx

    body = bytearray()
    try:
        async with aclosing(response.aiter_bytes()) as parts:  # type: ignore[type-var]  # as in stream()
            async for part in parts:
                body += part
                if len(body) >= ERROR_BODY_LIMIT:
                    break
    except httpx.HTTPError:
        pass
    return bytes(body[:ERROR_BODY_LIMIT])
