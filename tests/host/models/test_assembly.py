"""Model interface: retry classification and delays (host §3.6), chunk conversion and assembly
(host §6.1, host §6.2). Expectations are the JSON shapes of host §6.1, compared through
``msgspec.to_builtins``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from host.models import (
    RETRYABLE_CODES,
    Assembler,
    ChunkError,
    Failure,
    ModelRequest,
    as_chunk,
    is_retryable,
    make_failure,
    retry_delay_ms,
    run_attempt,
)


def request(turn: int = 2, step: int = 3) -> ModelRequest:
    return ModelRequest(
        session_id="s",
        turn=turn,
        step=step,
        provider="scripted",
        model="scripted",
        system=None,
        messages=(),
        tools=(),
        max_tokens=None,
        reasoning_effort=None,
    )


def plain(value: Any) -> Any:
    """A chunk, outcome or failure as its JSON shape (``Assembled`` and ``Failed`` as objects)."""
    return msgspec.to_builtins(value)


def assembled(content: list[dict[str, Any]], usage: dict[str, int] | None = None, finish: str = "stop") -> Any:
    return {"content": content, "usage": usage, "finish": finish}


def failed(message: str, code: str) -> Any:
    return {"failure": {"message": message, "code": code}}


def assemble(chunks: list[dict[str, Any]], turn: int = 2, step: int = 3) -> Any:
    assembler = Assembler(turn=turn, step=step)
    for chunk in chunks:
        assembler.feed(as_chunk(chunk))
    return plain(assembler.outcome())


def failure(**members: Any) -> Failure:
    return msgspec.convert(members, Failure)


STOP = {"type": "finish", "reason": {"kind": "stop"}}
TOOL_CALLS = {"type": "finish", "reason": {"kind": "tool-calls"}}


# --- retry classification and delays ----------------------------------------------------------


def test_retryable_codes_are_exactly_the_spec_list() -> None:
    assert RETRYABLE_CODES == {"RATE_LIMIT", "SERVER", "TIMEOUT", "TRANSPORT", "EMPTY_RESPONSE"}
    for code in RETRYABLE_CODES:
        assert is_retryable(make_failure("m", code))
    for code in ("AUTH", "QUOTA", "INVALID_REQUEST", "CONTEXT_WINDOW_EXCEEDED", "HTTP_404", "STREAM_CLOSED",
                 "MALFORMED_RESPONSE", "STREAM_ERROR", "ADAPTER_ERROR", "SCRIPT_EXHAUSTED", "rate_limit"):
        assert not is_retryable(make_failure("m", code))


@pytest.mark.parametrize(
    ("retry", "low", "high"),
    [(1, 450, 550), (2, 900, 1100), (3, 1800, 2200), (4, 3600, 4400), (5, 7200, 8800), (6, 9000, 11000),
     (12, 9000, 11000)],
)
def test_retry_delay_doubles_from_500_ms_capped_at_10_s_with_jitter(retry: int, low: int, high: int) -> None:
    bounds: list[tuple[float, float]] = []

    def lowest(a: float, b: float) -> float:
        bounds.append((a, b))
        return a

    assert retry_delay_ms(retry, uniform=lowest) == low
    assert retry_delay_ms(retry, uniform=lambda a, b: b) == high
    assert retry_delay_ms(retry, uniform=lambda a, b: 1.0) == round((low + high) / 2)
    assert bounds == [(0.9, 1.1)]


def test_provider_retry_after_replaces_the_delay_without_jitter() -> None:
    def no_jitter(a: float, b: float) -> float:
        raise AssertionError("jitter must not be drawn")

    hint = {"message": "slow down", "code": "RATE_LIMIT", "status": 429}
    assert retry_delay_ms(1, failure(**hint, providerRetryAfterMs=3000), uniform=no_jitter) == 3000
    assert retry_delay_ms(4, failure(**hint, providerRetryAfterMs=10000), uniform=no_jitter) == 10000
    assert retry_delay_ms(1, failure(**hint, providerRetryAfterMs=0), uniform=no_jitter) == 0
    # Above 10 s the provider's hint is ignored and the normal backoff applies.
    assert retry_delay_ms(1, failure(**hint, providerRetryAfterMs=10001), uniform=lambda a, b: 1.0) == 500


def test_retry_numbers_start_at_one() -> None:
    with pytest.raises(ValueError):
        retry_delay_ms(0)


@settings(max_examples=200, deadline=None)
@given(retry=st.integers(min_value=1, max_value=64), u=st.floats(min_value=0.9, max_value=1.1))
def test_retry_delay_stays_within_jitter_bounds(retry: int, u: float) -> None:
    base = min(10000, 500 * 2 ** (retry - 1))
    delay = retry_delay_ms(retry, uniform=lambda a, b: u)
    assert isinstance(delay, int)
    assert round(base * 0.9) <= delay <= round(base * 1.1)


# --- assembly -------------------------------------------------------------------------------


def test_text_and_reasoning_deltas_concatenate_per_block_in_index_order() -> None:
    outcome = assemble([
        {"type": "block-start", "index": 0, "blockType": "reasoning"},
        {"type": "reasoning-delta", "index": 0, "text": "Let me "},
        {"type": "block-start", "index": 1, "blockType": "text"},
        {"type": "text-delta", "index": 1, "text": "Hello, "},
        {"type": "reasoning-delta", "index": 0, "text": "think."},
        {"type": "text-delta", "index": 1, "text": "wörld"},
        {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "Let me think."}},
        {"type": "block-end", "index": 1, "block": {"type": "text", "text": "Hello, wörld"}},
        {"type": "usage", "usage": {"inputTokens": 10, "outputTokens": 4}},
        STOP,
    ])
    assert outcome == assembled(
        [{"type": "reasoning", "text": "Let me think."}, {"type": "text", "text": "Hello, wörld"}],
        usage={"inputTokens": 10, "outputTokens": 4},
    )


def test_blocks_are_listed_by_index_not_arrival() -> None:
    outcome = assemble([
        {"type": "text-delta", "index": 1, "text": "second"},
        {"type": "text-delta", "index": 0, "text": "first"},
        STOP,
    ])
    assert [b["text"] for b in outcome["content"]] == ["first", "second"]
    assert outcome["usage"] is None


def test_tool_call_takes_first_id_and_name_and_concatenates_arguments() -> None:
    outcome = assemble([
        {"type": "block-start", "index": 0, "blockType": "tool-call"},
        {"type": "tool-call-delta", "index": 0, "id": "", "argumentsDelta": ""},
        {"type": "tool-call-delta", "index": 0, "id": "call_abc", "name": "schedule_create", "argumentsDelta": '{"pro'},
        {"type": "tool-call-delta", "index": 0, "id": "call_other", "name": "ignored", "argumentsDelta": 'mpt":"x"}'},
        {"type": "block-end", "index": 0, "block": {}},
        TOOL_CALLS,
    ])
    assert outcome == assembled(
        [{"type": "tool-call", "id": "call_abc", "name": "schedule_create", "arguments": '{"prompt":"x"}'}],
        finish="tool-calls",
    )


def test_tool_call_without_id_gets_turn_step_index_id() -> None:
    outcome = assemble([
        {"type": "text-delta", "index": 0, "text": "calling"},
        {"type": "tool-call-delta", "index": 1, "id": "", "name": "schedule_list", "argumentsDelta": "{}"},
        TOOL_CALLS,
    ], turn=7, step=4)
    assert outcome["content"][1] == {"type": "tool-call", "id": "call-7-4-1", "name": "schedule_list", "arguments": "{}"}


def test_tool_call_without_name_is_malformed() -> None:
    outcome = assemble([
        {"type": "text-delta", "index": 0, "text": "x"},
        {"type": "tool-call-delta", "index": 1, "id": "c", "argumentsDelta": "{}"},
        TOOL_CALLS,
    ])
    assert outcome == failed("tool call 1 has no function name", "MALFORMED_RESPONSE")


def test_max_tokens_drops_tool_calls_and_keeps_text() -> None:
    outcome = assemble([
        {"type": "text-delta", "index": 0, "text": "partial"},
        {"type": "tool-call-delta", "index": 1, "id": "c", "name": "schedule_list", "argumentsDelta": "{"},
        {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 2}},
        {"type": "finish", "reason": {"kind": "max-tokens"}},
    ])
    assert outcome == assembled(
        [{"type": "text", "text": "partial"}], usage={"inputTokens": 1, "outputTokens": 2}, finish="max-tokens"
    )


def test_error_finish_is_a_failure_with_only_the_known_keys_in_order() -> None:
    outcome = assemble([
        {"type": "text-delta", "index": 0, "text": "discarded"},
        {"type": "finish", "reason": {"kind": "error", "failure": {
            "requestId": "req-1", "code": "RATE_LIMIT", "extra": 1, "status": 429,
            "message": "slow down", "providerRetryAfterMs": 2000}}},
    ])
    assert list(outcome["failure"].items()) == [
        ("message", "slow down"), ("code", "RATE_LIMIT"), ("status", 429),
        ("providerRetryAfterMs", 2000), ("requestId", "req-1"),
    ]


def test_stop_without_content_is_empty_response() -> None:
    assert assemble([STOP]) == failed("model returned a completed response with no content", "EMPTY_RESPONSE")


def test_stream_without_finish_is_adapter_error() -> None:
    outcome = assemble([{"type": "text-delta", "index": 0, "text": "hi"}])
    assert outcome["failure"]["code"] == "ADAPTER_ERROR"
    assert outcome["failure"]["message"].startswith("model adapter failed: ChunkError: ")


@pytest.mark.parametrize(
    "chunk",
    [
        {"type": "nonsense"},
        {"type": "text-delta", "index": -1, "text": "x"},
        {"type": "text-delta", "index": True, "text": "x"},
        {"type": "text-delta", "index": 0, "text": 5},
        {"type": "block-start", "index": 0, "blockType": "image"},
        {"type": "usage", "usage": 3},
        {"type": "finish", "reason": {"kind": "done"}},
        {"type": "finish", "reason": {"kind": "error", "failure": {"message": "m"}}},
        "not a chunk",
    ],
)
def test_malformed_chunks_are_rejected(chunk: Any) -> None:
    with pytest.raises(ChunkError):
        Assembler(turn=1, step=1).feed(as_chunk(chunk))


def test_block_type_cannot_change_and_nothing_follows_finish() -> None:
    assembler = Assembler(turn=1, step=1)
    assembler.feed(as_chunk({"type": "text-delta", "index": 0, "text": "x"}))
    with pytest.raises(ChunkError):
        assembler.feed(as_chunk({"type": "reasoning-delta", "index": 0, "text": "y"}))
    assembler.feed(as_chunk(STOP))
    assert assembler.finished
    with pytest.raises(ChunkError):
        assembler.feed(as_chunk(STOP))


# --- run_attempt ----------------------------------------------------------------------------


class ListAdapter:
    provider = "test"

    def __init__(self, chunks: list[Any], *, raise_after: BaseException | None = None) -> None:
        self.chunks = chunks
        self.raise_after = raise_after
        self.closed = False

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        try:
            for chunk in self.chunks:
                await trio.lowlevel.checkpoint()
                yield chunk
            if self.raise_after is not None:
                raise self.raise_after
        finally:
            self.closed = True


async def test_run_attempt_streams_chunks_to_the_observer_and_assembles() -> None:
    chunks = [{"type": "text-delta", "index": 0, "text": "hi"}, STOP]
    seen: list[Any] = []
    outcome = await run_attempt(ListAdapter(chunks), request(), seen.append)
    assert plain(seen) == chunks
    assert plain(outcome) == assembled([{"type": "text", "text": "hi"}])


async def test_run_attempt_closes_the_stream_after_finish() -> None:
    adapter = ListAdapter([STOP, {"type": "text-delta", "index": 0, "text": "late"}])
    seen: list[Any] = []
    adapter.chunks.insert(0, {"type": "text-delta", "index": 0, "text": "ok"})
    outcome = await run_attempt(adapter, request(), seen.append)
    assert "content" in plain(outcome)
    assert plain(seen[-1]) == STOP and len(seen) == 2
    assert adapter.closed


async def test_run_attempt_reports_a_raising_adapter_as_adapter_error() -> None:
    adapter = ListAdapter([{"type": "text-delta", "index": 0, "text": "x"}], raise_after=RuntimeError("boom"))
    outcome = await run_attempt(adapter, request())
    assert plain(outcome) == failed("model adapter failed: RuntimeError: boom", "ADAPTER_ERROR")


async def test_run_attempt_reports_an_adapter_that_raises_while_closing_or_returns_no_stream() -> None:
    class FailsToClose:
        provider = "test"

        async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
            try:
                yield {"type": "text-delta", "index": 0, "text": "ok"}
                yield STOP
                yield STOP  # never read: the attempt ends at the first finish and closes the stream
            finally:
                raise RuntimeError("close failed")

    class NoStream:
        provider = "test"

        def stream(self, request: ModelRequest) -> Any:
            return 42

    assert plain(await run_attempt(FailsToClose(), request())) == failed(
        "model adapter failed: RuntimeError: close failed", "ADAPTER_ERROR"
    )
    assert plain(await run_attempt(NoStream(), request())) == failed(
        "model adapter failed: TypeError: 'int' object is not an async iterable", "ADAPTER_ERROR"
    )


async def test_run_attempt_reports_an_invalid_chunk_without_passing_it_on() -> None:
    seen: list[Any] = []
    adapter = ListAdapter([{"type": "bogus"}, STOP])
    outcome = plain(await run_attempt(adapter, request(), seen.append))
    assert outcome["failure"]["code"] == "ADAPTER_ERROR"
    assert seen == []
    assert adapter.closed


async def test_run_attempt_lets_cancellation_through() -> None:
    class Hanging:
        provider = "test"

        async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
            yield {"type": "text-delta", "index": 0, "text": "x"}
            await trio.sleep_forever()

    with trio.move_on_after(0.01) as scope:
        await run_attempt(Hanging(), request())
    assert scope.cancelled_caught


# --- the chunk union (host §6.1) -------------------------------------------------------------


SPEC_CHUNKS = [
    {"type": "block-start", "index": 0, "blockType": "tool-call"},
    {"type": "text-delta", "index": 1, "text": "hé"},
    {"type": "reasoning-delta", "index": 2, "text": "hm"},
    {"type": "tool-call-delta", "index": 0, "id": "", "argumentsDelta": "{"},
    {"type": "tool-call-delta", "index": 0, "id": "c-1", "name": "schedule_list", "argumentsDelta": "}"},
    {"type": "block-end", "index": 1, "block": {"type": "text", "text": "hé"}},
    {"type": "usage", "usage": {"inputTokens": 3, "outputTokens": 1, "cacheReadTokens": 2}},
    {"type": "finish", "reason": {"kind": "max-tokens"}},
    {"type": "finish", "reason": {"kind": "error", "failure": {"message": "m", "code": "C", "status": 500}}},
]


@pytest.mark.parametrize("shape", SPEC_CHUNKS)
def test_a_spec_dict_converts_to_a_struct_that_encodes_to_the_same_bytes(shape: dict[str, Any]) -> None:
    chunk = as_chunk(shape)
    assert not isinstance(chunk, dict)
    assert msgspec.json.encode(chunk) == msgspec.json.encode(shape)
    assert as_chunk(chunk) is chunk  # a Struct passes as it is


def test_conversion_fills_what_host_6_1_lets_a_tool_call_delta_leave_out_and_drops_unknown_members() -> None:
    chunk = as_chunk({"type": "tool-call-delta", "index": 0, "extra": [1]})
    assert plain(chunk) == {"type": "tool-call-delta", "index": 0, "id": "", "argumentsDelta": ""}


def test_nothing_starts_or_streams_after_a_block_end() -> None:
    for late in ({"type": "text-delta", "index": 0, "text": "late"}, {"type": "block-start", "index": 1, "blockType": "text"}):
        assembler = Assembler(turn=1, step=1)
        assembler.feed(as_chunk({"type": "text-delta", "index": 0, "text": "x"}))
        assembler.feed(as_chunk({"type": "block-end", "index": 0, "block": {"type": "text", "text": "x"}}))
        with pytest.raises(ChunkError, match="after a block-end"):
            assembler.feed(as_chunk(late))
