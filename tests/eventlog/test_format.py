"""eventlog.format: values, canonical encodings, header and record codecs, build_event."""

from __future__ import annotations

import datetime
import enum
import math
import time

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog.errors import CorruptLog, InvalidEvent, InvalidSessionId, UnsupportedFormat
from eventlog.format import (
    INVALID_ENVELOPE,
    SEQ_GAP,
    UNPARSABLE,
    Event,
    MalformedRecord,
    RecordDecoder,
    ReplaceOp,
    SessionHeader,
    _check_lossless,
    _plainly_lossless,
    build_event,
    check_not_zstd,
    check_session_id,
    decode_header,
)
from eventlog.values import SystemClock
from tests.eventlog.spec_examples import E1_LINES, E9_EVENTS, E9_ROW

PATH = "/tmp/x.jsonl"
BAD_DATA = 'session event "tool/run" carries non-JSON-serializable data'


# --------------------------------------------------------------------------- ids and clock


@pytest.mark.parametrize(
    "good", ["a", "demo-1", "A.b_c-d", "0" * 128, "96cf59c9-b347-48b9-b234-a5200913ad05"]
)
def test_valid_session_ids(good: str) -> None:
    assert check_session_id(good) == good


@pytest.mark.parametrize(
    "bad", ["", "..", ".a", "-a", "_a", "a/b", "a\x00", "a\n", "a b", "é", "0" * 129, None, 5]
)
def test_invalid_session_ids(bad: object) -> None:
    with pytest.raises(InvalidSessionId, match="invalid session id"):
        check_session_id(bad)
    assert issubclass(InvalidSessionId, ValueError)


def test_system_clock_is_epoch_ms() -> None:
    before = time.time_ns() // 1_000_000
    now = SystemClock().now_ms()
    after = time.time_ns() // 1_000_000
    assert type(now) is int and before <= now <= after


# --------------------------------------------------------------------------- header


def test_e1_header_to_json() -> None:
    header = SessionHeader(id="demo-1", created_at=1767261600000, cwd="/home/ana")
    assert header.to_json() == E1_LINES[0]


def test_e6_child_header_to_json() -> None:
    header = SessionHeader(
        id="demo-1-b",
        created_at=1767268800000,
        cwd="/home/ana",
        parent_session="demo-1",
        seed_length=6,
    )
    assert header.to_json() == (
        b'{"type":"session","version":0,"id":"demo-1-b","createdAt":1767268800000,'
        b'"cwd":"/home/ana","parentSession":"demo-1","seedLength":6,"delegationDepth":0}'
    )


def test_header_to_json_writes_every_key_in_disk_order() -> None:
    header = SessionHeader(
        owner="me",
        agent_preset="p",
        delegation_depth=2,
        origin="subagent",
        seed_length=0,
        parent_session="p1",
        cwd="/",
        created_at=0,
        id="x",
    )
    assert header.to_json() == (
        b'{"type":"session","version":0,"id":"x","createdAt":0,"cwd":"/","parentSession":"p1",'
        b'"seedLength":0,"origin":"subagent","delegationDepth":2,"agentPreset":"p","owner":"me"}'
    )


def test_decode_header_round_trips_e1() -> None:
    header = decode_header(E1_LINES[0], PATH, expected_id="demo-1")
    assert header == SessionHeader(id="demo-1", created_at=1767261600000, cwd="/home/ana")
    assert header.to_json() == E1_LINES[0]


def test_decode_header_without_delegation_depth_reads_zero_and_ignores_unknown_keys() -> None:
    line = b'{"type":"session","version":0,"id":"w","createdAt":5,"cwd":"C:\\\\p","future":[1]}'
    header = decode_header(line, PATH)
    assert header.delegation_depth == 0 and header.cwd == "C:\\p"


def test_decode_header_reads_every_optional_key() -> None:
    line = (
        b'{"type":"session","version":0,"id":"c","createdAt":1,"cwd":"D:/x","parentSession":"p",'
        b'"seedLength":42,"origin":"subagent","delegationDepth":1,"agentPreset":"a","owner":"o"}'
    )
    assert decode_header(line, PATH) == SessionHeader(
        id="c",
        created_at=1,
        cwd="D:/x",
        parent_session="p",
        seed_length=42,
        origin="subagent",
        delegation_depth=1,
        agent_preset="a",
        owner="o",
    )


def test_e11_newer_version_refused_first() -> None:
    with pytest.raises(UnsupportedFormat) as info:
        decode_header(b'{"type":"session","version":3,"id":"x"}', PATH)
    assert str(info.value) == (
        'session "x" uses log format v3, but this turnlog reads only v0: the log was written by a '
        f"newer program — upgrade turnlog to open it (raw log: {PATH})"
    )
    assert info.value.version == 3


def test_older_version_message_names_requested_id_then_file_name() -> None:
    with pytest.raises(UnsupportedFormat) as info:
        decode_header(b'{"version":-1,"id":"hdr"}', PATH, expected_id="req")
    assert str(info.value) == (
        'session "req" uses log format v-1, older than the supported v0, and this build ships no '
        f"upgrade path for it (raw log: {PATH})"
    )
    with pytest.raises(UnsupportedFormat, match=r'^session "x.jsonl" uses log format v1\.5, but'):
        decode_header(b'{"version":1.5,"id":7}', PATH)


@pytest.mark.parametrize(
    "line",
    [b"[0]", b'"session"', b'{"type":"session","version":"1","id":"x","createdAt":1}'],
)
def test_non_object_or_non_number_version_is_corrupt_not_unsupported(line: bytes) -> None:
    with pytest.raises(CorruptLog, match="first line is not a session header") as info:
        decode_header(line, PATH)
    assert info.value.line == 1 and info.value.offset == 0
    assert str(info.value).startswith(f'corrupt session log "{PATH}": ')


@pytest.mark.parametrize("line", [b"{", b"\xff\xfe", b'{"version":NaN}', b""])
def test_header_not_json(line: bytes) -> None:
    with pytest.raises(CorruptLog, match="header line is not valid JSON"):
        decode_header(line, PATH)


@pytest.mark.parametrize("key", ["sandboxMode", "approvalPolicy"])
def test_retired_policy_fields(key: str) -> None:
    line = f'{{"type":"session","version":0,"id":"x","createdAt":1,"{key}":"x"}}'.encode()
    with pytest.raises(CorruptLog, match="session header uses retired policy baseline fields"):
        decode_header(line, PATH)


@pytest.mark.parametrize(
    "fields",
    [
        '"version":0,"id":"x","createdAt":1',  # no type
        '"type":"turn/start","version":0,"id":"x","createdAt":1',
        '"type":"session","id":"x","createdAt":1',  # no version
        '"type":"session","version":-0,"id":"x","createdAt":1',
        '"type":"session","version":0.0,"id":"x","createdAt":1',
        '"type":"session","version":false,"id":"x","createdAt":1',
        '"type":"session","version":0,"createdAt":1',
        '"type":"session","version":0,"id":3,"createdAt":1',
        '"type":"session","version":0,"id":"x"',
        '"type":"session","version":0,"id":"x","createdAt":-0',
        '"type":"session","version":0,"id":"x","createdAt":-1',
        '"type":"session","version":0,"id":"x","createdAt":1.0',
        '"type":"session","version":0,"id":"x","createdAt":9007199254740992',
        '"type":"session","version":0,"id":"x","createdAt":true',
        '"type":"session","version":0,"id":"x","createdAt":1,"cwd":"rel/path"',
        '"type":"session","version":0,"id":"x","createdAt":1,"cwd":null',
        '"type":"session","version":0,"id":"x","createdAt":1,"parentSession":1',
        '"type":"session","version":0,"id":"x","createdAt":1,"seedLength":-1',
        '"type":"session","version":0,"id":"x","createdAt":1,"origin":"user"',
        '"type":"session","version":0,"id":"x","createdAt":1,"delegationDepth":-0',
        '"type":"session","version":0,"id":"x","createdAt":1,"delegationDepth":null',
        '"type":"session","version":0,"id":"x","createdAt":1,"agentPreset":2',
        '"type":"session","version":0,"id":"x","createdAt":1,"owner":""',
    ],
)
def test_header_shape_failures(fields: str) -> None:
    with pytest.raises(CorruptLog, match="first line is not a session header: "):
        decode_header(("{" + fields + "}").encode(), PATH)


def test_header_identity() -> None:
    with pytest.raises(CorruptLog) as info:
        decode_header(E1_LINES[0], PATH, expected_id="Demo-1")
    assert str(info.value) == (
        f'corrupt session log "{PATH}": requested id "Demo-1" does not match header id "demo-1"'
    )


def test_zstandard_magic() -> None:
    with pytest.raises(UnsupportedFormat, match="Zstandard session logs are not supported yet") as info:
        check_not_zstd(b"\x28\xb5\x2f\xfd\x00\x01", PATH)
    assert info.value.version is None
    check_not_zstd(E1_LINES[0], PATH)


# --------------------------------------------------------------------------- events


def test_e1_records_round_trip_byte_for_byte() -> None:
    decoder = RecordDecoder()
    for seq, line in enumerate(E1_LINES[1:]):
        [event] = decoder.decode(line, seq)
        assert event.seq == seq
        assert event.to_json() == line
        assert msgspec.json.encode(event) == line


class Source(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    kind: str
    rpc_id: str


class Msg(msgspec.Struct, forbid_unknown_fields=True):
    id: str
    role: str
    source: Source
    content: list[dict[str, str]]


class Strict(msgspec.Struct, forbid_unknown_fields=True):
    id: str


class Completed(msgspec.Struct, tag_field="kind", tag="completed"):
    pass


class TurnEnd(msgspec.Struct, rename="camel", omit_defaults=True):
    turn: int
    reason: Completed
    extra_note: str | msgspec.UnsetType = msgspec.UNSET


class Holder(msgspec.Struct):
    value: object


def test_event_values_and_typed_decode() -> None:
    [event] = RecordDecoder().decode(E1_LINES[3], 2)
    assert event.type == "user/message" and event.surface_op == "append"
    assert event.value()["content"] == [{"type": "text", "text": "Café at 9?"}]

    assert event.decode(Msg).source == Source(kind="user", rpc_id="7")

    with pytest.raises(msgspec.ValidationError):
        event.decode(Strict)


def test_event_encoding_of_optional_keys() -> None:
    event = Event(
        "tool/result",
        9,
        -3,
        msgspec.Raw(b"null"),
        ReplaceOp(start=2, end=4),
        (2, 3, 4),
        True,
    )
    assert event.to_json() == (
        b'{"type":"tool/result","seq":9,"time":-3,"data":null,'
        b'"surfaceOp":{"op":"replace","start":2,"end":4},"sourceEventSeqs":[2,3,4],"ignorable":true}'
    )


def test_types_are_interned_per_decoder() -> None:
    decoder = RecordDecoder()
    a = decoder.decode(b'{"type":"x' + b'/y","seq":0,"time":0,"data":1}', 0)[0]
    b = decoder.decode(b'{"type":"x/y","seq":1,"time":0,"data":2}', 1)[0]
    assert a.type is b.type


E10 = [
    (b'{"type":"turn/start","seq":6.0,"time":1,"data":{"turn":2}}', INVALID_ENVELOPE),
    (b'{"type":"turn/start","seq":6,"time":9007199254740992,"data":{"turn":2}}', INVALID_ENVELOPE),
    (b'{"type":"turn/start","seq":6,"time":1}', INVALID_ENVELOPE),
    (b'{"type":"turn/start","seq":6,"time":1,"data":{"turn":2},"ignorable":false}', INVALID_ENVELOPE),
    (b'{"type":"turn/start","seq":6,"time":1,"data":{"turn":2},"surfaceOp":"append"}', INVALID_ENVELOPE),
    (b'{"type":"Turn_Start","seq":6,"time":1,"data":{}}', INVALID_ENVELOPE),
    (b'{"type":"turn/start","seq":7,"time":1,"data":{"turn":2}}', SEQ_GAP),
]


@pytest.mark.parametrize(("line", "reason"), E10)
def test_e10_envelope_strictness(line: bytes, reason: str) -> None:
    with pytest.raises(MalformedRecord) as info:
        RecordDecoder().decode(line, 6)
    assert info.value.reason == reason
    if reason == SEQ_GAP:
        assert info.value.detail == "expected 6, got 7"


def test_e10_valid_negative_time_and_ignorable() -> None:
    line = b'{"type":"turn/start","seq":6,"time":-5,"data":{"turn":2},"ignorable":true}'
    [event] = RecordDecoder().decode(line, 6)
    assert event.time == -5 and event.ignorable is True and event.to_json() == line


@pytest.mark.parametrize(
    "line",
    [
        b'{"type":"a/b","seq":0,"time":1e3,"data":1}',
        b'{"type":"a/b","seq":true,"time":1,"data":1}',
        b'{"type":"a/b","seq":-1,"time":1,"data":1}',
        b'{"type":"a/b","seq":0,"time":-9007199254740992,"data":1}',
        b'{"type":"a/b","seq":0,"time":1,"data":1,"extra":1}',
        b'{"type":"a/b","seq":0,"time":1,"data":1,"ignorable":null}',
        b'{"type":"a/b","seq":0,"time":1,"data":1,"sourceEventSeqs":[]}',
        b'{"type":"a/b","seq":0,"time":1,"data":1,"surfaceOp":null}',
        b'{"type":"ab","seq":0,"time":1,"data":1}',
        b'{"type":"a/b/","seq":0,"time":1,"data":1}',
        b'{"type":"a/b\\n","seq":0,"time":1,"data":1}',
        b'{"type":5,"seq":0,"time":1,"data":1}',
        b'{"seq":0,"time":1,"data":1}',
        b'{"type":"user/message","seq":0,"time":1,"data":{}}',
        b'{"type":"user/message","seq":0,"time":1,"data":{},"surfaceOp":null}',
        b'{"type":"user/message","seq":0,"time":1,"data":{},"surfaceOp":"prepend"}',
        b'{"type":"user/message","seq":3,"time":1,"data":{},"surfaceOp":{"op":"replace","start":1,"end":3}}',
        b'{"type":"user/message","seq":3,"time":1,"data":{},"surfaceOp":{"start":1,"end":2}}',
        b'{"type":"user/message","seq":3,"time":1,"data":{},"surfaceOp":{"end":2,"op":"replace","start":1}}',
        b'{"type":"user/message","seq":3,"time":1,"data":{},"surfaceOp":{"op":"replace","start":1,"end":2,"x":0}}',
        b'{"type":"user/message","seq":3,"time":1,"data":{},"surfaceOp":"append","sourceEventSeqs":[]}',
        b'{"type":"user/message","seq":3,"time":1,"data":{},"surfaceOp":"append","sourceEventSeqs":[1,1]}',
        b'{"type":"user/message","seq":3,"time":1,"data":{},"surfaceOp":"append","sourceEventSeqs":[3]}',
        b'{"type":"user/message","seq":3,"time":1,"data":{},"surfaceOp":"append","sourceEventSeqs":[1.0]}',
        b'{"type":"user/message","seq":3,"time":1,"data":{},"surfaceOp":"append","sourceEventSeqs":null}',
    ],
)
def test_envelope_rules(line: bytes) -> None:
    seq = msgspec.json.decode(line).get("seq", 0)
    with pytest.raises(MalformedRecord) as info:
        RecordDecoder().decode(line, seq if type(seq) is int and seq >= 0 else 0)
    assert info.value.reason == INVALID_ENVELOPE, info.value


def test_surface_events_accepted() -> None:
    decoder = RecordDecoder()
    lines = [
        b'{"type":"assistant/message","seq":3,"time":1,"data":{},"surfaceOp":"append","sourceEventSeqs":[]}',
        b'{"type":"tool/result","seq":4,"time":1,"data":{},"surfaceOp":"append","sourceEventSeqs":[3,0]}',
        b'{"type":"user/message","seq":5,"time":1,"data":{},"surfaceOp":{"op":"replace","start":4,"end":1},"sourceEventSeqs":[1,4]}',
    ]
    for seq, line in enumerate(lines, start=3):
        [event] = decoder.decode(line, seq)
        assert event.to_json() == line
    assert event.surface_op == ReplaceOp(start=4, end=1)
    assert event.source_event_seqs == (1, 4)


@pytest.mark.parametrize(
    "line", [b"", b"\r", b"   ", b"[0]", b"null", b'"x"', b'{"type":"a/b","seq":0,', b"{}x", b'{"a":NaN}']
)
def test_unparsable_records(line: bytes) -> None:
    with pytest.raises(MalformedRecord) as info:
        RecordDecoder().decode(line, 0)
    assert info.value.reason == UNPARSABLE


def test_cr_before_lf_is_tolerated() -> None:
    [event] = RecordDecoder().decode(b'{"type":"a/b","seq":0,"time":1,"data":1}\r', 0)
    assert event.to_json() == b'{"type":"a/b","seq":0,"time":1,"data":1}'


# --------------------------------------------------------------------------- packed rows


def test_e9_text_row() -> None:
    events = RecordDecoder().decode(E9_ROW, 4)
    assert [e.to_json() for e in events] == E9_EVENTS


def test_reasoning_and_tool_call_rows() -> None:
    decoder = RecordDecoder()
    reasoning = decoder.decode(
        b'{"type":"reasoning-chunks","seq0":0,"time0":-1,"data":{"turn":2,"step":3,"index":1,"dt":[],"texts":["hm"]}}',
        0,
    )
    assert [e.to_json() for e in reasoning] == [
        b'{"type":"assistant/chunk","seq":0,"time":-1,"data":{"turn":2,"step":3,"chunk":{"type":"reasoning-delta","index":1,"text":"hm"}}}'
    ]
    named = decoder.decode(
        b'{"type":"tool-call-chunks","seq0":1,"time0":10,"data":{"turn":1,"step":1,"index":0,"id":"c1","name":"read","dt":[5],"args":["{\\"p","\\"}"]}}',
        1,
    )
    assert [e.to_json() for e in named] == [
        b'{"type":"assistant/chunk","seq":1,"time":10,"data":{"turn":1,"step":1,"chunk":{"type":"tool-call-delta","index":0,"id":"c1","name":"read","argumentsDelta":"{\\"p"}}}',
        b'{"type":"assistant/chunk","seq":2,"time":15,"data":{"turn":1,"step":1,"chunk":{"type":"tool-call-delta","index":0,"id":"c1","name":"read","argumentsDelta":"\\"}"}}}',
    ]
    unnamed = decoder.decode(
        b'{"type":"tool-call-chunks","seq0":3,"time0":10,"data":{"turn":1,"step":1,"index":0,"id":"c1","dt":[],"args":["x"]}}',
        3,
    )
    assert unnamed[0].to_json() == (
        b'{"type":"assistant/chunk","seq":3,"time":10,"data":{"turn":1,"step":1,"chunk":{"type":"tool-call-delta","index":0,"id":"c1","argumentsDelta":"x"}}}'
    )


ROW = '{"type":"text-chunks","seq0":4,"time0":1000,"data":{"turn":1,"step":1,"index":0,"dt":[12,-3],"texts":["Hel","lo","!"]}}'


@pytest.mark.parametrize(
    "line",
    [
        ROW.replace('"dt":[12,-3]', '"dt":[12]'),
        ROW.replace('"texts":["Hel","lo","!"]', '"texts":[]').replace('"dt":[12,-3]', '"dt":[]'),
        ROW.replace('"texts":["Hel","lo","!"]', '"texts":[]'),
        ROW.replace('"time0":1000', '"time0":1000,"x":1'),
        ROW.replace('"index":0', '"index":0,"x":1'),
        ROW.replace('"index":0,', ""),
        ROW.replace('"seq0":4', '"seq":4'),
        ROW.replace('"seq0":4', '"seq0":4.0'),
        ROW.replace('"time0":1000', '"time0":"1000"'),
        ROW.replace('"texts":["Hel"', '"texts":[1'),
        ROW.replace('"dt":[12,-3]', '"dt":[12,0.5]'),
        ROW.replace('"turn":1', '"turn":"1"'),
        ROW.replace('"time0":1000', '"time0":9007199254740991'),  # running time overflows
        ROW.replace("text-chunks", "tool-call-chunks"),  # no id/args
    ],
)
def test_malformed_rows_are_unparsable(line: str) -> None:
    with pytest.raises(MalformedRecord) as info:
        RecordDecoder().decode(line.encode(), 4)
    assert info.value.reason == UNPARSABLE, info.value


def test_row_seq0_must_be_next_seq() -> None:
    with pytest.raises(MalformedRecord) as info:
        RecordDecoder().decode(E9_ROW.replace(b'"seq0":4', b'"seq0":5'), 4)
    assert info.value.reason == SEQ_GAP and info.value.detail == "expected 4, got 5"


# --------------------------------------------------------------------------- build_event


def test_build_event_matches_e1_records() -> None:
    built = [
        build_event("turn/start", 0, 1767261600100, {"turn": 1}),
        build_event("step/start", 1, 1767261600101, {"turn": 1, "step": 1}),
        build_event(
            "user/message",
            2,
            1767261600102,
            {
                "id": "msg-1",
                "role": "user",
                "source": {"kind": "user", "rpcId": "7"},
                "content": [{"type": "text", "text": "Café at 9?"}],
            },
            surface_op="append",
        ),
    ]
    assert [e.to_json() for e in built] == E1_LINES[1:4]


def test_build_event_structs_and_sequences() -> None:
    event = build_event("turn/end", 5, 1767261601502, TurnEnd(turn=1, reason=Completed()))
    assert event.to_json() == E1_LINES[6]
    event = build_event("a/b", 0, 0, (1, [2.5, None, True], {"k": "v"}), ignorable=True)
    assert event.to_json() == b'{"type":"a/b","seq":0,"time":0,"data":[1,[2.5,null,true],{"k":"v"}],"ignorable":true}'
    assert bytes(build_event("a/b", 0, 0, None).data) == b"null"


@pytest.mark.parametrize(
    "data",
    [
        {"n": float("nan")},
        {"n": float("inf")},
        {"n": -0.0},
        {1: "x"},
        {"n": 2**53},
        {"n": -(2**53)},
        b"x",
        {"s": {1, 2}},
        {"d": datetime.datetime(2026, 1, 1)},
        {"o": object()},
        [msgspec.Raw(b"1")],
    ],
)
def test_build_event_refuses_lossy_data(data: object) -> None:
    with pytest.raises(InvalidEvent, match=BAD_DATA):
        build_event("tool/run", 0, 0, data)


def test_build_event_refuses_cycles_and_lossy_struct_fields() -> None:
    cyclic: list[object] = []
    cyclic.append(cyclic)
    with pytest.raises(InvalidEvent, match=BAD_DATA):
        build_event("tool/run", 0, 0, {"c": cyclic})

    with pytest.raises(InvalidEvent, match=BAD_DATA):
        build_event("tool/run", 0, 0, Holder(value=math.nan))
    shared = [1]
    assert bytes(build_event("tool/run", 0, 0, [shared, shared]).data) == b"[[1],[1]]"


@pytest.mark.parametrize(
    ("data", "detail"),
    [
        ({"n": {"m": [1, 2, math.nan]}}, "nan is not a finite number at data.n.m[2]"),
        ([{"k": {3: "x"}}], "key 3 is not a string at data[0].k"),
        (Holder(value=[2**53]), "integer 9007199254740992 is outside the safe range ±(2**53-1) at data.value[0]"),
        ({"u": msgspec.UNSET}, "UnsetType has no JSON form at data.u"),
        (-0.0, "-0.0 has no JSON form at data"),
    ],
)
def test_build_event_names_where_data_is_lossy(data: object, detail: str) -> None:
    with pytest.raises(InvalidEvent) as info:
        build_event("tool/run", 0, 0, data)
    assert str(info.value) == f"{BAD_DATA}: {detail}"


class _Text(str):
    pass


_SAFE = 2**53 - 1
_PLAIN_SCALARS = (
    st.none() | st.booleans() | st.text(max_size=5) | st.integers(-_SAFE, _SAFE)
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: math.copysign(1.0, x) > 0 or x != 0)
)
_ODD_SCALARS = st.sampled_from(
    [math.nan, math.inf, -math.inf, -0.0, 2**53, -(2**53), 2**70, msgspec.UNSET, b"x", _Text("t"), enum.IntEnum("E", "A").A]
)


def _values(scalars: st.SearchStrategy[object], odd_keys: bool) -> st.SearchStrategy[object]:
    keys = st.text(max_size=3) | (st.integers(0, 3) | st.builds(_Text, st.text(max_size=2)) if odd_keys else st.nothing())
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(keys, inner, max_size=3)
        | st.builds(Holder, value=inner),
        max_leaves=12,
    )


@given(_values(_PLAIN_SCALARS | _ODD_SCALARS, odd_keys=True))
@settings(max_examples=400)
def test_plain_fast_path_never_admits_what_the_walk_refuses(data: object) -> None:
    # build_event skips the walk for what _plainly_lossless admits: that must be nothing the walk
    # (the rule, which names each problem) refuses.
    if _plainly_lossless(data):
        _check_lossless(data, set())


@given(_values(_PLAIN_SCALARS, odd_keys=False))
def test_plain_fast_path_admits_plain_json_values(data: object) -> None:
    assert _plainly_lossless(data)


def test_build_event_accepts_int_enums_within_bounds() -> None:
    class Level(enum.IntEnum):
        HIGH = 3
        HUGE = 2**60

    assert bytes(build_event("a/b", 0, 0, {"l": Level.HIGH}).data) == b'{"l":3}'
    with pytest.raises(InvalidEvent, match=BAD_DATA):
        build_event("tool/run", 0, 0, {"l": Level.HUGE})


@pytest.mark.parametrize("type_", ["Tool Run", "tool", "tool/", "/x", "tool/Run", "a//b", "", 5])
def test_build_event_refuses_bad_types(type_: object) -> None:
    with pytest.raises(InvalidEvent):
        build_event(type_, 0, 0, {})  # type: ignore[arg-type]


def test_build_event_writes_end_seed() -> None:
    assert build_event("session/end-seed", 6, 1767268800000, {}).to_json() == (
        b'{"type":"session/end-seed","seq":6,"time":1767268800000,"data":{}}'
    )


@pytest.mark.parametrize(
    ("type_", "kwargs"),
    [
        ("turn/start", {"surface_op": "append"}),
        ("turn/start", {"source_event_seqs": [0]}),
        ("user/message", {}),
        ("user/message", {"surface_op": "prepend"}),
        ("user/message", {"surface_op": "append", "source_event_seqs": []}),
        ("tool/result", {"surface_op": "append", "source_event_seqs": [5]}),
        ("tool/result", {"surface_op": "append", "source_event_seqs": [1, 1]}),
        ("tool/result", {"surface_op": "append", "source_event_seqs": [True]}),
        ("tool/result", {"surface_op": "append", "source_event_seqs": "12"}),
        ("user/message", {"surface_op": ReplaceOp(start=1, end=5), "source_event_seqs": [1, 5]}),
        ("user/message", {"surface_op": ReplaceOp(start=-1, end=2), "source_event_seqs": [2]}),
        ("user/message", {"surface_op": ReplaceOp(start=1, end=2)}),
        ("user/message", {"surface_op": ReplaceOp(start=1, end=3), "source_event_seqs": [1, 2]}),
        ("user/message", {"surface_op": "append", "ignorable": 1}),
    ],
)
def test_build_event_surface_rules(type_: str, kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidEvent):
        build_event(type_, 5, 0, {}, **kwargs)  # type: ignore[arg-type]


def test_build_event_surface_ok() -> None:
    event = build_event(
        "assistant/message", 5, 0, {}, surface_op=ReplaceOp(start=1, end=3), source_event_seqs=[1, 2, 3]
    )
    assert event.source_event_seqs == (1, 2, 3)
    assert build_event("assistant/message", 5, 0, {}, surface_op="append", source_event_seqs=[]).source_event_seqs == ()


@pytest.mark.parametrize(("seq", "time_"), [(-1, 0), (True, 0), (0, 1.0), (0, 2**53), (2**53, 0)])
def test_build_event_envelope_numbers(seq: object, time_: object) -> None:
    with pytest.raises(InvalidEvent):
        build_event("a/b", seq, time_, {})  # type: ignore[arg-type]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53 - 1), max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: f != 0 or math.copysign(1, f) > 0)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_build_then_read_round_trip(value: object) -> None:
    event = build_event("x/y", 0, 0, value)
    [read] = RecordDecoder().decode(event.to_json(), 0)
    assert read == event
    assert read.value() == value


async def test_append_takes_a_str_subclass_type_as_its_string(tmp_path) -> None:
    # log-format §3.3, log-format §3.5: the type is a string of the right shape; a str subclass
    # (a StrEnum of the owner's types) is one. It was refused with a bare TypeError from interning it.
    from eventlog import SessionStore, read_log

    class Kind(enum.StrEnum):
        RUN = "tool/run"

    async with SessionStore(tmp_path).create(id="s") as session:
        event = session.append(Kind.RUN, {"n": 1})
        assert type(event.type) is str and event.type == "tool/run"
        await session.flush()
    [read] = read_log(tmp_path / "s.jsonl").events
    assert read.to_json() == b'{"type":"tool/run","seq":0,"time":%d,"data":{"n":1}}' % read.time
