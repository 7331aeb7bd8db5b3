"""JSON-RPC 2.0 over stdio, compatible with the ``deepseek-harness-sdk`` client (host.md §4, §8).

The pure part turns bytes into frames and frames into calls: :class:`LineSplitter` (LF framing
with the ``max_line_bytes`` rule), :func:`classify` (UTF-8 and JSON decoding, then the
classification order of §4.1), :func:`overlong_id` (the id of a line that was too long), the
parameter checks of §4.3 and the frame encoders. :class:`Server` is the thin effect around them:
one reader, one task per request, one writer serialising whole frames, and the notification
forwarder observing the in-process :class:`~host.app.Host`. :func:`serve_stdio` adds the process
edges: stdin, stdout and the signals of §4.3.9.

Guarantees: stdout carries nothing but frames, one compact JSON line each, never interleaved;
every handler failure is ``-32603`` with a stable ``data.code``; a prompt's receipt
``session.event`` is queued before its reply; admissions to one session keep arrival order.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import signal
import sys
import traceback
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import trio

from host.app import (
    SESSION_ID_RULE,
    ChildCreated,
    Delta,
    EventAppended,
    Host,
    HostError,
    Notification,
    StatusChanged,
)

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
ID_PROBE_BYTES = 1024  # how much of an over-long line is searched for its "id"
EXIT_DRAIN_SECONDS = 0.5  # how long the final frames may take to leave after shutdown
INTERNAL_ERROR = -32603
SERVER_INFO = {"name": "deepseek-harness-sdk-runtime", "version": "0.0.1"}
MAX_SAFE = 2**53 - 1
HISTORY_LIMIT_MAX = 10_000
EXIT_SIGINT = 130

_SESSION_ID = re.compile(SESSION_ID_RULE)
_MAX_FLOAT_INT = int(sys.float_info.max)
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_OVERLONG_ID = re.compile(
    rb'"id"[ \t\r\n]*:[ \t\r\n]*("(?:[^"\\\x00-\x1f]|\\.)*"|-?(?:0|[1-9][0-9]*)(?=[ \t\r\n]*[,}]))'
)

_log = logging.getLogger("host.rpc")


def package_version() -> str:
    """The installed turnlog version."""
    try:
        return version("turnlog")
    except PackageNotFoundError:
        return "0.0.0"


# --- framing -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Line:
    """One complete input line of at most ``max_line_bytes`` bytes (LF removed)."""

    data: bytes


@dataclass(frozen=True, slots=True)
class Overlong:
    """A line longer than the limit; ``head`` is its first :data:`ID_PROBE_BYTES` bytes. The rest
    of the line is discarded up to the next LF and never parsed."""

    head: bytes


class LineSplitter:
    """Splits a byte stream on LF. A line over ``limit`` bytes (LF excluded) is reported once, as
    soon as it is known to be too long, and its remaining bytes are dropped up to the next LF; at
    most ``limit`` bytes plus one read are ever buffered."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._buffer = bytearray()
        self._discarding = False

    def feed(self, data: bytes) -> list[Line | Overlong]:
        out: list[Line | Overlong] = []
        buffer = self._buffer
        buffer += data
        start = 0
        while (end := buffer.find(b"\n", start)) >= 0:
            if self._discarding:
                self._discarding = False
            elif end - start > self._limit:
                out.append(Overlong(bytes(buffer[start : min(end, start + ID_PROBE_BYTES)])))
            else:
                out.append(Line(bytes(buffer[start:end])))
            start = end + 1
        del buffer[:start]
        if self._discarding:
            buffer.clear()
        elif len(buffer) > self._limit:
            out.append(Overlong(bytes(buffer[:ID_PROBE_BYTES])))
            self._discarding = True
            buffer.clear()
        return out

    def finish(self) -> list[Line | Overlong]:
        """At end of input: the last line if it had no LF."""
        if self._discarding or not self._buffer:
            return []
        line = Line(bytes(self._buffer))
        self._buffer.clear()
        return [line]


def overlong_id(head: bytes) -> str | int | None:
    """The id of an over-long line (§8): ``"id"``, ``:`` and a JSON string or integer within the
    first bytes, or ``None`` when there is none."""
    match = _OVERLONG_ID.search(head)
    if match is None:
        return None
    try:
        value = json.loads(match.group(1))
    except ValueError:
        return None
    if isinstance(value, str) and _has_lone_surrogate(value):
        return None
    return value if isinstance(value, (str, int)) else None


# --- classification ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Invalid:
    """Not UTF-8 or not JSON: ignored with one stderr line naming its size."""

    size: int


@dataclass(frozen=True, slots=True)
class Request:
    """A request frame. ``params`` is ``{}`` when absent or not an object. ``unsupported`` marks
    valid JSON that cannot be stored (a lone surrogate, a number out of the float range)."""

    id: str | int | float
    method: str
    params: Mapping[str, Any]
    unsupported: bool = False


class _OutOfRange:
    """Stands in for a number outside the float range while parsing."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        if value.isascii():
            return False
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(item) for item in value)
    return False


def classify(line: bytes) -> Request | Invalid | None:
    """One stripped, non-empty input line, classified in the order of §4.1: invalid UTF-8 or
    JSON; not an object; a request (``id`` a string or a non-bool number, ``method`` a string);
    anything else (client notifications, responses) is ``None``, dropped without a reply."""
    unsupported = False

    def parse_int(text: str) -> Any:
        nonlocal unsupported
        digits = len(text) - text.startswith("-")
        if digits <= 309:
            value = int(text)
            if abs(value) <= _MAX_FLOAT_INT:
                return value
        unsupported = True
        return _OutOfRange()

    def parse_float(text: str) -> Any:
        nonlocal unsupported
        value = float(text)
        if math.isinf(value):
            unsupported = True
            return _OutOfRange()
        return value

    try:
        value = json.loads(
            line.decode("utf-8"), parse_int=parse_int, parse_float=parse_float, parse_constant=_reject_constant
        )
    except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return Invalid(len(line))
    if not isinstance(value, dict):
        return None
    rid = value.get("id")
    method = value.get("method")
    if not isinstance(method, str) or isinstance(rid, bool) or not isinstance(rid, (str, int, float)):
        return None
    if _SURROGATE_ESCAPE.search(line) is not None and _has_lone_surrogate(value):
        unsupported = True
    params = value.get("params")
    return Request(rid, method, params if isinstance(params, dict) else {}, unsupported)


def rpc_id_text(rid: str | int | float) -> str:
    """The ``rpcId`` of a request: a string as is, a number as its JSON text."""
    return rid if isinstance(rid, str) else json.dumps(rid)


# --- frames --------------------------------------------------------------------------------------


def encode(frame: Mapping[str, Any]) -> bytes:
    """One frame: compact JSON, non-ASCII raw, plus LF. A lone surrogate (only ever inside a
    string) is written as its ``\\uXXXX`` escape, so the line stays valid UTF-8."""
    text = json.dumps(frame, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.encode("utf-8", "backslashreplace") + b"\n"


def result_frame(rid: str | int | float, result: Any) -> bytes:
    return encode({"jsonrpc": "2.0", "id": rid, "result": result})


def error_frame(rid: str | int | float, error: HostError) -> bytes:
    data = {"code": error.code, **error.data}
    return encode(
        {"jsonrpc": "2.0", "id": rid, "error": {"code": INTERNAL_ERROR, "message": error.message, "data": data}}
    )


def notification_frame(method: str, params: Mapping[str, Any]) -> bytes:
    return encode({"jsonrpc": "2.0", "method": method, "params": params})


def event_frame(value: EventAppended) -> bytes:
    """``session.event`` with the envelope exactly as in the log (its canonical record)."""
    session_id = json.dumps(value.session_id, ensure_ascii=False).encode("utf-8")
    return (
        b'{"jsonrpc":"2.0","method":"session.event","params":{"sessionId":'
        + session_id
        + b',"event":'
        + value.event.to_json()
        + b"}}\n"
    )


def notification_bytes(value: Notification, *, deltas: bool) -> bytes | None:
    """The frame forwarding one in-process notification (§4.4), or ``None`` for a delta when
    ``streamDeltas`` is off."""
    if isinstance(value, EventAppended):
        return event_frame(value)
    if isinstance(value, StatusChanged):
        return notification_frame("session.status", {"sessionId": value.session_id, "status": value.status})
    if isinstance(value, ChildCreated):
        return notification_frame(
            "subagent.started",
            {"parentSessionId": value.parent_session_id, "childSessionId": value.child_session_id},
        )
    if isinstance(value, Delta):
        if not deltas:
            return None
        return notification_frame(
            "session.delta",
            {"sessionId": value.session_id, "turn": value.turn, "step": value.step, "chunk": value.chunk},
        )
    raise TypeError(f"unknown notification {value!r}")


# --- errors and parameter checks -----------------------------------------------------------------


def unknown_method(method: str) -> HostError:
    return HostError("unknown-method", f"unknown DeepSeek Harness SDK runtime method: {method}", method=method)


def shutting_down() -> HostError:
    return HostError("shutting-down", "SDK server is shutting down")


def line_too_long(limit: int) -> HostError:
    return HostError("line-too-long", f"request line exceeds {limit} bytes", limit=limit)


def unsupported_json() -> HostError:
    return HostError("unsupported-json", "request contains a lone surrogate or a number out of range")


def internal(exc: BaseException) -> HostError:
    return HostError("internal", f"internal error: {type(exc).__name__}: {exc}")


def _invalid(method: str, field: str, requirement: str) -> HostError:
    return HostError("invalid-params", f"{method} {field} {requirement}", field=field)


def _is_safe_int(value: object) -> bool:
    return type(value) is int and abs(value) <= MAX_SAFE


def session_id_param(method: str, params: Mapping[str, Any], key: str = "sessionId") -> str:
    """``params[key]`` if it matches the id rule, else ``invalid-session-id`` naming the method."""
    value = params.get(key)
    if not isinstance(value, str) or _SESSION_ID.fullmatch(value) is None:
        raise HostError("invalid-session-id", f"{method} {key} must match {SESSION_ID_RULE}", value=value)
    return value


def _optional_string(method: str, params: Mapping[str, Any], key: str, *, non_empty: bool) -> str | None:
    if key not in params:
        return None
    value = params[key]
    if not isinstance(value, str) or (non_empty and not value):
        raise _invalid(method, key, "must be a non-empty string" if non_empty else "must be a string")
    return value


@dataclass(frozen=True, slots=True)
class InitializeParams:
    cwd: str | None
    provider: str | None
    model: str | None
    max_tokens: int | None
    reasoning_effort: str | None
    stream_deltas: bool | None


def initialize_params(params: Mapping[str, Any]) -> InitializeParams:
    """§4.3.1, checked in order: cwd, provider, model, maxTokens, reasoningEffort, streamDeltas."""
    method = "initialize"
    cwd = _optional_string(method, params, "cwd", non_empty=False)
    if cwd is not None and "\x00" in cwd:
        raise _invalid(method, "cwd", "must not contain NUL characters")
    provider = _optional_string(method, params, "provider", non_empty=True)
    model = _optional_string(method, params, "model", non_empty=True)
    max_tokens = params.get("maxTokens")
    if "maxTokens" in params and not (_is_safe_int(max_tokens) and max_tokens > 0):
        raise _invalid(method, "maxTokens", "must be a positive safe integer")
    effort = _optional_string(method, params, "reasoningEffort", non_empty=True)
    deltas = params.get("streamDeltas")
    if "streamDeltas" in params and not isinstance(deltas, bool):
        raise _invalid(method, "streamDeltas", "must be a boolean")
    return InitializeParams(cwd, provider, model, max_tokens, effort, deltas)


def _content_block_ok(block: object) -> bool:
    if not isinstance(block, dict):
        return False
    kind = block.get("type")
    if kind == "text":
        return block.keys() == {"type", "text"} and isinstance(block["text"], str)
    if kind == "image":
        return block.keys() == {"type", "attachment"} and isinstance(block["attachment"], dict)
    return False


def content_blocks_param(method: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A non-empty array of user blocks: ``{"type":"text","text":S}`` or
    ``{"type":"image","attachment":OBJ}``, nothing else."""
    blocks = params.get("contentBlocks")
    if not isinstance(blocks, list) or not blocks:
        raise _invalid(method, "contentBlocks", "must be a non-empty array of content blocks")
    for index, block in enumerate(blocks):
        if not _content_block_ok(block):
            raise _invalid(
                method,
                f"contentBlocks[{index}]",
                'must be {"type":"text","text":<string>} or {"type":"image","attachment":<object>}',
            )
    return blocks


def mode_param(method: str, params: Mapping[str, Any]) -> str:
    mode = params.get("mode", "queue")
    if not isinstance(mode, str) or mode not in ("queue", "steer"):
        raise _invalid(method, "mode", 'must be "queue" or "steer"')
    return mode


def _optional_int(
    method: str, params: Mapping[str, Any], key: str, default: int | None, lowest: int, highest: int, requirement: str
) -> int | None:
    if key not in params:
        return default
    value = params[key]
    if not (type(value) is int and lowest <= value <= highest):
        raise _invalid(method, key, requirement)
    return value


# --- the server ----------------------------------------------------------------------------------

class _Once:
    """Forwards only the first ``started()`` to a nursery's task status."""

    def __init__(self, status: trio.TaskStatus[None]) -> None:
        self._status = status
        self._done = False

    def started(self, value: None = None) -> None:
        if not self._done:
            self._done = True
            self._status.started()


@dataclass(slots=True)
class _Prompt:
    """A ``session/prompt`` being admitted, waiting for its receipt."""

    session_id: str
    request_id: str | int | float
    message_id: str | None = None
    replied: bool = False


class Server:
    """The JSON-RPC server over one in-process :class:`Host`.

    :meth:`run` serves until shutdown: a ``shutdown`` request, end of input, a closed output, or
    :meth:`stop` (signals). It then runs §4.3.9 (refuse new requests, stop forwarding
    notifications, shut the host down, answer pending ``shutdown`` requests), lets the last
    frames leave for at most :data:`EXIT_DRAIN_SECONDS`, and returns the exit code: the first
    trigger's (0, or 130 for SIGINT), or 1 when a session could not be flushed (except after
    SIGINT). Diagnostics go to ``diagnostic(line)``, one line each.
    """

    def __init__(
        self,
        host: Host,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        diagnostic: Callable[[str], None] | None = None,
    ) -> None:
        self.host = host
        self.max_line_bytes = max_line_bytes
        self._diagnostic = diagnostic or (lambda line: _log.warning("%s", line))
        self._stream_deltas = False
        self._exit_code: int | None = None
        self._stop = trio.Event()
        self._pending_shutdowns: list[str | int | float] = []
        self._send: trio.MemorySendChannel[bytes] | None = None
        self._written = trio.Event()
        self._prompts: dict[tuple[str, str], list[_Prompt]] = {}
        self._due: _Prompt | None = None

    @property
    def stopping(self) -> bool:
        """True once shutdown has been triggered."""
        return self._exit_code is not None

    def stop(self, exit_code: int = 0) -> None:
        """Trigger shutdown; the first trigger decides the exit code, later ones change nothing."""
        if self._exit_code is None:
            self._exit_code = exit_code
            self._stop.set()

    # --- output -----------------------------------------------------------------------------------

    def _queue(self, frame: bytes) -> None:
        if self._send is None:
            return
        try:
            self._send.send_nowait(frame)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass  # the output is gone or closed: nothing more can be said

    def _forward(self, value: Notification) -> None:
        """The observer of the host: queue the notification's frame. A prompt's reply goes out
        right after its receipt, or after the ``running`` flip the receipt caused (§4.3.2)."""
        frame = notification_bytes(value, deltas=self._stream_deltas)
        due, self._due = self._due, None
        if due is not None:
            if isinstance(value, StatusChanged) and value.status == "running" and value.session_id == due.session_id:
                assert frame is not None
                self._queue(frame)
                self._reply(due)
                return
            self._reply(due)
        if frame is not None:
            self._queue(frame)
        if isinstance(value, EventAppended) and self._prompts and value.event.type == "agent/inbox/spliced":
            self._due = self._receipt_of(value)

    def _receipt_of(self, value: EventAppended) -> _Prompt | None:
        """The pending prompt whose receipt ``value`` is, if any."""
        inserted = value.event.value().get("inserted") or ()
        if len(inserted) != 1:
            return None
        message = inserted[0]
        source = message.get("source") or {}
        waiting = self._prompts.get((value.session_id, source.get("rpcId")))
        if source.get("kind") != "user" or not waiting:
            return None
        prompt = waiting[0]
        prompt.message_id = message.get("id")
        return prompt

    def _reply(self, prompt: _Prompt) -> None:
        if not prompt.replied:
            prompt.replied = True
            self._queue(result_frame(prompt.request_id, {"messageId": prompt.message_id}))

    async def _write(self, frames: trio.MemoryReceiveChannel[bytes], stdout: trio.abc.SendStream) -> None:
        """The single writer: whole frames, in queue order, several per write when queued."""
        try:
            await self._write_frames(frames, stdout)
        finally:
            self._written.set()

    async def _write_frames(self, frames: trio.MemoryReceiveChannel[bytes], stdout: trio.abc.SendStream) -> None:
        async with frames:
            async for frame in frames:
                batch = [frame]
                while True:
                    try:
                        batch.append(frames.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                try:
                    await stdout.send_all(b"".join(batch))
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    self.stop(0)  # a closed stdout is an end of input (§8)
                    return

    # --- input ------------------------------------------------------------------------------------

    async def _read(self, stdin: trio.abc.ReceiveStream, nursery: trio.Nursery) -> None:
        splitter = LineSplitter(self.max_line_bytes)
        try:
            while True:
                data = await stdin.receive_some(65536)
                if not data:
                    break
                for item in splitter.feed(data):
                    await self._take(item, nursery)
            for item in splitter.finish():
                await self._take(item, nursery)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            self._diagnostic(f"stdin failed: {exc}")
        self.stop(0)

    async def _take(self, item: Line | Overlong, nursery: trio.Nursery) -> None:
        if isinstance(item, Overlong):
            self._diagnostic(f"ignored a line longer than {self.max_line_bytes} bytes")
            rid = overlong_id(item.head)
            if rid is not None:
                self._queue(error_frame(rid, line_too_long(self.max_line_bytes)))
            return
        line = item.data.strip()
        if not line:
            return
        frame = classify(line)
        if isinstance(frame, Invalid):
            self._diagnostic(f"ignored a line that is not valid JSON ({len(item.data)} bytes)")
        elif isinstance(frame, Request):
            if isinstance(frame.id, _OutOfRange):
                self._diagnostic("ignored a request whose id is a number out of range")
                return
            # start() returns once the handler holds its place (a prompt: in its session's line).
            await nursery.start(self._serve_request, frame)

    async def _serve_request(self, request: Request, *, task_status: trio.TaskStatus[None]) -> None:
        once = _Once(task_status)
        try:
            result = await self._dispatch(request, once)
        except HostError as exc:
            self._queue(error_frame(request.id, exc))
        except Exception as exc:
            self._diagnostic(f"internal error in {request.method}:")
            for text in traceback.format_exception(exc):
                for line in text.rstrip("\n").split("\n"):
                    self._diagnostic(line)
            self._queue(error_frame(request.id, internal(exc)))
        else:
            if result is not _NO_REPLY:
                self._queue(result_frame(request.id, result))
        finally:
            once.started()

    async def _dispatch(self, request: Request, once: _Once) -> Any:
        if self.stopping and request.method != "shutdown":
            raise shutting_down()
        if request.unsupported:
            raise unsupported_json()
        handler = _HANDLERS.get(request.method)
        if handler is None:
            raise unknown_method(request.method)
        if request.method != "session/prompt":
            once.started()
        return await handler(self, request, once)

    # --- lifecycle --------------------------------------------------------------------------------

    async def run(self, stdin: trio.abc.ReceiveStream, stdout: trio.abc.SendStream) -> int:
        send, frames = trio.open_memory_channel[bytes](math.inf)
        self._send = send
        unsubscribe = self.host.subscribe(self._forward)
        async with trio.open_nursery() as outer:
            outer.start_soon(self._write, frames, stdout)
            async with trio.open_nursery() as requests:
                requests.start_soon(self._read, stdin, requests)
                await self._stop.wait()
                unsubscribe()  # §4.3.9 step 2: nothing but replies from now on
                report = await self.host.shutdown()
                failed = next(iter(report.failed.items()), None)
                for session_id, message in report.failed.items():
                    self._diagnostic(f'shutdown: session "{session_id}" could not be flushed: {message}')
                for rid in self._pending_shutdowns:
                    if failed is None:
                        self._queue(result_frame(rid, {}))
                    else:
                        session_id, message = failed
                        error = HostError(
                            "persistence-failed",
                            f'cannot flush session "{session_id}" at shutdown: {message}',
                            sessionId=session_id,
                        )
                        self._queue(error_frame(rid, error))
                requests.cancel_scope.cancel()
            send.close()  # the writer drains what is queued, then ends
            with trio.move_on_after(EXIT_DRAIN_SECONDS):
                await self._written.wait()
            outer.cancel_scope.cancel()
        assert self._exit_code is not None
        if self._exit_code == EXIT_SIGINT:
            return EXIT_SIGINT
        return 1 if report.failed else self._exit_code

    # --- methods ----------------------------------------------------------------------------------

    async def _initialize(self, request: Request, once: _Once) -> Any:
        p = initialize_params(request.params)
        self.host.initialize(
            cwd=p.cwd,
            provider=p.provider,
            model=p.model,
            max_tokens=p.max_tokens,
            reasoning_effort=p.reasoning_effort,
        )
        self._stream_deltas = bool(p.stream_deltas)
        return {"serverInfo": SERVER_INFO, "turnlog": {"version": package_version(), "root": str(self.host.root)}}

    async def _prompt(self, request: Request, once: _Once) -> Any:
        method = "session/prompt"
        params = request.params
        session_id = session_id_param(method, params)
        blocks = content_blocks_param(method, params)
        mode = mode_param(method, params)
        zone = {"client_time_zone": params["clientTimeZone"]} if "clientTimeZone" in params else {}
        rpc_id = rpc_id_text(request.id)
        prompt = _Prompt(session_id, request.id)
        waiting = self._prompts.setdefault((session_id, rpc_id), [])
        waiting.append(prompt)
        try:
            prompt.message_id = await self.host.admit(
                session_id,
                blocks,
                rpc_id=rpc_id,
                mode=mode,  # type: ignore[arg-type]  # checked above
                task_status=once,  # type: ignore[arg-type]  # a TaskStatus in all but name
                **zone,
            )
        except Exception as exc:
            if not prompt.replied:
                raise
            # The receipt is in the log and its reply is out: the prompt was admitted.
            self._diagnostic(f"after admitting {rpc_id}: {type(exc).__name__}: {exc}")
            return _NO_REPLY
        finally:
            waiting.remove(prompt)
            if not waiting:
                del self._prompts[(session_id, rpc_id)]
        self._reply(prompt)  # unless the forwarder already sent it after the receipt
        return _NO_REPLY

    async def _resume(self, request: Request, once: _Once) -> Any:
        session_id = session_id_param("session/resume", request.params)
        disposition = await self.host.resume(session_id)
        return {"sessionId": session_id, "disposition": disposition}

    async def _cwd_get(self, request: Request, once: _Once) -> Any:
        session_id = session_id_param("session/working-directory/get", request.params)
        return {"cwd": await self.host.working_directory(session_id)}

    async def _cwd_set(self, request: Request, once: _Once) -> Any:
        method = "session/working-directory/set"
        session_id = session_id_param(method, request.params)
        path = request.params.get("path")
        if not isinstance(path, str) or not path or "\x00" in path:
            raise _invalid(method, "path", "must be a non-empty string without NUL characters")
        return {"cwd": await self.host.set_working_directory(session_id, path)}

    async def _fork(self, request: Request, once: _Once) -> Any:
        method = "session/fork"
        params = request.params
        parent = session_id_param(method, params)
        boundary = _optional_int(
            method, params, "boundarySeq", None, 0, MAX_SAFE, "must be a non-negative safe integer"
        )
        child = session_id_param(method, params, "childSessionId") if "childSessionId" in params else None
        return await self.host.fork(parent, boundary_seq=boundary, child_id=child)

    async def _list(self, request: Request, once: _Once) -> Any:
        return await self.host.list_sessions()

    async def _history(self, request: Request, once: _Once) -> Any:
        method = "session/history"
        params = request.params
        session_id = session_id_param(method, params)
        from_seq = _optional_int(method, params, "fromSeq", 0, 0, MAX_SAFE, "must be a non-negative safe integer")
        limit = _optional_int(
            method, params, "limit", 1000, 1, HISTORY_LIMIT_MAX, f"must be an integer from 1 to {HISTORY_LIMIT_MAX}"
        )
        assert from_seq is not None and limit is not None
        return await self.host.history(session_id, from_seq=from_seq, limit=limit)

    async def _shutdown(self, request: Request, once: _Once) -> Any:
        self._pending_shutdowns.append(request.id)
        self.stop(0)
        return _NO_REPLY  # answered by run() once every session is flushed


_NO_REPLY: Any = object()

_HANDLERS: dict[str, Callable[[Server, Request, _Once], Awaitable[Any]]] = {
    "initialize": Server._initialize,
    "session/prompt": Server._prompt,
    "session/resume": Server._resume,
    "session/working-directory/get": Server._cwd_get,
    "session/working-directory/set": Server._cwd_set,
    "session/fork": Server._fork,
    "session/list": Server._list,
    "session/history": Server._history,
    "shutdown": Server._shutdown,
}


# --- the process edges ---------------------------------------------------------------------------


class FdReceiveStream(trio.abc.ReceiveStream):
    """Reads a file descriptor in a worker thread (abandoned on cancel), leaving the descriptor's
    blocking mode alone — stdin may be a terminal shared with a shell."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        return await trio.to_thread.run_sync(os.read, self._fd, max_bytes or 65536, abandon_on_cancel=True)

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


class FdSendStream(trio.abc.SendStream):
    """Writes whole buffers to a file descriptor in a worker thread (abandoned on cancel)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await trio.to_thread.run_sync(self._write_all, bytes(data), abandon_on_cancel=True)

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


async def serve_stdio(
    host: Host,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    diagnostic: Callable[[str], None] | None = None,
) -> int:
    """Serve ``host`` on the process's stdin and stdout until shutdown and return the exit code.
    SIGTERM shuts down with 0, SIGINT with 130 (§4.3.9)."""
    server = Server(host, max_line_bytes=max_line_bytes, diagnostic=diagnostic)
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:

        async def watch() -> None:
            async for signum in signals:
                server.stop(EXIT_SIGINT if signum == signal.SIGINT else 0)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch)
            code = await server.run(FdReceiveStream(stdin_fd), FdSendStream(stdout_fd))
            nursery.cancel_scope.cancel()
    return code
