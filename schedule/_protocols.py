"""What schedule needs from its host, as Protocols (schedule §8).

``host`` implements them; ``eventlog.Event`` and ``eventlog.Session`` satisfy the first two.
``AgentBusy``, raised by ``AgentPort.run_maintenance``, lives in ``_errors``; the wall clock
Protocol ``Clock`` is ``eventlog.values.Clock``, which ``schedule`` re-exports.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class LoggedEvent(Protocol):
    """One immutable session event; schedule reads only its type and its decoded data."""

    @property
    def type(self) -> str: ...

    def value(self) -> Any:
        """Untyped JSON decode of the event's ``data`` (an integral float such as ``1.0`` stays a float)."""
        ...


class SessionHandle(Protocol):
    """The live session log as schedule uses it."""

    @property
    def events(self) -> Sequence[LoggedEvent]:
        """The whole log, seed included; append-only, events immutable. May raise."""
        ...

    @property
    def seed_length(self) -> int:
        """The header's ``seedLength``, 0 when absent."""
        ...

    def append(self, type: str, data: Mapping[str, Any]) -> object:
        """Buffer one log-only event synchronously; raise (recording nothing) if refused."""
        ...

    async def flush(self) -> int:
        """Persistence barrier: return the last durable seq once every event appended before the
        call is durable; raise on any failure (a session without durable storage always raises)."""
        ...


class AgentPort(Protocol):
    """The live root agent a runtime delivers reminders to."""

    @property
    def id(self) -> str: ...

    @property
    def is_live(self) -> bool:
        """True while this exact agent is the live root agent of an open session."""
        ...

    async def when_idle(self) -> None:
        """Return once the agent is idle and no maintenance task runs (at once if so); may raise."""
        ...

    def run_maintenance(self, task: Callable[[], T]) -> T:
        """Raise ``AgentBusy`` without calling ``task`` if a turn or another task owns the agent;
        otherwise hold the maintenance phase (input stays parked) around a synchronous ``task()``
        and return its result or re-raise its exception."""
        ...

    def followup(self, text: str, *, source: Mapping[str, str]) -> None:
        """Synchronously enqueue one user-role text message for a later ordinary turn; raise if
        nothing was enqueued. Never steers or interrupts a running turn."""
        ...
