"""The schedule tools (schedule §10, E1–E2, E7, E13) over the in-memory doubles.

Expected values are copied from the text of docs/schedule.md; counts are (flushes, notifications).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
import trio
import trio.testing

from schedule import (
    InvalidToolArguments,
    ScheduleQueue,
    ScheduleTools,
    ToolSpec,
    compact_json,
)

from .doubles import FakeAgent, FakeSession, FixedClock, Notifications, create_change

NOW = 1799568000000  # 2027-01-10T08:00:00.000Z
UNCERTAIN = "Schedule persistence is uncertain; retry with schedule_list before relying on this result."
CORRUPT = '{"code":"corrupt_schedule_log","message":"The session schedule log is corrupt."}'
INTERNAL = '{"code":"internal_error","message":"The schedule operation failed."}'
E1_VIEW = (
    '{"id":"schedule-1","kind":"after","prompt":"stretch","afterSeconds":90,'
    '"scheduledAt":"2027-01-10T08:01:30.000Z","state":"scheduled","deliveryMode":"session-local"}'
)


class Rig:
    """One agent's tools over a fake session; ``counts()`` is (flushes, notifications)."""

    def __init__(self, events: Any = (), *, seed_length: int = 0, now: int = NOW) -> None:
        self.journal: list[str] = []
        self.session = FakeSession(events, seed_length=seed_length, journal=self.journal)
        self.agent = FakeAgent(journal=self.journal)
        self.clock = FixedClock(now)
        self.notes = Notifications()
        self.queue = ScheduleQueue()
        self.tools = ScheduleTools(
            session=self.session,
            owner=self.agent,
            clock=self.clock,
            queue=self.queue,
            on_durable_change=self.notes,
        )

    async def create(self, args: Any) -> str:
        return compact_json(await self.tools.schedule_create(args, caller=self.agent))

    async def list(self, args: Any = None) -> str:
        return compact_json(await self.tools.schedule_list({} if args is None else args, caller=self.agent))

    async def delete(self, id: Any) -> str:
        return compact_json(await self.tools.schedule_delete({"id": id}, caller=self.agent))

    def counts(self) -> tuple[int, int]:
        return (self.session.flush_count, self.notes.count)


def error(code: str, message: str) -> str:
    return compact_json({"code": code, "message": message})


# -- specs (schedule §10.1, schedule §10.2) ---------------------------------------------------

CREATE_SCHEMA = """{"type":"object","properties":{
 "prompt":{"type":"string","description":"Reminder content to present when the target becomes due."},
 "after_seconds":{"type":"number","description":"Positive safe-integer delay in seconds."},
 "every_seconds":{"type":"number","description":"Fixed-rate safe-integer interval in seconds, at least 300."},
 "at":{"oneOf":[{"type":"string"},{"type":"object","additionalProperties":false,"properties":{"date":{"type":"string"},"time":{"type":"string"},"time_zone":{"type":"string"}},"required":["date","time","time_zone"]}],
       "description":"Absolute target as strict offset RFC 3339 or local date/time with an explicit IANA zone."}},
 "required":["prompt"]}"""
CREATE_DESCRIPTION = "Create one reminder in the current session. Supply a non-empty prompt and exactly one selector: a positive safe-integer after_seconds delay, at as a strict offset date-time or local date/time object, or safe-integer every_seconds of at least 300. Fixed-rate reminders stay creation-aligned, skip missed occurrences, and batch one latest occurrence per overdue rule. Delivery is session-local: the reminder runs on time only while this session is live and otherwise becomes overdue until the session is resumed."
LIST_DESCRIPTION = "List every active reminder in the current session in creation order, including its exact id, UTC target, scheduled or overdue state, and session-local delivery mode."
DELETE_DESCRIPTION = "Delete one active reminder in the current session by the exact id returned by schedule_create or schedule_list. Unknown or already-finished ids return deleted false."


async def test_specs_names_descriptions_and_schemas_byte_for_byte() -> None:
    rig = Rig()
    create, list_, delete = rig.tools.specs()
    assert all(isinstance(spec, ToolSpec) for spec in (create, list_, delete))
    assert [s.name for s in (create, list_, delete)] == ["schedule_create", "schedule_list", "schedule_delete"]
    assert create.description == CREATE_DESCRIPTION
    assert list_.description == LIST_DESCRIPTION
    assert delete.description == DELETE_DESCRIPTION
    # json.loads keeps the documented key order, so this compares keys, values and order.
    assert compact_json(create.parameters) == compact_json(json.loads(CREATE_SCHEMA))
    assert compact_json(list_.parameters) == '{"type":"object","properties":{}}'
    assert compact_json(delete.parameters) == (
        '{"type":"object","properties":{"id":{"type":"string","description":"Exact session-local schedule id."}},"required":["id"]}'
    )
    assert all(spec.exclusive for spec in (create, list_, delete))
    assert (create.title, create.kind) == ("Create reminder", "other")
    assert (list_.title, list_.kind) == ("List reminders", "read")
    assert (delete.title, delete.kind) == ("Delete reminder", "other")
    assert create.raw_input is not None and create.raw_input({"prompt": "  stretch  ", "after_seconds": 5}) == "  stretch  "
    assert delete.raw_input is not None and delete.raw_input({"id": "schedule-1"}) == "schedule-1"
    assert list_.raw_input is None
    # The handlers are the tools' own methods.
    assert compact_json(await create.handler({"prompt": "  stretch  ", "after_seconds": 90}, caller=rig.agent)) == E1_VIEW
    assert compact_json(await list_.handler({}, caller=rig.agent)) == f"[{E1_VIEW}]"
    assert await delete.handler({"id": "schedule-1"}, caller=rig.agent) == {"id": "schedule-1", "deleted": True}


async def test_specs_are_fresh_values() -> None:
    rig = Rig()
    first = rig.tools.specs()[0]
    first.parameters["required"].append("at")  # type: ignore[index]
    assert rig.tools.specs()[0].parameters["required"] == ["prompt"]


# -- create (schedule §10.5, E1, E2) ----------------------------------------------------------


async def test_e1_create_after() -> None:
    rig = Rig()
    assert await rig.create({"prompt": "  stretch  ", "after_seconds": 90}) == E1_VIEW
    assert rig.counts() == (2, 2)
    assert rig.session.changes() == [
        json.loads(
            '{"version":1,"operation":"create","schedule":{"id":"schedule-1","kind":"after","prompt":"stretch","afterSeconds":90,"scheduledAt":"2027-01-10T08:01:30.000Z"}}'
        )
    ]
    assert rig.journal == ["flush", "append schedule/change create schedule-1", "flush"]


async def test_e1_integral_float_delay_is_stored_as_int() -> None:
    rig = Rig()
    assert await rig.create({"prompt": "stretch", "after_seconds": 90.0}) == E1_VIEW
    [change] = rig.session.changes()
    assert type(change["schedule"]["afterSeconds"]) is int


async def test_create_at_string_and_local_object() -> None:
    rig = Rig()
    assert await rig.create({"prompt": "call", "at": "2027-01-11T09:15:00.5-03:00"}) == (
        '{"id":"schedule-1","kind":"at","prompt":"call","scheduledAt":"2027-01-11T12:15:00.500Z",'
        '"state":"scheduled","deliveryMode":"session-local"}'
    )
    local = {"date": "2027-10-31", "time": "02:30:00", "time_zone": "Europe/Paris"}
    assert await rig.create({"prompt": "fold", "at": local}) == (
        '{"id":"schedule-2","kind":"at","prompt":"fold","scheduledAt":"2027-10-31T00:30:00.000Z",'
        '"state":"scheduled","deliveryMode":"session-local"}'
    )
    assert rig.counts() == (4, 4)
    # Only the UTC instant is stored: no offset, local field or zone name.
    assert rig.session.changes()[1]["schedule"] == {
        "id": "schedule-2",
        "kind": "at",
        "prompt": "fold",
        "scheduledAt": "2027-10-31T00:30:00.000Z",
    }


async def test_create_every() -> None:
    rig = Rig(now=NOW + 6_300_000)  # 09:45:00
    assert await rig.create({"prompt": "water", "every_seconds": 900}) == (
        '{"id":"schedule-1","kind":"every","prompt":"water","everySeconds":900,'
        '"scheduledAt":"2027-01-10T10:00:00.000Z","state":"scheduled","deliveryMode":"session-local"}'
    )


async def test_create_view_uses_a_fresh_clock_sample() -> None:
    rig = Rig()
    samples = iter([NOW, NOW + 90_000])
    rig.clock.now_ms = lambda: next(samples)  # type: ignore[method-assign]
    result = await rig.tools.schedule_create({"prompt": "stretch", "after_seconds": 90}, caller=rig.agent)
    assert result["scheduledAt"] == "2027-01-10T08:01:30.000Z"
    assert result["state"] == "overdue"


async def test_ids_count_every_created_id_and_are_never_reused() -> None:
    rig = Rig([create_change("schedule-7")])
    assert json.loads(await rig.create({"prompt": "a", "after_seconds": 5}))["id"] == "schedule-2"
    assert json.loads(await rig.delete("schedule-2"))["deleted"] is True
    assert json.loads(await rig.create({"prompt": "b", "after_seconds": 5}))["id"] == "schedule-3"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # E13: the selector count comes before the prompt.
        ({"prompt": " ", "after_seconds": 5, "every_seconds": 600}, ("invalid_selector", None)),
        ({"prompt": "x"}, ("invalid_selector", None)),
        ({"prompt": "x", "at": "2027-01-11T09:15:00Z", "after_seconds": 5}, ("invalid_selector", None)),
        ({"prompt": "x", "after_seconds": 5, "note": "unknown key"}, ("invalid_selector", None)),
        ({"prompt": " \u3000\ufeff\n", "after_seconds": 5}, ("invalid_prompt", "prompt must be non-empty after trimming.")),
        ({"prompt": "", "after_seconds": 0}, ("invalid_prompt", "prompt must be non-empty after trimming.")),
        ({"prompt": "", "at": "nonsense"}, ("invalid_prompt", "prompt must be non-empty after trimming.")),
        ({"prompt": "x", "after_seconds": 0}, ("invalid_rule", "after_seconds must be a positive safe integer.")),
        ({"prompt": "x", "after_seconds": -5}, ("invalid_rule", "after_seconds must be a positive safe integer.")),
        ({"prompt": "x", "after_seconds": 1.5}, ("invalid_rule", "after_seconds must be a positive safe integer.")),
        ({"prompt": "x", "after_seconds": 2**53}, ("invalid_rule", "after_seconds must be a positive safe integer.")),
        ({"prompt": "x", "after_seconds": float("nan")}, ("invalid_rule", "after_seconds must be a positive safe integer.")),
        ({"prompt": "x", "every_seconds": 600.5}, ("invalid_rule", "every_seconds must be a safe integer.")),
        ({"prompt": "x", "every_seconds": -(2**53)}, ("invalid_rule", "every_seconds must be a safe integer.")),
        ({"prompt": "x", "every_seconds": 299}, ("frequency_too_high", "every_seconds must be at least 300.")),
        ({"prompt": "x", "every_seconds": 0}, ("frequency_too_high", "every_seconds must be at least 300.")),
        ({"prompt": "x", "every_seconds": -600}, ("frequency_too_high", "every_seconds must be at least 300.")),
    ],
)
async def test_create_pre_queue_failures_cost_no_flush(
    args: dict[str, Any],
    expected: tuple[str, str | None],
) -> None:
    code, message = expected
    if message is None:
        message = "schedule_create accepts exactly one of after_seconds, at, or every_seconds."
    rig = Rig()
    assert await rig.create(args) == error(code, message)
    assert rig.counts() == (0, 0)
    assert rig.session.changes() == []


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        (
            "2027-01-11T09:15:00-0300",
            (
                "invalid_rule",
                "at must use YYYY-MM-DDTHH:mm:ss with optional 1-3 digit fractional seconds and an explicit Z or numeric offset.",
            ),
        ),
        ("2027-02-29T09:15:00Z", ("invalid_rule", "The at value must be a real ISO calendar date and time.")),
        ("2027-01-11T09:15:00-00:00", ("invalid_rule", "The at numeric offset is invalid.")),
        ("2027-01-10T05:00:00-03:00", ("not_future", "The scheduled time must be strictly in the future.")),
        (
            {"date": "2027-03-28", "time": "02:30:00", "time_zone": "Europe/Paris"},
            ("invalid_rule", "The local at time does not exist in the selected time zone."),
        ),
        (
            {"date": "2027-03-01", "time": "10:00:00", "time_zone": "utc"},
            ("invalid_time_zone", "time_zone must be UTC or a valid IANA Area/Location name."),
        ),
    ],
)
async def test_create_bad_at_costs_one_flush_and_stores_nothing(
    at: Any,
    expected: tuple[str, str],
) -> None:
    rig = Rig()
    assert await rig.create({"prompt": "x", "at": at}) == error(*expected)
    assert rig.counts() == (1, 1)
    assert rig.session.changes() == []


async def test_create_out_of_range_targets_cost_one_flush() -> None:
    rig = Rig()
    message = "The scheduled time must be representable as a four-digit-year RFC 3339 UTC instant."
    assert await rig.create({"prompt": "x", "after_seconds": 2**53 - 1}) == error("time_out_of_range", message)
    assert await rig.create({"prompt": "x", "every_seconds": 9007199254741}) == error("time_out_of_range", message)
    assert rig.counts() == (2, 2)
    assert rig.session.changes() == []


async def test_e13_create_with_failing_preflight() -> None:
    rig = Rig()
    rig.session.fail_flushes(1)
    assert await rig.create({"prompt": "stretch", "after_seconds": 90}) == (
        '{"code":"persistence_uncertain","message":"Schedule persistence is uncertain; retry with schedule_list before relying on this result.","operation":"create"}'
    )
    assert rig.counts() == (1, 0)
    assert rig.session.changes() == []


async def test_e13_create_with_failing_barrier_then_a_list_arms_it() -> None:
    rig = Rig()
    rig.session.fail_flushes(1, after=1)
    assert await rig.create({"prompt": "stretch", "after_seconds": 90}) == (
        '{"code":"persistence_uncertain","message":"Schedule persistence is uncertain; retry with schedule_list before relying on this result.","operation":"create","id":"schedule-1"}'
    )
    assert rig.counts() == (2, 1)
    # The record stays in the live log; the next successful preflight confirms and notifies.
    assert await rig.list() == f"[{E1_VIEW}]"
    assert rig.counts() == (3, 2)


# -- list (schedule §10.6, schedule §10.8) ------------------------------------------------------


async def test_list_empty_and_unknown_keys_ignored() -> None:
    rig = Rig()
    assert await rig.list() == "[]"
    assert await rig.list({"verbose": True}) == "[]"
    assert rig.counts() == (2, 2)


async def test_list_views_in_create_order_with_state_and_advanced_every_target() -> None:
    rig = Rig(
        [
            create_change("b", "at", "2027-01-10T09:00:00.000Z"),
            create_change("a", "every", "2027-01-10T07:00:00.000Z", everySeconds=3600),
            ("schedule/change", {"version": 1, "operation": "dispatch", "id": "a", "acceptedAt": "2027-01-10T07:30:00.000Z"}),
            create_change("c", "after", "2027-01-10T07:59:59.999Z", afterSeconds=5),
        ]
    )
    views = json.loads(await rig.list())
    assert [(v["id"], v["scheduledAt"], v["state"]) for v in views] == [
        ("b", "2027-01-10T09:00:00.000Z", "scheduled"),
        # 07:00 dispatched at 07:30 advances to 08:00, which is due exactly now.
        ("a", "2027-01-10T08:00:00.000Z", "overdue"),
        ("c", "2027-01-10T07:59:59.999Z", "overdue"),
    ]
    assert [list(v) for v in views] == [
        ["id", "kind", "prompt", "scheduledAt", "state", "deliveryMode"],
        ["id", "kind", "prompt", "everySeconds", "scheduledAt", "state", "deliveryMode"],
        ["id", "kind", "prompt", "afterSeconds", "scheduledAt", "state", "deliveryMode"],
    ]
    assert {v["deliveryMode"] for v in views} == {"session-local"}


async def test_list_with_failing_preflight() -> None:
    rig = Rig([create_change("schedule-1")])
    rig.session.fail_flushes(1)
    assert await rig.list() == compact_json({"code": "persistence_uncertain", "message": UNCERTAIN, "operation": "list"})
    assert rig.counts() == (1, 0)


# -- delete (schedule §10.7, E7) ----------------------------------------------------------------


async def test_delete_actual_then_not_found() -> None:
    rig = Rig([create_change("schedule-1")])
    assert await rig.delete("schedule-1") == '{"id":"schedule-1","deleted":true}'
    assert rig.counts() == (2, 2)
    assert rig.session.changes()[-1] == {"version": 1, "operation": "delete", "id": "schedule-1"}
    assert await rig.delete("schedule-1") == '{"id":"schedule-1","deleted":false,"code":"schedule_not_found"}'
    assert await rig.delete("never-created") == '{"id":"never-created","deleted":false,"code":"schedule_not_found"}'
    assert rig.counts() == (4, 4)
    assert len(rig.session.changes()) == 2


async def test_delete_of_a_dispatched_one_shot_is_not_found() -> None:
    rig = Rig([create_change("x"), ("schedule/change", {"version": 1, "operation": "dispatch", "id": "x"})])
    assert await rig.delete("x") == '{"id":"x","deleted":false,"code":"schedule_not_found"}'
    assert rig.counts() == (1, 1)


@pytest.mark.parametrize("bad", ["", " schedule-1", "schedule-1\n", "\u3000", "\ufeffschedule-1"])
async def test_delete_bad_id_is_refused_before_the_owner_check_without_flush(bad: str) -> None:
    rig = Rig([create_change("schedule-1")])
    expected = error("invalid_rule", "schedule_delete id must be non-empty without surrounding whitespace.")
    assert await rig.delete(bad) == expected
    stranger = FakeAgent("other")
    assert compact_json(await rig.tools.schedule_delete({"id": bad}, caller=stranger)) == expected
    assert rig.counts() == (0, 0)


async def test_delete_with_failing_preflight_or_barrier_names_the_id() -> None:
    rig = Rig([create_change("schedule-1")])
    rig.session.fail_flushes(1)
    expected = compact_json({"code": "persistence_uncertain", "message": UNCERTAIN, "operation": "delete", "id": "schedule-1"})
    assert await rig.delete("schedule-1") == expected
    assert rig.counts() == (1, 0)
    assert len(rig.session.changes()) == 1
    rig.session.fail_flushes(1, after=1)
    assert await rig.delete("schedule-1") == expected
    assert rig.counts() == (3, 1)
    assert rig.session.changes()[-1]["operation"] == "delete"


async def test_e7_fork_child_ignores_the_parent_prefix() -> None:
    parent_prefix = [
        ("session/start", {}),
        ("turn/start", {"turn": 1}),
        ("step/start", {"turn": 1, "step": 1}),
        create_change("schedule-1", "after", "2027-01-10T09:00:00.000Z", afterSeconds=3600),
        ("step/end", {"turn": 1, "step": 1}),
        ("turn/end", {"turn": 1}),
        ("session/end-seed", {}),
    ]
    rig = Rig(parent_prefix, seed_length=6)
    assert await rig.list() == "[]"
    assert await rig.delete("schedule-1") == '{"id":"schedule-1","deleted":false,"code":"schedule_not_found"}'
    assert json.loads(await rig.create({"prompt": "mine", "after_seconds": 60}))["id"] == "schedule-1"


# -- corrupt logs and internal errors (schedule §10.9, E13) -------------------------------------


async def test_e13_corrupt_log_after_the_seed() -> None:
    bad = ("schedule/change", {"version": 9, "operation": "delete", "id": "x"})
    rig = Rig([bad, ("turn/start", {"turn": 1}), bad], seed_length=2)
    assert await rig.list() == CORRUPT
    assert await rig.create({"prompt": "x", "after_seconds": 5}) == CORRUPT
    assert await rig.delete("x") == CORRUPT
    assert rig.counts() == (3, 3)
    assert len(rig.session.changes()) == 2
    # The same corrupt event inside the seed prefix is ignored.
    assert await Rig([bad, ("turn/start", {"turn": 1})], seed_length=2).list() == "[]"


async def test_corrupt_log_is_logged_for_diagnosis(caplog: pytest.LogCaptureFixture) -> None:
    rig = Rig([("schedule/change", {"version": 1, "operation": "delete", "id": "ghost"})])
    with caplog.at_level(logging.WARNING, logger="schedule"):
        assert await rig.list() == CORRUPT
    assert 'schedule delete targets inactive id "ghost"' in caplog.text


async def test_wrong_caller_is_internal_error_without_flush() -> None:
    rig = Rig([create_change("schedule-1")])
    stranger = FakeAgent("other")
    for call in (
        rig.tools.schedule_create({"prompt": "x", "after_seconds": 5}, caller=stranger),
        rig.tools.schedule_list({}, caller=stranger),
        rig.tools.schedule_delete({"id": "schedule-1"}, caller=stranger),
    ):
        assert compact_json(await call) == INTERNAL
    assert rig.counts() == (0, 0)
    assert len(rig.session.changes()) == 1


async def test_unreadable_events_are_internal_error() -> None:
    rig = Rig()
    rig.session.events_error = OSError("cannot read the log")
    assert await rig.list() == INTERNAL
    assert await rig.create({"prompt": "x", "after_seconds": 5}) == INTERNAL
    assert await rig.delete("x") == INTERNAL
    assert rig.counts() == (3, 3)


async def test_clock_failures_are_internal_error() -> None:
    rig = Rig()
    rig.clock.error = RuntimeError("no clock")
    assert await rig.create({"prompt": "x", "after_seconds": 5}) == INTERNAL
    assert await rig.list() == INTERNAL
    assert rig.session.changes() == []
    assert rig.counts() == (2, 2)


async def test_unusable_clock_sample_is_time_out_of_range_on_create_and_internal_on_list() -> None:
    rig = Rig()
    rig.clock.now = float("nan")  # type: ignore[assignment]
    assert await rig.create({"prompt": "x", "after_seconds": 5}) == error(
        "time_out_of_range",
        "The scheduled time must be representable as a four-digit-year RFC 3339 UTC instant.",
    )
    assert await rig.list() == INTERNAL
    assert rig.session.changes() == []


async def test_append_refused_is_internal_error_after_one_flush() -> None:
    rig = Rig([create_change("schedule-1")])
    rig.session.fail_appends(2)
    assert await rig.create({"prompt": "x", "after_seconds": 5}) == INTERNAL
    assert await rig.delete("schedule-1") == INTERNAL
    assert rig.counts() == (2, 2)
    assert len(rig.session.changes()) == 1


async def test_a_lone_surrogate_prompt_ends_as_internal_error() -> None:
    rig = Rig()
    assert await rig.create({"prompt": "bad \ud800 text", "after_seconds": 5}) == INTERNAL
    assert rig.session.changes() == []


async def test_observer_failure_is_logged_and_does_not_change_the_result(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rig = Rig()
    rig.notes.error = RuntimeError("observer broke")
    with caplog.at_level(logging.WARNING, logger="schedule"):
        assert await rig.create({"prompt": "  stretch  ", "after_seconds": 90}) == E1_VIEW
    assert rig.counts() == (2, 2)
    assert caplog.text.count("schedule: durable-change observer failed: observer broke") == 2


# -- schema stage (schedule §10.3) --------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (None, "$: expected object"),
        ([], "$: expected object"),
        ("prompt", "$: expected object"),
        ({}, '$: missing required property "prompt"'),
        ({"prompt": 5, "after_seconds": 5}, "$.prompt: expected string"),
        ({"prompt": None, "after_seconds": 5}, "$.prompt: expected string"),
        ({"prompt": "x", "after_seconds": "5"}, "$.after_seconds: expected number"),
        ({"prompt": "x", "after_seconds": True}, "$.after_seconds: expected number"),
        ({"prompt": "x", "after_seconds": None}, "$.after_seconds: expected number"),
        ({"prompt": "x", "every_seconds": False}, "$.every_seconds: expected number"),
        ({"prompt": "x", "every_seconds": [600]}, "$.every_seconds: expected number"),
        ({"prompt": "x", "at": 5}, "$.at: must match exactly one of 2 schemas"),
        ({"prompt": "x", "at": None}, "$.at: must match exactly one of 2 schemas"),
        ({"prompt": "x", "at": ["2027-01-11T09:15:00Z"]}, "$.at: must match exactly one of 2 schemas"),
        ({"prompt": "x", "at": {"date": "2027-01-11", "time": "09:15:00"}}, '$.at: missing required property "time_zone"'),
        (
            {"prompt": "x", "at": {"date": "2027-01-11", "time": "09:15:00", "time_zone": "UTC", "x": 1}},
            '$.at: unexpected property "x"',
        ),
        ({"prompt": "x", "at": {"date": "2027-01-11", "time": 915, "time_zone": "UTC"}}, "$.at.time: expected string"),
        (
            {"prompt": "x", "at": {"date": "2027-01-11", "time": "09:15:00", "time_zone": None}},
            "$.at.time_zone: expected string",
        ),
    ],
)
async def test_create_schema_violations_raise(args: Any, message: str) -> None:
    # The messages follow the host's `<path>: <problem>` form (host §3.7).
    rig = Rig()
    with pytest.raises(InvalidToolArguments) as caught:
        await rig.tools.schedule_create(args, caller=rig.agent)
    assert caught.value.message == message
    assert rig.counts() == (0, 0)


@pytest.mark.parametrize("args", [None, [], {}, {"id": 1}, {"id": None}, {"name": "schedule-1"}])
async def test_delete_schema_violations_raise(args: Any) -> None:
    rig = Rig()
    with pytest.raises(InvalidToolArguments):
        await rig.tools.schedule_delete(args, caller=rig.agent)
    assert rig.counts() == (0, 0)


@pytest.mark.parametrize("args", [None, [], "x"])
async def test_list_schema_violations_raise(args: Any) -> None:
    rig = Rig()
    with pytest.raises(InvalidToolArguments):
        await rig.tools.schedule_list(args, caller=rig.agent)
    assert rig.counts() == (0, 0)


async def test_schema_stage_precedes_the_owner_check() -> None:
    rig = Rig()
    with pytest.raises(InvalidToolArguments, match="prompt"):
        await rig.tools.schedule_create({}, caller=FakeAgent("other"))


# -- the queue and cancellation (schedule §10.4) ------------------------------------------------


async def test_concurrent_transactions_run_in_arrival_order() -> None:
    rig = Rig()
    results: dict[str, str] = {}

    async def call(name: str, args: dict[str, Any]) -> None:
        results[name] = await rig.create(args)

    async with trio.open_nursery() as nursery:
        for name in ("first", "second", "third"):
            nursery.start_soon(call, name, {"prompt": name, "after_seconds": 60})
            await trio.testing.wait_all_tasks_blocked()
    assert [json.loads(results[n])["id"] for n in ("first", "second", "third")] == ["schedule-1", "schedule-2", "schedule-3"]
    assert rig.journal == [
        "flush", "append schedule/change create schedule-1", "flush",
        "flush", "append schedule/change create schedule-2", "flush",
        "flush", "append schedule/change create schedule-3", "flush",
    ]  # fmt: skip


async def test_cancelled_while_waiting_for_the_queue_appends_nothing() -> None:
    rig = Rig()
    async with rig.queue:
        with trio.CancelScope() as scope:
            scope.cancel()
            await rig.create({"prompt": "x", "after_seconds": 5})
        assert scope.cancelled_caught
    assert rig.counts() == (0, 0)
    assert rig.session.changes() == []


async def test_cancelled_during_the_preflight_appends_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    rig = Rig()
    rig.session.hold_flush(1)
    with trio.move_on_after(1) as scope:
        await rig.create({"prompt": "x", "after_seconds": 5})
    assert scope.cancelled_caught
    assert rig.counts() == (1, 0)
    assert rig.session.changes() == []
    assert not rig.queue.locked()


async def test_cancelled_after_the_preflight_is_delivered_right_before_the_append() -> None:
    rig = Rig()
    with trio.CancelScope() as scope:
        # The notification after the preflight cancels the call; nothing awaits until the check.
        rig.notes.action = scope.cancel
        await rig.create({"prompt": "x", "after_seconds": 5})
    assert scope.cancelled_caught
    assert rig.session.flush_count == 1
    assert rig.session.changes() == []


async def test_cancelled_during_the_post_append_barrier_still_completes() -> None:
    rig = Rig()
    gate = rig.session.hold_flush(2)
    result: list[str] = []
    async with trio.open_nursery() as nursery:

        async def call(task_status: trio.TaskStatus[trio.CancelScope]) -> None:
            with trio.CancelScope() as scope:
                task_status.started(scope)
                result.append(await rig.create({"prompt": "  stretch  ", "after_seconds": 90}))

        scope = await nursery.start(call)
        await trio.testing.wait_all_tasks_blocked()
        assert rig.session.flush_count == 2
        scope.cancel()
        await trio.testing.wait_all_tasks_blocked()
        assert rig.queue.locked()  # the barrier is shielded
        gate.set()
    assert result == [E1_VIEW]
    assert rig.counts() == (2, 2)
    assert not rig.queue.locked()
