"""The v1 durable protocol: strict decoding (schedule §3.5, schedule §6.1), payload shapes
(schedule §3.2, schedule §3.3), views (schedule §10.8)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from schedule import (
    AfterRecord,
    AtRecord,
    Create,
    Delete,
    Dispatch,
    EveryRecord,
    ScheduleLogError,
    compact_json,
    decode_change,
)
from schedule._records import change_to_dict, record_to_dict, view
from tests.schedule import changelog as cl

T0 = "2027-01-10T08:01:30.000Z"
SHAPE = "scheduledAt must be a canonical four-digit-year RFC 3339 UTC instant"
UNREAL = "scheduledAt is not a real UTC calendar instant"
BAD_ID = "schedule id must be a non-empty string without surrounding whitespace"
AFTER = "afterSeconds must be a positive safe integer"
EVERY = "everySeconds must be a safe integer of at least 300"


def both_ways(payload: Any) -> list[object]:
    """The payload as raw bytes (several buffer types) and as a parsed value."""
    text = json.dumps(payload, ensure_ascii=False).encode()
    return [text, bytearray(text), memoryview(text), msgspec.Raw(text), json.loads(text)]


def rejected(payload: Any) -> str:
    """Decode ``payload`` every way; all must raise ``ScheduleLogError`` with one message."""
    messages = set()
    for data in both_ways(payload):
        with pytest.raises(ScheduleLogError) as err:
            decode_change(data)
        assert err.value.code == "corrupt_schedule_log"
        messages.add(err.value.message)
    assert len(messages) == 1, messages
    return messages.pop()


# --- valid payloads -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (cl.after("schedule-1", T0, prompt="stretch", seconds=90),
         Create(1, AfterRecord("schedule-1", "stretch", 90, T0))),
        (cl.at("x", T0, prompt="a b\nc"), Create(1, AtRecord("x", "a b\nc", T0))),
        (cl.every("schedule-2", T0, seconds=300), Create(1, EveryRecord("schedule-2", "p", 300, T0))),
        (cl.every("e", T0, seconds=9007199254740), Create(1, EveryRecord("e", "p", 9007199254740, T0))),
        (cl.after("a", T0, seconds=2**53 - 1), Create(1, AfterRecord("a", "p", 2**53 - 1, T0))),
        (cl.delete("schedule-1"), Delete(1, "schedule-1")),
        (cl.dispatch("schedule-1"), Dispatch(1, "schedule-1")),
        (cl.dispatch("s", "2027-01-10T10:47:12.345Z"), Dispatch(1, "s", "2027-01-10T10:47:12.345Z")),
        (cl.at("alpha beta", "0001-01-01T00:00:00.000Z"),
         Create(1, AtRecord("alpha beta", "p", "0001-01-01T00:00:00.000Z"))),
    ],
)
def test_valid_payloads_decode_every_way(payload: dict, expected: object) -> None:
    for data in both_ways(payload):
        assert decode_change(data) == expected


def test_key_order_in_the_payload_does_not_matter() -> None:
    raw = (b'{"schedule":{"scheduledAt":"2027-01-10T08:01:30.000Z","afterSeconds":5,"prompt":"p",'
           b'"id":"a","kind":"after"},"operation":"create","version":1}')
    assert decode_change(raw) == Create(1, AfterRecord("a", "p", 5, T0))


def test_changes_are_frozen_values() -> None:
    change = decode_change(cl.dispatch("a"))
    assert change.accepted_at is msgspec.UNSET
    with pytest.raises(AttributeError):
        change.id = "b"  # type: ignore[misc]
    assert hash(Create(1, AtRecord("a", "p", T0))) == hash(Create(1, AtRecord("a", "p", T0)))
    assert (Create.operation, Delete.operation, Dispatch.operation) == ("create", "delete", "dispatch")
    assert (AfterRecord.kind, AtRecord.kind, EveryRecord.kind) == ("after", "at", "every")


# --- structural rows (enforced by the Structs; msgspec's wording) ---------------------------

STRUCTURAL = [
    # row 1: not an object
    [], "x", 5, None, True,
    # row 2: version
    {"operation": "delete", "id": "a"},
    {"version": True, "operation": "delete", "id": "a"},  # E8
    {"version": 1.0, "operation": "delete", "id": "a"},  # E8
    {"version": "1", "operation": "delete", "id": "a"},
    {"version": 2, "operation": "delete", "id": "a"},
    {"version": 0, "operation": "delete", "id": "a"},
    {"version": None, "operation": "delete", "id": "a"},
    {"version": 9, "operation": "create", "schedule": {}},
    # row 3: operation
    {"version": 1, "id": "a"},
    {"version": 1, "operation": "update", "id": "a"},
    {"version": 1, "operation": "Delete", "id": "a"},
    {"version": 1, "operation": None, "id": "a"},
    {"version": 1, "operation": 1, "id": "a"},
    # C1
    {"version": 1, "operation": "create"},
    {**cl.after("a", T0), "id": "a"},
    # C2
    {"version": 1, "operation": "create", "schedule": None},
    {"version": 1, "operation": "create", "schedule": []},
    {"version": 1, "operation": "create", "schedule": "a"},
    # C3
    {"version": 1, "operation": "create", "schedule": {"id": "a", "kind": "cron", "prompt": "p",
                                                        "cron": "* * * * *", "scheduledAt": T0}},
    {"version": 1, "operation": "create", "schedule": {"id": "a", "prompt": "p", "scheduledAt": T0}},
    {"version": 1, "operation": "create", "schedule": {"id": "a", "kind": "After", "prompt": "p",
                                                        "afterSeconds": 5, "scheduledAt": T0}},
    # C4: wrong key sets, including a body relabelled as another kind
    {"version": 1, "operation": "create", "schedule": {**cl.after("a", T0)["schedule"], "x": 1}},
    {"version": 1, "operation": "create", "schedule": {**cl.after("a", T0)["schedule"], "kind": "at"}},
    {"version": 1, "operation": "create", "schedule": {**cl.every("a", T0)["schedule"], "kind": "after"}},
    {"version": 1, "operation": "create", "schedule": {**cl.at("a", T0)["schedule"], "kind": "every"}},
    {"version": 1, "operation": "create", "schedule": {"id": "a", "kind": "at", "scheduledAt": T0}},
    {"version": 1, "operation": "create", "schedule": {"id": "a", "kind": "at", "prompt": "p"}},
    {"version": 1, "operation": "create", "schedule": {"kind": "at", "prompt": "p", "scheduledAt": T0}},
    {"version": 1, "operation": "create", "schedule": {**cl.at("a", T0)["schedule"], "state": "scheduled"}},
    # wrong types
    cl.after("a", T0, seconds="5"),  # type: ignore[arg-type]
    cl.after("a", T0, seconds=5.0),  # type: ignore[arg-type]
    cl.after("a", T0, seconds=True),  # type: ignore[arg-type]
    cl.every("a", T0, seconds=600.0),  # type: ignore[arg-type]
    cl.at("a", T0, prompt=None),  # type: ignore[arg-type]
    cl.at(5, T0),  # type: ignore[arg-type]
    cl.at("a", 5),  # type: ignore[arg-type]
    # D1
    {"version": 1, "operation": "delete"},
    {"version": 1, "operation": "delete", "id": "a", "acceptedAt": T0},
    {"version": 1, "operation": "delete", "id": None},
    # P1
    {"version": 1, "operation": "dispatch", "id": "a", "note": "x"},  # E8
    {"version": 1, "operation": "dispatch", "id": "a", "acceptedAt": None},  # E8
    {"version": 1, "operation": "dispatch", "acceptedAt": T0},
    {"version": 1, "operation": "dispatch", "id": "a", "accepted_at": T0},
    {"version": 1, "operation": "dispatch", "id": "a", "acceptedAt": 1799568000000},
]


@pytest.mark.parametrize("payload", STRUCTURAL)
def test_structural_violations(payload: Any) -> None:
    assert rejected(payload)


@pytest.mark.parametrize(
    "raw",
    [b"", b"{", b"nul", b'{"version":1,"operation":"delete","id":"a"} x', b"\xff",
     b'{"version":1,"operation":"delete","id":"\\ud800"}', b'[' * 5000 + b']' * 5000],
)
def test_malformed_raw_json(raw: bytes) -> None:
    with pytest.raises(ScheduleLogError):
        decode_change(raw)


@pytest.mark.parametrize(
    "value",
    [object(), {"version": 1, "operation": "delete", "id": "\ud800"}, {1, 2}, float("nan"),
     {"version": 1, "operation": "delete", "id": b"a"}, {(1,): 2}],
)
def test_unencodable_values(value: object) -> None:
    with pytest.raises(ScheduleLogError):
        decode_change(value)


DEPTH = 100_000  # far past the interpreter's recursion limit


def _nested_list(depth: int) -> list[Any]:
    outer: list[Any] = []
    inner = outer
    for _ in range(depth - 1):
        inner.append([])
        inner = inner[0]
    return outer


@pytest.mark.parametrize(
    "raw",
    [
        # msgspec has to walk the unknown value before it reaches the tag it dispatches on
        b'{"x":' + b"[" * DEPTH + b"]" * DEPTH + b',"version":1,"operation":"delete","id":"a"}',
        b'{"version":1,"operation":"create","schedule":{"x":' + b'{"a":' * DEPTH + b"1"
        + b"}" * DEPTH + b',"kind":"at","id":"a","prompt":"p","scheduledAt":"' + T0.encode() + b'"}}',
    ],
)
def test_nesting_past_the_recursion_limit_is_a_schedule_log_error(raw: bytes) -> None:
    # Hostile input must end as the typed error, never as an escaping RecursionError.
    with pytest.raises(ScheduleLogError):
        decode_change(raw)
    with pytest.raises(ScheduleLogError):
        decode_change(msgspec.Raw(raw))


def test_a_parsed_value_nested_past_the_recursion_limit_is_a_schedule_log_error() -> None:
    with pytest.raises(ScheduleLogError):
        decode_change({"version": 1, "operation": "delete", "id": "a", "x": _nested_list(DEPTH)})


def test_structural_messages_name_the_path() -> None:
    assert "$.version" in rejected({"version": True, "operation": "delete", "id": "a"})
    assert "note" in rejected({"version": 1, "operation": "dispatch", "id": "a", "note": "x"})
    assert "$.acceptedAt" in rejected({"version": 1, "operation": "dispatch", "id": "a",
                                       "acceptedAt": None})


# --- hand-checked rows: exact messages -------------------------------------------------------


@pytest.mark.parametrize("kind", ["after", "at", "every"])
@pytest.mark.parametrize("prompt", ["", " p", "p ", "\ufeffp", "p\n", "\u3000"])
def test_c5_prompt(kind: str, prompt: str) -> None:
    payload = getattr(cl, kind)("a", T0, prompt=prompt)
    assert rejected(payload) == f"{kind} prompt must be non-empty and already trimmed"


@pytest.mark.parametrize("seconds", [0, -1, 2**53, -(2**53), 10**30])
def test_c6_after_seconds(seconds: int) -> None:
    assert rejected(cl.after("a", T0, seconds=seconds)) == AFTER


@pytest.mark.parametrize("seconds", [299, 0, -300, 9007199254741, 2**53 - 1, 2**53, 10**30])
def test_c7_every_seconds(seconds: int) -> None:
    assert rejected(cl.every("a", T0, seconds=seconds)) == EVERY


@pytest.mark.parametrize("bad_id", ["", " a", "a ", "\u00a0a", "a\n", "\ufeff"])
def test_row_i(bad_id: str) -> None:
    assert rejected(cl.at(bad_id, T0)) == BAD_ID
    assert rejected(cl.delete(bad_id)) == BAD_ID
    assert rejected(cl.dispatch(bad_id)) == BAD_ID
    assert rejected(cl.dispatch(bad_id, "2027-01-10T00:00:00Z")) == BAD_ID  # I before T


@pytest.mark.parametrize(
    ("instant", "message"),
    [("2027-01-10T10:47:12Z", SHAPE), ("2027-01-10T10:47:12.000+00:00", SHAPE),
     ("0000-01-10T10:47:12.000Z", SHAPE), ("2027-01-10T10:47:12.000Z ", SHAPE),
     ("2027-02-29T10:47:12.000Z", UNREAL), ("2026-04-31T00:00:00.000Z", UNREAL)],
)
def test_row_t(instant: str, message: str) -> None:
    for kind in ("after", "at", "every"):
        assert rejected(getattr(cl, kind)("a", instant)) == message
    # E8: the message says scheduledAt even for acceptedAt
    assert rejected(cl.dispatch("a", instant)) == message


def test_hand_checks_run_in_table_order() -> None:
    """C5, then C6/C7, then I, then T."""
    both = {"id": " a", "prompt": " p", "scheduledAt": "x"}
    assert rejected({"version": 1, "operation": "create", "schedule": {
        **both, "kind": "after", "afterSeconds": 0}}) == "after prompt must be non-empty and already trimmed"
    assert rejected({"version": 1, "operation": "create", "schedule": {
        **both, "prompt": "p", "kind": "every", "everySeconds": 0}}) == EVERY
    assert rejected({"version": 1, "operation": "create", "schedule": {
        **both, "prompt": "p", "kind": "at"}}) == BAD_ID
    assert rejected(cl.at("a", "x")) == SHAPE


def test_structure_precedes_semantics() -> None:
    # an unknown key is reported even though the prompt is also bad
    message = rejected({"version": 1, "operation": "create",
                        "schedule": {**cl.at("a", T0, prompt=" ")["schedule"], "x": 1}})
    assert "prompt" not in message


# --- payload shapes -------------------------------------------------------------------------


def test_e1_payload_text() -> None:
    record = AfterRecord("schedule-1", "stretch", 90, "2027-01-10T08:01:30.000Z")
    assert compact_json(change_to_dict(Create(1, record))) == (
        '{"version":1,"operation":"create","schedule":{"id":"schedule-1","kind":"after",'
        '"prompt":"stretch","afterSeconds":90,"scheduledAt":"2027-01-10T08:01:30.000Z"}}'
    )


def test_payload_key_orders() -> None:
    assert list(record_to_dict(AtRecord("a", "p", T0))) == ["id", "kind", "prompt", "scheduledAt"]
    assert list(record_to_dict(EveryRecord("a", "p", 300, T0))) == [
        "id", "kind", "prompt", "everySeconds", "scheduledAt"]
    assert list(record_to_dict(AfterRecord("a", "p", 5, T0))) == [
        "id", "kind", "prompt", "afterSeconds", "scheduledAt"]
    assert compact_json(change_to_dict(Delete(1, "schedule-1"))) == (
        '{"version":1,"operation":"delete","id":"schedule-1"}')
    assert compact_json(change_to_dict(Dispatch(1, "schedule-1"))) == (
        '{"version":1,"operation":"dispatch","id":"schedule-1"}')
    assert compact_json(change_to_dict(Dispatch(1, "schedule-1", "2027-01-10T10:47:12.345Z"))) == (
        '{"version":1,"operation":"dispatch","id":"schedule-1","acceptedAt":"2027-01-10T10:47:12.345Z"}')


@pytest.mark.parametrize(
    "change",
    [Create(1, AfterRecord("a", "p", 5, T0)), Create(1, AtRecord("a", "p", T0)),
     Create(1, EveryRecord("a", "p", 300, T0)), Delete(1, "a"), Dispatch(1, "a"),
     Dispatch(1, "a", T0)],
)
def test_payloads_decode_back(change: object) -> None:
    as_dict = change_to_dict(change)  # type: ignore[arg-type]
    assert decode_change(as_dict) == change
    assert decode_change(compact_json(as_dict).encode()) == change
    assert decode_change(msgspec.json.encode(change)) == change  # the Structs encode themselves
    assert json.loads(msgspec.json.encode(change)) == as_dict


def test_views() -> None:
    record = AfterRecord("schedule-1", "stretch", 90, "2027-01-10T08:01:30.000Z")
    due = 1799568090000
    assert compact_json(view(record, due - 1)) == (  # E1's tool text
        '{"id":"schedule-1","kind":"after","prompt":"stretch","afterSeconds":90,'
        '"scheduledAt":"2027-01-10T08:01:30.000Z","state":"scheduled","deliveryMode":"session-local"}'
    )
    assert view(record, due)["state"] == "overdue"
    assert view(record, due + 1)["state"] == "overdue"
    assert list(view(EveryRecord("a", "p", 300, T0), 0)) == [
        "id", "kind", "prompt", "everySeconds", "scheduledAt", "state", "deliveryMode"]
