"""The pure side of the JSON-RPC 2.0 wire (host §4.1, host §4.2, host §8): framing, classification, frames
and the error builders every transport shares (stdio, and the WebSocket of web §5).

Bytes to lines: :class:`LineSplitter` splits on LF and applies the ``max_line_bytes`` rule, and
:func:`overlong_id` finds the id of a line that was too long. Lines to frames: :func:`classify`
decodes UTF-8 and JSON and classifies in the order of host §4.1. Frames out: :func:`encode` and
the frame builders write compact JSON with raw non-ASCII. Nothing here performs I/O.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from host.runtime import (
    ChildCreated,
    Delta,
    EventAppended,
    HistoryPage,
    HostError,
    Notification,
    StatusChanged,
)

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
ID_PROBE_BYTES = 1024  # how much of an over-long line is searched for its "id"
INTERNAL_ERROR = -32603
SERVER_INFO = {"name": "deepseek-harness-sdk-runtime", "version": "0.0.1"}

_MAX_FLOAT_INT = int(sys.float_info.max)
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_LINE_BREAK = re.compile(r"[ \t]*[\r\n]+[ \t]*")
_OVERLONG_ID = re.compile(
    rb'"id"[ \t\r\n]*:[ \t\r\n]*("(?:[^"\\\x00-\x1f]|\\.)*"|-?(?:0|[1-9][0-9]*)(?=[ \t\r\n]*[,}]))'
)


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
    soon as it is known to be too long and its first :data:`ID_PROBE_BYTES` bytes (or all of it)
    are in, so the id search of host §8 sees the same head however the input was chunked; its
    remaining bytes are dropped up to the next LF. At most ``max(limit, ID_PROBE_BYTES)`` bytes
    plus one read are ever buffered."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._buffer = bytearray()
        self._discarding = False

    def feed(self, data: bytes | bytearray) -> list[Line | Overlong]:
        out: list[Line | Overlong] = []
        buffer = self._buffer
        buffer += data
        start = 0
        while (end := buffer.find(b"\n", start)) >= 0:
            if self._discarding:
                self._discarding = False
            else:
                out.append(self._item(buffer[start:end]))
            start = end + 1
        del buffer[:start]
        if self._discarding:
            buffer.clear()
        elif len(buffer) > self._limit and len(buffer) >= ID_PROBE_BYTES:
            out.append(Overlong(bytes(buffer[:ID_PROBE_BYTES])))
            self._discarding = True
            buffer.clear()
        return out

    def finish(self) -> list[Line | Overlong]:
        """At end of input: the last line if it had no LF."""
        if self._discarding or not self._buffer:
            return []
        item = self._item(self._buffer)
        self._buffer.clear()
        return [item]

    def _item(self, line: bytearray) -> Line | Overlong:
        if len(line) > self._limit:
            return Overlong(bytes(line[:ID_PROBE_BYTES]))
        return Line(bytes(line))


def overlong_id(head: bytes) -> str | int | None:
    """The id of an over-long line (host §8): ``"id"``, ``:`` and a JSON string or integer within the
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
    """Whether a parsed JSON value holds a string with a lone surrogate (iterative: a request
    may nest as deeply as the parser allows)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def classify(line: bytes) -> Request | Invalid | None:
    """One stripped, non-empty input line, classified in the order of host §4.1: invalid UTF-8 or
    JSON (or JSON nested too deeply to parse); not an object; a request (``id`` a string or a
    non-bool number, ``method`` a string); anything else (client notifications, responses) is
    ``None``, dropped without a reply."""
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
            line.decode("utf-8"),
            parse_int=parse_int,
            parse_float=parse_float,
            parse_constant=_reject_constant,
        )
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
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


def rpc_id_text(rid: str | float) -> str:
    """The ``rpcId`` of a request: a string as is, a number as its JSON text."""
    return rid if isinstance(rid, str) else json.dumps(rid)


# --- frames --------------------------------------------------------------------------------------


def encode(frame: Mapping[str, Any]) -> bytes:
    """One frame: compact JSON, non-ASCII raw, plus LF. A lone surrogate (only ever inside a
    string) is written as its ``\\uXXXX`` escape, so the line stays valid UTF-8."""
    text = json.dumps(
        frame, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=msgspec.to_builtins
    )
    return text.encode("utf-8", "backslashreplace") + b"\n"


def result_frame(rid: str | float, result: Any) -> bytes:
    return encode({"jsonrpc": "2.0", "id": rid, "result": result})


def error_frame(rid: str | float, error: HostError) -> bytes:
    """An error response. The message is one line (host §4.2) even when an exception's text is not:
    each line break, with the whitespace around it, becomes one space."""
    data = {"code": error.code, **error.data}
    message = _LINE_BREAK.sub(" ", error.message)
    return encode(
        {"jsonrpc": "2.0", "id": rid, "error": {"code": INTERNAL_ERROR, "message": message, "data": data}}
    )


def _value(value: Any) -> bytes:
    """One JSON value as :func:`encode` writes it."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    return text.encode("utf-8", "backslashreplace")


def history_frame(rid: str | float, page: HistoryPage) -> bytes:
    """The ``session/history`` reply (host §4.3.7) with the header and every envelope written as
    their canonical records, exactly as ``session.event`` sends them: nothing is decoded and
    encoded again, so a page of thousands of events costs one join."""
    events = b",".join(event.to_json() for event in page.events)
    return b"".join(
        (
            b'{"jsonrpc":"2.0","id":',
            _value(rid),
            b',"result":{"sessionId":',
            _value(page.session_id),
            b',"header":',
            page.header.to_json(),
            b',"events":[',
            events,
            b'],"nextSeq":',
            str(page.next_seq).encode(),
            b',"done":',
            b"true" if page.done else b"false",
            b"}}\n",
        )
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
    """The frame forwarding one in-process notification (host §4.4), or ``None`` for a delta when
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


# --- errors ------------------------------------------------------------------------------------


def unknown_method(method: str) -> HostError:
    return HostError(
        "unknown-method", f"unknown DeepSeek Harness SDK runtime method: {method}", method=method
    )


def line_too_long(limit: int) -> HostError:
    return HostError("line-too-long", f"request line exceeds {limit} bytes", limit=limit)


def unsupported_json() -> HostError:
    return HostError("unsupported-json", "request contains a lone surrogate or a number out of range")


def flush_failed_at_shutdown(session_id: str, message: str) -> HostError:
    return HostError(
        "persistence-failed",
        f'cannot flush session "{session_id}" at shutdown: {message}',
        sessionId=session_id,
    )


def internal(exc: BaseException) -> HostError:
    return HostError("internal", f"internal error: {type(exc).__name__}: {exc}")
