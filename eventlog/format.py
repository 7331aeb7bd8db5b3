"""The on-disk format of a session log: values and codecs (log-format §3, log-format §4.2,
log-format §5.2).

Pure functions over bytes and values, no I/O:

- ``Event``, ``ReplaceOp``, ``SessionHeader``: the immutable values a log is made of, with their
  canonical encodings (``to_json``: compact JSON, documented key order, no LF).
- ``decode_header``: line 1, validated in the exact order of log-format §3.2.
- ``RecordDecoder``: one storage record (event line or packed chunk row) → events, strictly
  (log-format §3.3, log-format §3.6); a refused record raises ``MalformedRecord`` carrying the
  defect reason of log-format §7.1.
- ``build_event``: the append-time checks of log-format §3.5 and the one encoding of ``data``.
- ``check_session_id``: log-format §4.2.
"""

from __future__ import annotations

import builtins
import json
import math
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, Self, TypeAlias, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from ._lone import LoneRecord, decode_record, encode_value
from .errors import CorruptLog, InvalidEvent, InvalidSessionId, UnsupportedFormat
from .values import MAX_SAFE_INTEGER, is_safe_int

# ``is_safe_int`` lives in ``eventlog.values``; it is re-exported here for importers that still
# take it from this module.
__all__ = [
    "ID_PATTERN",
    "INVALID_ENVELOPE",
    "ROW_TYPES",
    "SEQ_GAP",
    "SURFACE_TYPES",
    "TEMP_SUFFIX",
    "UNPARSABLE",
    "ZSTD_MAGIC",
    "Event",
    "MalformedRecord",
    "RecordDecoder",
    "ReplaceOp",
    "SafeInt",
    "SeqInt",
    "SessionHeader",
    "SurfaceOp",
    "build_event",
    "check_not_zstd",
    "check_session_id",
    "decode_header",
    "is_event_type",
    "is_safe_int",
    "temp_name_pattern",
    "temp_path",
]

T = TypeVar("T")

SURFACE_TYPES = frozenset({"user/message", "assistant/message", "tool/result"})
ROW_TYPES = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

# The integer bounds of log-format §2 as msgspec constraints, checked while decoding (no per-event Python
# work): any safe integer, and a safe integer >= 0 (seqs, counts).
SafeInt = Annotated[int, msgspec.Meta(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)]
SeqInt = Annotated[int, msgspec.Meta(ge=0, le=MAX_SAFE_INTEGER)]

# Defect reasons of log-format §5.5 / log-format §7.1 produced while decoding one record.
UNPARSABLE = "unparsable committed event"
INVALID_ENVELOPE = "invalid event envelope"
SEQ_GAP = "seq gap in committed region"

ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
"""A session id (log-format §4.2), as a regular expression to match whole (``re.fullmatch``)."""
_ID_RE = re.compile(ID_PATTERN)
_TYPE_RE = re.compile(r"[a-z0-9][a-z0-9-]*(?:/[a-z0-9][a-z0-9-]*)+")
_WINDOWS_ABS_RE = re.compile(r"[A-Za-z]:[\\/]")
_EVENT_KEYS = ("type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable")


def _is_seq_int(value: object) -> bool:
    return type(value) is int and 0 <= value <= MAX_SAFE_INTEGER


def is_event_type(value: object) -> bool:
    """True if ``value`` is a string of the event type shape of log-format §3.3."""
    return isinstance(value, str) and _TYPE_RE.fullmatch(value) is not None


def check_session_id(id: object) -> str:
    """Return ``id`` if it is a valid session id (log-format §4.2), else raise ``InvalidSessionId``.

    Runs before any file system access, so ``..``, ``/``, NUL and empty ids never name a path.
    """
    if not isinstance(id, str) or _ID_RE.fullmatch(id) is None:
        raise InvalidSessionId(id)
    return id


# log-format §6.3 step 2: a file is published from "<final name>.<12 lowercase hex>.tmp" beside it.
TEMP_SUFFIX = r"\.[0-9a-f]{12}\.tmp"


def temp_name_pattern(final_name: str) -> re.Pattern[str]:
    """The publish temp names of the file named ``final_name`` (match with ``fullmatch``)."""
    return re.compile(re.escape(final_name) + TEMP_SUFFIX)


def temp_path(final: Path) -> Path:
    """A fresh publish temp name for ``final`` (log-format §6.3 step 2); it matches ``TEMP_SUFFIX``."""
    # os.urandom is what secrets.token_hex draws from; importing secrets (hashlib, hmac) would
    # cost every reader of a log ~15 ms of start-up.
    return final.with_name(f"{final.name}.{os.urandom(6).hex()}.tmp")


# --------------------------------------------------------------------------- values


class ReplaceOp(
    msgspec.Struct, frozen=True, tag_field="op", tag="replace", forbid_unknown_fields=True, gc=False
):
    """``surfaceOp`` replace: encodes as ``{"op":"replace","start":S,"end":E}``."""

    start: int
    end: int


SurfaceOp: TypeAlias = Literal["append"] | ReplaceOp


# One strict decoder per type ``Event.decode`` is asked for.
_DECODERS: dict[Any, msgspec.json.Decoder[Any]] = {}


def _lone_value(text: msgspec.Raw | bytes) -> LoneRecord | None:
    # JSON text that msgspec refused, read again by the fallback for escaped lone surrogates
    # (dsh-roots §5); None when that is not why it was refused.
    try:
        return decode_record(bytes(text))
    except (ValueError, RecursionError):
        return None


class Event(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True, gc=False):
    """One event of a session: ``{type, seq, time, data, surfaceOp?, sourceEventSeqs?, ignorable?}``.

    ``data`` holds the exact JSON bytes of the value; each owner decodes its own types with
    ``decode``. ``msgspec.json.encode(event)`` and ``to_json()`` give the canonical record.
    """

    type: str
    seq: int
    time: int
    data: msgspec.Raw
    surface_op: SurfaceOp | None = None
    source_event_seqs: tuple[int, ...] | None = None
    ignorable: bool = False

    # ``builtins.type``: in this class body ``type`` is the field above.
    def decode(self, type_: builtins.type[T]) -> T:
        """Strictly decode ``data`` as ``type_`` (a cached ``msgspec.json.Decoder``).

        Data holding an escaped lone surrogate (dsh-roots §5), which msgspec refuses, is read as
        plain values first and then converted as strictly; its lone surrogates become lone
        surrogate code points. Raises ``msgspec.ValidationError`` (a ``msgspec.DecodeError``)
        when the data does not match.
        """
        decoder: msgspec.json.Decoder[T] | None = _DECODERS.get(type_)
        if decoder is None:
            decoder = _DECODERS[type_] = msgspec.json.Decoder(type_)
        try:
            return decoder.decode(self.data)
        except msgspec.DecodeError:
            lone = _lone_value(self.data)
            if lone is None:
                raise
        return msgspec.convert(lone.value, type_)

    def value(self) -> Any:
        """``data`` decoded into plain Python values (dict, list, str, int, float, bool, None);
        an escaped lone surrogate becomes a lone surrogate code point (dsh-roots §5)."""
        try:
            return msgspec.json.decode(self.data)
        except msgspec.DecodeError:
            lone = _lone_value(self.data)
            if lone is None:
                raise
        return lone.value

    def to_json(self) -> bytes:
        """The canonical record: compact JSON in log-format §3.3 key order, without the LF."""
        return msgspec.json.encode(self)


class SessionHeader(msgspec.Struct, frozen=True, kw_only=True):
    """Line 1 of a log (log-format §3.2). Fields are in on-disk order; ``to_json`` writes the line."""

    version: int = 0
    id: str
    created_at: int
    cwd: str | None = None
    parent_session: str | None = None
    seed_length: int | None = None
    origin: str | None = None
    delegation_depth: int = 0
    agent_preset: str | None = None
    owner: str | None = None

    def to_json(self) -> bytes:
        """The canonical header line without the LF: ``"type":"session"`` first, absent
        optional keys omitted, ``delegationDepth`` always written."""
        out: dict[str, Any] = {
            "type": "session",
            "version": self.version,
            "id": self.id,
            "createdAt": self.created_at,
        }
        if self.cwd is not None:
            out["cwd"] = self.cwd
        if self.parent_session is not None:
            out["parentSession"] = self.parent_session
        if self.seed_length is not None:
            out["seedLength"] = self.seed_length
        if self.origin is not None:
            out["origin"] = self.origin
        out["delegationDepth"] = self.delegation_depth
        if self.agent_preset is not None:
            out["agentPreset"] = self.agent_preset
        if self.owner is not None:
            out["owner"] = self.owner
        return msgspec.json.encode(out)


# --------------------------------------------------------------------------- header


class _NegativeZero:
    """The integer token ``-0``, kept apart from ``0`` so it can be rejected."""

    def __repr__(self) -> str:
        return "-0"


_NEG_ZERO = _NegativeZero()


class _FloatToken(float):
    """A JSON number that is not an ``int`` here (a fraction, an exponent, or more digits than
    ``int()`` converts), remembering its text (``v1.0`` as written)."""

    text: str

    def __new__(cls, text: str) -> Self:
        self = super().__new__(cls, text)
        self.text = text
        return self

    def __repr__(self) -> str:
        return self.text


def _parse_int(text: str) -> int | _NegativeZero | _FloatToken:
    if text == "-0":
        return _NEG_ZERO
    try:
        return int(text)
    except ValueError:  # beyond sys.get_int_max_str_digits(): valid JSON, never a safe integer
        return _FloatToken(text)


def _reject_constant(text: str) -> Any:
    raise ValueError(f"{text} is not valid JSON")


def check_not_zstd(head: bytes, path: str | os.PathLike[str]) -> None:
    """Raise ``UnsupportedFormat`` if ``head`` (the first bytes of a file) is a Zstandard frame."""
    if head.startswith(ZSTD_MAGIC):
        raise UnsupportedFormat(
            f"Zstandard session logs are not supported yet (raw log: {os.fspath(path)})", version=None
        )


def _version_error(version: Any, name: str, path: str | os.PathLike[str]) -> UnsupportedFormat:
    text = version.text if isinstance(version, _FloatToken) else str(version)
    if version > 0:
        message = (
            f'session "{name}" uses log format v{text}, but this turnlog reads only v0: the log was '
            f"written by a newer program — upgrade turnlog to open it (raw log: {os.fspath(path)})"
        )
    else:
        message = (
            f'session "{name}" uses log format v{text}, older than the supported v0, and this '
            f"build ships no upgrade path for it (raw log: {os.fspath(path)})"
        )
    return UnsupportedFormat(message, version=version if type(version) is int else float(version))


def _header_shape_error(path: str | os.PathLike[str], detail: str) -> CorruptLog:
    return CorruptLog(path, f"first line is not a session header: {detail}", line=1, offset=0)


def _describe(value: Any) -> str:
    if isinstance(value, (_FloatToken, _NegativeZero)):
        return repr(value)[:60]
    return json.dumps(value, ensure_ascii=False)[:60]


def decode_header(
    line: bytes, path: str | os.PathLike[str], *, expected_id: str | None = None
) -> SessionHeader:
    """Decode and validate header line ``line`` (without its LF) of the log at ``path``.

    Checks, in the order of log-format §3.2: JSON; version first (``UnsupportedFormat`` for any
    number other than ``0``); retired policy fields; the shape of every known key (unknown keys
    are ignored); identity against ``expected_id`` (log-format §4.2). Raises ``CorruptLog``
    (line 1, byte 0) otherwise. The ``seedLength`` bound needs the event count and is checked
    by the scanner.
    """
    fields = _HeaderFields(_header_object(line, path, expected_id), path)
    header_id = fields.string("id", required=True)
    created_at = fields.count("createdAt", required=True)
    cwd = fields.string("cwd")
    if cwd is not None and not (cwd.startswith("/") or _WINDOWS_ABS_RE.match(cwd)):
        raise _header_shape_error(path, f'"cwd" must be an absolute path, got {_describe(cwd)}')
    parent_session = fields.string("parentSession")
    seed_length = fields.count("seedLength")
    origin = fields.string("origin")
    if origin is not None and origin != "subagent":
        raise _header_shape_error(path, f'"origin" must be "subagent", got {_describe(origin)}')
    delegation_depth = fields.count("delegationDepth")
    agent_preset = fields.string("agentPreset")
    owner = fields.string("owner", non_empty=True)
    assert header_id is not None and created_at is not None
    if expected_id is not None and header_id != expected_id:
        raise CorruptLog(
            path,
            f'requested id "{expected_id}" does not match header id "{header_id}"',
            line=1,
            offset=0,
        )
    return SessionHeader(
        id=header_id,
        created_at=created_at,
        cwd=cwd,
        parent_session=parent_session,
        seed_length=seed_length,
        origin=origin,
        delegation_depth=0 if delegation_depth is None else delegation_depth,
        agent_preset=agent_preset,
        owner=owner,
    )


def _header_object(line: bytes, path: str | os.PathLike[str], expected_id: str | None) -> dict[str, Any]:
    # The header line as a JSON object whose version is 0: steps 2-4 of log-format §3.2 up to
    # the shape of the other keys (the integer tokens kept apart: -0, fractions, huge numbers).
    try:
        obj = json.loads(
            line.decode("utf-8"),
            parse_int=_parse_int,
            parse_float=_FloatToken,
            parse_constant=_reject_constant,
        )
    except (UnicodeDecodeError, ValueError) as exc:
        detail = "not UTF-8" if isinstance(exc, UnicodeDecodeError) else str(exc)
        raise CorruptLog(path, f"header line is not valid JSON ({detail})", line=1, offset=0) from None
    except RecursionError:
        raise _header_shape_error(path, "nested too deeply to read") from None
    if not isinstance(obj, dict):
        raise _header_shape_error(path, "not a JSON object")
    version = obj.get("version")
    if isinstance(version, (int, float)) and not isinstance(version, bool) and version != 0:
        header_id = obj.get("id")
        name = expected_id or (header_id if isinstance(header_id, str) else Path(path).name)
        raise _version_error(version, name, path)
    if "sandboxMode" in obj or "approvalPolicy" in obj:
        raise CorruptLog(path, "session header uses retired policy baseline fields", line=1, offset=0)
    if obj.get("type") != "session":
        raise _header_shape_error(path, f'"type" must be "session", got {_describe(obj.get("type"))}')
    if type(version) is not int:
        raise _header_shape_error(path, f'"version" must be 0, got {_describe(version)}')
    return obj


class _HeaderFields:
    # The known keys of a header object, each checked for its shape as it is read.

    def __init__(self, obj: dict[str, Any], path: str | os.PathLike[str]) -> None:
        self._obj = obj
        self._path = path

    def string(self, key: str, *, required: bool = False, non_empty: bool = False) -> str | None:
        value = self._obj.get(key)
        if value is None and key not in self._obj and not required:
            return None
        if not isinstance(value, str) or (non_empty and not value):
            kind = "a non-empty string" if non_empty else "a string"
            raise _header_shape_error(self._path, f'"{key}" must be {kind}, got {_describe(value)}')
        return value

    def count(self, key: str, *, required: bool = False) -> int | None:
        value = self._obj.get(key)
        if value is None and key not in self._obj and not required:
            return None
        if not _is_seq_int(value):
            raise _header_shape_error(self._path, f'"{key}" must be a safe integer >= 0, got {_describe(value)}')
        return value


# --------------------------------------------------------------------------- records


class MalformedRecord(Exception):
    """A storage record refused by ``RecordDecoder``; ``reason`` is a log-format §7.1 defect reason.

    Internal to the scanner: readers turn it into a ``Defect`` (and maybe ``CorruptLog``).
    """

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail




class _WireEvent(msgspec.Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    # The envelope as it must appear on disk: optional keys may be absent (UNSET) but never
    # null or false, which the public ``Event`` annotations cannot express; seq, time and
    # source seqs are safe integers.
    type: str
    seq: SeqInt
    time: SafeInt
    data: msgspec.Raw
    surfaceOp: Literal["append"] | ReplaceOp | UnsetType = UNSET
    sourceEventSeqs: tuple[SeqInt, ...] | UnsetType = UNSET
    ignorable: Literal[True] | UnsetType = UNSET


def _event_of(type_: str, wire: _WireEvent) -> Event:
    # The public event of a decoded envelope (``type_``: its interned type string).
    op = wire.surfaceOp
    sources = wire.sourceEventSeqs
    return Event(
        type_,
        wire.seq,
        wire.time,
        wire.data,
        None if op is UNSET else op,
        None if sources is UNSET else sources,
        wire.ignorable is True,
    )


class _TextRow(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    turn: int | float
    step: int | float
    index: int | float
    dt: list[int]
    texts: list[str]


class _ToolRow(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    turn: int | float
    step: int | float
    index: int | float
    id: str
    dt: list[int]
    args: list[str]
    name: str | msgspec.UnsetType = msgspec.UNSET


class _RowEnvelope(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    type: str
    seq0: Any
    time0: Any
    data: msgspec.Raw


class _LoneRowEnvelope(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    # ``_RowEnvelope`` over the plain values of a row that holds an escaped lone surrogate.
    type: str
    seq0: Any
    time0: Any
    data: Any


_ROW_ENVELOPE = msgspec.json.Decoder(_RowEnvelope)
_TEXT_ROW = msgspec.json.Decoder(_TextRow)
_TOOL_ROW = msgspec.json.Decoder(_ToolRow)
_WIRE_EVENT = msgspec.json.Decoder(_WireEvent)
# Between two event lines written canonically (by turnlog or deepseek-harness): a closing brace,
# the LF and the next record's first key. Any other writer's lines take the line-by-line path.
_LINE_BOUNDARY = b'}\n{"type":"'
# Regions whose records average at least _LONG_RECORD bytes (over their first _SAMPLE bytes) are
# split at LF, not framed by counts.
_LONG_RECORD = 2048
_SAMPLE = 64 * 1024
_ANY = msgspec.json.Decoder()


class RecordDecoder:
    """Decodes storage records (log-format §3.3, log-format §3.6) into events, interning type strings.

    One decoder per scan: it keeps the set of type strings already validated, so the type
    regex runs once per distinct type and every event of a type shares one string.
    ``line`` is one record without its LF and MUST already be valid UTF-8 (the scanner
    validates whole chunks at once).
    """

    def __init__(self) -> None:
        # type string -> (interned string, is a surface type)
        self._types: dict[str, tuple[str, bool]] = {}

    def decode(self, line: bytes, expected_seq: int) -> list[Event]:
        """The events of ``line`` (one for an event line, one per member for a packed row).

        Raises ``MalformedRecord`` with reason ``unparsable committed event`` (JSON or packed
        row failures), ``invalid event envelope`` (a key or value rule of log-format §3.3), or
        ``seq gap in committed region`` (detail ``expected X, got Y``). Lets ``RecursionError``
        through for a record nested deeper than the decoders recurse: it may be valid JSON, so
        it is not a defect of the record (the scanner refuses the log instead).
        """
        try:
            event = self._accept(_WIRE_EVENT.decode(line), expected_seq)
        except msgspec.DecodeError:
            event = None
        return [event] if event is not None else self._decode_slow(line, expected_seq)

    def decode_region(
        self, chunk: bytes, start: int, end: int, expected_seq: int
    ) -> list[Event] | None:
        """The events of ``chunk[start:end]``, a run of complete lines each ending with LF, if
        every line is a valid event line (one event per line) with contiguous seqs from
        ``expected_seq``; ``None`` when any line needs a closer look (a defect, a packed row, a
        replace op, a non-canonical line): then decode the lines one by one.

        Every line must be one record, as the line-by-line decode takes it; the region's shape
        decides how that is made sure. Short records (the common case) are decoded in one
        ``decode_lines`` call after two counts prove the framing; the events reference
        ``chunk`` (zero-copy). Long records (text-heavy logs) are split at LF and each line
        decoded on its own, a record by construction: for them the two counts cost more than the
        split, whose 33 bytes per line are then negligible. The events reference their line.
        """
        # The records' mean length, from the LFs of the region's first _SAMPLE bytes.
        sample = min(end, start + _SAMPLE)
        if (sample - start) >= _LONG_RECORD * chunk.count(b"\n", start, sample):
            wires = self._split_lines(chunk, start, end)
        else:
            wires = self._framed_lines(chunk, start, end)
        if wires is None:
            return None
        # The checks of _accept, inlined: this loop runs once per event of a cold read.
        types = self._types
        events: list[Event] = []
        append = events.append
        seq = expected_seq
        for wire in wires:
            type_ = wire.type
            surface_op = wire.surfaceOp
            sources = wire.sourceEventSeqs
            try:
                type_, surface = types[type_]
            except KeyError:
                if not is_event_type(type_):
                    return None
                type_, surface = types[type_] = (sys.intern(type_), type_ in SURFACE_TYPES)
            if wire.seq != seq:
                return None
            if surface:
                if surface_op != "append":  # a replace op: its exact key order is checked by line
                    return None
                if sources is UNSET:
                    append(Event(type_, seq, wire.time, wire.data, "append", None, wire.ignorable is True))
                elif _sources_ok(sources, type_, seq):
                    append(Event(type_, seq, wire.time, wire.data, "append", sources, wire.ignorable is True))
                else:
                    return None
            elif surface_op is not UNSET or sources is not UNSET:
                return None
            else:
                append(Event(type_, seq, wire.time, wire.data, None, None, wire.ignorable is True))
            seq += 1
        return events

    @staticmethod
    def _framed_lines(chunk: bytes, start: int, end: int) -> list[_WireEvent] | None:
        # decode_region for short records: one decode_lines call over the region, zero-copy.
        count = chunk.count(b"\n", start, end)
        # One JSON object per line, exactly: a "}\n{" can only sit between two objects (inside
        # an object a closing brace is followed by "," "}" or "]"), so count - 1 boundaries plus
        # "{" first and "}\n" last mean every LF separates two objects; and as many objects as
        # LFs means no object spans lines. Anything else (CR LF included) goes line by line.
        if (
            not count
            or chunk[start] != 0x7B
            or chunk[end - 2] != 0x7D
            or chunk.count(_LINE_BOUNDARY, start, end) != count - 1
        ):
            return None
        region = chunk if start == 0 and end == len(chunk) else memoryview(chunk)[start:end]
        try:
            wires = _WIRE_EVENT.decode_lines(region)
        except (msgspec.DecodeError, RecursionError):
            return None
        return wires if len(wires) == count else None

    @staticmethod
    def _split_lines(chunk: bytes, start: int, end: int) -> list[_WireEvent] | None:
        # decode_region for long records: each line decoded on its own. ``start`` and ``end``
        # sit just after an LF (or at the chunk's start): the pieces before ``start`` and after
        # the region's last LF are not its lines.
        pieces = chunk.split(b"\n")
        first = chunk.count(b"\n", 0, start) if start else 0
        lines = pieces[first : len(pieces) - chunk.count(b"\n", end) - 1]
        try:
            return list(map(_WIRE_EVENT.decode, lines))
        except (msgspec.DecodeError, RecursionError):
            return None

    def _accept(self, wire: _WireEvent, expected_seq: int) -> Event | None:
        # The event for a decoded envelope that passes every rule of log-format §3.3 checkable without
        # its line, or None (the line must be examined: invalid, or a replace op whose exact
        # keys msgspec does not check).
        known = self._types.get(wire.type)
        if known is None:
            if not is_event_type(wire.type):
                return None
            known = self._types[wire.type] = (sys.intern(wire.type), wire.type in SURFACE_TYPES)
        seq = wire.seq
        if seq != expected_seq:
            return None
        surface_op = wire.surfaceOp
        sources = wire.sourceEventSeqs
        if known[1]:
            if surface_op is UNSET or surface_op.__class__ is ReplaceOp:
                return None
            if sources is not UNSET and not _sources_ok(sources, known[0], seq):
                return None
        elif surface_op is not UNSET or sources is not UNSET:
            return None
        return _event_of(known[0], wire)

    def _decode_slow(self, line: bytes, expected_seq: int) -> list[Event]:
        # Precise diagnosis of a record the fast path could not accept as it stands.
        try:
            obj = _ANY.decode(line)
        except msgspec.DecodeError as exc:
            # JavaScript writes an unpaired surrogate as an escape, which msgspec refuses: such
            # a record is read by the fallback, and only such a record (dsh-roots §5).
            lone = _lone_value(line)
            if lone is None:
                raise MalformedRecord(UNPARSABLE, f"invalid JSON ({exc})") from None
            return self._decode_lone(lone, line, expected_seq)
        if not isinstance(obj, dict):
            raise MalformedRecord(UNPARSABLE, f"not a JSON object ({type(obj).__name__})")
        kind = obj.get("type")
        if isinstance(kind, str) and kind in ROW_TYPES:  # a list or an object is no row tag
            return self._expand_row(line, expected_seq)
        _check_envelope(obj)
        if obj["seq"] != expected_seq:
            raise MalformedRecord(SEQ_GAP, f"expected {expected_seq}, got {obj['seq']}")
        wire = _WIRE_EVENT.decode(line)
        return [_event_of(self._type_of(wire.type), wire)]

    def _type_of(self, type_: str) -> str:
        # The interned string of a type that passed the envelope checks.
        known = self._types.get(type_)
        if known is None:
            known = self._types[type_] = (sys.intern(type_), type_ in SURFACE_TYPES)
        return known[0]

    def _decode_lone(self, lone: LoneRecord, line: bytes, expected_seq: int) -> list[Event]:
        # ``_decode_slow`` for a record holding an escaped lone surrogate: the same checks over
        # its plain values; ``data`` keeps the exact text of the record.
        obj = lone.value
        if not isinstance(obj, dict):
            raise MalformedRecord(UNPARSABLE, f"not a JSON object ({type(obj).__name__})")
        kind = obj.get("type")
        if isinstance(kind, str) and kind in ROW_TYPES:
            return self._expand_row(line, expected_seq, obj)
        _check_envelope(obj)
        if obj["seq"] != expected_seq:
            raise MalformedRecord(SEQ_GAP, f"expected {expected_seq}, got {obj['seq']}")
        op = obj.get("surfaceOp")
        sources = obj.get("sourceEventSeqs")
        event = Event(
            self._type_of(obj["type"]),
            obj["seq"],
            obj["time"],
            msgspec.Raw(lone.members["data"]),
            ReplaceOp(op["start"], op["end"]) if isinstance(op, dict) else op,
            None if sources is None else tuple(sources),
            obj.get("ignorable") is True,
        )
        return [event]

    def _expand_row(self, line: bytes, expected_seq: int, lone: dict[str, Any] | None = None) -> list[Event]:
        # ``lone``: the row's plain values when it holds an escaped lone surrogate (dsh-roots §5).
        try:
            if lone is None:
                envelope = _ROW_ENVELOPE.decode(line)
                tag, seq0, time0 = envelope.type, envelope.seq0, envelope.time0
            else:
                plain = msgspec.convert(lone, _LoneRowEnvelope)
                tag, seq0, time0 = plain.type, plain.seq0, plain.time0
            if not _is_seq_int(seq0):
                raise ValueError(f"seq0 must be a safe integer >= 0, got {_describe(seq0)}")
            if not is_safe_int(time0):
                raise ValueError(f"time0 must be a safe integer, got {_describe(time0)}")
            row: _TextRow | _ToolRow
            if tag == "tool-call-chunks":
                row = tool_row = (
                    _TOOL_ROW.decode(envelope.data) if lone is None else msgspec.convert(plain.data, _ToolRow)
                )
                members = tool_row.args
            else:
                row = text_row = (
                    _TEXT_ROW.decode(envelope.data) if lone is None else msgspec.convert(plain.data, _TextRow)
                )
                members = text_row.texts
            if not members:
                raise ValueError("a packed row needs at least one member")
            if len(row.dt) != len(members) - 1:
                raise ValueError(f"dt has {len(row.dt)} gaps for {len(members)} members")
            if seq0 + len(members) - 1 > MAX_SAFE_INTEGER:
                raise ValueError("the row's last seq is not a safe integer")
            times = [time0]
            for gap in row.dt:
                if not is_safe_int(gap):
                    raise ValueError(f"dt holds {gap}, not a safe integer")
                times.append(times[-1] + gap)
                if not is_safe_int(times[-1]):
                    raise ValueError("a running time is not a safe integer")
        except (msgspec.DecodeError, ValueError) as exc:
            raise MalformedRecord(UNPARSABLE, f"malformed {_row_tag(line)} row: {exc}") from None
        if seq0 != expected_seq:
            raise MalformedRecord(SEQ_GAP, f"expected {expected_seq}, got {seq0}")
        if isinstance(row, _ToolRow):
            head: dict[str, Any] = {"type": "tool-call-delta", "index": row.index, "id": row.id}
            if row.name is not msgspec.UNSET:
                head["name"] = row.name
            key = "argumentsDelta"
        else:
            head = {"type": "text-delta" if tag == "text-chunks" else "reasoning-delta", "index": row.index}
            key = "text"
        chunk_type = sys.intern("assistant/chunk")
        events = []
        for k, member in enumerate(members):
            data = {"turn": row.turn, "step": row.step, "chunk": {**head, key: member}}
            events.append(Event(chunk_type, seq0 + k, times[k], msgspec.Raw(encode_value(data))))
        return events


def _row_tag(line: bytes) -> str:
    # The row tag of ``line`` for messages (best effort: the row may not have decoded).
    for tag in ROW_TYPES:
        if f'"{tag}"'.encode() in line:
            return tag
    return "packed"


def _check_envelope(obj: dict[str, Any]) -> None:
    """Check an untyped event object against every key and value rule of log-format §3.3 except the seq
    count; raise ``MalformedRecord(INVALID_ENVELOPE, …)`` naming the first rule broken."""

    def bad(detail: str) -> MalformedRecord:
        return MalformedRecord(INVALID_ENVELOPE, detail)

    for key in obj:
        if key not in _EVENT_KEYS:
            raise bad(f"unknown key {_describe(key)}")
    for key in ("type", "seq", "time", "data"):
        if key not in obj:
            raise bad(f'missing key "{key}"')
    type_ = obj["type"]
    if not is_event_type(type_):
        raise bad(f"invalid type {_describe(type_)}")
    seq = obj["seq"]
    if not _is_seq_int(seq):
        raise bad(f"seq must be a safe integer >= 0, got {_describe(seq)}")
    if not is_safe_int(obj["time"]):
        raise bad(f"time must be a safe integer, got {_describe(obj['time'])}")
    if "ignorable" in obj and obj["ignorable"] is not True:
        raise bad(f"ignorable must be true when present, got {_describe(obj['ignorable'])}")
    surface = type_ in SURFACE_TYPES
    if not surface:
        for key in ("surfaceOp", "sourceEventSeqs"):
            if key in obj:
                raise bad(f'"{type_}" is not a surface type and cannot carry {key}')
        return
    if "surfaceOp" not in obj:
        raise bad(f'surface type "{type_}" lacks surfaceOp')
    op = obj["surfaceOp"]
    if isinstance(op, dict):
        if list(op) != ["op", "start", "end"] or op["op"] != "replace":
            raise bad(f'surfaceOp replace must be {{"op":"replace","start":S,"end":E}}, got {_describe(op)}')
        for key in ("start", "end"):
            if not _is_seq_int(op[key]) or op[key] >= seq:
                raise bad(f"surfaceOp {key} must be a safe integer >= 0 and < seq, got {_describe(op[key])}")
    elif op != "append":
        raise bad(f'surfaceOp must be "append" or a replace object, got {_describe(op)}')
    if "sourceEventSeqs" in obj and (problem := _sources_problem(obj["sourceEventSeqs"], type_, seq)):
        raise bad(problem)


def _sources_ok(sources: tuple[int, ...], type_: str, seq: int) -> bool:
    # The sourceEventSeqs rules of log-format §3.3 for a tuple msgspec already decoded as ints.
    return (
        (bool(sources) or type_ == "assistant/message")
        and all(0 <= item < seq for item in sources)
        and len(set(sources)) == len(sources)
    )


def _sources_problem(sources: object, type_: str, seq: int) -> str | None:
    # The first sourceEventSeqs rule of log-format §3.3 that ``sources`` breaks, or None.
    if not isinstance(sources, (list, tuple)):
        return f"sourceEventSeqs must be an array, got {_describe(sources)}"
    if not sources and type_ != "assistant/message":
        return f'sourceEventSeqs may be empty only on "assistant/message", not on "{type_}"'
    for item in sources:
        if not _is_seq_int(item) or item >= seq:
            return f"sourceEventSeqs items must be safe integers >= 0 and < seq, got {_describe(item)}"
    if len(set(sources)) != len(sources):
        return "sourceEventSeqs items must be distinct"
    return None


# --------------------------------------------------------------------------- appending


class _NotLossless(Exception):
    """A value ``data`` cannot carry losslessly: ``problem`` and where (``path``, innermost
    key first, filled in as the walk unwinds so the happy path builds no strings)."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.path: list[str] = []

    def __str__(self) -> str:
        return f"{self.problem} at data{''.join(reversed(self.path))}"


_PLAIN_DEPTH = 64  # deeper values are left to _check_lossless, which finds cycles


def _plainly_lossless(value: Any) -> bool:
    """Whether ``value`` is built only of the plain types msgspec writes unchanged: str, bool,
    None, safe ints, finite floats other than -0.0, and dicts with str keys, lists, tuples and
    Structs of them (no more than :data:`_PLAIN_DEPTH` levels). The fast path of every append:
    one loop, no recursion, no path or cycle bookkeeping. ``False`` only means "look closer":
    :func:`_check_lossless` decides (subclasses, UNSET outside a Struct, cycles) and names the
    problem."""
    pending: list[tuple[Any, int]] = [([value], 0)]
    while pending:
        container, depth = pending.pop()
        cls = container.__class__
        struct = False
        if cls is dict:
            for key in container:
                if key.__class__ is not str:
                    return False
            items = container.values()
        elif cls is list or cls is tuple:
            items = container
        elif isinstance(container, msgspec.Struct):
            items = msgspec.structs.astuple(container)
            struct = True  # whose UNSET fields are omitted when encoded
        else:
            return False
        for item in items:
            item_cls = item.__class__
            if item_cls is str or item_cls is bool or item is None:
                continue
            if item_cls is int:
                if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                    return False
            elif item_cls is float:
                if item - item != 0.0 or (item == 0.0 and math.copysign(1.0, item) < 0):
                    return False
            elif item is UNSET and struct:
                continue
            elif depth < _PLAIN_DEPTH:
                pending.append((item, depth + 1))
            else:
                return False
    return True


def _check_lossless(value: Any, active: set[int]) -> None:
    # Walk the value exactly as msgspec will encode it and refuse anything it would change
    # (NaN → null, int keys → strings, unsafe integers) or cannot encode at all. Strings need
    # no check: a lone surrogate is written as an escape (dsh-roots §5). ``active`` holds the ids of the
    # containers being walked (a cycle). Exact-class tests first: this runs on every append.
    cls = value.__class__
    if cls is str or cls is bool or value is None:
        return
    if cls is int or (cls is not float and isinstance(value, int)):
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise _NotLossless(f"integer {value} is outside the safe range ±(2**53-1)")
        return
    if cls is float or isinstance(value, float):
        if value - value != 0.0:  # inf or NaN
            raise _NotLossless(f"{value!r} is not a finite number")
        if value == 0.0 and math.copysign(1.0, value) < 0:
            raise _NotLossless("-0.0 has no JSON form")
        return
    if isinstance(value, str):
        return
    if cls is dict or cls is list or isinstance(value, (dict, list, tuple, msgspec.Struct)):
        marker = id(value)
        if marker in active:
            raise _NotLossless("a container that contains itself (a cycle)")
        active.add(marker)
        pairs: Any
        if isinstance(value, dict):
            for key in value:
                if key.__class__ is not str and not isinstance(key, str):
                    raise _NotLossless(f"key {key!r} is not a string")
            pairs = value.items()
        elif isinstance(value, msgspec.Struct):
            pairs = [
                (name, item)
                for name in value.__struct_fields__
                if (item := getattr(value, name)) is not msgspec.UNSET  # omitted when encoded
            ]
        else:
            pairs = enumerate(value)
        for key, item in pairs:
            item_cls = item.__class__
            if item_cls is str or item_cls is bool or item is None:
                continue
            try:
                _check_lossless(item, active)
            except _NotLossless as exc:
                exc.path.append(f"[{key}]" if type(key) is int else f".{key}")
                raise
        active.discard(marker)
        return
    raise _NotLossless(f"{cls.__name__} has no JSON form")


def _invalid(type: str, detail: str) -> InvalidEvent:
    return InvalidEvent(f'invalid session event "{type}": {detail}')


def build_event(
    type: str,
    seq: int,
    time: int,
    data: Any,
    *,
    surface_op: SurfaceOp | None = None,
    source_event_seqs: Sequence[int] | None = None,
    ignorable: bool = False,
) -> Event:
    """Validate an event as log-format §3.5 requires and return it with ``data`` encoded once.

    Checks the type shape, the surface rules of log-format §3.3 (surface types need ``surface_op``; replace
    bounds and ``source_event_seqs`` items are safe integers ``< seq``; a replace lists at least
    its ``start`` and ``end``) and that ``data`` is losslessly representable as JSON. Raises
    ``InvalidEvent``; nothing else. Does not refuse ``session/end-seed`` (fork writes it; the
    live ``Session.append`` refuses it).
    """
    if not is_event_type(type):
        raise InvalidEvent(
            f"invalid session event type {type!r}: expected lowercase segments joined by '/', "
            "such as 'tool/call'"
        )
    # A str subclass (an owner's StrEnum of types) is stored as the plain string it holds:
    # sys.intern refuses subclasses, and Event.type is a str.
    if type.__class__ is not str:
        type = str.__str__(type)
    if not _is_seq_int(seq):
        raise _invalid(type, f"seq must be a safe integer >= 0, got {seq!r}")
    if not is_safe_int(time):
        raise _invalid(type, f"time must be a safe integer of epoch ms, got {time!r}")
    if ignorable is not True and ignorable is not False:
        raise _invalid(type, f"ignorable must be a bool, got {ignorable!r}")
    sources: tuple[int, ...] | None = None
    if type in SURFACE_TYPES:
        if surface_op is None:
            raise _invalid(type, 'a surface event needs surface_op ("append" or ReplaceOp)')
        if isinstance(surface_op, ReplaceOp):
            for name, bound in (("start", surface_op.start), ("end", surface_op.end)):
                if not _is_seq_int(bound) or bound >= seq:
                    raise _invalid(type, f"replace {name} must be a safe integer >= 0 and < seq {seq}, got {bound!r}")
        elif surface_op != "append":
            raise _invalid(type, f'surface_op must be "append" or ReplaceOp, got {surface_op!r}')
        if source_event_seqs is not None:
            if isinstance(source_event_seqs, (str, bytes)) or not isinstance(source_event_seqs, Sequence):
                raise _invalid(type, f"source_event_seqs must be a sequence of ints, got {source_event_seqs!r}")
            sources = tuple(source_event_seqs)
            if problem := _sources_problem(sources, type, seq):
                raise _invalid(type, problem)
        if isinstance(surface_op, ReplaceOp):
            shadowed = {surface_op.start, surface_op.end}
            if sources is None or not shadowed <= set(sources):
                raise _invalid(type, "a replace must list the nodes it shadows in source_event_seqs")
    elif surface_op is not None or source_event_seqs is not None:
        raise _invalid(type, "only user/message, assistant/message and tool/result carry surface_op or source_event_seqs")
    try:
        if not _plainly_lossless(data):
            _check_lossless(data, set())
    except _NotLossless as exc:
        raise InvalidEvent(f'session event "{type}" carries non-JSON-serializable data: {exc}') from None
    except RecursionError:
        raise InvalidEvent(f'session event "{type}" carries non-JSON-serializable data: nested too deeply') from None
    try:
        raw = msgspec.Raw(encode_value(data))
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        raise InvalidEvent(f'session event "{type}" carries non-JSON-serializable data: {exc}') from None
    return Event(sys.intern(type), seq, time, raw, surface_op, sources, ignorable)
