"""In-memory doubles of schedule's host Protocols (schedule §8).

They honour the contracts the way eventlog and host do: events are immutable and decoded from raw
JSON bytes; ``append`` is synchronous and records nothing when refused; ``flush`` is a barrier
that either confirms everything appended before it or raises; the agent has the phases ``idle``,
``running`` and ``maintenance``, parks follow-ups during maintenance and runs them as turns after
it. A shared ``journal`` records the observable order of effects.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import msgspec
import trio

from schedule import AgentBusy

T = TypeVar("T")


class FlushFailed(Exception):
    """What the double's ``flush`` raises when told to fail."""


class AppendRefused(Exception):
    """What the double's ``append`` raises when told to fail."""


class FakeEvent:
    """An immutable logged event: its ``data`` is kept as raw JSON bytes."""

    __slots__ = ("_raw", "seq", "type")

    def __init__(self, type: str, seq: int, raw: bytes) -> None:
        self.type = type
        self.seq = seq
        self._raw = raw

    def value(self) -> Any:
        return msgspec.json.decode(self._raw)


class FakeSession:
    """A session log held in memory.

    ``durable_through`` advances only on a successful ``flush``; ``reopen()`` returns a new session
    holding only the durable prefix, as a restart after a crash would see it.
    Failure injection: ``fail_flushes(n, after=k)`` lets ``k`` more flushes succeed, then makes
    ``n`` flushes raise (``n=math.inf``: every one); ``fail_appends(n, after=k)`` does the same
    for appends; ``events_error`` makes reading ``events`` raise; ``hold_flush(k)`` returns a
    ``trio.Event`` the ``k``-th flush (1-based) waits for before completing.
    """

    def __init__(
        self,
        events: Iterable[tuple[str, Any]] = (),
        *,
        seed_length: int = 0,
        journal: list[str] | None = None,
        durable: bool = True,
    ) -> None:
        self._events: list[FakeEvent] = []
        self._seed_length = seed_length
        self.journal: list[str] = journal if journal is not None else []
        self.flush_count = 0
        self.durable_through = -1
        self.events_error: Exception | None = None
        self._flush_gates: dict[int, trio.Event] = {}
        self._flush_failures: float = 0
        self._flush_fail_from = 0
        self._append_failures: float = 0
        self._append_fail_from = 0
        self.append_count = 0
        for type, data in events:
            self._commit(type, data)
        if durable:
            self.durable_through = len(self._events) - 1

    # -- the SessionHandle contract ---------------------------------------------------------

    @property
    def events(self) -> tuple[FakeEvent, ...]:
        if self.events_error is not None:
            raise self.events_error
        return tuple(self._events)

    @property
    def seed_length(self) -> int:
        return self._seed_length

    def append(self, type: str, data: Mapping[str, Any]) -> FakeEvent:
        self.append_count += 1
        if self._append_failures > 0 and self.append_count >= self._append_fail_from:
            self._append_failures -= 1
            raise AppendRefused("append refused")
        event = self._commit(type, data)
        self.journal.append(f"append {describe(type, data)}")
        return event

    async def flush(self) -> int:
        self.flush_count += 1
        number = self.flush_count
        self.journal.append("flush")
        through = len(self._events) - 1
        gate = self._flush_gates.pop(number, None)
        if gate is not None:
            await gate.wait()
        else:
            await trio.lowlevel.checkpoint()
        if self._flush_failures > 0 and number >= self._flush_fail_from:
            self._flush_failures -= 1
            raise FlushFailed("disk full")
        self.durable_through = max(self.durable_through, through)
        return self.durable_through

    # -- test controls ----------------------------------------------------------------------

    def fail_flushes(self, count: float = 1, *, after: int = 0) -> None:
        self._flush_failures = count
        self._flush_fail_from = self.flush_count + 1 + after

    def hold_flush(self, number: int) -> trio.Event:
        """Make the ``number``-th flush (1-based, counting all flushes) wait for the event."""
        gate = self._flush_gates[number] = trio.Event()
        return gate

    def fail_appends(self, count: float = 1, *, after: int = 0) -> None:
        self._append_failures = count
        self._append_fail_from = self.append_count + 1 + after

    def reopen(self, *, journal: list[str] | None = None) -> FakeSession:
        """A fresh session over the durable prefix (what a restart reads from disk)."""
        durable = self._events[: self.durable_through + 1]
        return FakeSession(
            ((e.type, e.value()) for e in durable),
            seed_length=self._seed_length,
            journal=journal,
        )

    def changes(self) -> list[Any]:
        """The data of every ``schedule/change`` event, in log order."""
        return [e.value() for e in self._events if e.type == "schedule/change"]

    def _commit(self, type: str, data: Any) -> FakeEvent:
        # Encoding first means invalid data (e.g. a lone surrogate) records nothing.
        raw = msgspec.json.encode(data)
        event = FakeEvent(type, len(self._events), raw)
        self._events.append(event)
        return event


def create_change(
    id: str,
    kind: str = "at",
    scheduled_at: str = "2027-01-10T09:00:00.000Z",
    *,
    prompt: str | None = None,
    **fields: Any,
) -> tuple[str, dict[str, Any]]:
    """A ``(type, data)`` pair for a ``schedule/change`` create; ``fields`` are the kind's own
    camelCase fields (``afterSeconds``, ``everySeconds``)."""
    record: dict[str, Any] = {"id": id, "kind": kind, "prompt": prompt or f"prompt of {id}"}
    record.update(fields)
    record["scheduledAt"] = scheduled_at
    return ("schedule/change", {"version": 1, "operation": "create", "schedule": record})


def describe(type: str, data: Any) -> str:
    """A short journal label: ``schedule/change dispatch schedule-1`` or just the type."""
    if type == "schedule/change" and isinstance(data, Mapping):
        op = data.get("operation")
        ident = data.get("id") or (data.get("schedule") or {}).get("id")
        return f"{type} {op} {ident}"
    return type


class FakeAgent:
    """A root agent with the phases ``idle``, ``running`` and ``maintenance``.

    ``run_maintenance`` refuses with ``AgentBusy`` unless idle; follow-ups queued during
    maintenance stay parked until it is released, then the first one starts a turn (``running``).
    ``end_turn()`` starts the next parked follow-up or flips to ``idle`` and calls ``on_idle``
    (the host's ``runtime.on_agent_idle`` hook). ``serve()`` ends each turn after a while, like a
    model answering. With a ``clock``, ``followup_times`` holds the wall time of each follow-up.
    Failure injection: ``followup_error``, ``maintenance_error`` (a host failure raised instead
    of claiming), ``when_idle_error``.
    """

    def __init__(
        self,
        id: str = "agent-1",
        *,
        journal: list[str] | None = None,
        clock: TrioWallClock | FixedClock | None = None,
    ) -> None:
        self.id = id
        self.clock = clock
        self.followup_times: list[int] = []
        self.idle_waits = 0
        self.is_live = True
        self.journal: list[str] = journal if journal is not None else []
        self.phase = "idle"
        self.on_idle: Callable[[], None] | None = None
        self.parked: deque[str] = deque()
        self.turns: list[str] = []  # follow-up texts whose turn has started, in order
        self.followups: list[tuple[str, dict[str, str]]] = []
        self.followup_error: Exception | None = None
        self.maintenance_error: Exception | None = None
        self.when_idle_error: Exception | None = None
        self.busy_refusals = 0
        self._changed = trio.Event()

    async def when_idle(self) -> None:
        self.idle_waits += 1
        while True:
            if self.when_idle_error is not None:
                raise self.when_idle_error
            if self.phase == "idle":
                await trio.lowlevel.checkpoint()
                return
            await self._changed.wait()

    def run_maintenance(self, task: Callable[[], T]) -> T:
        if self.maintenance_error is not None:
            raise self.maintenance_error
        if self.phase != "idle":
            self.busy_refusals += 1
            self.journal.append("busy")
            raise AgentBusy(f"agent is {self.phase}")
        self._set_phase("maintenance")
        self.journal.append("claim")
        try:
            return task()
        finally:
            self.journal.append("release")
            self._set_phase("idle")
            if self.parked:
                self._start_followup_turn()

    def followup(self, text: str, *, source: Mapping[str, str]) -> None:
        if self.followup_error is not None:
            raise self.followup_error
        self.followups.append((text, dict(source)))
        if self.clock is not None:
            self.followup_times.append(self.clock.now_ms())
        self.parked.append(text)
        self.journal.append("followup")

    # -- test controls ----------------------------------------------------------------------

    def begin_turn(self) -> None:
        """A user turn starts (the agent must be idle)."""
        assert self.phase == "idle", self.phase
        self._set_phase("running")

    def end_turn(self) -> None:
        """The running turn ends: the next parked follow-up runs, else the agent goes idle."""
        assert self.phase == "running", self.phase
        if self.parked:
            self._start_followup_turn()
            return
        self._set_phase("idle")
        if self.on_idle is not None:
            self.on_idle()

    async def serve(self, turn_seconds: float = 5.0) -> None:
        """End every turn ``turn_seconds`` after it starts, forever (run it in a nursery)."""
        while True:
            while self.phase != "running":
                await self._changed.wait()
            await trio.sleep(turn_seconds)
            self.end_turn()

    def _start_followup_turn(self) -> None:
        self.turns.append(self.parked.popleft())
        self._set_phase("running")

    def _set_phase(self, phase: str) -> None:
        self.phase = phase
        self._changed.set()
        self._changed = trio.Event()


class TrioWallClock:
    """A wall clock derived from trio's clock: ``epoch_ms`` at trio time 0, plus ``jump()`` shifts.

    ``error`` makes ``now_ms`` raise; ``garbage`` makes it return that value instead.
    """

    def __init__(self, epoch_ms: int) -> None:
        self.epoch_ms = epoch_ms
        self.offset_ms = 0
        self.reads = 0
        self.error: Exception | None = None
        self.garbage: object | None = None

    def now_ms(self) -> int:
        self.reads += 1
        if self.error is not None:
            raise self.error
        if self.garbage is not None:
            return self.garbage  # type: ignore[return-value]
        return self.epoch_ms + self.offset_ms + round(trio.current_time() * 1000)

    def jump(self, delta_ms: int) -> None:
        self.offset_ms += delta_ms


class FixedClock:
    """A wall clock that reads ``now`` until told otherwise (no trio needed)."""

    def __init__(self, now: int) -> None:
        self.now = now
        self.reads = 0
        self.error: Exception | None = None

    def now_ms(self) -> int:
        self.reads += 1
        if self.error is not None:
            raise self.error
        return self.now


class Notifications:
    """An ``on_durable_change`` callback that counts its calls; ``action`` runs on each call
    and ``error`` makes it raise."""

    def __init__(self) -> None:
        self.count = 0
        self.action: Callable[[], object] | None = None
        self.error: Exception | None = None

    def __call__(self) -> None:
        self.count += 1
        if self.action is not None:
            self.action()
        if self.error is not None:
            raise self.error

