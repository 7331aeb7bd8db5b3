"""The pure side of the JSON-RPC 2.0 wire (host §4.1, host §4.2, host §8): framing, classification, frames
and the error builders every transport shares (stdio, and the WebSocket of web §5).

Bytes to lines: :class:`LineSplitter` splits on LF and applies the ``max_line_bytes`` rule, and
:func:`overlong_id` finds the id of a line that was too long. Lines to frames: :func:`classify`
refuses a line nested deeper than :data:`MAX_NESTING` levels before parsing it (finding its id
without recursion, :func:`too_deep_request_id`), then decodes UTF-8 and JSON and classifies in the
order of host §4.1. Frames out: :func:`encode` and the frame builders write compact JSON with raw
non-ASCII. Nothing here performs I/O.
"""

from __future__ import annotations

import itertools
import json
import math
import operator
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
    StorageChanged,
)

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
ID_PROBE_BYTES = 1024  # how much of an over-long line is searched for its "id"
MAX_NESTING = 256  # host §4.1: the top-level object is level 1
INTERNAL_ERROR = -32603
SERVER_INFO = {"name": "deepseek-harness-sdk-runtime", "version": "0.0.1"}

_MAX_FLOAT_INT = int(sys.float_info.max)
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_LINE_BREAK = re.compile(r"[ \t]*[\r\n]+[ \t]*")
_OVERLONG_ID = re.compile(
    rb'"id"[ \t\r\n]*:[ \t\r\n]*("(?:[^"\\\x00-\x1f]|\\.)*"|-?(?:0|[1-9][0-9]*)(?=[ \t\r\n]*[,}]))'
)
# The tokens of a line seen from its top level: strings, runs of openers, runs of closers, and
# runs of everything else (separators, numbers, literals, whitespace). A string may also be an
# unterminated one running to the end of the line, and the quantifiers are possessive, so a scan
# costs linear time whatever the line holds (a retry from every quote would be quadratic).
_TOKEN = re.compile(rb'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)|[\[{]++|[\]}]++|[^"\[\]{}]++')
_WHITESPACE = b" \t\r\n"
_REQUEST_KEYS = frozenset({"id", "method"})


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
class TooDeep:
    """A line nested deeper than :data:`MAX_NESTING` levels, refused before it is parsed (its
    ``size`` goes to one stderr line). ``id`` is the id to answer ``too-deep`` under, when the line
    is a request whose top level holds a string ``method`` and a string or number ``id``; ``None``
    means no reply."""

    size: int
    id: str | int | float | None


@dataclass(frozen=True, slots=True)
class Request:
    """A request frame. ``params`` is ``{}`` when absent or not an object. ``unsupported`` marks
    valid JSON that cannot be stored (a lone surrogate, a number out of the float range); such a
    request's ``id`` is ``None`` when the id itself is the number out of range, and its reply then
    carries ``"id":null``."""

    id: str | int | float | None
    method: str
    params: Mapping[str, Any]
    unsupported: bool = False


class _OutOfRange:
    """Stands in for a number outside the float range while parsing."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class _Parse:
    """``json.loads`` with the number rules of host §4.1: a number outside the float range becomes
    an :class:`_OutOfRange` and sets ``unsupported``; ``NaN`` and ``Infinity`` are not JSON."""

    def __init__(self) -> None:
        self.unsupported = False

    def _int(self, text: str) -> Any:
        digits = len(text) - text.startswith("-")
        if digits <= 309:
            value = int(text)
            if abs(value) <= _MAX_FLOAT_INT:
                return value
        self.unsupported = True
        return _OutOfRange()

    def _float(self, text: str) -> Any:
        value = float(text)
        if math.isinf(value):
            self.unsupported = True
            return _OutOfRange()
        return value

    def loads(self, text: str) -> Any:
        """Raises ``ValueError`` for text that is not JSON, ``RecursionError`` for nesting deeper
        than the parser can go."""
        return json.loads(text, parse_int=self._int, parse_float=self._float, parse_constant=_reject_constant)


def _has_lone_surrogate(value: Any) -> bool:
    """Whether a parsed JSON value holds a string with a lone surrogate (iterative, although
    :func:`classify` admits only :data:`MAX_NESTING` levels)."""
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


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether a parsed JSON value nests more than ``limit`` arrays and objects (``{}`` is one
    level). Level by level, without recursion, and with no Python code run per element: a wide
    value of millions of members costs about what parsing it did."""
    lists: list[list[Any]] = [value] if value.__class__ is list else []
    dicts: list[dict[str, Any]] = [value] if value.__class__ is dict else []
    depth = 0
    while lists or dicts:
        depth += 1
        if depth > limit:
            return True
        items = list(
            itertools.chain(
                itertools.chain.from_iterable(lists), itertools.chain.from_iterable(map(dict.values, dicts))
            )
        )
        kinds = list(map(type, items))
        lists = list(itertools.compress(items, map(operator.is_, kinds, itertools.repeat(list))))
        dicts = list(itertools.compress(items, map(operator.is_, kinds, itertools.repeat(dict))))
    return False


def _scalar(token: bytes) -> tuple[bool, Any]:
    """``(True, value)`` for a JSON string or number token that host can echo as an id."""
    parse = _Parse()
    try:
        value = parse.loads(token.decode("utf-8"))
    except (ValueError, RecursionError):
        return False, None
    if parse.unsupported or isinstance(value, bool) or value is None:
        return False, None
    if isinstance(value, str) and _has_lone_surrogate(value):
        return False, None
    return True, value


def top_level_scalars(line: bytes, wanted: frozenset[str]) -> dict[str, Any]:
    """The first members named in ``wanted`` of the top-level object of ``line`` whose values are
    JSON strings or numbers, found without parsing the nested values: for a line too deep to parse.
    Members whose value is anything else, and every member of a line whose top level is not an
    object, are left out. Linear in the number of tokens; it stops once every wanted key is found."""
    found: dict[str, Any] = {}
    depth = 0
    key: str | None = None  # the key of the member being read at the top level
    want_key = False  # the next top-level string is a key
    want_value = False  # a ':' was read; the next top-level token is the value
    for match in _TOKEN.finditer(line):
        token = match.group()
        first = token[0]
        if first in b"[{":
            if depth == 0 and token[:1] != b"{":
                return {}
            if depth == 0:
                want_key = len(token) == 1
            elif depth == 1:
                want_value = False  # the member's value is a container
            depth += len(token)
            continue
        if first in b"]}":
            depth -= len(token)
            if depth <= 0:
                return found
            continue
        if depth != 1:
            continue
        if first == 0x22:  # a string
            if want_key:
                ok, value = _scalar(token)
                key = value if ok and isinstance(value, str) else None
                want_key = False
            elif want_value:
                ok, value = _scalar(token)
                if ok and key in wanted and key not in found:
                    found[key] = value
                    if len(found) == len(wanted):
                        return found
                want_value = False
            continue
        # separators, and numbers or literals with them
        text = token.strip(_WHITESPACE)
        if text.startswith(b":"):
            text = text[1:].strip(_WHITESPACE)
            want_value = True
            value_text, comma, _ = text.partition(b",")
            value_text = value_text.strip(_WHITESPACE)
            if value_text:
                ok, value = _scalar(value_text)
                if ok and key in wanted and key not in found:
                    found[key] = value
                    if len(found) == len(wanted):
                        return found
                want_value = False
            if comma:
                want_key, want_value = True, False
        elif text.startswith(b","):
            want_key, want_value = True, False
    return found


def too_deep_request_id(line: bytes) -> str | int | float | None:
    """The id of a too-deep line that is a request (host §4.1): its top level holds a string
    ``method`` and a string or number ``id``. ``None`` otherwise (no reply)."""
    members = top_level_scalars(line, _REQUEST_KEYS)
    rid = members.get("id")
    return rid if isinstance(members.get("method"), str) and rid is not None else None


def classify(line: bytes) -> Request | Invalid | TooDeep | None:
    """One stripped, non-empty input line, classified in the order of host §4.1: invalid UTF-8 or
    JSON; nested deeper than :data:`MAX_NESTING` levels (also when too deep for the parser, whose
    id is then found without parsing, :func:`too_deep_request_id`); not an object; a request
    (``id`` a string or a non-bool number, ``method`` a string; an id out of the float range is
    kept as ``None`` on an unsupported request); anything else (client notifications, responses)
    is ``None``, dropped without a reply."""
    parse = _Parse()
    try:
        value = parse.loads(line.decode("utf-8"))
    except RecursionError:  # deeper than the parser goes, which is far beyond the limit
        return TooDeep(len(line), too_deep_request_id(line))
    except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return Invalid(len(line))
    if not isinstance(value, dict):
        return None
    rid = value.get("id")
    method = value.get("method")
    if not isinstance(method, str):
        return None
    if isinstance(rid, _OutOfRange):
        rid = None  # host §4.1: answered unsupported-json with "id":null
    elif isinstance(rid, bool) or not isinstance(rid, (str, int, float)):
        return None
    # Only a line with that many openers can nest that deep (counted at C speed, strings included).
    if line.count(b"[") + line.count(b"{") > MAX_NESTING and _deeper_than(value, MAX_NESTING):
        return TooDeep(len(line), rid)
    unsupported = parse.unsupported
    if _SURROGATE_ESCAPE.search(line) is not None and _has_lone_surrogate(value):
        unsupported = True
    params = value.get("params")
    return Request(rid, method, params if isinstance(params, dict) else {}, unsupported)


def rpc_id_text(rid: str | float) -> str:
    """The ``rpcId`` of a request: a string as is, a number as its JSON text."""
    return rid if isinstance(rid, str) else json.dumps(rid)


# --- frames --------------------------------------------------------------------------------------


# json.dumps with arguments builds a new encoder on every call, which costs several times what
# encoding a frame does: the encoders are made once.
_FRAME_ENCODER = json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=msgspec.to_builtins
)
_VALUE_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def encode(frame: Mapping[str, Any]) -> bytes:
    """One frame: compact JSON, non-ASCII raw, plus LF. A lone surrogate (only ever inside a
    string) is written as its ``\\uXXXX`` escape, so the line stays valid UTF-8."""
    return _FRAME_ENCODER.encode(frame).encode("utf-8", "backslashreplace") + b"\n"


def result_frame(rid: str | float | None, result: Any) -> bytes:
    return encode({"jsonrpc": "2.0", "id": rid, "result": result})


def error_frame(rid: str | float | None, error: HostError) -> bytes:
    """An error response. The message is one line (host §4.2) even when an exception's text is not:
    each line break, with the whitespace around it, becomes one space."""
    data = {"code": error.code, **error.data}
    message = _LINE_BREAK.sub(" ", error.message)
    return encode(
        {"jsonrpc": "2.0", "id": rid, "error": {"code": INTERNAL_ERROR, "message": message, "data": data}}
    )


def _value(value: Any) -> bytes:
    """One JSON value as :func:`encode` writes it."""
    return _VALUE_ENCODER.encode(value).encode("utf-8", "backslashreplace")


def history_frame(rid: str | float | None, page: HistoryPage) -> bytes:
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
    session_id = _VALUE_ENCODER.encode(value.session_id).encode("utf-8")
    return (
        b'{"jsonrpc":"2.0","method":"session.event","params":{"sessionId":'
        + session_id
        + b',"event":'
        + value.event.to_json()
        + b"}}\n"
    )


# The last frame built by notification_bytes, with the notification it was built for (held, so
# that its identity stays its own). The host hands one notification object to every connection in
# turn, so all but the first reuse the same bytes: one encoding per notification, not per client.
_last_notification: tuple[Notification, bool, bytes | None] | None = None


def notification_bytes(value: Notification, *, deltas: bool) -> bytes | None:
    """The frame forwarding one in-process notification (host §4.4), or ``None`` for a delta when
    ``streamDeltas`` is off. Connections forwarding the same notification get the same bytes
    object."""
    global _last_notification
    last = _last_notification
    if last is not None and last[0] is value and last[1] == deltas:
        return last[2]
    frame = _notification_bytes(value, deltas)
    _last_notification = (value, deltas, frame)
    return frame


def _notification_bytes(value: Notification, deltas: bool) -> bytes | None:
    if isinstance(value, EventAppended):
        return event_frame(value)
    if isinstance(value, StatusChanged):
        return notification_frame("session.status", {"sessionId": value.session_id, "status": value.status})
    if isinstance(value, StorageChanged):
        return notification_frame(
            "session.status",
            {"sessionId": value.session_id, "status": value.status, "storage": value.storage},
        )
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


def too_deep() -> HostError:
    return HostError("too-deep", f"request nests deeper than {MAX_NESTING} levels", limit=MAX_NESTING)


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
