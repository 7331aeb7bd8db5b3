"""The turn runner of one agent (host §3.3–3.9): one turn from ``turn/start`` to ``turn/end``.

A turn claims its input from the inbox, then runs steps: the pre-step hook chain, ``step/start``
and the batch, ``request/header`` when required, the checkpoint flush, the model call with its
retries, ``assistant/message``, the step's tool calls one at a time, ``step/end``. It ends with
``turn/end`` and one reason. Cancelling the turn (:meth:`TurnRunner.cancel`) cancels its scope;
the cleanup the spec requires (aborted tool results, ``step/end``, ``turn/end`` aborted) is
written with synchronous appends, so nothing can interrupt it.

Every event the runner writes is a ``vocab`` Struct (or host's own ``llm/retry`` Structs below),
except user messages, which are the inbox's and the hooks' mappings (see :mod:`._inbox`).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import trio
from msgspec import UNSET

from eventlog import PersistenceError, Session, vocab
from eventlog.values import Clock
from host.models import (
    Assembled,
    Chunk,
    Failed,
    ModelAdapter,
    make_failure,
)
from timecontext import Enter, PreStep, PreStepHook, Reject

from ._history import scan_turns
from ._inbox import Inbox, UserMessage, new_id
from ._requests import ModelCaller, Route
from ._tools import (
    ToolContext,
    ToolOutcome,
    ToolRegistry,
    aborted_before_dispatch_result,
    aborted_result,
    execute,
    persistence_result,
)

CancelCause = Literal["user", "disposed"]
DEFAULT_MAX_STEPS = 50

_logger = logging.getLogger("host")
_ABORTS: dict[CancelCause, vocab.AbortReason] = {
    "user": vocab.AbortByUser(),
    "disposed": vocab.AbortDisposed(),
}


def completed_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A hook's message as appended: ``role`` and ``id`` added where missing, keys in eventlog's
    order, nothing else changed (host §3.4)."""
    out: dict[str, Any] = {
        "id": message["id"] if "id" in message else new_id(),
        "role": message.get("role", "user"),
        "source": message["source"],
        "content": message["content"],
    }
    out.update((key, value) for key, value in message.items() if key not in out)
    return out


def error_reason(message: str, code: str) -> vocab.Failed:
    return vocab.Failed(error=make_failure(message, code))


def exception_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


@dataclass(slots=True)
class _Turn:
    """The open turn: its cancel scope and what cleanup must close."""

    number: int
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    abort_cause: CancelCause | None = None
    max_tokens: bool = False
    # what the turn claimed, and whether it must run again (its first checkpoint failed)
    steering: list[UserMessage] = field(default_factory=list)
    followups: list[UserMessage] = field(default_factory=list)
    run_again: bool = False
    step: int | None = None  # the open step, if any
    in_flight: vocab.ToolCallBlock | None = None  # a call with a tool/call and no result yet
    in_flight_seq: int = -1
    not_started: list[vocab.ToolCallBlock] = field(default_factory=list)

    def cancelled(self) -> bool:
        """Whether the turn's scope was cancelled (a call, so no check is narrowed away)."""
        return self.scope.cancel_called

    def finished(self) -> vocab.TurnEndReason:
        return vocab.MaxTokens() if self.max_tokens else vocab.Completed()


class TurnRunner:
    """Runs the turns of one agent over its eventlog ``Session`` and :class:`Inbox`; its
    requests are a :class:`~host.runtime._requests.ModelCaller`'s (``route``, ``adapter_for``,
    ``system``, ``max_retries``, ``uniform`` and ``on_delta`` are passed on to it). Every
    barrier it and its tools wait for is ``flush()`` (the session's, as the storage monitor
    sees it). Reading the log it is given raises
    :class:`~host.runtime._history.MalformedPersisted` for malformed persisted data (a resumed
    session's)."""

    def __init__(
        self,
        session: Session,
        inbox: Inbox,
        *,
        flush: Callable[[], Awaitable[int]],
        route: Callable[[], Route],
        adapter_for: Callable[[str], ModelAdapter],
        tools: ToolRegistry,
        hooks: Sequence[PreStepHook],
        clock: Clock,
        system: str | None,
        max_steps: int,
        max_retries: int,
        uniform: Callable[[float, float], float] = random.uniform,
        on_delta: Callable[[int, int, Chunk], None],
    ) -> None:
        self._session = session
        self._inbox = inbox
        self._flush = flush
        self.tools = tools
        self._hooks = tuple(hooks)
        self._clock = clock
        self._max_steps = max_steps
        self._turn: _Turn | None = None
        self._last_turn, log_has_header = scan_turns(session.events)
        self._model = ModelCaller(
            session,
            route=route,
            adapter_for=adapter_for,
            tools=tools,
            system=system,
            max_retries=max_retries,
            uniform=uniform,
            on_delta=on_delta,
            log_has_header=log_has_header,
        )

    def cancel(self, cause: CancelCause) -> None:
        """Cancel the active turn, if any; its cleanup ends it as aborted with ``cause``. A
        second cancel of the same turn changes nothing."""
        turn = self._turn
        if turn is not None and turn.abort_cause is None:
            turn.abort_cause = cause
            turn.scope.cancel()

    async def run_turn(self) -> None:
        """One turn, from ``turn/start`` (numbered after the last in the log) to ``turn/end``.

        A turn whose first checkpoint fails ends as ``PERSISTENCE`` before any model request;
        right after its ``turn/end`` its claims go back to the front of the inbox
        (:meth:`Inbox.requeue`), so it runs again with the same items once storage works — in
        the same write batch as the ``turn/end``, so a restart cannot lose them. A bug below ends
        the turn as ``INTERNAL`` (traceback logged); only a failure to append the turn's own
        closing events (a session that failed for good) propagates.
        """
        turn = _Turn(self._last_turn + 1)
        self._turn = turn
        try:
            self._session.append(vocab.TURN_START, vocab.TurnStart(turn=turn.number))
            self._last_turn = turn.number
            turn.steering, turn.followups = self._inbox.claim_turn_input()
            batch = turn.steering + turn.followups
            reason: vocab.TurnEndReason | None = None
            with turn.scope:
                try:
                    reason = await self._steps(turn, batch)
                except Exception as exc:
                    if isinstance(exc, PersistenceError) and exc.permanent:
                        raise  # nothing can be appended any more: the turn cannot be closed
                    _logger.exception(
                        'agent of session "%s": internal error in turn %d', self._session.id, turn.number
                    )
                    reason = error_reason(exception_text(exc), "INTERNAL")
            if turn.abort_cause is not None:  # set by cancel(), the only canceller of turn.scope
                self._close_aborted(turn)
                reason = vocab.Aborted(reason=_ABORTS[turn.abort_cause])
            else:
                assert reason is not None
                self._end_step(turn)
            self._session.append(vocab.TURN_END, vocab.TurnEnd(turn=turn.number, reason=reason))
            if turn.run_again and turn.abort_cause is None:
                self._inbox.requeue(turn.steering, turn.followups)
        finally:
            self._turn = None

    # --- steps ------------------------------------------------------------------------------------

    async def _steps(self, turn: _Turn, batch: list[UserMessage]) -> vocab.TurnEndReason:
        """Steps 3–10 of host §3.3, looping while tools ran or steering is pending."""
        step = 1
        continuation = False
        while True:
            decision = self._pre_step(turn, step, batch, continuation)
            if not isinstance(decision, Enter):
                return decision
            if turn.cancelled():
                return turn.finished()  # reported as aborted by run_turn
            if not decision.messages and not continuation:
                return turn.finished()
            turn.step = step
            self._session.append(vocab.STEP_START, vocab.StepStart(turn=turn.number, step=step))
            for message in decision.messages:
                self._session.append(vocab.USER_MESSAGE, message, surface_op="append")
            route = self._model.route()
            if route.model is not None:
                self._model.append_header_if_needed(route)
            try:
                await self._flush()
            except PersistenceError as exc:
                self._end_step(turn)
                # No model request was made for this turn: it runs again once storage works (never
                # after a permanent failure, which no retry can mend).
                turn.run_again = step == 1 and not exc.permanent
                return error_reason(str(exc), "PERSISTENCE")
            outcome = await self._model.call(turn.number, step, route)
            if isinstance(outcome, Failed):
                self._end_step(turn)
                return vocab.Failed(error=outcome.failure)
            self._append_reply(turn, step, route, outcome)
            if outcome.finish == "max-tokens":
                turn.max_tokens = True
            calls = [block for block in outcome.content if isinstance(block, vocab.ToolCallBlock)]
            failure = await self._run_tools(turn, calls)
            self._end_step(turn)
            if turn.cancelled():
                # A tool finished despite the cancel (a shielded body): stop before claiming, so
                # pending steering stays queued for the next turn (host §3.3). Reported as aborted.
                return turn.finished()
            if failure is not None:
                return error_reason(str(failure), "PERSISTENCE")
            if not calls and not self._inbox.steering:
                return turn.finished()
            if step + 1 > self._max_steps:
                return error_reason(f"turn exceeded {self._max_steps} steps", "STEP_LIMIT")
            batch = self._inbox.claim_steering()
            continuation = bool(calls)
            step += 1

    def _append_reply(self, turn: _Turn, step: int, route: Route, outcome: Assembled) -> None:
        """host §3.3 step 7: the ``assistant/message`` of a successful call, with its usage."""
        assert route.model is not None  # a request without a model fails before the call
        content: list[vocab.ContentBlock] = [*outcome.content]
        reply = vocab.Message(
            id=new_id(),
            role="assistant",
            source=vocab.ModelSource(provider=route.provider, model=route.model),
            content=content,
        )
        usage = UNSET if outcome.usage is None else outcome.usage
        self._session.append(
            vocab.ASSISTANT_MESSAGE,
            vocab.AssistantMessage(turn=turn.number, step=step, message=reply, usage=usage),
            surface_op="append",
        )

    def _pre_step(
        self, turn: _Turn, step: int, batch: list[UserMessage], continuation: bool
    ) -> Enter | vocab.TurnEndReason:
        """Pass ``Enter(batch)`` through the hook chain (host §3.4). Returns the final ``Enter``
        with its messages completed, or the turn's end reason (``blocked``, ``PRE_STEP``)."""
        pre = PreStep(
            turn=turn.number,
            step=step,
            events=self._session.events,
            continuation=continuation,
            cancelled=turn.cancelled(),
        )
        try:
            decision = _run_hooks(self._hooks, pre, Enter(tuple(batch)))
        except _HookRaised as raised:
            return error_reason(exception_text(raised.exc), "PRE_STEP")
        if isinstance(decision, Reject):
            return vocab.Blocked()
        return Enter(tuple(completed_message(m) for m in decision.messages))

    def _end_step(self, turn: _Turn) -> None:
        if turn.step is not None:
            self._session.append(vocab.STEP_END, vocab.StepEnd(turn=turn.number, step=turn.step))
            turn.step = None

    def _close_aborted(self, turn: _Turn) -> None:
        """Cleanup of a cancelled turn (host §3.9): the call in flight gets ``ABORTED``, calls not
        yet started get ``tool/call`` plus ``ABORTED_BEFORE_DISPATCH``, then ``step/end``. Only
        synchronous appends, so nothing here can be interrupted."""
        if turn.step is not None:
            if turn.in_flight is not None:
                self._append_result(turn, turn.in_flight, turn.in_flight_seq, aborted_result())
            while turn.not_started:
                call = turn.not_started.pop(0)
                seq = self._append_call(turn, call)
                self._append_result(turn, call, seq, aborted_before_dispatch_result())
        self._end_step(turn)

    # --- tools ------------------------------------------------------------------------------------

    async def _run_tools(self, turn: _Turn, calls: list[vocab.ToolCallBlock]) -> PersistenceError | None:
        """Run the step's calls one at a time in content order (host §3.7). Returns the flush
        failure that stopped them, if any. Cancellation propagates with ``turn`` describing what
        the cleanup must still close."""
        turn.not_started = list(calls)
        failure: PersistenceError | None = None
        while turn.not_started:
            call = turn.not_started.pop(0)
            seq = self._append_call(turn, call)
            if turn.cancelled():
                self._append_result(turn, call, seq, aborted_before_dispatch_result())
                continue
            if failure is not None:
                self._append_result(turn, call, seq, persistence_result(str(failure)))
                continue
            turn.in_flight, turn.in_flight_seq = call, seq
            try:
                await self._flush()
            except PersistenceError as exc:
                failure = exc
                self._append_result(turn, call, seq, persistence_result(str(exc)))
                continue
            result = await execute(self.tools, call.name, call.arguments, self._tool_context(turn, call))
            self._append_result(turn, call, seq, result)
        return failure

    def _append_call(self, turn: _Turn, call: vocab.ToolCallBlock) -> int:
        data = vocab.ToolCall(
            turn=turn.number, step=turn.step or 0, call_id=call.id, name=call.name, arguments=call.arguments
        )
        return self._session.append(vocab.TOOL_CALL, data).seq

    def _append_result(
        self, turn: _Turn, call: vocab.ToolCallBlock, call_seq: int, result: ToolOutcome
    ) -> None:
        self._session.append(
            vocab.TOOL_RESULT,
            result.data(turn.number, turn.step or 0, call.id, new_id()),
            surface_op="append",
            source_event_seqs=[call_seq],
        )
        if turn.in_flight is call:
            turn.in_flight = None

    def _tool_context(self, turn: _Turn, call: vocab.ToolCallBlock) -> ToolContext:
        session = self._session
        return ToolContext(
            session_id=session.id,
            turn=turn.number,
            step=turn.step or 0,
            call_id=call.id,
            events=session.events,
            seed_length=session.seed_length,
            append=lambda type, data: session.append(type, data),
            flush=self._flush,
            now_ms=self._clock.now_ms,
        )


class _HookRaised(Exception):
    """What a pre-step hook raised or returned wrongly (``exc``): the turn ends as ``PRE_STEP``."""

    def __init__(self, exc: Exception) -> None:
        super().__init__(str(exc))
        self.exc = exc


def _run_hooks(hooks: Sequence[PreStepHook], pre: PreStep, decision: Enter | Reject) -> Enter | Reject:
    """The hook chain in registration order, each hook given the previous one's decision."""
    try:
        for hook in hooks:
            decision = hook.pre_step(pre, decision)
            if not isinstance(decision, (Enter, Reject)):
                raise TypeError(f"pre-step hook {type(hook).__name__} returned {decision!r}")
    except Exception as exc:
        raise _HookRaised(exc) from exc
    return decision
