"""Shared helpers for the agent-loop, session and restart tests: expectations written from the
spec (host §3.5, host §3.11; schedule §10.2), script adapters, notification waiters, a recording
pre-step hook and small log queries."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

import trio

from host.models import ScriptedAdapter, parse_script
from host.runtime import Delta, EventAppended
from host.testing import Harness
from timecontext import PreStep

B = 1_770_724_800_000  # 2026-02-10T12:00:00Z, the spec's epoch
UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")

SYSTEM = (
    "You are a helpful assistant. You can create, list and delete reminders with the schedule tools. "
    "A message that starts with [SCHEDULE REMINDER] is a reminder you created earlier that is now due: "
    "tell the user about it."
)

# schedule §10.2, in registration order
SCHEDULE_TOOLS = [
    {
        "name": "schedule_create",
        "description": (
            "Create one reminder in the current session. Supply a non-empty prompt and exactly one selector: "
            "a positive safe-integer after_seconds delay, at as a strict offset date-time or local date/time "
            "object, or safe-integer every_seconds of at least 300. Fixed-rate reminders stay creation-aligned, "
            "skip missed occurrences, and batch one latest occurrence per overdue rule. Delivery is "
            "session-local: the reminder runs on time only while this session is live and otherwise becomes "
            "overdue until the session is resumed."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "Reminder content to present when the target becomes due."},
                "after_seconds": {"type": "number", "description": "Positive safe-integer delay in seconds."},
                "every_seconds": {
                    "type": "number",
                    "description": "Fixed-rate safe-integer interval in seconds, at least 300.",
                },
                "at": {
                    "oneOf": [
                        {"type": "string"},
                        {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {
                                "date": {"type": "string"},
                                "time": {"type": "string"},
                                "time_zone": {"type": "string"},
                            },
                            "required": ["date", "time", "time_zone"],
                        },
                    ],
                    "description": (
                        "Absolute target as strict offset RFC 3339 or local date/time with an explicit IANA zone."
                    ),
                },
            },
            "required": ["prompt"],
        },
    },
    {
        "name": "schedule_list",
        "description": (
            "List every active reminder in the current session in creation order, including its exact id, "
            "UTC target, scheduled or overdue state, and session-local delivery mode."
        ),
        "parameters": {"type": "object", "properties": {}},
    },
    {
        "name": "schedule_delete",
        "description": (
            "Delete one active reminder in the current session by the exact id returned by schedule_create "
            "or schedule_list. Unknown or already-finished ids return deleted false."
        ),
        "parameters": {
            "type": "object",
            "properties": {"id": {"type": "string", "description": "Exact session-local schedule id."}},
            "required": ["id"],
        },
    },
]


def initial_header(reason: str = "initial", **config: Any) -> dict[str, Any]:
    """The default ``request/header`` data of a scripted session (host §3.5)."""
    return {
        "header": {
            "config": {"provider": "scripted", "model": "scripted", **config},
            "system": SYSTEM,
            "tools": SCHEDULE_TOOLS,
        },
        "reason": reason,
    }


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def script(*lines: dict[str, Any]) -> Callable[[], dict[str, ScriptedAdapter]]:
    """An adapters factory for the harness: one script-mode adapter shared by every host started
    (one model endpoint outside the process, with one cursor)."""
    adapter = ScriptedAdapter(parse_script("\n".join(compact(line) for line in lines)))
    return lambda: {"scripted": adapter}


def types(events: Iterable[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def of_type(events: Iterable[dict[str, Any]], *wanted: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] in wanted]


def dispatches(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["data"] for e in events if e["type"] == "schedule/change" and e["data"]["operation"] == "dispatch"]


def texts(message: dict[str, Any]) -> str:
    return "".join(block["text"] for block in message["content"] if block["type"] == "text")


def tool_results(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """``(text, isError, error)`` views of the ``tool/result`` events, in order."""
    out = []
    for e in events:
        if e["type"] == "tool/result":
            block = e["data"]["message"]["content"][0]
            out.append(
                {
                    "callId": block["toolCallId"],
                    "text": texts(block),
                    "isError": block["isError"],
                    "error": e["data"].get("error"),
                    "sourceEventSeqs": e.get("sourceEventSeqs"),
                }
            )
    return out


class Seen:
    """Waits for the first notification matching a predicate (subscribe before acting)."""

    def __init__(self, h: Harness, predicate: Callable[[object], bool]) -> None:
        self._predicate = predicate
        self._event = trio.Event()
        self._unsubscribe = h.host.subscribe(self._observe)

    def _observe(self, value: object) -> None:
        if not self._event.is_set() and self._predicate(value):
            self._event.set()
            self._unsubscribe()

    async def wait(self) -> None:
        await self._event.wait()


def streaming(h: Harness) -> Seen:
    """Resolves at the first streamed chunk (a model call is under way)."""
    return Seen(h, lambda n: isinstance(n, Delta))


async def prompt_streaming(h: Harness, text: str, session_id: str = "main") -> str:
    """Admit a prompt and return its message id once the model streams its reply."""
    started = streaming(h)
    message_id = await h.prompt(session_id, text)
    await started.wait()
    return message_id


def appended(h: Harness, type_: str) -> Seen:
    """Resolves when an event of ``type_`` is appended."""
    return Seen(h, lambda n: isinstance(n, EventAppended) and n.event.type == type_)


class Hook:
    """A pre-step hook running ``fn(pre, decision)``; records each ``PreStep`` and the event
    types it saw (``pre.events`` is a live view, so they are recorded at call time)."""

    def __init__(self, fn: Callable[[PreStep, Any], Any]) -> None:
        self.fn = fn
        self.calls: list[PreStep] = []
        self.seen_types: list[list[str]] = []

    def pre_step(self, pre: PreStep, decision: Any) -> Any:
        self.calls.append(pre)
        self.seen_types.append([e.type for e in pre.events])
        return self.fn(pre, decision)
