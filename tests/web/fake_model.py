"""A fake OpenAI-compatible model server for the browser tests (web §8 "Model in browser tests").

A real loopback HTTP server (stdlib ``http.server``, one thread per request) that serves
``POST /v1/chat/completions`` the way the host's ``openai`` adapter reads it (host §6.4): a
``text/event-stream`` of ``chat.completion.chunk`` payloads, a ``finish_reason``, a usage payload
and ``data: [DONE]``. It records every request body and answers from the test's script.

Start ``turnlog web`` against it with ``model.args`` (``--provider openai --model fake``) and
``model.env`` (``TURNLOG_BASE_URL=http://127.0.0.1:<port>/v1``; no API key is needed)::

    def test_x(tmp_path, fake_model):
        fake_model.script(
            tool_call("schedule_create", {"prompt": "stretch", "in": {"seconds": 5}}),
            text("Scheduled."),
        )
        with WebProcess(tmp_path, tmp_path / "s", *fake_model.args, env=fake_model.env) as web:
            ...
            first = fake_model.wait_requests(1)[0]
            assert "schedule_create" in first.tool_names

Replies (the script is a queue: each request takes the next entry):

- ``text(*pieces, delay=0.0)``: one ``content`` delta per piece (``delay`` seconds before each one
  after the first), finish ``stop``.
- ``tool_call(name, arguments, call_id=None)``: one call; ``arguments`` is a JSON value (sent
  compact) or a string sent as it is. ``tool_calls(ToolCall(...), ...)`` for several in one step.
  Finish ``tool_calls``.
- ``http_error(status, message)``: a non-streaming error response (e.g. 503 for a retry row).
- a callable ``Request -> Reply``: decides when the request arrives (it sees the body), for
  answers that depend on the request or on the time it arrives.
- ``reply.held(gate, after=n)``: the same reply, waiting at ``gate`` after its first ``n`` deltas
  (``n=0``: before the response starts, so the host waits for its first byte). A gate may appear
  more than once, and a reply may carry several gates.
- ``reply.late(seconds)``: the same reply after ``seconds`` without a byte (a slow server).
- ``reply.cut(after=n)``: the connection closes after ``n`` deltas, short of the body length it
  announced: a transport failure the host retries (an ``llm/retry``), so the next script entry
  answers the retry.

Holding::

    gate = Gate()
    fake_model.script(text("Hel", "lo", " there").held(gate, after=1))
    ...                              # the page sends a prompt
    gate.wait_reached()              # the response is held: "Hel" was sent, the turn is running
    ...                              # act while the model is "thinking"
    gate.release()                   # the rest streams

A held response whose client goes away (a stopped turn, a killed process) ends at once and sets
its request's ``closed`` event; ``fake_model.close()`` (the fixture does it) releases every gate.

Requests: ``fake_model.requests`` (a copy, in arrival order) and ``fake_model.wait_requests(n)``
(blocks until ``n`` have arrived). A :class:`Request` has ``headers``, ``body`` (the decoded JSON),
``messages``, ``tool_names``, ``text`` (every message's content joined with LF) and
``closed``. A request beyond the script gets an HTTP 400 naming it and is listed in
``fake_model.problems``, which the fixture requires to be empty at the end of a test.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

WAIT_S = 20.0  # only guards against a hang; never an assertion about speed
_POLL_S = 0.05  # how often a held response looks for its client having gone away
ARGS = ("--provider", "openai", "--model", "fake")


class FakeModelError(AssertionError):
    """The fake model was used in a way the test did not script, or a wait timed out."""


class Gate:
    """A point where a response waits until the test calls :meth:`release`."""

    def __init__(self) -> None:
        self._reached = threading.Event()
        self._released = threading.Event()

    @property
    def reached(self) -> bool:
        return self._reached.is_set()

    def wait_reached(self, timeout: float = WAIT_S) -> None:
        """Block until a response is held here."""
        if not self._reached.wait(timeout):
            raise FakeModelError(f"no response reached the gate within {timeout:g} s")

    def release(self) -> None:
        self._released.set()

    def _hold(self, client_gone: Callable[[], bool]) -> bool:
        """Wait for the release; False when the client went away first."""
        self._reached.set()
        while not self._released.wait(_POLL_S):
            if client_gone():
                return False
        return True


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: Any  # a JSON value, sent compact; a str is sent as it is
    call_id: str | None = None

    def argument_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class _Pause:
    seconds: float


@dataclass(frozen=True)
class _Cut:
    """The connection closes here, before the body it announced has all been sent."""


_Part = dict[str, Any] | Gate | _Pause | _Cut  # a delta, a hold, a pause, or the end of the line


@dataclass(frozen=True)
class Reply:
    """One response: ``parts`` are the ``choices[0].delta`` objects in order, with the gates and
    pauses between them; ``finish`` the ``finish_reason``. ``status`` other than 200 makes it an
    HTTP error with ``error_message``."""

    parts: tuple[_Part, ...] = ()
    finish: str = "stop"
    status: int = 200
    error_message: str = ""

    def held(self, gate: Gate, *, after: int = 0) -> Reply:
        """This reply, waiting at ``gate`` after its first ``after`` deltas."""
        return self._insert(gate, after)

    def late(self, seconds: float) -> Reply:
        """This reply, its status line included, sent only after ``seconds``."""
        return replace(self, parts=(_Pause(seconds), *self.parts))

    def cut(self, *, after: int) -> Reply:
        """This reply with its connection closed after its first ``after`` deltas: the host sees a
        transport failure mid-stream (``TRANSPORT``, retried) and never the rest."""
        return self._insert(_Cut(), after)

    def _insert(self, part: _Part, after: int) -> Reply:
        seen, position = 0, 0
        while seen < after:
            if position >= len(self.parts):
                raise FakeModelError(f"the reply has fewer than {after} deltas")
            seen += isinstance(self.parts[position], dict)
            position += 1
        return replace(self, parts=(*self.parts[:position], part, *self.parts[position:]))


def text(*pieces: str, delay: float = 0.0) -> Reply:
    """Text in one delta per piece, ``delay`` seconds apart."""
    if not pieces:
        raise FakeModelError("text() needs at least one piece")
    parts: list[_Part] = []
    for number, piece in enumerate(pieces):
        if number and delay:
            parts.append(_Pause(delay))
        parts.append({"content": piece})
    return Reply(tuple(parts))


def tool_calls(*calls: ToolCall) -> Reply:
    """Several calls in one step: per call, a delta with its id and name, then its arguments."""
    parts: list[_Part] = []
    for index, call in enumerate(calls):
        call_id = call.call_id or f"call_fake_{index}"
        head = {"index": index, "id": call_id, "type": "function", "function": {"name": call.name, "arguments": ""}}
        parts.append({"tool_calls": [head]})
        parts.append({"tool_calls": [{"index": index, "function": {"arguments": call.argument_text()}}]})
    return Reply(tuple(parts), finish="tool_calls")


def tool_call(name: str, arguments: Any, call_id: str | None = None) -> Reply:
    return tool_calls(ToolCall(name, arguments, call_id))


def http_error(status: int, message: str) -> Reply:
    return Reply(status=status, error_message=message)


Responder = Callable[["Request"], Reply]


@dataclass
class Request:
    """One request as it arrived: its number (from 0), path, headers (names in lower case) and
    decoded body."""

    index: int
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    closed: threading.Event = field(default_factory=threading.Event)

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self.body.get("messages", [])
        return messages

    @property
    def tool_names(self) -> list[str]:
        return [tool["function"]["name"] for tool in self.body.get("tools", [])]

    @property
    def text(self) -> str:
        return "\n".join(m["content"] for m in self.messages if isinstance(m.get("content"), str))


def _sse(payload: Mapping[str, Any] | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return f"data: {data}\n\n".encode()


class FakeModel:
    """The server; see the module docstring. Use it as a context manager (or the ``fake_model``
    fixture), which starts it and closes it."""

    args: Sequence[str] = ARGS

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._script: list[Reply | Responder] = []
        self._requests: list[Request] = []
        self._gates: list[Gate] = []
        self.problems: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass  # quiet: the tests look at requests and problems instead

            def do_POST(self) -> None:
                owner._serve(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(_POLL_S,), daemon=True)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def env(self) -> dict[str, str]:
        return {"TURNLOG_BASE_URL": self.base_url}

    def script(self, *entries: Reply | Responder) -> None:
        """Queue answers for the next requests, in order."""
        with self._lock:
            self._script.extend(entries)

    @property
    def requests(self) -> list[Request]:
        with self._lock:
            return list(self._requests)

    def wait_requests(self, count: int, timeout: float = WAIT_S) -> list[Request]:
        """The first ``count`` requests, once they have arrived."""
        with self._lock:
            if not self._lock.wait_for(lambda: len(self._requests) >= count, timeout):
                raise FakeModelError(f"{len(self._requests)} model requests arrived, not {count}")
            return list(self._requests[:count])

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release every gate, stop serving."""
        with self._lock:
            gates = list(self._gates)
        for gate in gates:
            gate.release()
        self._server.shutdown()
        self._server.server_close()

    # The request thread's side.

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        body = json.loads(handler.rfile.read(length)) if length else {}
        with self._lock:
            headers = {name.lower(): value for name, value in handler.headers.items()}
            request = Request(len(self._requests), handler.path, headers, body)
            self._requests.append(request)
            entry = self._script.pop(0) if self._script else None
            self._lock.notify_all()
        if handler.path != "/v1/chat/completions":
            self._problem(f"request {request.index} to {handler.path}, not /v1/chat/completions")
            self._send_error(handler, http_error(404, f"fake model: no route {handler.path}"))
            return
        if entry is None:
            self._problem(f"request {request.index} arrived with nothing left in the script")
            reply = http_error(400, f"fake model: no reply scripted for request {request.index}")
        elif isinstance(entry, Reply):
            reply = entry
        else:
            try:
                reply = entry(request)
            # Any failure of the test's callable is reported, and answered so the turn ends
            # instead of retrying or hanging.
            except Exception as exc:  # noqa: BLE001
                self._problem(f"the responder of request {request.index} raised {exc!r}")
                reply = http_error(400, f"fake model: the responder raised {exc!r}")
        with self._lock:
            self._gates.extend(part for part in reply.parts if isinstance(part, Gate))
        try:
            if reply.status != 200:
                self._send_error(handler, reply)
            else:
                self._stream(handler, request, reply)
        except (BrokenPipeError, ConnectionResetError):
            request.closed.set()

    def _problem(self, message: str) -> None:
        with self._lock:
            self.problems.append(message)

    def _send_error(self, handler: BaseHTTPRequestHandler, reply: Reply) -> None:
        payload = json.dumps({"error": {"message": reply.error_message, "type": "fake"}}).encode()
        handler.send_response(reply.status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def _stream(self, handler: BaseHTTPRequestHandler, request: Request, reply: Reply) -> None:
        connection: socket.socket = handler.connection

        def client_gone() -> bool:
            # The request body has been read, so a readable socket means the client closed it.
            readable, _, _ = select.select([connection], [], [], 0)
            return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""

        model = str(request.body.get("model", "fake"))
        base = {"id": f"chatcmpl-fake-{request.index}", "object": "chat.completion.chunk", "model": model}
        started = False

        def send(payload: Mapping[str, Any] | str) -> None:
            nonlocal started
            if not started:  # the status line waits for the first payload, so a gate at 0 holds it too
                handler.send_response(200)
                handler.send_header("content-type", "text/event-stream")
                handler.send_header("cache-control", "no-cache")
                if any(isinstance(p, _Cut) for p in reply.parts):
                    # A length the body never reaches, so closing early is an error and not the
                    # end of a stream without [DONE] (which the host does not retry).
                    handler.send_header("content-length", str(1 << 30))
                handler.end_headers()
                started = True
            handler.wfile.write(_sse(payload))

        deltas = 0
        for part in reply.parts:
            if isinstance(part, Gate):
                if not part._hold(client_gone):
                    request.closed.set()
                    return
            elif isinstance(part, _Pause):
                time.sleep(part.seconds)
            elif isinstance(part, _Cut):
                request.closed.set()
                return  # the handler closes the connection: an end of input inside the body
            else:
                delta = part if deltas else {"role": "assistant", **part}
                deltas += 1
                send({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        send({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": reply.finish}]})
        prompt_tokens = len(request.text) // 4
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": deltas, "total_tokens": prompt_tokens + deltas}
        send({**base, "choices": [], "usage": usage})
        send("[DONE]")
