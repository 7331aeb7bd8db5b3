"""eventlog._lone: records with escaped lone surrogates read (for that record only), written back
with the same escape, and shown as U+FFFD (dsh-roots §5)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog._lone import LoneRecord, decode_record, displayable, encode_value

# A line as JavaScript's JSON.stringify writes it: a text delta that split an emoji.
JS_LINE = (
    b'{"type":"assistant/chunk","seq":4,"time":1000,"data":{"turn":1,"step":1,'
    b'"chunk":{"type":"text-delta","index":0,"text":"caf\xc3\xa9 \\ud83d"}}}'
)


def test_a_javascript_line_with_a_lone_surrogate_reads() -> None:
    with pytest.raises(msgspec.DecodeError):  # what the fallback is for
        msgspec.json.decode(JS_LINE)
    record = decode_record(JS_LINE)
    assert record.value["data"]["chunk"]["text"] == "café \ud83d"
    assert list(record.members) == ["type", "seq", "time", "data"]
    assert record.members["seq"] == b"4" and record.members["type"] == b'"assistant/chunk"'
    assert record.members["data"] == JS_LINE[JS_LINE.index(b'{"turn"') : -1]


def test_re_encoding_writes_the_same_escape() -> None:
    assert encode_value(decode_record(JS_LINE).value) == JS_LINE
    assert encode_value(decode_record(JS_LINE).value["data"]) == decode_record(JS_LINE).members["data"]


@pytest.mark.parametrize(
    ("line", "value"),
    [
        (b'"\\ud83d"', "\ud83d"),
        (b'"\\ude00"', "\ude00"),
        (b'"\\ude00\\ud83d"', "\ude00\ud83d"),  # a low then a high half: two lone ones
        (b'"\\ud83dx\\ude00"', "\ud83dx\ude00"),
        (b'"\\ud83d\\ud83d\\ude00"', "\ud83d\U0001f600"),  # a lone high, then a pair
        (b'"\\uD83D"', "\ud83d"),  # uppercase hex is JSON too
        (b'"\\\\\\ud83d"', "\\\ud83d"),  # an escaped backslash, then the escape
        (b'{"\\udc00":[1,"\\ud800"]}', {"\udc00": [1, "\ud800"]}),
        (b'["\\ud83d",{"a":null}]', ["\ud83d", {"a": None}]),
    ],
)
def test_lone_escapes_anywhere_decode_to_lone_code_points(line: bytes, value: Any) -> None:
    record = decode_record(line)
    assert record.value == value
    assert record.members == ({"\udc00": b'[1,"\\ud800"]'} if isinstance(value, dict) else {})


@pytest.mark.parametrize(
    "line",
    [
        b'{"a":"x"}',
        b'{"a":"\\ud83d\\ude00"}',  # a pair: msgspec reads it, the fallback does not
        b'{"a":"\\\\ud83d"}',  # an escaped backslash followed by the letters ud83d
    ],
)
def test_a_record_without_an_escaped_lone_surrogate_is_not_the_fallbacks(line: bytes) -> None:
    with pytest.raises(ValueError, match="^the record holds no escaped lone surrogate$"):
        decode_record(line)


@pytest.mark.parametrize(
    "line",
    [
        b'{"a":"\\ud83d"',
        b'{"a":"\\ud83d",}',
        b'{"a":"\\ud83d","b":NaN}',
        b'{"a":"\\ud83d","b":Infinity}',
        b'{"a":"\\ud83d"} x',
        b'{"a":"\\ud83d","b":01}',
        b'{"a":"\\ud83d\t"}',  # a raw control character inside a string
        b"{'a':\"\\ud83d\"}",
        b'{"a":"\\ud83d","b":"\xff"}',  # not UTF-8
    ],
)
def test_the_fallback_widens_nothing_else(line: bytes) -> None:
    with pytest.raises(ValueError):
        decode_record(line)


def test_a_record_nested_too_deeply_lets_recursion_error_through() -> None:
    line = b"[" * 100_000 + b'"\\ud83d"' + b"]" * 100_000
    with pytest.raises(RecursionError):
        decode_record(line)


def test_members_are_exact_with_any_spacing_and_duplicates_keep_the_last() -> None:
    line = b' { "type" : "x/y" ,\t"data":\r\n{ "s" : "}\\"]" , "t" : [ "\\ud83d" ] } , "n" : -1.5e3 , "type":"z/w" } '
    record = decode_record(line)
    assert record.value == {"type": "z/w", "data": {"s": '}"]', "t": ["\ud83d"]}, "n": -1500.0}
    assert record.members == {"type": b'"z/w"', "data": b'{ "s" : "}\\"]" , "t" : [ "\\ud83d" ] }', "n": b"-1.5e3"}
    assert decode_record(b'{"a":"\\ud83d","b":{}}').members["b"] == b"{}"


# --------------------------------------------------------------------------------- encoding


class Message(msgspec.Struct, rename="camel", omit_defaults=True):
    tool_call_id: str
    text: str
    is_error: bool = False


def test_encode_value_escapes_lone_surrogates_in_lowercase() -> None:
    assert encode_value("\ud83d") == b'"\\ud83d"'
    assert encode_value({"\uDC00k": ["a\ud83d", 1, None, True, 2.5]}) == b'{"\\udc00k":["a\\ud83d",1,null,true,2.5]}'
    assert encode_value(("é", "\ud83d\U0001f600")) == '["é","\\ud83d😀"]'.encode()


def test_encode_value_writes_structs_with_their_field_order_and_renames() -> None:
    assert encode_value(Message("c\udfff", "t")) == b'{"toolCallId":"c\\udfff","text":"t"}'
    assert encode_value(Message("c", "t", True)) == b'{"toolCallId":"c","text":"t","isError":true}'
    assert encode_value([Message("c", "\ud800", True)]) == b'[{"toolCallId":"c","text":"\\ud800","isError":true}]'


def test_encode_value_refuses_what_msgspec_refuses() -> None:
    with pytest.raises(TypeError):
        encode_value({1j})


_JSON_NO_FLOATS = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)
_LONE = st.integers(0xD800, 0xDFFF).map(chr)
_TEXT_WITH_LONE = st.tuples(st.text(max_size=4), _LONE, st.text(max_size=4)).map("".join)


@settings(max_examples=200)
@given(st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
))  # fmt: skip
def test_without_lone_surrogates_encode_value_is_msgspecs_encoding(value: Any) -> None:
    assert encode_value(value) == msgspec.json.encode(value)


@settings(max_examples=200)
@given(value=_JSON_NO_FLOATS, lone=_TEXT_WITH_LONE, as_key=st.booleans())
def test_lone_surrogates_round_trip_through_encode_and_decode(value: Any, lone: str, as_key: bool) -> None:
    data = {lone: value} if as_key else [value, lone]
    line = encode_value(data)
    line.decode("utf-8")  # always UTF-8 text: this raises otherwise
    record = decode_record(line)
    assert record.value == data
    assert encode_value(record.value) == line


@settings(max_examples=100)
@given(members=st.dictionaries(st.text(max_size=5), _JSON_NO_FLOATS, max_size=4), lone=_TEXT_WITH_LONE)
def test_members_match_each_value_as_written(members: dict[str, Any], lone: str) -> None:
    value = {**members, "lone": lone}
    spaced = (", ", " : ")  # json.dumps with ensure_ascii escapes lone surrogates like JavaScript
    line = json.dumps(value, separators=spaced).encode()
    record = decode_record(line)
    assert record == LoneRecord(value, {k: json.dumps(v, separators=spaced).encode() for k, v in value.items()})


def test_displayable_shows_lone_surrogates_as_the_replacement_character() -> None:
    assert displayable("caf\u00e9 \ud83d") == "café \ufffd"
    assert displayable("\ud83d\ude00 \udc00\ud800") == "😀 \ufffd\ufffd"
    assert displayable("plain") == "plain"
