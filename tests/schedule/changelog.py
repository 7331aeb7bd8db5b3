"""Small builders of ``schedule/change`` payloads and logged-event doubles for the pure-core tests."""

from __future__ import annotations

import json
from typing import Any

import msgspec

CHANGE = "schedule/change"


class Ev:
    """A ``LoggedEvent`` reached only through ``.type`` and ``.value()`` (the schedule §8 Protocol)."""

    __slots__ = ("_text", "type")

    def __init__(self, type: str, data: Any) -> None:
        self.type = type
        self._text = json.dumps(data, ensure_ascii=False)

    def value(self) -> Any:
        return json.loads(self._text)


class RawEv:
    """Shaped like ``eventlog.Event``: ``data`` is raw JSON held in a ``msgspec.Raw``."""

    __slots__ = ("data", "type")

    def __init__(self, type: str, raw: bytes) -> None:
        self.type = type
        self.data = msgspec.Raw(raw)

    def value(self) -> Any:
        return msgspec.json.decode(self.data)


class BrokenEv:
    """An event whose data cannot be read."""

    type = CHANGE

    def value(self) -> Any:
        raise OSError("unreadable event")


def after(id: str, at: str, *, prompt: str = "p", seconds: int = 60) -> dict[str, Any]:
    return {"version": 1, "operation": "create", "schedule": {
        "id": id, "kind": "after", "prompt": prompt, "afterSeconds": seconds, "scheduledAt": at}}


def at(id: str, at: str, *, prompt: str = "p") -> dict[str, Any]:
    return {"version": 1, "operation": "create", "schedule": {
        "id": id, "kind": "at", "prompt": prompt, "scheduledAt": at}}


def every(id: str, at: str, *, prompt: str = "p", seconds: int = 300) -> dict[str, Any]:
    return {"version": 1, "operation": "create", "schedule": {
        "id": id, "kind": "every", "prompt": prompt, "everySeconds": seconds, "scheduledAt": at}}


def delete(id: str) -> dict[str, Any]:
    return {"version": 1, "operation": "delete", "id": id}


def dispatch(id: str, accepted_at: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"version": 1, "operation": "dispatch", "id": id}
    if accepted_at is not None:
        out["acceptedAt"] = accepted_at
    return out


def log(*payloads: dict[str, Any], raw: bool = False) -> list[Ev | RawEv]:
    """Events carrying ``payloads`` as ``schedule/change`` data (``raw``: eventlog-shaped)."""
    if raw:
        return [RawEv(CHANGE, json.dumps(p, ensure_ascii=False).encode()) for p in payloads]
    return [Ev(CHANGE, p) for p in payloads]
