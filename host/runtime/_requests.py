"""What a step asks of the model (host §3.5, §3.6): the request built from the route, the system
prompt, the session's tools and the derived history; ``request/header`` when it is due; and the
attempts with their retries, logged as ``llm/retry`` and ``llm/retry-started``."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import msgspec
import trio
from msgspec import UNSET

from eventlog import Session, vocab
from host.models import (
    Chunk,
    Failed,
    Failure,
    ModelAdapter,
    ModelRequest,
    Outcome,
    is_retryable,
    make_failure,
    retry_delay_ms,
    run_attempt,
)

from ._history import HistoryView
from ._inbox import new_id
from ._tools import ToolRegistry

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant. You can create, list and delete reminders with the schedule "
    "tools. A message that starts with [SCHEDULE REMINDER] is a reminder you created earlier that "
    "is now due: tell the user about it."
)
DEFAULT_MAX_RETRIES = 5

LLM_RETRY = "llm/retry"
LLM_RETRY_STARTED = "llm/retry-started"


@dataclass(frozen=True, slots=True)
class Route:
    """Where model requests go (host §4.3.1): ``model`` is ``None`` for a non-scripted provider
    that was given none, and such a request fails with ``MISSING_CONFIG``."""

    provider: str
    model: str | None
    max_tokens: int | None = None
    reasoning_effort: str | None = None


class LlmRetry(msgspec.Struct, rename="camel", kw_only=True):
    """``llm/retry`` data (host §3.6 step 1)."""

    retry_id: str
    turn: int
    step: int
    provider: str
    mode: Literal["normal"] = "normal"
    policy_key: Literal["default"] = "default"
    retry: int
    max_retries: int
    delay_ms: int
    failure: Failure


class LlmRetryStarted(msgspec.Struct, rename="camel", kw_only=True):
    """``llm/retry-started`` data (host §3.6 step 3)."""

    retry_id: str
    turn: int
    step: int
    retry: int


class ModelCaller:
    """The requests of one agent over its eventlog ``Session``.

    ``route()`` and ``adapter_for(provider)`` are read at every request, so a new route
    (``initialize``) takes effect at the next step; ``system`` is fixed. ``on_delta(turn, step,
    chunk)`` receives every streamed chunk, synchronously. ``log_has_header`` says whether the log
    already held a ``request/header`` when the agent was made (a resumed session, a fork child).
    The derived history of the events already in the log is read here, once: a malformed surface
    event raises :class:`~host.runtime._history.MalformedPersisted` (host §5.3).
    """

    def __init__(
        self,
        session: Session,
        *,
        route: Callable[[], Route],
        adapter_for: Callable[[str], ModelAdapter],
        tools: ToolRegistry,
        system: str | None,
        max_retries: int,
        uniform: Callable[[float, float], float] = random.uniform,
        on_delta: Callable[[int, int, Chunk], None],
        log_has_header: bool,
    ) -> None:
        self._session = session
        self.route = route
        self._adapter_for = adapter_for
        self._tools = tools
        self._system = system or None
        self._max_retries = max_retries
        self._uniform = uniform
        self._on_delta = on_delta
        self._log_has_header = log_has_header
        self._history = HistoryView()
        self._history.update(session.events)
        self._written_header: vocab.RequestSnapshot | None = None  # the last request/header written here

    def _header(self, route: Route, model: str) -> vocab.RequestSnapshot:
        config = vocab.RequestConfig(
            provider=route.provider,
            model=model,
            reasoning_effort=UNSET if route.reasoning_effort is None else route.reasoning_effort,
            max_tokens=UNSET if route.max_tokens is None else route.max_tokens,
        )
        tools = list(self._tools.specs())
        return vocab.RequestSnapshot(config=config, system=self._system or UNSET, tools=tools or UNSET)

    def append_header_if_needed(self, route: Route) -> None:
        """host §3.5: always on this agent's first request (``initial``, or ``resume`` when the log
        already has a header); later only when the header changed (``change``)."""
        assert route.model is not None
        header = self._header(route, route.model)
        if self._written_header is None:
            reason: Literal["initial", "resume", "change"] = "resume" if self._log_has_header else "initial"
        elif header != self._written_header:
            reason = "change"
        else:
            return
        self._session.append(vocab.REQUEST_HEADER, vocab.RequestHeader(header=header, reason=reason))
        self._written_header = header

    async def call(self, turn: int, step: int, route: Route) -> Outcome:
        """host §3.6: attempts until one succeeds, fails terminally, or retries run out."""
        if route.model is None:
            return Failed(
                make_failure(f'no model configured for provider "{route.provider}"', "MISSING_CONFIG")
            )
        request = ModelRequest(
            session_id=self._session.id,
            turn=turn,
            step=step,
            provider=route.provider,
            model=route.model,
            system=self._system,
            messages=tuple(self._history.update(self._session.events)),
            tools=self._tools.specs(),
            max_tokens=route.max_tokens,
            reasoning_effort=route.reasoning_effort,
        )
        adapter = self._adapter_for(route.provider)

        def on_chunk(chunk: Chunk) -> None:
            self._on_delta(turn, step, chunk)

        retries = 0
        while True:
            outcome = await run_attempt(adapter, request, on_chunk)
            if not (
                isinstance(outcome, Failed) and is_retryable(outcome.failure) and retries < self._max_retries
            ):
                return outcome
            retries += 1
            delay = retry_delay_ms(retries, outcome.failure, uniform=self._uniform)
            retry_id = new_id()
            self._session.append(
                LLM_RETRY,
                LlmRetry(
                    retry_id=retry_id,
                    turn=turn,
                    step=step,
                    provider=route.provider,
                    retry=retries,
                    max_retries=self._max_retries,
                    delay_ms=delay,
                    failure=outcome.failure,
                ),
            )
            await trio.sleep(delay / 1000)
            self._session.append(
                LLM_RETRY_STARTED,
                LlmRetryStarted(retry_id=retry_id, turn=turn, step=step, retry=retries),
            )
