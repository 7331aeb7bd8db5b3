"""The durable v1 protocol: record and change Structs, strict decoding, dict shapes, views.

See schedule §3, schedule §6.1 and schedule §10.8. Payloads are decoded with msgspec tagged
unions (frozen, ``forbid_unknown_fields``, camelCase on the wire, strict), which enforce every
key set, tag and type; the semantic rows msgspec cannot express (C5–C7, I, T) are checked by
hand afterwards. Every failure is a ``ScheduleLogError``.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal, TypeAlias, final

import msgspec

from eventlog.values import MAX_SAFE_INTEGER

from ._errors import ScheduleLogError
from ._timeparse import parse_instant
from ._trim import js_trim

MIN_EVERY_SECONDS = 300
CHANGE_TYPE = "schedule/change"  # the one event type schedule owns (schedule §3.1)


class _Record(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel", tag_field="kind"
):
    id: str
    prompt: str


@final
class AfterRecord(_Record, frozen=True, tag="after"):
    """One-shot reminder created from a delay: ``{id, kind:"after", prompt, afterSeconds, scheduledAt}``."""

    kind: ClassVar[str] = "after"
    after_seconds: int
    scheduled_at: str


@final
class AtRecord(_Record, frozen=True, tag="at"):
    """One-shot reminder at an absolute instant: ``{id, kind:"at", prompt, scheduledAt}``."""

    kind: ClassVar[str] = "at"
    scheduled_at: str


@final
class EveryRecord(_Record, frozen=True, tag="every"):
    """Fixed-rate reminder: ``{id, kind:"every", prompt, everySeconds, scheduledAt}``.

    ``scheduled_at`` is the earliest creation-aligned occurrence not yet dispatched.
    """

    kind: ClassVar[str] = "every"
    every_seconds: int
    scheduled_at: str


Record: TypeAlias = AfterRecord | AtRecord | EveryRecord


class _Change(
    msgspec.Struct,
    frozen=True,
    forbid_unknown_fields=True,
    rename="camel",
    tag_field="operation",
):
    version: Literal[1]


@final
class Create(_Change, frozen=True, tag="create"):
    """``{version:1, operation:"create", schedule:<record>}``."""

    operation: ClassVar[str] = "create"
    schedule: Record


@final
class Delete(_Change, frozen=True, tag="delete"):
    """``{version:1, operation:"delete", id}`` — terminal."""

    operation: ClassVar[str] = "delete"
    id: str


@final
class Dispatch(_Change, frozen=True, tag="dispatch"):
    """``{version:1, operation:"dispatch", id[, acceptedAt]}``: a follow-up was queued.

    One-shot dispatches carry no time; every dispatches carry the decision time
    ``acceptedAt``. An explicit ``null`` is rejected, an absent key is ``UNSET``.
    """

    operation: ClassVar[str] = "dispatch"
    id: str
    accepted_at: str | msgspec.UnsetType = msgspec.UNSET


ScheduleChange: TypeAlias = Create | Delete | Dispatch

_DECODER = msgspec.json.Decoder(ScheduleChange)
_RAW_TYPES = (bytes, bytearray, memoryview, msgspec.Raw)

_BAD_ID = "schedule id must be a non-empty string without surrounding whitespace"
_BAD_AFTER = "afterSeconds must be a positive safe integer"
_BAD_EVERY = "everySeconds must be a safe integer of at least 300"


def _check_id(id: str) -> None:
    if not id or js_trim(id) != id:
        raise ScheduleLogError(_BAD_ID)


def _check_record(record: Record) -> int:
    """Rows C5–C7, I, T for a decoded record; returns its ``scheduledAt`` in ms."""
    prompt = record.prompt
    if not prompt or js_trim(prompt) != prompt:
        raise ScheduleLogError(f"{record.kind} prompt must be non-empty and already trimmed")
    if type(record) is AfterRecord and not 0 < record.after_seconds <= MAX_SAFE_INTEGER:
        raise ScheduleLogError(_BAD_AFTER)
    if type(record) is EveryRecord and not (
        MIN_EVERY_SECONDS <= record.every_seconds <= MAX_SAFE_INTEGER // 1000
    ):
        raise ScheduleLogError(_BAD_EVERY)
    _check_id(record.id)
    return parse_instant(record.scheduled_at)


def decode_checked(data: object) -> tuple[ScheduleChange, int | None]:
    """``decode_change(data)`` plus the instant it carries, in ms, parsed once.

    The instant is the record's ``scheduledAt`` for a create, ``acceptedAt`` for a dispatch
    that has one, else ``None``.
    """
    if not isinstance(data, _RAW_TYPES):
        # The stdlib encoder, not msgspec's: it refuses bytes (msgspec would write base64) and
        # escapes lone surrogates, which the decoder then refuses exactly as in raw data.
        try:
            data = json.dumps(data, allow_nan=False)
        except Exception as exc:  # anything that is not a JSON value is corrupt
            raise ScheduleLogError(f"schedule/change payload is not a JSON value: {exc}") from exc
    try:
        change = _DECODER.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:  # ValidationError is a DecodeError
        raise ScheduleLogError(str(exc)) from exc
    if type(change) is Create:
        return change, _check_record(change.schedule)
    _check_id(change.id)
    if type(change) is Dispatch and change.accepted_at is not msgspec.UNSET:
        return change, parse_instant(change.accepted_at)
    return change, None


def decode_change(data: object) -> ScheduleChange:
    """Strictly decode one ``schedule/change`` payload (schedule §6.1).

    ``data`` is the event's raw JSON bytes (``bytes``, ``bytearray``, ``memoryview`` or
    ``msgspec.Raw``) or an already-parsed JSON value (re-encoded first). Returns a
    ``Create``, ``Delete`` or ``Dispatch``; raises ``ScheduleLogError`` — and nothing else —
    for any violation. Messages of the hand-checked rows are those of schedule §6.1; structural
    failures carry msgspec's message with its ``$.path``.
    """
    return decode_checked(data)[0]


def record_to_dict(record: Record) -> dict[str, Any]:
    """The record's JSON object with the canonical key order of schedule §3.2."""
    out: dict[str, Any] = {"id": record.id, "kind": record.kind, "prompt": record.prompt}
    if type(record) is AfterRecord:
        out["afterSeconds"] = record.after_seconds
    elif type(record) is EveryRecord:
        out["everySeconds"] = record.every_seconds
    out["scheduledAt"] = record.scheduled_at
    return out


def change_to_dict(change: ScheduleChange) -> dict[str, Any]:
    """The payload for ``session.append("schedule/change", …)``, keys in schedule §3.3 order."""
    if type(change) is Create:
        return {"version": 1, "operation": "create", "schedule": record_to_dict(change.schedule)}
    payload: dict[str, Any] = {"version": 1, "operation": change.operation, "id": change.id}
    if type(change) is Dispatch and change.accepted_at is not msgspec.UNSET:
        payload["acceptedAt"] = change.accepted_at
    return payload


def view(record: Record, now: int) -> dict[str, Any]:
    """The tool view of schedule §10.8: record keys, then ``state`` and ``deliveryMode``.

    ``state`` is ``"overdue"`` when ``now >= scheduledAt``, else ``"scheduled"``.
    """
    out = record_to_dict(record)
    out["state"] = "overdue" if now >= parse_instant(record.scheduled_at) else "scheduled"
    out["deliveryMode"] = "session-local"
    return out
