"""The input limits of the JSON-RPC wire (host §4.1, host §4.2, host §4.3.2, host §8): nesting deeper
than 256 levels, request ids outside the float range, and attachments holding numbers the log
cannot store exactly. Each is a typed refusal with nothing appended, and anything admitted under
the nesting limit can be stored and read back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from eventlog import read_log
from eventlog.cli import main as log_commands
from host.models import ScriptedAdapter
from host.rpc import MAX_NESTING, Request, TooDeep, classify, top_level_scalars
from host.runtime import HostConfig, open_host
from tests.host.rpc_support import error_of, events_of, request, running_server

TOO_DEEP = {
    "code": -32603,
    "message": "request nests deeper than 256 levels",
    "data": {"code": "too-deep", "limit": 256},
}
UNSUPPORTED = {
    "code": -32603,
    "message": "request contains a lone surrogate or a number out of range",
    "data": {"code": "unsupported-json"},
}


def nested(levels: int, inner: bytes = b"1") -> bytes:
    """``levels`` arrays around ``inner``."""
    return b"[" * levels + inner + b"]" * levels


def depth_of(value: Any) -> int:
    """The reference: arrays and objects open at the deepest point (recursive; test values only)."""
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    return 0


def prompt_with_attachment(rid: str, attachment: bytes) -> bytes:
    """A ``session/prompt`` line with the attachment's JSON text placed verbatim."""
    return (
        b'{"jsonrpc":"2.0","id":"'
        + rid.encode()
        + b'","method":"session/prompt","params":{"sessionId":"main",'
        b'"contentBlocks":[{"type":"image","attachment":' + attachment + b"}]}}\n"
    )


# === nesting (pure) ==============================================================================


def test_limit_is_256_levels_the_frame_counting_as_the_first() -> None:
    at_limit = b'{"id":"d","method":"m","params":' + nested(MAX_NESTING - 1, b"") + b"}"
    assert depth_of(json.loads(at_limit)) == MAX_NESTING
    assert classify(at_limit) == classify(b'{"id":"d","method":"m","params":[]}')
    over = b'{"id":"d","method":"m","params":' + nested(MAX_NESTING, b"") + b"}"
    assert classify(over) == TooDeep(len(over), "d")


@pytest.mark.parametrize("levels", [300, 980, 5_000, 200_000])
def test_a_too_deep_request_keeps_its_id_however_deep(levels: int) -> None:
    line = b'{"jsonrpc":"2.0","id":"d-1","method":"session/prompt","params":{"a":' + nested(levels) + b"}}"
    assert classify(line) == TooDeep(len(line), "d-1")
    late = b'{"jsonrpc":"2.0","params":{"a":' + nested(levels) + b'},"method":"m","id":-7}'
    assert classify(late) == TooDeep(len(late), -7)


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","method":"note","params":' + nested(5_000) + b"}",  # a notification
        b'{"jsonrpc":"2.0","id":1,"result":' + nested(5_000) + b"}",  # a response
        b'{"jsonrpc":"2.0","id":true,"method":"m","params":' + nested(5_000) + b"}",
        b'{"jsonrpc":"2.0","id":[1],"method":"m","params":' + nested(5_000) + b"}",
        b'{"jsonrpc":"2.0","id":1,"method":7,"params":' + nested(5_000) + b"}",
        b'{"params":{"id":1,"method":"m","x":' + nested(5_000) + b"}}",  # only nested ids
        nested(5_000, b'{"id":1,"method":"m"}'),  # a batch
    ],
)
def test_a_too_deep_line_that_is_no_request_gets_no_id(line: bytes) -> None:
    frame = classify(line)
    assert isinstance(frame, TooDeep) and frame.id is None


def test_brackets_inside_strings_are_text() -> None:
    line = b'{"id":"x\\"y","method":"m","params":{"p":"' + b"[" * 5_000 + b'"}}'
    assert classify(line) == Request('x"y', "m", {"p": "[" * 5_000})


json_scalars = st.one_of(
    st.text(max_size=8),
    st.integers(-(2**60), 2**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)


@given(
    st.dictionaries(st.sampled_from(["id", "method", "params", "x", 'i"d', "ïd"]), json_values, max_size=5)
)
def test_top_level_scalars_agree_with_a_parser(frame: dict[str, Any]) -> None:
    line = json.dumps(frame, ensure_ascii=False).encode()
    wanted = frozenset({"id", "method", "x"})
    expected = {
        key: value
        for key, value in frame.items()
        if key in wanted and isinstance(value, (str, int, float)) and not isinstance(value, bool)
    }
    assert top_level_scalars(line, wanted) == expected


@given(json_values)
def test_depth_check_agrees_with_a_recursive_count(params: Any) -> None:
    frame = {"id": 1, "method": "m", "params": params}
    depth = depth_of(frame)
    for limit_line in (json.dumps(frame).encode(),):
        result = classify(limit_line)
        assert isinstance(result, TooDeep) == (depth > MAX_NESTING)
    # the same values pushed to just below and just above the limit
    for levels, deep in ((MAX_NESTING - depth, False), (MAX_NESTING - depth + 1, True)):
        if levels < 0:
            continue
        line = b'{"id":1,"method":"m","params":' + nested(levels, json.dumps(params).encode()) + b"}"
        assert isinstance(classify(line), TooDeep) == deep


# === the server ==================================================================================


async def test_too_deep_request_is_answered_under_its_id_and_appends_nothing(tmp_path: Path) -> None:
    deep = prompt_with_attachment("d-1", nested(980, b"{}"))
    async with running_server(tmp_path) as s:
        await s.wire.send(deep)
        assert await s.wire.frame() == {"jsonrpc": "2.0", "id": "d-1", "error": TOO_DEEP}
        note = b'{"jsonrpc":"2.0","method":"session/prompt","params":' + nested(980) + b"}\n"
        await s.wire.send(note)
        await s.wire.send(request("l", "session/list"))
        assert (await s.wire.frame())["id"] == "l"  # the deep notification got no reply
        assert s.diagnostics == [
            f"ignored a line nested deeper than 256 levels ({len(line) - 1} bytes)" for line in (deep, note)
        ]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("rid", [b"1e400", b"-1e400", b"9" * 400, b"-" + b"9" * 400])
async def test_an_id_out_of_the_float_range_is_answered_with_a_null_id(tmp_path: Path, rid: bytes) -> None:
    async with running_server(tmp_path) as s:
        await s.wire.send(b'{"jsonrpc":"2.0","id":' + rid + b',"method":"session/list"}\n')
        assert await s.wire.frame() == {"jsonrpc": "2.0", "id": None, "error": UNSUPPORTED}
        await s.wire.send(b'{"jsonrpc":"2.0","id":' + rid + b',"result":{}}\n')  # a response: ignored
        await s.wire.send(request("l", "session/list"))
        assert (await s.wire.frame())["id"] == "l"


@pytest.mark.parametrize(
    ("attachment", "message"),
    [
        (b'{"n":-0.0}', "holds -0.0 at attachment.n"),
        (b'{"n":9007199254740992}', "holds 9007199254740992 at attachment.n"),
        (b'{"a":[1,{"b":-9007199254740992}]}', "holds -9007199254740992 at attachment.a[1].b"),
        (b'{"z":-1e-400}', "holds -0.0 at attachment.z"),  # underflows to -0.0
    ],
)
async def test_an_attachment_the_log_cannot_store_exactly_is_invalid_params(
    tmp_path: Path, attachment: bytes, message: str
) -> None:
    async with running_server(tmp_path) as s:
        await s.wire.send(prompt_with_attachment("p", attachment))
        code, text, data = error_of(await s.wire.reply("p"))
        assert (code, data) == ("invalid-params", {"code": "invalid-params", "field": "contentBlocks[0]"})
        assert text.startswith(
            f"session/prompt contentBlocks[0] {message}, a number the log cannot store exactly"
        )
    assert list(tmp_path.iterdir()) == []


async def test_the_nearest_storable_numbers_are_admitted_verbatim(tmp_path: Path) -> None:
    attachment = b'{"max":9007199254740991,"min":-9007199254740991,"zero":0.0,"neg":-0,"big":1e308}'
    async with running_server(tmp_path) as s:
        await s.wire.send(prompt_with_attachment("p", attachment))
        await s.wire.reply("p")
        await s.wire.idle("main")
    [message] = read_log(tmp_path / "main.jsonl").events[0].value()["inserted"]
    assert message["content"] == [{"type": "image", "attachment": json.loads(attachment)}]


async def test_a_prompt_at_the_nesting_limit_is_stored_read_back_and_resumed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # frame, params, contentBlocks, the block and the attachment: 5 levels, then arrays to 256
    attachment = b'{"x":' + nested(MAX_NESTING - 5, b'"deep"') + b"}"
    line = prompt_with_attachment("p", attachment)
    assert depth_of(json.loads(line)) == MAX_NESTING
    async with running_server(tmp_path) as s:
        await s.wire.send(line)
        frames = await s.wire.idle("main")
        assert any(f.get("id") == "p" and "result" in f for f in frames)
    content = [{"type": "image", "attachment": json.loads(attachment)}]
    assert events_of(frames)[0]["data"]["inserted"][0]["content"] == content
    snapshot = read_log(tmp_path / "main.jsonl", expected_id="main")
    assert snapshot.repair is None
    assert snapshot.events[0].value()["inserted"][0]["content"] == content  # the receipt, two levels deeper
    assert next(e.value()["content"] for e in snapshot.events if e.type == "user/message") == content
    async with open_host(HostConfig(root=tmp_path), adapters={"scripted": ScriptedAdapter()}) as host:
        assert await host.resume("main") == "resumed"
        page = await host.history("main")
        assert page["events"][0]["data"]["inserted"][0]["content"] == content
    capsys.readouterr()
    for command in ("validate", "inspect"):
        argv = [command, "--json", "--root", str(tmp_path), "main"]
        assert await trio.to_thread.run_sync(log_commands, argv) == 0  # the commands run trio themselves
        assert json.loads(capsys.readouterr().out)
