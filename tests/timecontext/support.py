"""Test doubles for timecontext: a tiny event type, a wall clock, and a host that appends
a step the way the host does (time-context §3.2 item 4)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from timecontext import Decision, Enter, PreStep, PreStepHook

B = 1770724800000
"""2026-02-10T12:00:00.000Z, the base instant of time-context §14."""


@dataclass(frozen=True, slots=True)
class Ev:
    """An ``EventLike`` whose ``data`` is stored as JSON text and decoded afresh by ``value()``."""

    seq: int
    type: str
    time: int
    raw: str

    def value(self) -> Any:
        return json.loads(self.raw)


class ManualClock:
    """A wall clock set by the test; counts how often it is read."""

    def __init__(self, now: int = B) -> None:
        self.now = now
        self.reads = 0

    def now_ms(self) -> int:
        self.reads += 1
        return self.now


def U(rpc: str | None, zone: str | None = None, text: str = "hi") -> dict[str, Any]:
    """A user prompt; ``rpc=None`` omits ``rpcId``, ``zone=None`` omits ``clientTimeZone``."""
    source: dict[str, Any] = {"kind": "user"}
    if rpc is not None:
        source["rpcId"] = rpc
    if zone is not None:
        source["clientTimeZone"] = zone
    return {"role": "user", "source": source, "content": [{"type": "text", "text": text}]}


def assistant(text: str = "ok") -> dict[str, Any]:
    return {
        "id": "a",
        "role": "assistant",
        "source": {"kind": "model", "provider": "scripted", "model": "m"},
        "content": [{"type": "text", "text": text}],
    }


@dataclass
class Session:
    """An in-memory session log. ``time`` of an appended event defaults to ``clock.now``."""

    clock: ManualClock = field(default_factory=ManualClock)
    events: list[Ev] = field(default_factory=list)
    next_id: int = 1

    def append(self, type: str, data: Any, time: int | None = None) -> Ev:
        event = Ev(
            len(self.events),
            type,
            self.clock.now if time is None else time,
            json.dumps(data, separators=(",", ":"), ensure_ascii=False),
        )
        self.events.append(event)
        return event

    def message(self, message: Mapping[str, Any], time: int | None = None) -> Ev:
        """Append ``message`` as a ``user/message`` with an ``id`` in front, as the host does."""
        data = {"id": f"msg-{self.next_id}", **message}
        self.next_id += 1
        return self.append("user/message", data, time)

    def pre(self, turn: int, step: int, *, continuation: bool = False,
            cancelled: bool = False) -> PreStep:
        return PreStep(turn, step, tuple(self.events), continuation, cancelled)

    def enter(
        self,
        hook: PreStepHook,
        turn: int,
        step: int,
        batch: Iterable[Mapping[str, Any]] = (),
        *,
        continuation: bool = False,
        append_at: int | None = None,
    ) -> Decision:
        """Call the hook and apply its decision: ``step/start``, the batch, ``request/header``.

        ``append_at`` is the append time of the step's events (default: the clock's value).
        """
        decision = hook.pre_step(
            self.pre(turn, step, continuation=continuation), Enter(tuple(batch))
        )
        if isinstance(decision, Enter) and (decision.messages or continuation):
            self.append("step/start", {"turn": turn, "step": step}, append_at)
            for message in decision.messages:
                self.message(message, append_at)
            self.append(
                "request/header",
                {"header": {"config": {"provider": "scripted", "model": "m"}}, "reason": "initial"},
                append_at,
            )
        return decision


def readings(events: Iterable[Ev]) -> list[Ev]:
    return [
        e for e in events
        if e.type == "user/message" and e.value()["source"].get("plugin") == "time-context"
    ]


def text_of(message: Mapping[str, Any]) -> str:
    return message["content"][0]["text"]


def load_jsonl(path: Path) -> list[Ev]:
    """The events of a session file (header line skipped), as ``Ev`` values."""
    events = []
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        record = json.loads(line)
        events.append(Ev(record["seq"], record["type"], record["time"],
                         json.dumps(record["data"], ensure_ascii=False)))
    return events
