"""The agent loop of one live session (host.md §3).

An :class:`Agent` owns the session's inbox (two FIFO queues whose every change is logged as an
``agent/inbox/spliced`` event), its phase (``idle``, ``running`` or ``maintenance``), and the driver
task that turns queued input into turns and steps: pre-step hooks, ``request/header``, model calls
with retries, exclusive tool execution and ``turn/end``. :class:`SchedulePort` adapts it to the
``AgentPort`` Protocol of ``schedule``.

Everything the agent writes goes through the eventlog :class:`~eventlog.Session` it is given; the
agent keeps no state that the log could not rebuild except the phase and the request-header
bookkeeping of this process.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import trio

from eventlog import PersistenceError, vocab
from host.history import HistoryView
from host.models import (
    Chunk,
    Failed,
    ModelAdapter,
    ModelRequest,
    Outcome,
    is_retryable,
    make_failure,
    retry_delay_ms,
    run_attempt,
)
from host.tools import (
    ToolContext,
    ToolRegistry,
    ToolResult,
    aborted_before_dispatch_result,
    aborted_result,
    execute,
    persistence_result,
    tool_call_data,
)
from schedule import AgentBusy
from timecontext import Enter, PreStep, Reject

if TYPE_CHECKING:
    from eventlog import Event, Session
    from timecontext import PreStepHook

T = TypeVar("T")
Phase = Literal["idle", "running", "maintenance"]
Status = Literal["idle", "running"]
CancelCause = Literal["user", "disposed"]
Target = Literal["next-turn", "next-step"]

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant. You can create, list and delete reminders with the schedule "
    "tools. A message that starts with [SCHEDULE REMINDER] is a reminder you created earlier that "
    "is now due: tell the user about it."
)
DEFAULT_MAX_STEPS = 50
DEFAULT_MAX_RETRIES = 5

_log = logging.getLogger("host")


class AgentClosed(Exception):
    """Input offered to an agent that is shutting down or closed; nothing was enqueued."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f'the agent of session "{session_id}" is closed')
        self.session_id = session_id


@dataclass(frozen=True, slots=True)
class Route:
    """Where model requests go (host.md §4.3.1): ``model`` is ``None`` for a non-scripted
    provider that was given none, and such a request fails with ``MISSING_CONFIG``."""

    provider: str
    model: str | None
    max_tokens: int | None = None
    reasoning_effort: str | None = None


def new_id() -> str:
    return str(uuid.uuid4())


def user_message(content: Sequence[Any], source: Mapping[str, Any]) -> dict[str, Any]:
    """A user-role message with a fresh id, in eventlog's key order ``id, role, source, content``."""
    return {"id": new_id(), "role": "user", "source": dict(source), "content": list(content)}


def completed_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A hook's message as appended: ``role`` and ``id`` added where missing, keys in eventlog's
    order, nothing else changed."""
    out: dict[str, Any] = {
        "id": message["id"] if "id" in message else new_id(),
        "role": message["role"] if "role" in message else "user",
        "source": message["source"],
        "content": message["content"],
    }
    out.update((key, value) for key, value in message.items() if key not in out)
    return out


def error_reason(message: str, code: str) -> dict[str, Any]:
    return {"kind": "error", "error": make_failure(message, code)}


def _exception_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


@dataclass(slots=True)
class _Turn:
    """The open turn: its cancel scope and what cleanup must close."""

    number: int
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    abort_cause: CancelCause | None = None
    max_tokens: bool = False
    step: int | None = None  # the open step, if any
    in_flight: vocab.ToolCallBlock | None = None  # a call with a tool/call and no result yet
    in_flight_seq: int = -1
    not_started: list[vocab.ToolCallBlock] = field(default_factory=list)


class Agent:
    """The agent of one live session.

    Construct it over an open eventlog ``Session`` (a resumed one included), then run
    :meth:`run` in the session's nursery. Input enters through :meth:`followup` and :meth:`steer`,
    which append their receipt before returning; :meth:`cancel` aborts the active turn;
    :meth:`aclose` disposes of the agent. ``route()`` and ``adapter_for()`` are called at every
    request, so a new route (``initialize``) takes effect at the next step; ``system`` is fixed.

    Callbacks: ``on_status(status)`` on each public status flip, ``on_delta(turn, step, chunk)``
    for every streamed chunk, and every ``on_idle`` callback (see :meth:`add_idle_callback`) each
    time the status becomes ``idle`` while the agent is live. They are called synchronously.
    """

    def __init__(
        self,
        session: Session,
        *,
        route: Callable[[], Route],
        adapter_for: Callable[[str], ModelAdapter],
        tools: ToolRegistry,
        hooks: Sequence[PreStepHook] = (),
        clock: Any,
        system: str | None = DEFAULT_SYSTEM_PROMPT,
        max_steps: int = DEFAULT_MAX_STEPS,
        max_retries: int = DEFAULT_MAX_RETRIES,
        uniform: Callable[[float, float], float] = random.uniform,
        inbox: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
        on_status: Callable[[Status], None] = lambda status: None,
        on_delta: Callable[[int, int, Chunk], None] = lambda turn, step, chunk: None,
    ) -> None:
        self._session = session
        self._route = route
        self._adapter_for = adapter_for
        self.tools = tools
        self._hooks = tuple(hooks)
        self._clock = clock
        self._system = system or None
        self._max_steps = max_steps
        self._max_retries = max_retries
        self._uniform = uniform
        self._on_status = on_status
        self._on_delta = on_delta
        self._on_idle: list[Callable[[], None]] = []
        inbox = inbox or {}
        self._queues: dict[str, list[Mapping[str, Any]]] = {
            "next-turn": list(inbox.get("next-turn", ())),
            "next-step": list(inbox.get("next-step", ())),
        }
        self._phase: Phase = "idle"
        self._latched = False
        self._closing = False
        self._idle = trio.Event()
        self._idle.set()
        self._wakeup = trio.Event()
        self._stopped = trio.Event()
        self._turn: _Turn | None = None
        self._history = HistoryView()
        self._last_turn, self._log_has_header = _scan_log(session.events)
        self._written_header: dict[str, Any] | None = None  # the last request/header this agent wrote
        self.port = SchedulePort(self)

    # --- public state ---------------------------------------------------------------------------

    @property
    def id(self) -> str:
        return self._session.id

    @property
    def phase(self) -> Phase:
        return self._phase

    @property
    def status(self) -> Status:
        """``running`` in phase ``running``, ``idle`` otherwise (maintenance included)."""
        return "running" if self._phase == "running" else "idle"

    @property
    def is_live(self) -> bool:
        """True until disposal begins."""
        return not self._closing

    def add_idle_callback(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` each time the status becomes ``idle`` while the agent is live."""
        self._on_idle.append(callback)

    # --- input ----------------------------------------------------------------------------------

    def followup(self, content: Sequence[Any], source: Mapping[str, Any]) -> str:
        """Queue a user message for a later turn (``next-turn``); returns its id. The receipt splice
        is appended before this returns, then the driver is woken. Raises :class:`AgentClosed`
        (nothing enqueued) once disposal has begun, or eventlog's error if the append is refused."""
        return self._enqueue("next-turn", user_message(content, source))

    def steer(self, content: Sequence[Any], source: Mapping[str, Any]) -> str:
        """Like :meth:`followup`, on ``next-step``: the message joins the running turn at its next
        step boundary (or opens a turn when idle)."""
        return self._enqueue("next-step", user_message(content, source))

    def _enqueue(self, target: Target, message: dict[str, Any]) -> str:
        if self._closing:
            raise AgentClosed(self.id)
        queue = self._queues[target]
        self._session.append("agent/inbox/spliced", {"target": target, "start": len(queue), "inserted": [message]})
        queue.append(message)
        self._wake()
        return message["id"]

    def _has_input(self) -> bool:
        return bool(self._queues["next-turn"] or self._queues["next-step"])

    def _claim(self, target: Target, count: int) -> list[Mapping[str, Any]]:
        """Remove the first ``count`` messages of a queue, logging the pure-deletion splice."""
        if count == 0:
            return []
        queue = self._queues[target]
        self._session.append(
            "agent/inbox/spliced", {"target": target, "start": 0, "removedCount": count, "inserted": []}
        )
        claimed = queue[:count]
        del queue[:count]
        return claimed

    def _clear_inbox(self) -> None:
        for target in ("next-step", "next-turn"):
            queue = self._queues[target]
            if queue:
                self._session.append(
                    "agent/inbox/spliced",
                    {"target": target, "start": 0, "removedCount": len(queue), "inserted": [], "outcome": "canceled"},
                )
                queue.clear()

    # --- phases -----------------------------------------------------------------------------------

    def wake(self) -> None:
        """Start a turn for input already queued (a resumed inbox); no-op without input."""
        if self._has_input():
            self._wake()

    def _wake(self) -> None:
        if self._closing:
            return
        if self._phase == "idle":
            self._phase = "running"
            self._idle = trio.Event()
            self._on_status("running")
            self._wakeup.set()
        elif self._phase == "maintenance":
            self._latched = True

    def _become_idle(self) -> None:
        self._phase = "idle"
        self._on_status("idle")
        self._idle.set()
        if not self._closing:
            for callback in self._on_idle:
                callback()

    async def when_idle(self) -> None:
        """Return once the phase is ``idle`` (at once if it is). Never returns between back-to-back
        turns: the driver does not pass through ``idle`` while input is pending. Raises
        :class:`AgentClosed` if the driver stopped without becoming idle."""
        while self._phase != "idle":
            if self._stopped.is_set():
                raise AgentClosed(self.id)  # the driver is gone (an abandoned session)
            await self._idle.wait()

    def run_maintenance(self, task: Callable[[], T]) -> T:
        """Run a synchronous ``task()`` in the maintenance phase (schedule.md §8).

        Raises ``schedule.AgentBusy`` without calling ``task`` unless the phase is ``idle``. While
        the task runs, arriving input is parked and its wake latched; the phase is released however
        the task ends, then the latched wake runs if input is queued. The task's result or
        exception passes through unchanged.
        """
        if self._phase != "idle" or self._closing:
            raise AgentBusy(f'agent "{self.id}" is {"closing" if self._closing else self._phase}')
        self._phase = "maintenance"
        self._latched = False
        try:
            return task()
        finally:
            self._phase = "idle"
            if self._latched and self._has_input():
                self._latched = False
                self._wake()

    # --- cancellation and disposal ------------------------------------------------------------------

    def cancel(self, cause: CancelCause, *, keep_inbox: bool = False) -> None:
        """Abort the active turn (host.md §3.9): unless ``keep_inbox``, clear the inbox with
        ``canceled`` splices; then cancel the turn's scope. Its cleanup (aborted tool results,
        ``step/end``, ``turn/end`` aborted with ``{"kind":cause}``) is written by the driver."""
        if not keep_inbox:
            self._clear_inbox()
        turn = self._turn
        if turn is not None and turn.abort_cause is None:
            turn.abort_cause = cause
            turn.scope.cancel()

    async def aclose(self) -> None:
        """Dispose of the agent: no more input or idle callbacks, ``cancel("disposed",
        keep_inbox=True)`` (queued input stays in the log for a resume), and wait until the driver
        has written its cleanup and stopped. Idempotent."""
        if not self._closing:
            self._closing = True
            self.cancel("disposed", keep_inbox=True)
            self._wakeup.set()
        await self._stopped.wait()

    # --- the driver ---------------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The driver task: wait for a wake, then run turns while input is queued (§3.3)."""
        task_status.started()
        try:
            while not self._closing:
                await self._wakeup.wait()
                self._wakeup = trio.Event()
                if self._phase == "running":
                    await self._activity()
        finally:
            self._stopped.set()
            self._idle.set()  # wake when_idle waiters; they re-check the phase

    async def _activity(self) -> None:
        while not self._closing:
            if self._has_input():
                try:
                    await self._run_turn()
                except Exception:
                    # Even the turn's closing events could not be appended (e.g. a session that
                    # failed permanently): stop this activity; the next input wakes a new one.
                    _log.exception('agent of session "%s": a turn could not be closed', self.id)
                    break
                continue
            try:
                await self._session.flush()
            except PersistenceError as exc:
                _log.warning('session "%s": flush before idle failed (events stay pending): %s', self.id, exc)
            if not self._has_input():
                break
        self._become_idle()

    async def _run_turn(self) -> None:
        turn = _Turn(self._last_turn + 1)
        self._turn = turn
        try:
            self._session.append("turn/start", {"turn": turn.number})
            self._last_turn = turn.number
            batch = self._claim("next-step", len(self._queues["next-step"]))
            batch += self._claim("next-turn", min(1, len(self._queues["next-turn"])))
            reason: dict[str, Any] | None = None
            with turn.scope:
                try:
                    reason = await self._turn_body(turn, batch)
                except Exception as exc:
                    _log.exception('agent of session "%s": internal error in turn %d', self.id, turn.number)
                    reason = error_reason(_exception_text(exc), "INTERNAL")
            if turn.abort_cause is not None:  # set by cancel(), the only canceller of turn.scope
                self._close_aborted(turn)
                reason = {"kind": "aborted", "reason": {"kind": turn.abort_cause}}
            else:
                assert reason is not None
                self._end_step(turn)
            self._session.append("turn/end", {"turn": turn.number, "reason": reason})
        finally:
            self._turn = None

    def _close_aborted(self, turn: _Turn) -> None:
        """Cleanup of a cancelled turn (§3.9): the call in flight gets ``ABORTED``, calls not yet
        started get ``tool/call`` plus ``ABORTED_BEFORE_DISPATCH``, then ``step/end``. Only
        synchronous appends, so nothing here can be interrupted."""
        if turn.step is not None:
            if turn.in_flight is not None:
                self._append_result(turn, turn.in_flight, turn.in_flight_seq, aborted_result())
            while turn.not_started:
                call = turn.not_started.pop(0)
                seq = self._append_call(turn, call)
                self._append_result(turn, call, seq, aborted_before_dispatch_result())
        self._end_step(turn)

    def _end_step(self, turn: _Turn) -> None:
        if turn.step is not None:
            self._session.append("step/end", {"turn": turn.number, "step": turn.step})
            turn.step = None

    def _finished(self, turn: _Turn) -> dict[str, Any]:
        return {"kind": "max-tokens"} if turn.max_tokens else {"kind": "completed"}

    async def _turn_body(self, turn: _Turn, batch: list[Mapping[str, Any]]) -> dict[str, Any]:
        step = 1
        continuation = False
        while True:
            decision = self._pre_step(turn, step, batch, continuation)
            if not isinstance(decision, Enter):
                return decision
            if turn.scope.cancel_called:
                return self._finished(turn)  # reported as aborted by the caller
            if not decision.messages and not continuation:
                return self._finished(turn)
            turn.step = step
            self._session.append("step/start", {"turn": turn.number, "step": step})
            for message in decision.messages:
                self._session.append("user/message", message, surface_op="append")
            route = self._route()
            if route.model is not None:
                self._append_header_if_needed(route)
            try:
                await self._session.flush()
            except PersistenceError as exc:
                self._end_step(turn)
                return error_reason(str(exc), "PERSISTENCE")
            outcome = await self._call_model(turn, step, route)
            if isinstance(outcome, Failed):
                self._end_step(turn)
                return {"kind": "error", "error": outcome.failure}
            message = {
                "id": new_id(),
                "role": "assistant",
                "source": {"kind": "model", "provider": route.provider, "model": route.model},
                "content": outcome.content,
            }
            data: dict[str, Any] = {"turn": turn.number, "step": step, "message": message}
            if outcome.usage is not None:
                data["usage"] = outcome.usage
            self._session.append("assistant/message", data, surface_op="append")
            if outcome.finish == "max-tokens":
                turn.max_tokens = True
            calls = [block for block in outcome.content if isinstance(block, vocab.ToolCallBlock)]
            failure = await self._run_tools(turn, calls)
            self._end_step(turn)
            if turn.scope.cancel_called:
                # A tool finished despite the cancel (a shielded body): stop before claiming, so
                # pending steering stays queued for the next turn (§3.3). Reported as aborted.
                return self._finished(turn)
            if failure is not None:
                return error_reason(str(failure), "PERSISTENCE")
            if not calls and not self._queues["next-step"]:
                return self._finished(turn)
            if step + 1 > self._max_steps:
                return error_reason(f"turn exceeded {self._max_steps} steps", "STEP_LIMIT")
            batch = self._claim("next-step", len(self._queues["next-step"]))
            continuation = bool(calls)
            step += 1

    def _pre_step(
        self, turn: _Turn, step: int, batch: list[Mapping[str, Any]], continuation: bool
    ) -> Enter | dict[str, Any]:
        """Pass ``Enter(batch)`` through the hook chain (§3.4). Returns the final ``Enter`` with
        its messages completed, or the turn's end reason (``blocked``, ``PRE_STEP``)."""
        pre = PreStep(
            turn=turn.number,
            step=step,
            events=self._session.events,
            continuation=continuation,
            cancelled=turn.scope.cancel_called,
        )
        decision: Enter | Reject = Enter(tuple(batch))
        try:
            for hook in self._hooks:
                decision = hook.pre_step(pre, decision)
                if not isinstance(decision, (Enter, Reject)):
                    raise TypeError(f"pre-step hook {type(hook).__name__} returned {decision!r}")
            if isinstance(decision, Reject):
                return {"kind": "blocked"}
            return Enter(tuple(completed_message(m) for m in decision.messages))
        except Exception as exc:
            return error_reason(_exception_text(exc), "PRE_STEP")

    # --- request header and model call --------------------------------------------------------------

    def _header(self, route: Route) -> dict[str, Any]:
        config: dict[str, Any] = {"provider": route.provider, "model": route.model}
        if route.reasoning_effort is not None:
            config["reasoningEffort"] = route.reasoning_effort
        if route.max_tokens is not None:
            config["maxTokens"] = route.max_tokens
        header: dict[str, Any] = {"config": config}
        if self._system:
            header["system"] = self._system
        tools = list(self.tools.specs())
        if tools:
            header["tools"] = tools
        return header

    def _append_header_if_needed(self, route: Route) -> None:
        """§3.5: always on this agent's first request (``initial``, or ``resume`` when the log
        already has a header); later only when the header changed (``change``)."""
        header = self._header(route)
        if self._written_header is None:
            reason = "resume" if self._log_has_header else "initial"
        elif header != self._written_header:
            reason = "change"
        else:
            return
        self._session.append("request/header", {"header": header, "reason": reason})
        self._written_header = header

    async def _call_model(self, turn: _Turn, step: int, route: Route) -> Outcome:
        if route.model is None:
            return Failed(make_failure(f'no model configured for provider "{route.provider}"', "MISSING_CONFIG"))
        request = ModelRequest(
            session_id=self.id,
            turn=turn.number,
            step=step,
            provider=route.provider,
            model=route.model,
            system=self._system,
            messages=tuple(self._history.update(self._session.events)),
            tools=self.tools.specs(),
            max_tokens=route.max_tokens,
            reasoning_effort=route.reasoning_effort,
        )
        adapter = self._adapter_for(route.provider)

        def on_chunk(chunk: Chunk) -> None:
            self._on_delta(turn.number, step, chunk)

        retries = 0
        while True:
            outcome = await run_attempt(adapter, request, on_chunk)
            if not (isinstance(outcome, Failed) and is_retryable(outcome.failure) and retries < self._max_retries):
                return outcome
            retries += 1
            delay = retry_delay_ms(retries, outcome.failure, uniform=self._uniform)
            retry_id = new_id()
            self._session.append(
                "llm/retry",
                {
                    "retryId": retry_id,
                    "turn": turn.number,
                    "step": step,
                    "provider": route.provider,
                    "mode": "normal",
                    "policyKey": "default",
                    "retry": retries,
                    "maxRetries": self._max_retries,
                    "delayMs": delay,
                    "failure": outcome.failure,
                },
            )
            await trio.sleep(delay / 1000)
            self._session.append(
                "llm/retry-started", {"retryId": retry_id, "turn": turn.number, "step": step, "retry": retries}
            )

    # --- tools --------------------------------------------------------------------------------------

    def _append_call(self, turn: _Turn, call: vocab.ToolCallBlock) -> int:
        data = tool_call_data(turn.number, turn.step or 0, call.id, call.name, call.arguments)
        return self._session.append("tool/call", data).seq

    def _append_result(self, turn: _Turn, call: vocab.ToolCallBlock, call_seq: int, result: ToolResult) -> None:
        self._session.append(
            "tool/result",
            result.data(turn.number, turn.step or 0, call.id, new_id()),
            surface_op="append",
            source_event_seqs=[call_seq],
        )
        if turn.in_flight is call:
            turn.in_flight = None

    async def _run_tools(self, turn: _Turn, calls: list[vocab.ToolCallBlock]) -> PersistenceError | None:
        """Run the step's calls one at a time in content order (§3.7). Returns the flush failure
        that stopped them, if any. Cancellation propagates with ``turn`` describing what the
        cleanup must still close."""
        turn.not_started = list(calls)
        failure: PersistenceError | None = None
        while turn.not_started:
            call = turn.not_started.pop(0)
            seq = self._append_call(turn, call)
            if turn.scope.cancel_called:
                self._append_result(turn, call, seq, aborted_before_dispatch_result())
                continue
            if failure is not None:
                self._append_result(turn, call, seq, persistence_result(str(failure)))
                continue
            turn.in_flight, turn.in_flight_seq = call, seq
            try:
                await self._session.flush()
            except PersistenceError as exc:
                failure = exc
                self._append_result(turn, call, seq, persistence_result(str(exc)))
                continue
            result = await execute(self.tools, call.name, call.arguments, self._tool_context(turn, call))
            self._append_result(turn, call, seq, result)
        return failure

    def _tool_context(self, turn: _Turn, call: vocab.ToolCallBlock) -> ToolContext:
        session = self._session
        return ToolContext(
            session_id=self.id,
            turn=turn.number,
            step=turn.step or 0,
            call_id=call.id,
            events=session.events,
            seed_length=session.seed_length,
            append=lambda type, data: session.append(type, data),
            flush=session.flush,
            now_ms=self._clock.now_ms,
        )


def _scan_log(events: Sequence[Event]) -> tuple[int, bool]:
    """The last ``turn/start`` number (0 if none) and whether the log has a ``request/header``."""
    last_turn: int | None = None
    has_header = False
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if last_turn is None and event.type == "turn/start":
            last_turn = event.value()["turn"]
        has_header = has_header or event.type == "request/header"
        if last_turn is not None and has_header:
            break
    return last_turn or 0, has_header


class SchedulePort:
    """The agent as ``schedule``'s ``AgentPort`` (schedule.md §8, host.md §3.10), exactly."""

    __slots__ = ("_agent",)

    def __init__(self, agent: Agent) -> None:
        self._agent = agent

    @property
    def id(self) -> str:
        return self._agent.id

    @property
    def is_live(self) -> bool:
        return self._agent.is_live

    async def when_idle(self) -> None:
        await self._agent.when_idle()

    def run_maintenance(self, task: Callable[[], T]) -> T:
        return self._agent.run_maintenance(task)

    def followup(self, text: str, *, source: Mapping[str, str]) -> None:
        self._agent.followup([{"type": "text", "text": text}], source)
