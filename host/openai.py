"""The ``openai`` adapter: OpenAI-compatible chat completions over SSE (spec host.md §6.4).

The pure parts build the request (:func:`request_body`, :func:`chat_messages`,
:func:`request_headers`), decode SSE (:class:`SSEDecoder`), fold the stream's payloads into
chunks (:class:`StreamFolder`) and classify HTTP failures (:func:`http_failure`).
:class:`OpenAIAdapter` runs them on one ``httpx.AsyncClient`` (trio is supported through anyio).

Every expected failure is reported as a ``finish`` error chunk; the adapter raises only for
cancellation and for bugs.
"""

from __future__ import annotations

import datetime
import email.utils
import json
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing
from typing import Any

import httpx
import trio

from eventlog import SystemClock
from host.model import (
    EMPTY_RESPONSE_MESSAGE,
    Chunk,
    Failure,
    ModelRequest,
    failure_chunk,
    finish_chunk,
    make_failure,
)
from host.process import package_version
from schedule import compact_json

DEFAULT_STREAM_IDLE_TIMEOUT = 300.0
DEFAULT_CONNECT_TIMEOUT = 30.0
ERROR_BODY_LIMIT = 64 * 1024
_DRAIN_SECONDS = 0.5
_MAX_SAFE = 2**53 - 1


# --- request --------------------------------------------------------------------------------


def _texts(blocks: object) -> list[str]:
    if not isinstance(blocks, list):
        return []
    return [b["text"] for b in blocks if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)]


def _blocks(message: Mapping[str, Any], block_type: str) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, Mapping) and b.get("type") == block_type]


def chat_messages(system: str | None, history: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Map the derived history (log shapes) to chat-completions messages.

    A tool call left without a result before the next non-tool message (or at the end) gets a
    ``(no result recorded)`` tool message, because endpoints reject unanswered calls.
    """
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    unanswered: list[str] = []

    def answer_the_rest() -> None:
        for call_id in unanswered:
            out.append({"role": "tool", "tool_call_id": call_id, "content": "(no result recorded)"})
        unanswered.clear()

    for message in history:
        results = _blocks(message, "tool-result")
        if results:
            for block in results:
                call_id = block.get("toolCallId")
                out.append({"role": "tool", "tool_call_id": call_id, "content": "".join(_texts(block.get("content"))) or "(no output)"})
                if call_id in unanswered:
                    unanswered.remove(call_id)
            continue
        answer_the_rest()
        if message.get("role") == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": "".join(_texts(message.get("content")))}
            calls = _blocks(message, "tool-call")
            if calls:
                entry["tool_calls"] = [
                    {"id": c.get("id"), "type": "function", "function": {"name": c.get("name"), "arguments": c.get("arguments")}}
                    for c in calls
                ]
                unanswered.extend(c.get("id") for c in calls)
            out.append(entry)
        else:
            texts = _texts(message.get("content"))
            if texts:
                out.append({"role": "user", "content": "".join(texts)})
    answer_the_rest()
    return out


def request_body(request: ModelRequest) -> dict[str, Any]:
    """The request body, keys in the order of §6.4, absent ones omitted (never ``null``)."""
    body: dict[str, Any] = {
        "model": request.model,
        "messages": chat_messages(request.system, request.messages),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in request.tools
        ]
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    if request.reasoning_effort is not None:
        body["reasoning_effort"] = request.reasoning_effort
    return body


def request_headers(api_key: str | None) -> dict[str, str]:
    headers = {
        "content-type": "application/json",
        "accept": "text/event-stream",
        "user-agent": f"turnlog/{package_version()}",
    }
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return headers


# --- SSE ------------------------------------------------------------------------------------


class SSEDecoder:
    """Incremental SSE decoding: lines end with LF or CRLF, ``:`` comments are skipped, ``data:``
    values (one leading space stripped) are joined with LF until a blank line. Other fields are
    ignored, and events without data are dropped."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._data: list[str] = []

    def feed(self, data: bytes) -> list[str]:
        self._buffer += data
        events: list[str] = []
        while (end := self._buffer.find(b"\n")) >= 0:
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            self._line(line, events)
        return events

    def close(self) -> list[str]:
        """End of input: a final unterminated line and a pending event are delivered."""
        events: list[str] = []
        if self._buffer:
            line = bytes(self._buffer)
            self._buffer.clear()
            self._line(line, events)
        self._line(b"", events)
        return events

    def _line(self, raw: bytes, events: list[str]) -> None:
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if not raw:
            data = "\n".join(self._data)
            self._data.clear()
            if data:
                events.append(data)
            return
        line = raw.decode("utf-8", errors="replace")
        if line.startswith(":"):
            return
        name, _, value = line.partition(":")
        if name == "data":
            self._data.append(value[1:] if value.startswith(" ") else value)


# --- stream folding -------------------------------------------------------------------------


class StreamFailure(Exception):
    """A payload that ends the stream with a failure (malformed or error payload)."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure["message"])
        self.failure = failure


def _error_message(obj: Mapping[str, Any]) -> str | None:
    error = obj.get("error")
    if isinstance(error, Mapping) and isinstance(error.get("message"), str) and error["message"]:
        return error["message"]
    if isinstance(error, str) and error:
        return error
    message = obj.get("message")
    return message if isinstance(message, str) and message else None


def map_usage(usage: Mapping[str, Any]) -> dict[str, int]:
    """OpenAI usage → ``{"inputTokens","outputTokens"[,"cacheReadTokens"][,"reasoningTokens"]}``;
    cached prompt tokens are not counted as input."""

    def count(value: object) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    details = usage.get("prompt_tokens_details")
    cached = count(details.get("cached_tokens")) if isinstance(details, Mapping) else None
    if cached is None:
        cached = count(usage.get("prompt_cache_hit_tokens"))
    completion_details = usage.get("completion_tokens_details")
    reasoning = count(completion_details.get("reasoning_tokens")) if isinstance(completion_details, Mapping) else None
    mapped = {
        "inputTokens": (count(usage.get("prompt_tokens")) or 0) - (cached or 0),
        "outputTokens": count(usage.get("completion_tokens")) or 0,
    }
    if cached is not None:
        mapped["cacheReadTokens"] = cached
    if reasoning is not None:
        mapped["reasoningTokens"] = reasoning
    return mapped


class _ToolCall:
    __slots__ = ("index", "id", "name", "arguments")

    def __init__(self, index: int) -> None:
        self.index = index
        self.id = ""
        self.name = ""
        self.arguments = ""


_SURROGATE = re.compile("[\ud800-\udfff]")


def whole_text(text: str) -> str:
    """``text`` with each surrogate pair joined into its character and any lone surrogate
    replaced by U+FFFD. JSON carries lone halves as escapes, but a log cannot store them
    (eventlog §3.5), and servers split an emoji's pair across two payloads."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class StreamFolder:
    """Folds SSE payloads into chunks: ``choices[0]`` deltas open and extend one reasoning block,
    one text block and one block per tool-call ``index``; the last ``finish_reason`` and the latest
    ``usage`` are remembered for :meth:`end`."""

    def __init__(self, *, turn: int, step: int) -> None:
        self._turn = turn
        self._step = step
        self._kinds: list[str] = []  # block kinds by index
        self._text: dict[int, str] = {}
        self._held: dict[int, str] = {}  # a high surrogate per block, awaiting its low half
        self._reasoning_index: int | None = None
        self._text_index: int | None = None
        self._calls: dict[object, _ToolCall] = {}
        self._unindexed = 0
        self.finish_reason: str | None = None
        self.usage: dict[str, int] | None = None
        self.done = False

    def payload(self, data: str) -> list[Chunk]:
        """The chunks of one SSE event; raises :class:`StreamFailure` for a malformed or error payload."""
        if data == "[DONE]":
            self.done = True
            return []
        try:
            obj = json.loads(data)
        except ValueError:
            obj = None
        if not isinstance(obj, dict):
            raise StreamFailure(make_failure(f"malformed SSE payload: {data[:120]}", "MALFORMED_RESPONSE"))
        if obj.get("error") is not None:
            raise StreamFailure(make_failure(_error_message(obj) or "model API stream error", "STREAM_ERROR"))
        if isinstance(obj.get("usage"), Mapping):
            self.usage = map_usage(obj["usage"])
        choices = obj.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            return []
        choice = choices[0]
        if choice.get("finish_reason") is not None:
            self.finish_reason = str(choice["finish_reason"])
        delta = choice.get("delta")
        if not isinstance(delta, Mapping):
            return []
        chunks: list[Chunk] = []
        reasoning = delta.get("reasoning_content")
        if not (isinstance(reasoning, str) and reasoning):
            reasoning = delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            if self._reasoning_index is None:
                self._reasoning_index = self._open("reasoning", chunks)
            self._extend(self._reasoning_index, "reasoning-delta", reasoning, chunks)
        content = delta.get("content")
        if isinstance(content, str) and content:
            if self._text_index is None:
                self._text_index = self._open("text", chunks)
            self._extend(self._text_index, "text-delta", content, chunks)
        tool_calls = delta.get("tool_calls")
        if isinstance(tool_calls, list):
            for position, entry in enumerate(tool_calls):
                if isinstance(entry, Mapping):
                    chunks.append(self._tool_call_delta(position, entry, chunks))
        return chunks

    def end(self) -> list[Chunk]:
        """Block ends, usage and the finish once the stream is over (§6.4 Finish)."""
        if not self.done and self.finish_reason is None:
            return [failure_chunk(make_failure("model stream ended without [DONE]", "STREAM_CLOSED"))]
        reason = self.finish_reason
        calls = sorted(self._calls.values(), key=lambda c: c.index)
        if reason == "length":
            last = finish_chunk("max-tokens")
        elif reason in (None, "stop", "tool_calls", "function_call"):
            nameless = next((c for c in calls if not c.name), None)
            if nameless is not None:
                last = failure_chunk(make_failure(f"tool call {nameless.index} has no function name", "MALFORMED_RESPONSE"))
            elif calls:
                last = finish_chunk("tool-calls")
            elif self._kinds:
                last = finish_chunk("stop")
            else:
                last = failure_chunk(make_failure(EMPTY_RESPONSE_MESSAGE, "EMPTY_RESPONSE"))
        else:
            code = re.sub(r"[^A-Za-z0-9]", "_", reason.upper())
            last = failure_chunk(make_failure(f"model stopped: {reason}", code))
        held: list[Chunk] = []
        for index in sorted(self._held):  # a high half whose low half never came
            if self._kinds[index] == "tool-call":
                call = next(c for c in self._calls.values() if c.index == index)
                held.append(self._call_delta(call, self._piece(index, "", last=True)))
            else:
                self._extend(index, f"{self._kinds[index]}-delta", "", held, last=True)
        ends: list[Chunk] = [{"type": "block-end", "index": i, "block": self._block(i)} for i in range(len(self._kinds))]
        usage: list[Chunk] = [] if self.usage is None else [{"type": "usage", "usage": self.usage}]
        return [*held, *ends, *usage, last]

    def _open(self, kind: str, chunks: list[Chunk]) -> int:
        index = len(self._kinds)
        self._kinds.append(kind)
        chunks.append({"type": "block-start", "index": index, "blockType": kind})
        return index

    def _piece(self, index: int, text: str, *, last: bool = False) -> str:
        # What of ``text`` can be passed on now: a high surrogate at its end waits for the low
        # half the next payload may start with, unless ``last``.
        text = self._held.pop(index, "") + text
        if not last and text and "\ud800" <= text[-1] <= "\udbff":
            self._held[index] = text[-1]
            text = text[:-1]
        return whole_text(text)

    def _extend(self, index: int, chunk_type: str, text: str, chunks: list[Chunk], *, last: bool = False) -> None:
        piece = self._piece(index, text, last=last)
        if piece:
            self._text[index] = self._text.get(index, "") + piece
            chunks.append({"type": chunk_type, "index": index, "text": piece})

    def _tool_call_delta(self, position: int, entry: Mapping[str, Any], chunks: list[Chunk]) -> Chunk:
        function = entry.get("function")
        function = function if isinstance(function, Mapping) else {}
        call_id = entry.get("id") if isinstance(entry.get("id"), str) else ""
        name = function.get("name") if isinstance(function.get("name"), str) else ""
        arguments = function.get("arguments") if isinstance(function.get("arguments"), str) else ""
        key: object = entry.get("index")
        if not isinstance(key, int) or isinstance(key, bool):
            # Servers that omit `index` send each call whole; a new id means a new call.
            key = ("unindexed", self._unindexed)
            known = self._calls.get(key)
            if known is not None and call_id and known.id and call_id != known.id:
                self._unindexed += 1
                key = ("unindexed", self._unindexed)
        call = self._calls.get(key)
        if call is None:
            call = self._calls[key] = _ToolCall(self._open("tool-call", chunks))
        if not call.id:
            call.id = call_id
        if not call.name:
            call.name = name
        return self._call_delta(call, self._piece(call.index, arguments))

    def _call_delta(self, call: _ToolCall, arguments: str) -> Chunk:
        call.arguments += arguments
        delta: dict[str, Any] = {"type": "tool-call-delta", "index": call.index, "id": call.id}
        if call.name:
            delta["name"] = call.name
        delta["argumentsDelta"] = arguments
        return delta  # type: ignore[return-value]

    def _block(self, index: int) -> dict[str, Any]:
        kind = self._kinds[index]
        if kind != "tool-call":
            return {"type": kind, "text": self._text.get(index, "")}
        call = next(c for c in self._calls.values() if c.index == index)
        return {
            "type": "tool-call",
            "id": call.id or f"call-{self._turn}-{self._step}-{index}",
            "name": call.name,
            "arguments": call.arguments,
        }


# --- HTTP failures --------------------------------------------------------------------------

_CONTEXT_LENGTH = re.compile(r"context[ _-]?(length|window|size)", re.IGNORECASE)


def parse_retry_after(value: str | None, now_ms: int) -> int | None:
    """``Retry-After`` as milliseconds: delay seconds, or an HTTP date (a past date is 0).
    Anything else, or a value beyond a safe integer, is ``None``."""
    if value is None:
        return None
    value = value.strip()
    if re.fullmatch(r"[0-9]+(\.[0-9]+)?", value):
        ms = round(float(value) * 1000) if "." in value else int(value) * 1000
    else:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # a "-0000" zone: UTC without a claimed offset
            when = when.replace(tzinfo=datetime.timezone.utc)
        ms = max(0, round(when.timestamp() * 1000) - now_ms)
    return ms if ms <= _MAX_SAFE else None


def http_failure(status: int, headers: Mapping[str, str], body: bytes, url: str, now_ms: int) -> Failure:
    """Classify a non-success HTTP response (§6.4 Failures). ``headers`` is case-insensitive."""
    try:
        parsed = json.loads(body.decode("utf-8", errors="replace"))
    except ValueError:
        parsed = None
    obj: Mapping[str, Any] = parsed if isinstance(parsed, Mapping) else {}
    error = obj.get("error")
    fields = error if isinstance(error, Mapping) else obj
    code_value, type_value = fields.get("code"), fields.get("type")
    message = _error_message(obj)
    signals = [str(v) for v in (code_value, type_value, message) if v is not None]
    if status in (401, 403):
        code = "AUTH"
    elif any("insufficient_quota" in s for s in signals):
        code = "QUOTA"
    elif status == 429:
        code = "RATE_LIMIT"
    elif status == 400 and (code_value == "context_length_exceeded" or (message and _CONTEXT_LENGTH.search(message))):
        code = "CONTEXT_WINDOW_EXCEEDED"
    elif status in (400, 413):
        code = "INVALID_REQUEST"
    elif status == 408:
        code = "TIMEOUT"
    elif 500 <= status <= 599:
        code = "SERVER"
    else:
        code = f"HTTP_{status}"
    if status == 404:
        message = f"model endpoint not found (HTTP 404) at {url}"
    return make_failure(
        message or f"model API error (HTTP {status})",
        code,
        status=status,
        provider_retry_after_ms=parse_retry_after(headers.get("retry-after"), now_ms),
        request_id=headers.get("x-request-id") or None,
    )


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _detail(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


# --- the adapter ----------------------------------------------------------------------------


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
        now_ms: Callable[[], int] = SystemClock().now_ms,
    ) -> None:
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

    async def __aenter__(self) -> OpenAIAdapter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
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
                        response.status_code, response.headers, await _read_limited(response), self.url, self._now_ms()
                    )
                else:
                    decoder = SSEDecoder()
                    async with aclosing(response.aiter_bytes()) as parts:
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
            yield failure_chunk(failure)
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
    body = bytearray()
    try:
        async with aclosing(response.aiter_bytes()) as parts:
            async for part in parts:
                body += part
                if len(body) >= ERROR_BODY_LIMIT:
                    break
    except httpx.HTTPError:
        pass
    return bytes(body[:ERROR_BODY_LIMIT])
