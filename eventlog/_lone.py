"""Escaped lone surrogates in JSON records (dsh-roots §5).

JavaScript strings are UTF-16 and may hold an unpaired surrogate; ``JSON.stringify`` writes it as
an escape (``"\\ud83d"``), which is valid JSON text and valid UTF-8. msgspec refuses such a record,
so a reader falls back to ``decode_record`` for that record only; Python holds the lone surrogate
as a code point of a ``str``. Writing goes the other way: ``encode_value`` writes data holding a
lone surrogate with the same lowercase ``\\udxxx`` escape (the rule of ``eventlog.values.
compact_json``) instead of failing, so a decoded record re-encodes to the escape it was read with.

Where a human reads text (a transcript, a terminal, a web page) a lone surrogate is shown as
U+FFFD REPLACEMENT CHARACTER: ``displayable`` gives that text. The stored bytes never change.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import msgspec

from .values import compact_json

__all__ = ["LoneRecord", "decode_record", "display_json", "displayable", "encode_value"]

# Every backslash escape of a JSON text, in order: pairing them from the start is exact, since in
# valid JSON a backslash occurs only inside strings, and "\\" consumes both of its characters.
_ESCAPES = re.compile(rb"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)
_PLACEHOLDER = b"\\ufffd"  # as long as any \uXXXX escape, so offsets stay put
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NESTED = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_SCALAR = re.compile(rb"[^,}\]\s]+")
_SPACE = re.compile(rb"[ \t\r\n]*")
_ENCODER = msgspec.json.Encoder()
_MAYBE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")  # the start of a surrogate's escape


class LoneRecord(msgspec.Struct, frozen=True):
    """A JSON record read by ``decode_record``.

    ``value``: the record as plain Python values (dict, list, str, int, float, bool, None), every
    escaped lone surrogate a lone surrogate code point. ``members``: for a JSON object, the exact
    text of each top-level member's value as it appears in the record (a duplicated key: its
    last value, as in ``value``), so a reader can keep ``data`` byte for byte; empty otherwise.
    """

    value: Any
    members: Mapping[str, bytes]


def _lone_escapes(line: bytes) -> list[tuple[int, int]]:
    # The (start, end) of each \uXXXX escape of an unpaired surrogate in ``line``.
    lone: list[tuple[int, int]] = []
    high: tuple[int, int] | None = None  # a high-surrogate escape waiting for its low half
    for match in _ESCAPES.finditer(line):
        hex_digits = match.group(1)
        unit = int(hex_digits, 16) if hex_digits is not None else -1
        if high is not None:
            paired = 0xDC00 <= unit <= 0xDFFF and match.start() == high[1]
            if not paired:
                lone.append(high)
            high = None
            if paired:
                continue
        if 0xD800 <= unit <= 0xDBFF:
            high = match.span()
        elif 0xDC00 <= unit <= 0xDFFF:
            lone.append(match.span())
    if high is not None:
        lone.append(high)
    return lone


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def decode_record(line: bytes) -> LoneRecord:
    """Decode one record (UTF-8 JSON text without its LF) that holds an escaped lone surrogate.

    Accepts exactly the texts msgspec accepts once each escaped lone surrogate is read as an
    ordinary character, so the fallback widens nothing else. Raises ``ValueError`` when ``line``
    is not UTF-8, holds no escaped lone surrogate (msgspec's verdict on it stands), or is not
    valid JSON; lets ``RecursionError`` through for a record nested too deeply to decode.
    """
    lone = _lone_escapes(line)
    if not lone:
        raise ValueError("the record holds no escaped lone surrogate")
    stand_in = bytearray(line)
    for start, end in lone:
        stand_in[start:end] = _PLACEHOLDER
    try:
        msgspec.json.decode(stand_in)
    except msgspec.DecodeError as exc:
        raise ValueError(f"invalid JSON ({exc})") from None
    value = json.loads(line.decode("utf-8"), parse_constant=_reject_constant)
    members = _member_texts(line) if isinstance(value, dict) else {}
    return LoneRecord(value, members)


def _skip_space(line: bytes, pos: int) -> int:
    match = _SPACE.match(line, pos)
    assert match is not None  # matches the empty string
    return match.end()


def _value_end(line: bytes, pos: int) -> int:
    # The end of the JSON value starting at line[pos] (``line`` is known to be valid JSON).
    first = line[pos]
    if first == 0x22:  # a string
        match = _STRING.match(line, pos)
        assert match is not None
        return match.end()
    if first in b"[{":
        depth = 0
        for match in _NESTED.finditer(line, pos):
            token = match.group()
            if token in (b"[", b"{"):
                depth += 1
            elif token in (b"]", b"}"):
                depth -= 1
                if depth == 0:
                    return match.end()
        raise AssertionError("unbalanced JSON passed validation")
    match = _SCALAR.match(line, pos)
    assert match is not None
    return match.end()


def _member_texts(line: bytes) -> dict[str, bytes]:
    # The text of each top-level member's value of the JSON object ``line`` (already validated).
    members: dict[str, bytes] = {}
    pos = _skip_space(line, 0) + 1  # past "{"
    pos = _skip_space(line, pos)
    while line[pos] != 0x7D:  # "}"
        key_end = _value_end(line, pos)
        key = json.loads(line[pos:key_end].decode("utf-8"))
        pos = _skip_space(line, _skip_space(line, key_end) + 1)  # past ":"
        end = _value_end(line, pos)
        members[key] = line[pos:end]
        pos = _skip_space(line, end)
        if line[pos] == 0x2C:  # ","
            pos = _skip_space(line, pos + 1)
    return members


def encode_value(value: Any) -> bytes:
    """``value`` as compact JSON bytes, as ``msgspec.json.encode`` writes it, except that data
    holding a lone surrogate (in a string or a key) is written with the ``\\udxxx`` escape of
    ``compact_json`` instead of failing (a float may then be spelt differently, ``1e+16`` for
    ``1e16``, with the same value).

    For values the append-time check of log-format §3.5 accepts (``None``, ``bool``, safe ints,
    finite floats, ``str``, lists and tuples, dicts with ``str`` keys, ``msgspec.Struct``
    instances, encoded with their own field order and renames). Raises what msgspec raises for
    anything else.
    """
    try:
        return _ENCODER.encode(value)
    except UnicodeEncodeError:  # only a surrogate has no UTF-8 form
        return compact_json(msgspec.to_builtins(value)).encode("utf-8")


def displayable(text: str) -> str:
    """``text`` as a human reads it: each surrogate pair held as two code points joined into its
    character, each lone surrogate shown as U+FFFD."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def display_json(text: bytes) -> str:
    """JSON text ``text`` (valid UTF-8) as a human reads it: each escaped lone surrogate shown as
    U+FFFD, everything else as written (an escaped surrogate pair stays an escape)."""
    if _MAYBE_SURROGATE.search(text) is None:
        return text.decode("utf-8")
    parts: list[bytes] = []
    pos = 0
    for start, end in _lone_escapes(text):
        parts += (text[pos:start], "\ufffd".encode())
        pos = end
    parts.append(text[pos:])
    return b"".join(parts).decode("utf-8")
