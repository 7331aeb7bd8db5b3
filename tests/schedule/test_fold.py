"""The fold (schedule §6.2), forks and ``seed_length`` (schedule §6.3), and the append guard
(schedule §6.4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schedule import (
    AfterRecord,
    AtRecord,
    EveryRecord,
    Fold,
    ScheduleGuard,
    ScheduleLogError,
    allocate_id,
    check_append,
    fold,
    parse_instant,
)
from tests.schedule import changelog as cl
from tests.schedule.changelog import BrokenEv, Ev, RawEv

T1 = "2027-01-10T09:00:00.000Z"
T2 = "2027-01-10T10:00:00.000Z"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def folded(*payloads: dict, seed: int = 0) -> Fold:
    """Fold through ``value()`` and through raw bytes; both must agree."""
    via_value = fold(cl.log(*payloads), seed)
    assert fold(cl.log(*payloads, raw=True), seed) == via_value
    return via_value


def fold_error(*payloads: dict, seed: int = 0) -> str:
    messages = set()
    for raw in (False, True):
        with pytest.raises(ScheduleLogError) as err:
            fold(cl.log(*payloads, raw=raw), seed)
        assert err.value.code == "corrupt_schedule_log"
        messages.add(err.value.message)
    assert len(messages) == 1
    return messages.pop()


def test_empty_log() -> None:
    assert fold([], 0) == Fold((), ())
    assert fold([Ev("turn/start", {}), Ev("user/message", {"x": 1})], 0) == Fold((), ())


def test_creates_keep_create_order_and_other_types_are_skipped() -> None:
    events = [
        Ev("schedule/change", cl.at("b", T2)),
        Ev("turn/start", {"turn": 1}),
        Ev("schedule/changes", {"not": "ours"}),
        Ev("Schedule/change", {"not": "ours"}),
        Ev("schedule/change", cl.after("a", T1, seconds=5)),
        Ev("schedule/change", cl.every("c", T1)),
    ]
    result = fold(events, 0)
    assert result.active == (AtRecord("b", "p", T2), AfterRecord("a", "p", 5, T1),
                             EveryRecord("c", "p", 300, T1))
    assert result.seen_ids == ("b", "a", "c")
    assert isinstance(result.active, tuple) and isinstance(result.seen_ids, tuple)


def test_delete_and_one_shot_dispatch_are_terminal() -> None:
    result = folded(cl.at("a", T1), cl.after("b", T1), cl.at("c", T2), cl.delete("a"),
                    cl.dispatch("b"))
    assert result.active == (AtRecord("c", "p", T2),)
    assert result.seen_ids == ("a", "b", "c")


def test_one_shot_dispatch_may_precede_its_target() -> None:
    assert folded(cl.at("a", "9999-12-31T23:59:59.999Z"), cl.dispatch("a")).active == ()


def test_every_dispatch_advances_in_place() -> None:
    result = folded(
        cl.every("a", "2027-01-10T10:00:00.000Z", seconds=900),
        cl.at("b", T2),
        cl.dispatch("a", "2027-01-10T10:47:12.345Z"),  # E9
    )
    assert result.active == (EveryRecord("a", "p", 900, "2027-01-10T11:00:00.000Z"),
                             AtRecord("b", "p", T2))
    # exactly aligned: that occurrence is consumed, the next one is one interval later
    result = folded(cl.every("a", T2, seconds=900), cl.dispatch("a", T2))
    assert result.active == (EveryRecord("a", "p", 900, "2027-01-10T10:15:00.000Z"),)
    result = folded(cl.every("a", T2, seconds=900), cl.dispatch("a", "2027-01-10T10:14:59.999Z"),
                    cl.dispatch("a", "2027-01-10T10:15:00.000Z"))
    assert result.active == (EveryRecord("a", "p", 900, "2027-01-10T10:30:00.000Z"),)


def test_every_final_dispatch_removes_the_record() -> None:
    result = folded(cl.every("a", "9999-12-31T23:58:00.000Z", seconds=300),  # E10
                    cl.dispatch("a", "9999-12-31T23:59:30.000Z"))
    assert result == Fold((), ("a",))
    # the last representable next target keeps the record
    result = folded(cl.every("a", "9999-12-31T23:49:59.999Z", seconds=300),
                    cl.dispatch("a", "9999-12-31T23:54:59.999Z"))
    assert result.active == (EveryRecord("a", "p", 300, "9999-12-31T23:59:59.999Z"),)


@pytest.mark.parametrize(
    ("payloads", "message"),
    [
        ((cl.at("first", T1), cl.at("first", T2)), 'schedule id "first" was reused'),
        ((cl.at("first", T1), cl.delete("first"), cl.every("first", T2)),
         'schedule id "first" was reused'),
        ((cl.after("a", T1), cl.dispatch("a"), cl.after("a", T1)), 'schedule id "a" was reused'),
        ((cl.every("a", "9999-12-31T23:58:00.000Z"), cl.dispatch("a", "9999-12-31T23:59:30.000Z"),
          cl.every("a", T1)), 'schedule id "a" was reused'),
        ((cl.delete("schedule-1"),), 'schedule delete targets inactive id "schedule-1"'),
        ((cl.at("a", T1), cl.delete("a"), cl.delete("a")), 'schedule delete targets inactive id "a"'),
        ((cl.at("a", T1), cl.dispatch("a"), cl.delete("a")), 'schedule delete targets inactive id "a"'),
        ((cl.dispatch("a"),), 'schedule dispatch targets inactive id "a"'),
        ((cl.dispatch("a", T1),), 'schedule dispatch targets inactive id "a"'),
        ((cl.at("a", T1), cl.delete("a"), cl.dispatch("a")), 'schedule dispatch targets inactive id "a"'),
        ((cl.at("a", T1), cl.dispatch("a"), cl.dispatch("a")),
         'schedule dispatch targets inactive id "a"'),
        ((cl.at("a", T1), cl.dispatch("a", T1)), "one-shot dispatch must not contain acceptedAt"),
        ((cl.after("a", T1), cl.dispatch("a", T2)), "one-shot dispatch must not contain acceptedAt"),
        ((cl.every("a", T1), cl.dispatch("a")), "every dispatch must contain acceptedAt"),
        ((cl.every("a", T2), cl.dispatch("a", "2027-01-10T09:59:59.999Z")),
         "every dispatch cannot precede the active scheduledAt"),
        ((cl.every("a", T1), cl.dispatch("a", T1), cl.dispatch("a", T1)),
         "every dispatch cannot precede the active scheduledAt"),
        ((cl.at('q"\\\n\u00e9', T1), cl.at('q"\\\n\u00e9', T1)),
         'schedule id "q\\"\\\\\\n\u00e9" was reused'),
    ],
)
def test_transition_errors(payloads: tuple[dict, ...], message: str) -> None:
    assert fold_error(*payloads) == message


def test_decode_errors_fail_the_whole_fold_and_precede_transitions() -> None:
    assert fold_error(cl.at("a", T1), {"version": 9}) != ""
    # the bad event would also be an inactive-id transition; the decode error wins
    assert fold_error(cl.dispatch(" a")) == (
        "schedule id must be a non-empty string without surrounding whitespace")
    assert fold_error(cl.dispatch("a", "2027-01-10T10:47:12Z")) == (
        "scheduledAt must be a canonical four-digit-year RFC 3339 UTC instant")


def test_obsolete_kind_is_corruption() -> None:
    cron = {"version": 1, "operation": "create",
            "schedule": {"id": "a", "kind": "cron", "prompt": "p", "cron": "0 9 * * *", "scheduledAt": T1}}
    with pytest.raises(ScheduleLogError):
        fold(cl.log(cl.at("b", T1), cron), 0)


@pytest.mark.parametrize("seed", [-1, 4, True, False, 1.0, None, "0"])
def test_seed_length_must_be_within_the_log(seed: object) -> None:
    events = cl.log(cl.at("a", T1), cl.at("b", T1), cl.at("c", T1))
    with pytest.raises(ScheduleLogError) as err:
        fold(events, seed)  # type: ignore[arg-type]
    assert err.value.message == "schedule seedLength must be within the supplied event log"
    with pytest.raises(ScheduleLogError):
        check_append(events, seed, cl.at("d", T1))  # type: ignore[arg-type]


def test_seed_prefix_is_ignored_entirely() -> None:
    prefix = [Ev("schedule/change", cl.at("schedule-1", T1)),
              Ev("schedule/change", {"version": 9, "garbage": True}),
              BrokenEv(),
              Ev("schedule/change", cl.delete("nobody"))]
    assert fold(prefix, 4) == Fold((), ())
    suffix = cl.log(cl.at("schedule-1", T2))
    assert fold(prefix + suffix, 4) == Fold((AtRecord("schedule-1", "p", T2),), ("schedule-1",))
    with pytest.raises(ScheduleLogError):
        fold(prefix + suffix, 3)


def test_e7_fork() -> None:
    """The parent's schedule-1 (seq 3) is invisible to a child with seedLength 6."""
    parent = [Ev("session/start", {}), Ev("turn/start", {}), Ev("user/message", {}),
              Ev("schedule/change", cl.at("schedule-1", T1)), Ev("turn/end", {}), Ev("turn/start", {})]
    assert fold(parent, 0).active == (AtRecord("schedule-1", "p", T1),)
    child = [*parent, Ev("session/end-seed", {})]
    result = fold(child, 6)
    assert result == Fold((), ())
    assert allocate_id(result.seen_ids) == "schedule-1"
    with pytest.raises(ScheduleLogError) as err:
        fold([*child, Ev("schedule/change", cl.delete("schedule-1"))], 6)
    assert err.value.message == 'schedule delete targets inactive id "schedule-1"'
    # the child may create schedule-1 again
    assert fold([*child, Ev("schedule/change", cl.at("schedule-1", T2))], 6).seen_ids == ("schedule-1",)


def test_value_errors_propagate_unchanged() -> None:
    with pytest.raises(OSError, match="unreadable event"):
        fold([*cl.log(cl.at("a", T1)), BrokenEv()], 0)


def test_fold_reads_value_when_there_are_no_raw_bytes() -> None:
    class Odd:
        type = "schedule/change"
        data = b'{"version":1,"operation":"delete","id":"a"}'  # not msgspec.Raw: not used

        def value(self) -> dict:
            return cl.at("a", T1)

    assert fold([Odd()], 0).active == (AtRecord("a", "p", T1),)


def test_raw_integral_float_is_rejected_like_the_value_path() -> None:
    raw = RawEv("schedule/change", b'{"version":1.0,"operation":"delete","id":"a"}')
    with pytest.raises(ScheduleLogError):
        fold([raw], 0)
    with pytest.raises(ScheduleLogError):
        fold([Ev("schedule/change", {"version": 1.0, "operation": "delete", "id": "a"})], 0)


def test_fold_accepts_any_sequence() -> None:
    events = tuple(cl.log(cl.at("a", T1), cl.at("b", T2)))
    assert fold(events, 1).seen_ids == ("b",)


def test_reminders_fixture() -> None:
    """fixtures/reminders-1.jsonl (host §3.11): the fold ends empty with two seen ids."""
    path = FIXTURES / "reminders-1.jsonl"
    lines = path.read_bytes().splitlines()
    events = []
    for line in lines[1:]:
        record = json.loads(line)
        events.append(Ev(record["type"], record["data"]))
    assert fold(events, 0) == Fold((), ("schedule-1", "schedule-2"))
    changes = [i for i, e in enumerate(events) if e.type == "schedule/change"]
    # just before the delete: schedule-2 advanced by its dispatch at 12:10:00.020
    before_delete = fold(events[: changes[-1]], 0)
    assert before_delete.active == (
        EveryRecord("schedule-2", "drink water", 600, "2026-02-10T12:20:00.009Z"),)


def test_e11_batch_dispatches_advance_in_create_order() -> None:
    result = folded(
        cl.every("schedule-1", "2027-01-10T10:00:00.000Z", prompt="drink water", seconds=3600),
        cl.every("schedule-2", "2027-01-10T09:55:00.000Z", prompt="stand up", seconds=300),
        cl.dispatch("schedule-2", "2027-01-10T10:07:30.000Z"),
        cl.dispatch("schedule-1", "2027-01-10T10:07:30.000Z"),
    )
    assert result.active == (
        EveryRecord("schedule-1", "drink water", 3600, "2027-01-10T11:00:00.000Z"),
        EveryRecord("schedule-2", "stand up", 300, "2027-01-10T10:10:00.000Z"),
    )


def _texts(value: object) -> list[str]:
    """Every string under a ``"text"`` key, depth first."""
    if isinstance(value, dict):
        found = [value["text"]] if isinstance(value.get("text"), str) else []
        return found + [t for v in value.values() for t in _texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


def test_reminders_fixture_replays_through_eventlog() -> None:
    """Read with eventlog: each logged dispatch is what ``decide`` gives at its decision time,
    and the follow-up text queued before it is the framing of that decision."""
    eventlog = pytest.importorskip("eventlog")
    from schedule import EveryBatch, OneShot, decide
    from schedule._framing import frame_batch, frame_one_shot

    snapshot = eventlog.read_log(FIXTURES / "reminders-1.jsonl")
    events = list(snapshot.events)
    reminders = [(i, t) for i, e in enumerate(events) for t in _texts(e.value())
                 if t.startswith("[SCHEDULE REMINDER")]
    dispatches = [i for i, e in enumerate(events)
                  if e.type == "schedule/change" and e.value()["operation"] == "dispatch"]
    assert len(dispatches) == 2
    for index in dispatches:
        payload = events[index].value()
        active = fold(events[:index], snapshot.header.seed_length or 0).active
        sample = events[index].time if "acceptedAt" not in payload else parse_instant(payload["acceptedAt"])
        decision = decide(active, sample)
        framed = [t for i, t in reminders if i < index][-1]
        if isinstance(decision, OneShot):
            assert "acceptedAt" not in payload and decision.record.id == payload["id"]
            assert framed == frame_one_shot(decision.record)
        else:
            assert isinstance(decision, EveryBatch)
            assert decision.accepted_at == payload["acceptedAt"]
            assert [r.id for r, _ in decision.items] == [payload["id"]]
            assert framed == frame_batch(decision)
    assert fold(events, 0) == Fold((), ("schedule-1", "schedule-2"))


# --- the append guard -------------------------------------------------------------------------


def test_check_append_accepts_valid_candidates() -> None:
    events = cl.log(cl.at("a", T1), cl.every("b", T1))
    check_append(events, 0, cl.at("c", T2))
    check_append(events, 0, cl.delete("a"))
    check_append(events, 0, cl.dispatch("a"))
    check_append(events, 0, cl.dispatch("b", T2))
    check_append(events, 2, cl.at("a", T2))  # a fork child may reuse a parent id
    check_append([], 0, json.dumps(cl.at("a", T1)).encode())

    from types import MappingProxyType

    check_append(events, 0, MappingProxyType(cl.delete("b")))


@pytest.mark.parametrize(
    ("candidate", "message"),
    [
        (cl.at("a", T2), 'schedule id "a" was reused'),
        (cl.delete("z"), 'schedule delete targets inactive id "z"'),
        (cl.dispatch("a", T1), "one-shot dispatch must not contain acceptedAt"),
        (cl.dispatch("b"), "every dispatch must contain acceptedAt"),
        (cl.dispatch("b", "2027-01-10T08:59:59.999Z"), "every dispatch cannot precede the active scheduledAt"),
        (cl.at("c", T2, prompt=" x"), "at prompt must be non-empty and already trimmed"),
    ],
)
def test_check_append_refuses_corrupting_candidates(candidate: dict, message: str) -> None:
    events = cl.log(cl.at("a", T1), cl.every("b", T1))
    with pytest.raises(ScheduleLogError) as err:
        check_append(events, 0, candidate)
    assert err.value.message == message
    with pytest.raises(ScheduleLogError):
        check_append(events, 0, {**cl.delete("a"), "extra": 1})


def test_check_append_refuses_on_an_already_corrupt_log() -> None:
    with pytest.raises(ScheduleLogError):
        check_append(cl.log(cl.delete("x")), 0, cl.at("a", T1))


# --- the incremental append guard -----------------------------------------------------------------


ACCEPTED = [cl.at("c", T2), cl.delete("a"), cl.dispatch("a"), cl.dispatch("b", T2)]
REFUSED = [
    (cl.at("a", T2), 'schedule id "a" was reused'),
    (cl.delete("z"), 'schedule delete targets inactive id "z"'),
    (cl.dispatch("a", T1), "one-shot dispatch must not contain acceptedAt"),
    (cl.dispatch("b"), "every dispatch must contain acceptedAt"),
    (cl.dispatch("b", "2027-01-10T08:59:59.999Z"), "every dispatch cannot precede the active scheduledAt"),
]


def test_schedule_guard_refuses_and_accepts_like_check_append_and_keeps_nothing_it_refused() -> None:
    events = cl.log(cl.at("a", T1), cl.every("b", T1))
    guard = ScheduleGuard()
    for candidate, message in REFUSED:
        with pytest.raises(ScheduleLogError) as err:
            guard.check(events, 0, candidate)
        assert err.value.message == message
    for candidate in ACCEPTED:  # nothing refused above entered the guard's fold
        guard.check(events, 0, candidate)
    events += cl.log(cl.delete("a"))  # appended: the next check sees it
    with pytest.raises(ScheduleLogError, match='^schedule delete targets inactive id "a"$'):
        guard.check(events, 0, cl.delete("a"))
    with pytest.raises(ScheduleLogError, match='^schedule id "a" was reused$'):
        guard.check(events, 0, cl.at("a", T2))
    guard.check(events, 3, cl.at("a", T2))  # another seed length starts over: a fork child's suffix


def test_schedule_guard_has_the_append_guard_signature_and_reads_the_session_each_time() -> None:
    class Session:
        def __init__(self) -> None:
            self.events = cl.log(cl.at("a", T1))
            self.seed_length = 0

    session, guard = Session(), ScheduleGuard()
    guard(session, cl.delete("a"))
    session.events = session.events + cl.log(cl.delete("a"))  # a new sequence with the same prefix
    with pytest.raises(ScheduleLogError, match="inactive"):
        guard(session, cl.delete("a"))


def test_schedule_guard_on_a_corrupt_log_fails_every_check_like_check_append() -> None:
    events = cl.log(cl.delete("x"))
    guard = ScheduleGuard()
    for _ in range(2):
        with pytest.raises(ScheduleLogError, match='^schedule delete targets inactive id "x"$'):
            guard.check(events, 0, cl.at("a", T1))
    with pytest.raises(ScheduleLogError, match="seedLength"):
        guard.check(events, 2, cl.at("a", T1))
