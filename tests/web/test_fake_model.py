"""The browser tests' fake model (tests/web/fake_model.py) read by the host's real ``openai``
adapter over loopback: what it streams is what the adapter assembles, held responses hold, a
stopped stream is noticed, and an unscripted request is a problem rather than a hang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import trio

from eventlog import vocab
from host.models import Assembled, Chunk, Failed, ModelRequest, TextDelta, run_attempt
from host.models.openai import OpenAIAdapter
from host.runtime import ToolSpec
from tests.web.fake_model import (
    FakeModel,
    Gate,
    Reply,
    Request,
    ToolCall,
    http_error,
    text,
    tool_call,
    tool_calls,
)

# A stream closed before its end leaves httpx's body generators to trio's finalizer (as in
# tests/host/models/test_openai.py): their cleanup path, not a leak of ours.
pytestmark = pytest.mark.filterwarnings(r"ignore:Async generator 'http(x|core)\.:ResourceWarning")

TOOL = ToolSpec("schedule_create", "Create a reminder.", {"type": "object"})


def model_request(prompt: str = "hi", step: int = 1) -> ModelRequest:
    return ModelRequest(
        session_id="s",
        turn=0,
        step=step,
        provider="openai",
        model="fake",
        system="Be brief.",
        messages=({"role": "user", "content": [{"type": "text", "text": prompt}]},),
        tools=(TOOL,),
        max_tokens=None,
        reasoning_effort=None,
    )


@pytest.fixture
def model() -> Iterator[FakeModel]:
    with FakeModel() as server:
        yield server


async def attempt(model: FakeModel, request: ModelRequest, chunks: list[Chunk] | None = None) -> Any:
    async with OpenAIAdapter(base_url=model.base_url, stream_idle_timeout=20) as adapter:
        return await run_attempt(adapter, request, None if chunks is None else chunks.append)


async def test_text_and_tool_calls_arrive_as_the_adapter_assembles_them(model: FakeModel) -> None:
    arguments = {"prompt": "Review the release window", "at": {"date": "2026-01-02", "time": "09:00:00"}}
    model.script(
        text("Hel", "lo ", "wörld"),
        tool_call("schedule_create", arguments, call_id="call_1"),
        tool_calls(ToolCall("a", {}), ToolCall("b", '{"raw": true}')),
    )
    chunks: list[Chunk] = []
    first = await attempt(model, model_request("hi"), chunks)
    assert first == Assembled([vocab.TextBlock(text="Hello wörld")], first.usage, "stop")
    assert [c.text for c in chunks if isinstance(c, TextDelta)] == ["Hel", "lo ", "wörld"]
    second = await attempt(model, model_request("remind me", step=2))
    assert isinstance(second, Assembled) and second.finish == "tool-calls"
    (call,) = second.content
    assert call == vocab.ToolCallBlock(
        id="call_1", name="schedule_create", arguments='{"prompt":"Review the release window","at":{"date":"2026-01-02","time":"09:00:00"}}'
    )
    third = await attempt(model, model_request())
    assert [(b.name, b.arguments) for b in third.content] == [("a", "{}"), ("b", '{"raw": true}')]

    requests = model.requests
    assert [r.index for r in requests] == [0, 1, 2]
    assert requests[0].path == "/v1/chat/completions"
    assert requests[0].body["model"] == "fake" and requests[0].body["stream"] is True
    assert requests[1].tool_names == ["schedule_create"]
    assert requests[1].text == "Be brief.\nremind me"
    assert model.problems == []


async def test_a_responder_sees_the_request_and_an_error_reply_is_an_http_error(model: FakeModel) -> None:
    def echo(request: Request) -> Reply:
        return text(f"you sent {len(request.messages)} messages: {request.messages[-1]['content']}")

    model.script(echo, http_error(503, "overloaded"))
    assert (await attempt(model, model_request("ping"))).content == [
        vocab.TextBlock(text="you sent 2 messages: ping")
    ]
    failed = await attempt(model, model_request())
    assert isinstance(failed, Failed) and failed.failure.code == "SERVER"
    assert "overloaded" in failed.failure.message


@pytest.mark.parametrize("after", [0, 1])
async def test_a_held_response_waits_for_its_release(model: FakeModel, after: int) -> None:
    gate = Gate()
    model.script(text("Hel", "lo").held(gate, after=after))
    chunks: list[Chunk] = []
    outcome: list[Any] = []

    async def run() -> None:
        outcome.append(await attempt(model, model_request(), chunks))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        await trio.to_thread.run_sync(gate.wait_reached)
        # Whatever came before the gate reaches the adapter while the rest is held.
        await trio.to_thread.run_sync(model.wait_requests, 1)
        with trio.fail_after(20):
            while len([c for c in chunks if isinstance(c, TextDelta)]) < after:
                await trio.sleep(0.01)
        assert [c.text for c in chunks if isinstance(c, TextDelta)] == ["Hel"][:after]
        assert outcome == []
        gate.release()
    assert outcome[0].content == [vocab.TextBlock(text="Hello")]
    assert not model.requests[0].closed.is_set()


async def test_a_held_response_notices_that_its_client_went_away(model: FakeModel) -> None:
    gate = Gate()
    model.script(text("never", " sent").held(gate, after=1))
    with trio.move_on_after(20) as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(attempt, model, model_request())
            await trio.to_thread.run_sync(gate.wait_reached)
            nursery.cancel_scope.cancel()  # as a stopped turn closes its stream
    assert not scope.cancelled_caught
    (request,) = model.requests
    assert await trio.to_thread.run_sync(request.closed.wait, 20)
    assert gate.reached and model.problems == []


async def test_a_request_beyond_the_script_is_answered_and_reported(model: FakeModel) -> None:
    failed = await attempt(model, model_request())
    assert isinstance(failed, Failed) and failed.failure.code == "INVALID_REQUEST"
    assert "no reply scripted for request 0" in failed.failure.message
    assert model.problems == ["request 0 arrived with nothing left in the script"]


async def test_a_cut_reply_is_a_transport_failure_after_its_first_deltas(model: FakeModel) -> None:
    model.script(text("partial", " never").cut(after=1))
    chunks: list[Chunk] = []
    failed = await attempt(model, model_request(), chunks)
    assert isinstance(failed, Failed) and failed.failure.code == "TRANSPORT", failed
    assert [c.text for c in chunks if isinstance(c, TextDelta)] == ["partial"]
    assert model.requests[0].closed.is_set() and model.problems == []
