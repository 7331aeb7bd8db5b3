"""The openai adapter against a real HTTP/1.1 server on 127.0.0.1 (host §6.4)."""

from __future__ import annotations

import email.utils
import importlib.metadata
import json
import socket
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import msgspec
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from host.models import Failure, ModelRequest, is_retryable, run_attempt
from host.models.openai import (
    OpenAIAdapter,
    SSEDecoder,
    chat_messages,
    map_usage,
    parse_retry_after,
)
from host.runtime import ToolSpec

# A response closed before its body ends (a failure mid-stream, a cancel, a capped error body)
# leaves httpx's and httpcore's internal body generators to trio's async-generator finalizer, which warns
# under `python -X dev`. That is their cleanup path, not a leak of ours.
pytestmark = pytest.mark.filterwarnings(r"ignore:Async generator 'http(x|core)\.:ResourceWarning")

# --- a minimal HTTP/1.1 server --------------------------------------------------------------


@dataclass
class Recorded:
    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        values = [v for k, v in self.headers if k.lower() == name]
        assert len(values) <= 1
        return values[0] if values else None


Action = Callable[[trio.SocketStream], Awaitable[None]]


class Server:
    """Answers each connection with the next queued action, then closes it."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.actions: deque[Action] = deque()
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def handle(self, stream: trio.SocketStream) -> None:
        try:
            self.requests.append(await _read_request(stream))
            await self.actions.popleft()(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the client went away (e.g. after reading 64 KiB of an error body)
        finally:
            await stream.aclose()


async def _read_request(stream: trio.SocketStream) -> Recorded:
    data = b""
    while b"\r\n\r\n" not in data:
        data += await stream.receive_some(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    request_line, *header_lines = head.decode("latin-1").split("\r\n")
    method, target, _ = request_line.split(" ")
    headers = [(k, v.strip()) for k, _, v in (line.partition(":") for line in header_lines)]
    length = int(next((v for k, v in headers if k.lower() == "content-length"), "0"))
    while len(body) < length:
        body += await stream.receive_some(65536)
    return Recorded(method, target, headers, body)


def _head(status: int, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status} Status"] + [f"{k}: {v}" for k, v in headers] + ["connection: close", "", ""]
    return "\r\n".join(lines).encode()


def _chunk(piece: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(piece), piece)


def sse(*pieces: str | bytes, status: int = 200, end: bool = True, hang: bool = False) -> Action:
    """A chunked response sending each piece as its own chunk; ``end=False`` drops the connection
    without the terminating chunk, ``hang=True`` then stays silent."""

    async def action(stream: trio.SocketStream) -> None:
        await stream.send_all(_head(status, [("content-type", "text/event-stream"), ("transfer-encoding", "chunked")]))
        for piece in pieces:
            await stream.send_all(_chunk(piece.encode() if isinstance(piece, str) else piece))
        if hang:
            await trio.sleep_forever()
        if end:
            await stream.send_all(b"0\r\n\r\n")

    return action


def reply(status: int, body: bytes | str | dict[str, Any], headers: list[tuple[str, str]] | None = None) -> Action:
    data = json.dumps(body).encode() if isinstance(body, dict) else body.encode() if isinstance(body, str) else body

    async def action(stream: trio.SocketStream) -> None:
        head = [("content-type", "application/json"), ("content-length", str(len(data)))] + (headers or [])
        await stream.send_all(_head(status, head) + data)

    return action


def silent() -> Action:
    async def action(stream: trio.SocketStream) -> None:
        await trio.sleep_forever()

    return action


def data(obj: Any) -> str:
    return f"data: {json.dumps(obj)}\n\n"


def delta(**fields: Any) -> str:
    return data({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": fields, "finish_reason": None}]})


def finish(reason: str | None) -> str:
    return data({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})


DONE = "data: [DONE]\n\n"


@pytest.fixture
async def server(nursery: trio.Nursery) -> Server:
    server = Server()
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    server.port = listeners[0].socket.getsockname()[1]
    nursery.start_soon(trio.serve_listeners, server.handle, listeners)
    return server


@pytest.fixture
async def adapter(server: Server) -> AsyncIterator[OpenAIAdapter]:
    async with OpenAIAdapter(base_url=server.base_url, api_key="sk-test",
                             client=httpx.AsyncClient(trust_env=False)) as adapter:
        yield adapter


def request(*messages: dict[str, Any], **overrides: Any) -> ModelRequest:
    fields: dict[str, Any] = {
        "session_id": "main", "turn": 1, "step": 1, "provider": "openai", "model": "m1", "system": None,
        "messages": messages or ({"id": "u", "role": "user", "source": {"kind": "user"},
                                  "content": [{"type": "text", "text": "hi"}]},),
        "tools": (), "max_tokens": None, "reasoning_effort": None,
    }
    fields.update(overrides)
    return ModelRequest(**fields)


async def chunks_of(adapter: OpenAIAdapter, req: ModelRequest | None = None) -> list[dict[str, Any]]:
    """The adapter's chunks as their JSON shapes."""
    return [msgspec.to_builtins(chunk) async for chunk in adapter.stream(req or request())]


async def attempt(adapter: OpenAIAdapter, req: ModelRequest) -> Any:
    """``run_attempt``'s outcome as JSON: ``{"content","usage","finish"}`` or ``{"failure"}``."""
    return msgspec.to_builtins(await run_attempt(adapter, req))


def assembled(content: list[dict[str, Any]], usage: dict[str, int] | None = None, finish: str = "stop") -> Any:
    return {"content": content, "usage": usage, "finish": finish}


def plain_usage(usage: dict[str, Any]) -> Any:
    return msgspec.to_builtins(map_usage(usage))


async def failure_of(adapter: OpenAIAdapter, req: ModelRequest | None = None) -> dict[str, Any]:
    outcome = await attempt(adapter, req or request())
    assert "failure" in outcome, outcome
    return outcome["failure"]


# --- request --------------------------------------------------------------------------------


def msg(role: str, source: dict[str, Any], *blocks: dict[str, Any]) -> dict[str, Any]:
    return {"id": "x", "role": role, "source": source, "content": list(blocks)}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"type": "tool-call", "id": call_id, "name": name, "arguments": arguments}


def result(call_id: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return msg("user", {"kind": "tool", "callId": call_id},
               {"type": "tool-result", "toolCallId": call_id, "isError": False, "content": list(blocks)})


USER = {"kind": "user", "rpcId": "r-1"}
MODEL = {"kind": "model", "provider": "openai", "model": "m1"}
HISTORY = (
    msg("user", USER, text("remind me "), text("in 5 seconds to stretch")),
    msg("user", {"kind": "plugin", "plugin": "time-context", "form": "snapshot",
                 "sections": [{"name": "time-context", "text": "Time sampled"}]}, text("Time sampled")),
    msg("assistant", MODEL, {"type": "reasoning", "text": "think"},
        call("call-1-1-0", "schedule_create", '{"prompt":"stretch","after_seconds":5}')),
    result("call-1-1-0", text('{"id":"schedule-1"}')),
    msg("assistant", MODEL, text("Reminder schedule-1 "), text("is set."), call("c2", "schedule_list", "{}"),
        call("c3", "schedule_list", "")),
    result("c2"),
    msg("user", USER, {"type": "image", "attachment": {"path": "a.png"}}),
    msg("user", {"kind": "plugin", "plugin": "schedule"}, text("Grüße")),
    msg("assistant", MODEL, call("c4", "schedule_delete", '{"id":"schedule-1"}')),
)
EXPECTED_MESSAGES = (
    '[{"role":"system","content":"Be brief."},'
    '{"role":"user","content":"remind me in 5 seconds to stretch"},'
    '{"role":"user","content":"Time sampled"},'
    '{"role":"assistant","content":"","tool_calls":[{"id":"call-1-1-0","type":"function","function":'
    '{"name":"schedule_create","arguments":"{\\"prompt\\":\\"stretch\\",\\"after_seconds\\":5}"}}]},'
    '{"role":"tool","tool_call_id":"call-1-1-0","content":"{\\"id\\":\\"schedule-1\\"}"},'
    '{"role":"assistant","content":"Reminder schedule-1 is set.","tool_calls":['
    '{"id":"c2","type":"function","function":{"name":"schedule_list","arguments":"{}"}},'
    '{"id":"c3","type":"function","function":{"name":"schedule_list","arguments":""}}]},'
    '{"role":"tool","tool_call_id":"c2","content":"(no output)"},'
    '{"role":"tool","tool_call_id":"c3","content":"(no result recorded)"},'
    '{"role":"user","content":"Grüße"},'
    '{"role":"assistant","content":"","tool_calls":[{"id":"c4","type":"function","function":'
    '{"name":"schedule_delete","arguments":"{\\"id\\":\\"schedule-1\\"}"}}]},'
    '{"role":"tool","tool_call_id":"c4","content":"(no result recorded)"}]'
)


def test_chat_messages_mapping() -> None:
    assert json.dumps(chat_messages("Be brief.", HISTORY), separators=(",", ":"), ensure_ascii=False) == EXPECTED_MESSAGES
    assert chat_messages("", HISTORY[:1]) == [{"role": "user", "content": "remind me in 5 seconds to stretch"}]
    assert chat_messages(None, ()) == []


async def test_request_line_headers_and_body_are_exact(server: Server) -> None:
    server.actions.append(sse(delta(content="ok"), finish("stop"), DONE))
    tools = (ToolSpec("schedule_list", "List reminders.", {"type": "object", "properties": {}}),)
    req = request(*HISTORY, system="Be brief.", tools=tools, max_tokens=4096, reasoning_effort="high")
    async with OpenAIAdapter(base_url=server.base_url + "/", api_key="sk-test",
                             client=httpx.AsyncClient(trust_env=False)) as adapter:
        await chunks_of(adapter, req)
    (recorded,) = server.requests
    assert (recorded.method, recorded.target) == ("POST", "/v1/chat/completions")
    assert recorded.header("content-type") == "application/json"
    assert recorded.header("accept") == "text/event-stream"
    assert recorded.header("user-agent") == f"turnlog/{importlib.metadata.version('turnlog')}"
    assert recorded.header("authorization") == "Bearer sk-test"
    assert recorded.body.decode("utf-8") == (
        '{"model":"m1","messages":' + EXPECTED_MESSAGES + ',"stream":true,"stream_options":{"include_usage":true},'
        '"tools":[{"type":"function","function":{"name":"schedule_list","description":"List reminders.",'
        '"parameters":{"type":"object","properties":{}}}}],"max_tokens":4096,"reasoning_effort":"high"}'
    )


async def test_absent_options_and_key_are_omitted(server: Server) -> None:
    server.actions.append(sse(delta(content="ok"), finish("stop"), DONE))
    async with OpenAIAdapter(base_url=server.base_url, client=httpx.AsyncClient(trust_env=False)) as adapter:
        await chunks_of(adapter)
    (recorded,) = server.requests
    assert recorded.header("authorization") is None
    assert recorded.body == (
        b'{"model":"m1","messages":[{"role":"user","content":"hi"}],"stream":true,'
        b'"stream_options":{"include_usage":true}}'
    )


# --- streaming ------------------------------------------------------------------------------


async def test_streamed_text_with_usage(server: Server, adapter: OpenAIAdapter) -> None:
    usage = {"prompt_tokens": 100, "completion_tokens": 12, "total_tokens": 112,
             "prompt_tokens_details": {"cached_tokens": 60}, "completion_tokens_details": {"reasoning_tokens": 0}}
    server.actions.append(sse(
        ": keep-alive\n\n",
        delta(role="assistant", content=""),
        delta(content="Hel"),
        delta(content="lo ☕"),
        finish("stop"),
        data({"choices": [], "usage": usage}),
        DONE,
    ))
    assert await chunks_of(adapter) == [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "Hel"},
        {"type": "text-delta", "index": 0, "text": "lo ☕"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Hello ☕"}},
        {"type": "usage", "usage": {"inputTokens": 40, "outputTokens": 12, "cacheReadTokens": 60, "reasoningTokens": 0}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]



async def test_a_surrogate_pair_split_across_payloads_is_joined(server: Server, adapter: OpenAIAdapter) -> None:
    # A server holding UTF-16 text may end one payload inside an emoji: "\ud83d" then "\ude00".
    # The halves are joined (a log cannot store lone surrogates); a half whose pair never comes
    # is U+FFFD, in text, reasoning and tool-call arguments alike.
    server.actions.append(sse(
        delta(role="assistant", reasoning_content="hm \ud83e"),
        delta(content="ok \ud83d"),
        delta(content="\ude00!", reasoning_content="\udd14"),
        delta(content=" \udc00 and \ud83d"),
        delta(tool_calls=[{"index": 0, "id": "call_A", "function": {"name": "note", "arguments": '{"t":"\ud83c'}}]),
        delta(tool_calls=[{"index": 0, "function": {"arguments": '\udf89"}'}}]),
        finish("stop"),
        DONE,
    ))
    chunks = await chunks_of(adapter)
    assert [c for c in chunks if c["type"].endswith("delta")] == [
        {"type": "reasoning-delta", "index": 0, "text": "hm "},
        {"type": "text-delta", "index": 1, "text": "ok "},
        {"type": "reasoning-delta", "index": 0, "text": "\U0001f914"},
        {"type": "text-delta", "index": 1, "text": "\U0001f600!"},
        {"type": "text-delta", "index": 1, "text": " \ufffd and "},
        {"type": "tool-call-delta", "index": 2, "id": "call_A", "name": "note", "argumentsDelta": '{"t":"'},
        {"type": "tool-call-delta", "index": 2, "id": "call_A", "name": "note", "argumentsDelta": '\U0001f389"}'},
        {"type": "text-delta", "index": 1, "text": "\ufffd"},
    ]
    blocks = [c["block"] for c in chunks if c["type"] == "block-end"]
    assert blocks == [
        {"type": "reasoning", "text": "hm \U0001f914"},
        {"type": "text", "text": "ok \U0001f600! \ufffd and \ufffd"},
        {"type": "tool-call", "id": "call_A", "name": "note", "arguments": '{"t":"\U0001f389"}'},
    ]
    assert json.loads(msgspec.json.encode(blocks)) == blocks  # storable: no lone surrogate left

async def test_streamed_reasoning_then_text(server: Server, adapter: OpenAIAdapter) -> None:
    server.actions.append(sse(
        delta(role="assistant", reasoning_content="Let me ", content=None),
        delta(reasoning_content="think.", content=""),
        delta(reasoning_content="", content="Answer"),
        delta(reasoning="late", content=None),  # the `reasoning` spelling extends the same block
        finish("stop"),
        DONE,
    ))
    outcome = await attempt(adapter, request())
    assert outcome == assembled(
        content=[{"type": "reasoning", "text": "Let me think.late"}, {"type": "text", "text": "Answer"}],
        usage=None, finish="stop",
    )


async def test_streamed_tool_calls(server: Server, adapter: OpenAIAdapter) -> None:
    server.actions.append(sse(
        delta(role="assistant", content=None, tool_calls=[
            {"index": 0, "id": "call_A", "type": "function", "function": {"name": "schedule_create", "arguments": ""}}]),
        delta(tool_calls=[{"index": 0, "function": {"arguments": '{"prompt":'}}]),
        delta(tool_calls=[{"index": 0, "function": {"arguments": '"stretch","after_seconds":5}'}},
                          {"index": 1, "id": "call_B", "function": {"name": "schedule_list", "arguments": "{}"}}]),
        finish("tool_calls"),
        DONE,
    ))
    chunks = await chunks_of(adapter)
    assert [c for c in chunks if c["type"] == "tool-call-delta"] == [
        {"type": "tool-call-delta", "index": 0, "id": "call_A", "name": "schedule_create", "argumentsDelta": ""},
        {"type": "tool-call-delta", "index": 0, "id": "call_A", "name": "schedule_create", "argumentsDelta": '{"prompt":'},
        {"type": "tool-call-delta", "index": 0, "id": "call_A", "name": "schedule_create",
         "argumentsDelta": '"stretch","after_seconds":5}'},
        {"type": "tool-call-delta", "index": 1, "id": "call_B", "name": "schedule_list", "argumentsDelta": "{}"},
    ]
    server.actions.append(sse(*[piece for piece in [
        delta(content="Sure."),
        delta(tool_calls=[{"index": 0, "function": {"name": "schedule_list", "arguments": "{}"}}]),
        finish("stop"),  # some servers say stop
        DONE,
    ]]))
    outcome = await attempt(adapter, request(turn=3, step=2))
    assert outcome == assembled(
        content=[{"type": "text", "text": "Sure."},
                 {"type": "tool-call", "id": "call-3-2-1", "name": "schedule_list", "arguments": "{}"}],
        usage=None, finish="tool-calls",
    )


async def test_tool_call_without_name_is_malformed(server: Server, adapter: OpenAIAdapter) -> None:
    server.actions.append(sse(delta(tool_calls=[{"index": 0, "id": "x", "function": {"arguments": "{}"}}]),
                              finish("tool_calls"), DONE))
    assert await failure_of(adapter) == {"message": "tool call 0 has no function name", "code": "MALFORMED_RESPONSE"}


async def test_length_is_max_tokens(server: Server, adapter: OpenAIAdapter) -> None:
    server.actions.append(sse(delta(content="trunc"), delta(tool_calls=[
        {"index": 0, "id": "c", "function": {"name": "schedule_list", "arguments": "{"}}]), finish("length"), DONE))
    outcome = await attempt(adapter, request())
    assert outcome == assembled(content=[{"type": "text", "text": "trunc"}], usage=None, finish="max-tokens")


async def test_function_call_and_a_missing_finish_reason_finish_like_stop(server: Server, adapter: OpenAIAdapter) -> None:
    server.actions.append(sse(delta(tool_calls=[
        {"index": 0, "id": "c", "function": {"name": "schedule_list", "arguments": "{}"}}]), finish("function_call"), DONE))
    outcome = await attempt(adapter, request())
    assert outcome == assembled(
        content=[{"type": "tool-call", "id": "c", "name": "schedule_list", "arguments": "{}"}],
        usage=None, finish="tool-calls",
    )
    server.actions.append(sse(delta(content="plain"), finish("function_call"), DONE))
    assert await attempt(adapter, request()) == assembled([{"type": "text", "text": "plain"}], None, "stop")
    server.actions.append(sse(delta(content="no reason"), DONE))
    assert await attempt(adapter, request()) == assembled([{"type": "text", "text": "no reason"}], None, "stop")


async def test_other_finish_reason_is_a_failure(server: Server, adapter: OpenAIAdapter) -> None:
    server.actions.append(sse(delta(content="x"), finish("content_filter"), DONE))
    assert await failure_of(adapter) == {"message": "model stopped: content_filter", "code": "CONTENT_FILTER"}
    server.actions.append(sse(delta(content="x"), finish("weird-reason.v2"), DONE))
    assert await failure_of(adapter) == {"message": "model stopped: weird-reason.v2", "code": "WEIRD_REASON_V2"}


async def test_completed_stream_without_content_is_empty_response(server: Server, adapter: OpenAIAdapter) -> None:
    server.actions.append(sse(delta(role="assistant", content=""), finish("stop"), DONE))
    failure = await failure_of(adapter)
    assert failure == {"message": "model returned a completed response with no content", "code": "EMPTY_RESPONSE"}
    assert is_retryable(msgspec.convert(failure, Failure))


async def test_crlf_and_multiline_data(server: Server, adapter: OpenAIAdapter) -> None:
    payload = json.dumps({"choices": [{"delta": {"content": "multi"}, "finish_reason": "stop"}]}, indent=1)
    lines = "".join(f"data:{line}\r\n" for line in payload.split("\n"))
    server.actions.append(sse(lines.encode()[:7], lines.encode()[7:] + b"\r\n", b"data: [DONE]\r\n\r\n"))
    outcome = await attempt(adapter, request())
    assert outcome == assembled(content=[{"type": "text", "text": "multi"}], usage=None, finish="stop")


async def test_missing_done_is_accepted_after_a_finish_reason(server: Server, adapter: OpenAIAdapter) -> None:
    server.actions.append(sse(delta(content="fine"), finish("stop")))
    assert await attempt(adapter, request()) == assembled([{"type": "text", "text": "fine"}], None, "stop")


async def test_missing_done_without_finish_reason_is_stream_closed(server: Server, adapter: OpenAIAdapter) -> None:
    server.actions.append(sse(delta(content="cut")))
    failure = await failure_of(adapter)
    assert failure == {"message": "model stream ended without [DONE]", "code": "STREAM_CLOSED"}
    assert not is_retryable(msgspec.convert(failure, Failure))


async def test_done_ends_the_stream_even_if_the_server_keeps_it_open(server: Server, adapter: OpenAIAdapter) -> None:
    server.actions.append(sse(delta(content="done"), DONE, hang=True))
    assert await attempt(adapter, request()) == assembled([{"type": "text", "text": "done"}], None, "stop")
    server.actions.append(sse(delta(content="done"), DONE, end=False))  # then the connection drops
    assert await attempt(adapter, request()) == assembled([{"type": "text", "text": "done"}], None, "stop")


async def test_malformed_payload(server: Server, adapter: OpenAIAdapter) -> None:
    junk = "{not json " + "x" * 200
    server.actions.append(sse(delta(content="a"), f"data: {junk}\n\n", DONE))
    assert await failure_of(adapter) == {"message": f"malformed SSE payload: {junk[:120]}", "code": "MALFORMED_RESPONSE"}


async def test_error_payload(server: Server, adapter: OpenAIAdapter) -> None:
    server.actions.append(sse(delta(content="a"), data({"error": {"message": "overloaded mid-stream", "code": 529}})))
    assert await failure_of(adapter) == {"message": "overloaded mid-stream", "code": "STREAM_ERROR"}


async def test_connection_dropped_mid_stream_is_transport(server: Server, adapter: OpenAIAdapter) -> None:
    server.actions.append(sse(delta(content="partial"), end=False))
    failure = await failure_of(adapter)
    assert failure["code"] == "TRANSPORT"
    assert failure["message"].startswith(f"model API stream from {server.base_url} failed: ")
    assert is_retryable(msgspec.convert(failure, Failure))


async def test_connect_failure_is_transport() -> None:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    await listeners[0].aclose()  # nothing listens there now
    base = f"http://127.0.0.1:{port}/v1"
    async with OpenAIAdapter(base_url=base, client=httpx.AsyncClient(trust_env=False)) as adapter:
        failure = await failure_of(adapter)
    assert failure["code"] == "TRANSPORT"
    # the detail names the socket error a person recognises, not httpx's wording
    assert failure["message"] == f"model API request to {base} failed: connection refused"


async def test_idle_timeout_mid_stream_and_before_the_response(server: Server) -> None:
    server.actions.append(sse(delta(content="slow"), hang=True))
    server.actions.append(silent())
    async with OpenAIAdapter(base_url=server.base_url, stream_idle_timeout=0.2,
                             client=httpx.AsyncClient(trust_env=False)) as adapter:
        assert await failure_of(adapter) == {"message": "no data from the model API for 0.2 s", "code": "TIMEOUT"}
        assert await failure_of(adapter) == {"message": "no data from the model API for 0.2 s", "code": "TIMEOUT"}


async def test_cancellation_mid_stream_propagates(server: Server, adapter: OpenAIAdapter) -> None:
    server.actions.append(sse(delta(content="a"), hang=True))
    seen: list[Any] = []
    with trio.move_on_after(0.2) as scope:
        await run_attempt(adapter, request(), seen.append)  # keeps the Structs
    assert scope.cancelled_caught
    assert [msgspec.to_builtins(c)["type"] for c in seen] == ["block-start", "text-delta"]
    # The adapter is still usable afterwards.
    server.actions.append(sse(delta(content="b"), finish("stop"), DONE))
    assert await attempt(adapter, request()) == assembled([{"type": "text", "text": "b"}], None, "stop")


# --- HTTP failures --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                         "code": "invalid_api_key"}},
         {"message": "Incorrect API key provided", "code": "AUTH", "status": 401}),
        (403, {"error": "forbidden here"}, {"message": "forbidden here", "code": "AUTH", "status": 403}),
        (429, {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota"}},
         {"message": "You exceeded your current quota", "code": "QUOTA", "status": 429}),
        (429, {"error": {"message": "Rate limit reached"}},
         {"message": "Rate limit reached", "code": "RATE_LIMIT", "status": 429}),
        (400, {"error": {"message": "too long", "code": "context_length_exceeded"}},
         {"message": "too long", "code": "CONTEXT_WINDOW_EXCEEDED", "status": 400}),
        (400, {"error": {"message": "This model's maximum context length is 65536 tokens."}},
         {"message": "This model's maximum context length is 65536 tokens.", "code": "CONTEXT_WINDOW_EXCEEDED",
          "status": 400}),
        (400, {"message": "bad field"}, {"message": "bad field", "code": "INVALID_REQUEST", "status": 400}),
        (413, "", {"message": "model API error (HTTP 413)", "code": "INVALID_REQUEST", "status": 413}),
        (408, "", {"message": "model API error (HTTP 408)", "code": "TIMEOUT", "status": 408}),
        (500, "<html>oops</html>", {"message": "model API error (HTTP 500)", "code": "SERVER", "status": 500}),
        (503, {"error": {"message": "upstream overloaded"}},
         {"message": "upstream overloaded", "code": "SERVER", "status": 503}),
        (402, {"error": {"message": "insufficient_quota: pay up"}},
         {"message": "insufficient_quota: pay up", "code": "QUOTA", "status": 402}),
        (418, {"error": {"message": "teapot"}}, {"message": "teapot", "code": "HTTP_418", "status": 418}),
    ],
)
async def test_http_failures(server: Server, adapter: OpenAIAdapter, status: int, body: Any,
                             expected: dict[str, Any]) -> None:
    server.actions.append(reply(status, body))
    assert await failure_of(adapter) == expected


async def test_not_found_names_the_url(server: Server, adapter: OpenAIAdapter) -> None:
    server.actions.append(reply(404, {"error": {"message": "no route"}}, [("x-request-id", "req-404")]))
    assert await failure_of(adapter) == {
        "message": f"model endpoint not found (HTTP 404) at {server.base_url}/chat/completions",
        "code": "HTTP_404", "status": 404, "requestId": "req-404",
    }


async def test_rate_limit_then_success(server: Server, adapter: OpenAIAdapter) -> None:
    server.actions.append(reply(429, {"error": {"message": "slow down"}},
                                [("retry-after", "2"), ("x-request-id", "req-7")]))
    server.actions.append(sse(delta(content="ok"), finish("stop"), DONE))
    failure = await failure_of(adapter)
    assert list(failure.items()) == [("message", "slow down"), ("code", "RATE_LIMIT"), ("status", 429),
                                     ("providerRetryAfterMs", 2000), ("requestId", "req-7")]
    assert is_retryable(msgspec.convert(failure, Failure))
    assert await attempt(adapter, request()) == assembled([{"type": "text", "text": "ok"}], None, "stop")
    assert server.requests[0].body == server.requests[1].body


async def test_retry_after_http_date(server: Server) -> None:
    now = 1770724800000
    server.actions.append(reply(503, "", [("retry-after", email.utils.formatdate(now / 1000 + 7, usegmt=True))]))
    async with OpenAIAdapter(base_url=server.base_url, now_ms=lambda: now,
                             client=httpx.AsyncClient(trust_env=False)) as adapter:
        failure = await failure_of(adapter)
    assert failure == {"message": "model API error (HTTP 503)", "code": "SERVER", "status": 503,
                       "providerRetryAfterMs": 7000}


async def test_only_64_kib_of_an_error_body_is_read(server: Server, adapter: OpenAIAdapter) -> None:
    message = "m" * (70 * 1024)
    server.actions.append(reply(400, {"error": {"message": message}}))
    # The JSON is cut at 64 KiB, so no message can be parsed from it.
    assert await failure_of(adapter) == {"message": "model API error (HTTP 400)", "code": "INVALID_REQUEST", "status": 400}
    server.actions.append(reply(400, {"error": {"message": "m" * (60 * 1024)}}))
    assert (await failure_of(adapter))["message"] == "m" * (60 * 1024)


# --- pure helpers ---------------------------------------------------------------------------


def test_sse_decoder_fields_comments_and_line_endings() -> None:
    decoder = SSEDecoder()
    stream = (b": comment\r\nevent: message\r\nid: 1\r\ndata: {\"a\":\r\ndata:1}\r\n\r\n"
              b"data: second\n\n\n\ndata\n\ndata: [DONE]")
    assert decoder.feed(stream) == ['{"a":\n1}', "second"]
    assert decoder.close() == ["[DONE]"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=200), max_size=6))
def test_sse_decoder_is_independent_of_chunking(cuts: list[int]) -> None:
    stream = ("data: é1\r\n\r\n: ping\n\ndata: two\ndata:  lines\n\n" + "data: 3☕\n\n").encode()
    decoder = SSEDecoder()
    events: list[str] = []
    start = 0
    for cut in sorted(cuts) + [len(stream)]:
        cut = min(cut, len(stream))
        events += decoder.feed(stream[start:cut])
        start = max(start, cut)
    events += decoder.close()
    assert events == ["é1", "two\n lines", "3☕"]


def test_retry_after_parsing() -> None:
    now = 1770724800000
    assert parse_retry_after("5", now) == 5000
    assert parse_retry_after(" 0 ", now) == 0
    assert parse_retry_after("1.5", now) == 1500
    assert parse_retry_after("Tue, 10 Feb 2026 12:00:30 GMT", now) == 30000
    assert parse_retry_after("Tue, 10 Feb 2026 11:00:00 GMT", now) == 0
    assert parse_retry_after("soon", now) is None
    assert parse_retry_after("-1", now) is None
    assert parse_retry_after(None, now) is None
    assert parse_retry_after("9" * 30, now) is None


def test_usage_mapping() -> None:
    assert plain_usage({"prompt_tokens": 10, "completion_tokens": 3}) == {"inputTokens": 10, "outputTokens": 3}
    assert plain_usage({"prompt_tokens": 10, "completion_tokens": 3, "prompt_cache_hit_tokens": 4,
                      "prompt_cache_miss_tokens": 6}) == {"inputTokens": 6, "outputTokens": 3, "cacheReadTokens": 4}
    assert plain_usage({"prompt_tokens": 10, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 2},
                      "prompt_cache_hit_tokens": 4, "completion_tokens_details": {"reasoning_tokens": 1}}) == {
        "inputTokens": 8, "outputTokens": 3, "cacheReadTokens": 2, "reasoningTokens": 1}


def test_transport_details_name_the_socket_error() -> None:
    from host.models.openai._adapter import _detail

    def chained(cause: BaseException) -> httpx.ConnectError:
        outer = httpx.ConnectError("all attempts to connect to 127.0.0.1:9 failed")
        outer.__cause__ = OSError("all attempts failed")
        outer.__cause__.__context__ = ExceptionGroup("attempts", [cause])  # as anyio reports it
        return outer

    assert _detail(chained(ConnectionRefusedError(111, "Connection refused"))) == "connection refused"
    assert _detail(chained(socket.gaierror(-2, "Name or service not known"))) == (
        "name not resolved: Name or service not known"
    )
    assert _detail(httpx.ConnectError("handshake failed")) == "handshake failed"
    assert _detail(httpx.ConnectError("")) == "ConnectError"
