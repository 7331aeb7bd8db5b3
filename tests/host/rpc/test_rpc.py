"""JSON-RPC 2.0 over stdio (host §4, host §8): framing, classification, every error code, the
methods, ordering guarantees, concurrency and the shutdown paths. Expected strings, codes and
orders are copied from the spec."""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

import eventlog.fileio
from eventlog import SessionStore, read_log
from host.rpc import (
    ID_PROBE_BYTES,
    Invalid,
    Line,
    LineSplitter,
    Overlong,
    Request,
    TooDeep,
    classify,
    encode,
    overlong_id,
)
from tests.host.rpc_support import (
    Process,
    error_of,
    events_of,
    prompt,
    request,
    running_server,
    script,
)

ID_RULE = "[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


# === framing (pure) ==============================================================================


def test_splitter_splits_on_lf_and_keeps_a_line_of_exactly_the_limit() -> None:
    splitter = LineSplitter(5)
    assert splitter.feed(b"ab\n12345\n") == [Line(b"ab"), Line(b"12345")]
    assert splitter.feed(b"123456\nok\n") == [Overlong(b"123456"), Line(b"ok")]


def test_splitter_reports_an_overlong_line_once_and_drops_it_up_to_the_next_lf() -> None:
    splitter = LineSplitter(12)
    assert splitter.feed(b'{"id":1,"x') == []
    assert splitter.feed(b"y" * 12) == []  # too long, but its head is not complete yet
    assert splitter.feed(b"y" * ID_PROBE_BYTES) == [Overlong(b'{"id":1,"x' + b"y" * (ID_PROBE_BYTES - 10))]
    assert splitter.feed(b"zzzzzzzzzzzzzzzz") == []  # still the same line: dropped, never buffered
    assert splitter.feed(b"zz\nnext\n") == [Line(b"next")]


@pytest.mark.parametrize("piece", [1, 100, 601, 5000])
def test_splitter_head_of_an_overlong_line_does_not_depend_on_chunking(piece: int) -> None:
    """host §8: the id is searched in the first 1024 bytes of the line, also under a smaller limit."""
    line = b'{"pad":"' + b"p" * 690 + b'","id":7,"method":"session/list"}'
    data = line + b"\n" + line
    splitter = LineSplitter(600)
    items = [item for start in range(0, len(data), piece) for item in splitter.feed(data[start : start + piece])]
    items += splitter.finish()
    assert items == [Overlong(line), Overlong(line)]
    assert [overlong_id(item.head) for item in items if isinstance(item, Overlong)] == [7, 7]


def test_splitter_keeps_only_the_probe_of_an_overlong_line() -> None:
    limit = 2 * ID_PROBE_BYTES
    line = b"x" * (limit + 10)
    (item,) = LineSplitter(limit).feed(line + b"\n")
    assert item == Overlong(line[:ID_PROBE_BYTES])


def test_splitter_gives_the_unterminated_last_line_at_the_end() -> None:
    splitter = LineSplitter(100)
    assert splitter.feed(b"a\nb") == [Line(b"a")]
    assert splitter.finish() == [Line(b"b")]
    assert splitter.finish() == []


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")), max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=120), max_size=6),
)
def test_splitter_result_does_not_depend_on_how_input_is_chunked(lines: list[bytes], cuts: list[int]) -> None:
    data = b"".join(line + b"\n" for line in lines)
    whole = LineSplitter(6).feed(data)
    splitter = LineSplitter(6)
    pieces: list[Line | Overlong] = []
    start = 0
    for cut in sorted(min(c, len(data)) for c in cuts) + [len(data)]:
        pieces += splitter.feed(data[start:cut])
        start = cut
    # An overlong line is reported with whatever head was buffered when it was detected; compare
    # what matters: the same kinds in the same order, and the same complete lines.
    assert [type(p) for p in pieces] == [type(w) for w in whole]
    assert [p for p in pieces if isinstance(p, Line)] == [w for w in whole if isinstance(w, Line)]
    assert [type(w) for w in whole] == [Line if len(line) <= 6 else Overlong for line in lines]


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":"r-1","method":"session/prompt","params":{"x":"', "r-1"),
        (b'{"id" : 42 ,"method":"initialize"', 42),
        (b'{"method":"x","id":-7}', -7),
        (b'{"id":"a\\"b\\u00e9","method":', 'a"b\u00e9'),
        (b'{"method":"session/prompt","params":{"text":"xxxxx', None),
        (b'{"id":true,"method":"x"', None),
        (b'{"id":null,"method":"x"', None),
        (b'{"id":1.5,"method":"x"', None),
        (b'{"id":"unterminated', None),
        (b'{"id":12', None),  # the integer may continue beyond the probe
    ],
)
def test_overlong_id(head: bytes, expected: object) -> None:
    assert overlong_id(head) == expected


# === classification (pure) =======================================================================


@pytest.mark.parametrize("line", [b"\xff\xfe{}", b"{", b'{"id":1,}', b"NaN", b'{"id":Infinity,"method":"x"}', b"hello"])
def test_invalid_utf8_or_json_is_invalid(line: bytes) -> None:
    assert classify(line) == Invalid(len(line))


@pytest.mark.parametrize(
    "line",
    [
        b"[]",
        b'[{"jsonrpc":"2.0","id":1,"method":"initialize"}]',
        b"3",
        b'"text"',
        b"null",
        b"true",
        b'{"jsonrpc":"2.0","method":"initialized"}',
        b'{"jsonrpc":"2.0","id":1,"result":{}}',
        b'{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}',
        b'{"jsonrpc":"2.0","id":true,"method":"initialize"}',
        b'{"jsonrpc":"2.0","id":null,"method":"initialize"}',
        b'{"jsonrpc":"2.0","id":{},"method":"initialize"}',
        b'{"jsonrpc":"2.0","id":[1],"method":"initialize"}',
        b'{"jsonrpc":"2.0","id":1,"method":7}',
    ],
)
def test_frames_that_are_not_requests_are_dropped(line: bytes) -> None:
    assert classify(line) is None


def test_a_request_has_a_string_or_number_id_and_a_string_method() -> None:
    assert classify(b'{"id":"a","method":"m","params":{"k":1}}') == Request("a", "m", {"k": 1})
    assert classify(b'{"id":7,"method":"m"}') == Request(7, "m", {})
    assert classify(b'{"id":7.5,"method":"m","params":[1,2]}') == Request(7.5, "m", {})
    assert classify(b'{"method":"m","id":0,"params":null}') == Request(0, "m", {})


def test_escapes_and_surrogate_pairs_decode() -> None:
    frame = classify(b'{"id":"x","method":"m","params":{"t":"\\u00e9\\ud83d\\ude00\\n"}}')
    assert frame == Request("x", "m", {"t": "\u00e9\U0001f600\n"})


@pytest.mark.parametrize(
    "line",
    [
        b'{"id":"x","method":"m","params":{"t":"\\ud800"}}',
        b'{"id":"x","method":"m","params":{"t":"a\\udfffb"}}',
        b'{"id":"x","method":"m","params":{"\\ud83d":1}}',
        b'{"id":"x","method":"m","params":{"n":1e400}}',
        b'{"id":"x","method":"m","params":{"n":-1e400}}',
        b'{"id":"x","method":"m","params":{"n":' + b"9" * 400 + b"}}",
        b'{"id":"x","method":"m","params":{"n":' + b"9" * 5000 + b"}}",
    ],
)
def test_unstorable_json_marks_a_request_unsupported(line: bytes) -> None:
    frame = classify(line)
    assert isinstance(frame, Request) and frame.unsupported


def test_json_nested_too_deeply_to_parse_is_too_deep_not_a_crash() -> None:
    deep = b'{"id":"x","method":"m","params":{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}}"
    assert classify(deep) == TooDeep(len(deep), "x")


def test_a_deeply_nested_lone_surrogate_is_found() -> None:
    depth = 250  # the deepest a request may nest, with the frame, params and "a" around it
    line = b'{"id":"x","method":"m","params":{"a":' + b"[" * depth + b'"\\ud800"' + b"]" * depth + b"}}"
    frame = classify(line)
    assert isinstance(frame, Request) and frame.unsupported


def test_large_but_representable_numbers_are_supported() -> None:
    frame = classify(b'{"id":"x","method":"m","params":{"n":123456789012345678901234567890,"f":1e308}}')
    assert isinstance(frame, Request) and not frame.unsupported


def test_encode_is_compact_with_raw_non_ascii_and_escaped_lone_surrogates() -> None:
    assert encode({"a": "é 😀", "b": [1, None]}) == '{"a":"é 😀","b":[1,null]}\n'.encode()
    line = encode({"id": "x\ud800"})
    assert line == b'{"id":"x\\ud800"}\n'
    assert json.loads(line) == {"id": "x\ud800"}


# === the server in process =======================================================================


async def test_initialize_reply_and_route(tmp_path: Path) -> None:
    async with running_server(tmp_path) as s:
        await s.wire.send(
            request("7c0e1f2a", "initialize", {"cwd": str(tmp_path), "provider": "scripted", "model": "scripted", "maxTokens": 4096})
        )
        reply = await s.wire.reply("7c0e1f2a")
        assert list(reply) == ["jsonrpc", "id", "result"]
        version = reply["result"]["turnlog"]["version"]
        instance = reply["result"]["turnlog"]["instance"]
        assert reply["result"] == {
            "serverInfo": {"name": "deepseek-harness-sdk-runtime", "version": "0.0.1"},
            "turnlog": {"version": version, "root": str(tmp_path), "instance": instance},
        }
        assert isinstance(version, str) and version
        assert re.fullmatch(r"[0-9a-f]{32}", instance)
        # host §4.3.1: the instance is the process's, the same for every initialize
        await s.wire.send(request("again", "initialize", {}))
        assert (await s.wire.reply("again"))["result"]["turnlog"]["instance"] == instance


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"cwd": 5}, "cwd", "initialize cwd must be a string"),
        ({"provider": ""}, "provider", "initialize provider must be a non-empty string"),
        ({"model": 3}, "model", "initialize model must be a non-empty string"),
        ({"maxTokens": True}, "maxTokens", "initialize maxTokens must be a positive safe integer"),
        ({"maxTokens": 0}, "maxTokens", "initialize maxTokens must be a positive safe integer"),
        ({"maxTokens": 1.5}, "maxTokens", "initialize maxTokens must be a positive safe integer"),
        ({"maxTokens": 2**53}, "maxTokens", "initialize maxTokens must be a positive safe integer"),
        ({"reasoningEffort": ""}, "reasoningEffort", "initialize reasoningEffort must be a non-empty string"),
        ({"streamDeltas": "yes"}, "streamDeltas", "initialize streamDeltas must be a boolean"),
        # checked in order: cwd before provider, provider before maxTokens
        ({"cwd": 1, "provider": ""}, "cwd", "initialize cwd must be a string"),
        ({"maxTokens": 0, "provider": ""}, "provider", "initialize provider must be a non-empty string"),
    ],
)
async def test_initialize_param_errors(tmp_path: Path, params: dict[str, Any], field: str, message: str) -> None:
    async with running_server(tmp_path) as s:
        await s.wire.send(request("i", "initialize", params))
        reply = await s.wire.reply("i")
        assert reply["error"] == {"code": -32603, "message": message, "data": {"code": "invalid-params", "field": field}}


async def test_initialize_unknown_provider_leaves_the_route(tmp_path: Path) -> None:
    async with running_server(tmp_path) as s:
        await s.wire.send(request("i", "initialize", {"provider": "nope", "model": "m"}))
        reply = await s.wire.reply("i")
        assert reply["error"] == {
            "code": -32603,
            "message": 'no adapter registered for provider "nope"',
            "data": {"code": "unknown-provider", "provider": "nope"},
        }
        await s.wire.send(prompt("p", "main", "hi"))
        frames = await s.wire.idle("main")
        assert events_of(frames)[-3]["data"]["message"]["content"] == [{"type": "text", "text": "You said: hi"}]


async def test_plain_prompt_frames_in_order(tmp_path: Path) -> None:
    """host §4.3.2 and host §3.11's plain text turn: receipt, running, reply, the turn, idle."""
    async with running_server(tmp_path) as s:
        await s.wire.send(prompt("r-1", "main", "hi"))
        frames = await s.wire.idle("main")
    receipt, running, reply = frames[:3]
    message = receipt["params"]["event"]["data"]["inserted"][0]
    assert receipt["method"] == "session.event" and receipt["params"]["sessionId"] == "main"
    assert receipt["params"]["event"]["type"] == "agent/inbox/spliced"
    assert receipt["params"]["event"]["seq"] == 0
    assert message["source"] == {"kind": "user", "rpcId": "r-1"}
    assert list(message) == ["id", "role", "source", "content"]
    assert running == {"jsonrpc": "2.0", "method": "session.status", "params": {"sessionId": "main", "status": "running"}}
    assert reply == {"jsonrpc": "2.0", "id": "r-1", "result": {"messageId": message["id"]}}
    events = events_of(frames)
    assert [e["type"] for e in events] == [
        "agent/inbox/spliced",
        "turn/start",
        "agent/inbox/spliced",
        "step/start",
        "user/message",
        "request/header",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    assert [e["seq"] for e in events] == list(range(9))
    assert frames[-1]["params"]["status"] == "idle"
    # every session.event is the envelope exactly as in the log
    on_disk = read_log(tmp_path / "main.jsonl").events
    assert [json.loads(e.to_json()) for e in on_disk] == events
    assert all("id" not in f for f in frames if "method" in f)


async def test_numeric_request_id_is_stored_as_its_json_text(tmp_path: Path) -> None:
    async with running_server(tmp_path) as s:
        await s.wire.send(prompt(7, "main", "hi"))
        frames = await s.wire.idle("main")
    assert events_of(frames)[0]["data"]["inserted"][0]["source"] == {"kind": "user", "rpcId": "7"}
    assert next(f for f in frames if "result" in f)["id"] == 7


async def test_client_time_zone_is_canonicalised(tmp_path: Path) -> None:
    sent = {"UTC": "UTC", "Etc/UTC": "UTC", "Etc/GMT": "UTC", "Etc/Zulu": "UTC", "asia/shanghai": "Asia/Shanghai",
            "Asia/Calcutta": "Asia/Kolkata", "US/Eastern": "America/New_York", "Europe/Kiev": "Europe/Kyiv"}
    async with running_server(tmp_path, time_context=True) as s:
        for index, zone in enumerate(sent):
            await s.wire.send(prompt(f"p-{index}", f"s{index}", "hi", clientTimeZone=zone))
            frames = await s.wire.idle(f"s{index}")
            source = events_of(frames)[0]["data"]["inserted"][0]["source"]
            assert source == {"kind": "user", "rpcId": f"p-{index}", "clientTimeZone": sent[zone]}


@pytest.mark.parametrize(
    "zone", ["utc", "GMT", "EST", "Z", "+08:00", "Asia//Shanghai", "Asia/Shanghai\n", "Mars/Olympus", "", None, 8]
)
async def test_invalid_client_time_zone_is_refused_with_nothing_appended(tmp_path: Path, zone: object) -> None:
    async with running_server(tmp_path) as s:
        await s.wire.send(prompt("p-3", "main", "hi", clientTimeZone=zone))
        reply = await s.wire.reply("p-3")
        assert reply == {
            "jsonrpc": "2.0",
            "id": "p-3",
            "error": {
                "code": -32603,
                "message": "clientTimeZone must be UTC or a valid IANA Area/Location name",
                "data": {"code": "invalid-time-zone", "value": zone},
            },
        }
        assert s.wire.seen == [reply]
    assert not (tmp_path / "main.jsonl").exists()


@pytest.mark.parametrize(
    ("params", "code", "message", "extra"),
    [
        ({"contentBlocks": [{"type": "text", "text": "x"}]}, "invalid-session-id",
         f"session/prompt sessionId must match {ID_RULE}", {"value": None}),
        ({"sessionId": "../x", "contentBlocks": []}, "invalid-session-id",
         f"session/prompt sessionId must match {ID_RULE}", {"value": "../x"}),
        ({"sessionId": "a\n", "contentBlocks": []}, "invalid-session-id",
         f"session/prompt sessionId must match {ID_RULE}", {"value": "a\n"}),
        ({"sessionId": "main"}, "invalid-params",
         "session/prompt contentBlocks must be a non-empty array of content blocks", {"field": "contentBlocks"}),
        ({"sessionId": "main", "contentBlocks": []}, "invalid-params",
         "session/prompt contentBlocks must be a non-empty array of content blocks", {"field": "contentBlocks"}),
        ({"sessionId": "main", "contentBlocks": [{"type": "text", "text": "a"}, {"type": "text", "text": 1}]},
         "invalid-params", None, {"field": "contentBlocks[1]"}),
        ({"sessionId": "main", "contentBlocks": [{"type": "tool-call", "id": "c", "name": "n", "arguments": "{}"}]},
         "invalid-params", None, {"field": "contentBlocks[0]"}),
        ({"sessionId": "main", "contentBlocks": [{"type": "image"}]}, "invalid-params", None,
         {"field": "contentBlocks[0]"}),
        ({"sessionId": "main", "contentBlocks": [{"type": "text", "text": "a"}], "mode": "now"}, "invalid-params",
         'session/prompt mode must be "queue" or "steer"', {"field": "mode"}),
        # sessionId is checked before contentBlocks, contentBlocks before mode, mode before the zone
        ({"sessionId": 1, "contentBlocks": 2, "mode": 3}, "invalid-session-id", None, {"value": 1}),
        ({"sessionId": "main", "contentBlocks": 2, "mode": 3}, "invalid-params", None, {"field": "contentBlocks"}),
        ({"sessionId": "main", "contentBlocks": [{"type": "text", "text": "a"}], "mode": 3, "clientTimeZone": "x"},
         "invalid-params", None, {"field": "mode"}),
    ],
)
async def test_prompt_param_errors_append_nothing(
    tmp_path: Path, params: dict[str, Any], code: str, message: str | None, extra: dict[str, Any]
) -> None:
    async with running_server(tmp_path) as s:
        await s.wire.send(request("p", "session/prompt", params))
        got_code, got_message, data = error_of(await s.wire.reply("p"))
        assert got_code == code and data == {"code": code, **extra}
        if message is not None:
            assert got_message == message
        if code == "invalid-params" and extra["field"].startswith("contentBlocks["):
            assert got_message.startswith(f"session/prompt {extra['field']} must be ")
        assert len(s.wire.seen) == 1
    assert list(tmp_path.iterdir()) == []


async def test_image_blocks_are_stored_verbatim(tmp_path: Path) -> None:
    blocks = [{"type": "text", "text": "look"}, {"type": "image", "attachment": {"path": "/x.png", "w": 2}}]
    async with running_server(tmp_path) as s:
        await s.wire.send(request("p", "session/prompt", {"sessionId": "main", "contentBlocks": blocks}))
        frames = await s.wire.idle("main")
    assert events_of(frames)[0]["data"]["inserted"][0]["content"] == blocks


async def test_unknown_method_and_every_method_name_of_the_spec(tmp_path: Path) -> None:
    async with running_server(tmp_path) as s:
        await s.wire.send(request("u", "session/delete", {"sessionId": "main"}))
        assert await s.wire.reply("u") == {
            "jsonrpc": "2.0",
            "id": "u",
            "error": {
                "code": -32603,
                "message": "unknown DeepSeek Harness SDK runtime method: session/delete",
                "data": {"code": "unknown-method", "method": "session/delete"},
            },
        }
        await s.wire.send(request("l", "session/list"))
        assert (await s.wire.reply("l"))["result"] == {"sessions": [], "skipped": []}


BAD_LINES = [
    b"not json at all",
    b'{"jsonrpc":"2.0","id":"x","method":"initialize"',
    b"\xc3\x28",
    b'[{"jsonrpc":"2.0","id":"b","method":"session/list"}]',
    b"42",
    b'"s"',
    b"null",
    b'{"jsonrpc":"2.0","id":"r","result":{}}',
    b'{"jsonrpc":"2.0","method":"session/list"}',
    b'{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"main","contentBlocks":[{"type":"text","text":"x"}]}}',
    b'{"jsonrpc":"2.0","id":true,"method":"session/list"}',
    b'{"jsonrpc":"2.0","id":{"a":1},"method":"session/list"}',
    b'{"jsonrpc":"2.0","id":[1],"method":"session/list"}',
    b'{"jsonrpc":"2.0","id":null,"method":"session/prompt","params":{"sessionId":"main","contentBlocks":[{"type":"text","text":"x"}]}}',
    b'{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"main","contentBlocks":[{"type":"text","text":"\\ud800"}]}}',
    b"   ",
    b"\r",
]


async def test_bad_lines_get_no_reply_and_change_nothing(tmp_path: Path) -> None:
    async with running_server(tmp_path) as s:
        await s.wire.send(*(line + b"\n" for line in BAD_LINES), request("probe", "session/list"))
        assert await s.wire.frame() == {"jsonrpc": "2.0", "id": "probe", "result": {"sessions": [], "skipped": []}}
        assert s.diagnostics == [
            f"ignored a line that is not valid JSON ({len(line)} bytes)" for line in BAD_LINES[:3]
        ]
    assert list(tmp_path.iterdir()) == []


async def test_crlf_and_surrounding_whitespace_are_stripped(tmp_path: Path) -> None:
    async with running_server(tmp_path) as s:
        await s.wire.send(b'  {"jsonrpc":"2.0","id":"a","method":"session/list"}\t\r\n\n\n')
        assert (await s.wire.frame())["id"] == "a"
        assert s.diagnostics == []


async def test_overlong_lines(tmp_path: Path) -> None:
    limit = 3000
    text = "x" * limit
    with_id = json.dumps(prompt("long-1", "main", text)).encode()
    numeric = json.dumps(prompt(99, "main", text)).encode()
    no_id = json.dumps({"jsonrpc": "2.0", "method": "session/prompt", "params": {"text": text}}).encode()
    late_id = json.dumps({"jsonrpc": "2.0", "method": "m", "params": {"pad": "y" * 1100}, "id": "late"}).encode() + b" " * limit
    assert min(map(len, (with_id, numeric, no_id, late_id))) > limit
    async with running_server(tmp_path, max_line_bytes=limit) as s:
        await s.wire.send(with_id + b"\n", numeric + b"\n", no_id + b"\n", late_id + b"\n", request("probe", "session/list"))
        first = await s.wire.frame()
        second = await s.wire.frame()
        third = await s.wire.frame()
    message = f"request line exceeds {limit} bytes"
    assert first == {"jsonrpc": "2.0", "id": "long-1",
                     "error": {"code": -32603, "message": message, "data": {"code": "line-too-long", "limit": limit}}}
    assert second["id"] == 99 and second["error"]["data"] == {"code": "line-too-long", "limit": limit}
    assert third["id"] == "probe"
    assert len(s.diagnostics) == 4
    assert list(tmp_path.iterdir()) == []


async def test_overlong_line_sent_in_pieces_still_gets_its_id_answered(tmp_path: Path) -> None:
    """host §8: an id within the first 1024 bytes gets line-too-long even when the limit is smaller
    and the line arrives in several reads."""
    line = json.dumps({"jsonrpc": "2.0", "params": {"pad": "p" * 700}, "id": "late", "method": "session/list"})
    async with running_server(tmp_path, max_line_bytes=600) as s:
        await s.wire.send(line[:650].encode())
        await trio.testing.wait_all_tasks_blocked()  # the server has read (and judged) the first piece
        await s.wire.send(line[650:].encode() + b"\n")
        reply = await s.wire.frame()
    assert reply == {"jsonrpc": "2.0", "id": "late", "error": {
        "code": -32603, "message": "request line exceeds 600 bytes", "data": {"code": "line-too-long", "limit": 600}}}
    assert s.diagnostics == ["ignored a line longer than 600 bytes"]


async def test_a_line_of_exactly_the_limit_is_parsed(tmp_path: Path) -> None:
    frame = json.dumps(request("fits", "session/list")).encode()
    async with running_server(tmp_path, max_line_bytes=len(frame)) as s:
        await s.wire.send(frame + b"\n")
        assert (await s.wire.frame())["id"] == "fits"


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":"u","method":"session/prompt","params":{"sessionId":"main","contentBlocks":[{"type":"text","text":"\\ud800"}]}}',
        b'{"jsonrpc":"2.0","id":"u","method":"session/prompt","params":{"sessionId":"main","contentBlocks":[{"type":"text","text":"x"}],"n":1e999}}',
        b'{"jsonrpc":"2.0","id":"u","method":"session/list","params":{"\\udc00":1}}',
    ],
)
async def test_unsupported_json_request(tmp_path: Path, line: bytes) -> None:
    async with running_server(tmp_path) as s:
        await s.wire.send(line + b"\n")
        assert await s.wire.frame() == {
            "jsonrpc": "2.0",
            "id": "u",
            "error": {
                "code": -32603,
                "message": "request contains a lone surrogate or a number out of range",
                "data": {"code": "unsupported-json"},
            },
        }
    assert list(tmp_path.iterdir()) == []


async def test_resume(tmp_path: Path) -> None:
    async with running_server(tmp_path) as s:
        await s.wire.send(request("r0", "session/resume", {"sessionId": "ghost"}))
        assert await s.wire.reply("r0") == {
            "jsonrpc": "2.0",
            "id": "r0",
            "error": {"code": -32603, "message": 'session "ghost" not found', "data": {"code": "session-not-found"}},
        }
        await s.wire.send(request("r1", "session/resume", {"sessionId": "bad id"}))
        assert error_of(await s.wire.reply("r1"))[:2] == (
            "invalid-session-id",
            f"session/resume sessionId must match {ID_RULE}",
        )
        await s.wire.send(prompt("p", "main", "hi"))
        await s.wire.idle("main")
        await s.wire.send(request("r2", "session/resume", {"sessionId": "main"}))
        assert (await s.wire.reply("r2"))["result"] == {"sessionId": "main", "disposition": "already-live"}
    assert not (tmp_path / "ghost.jsonl").exists()
    async with running_server(tmp_path) as s:
        await s.wire.send(request("r3", "session/resume", {"sessionId": "main"}))
        reply = await s.wire.reply("r3")
        assert reply["result"] == {"sessionId": "main", "disposition": "resumed"}
        assert s.wire.seen == [reply]  # a resume sends no input and notifies nothing


async def test_resume_of_a_corrupt_or_busy_file(tmp_path: Path) -> None:
    (tmp_path / "broken.jsonl").write_bytes(b"this is not a header\n")
    async with running_server(tmp_path) as s:
        await s.wire.send(request("c", "session/resume", {"sessionId": "broken"}))
        code, message, _ = error_of(await s.wire.reply("c"))
        assert code == "session-corrupt" and message.startswith(f'corrupt session log "{tmp_path / "broken.jsonl"}"')
        store = SessionStore(tmp_path)
        async with store.create(id="held") as held:
            held.append("turn/start", {"turn": 1})
            held.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
            await held.flush()
            await s.wire.send(request("b", "session/resume", {"sessionId": "held"}), prompt("bp", "held", "hi"))
            for rid in ("b", "bp"):
                assert error_of(await s.wire.reply(rid))[:2] == (
                    "session-busy",
                    'session "held" is already open for writing',
                )
    assert (tmp_path / "broken.jsonl").read_bytes() == b"this is not a header\n"
    assert len(read_log(tmp_path / "held.jsonl").events) == 2


async def test_working_directory(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    root = tmp_path / "root"
    async with running_server(root) as s:
        await s.wire.send(request("i", "initialize", {"cwd": str(work), "provider": "scripted", "model": "scripted"}))
        await s.wire.reply("i")
        await s.wire.send(request("g", "session/working-directory/get", {"sessionId": "a"}))
        assert (await s.wire.reply("g"))["result"] == {"cwd": str(work)}
        await s.wire.send(request("s", "session/working-directory/set", {"sessionId": "a", "path": "sub"}))
        assert (await s.wire.reply("s"))["result"] == {"cwd": str(work / "sub")}
        await s.wire.send(request("s2", "session/working-directory/set", {"sessionId": "a", "path": "missing"}))
        assert (await s.wire.reply("s2"))["error"] == {
            "code": -32603,
            "message": f"working directory does not exist or is not a directory: {work / 'sub' / 'missing'}",
            "data": {"code": "not-a-directory", "path": str(work / "sub" / "missing")},
        }
        await s.wire.send(request("s3", "session/working-directory/set", {"sessionId": "a", "path": 3}))
        assert error_of(await s.wire.reply("s3"))[2] == {"code": "invalid-params", "field": "path"}
        await s.wire.send(request("g2", "session/working-directory/get", {"sessionId": "a"}))
        assert (await s.wire.reply("g2"))["result"] == {"cwd": str(work / "sub")}
        await s.wire.send(request("g3", "session/working-directory/get", {"sessionId": "b"}))
        assert (await s.wire.reply("g3"))["result"] == {"cwd": str(work)}
        await s.wire.send(request("g4", "session/working-directory/get", {"sessionId": ""}))
        assert error_of(await s.wire.reply("g4"))[:2] == (
            "invalid-session-id",
            f"session/working-directory/get sessionId must match {ID_RULE}",
        )
    # the directory is never logged, and a session without events leaves no file
    assert sorted(p.name for p in root.iterdir()) == []


async def test_fork_list_and_history(tmp_path: Path) -> None:
    async with running_server(tmp_path, cwd=tmp_path) as s:
        await s.wire.send(prompt("p", "main", "hi"))
        await s.wire.idle("main")
        await s.wire.send(request("f-1", "session/fork", {"sessionId": "main", "boundarySeq": 8, "childSessionId": "main-alt"}))
        started, reply = await s.wire.until(lambda f: f.get("id") == "f-1")
        assert started == {"jsonrpc": "2.0", "method": "subagent.started",
                           "params": {"parentSessionId": "main", "childSessionId": "main-alt"}}
        assert reply["result"] == {"sessionId": "main-alt", "parentSessionId": "main", "seedLength": 9}
        await s.wire.send(request("f-2", "session/fork", {"sessionId": "main", "boundarySeq": 8, "childSessionId": "main-alt"}))
        assert error_of(await s.wire.reply("f-2"))[:2] == ("session-exists", 'session "main-alt" already exists')
        await s.wire.send(request("f-3", "session/fork", {"sessionId": "main", "boundarySeq": 5}))
        assert error_of(await s.wire.reply("f-3"))[0] == "open-turn"
        await s.wire.send(request("f-4", "session/fork", {"sessionId": "main", "boundarySeq": 99}))
        assert error_of(await s.wire.reply("f-4"))[0] == "invalid-boundary"
        await s.wire.send(request("f-5", "session/fork", {"sessionId": "main", "boundarySeq": -1}))
        assert error_of(await s.wire.reply("f-5"))[2] == {"code": "invalid-params", "field": "boundarySeq"}
        await s.wire.send(request("f-6", "session/fork", {"sessionId": "main", "childSessionId": "a/b"}))
        assert error_of(await s.wire.reply("f-6")) == (
            "invalid-session-id",
            f"session/fork childSessionId must match {ID_RULE}",
            {"code": "invalid-session-id", "value": "a/b"},
        )
        await s.wire.send(request("f-7", "session/fork", {"sessionId": "main"}))
        child = (await s.wire.reply("f-7"))["result"]
        assert child["seedLength"] == 9 and child["sessionId"].startswith("session-")

        (tmp_path / "junk.jsonl").write_bytes(b"garbage\n")
        await s.wire.send(request("l-1", "session/list"))
        listing = (await s.wire.reply("l-1"))["result"]
        by_id = {entry["sessionId"]: entry for entry in listing["sessions"]}
        assert list(by_id["main"]) == ["sessionId", "createdAt", "cwd", "live", "status"]
        assert by_id["main"]["live"] is True and by_id["main"]["status"] == "idle"
        assert by_id["main-alt"] == {"sessionId": "main-alt", "createdAt": by_id["main-alt"]["createdAt"],
                                     "cwd": str(tmp_path), "parentSessionId": "main", "seedLength": 9, "live": False}
        assert [entry["file"] for entry in listing["skipped"]] == ["junk.jsonl"]
        keys = [(entry["createdAt"], entry["sessionId"]) for entry in listing["sessions"]]
        assert keys == sorted(keys)

        await s.wire.send(request("h-1", "session/history", {"sessionId": "main", "fromSeq": 7, "limit": 2}))
        page = (await s.wire.reply("h-1"))["result"]
        assert list(page) == ["sessionId", "header", "events", "nextSeq", "done"]
        assert [e["type"] for e in page["events"]] == ["step/end", "turn/end"]
        assert (page["nextSeq"], page["done"]) == (9, True)
        await s.wire.send(request("h-2", "session/history", {"sessionId": "main-alt"}))
        page = (await s.wire.reply("h-2"))["result"]
        assert page["header"]["parentSession"] == "main" and len(page["events"]) == 10
        assert (page["nextSeq"], page["done"]) == (10, True)
        await s.wire.send(request("h-3", "session/history", {"sessionId": "main", "fromSeq": 20}))
        assert (await s.wire.reply("h-3"))["result"]["events"] == []
        for rid, params, field in [
            ("h-4", {"sessionId": "main", "limit": 0}, "limit"),
            ("h-5", {"sessionId": "main", "limit": 10001}, "limit"),
            ("h-6", {"sessionId": "main", "fromSeq": -1}, "fromSeq"),
            ("h-7", {"sessionId": "main", "fromSeq": 1.0}, "fromSeq"),
        ]:
            await s.wire.send(request(rid, "session/history", params))
            assert error_of(await s.wire.reply(rid))[2] == {"code": "invalid-params", "field": field}
        await s.wire.send(request("h-8", "session/history", {"sessionId": "nobody"}))
        assert error_of(await s.wire.reply("h-8"))[:2] == ("session-not-found", 'session "nobody" not found')


async def test_stream_deltas_only_when_asked(tmp_path: Path) -> None:
    async with running_server(tmp_path) as s:
        await s.wire.send(prompt("p1", "a", "hello there"))
        frames = await s.wire.idle("a")
        assert not [f for f in frames if f.get("method") == "session.delta"]
        await s.wire.send(request("i", "initialize", {"streamDeltas": True}))
        await s.wire.reply("i")
        await s.wire.send(prompt("p2", "a", "hello there"))
        frames = await s.wire.idle("a")
    deltas = [f["params"] for f in frames if f.get("method") == "session.delta"]
    assert deltas and all(list(d) == ["sessionId", "turn", "step", "chunk"] for d in deltas)
    text = "".join(d["chunk"]["text"] for d in deltas if d["chunk"]["type"] == "text-delta")
    assert text == "You said: hello there"
    assert all((d["turn"], d["step"]) == (2, 1) for d in deltas)


# --- ordering and concurrency --------------------------------------------------------------------


async def test_queued_prompts_keep_arrival_order_in_one_activity(tmp_path: Path) -> None:
    ids = [f"q-{n}" for n in range(5)]
    async with running_server(tmp_path) as s:
        await s.wire.send(*(prompt(rid, "main", f"n{n}") for n, rid in enumerate(ids)))
        frames = await s.wire.until(
            lambda f: f.get("method") == "session.status" and f["params"]["status"] == "idle"
        )
    receipts = [e for e in events_of(frames) if e["type"] == "agent/inbox/spliced" and e["data"]["inserted"]]
    assert [r["data"]["inserted"][0]["source"]["rpcId"] for r in receipts] == ids
    replies = [f["id"] for f in frames if "result" in f]
    assert replies == ids
    statuses = [f["params"]["status"] for f in frames if f.get("method") == "session.status"]
    assert statuses == ["running", "idle"]  # no idle between queued turns
    for rid, receipt in zip(ids, receipts):
        receipt_at = next(n for n, f in enumerate(frames) if f.get("params", {}).get("event") is receipt)
        reply_at = next(n for n, f in enumerate(frames) if f.get("id") == rid)
        assert receipt_at < reply_at
    ends = [e for e in events_of(frames) if e["type"] == "turn/end"]
    assert [e["data"]["turn"] for e in ends] == [1, 2, 3, 4, 5]


async def test_requests_run_concurrently(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fork that waits for its parent's flush does not hold up a later list."""
    async with running_server(tmp_path) as s:
        await s.wire.send(prompt("p", "main", "hi"))
        await s.wire.idle("main")
        release = threading.Event()
        real_sync = eventlog.fileio.sync

        def slow_sync(fd: int) -> None:
            release.wait(30)
            real_sync(fd)

        monkeypatch.setattr(eventlog.fileio, "sync", slow_sync)
        try:
            # the new turn's events wait for the held fsync, and so does the fork of its session
            await s.wire.send(prompt("p2", "main", "again"), request("f", "session/fork", {"sessionId": "main"}),
                              request("l", "session/list"))
            frames = await s.wire.until(lambda f: f.get("id") == "l")
            assert not [f for f in frames if f.get("id") == "f"]
        finally:
            release.set()
        await s.wire.reply("f")


async def test_every_event_of_an_activity_is_between_running_and_idle(tmp_path: Path) -> None:
    async with running_server(tmp_path) as s:
        await s.wire.send(prompt("p", "main", "remind me in 1 seconds to stretch"))
        frames = await s.wire.idle("main")
        frames += await s.wire.idle("main")  # the reminder's follow-up is an activity of its own
    marks = [f["params"]["status"] if f.get("method") == "session.status" else
             ("event" if f.get("method") == "session.event" else "reply") for f in frames]
    # the receipt and reply of the prompt come first; then each activity is running … idle
    assert marks[:3] == ["event", "running", "reply"]
    second = marks.index("idle") + 1
    reminder = events_of(frames[second:])
    assert reminder[0]["type"] == "agent/inbox/spliced"
    assert reminder[0]["data"]["inserted"][0]["source"] == {"kind": "plugin", "plugin": "schedule"}
    assert reminder[1]["type"] == "schedule/change" and reminder[1]["data"]["operation"] == "dispatch"
    # receipt splice → dispatch → running → turn … → idle (host §3.10)
    assert marks[second:second + 3] == ["event", "event", "running"]
    assert marks[-1] == "idle" and "idle" not in marks[second:-1]


# --- shutdown ------------------------------------------------------------------------------------


async def test_shutdown_flushes_replies_and_exits_zero(tmp_path: Path) -> None:
    async with running_server(tmp_path, adapter=script('{"text":"one"}', '{"hang":true}')) as s:
        await s.wire.send(prompt("p1", "main", "first"))
        await s.wire.idle("main")
        await s.wire.send(prompt("p2", "main", "second"))
        await s.wire.until(lambda f: f.get("params", {}).get("event", {}).get("type") == "user/message")
        await s.wire.send(request("e2aa", "shutdown"))
        rest = await s.wire.rest()
    assert rest[-1] == {"jsonrpc": "2.0", "id": "e2aa", "result": {}}
    # the disposal events are persisted but not notified
    assert not [e for e in events_of(rest) if e["type"] in ("step/end", "turn/end")]
    assert s.exit_code == [0]
    snapshot = read_log(tmp_path / "main.jsonl", expected_id="main")
    assert snapshot.repair is None
    last = json.loads(snapshot.events[-1].to_json())
    assert last["type"] == "turn/end"
    assert last["data"] == {"turn": 2, "reason": {"kind": "aborted", "reason": {"kind": "disposed"}}}


async def test_no_notification_once_shutdown_has_begun(tmp_path: Path) -> None:
    """host §4.3.9 step 2: from the moment shutdown begins nothing but replies is written, even for a
    follow-up (a reminder, say) queued in the same instant, before the server task runs again."""
    async with running_server(tmp_path) as s:
        await s.wire.send(prompt("p", "main", "hi"))
        await s.wire.idle("main")
        live = s.host.live("main")
        assert live is not None
        s.server.stop(0)
        live.agent.followup([{"type": "text", "text": "due now"}], {"kind": "plugin", "plugin": "schedule"})
        rest = await s.wire.rest()
    assert rest == []
    assert s.exit_code == [0]
    # The follow-up itself was recorded (and kept for the next start), only not notified.
    events = [json.loads(e.to_json()) for e in read_log(tmp_path / "main.jsonl", expected_id="main").events]
    assert any(e["type"] == "agent/inbox/spliced" and e["data"]["inserted"] for e in events[9:])


async def test_a_prompt_admitted_as_shutdown_begins_still_gets_its_receipt_first(tmp_path: Path) -> None:
    """host §4.3.2 step 6 and host §4.5 2 with host §4.3.9 step 2: a prompt that arrived before the shutdown
    request is admitted while its session opens; its receipt still precedes its reply, and
    nothing else is notified."""
    async with running_server(tmp_path) as s:
        await s.wire.send(prompt("p", "fresh", "hi"), request("bye", "shutdown"))
        frames = await s.wire.rest()
    assert [f.get("method") or f["id"] for f in frames] == ["session.event", "p", "bye"]
    receipt = frames[0]["params"]["event"]
    assert receipt["type"] == "agent/inbox/spliced"
    assert frames[1]["result"] == {"messageId": receipt["data"]["inserted"][0]["id"]}
    assert frames[2]["result"] == {}


async def test_requests_during_shutdown_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    async with running_server(tmp_path, adapter=script('{"hang":true}')) as s:
        await s.wire.send(prompt("p", "main", "hi"))
        await s.wire.until(lambda f: f.get("id") == "p")
        real_sync = eventlog.fileio.sync

        def held_sync(fd: int) -> None:
            release.wait(30)
            real_sync(fd)

        monkeypatch.setattr(eventlog.fileio, "sync", held_sync)
        try:
            await s.wire.send(request("s1", "shutdown"))
            await s.wire.send(request("x", "session/list"), request("y", "no/such/method"),
                              prompt("z", "main", "late"), request("s2", "shutdown"))
            for rid in ("x", "y", "z"):
                assert (await s.wire.reply(rid))["error"] == {
                    "code": -32603, "message": "SDK server is shutting down", "data": {"code": "shutting-down"}}
        finally:
            release.set()
        rest = await s.wire.rest()
    assert sorted(f["id"] for f in rest) == ["s1", "s2"] and all(f["result"] == {} for f in rest)
    assert s.exit_code == [0]


async def test_failed_flush_at_shutdown(tmp_path: Path) -> None:
    async with running_server(tmp_path, adapter=script('{"hang":true}')) as s:
        await s.wire.send(prompt("p", "main", "hi"))
        await s.wire.until(lambda f: f.get("id") == "p")
        with eventlog.fileio.fail("sync", errno.EIO, times=1000):
            await s.wire.send(request("bye", "shutdown"))
            reply = await s.wire.reply("bye")
            await s.wire.rest()
    code, message, data = error_of(reply)
    assert code == "persistence-failed" and data == {"code": "persistence-failed", "sessionId": "main"}
    assert message.startswith('cannot flush session "main" at shutdown: failed to persist session "main": ')
    assert any("could not be flushed" in line for line in s.diagnostics)
    assert s.exit_code == [1]


async def test_end_of_input_shuts_down_without_a_reply(tmp_path: Path) -> None:
    async with running_server(tmp_path) as s:
        await s.wire.send(prompt("p", "main", "hi"))
        await s.wire.idle("main")
        await s.wire.close()
        assert await s.wire.rest() == []
    assert s.exit_code == [0]
    assert read_log(tmp_path / "main.jsonl").repair is None


async def test_stop_decides_the_exit_code_once(tmp_path: Path) -> None:
    async with running_server(tmp_path) as s:
        s.server.stop(130)
        s.server.stop(0)
        assert await s.wire.rest() == []
    assert s.exit_code == [130]


async def test_a_handler_bug_is_internal_and_the_server_serves_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_server(tmp_path) as s:
        def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("boom")

        monkeypatch.setattr(s.host, "list_sessions", broken)
        await s.wire.send(request("l", "session/list"), request("r", "session/resume", {"sessionId": "none"}))
        assert await s.wire.reply("l") == {
            "jsonrpc": "2.0",
            "id": "l",
            "error": {"code": -32603, "message": "internal error: RuntimeError: boom", "data": {"code": "internal"}},
        }
        assert error_of(await s.wire.reply("r"))[0] == "session-not-found"
    assert any("Traceback" in line for line in s.diagnostics)


async def test_an_error_message_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """host §4.2: the message is a one-line explanation, also for a bug whose text spans lines."""
    async with running_server(tmp_path) as s:
        def broken(*args: Any, **kwargs: Any) -> Any:
            raise ValueError("first line\r\n  second line\nthird")

        monkeypatch.setattr(s.host, "list_sessions", broken)
        await s.wire.send(request("l", "session/list"))
        assert error_of(await s.wire.reply("l"))[:2] == (
            "internal", "internal error: ValueError: first line second line third")


async def test_root_that_cannot_be_created_fails_the_prompt(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    async with running_server(tmp_path / "file" / "root") as s:
        await s.wire.send(prompt("p", "main", "hi"))
        code, message, data = error_of(await s.wire.reply("p"))
    assert code == "persistence-failed" and data == {"code": "persistence-failed", "sessionId": "main"}
    assert message.startswith('cannot create session "main": ')


# === the server as a process =====================================================================


def _serve(tmp_path: Path, *extra: str) -> Process:
    return Process(["serve", "--root", str(tmp_path), "--no-time-context", *extra])


def _prompt_and_idle(proc: Process, rid: str = "p") -> list[dict[str, Any]]:
    proc.send(prompt(rid, "main", "hi"))
    return proc.until(lambda f: f.get("method") == "session.status" and f["params"]["status"] == "idle")


@pytest.mark.parametrize(("how", "code"), [("eof", 0), ("sigterm", 0), ("sigint", 130), ("shutdown", 0)])
def test_process_shutdown_paths(tmp_path: Path, how: str, code: int) -> None:
    proc = _serve(tmp_path)
    try:
        _prompt_and_idle(proc)
        if how == "eof":
            proc.proc.stdin.close()
        elif how == "sigterm":
            proc.proc.send_signal(signal.SIGTERM)
        elif how == "sigint":
            proc.proc.send_signal(signal.SIGINT)
        else:
            proc.send(request("bye", "shutdown"))
            assert proc.frame() == {"jsonrpc": "2.0", "id": "bye", "result": {}}
        assert proc.wait() == code
        assert proc.proc.stdout.read() == b""
    finally:
        proc.kill()
    snapshot = read_log(tmp_path / "main.jsonl", expected_id="main")
    assert snapshot.repair is None and len(snapshot.events) == 9
    assert all(line.startswith("turnlog serve: ") for line in proc.stderr_lines)


def test_process_stdout_closed_is_end_of_input(tmp_path: Path) -> None:
    proc = _serve(tmp_path)
    try:
        _prompt_and_idle(proc)
        proc.proc.stdout.close()
        proc.send(request("l", "session/list"))  # its reply meets the closed pipe
        assert proc.wait() == 0
    finally:
        proc.kill()
    assert read_log(tmp_path / "main.jsonl").repair is None


def test_process_stdout_carries_only_frames(tmp_path: Path) -> None:
    proc = _serve(tmp_path, "--patch", "/nowhere.patch", "--profile", "sdk")
    try:
        proc.send(request("i", "initialize", {"provider": "scripted", "model": "scripted"}))
        _prompt_and_idle(proc)
        proc.proc.stdin.write(b"junk\n" + json.dumps(request("bye", "shutdown")).encode() + b"\n")
        proc.proc.stdin.flush()
        proc.until(lambda f: f.get("id") == "bye")
        assert proc.wait() == 0
    finally:
        proc.kill()
    assert "turnlog serve: ignoring --patch /nowhere.patch (turnlog has no patches)" in proc.stderr_lines
    assert "turnlog serve: ignored a line that is not valid JSON (4 bytes)" in proc.stderr_lines


def test_process_startup_failures_write_no_frame(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("x")
    bad_script = tmp_path / "script.jsonl"
    bad_script.write_text('{"text":"ok"}\n{"finish":"sideways"}\n')
    for args, code in [
        (["serve", "--root", str(tmp_path / "plain")], 1),
        (["serve", "--root", str(tmp_path), "--script", str(bad_script)], 2),
        (["serve", "--root", str(tmp_path), "--time-zone", "Mars/Olympus"], 2),
        (["serve", "--root", str(tmp_path), "--max-line-bytes", "0"], 2),
    ]:
        proc = Process(args)
        try:
            proc.proc.stdin.close()
            assert proc.wait() == code, proc.stderr_lines
            assert proc.proc.stdout.read() == b""
            assert len(proc.stderr_lines) == 1 and proc.stderr_lines[0].startswith("turnlog: ")
        finally:
            proc.kill()
    assert sorted(os.listdir(tmp_path)) == ["plain", "script.jsonl"]


def test_process_line_limit_flag(tmp_path: Path) -> None:
    proc = _serve(tmp_path, "--max-line-bytes", "100")
    try:
        proc.send(prompt("big", "main", "x" * 200), request("l", "session/list"))
        assert proc.frame()["error"]["data"] == {"code": "line-too-long", "limit": 100}
        assert proc.frame()["id"] == "l"
        proc.proc.stdin.close()
        assert proc.wait() == 0
    finally:
        proc.kill()


def test_uuid_request_ids_round_trip(tmp_path: Path) -> None:
    rid = str(uuid.uuid4())
    proc = _serve(tmp_path)
    try:
        frames = _prompt_and_idle(proc, rid)
        reply = next(f for f in frames if "result" in f)
        assert reply["id"] == rid
        import re

        assert re.fullmatch(UUID4, reply["result"]["messageId"])
        proc.proc.stdin.close()
        assert proc.wait() == 0
    finally:
        proc.kill()
