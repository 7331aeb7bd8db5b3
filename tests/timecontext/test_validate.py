"""The replay validator (time-context §13)."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedule import canonicalize_time_zone as canonicalize
from timecontext import (
    ClientZoneError,
    Enter,
    ReadingInvariantError,
    ReadingReport,
    ReadingViolation,
    TimeContext,
    check_reading,
    format_timestamp,
    reading_message,
    render_reading,
    validate_readings,
)

from .support import B, Ev, ManualClock, Session, U, assistant, load_jsonl, readings

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def ev(seq: int, type: str, data: Any, time: int = B) -> Ev:
    return Ev(seq, type, time, json.dumps(data, ensure_ascii=False))


def prefix(*messages: Any, step: int = 1, turn: int = 1) -> list[Ev]:
    events = [ev(0, "turn/start", {"turn": turn}), ev(1, "step/start", {"turn": turn, "step": step})]
    events += [ev(len(events) + i, "user/message", {"id": f"m{i}", **m})
               for i, m in enumerate(messages)]
    return events


def reading(text: str, *, seq: int = 50, time: int = B, **changes: Any) -> Ev:
    data: dict[str, Any] = {"id": "r", **reading_message(text)}
    data.update(changes)
    return ev(seq, "user/message", data, time)


def text(turn: int = 1, step: int = 1, now: int = B, zones: tuple[str, ...] = ("Europe/Berlin",),
         fallback: str = "UTC", baseline: int | None = None) -> str:
    return render_reading(turn, step, now, zones, fallback, baseline)


def fails(events: list[Ev], event: Ev) -> str:
    with pytest.raises(ReadingInvariantError) as caught:
        check_reading(events, event, canonicalize)
    assert isinstance(caught.value, ValueError)
    return str(caught.value)


BERLIN = U("x", "Europe/Berlin")


def test_a_reading_as_the_hook_writes_it_passes() -> None:
    check_reading(prefix(BERLIN), reading(text()), canonicalize)
    check_reading(prefix(U("x")), reading(text(zones=())), canonicalize)
    check_reading(prefix(U("x"), step=3), reading(text(step=3, zones=(), baseline=B - 5)),
                  canonicalize)


# --- check 1 ---------------------------------------------------------------------------------

ONE_BLOCK = "time-context messages must contain exactly one text block"


@pytest.mark.parametrize(
    "content",
    [
        "text",
        [],
        [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        [{"type": "text", "text": "a", "extra": 1}],
        [{"type": "text"}],
        [{"type": "image", "text": "a"}],
        [{"type": "text", "text": 5}],
        ["a"],
        None,
    ],
)
def test_check_1_one_text_block(content: Any) -> None:
    assert fails(prefix(BERLIN), reading(text(), content=content)) == ONE_BLOCK


def test_check_1_missing_content_and_non_dict_data() -> None:
    event = reading(text())
    bare = Ev(event.seq, event.type, event.time, json.dumps({"source": reading_message("t")["source"]}))
    assert fails(prefix(BERLIN), bare) == ONE_BLOCK


# --- check 2 ---------------------------------------------------------------------------------

FORMAT = "time-context message does not match the durable reading format"


@pytest.mark.parametrize(
    "mutate",
    [
        lambda t: t + "\n",
        lambda t: t.replace("+01:00", "Z"),
        lambda t: t.replace("13:00:00", "13:00:00.000"),
        lambda t: t.replace("[Europe/Berlin]", ""),
        lambda t: t.replace("[Europe/Berlin]", "[]"),
        lambda t: t.replace("Client time zone", "Browser time zone"),
        lambda t: t.replace("unavailable.", "1m."),
        lambda t: t.replace("unavailable.", "unavailable"),
        lambda t: t.replace("model-visible message", "message"),
        lambda t: t.replace("turn 1", "turn -1"),
        lambda t: t.replace("turn 1", "turn ١"),
        lambda t: t.replace("\n", "\r\n"),
        lambda t: t.replace("2026", "226"),
    ],
)
def test_check_2_durable_format(mutate: Any) -> None:
    assert fails(prefix(BERLIN), reading(mutate(text()))) == FORMAT


# --- check 3 ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("turn", "step"), [(0, 1), (1, 0), (2**53, 1), (1, 2**53), (0, 0)])
def test_check_3_safe_turn_and_step(turn: int, step: int) -> None:
    assert fails(prefix(BERLIN), reading(text(turn=turn, step=step))) == \
        "time-context turn and step must be positive safe integers"


@pytest.mark.parametrize("number", ["9" * 5000, "0" * 5000, "00", "1" + "0" * 16])
def test_check_3_very_long_numbers(number: str) -> None:
    long = text().replace("turn 1, step 1", f"turn {number}, step 1")
    assert fails(prefix(BERLIN), reading(long)) == \
        "time-context turn and step must be positive safe integers"


def test_check_3_compares_values_not_digits() -> None:
    padded = text().replace("turn 1, step 1", f"turn {'0' * 5000}1, step 01")
    check_reading(prefix(BERLIN), reading(padded), canonicalize)


def test_check_3_largest_safe_values_pass_to_check_4() -> None:
    big = 2**53 - 1
    assert fails(prefix(BERLIN), reading(text(turn=big, step=big))) == \
        f"time-context reading names turn {big}/step {big}, expected turn 1/step 1"


# --- check 4 ---------------------------------------------------------------------------------

def test_e9_position_relative_to_request_header() -> None:
    events = prefix(U("x"))
    header = ev(len(events), "request/header", {"header": {}, "reason": "initial"})
    missing = reading(text(zones=()))
    assert fails(events + [header], missing) == "time-context reading must precede request/header"
    check_reading(events, missing, canonicalize)


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([], "time-context reading must be appended inside an open turn"),
        (prefix(BERLIN) + [ev(9, "step/end", {"turn": 1, "step": 1}),
                           ev(10, "turn/end", {"turn": 1, "reason": {"kind": "completed"}})],
         "time-context reading must be appended inside an open turn"),
        ([ev(0, "step/start", {"turn": 1, "step": 1})],
         "time-context reading must be appended inside an open turn"),
        ([ev(0, "turn/start", {"turn": 1})], "time-context reading must follow step/start"),
        (prefix(BERLIN) + [ev(9, "step/end", {"turn": 1, "step": 1})],
         "time-context reading must follow step/start"),
        (prefix(BERLIN, step=2), "time-context reading names turn 1/step 1, expected turn 1/step 2"),
        (prefix(BERLIN, turn=2), "time-context reading names turn 1/step 1, expected turn 2/step 1"),
        ([ev(0, "turn/start", {"turn": True}), ev(1, "step/start", {"turn": 1, "step": 1})],
         "time-context reading names turn 1/step 1, expected turn true/step 1"),
        ([ev(0, "turn/start", {"turn": 1}), ev(1, "step/start", {"turn": 1, "step": "1"})],
         'time-context reading names turn 1/step 1, expected turn 1/step "1"'),
    ],
)
def test_check_4_position(events: list[Ev], message: str) -> None:
    assert fails(events, reading(text())) == message


@dataclass(frozen=True)
class Decoded:
    """An ``EventLike`` whose ``value()`` returns ``data`` itself, as an in-memory log might."""

    seq: int
    type: str
    time: int
    data: Any

    def value(self) -> Any:
        return copy.deepcopy(self.data)


def test_check_4_names_a_huge_fold_value_in_decimal() -> None:
    # value() may give any int (time-context §3.1); naming one longer than str() converts with json.dumps
    # raised Python's digit-limit ValueError, which escaped validate_readings and aborted the
    # whole log's validation.
    huge = 10**5000 - 1
    events: list[Any] = [ev(0, "turn/start", {"turn": 1}),
                         Decoded(1, "step/start", B, {"turn": 1, "step": huge})]
    expected = "time-context reading names turn 1/step 1, expected turn 1/step " + "9" * 5000
    assert fails(events, reading(text())) == expected
    report = validate_readings(events + [reading(text(), seq=2)], canonicalize)
    assert report.violations == (ReadingViolation(2, expected),)


def test_check_4_a_new_step_clears_the_request_flag() -> None:
    events = prefix(BERLIN) + [
        ev(3, "request/header", {}), ev(4, "step/end", {"turn": 1, "step": 1}),
        ev(5, "step/start", {"turn": 1, "step": 2}),
    ]
    check_reading(events, reading(text(step=2, baseline=B)), canonicalize)


# --- check 5 ---------------------------------------------------------------------------------

SOURCE = "time-context source must carry only the exact snapshot text, not request authority"


def source_with(**changes: Any) -> dict[str, Any]:
    source = copy.deepcopy(reading_message(text())["source"])
    source.update(changes)
    return source


@pytest.mark.parametrize(
    "source",
    [
        source_with(zone="Europe/Berlin"),
        source_with(authority="client"),
        source_with(form="notice"),
        source_with(sections=[]),
        source_with(sections=[{"name": "time-context", "text": text()}] * 2),
        source_with(sections=[{"name": "time-context", "text": text(), "zone": "UTC"}]),
        source_with(sections=[{"name": "clock", "text": text()}]),
        source_with(sections=[{"name": "time-context", "text": text() + " "}]),
        source_with(sections={"name": "time-context", "text": text()}),
        {"kind": "plugin", "plugin": "time-context"},
    ],
)
def test_check_5_exact_snapshot_source(source: dict[str, Any]) -> None:
    assert fails(prefix(BERLIN), reading(text(), source=source)) == SOURCE


# --- check 6 ---------------------------------------------------------------------------------

POLICY = "time-context client-zone text does not match current-turn user messages"


def test_check_6_policy_rederived_from_the_turn() -> None:
    assert fails(prefix(U("x")), reading(text())) == POLICY
    assert fails(prefix(BERLIN, U("y", "America/Sao_Paulo")), reading(text())) == POLICY
    swapped = text(zones=("America/Sao_Paulo", "Europe/Berlin")).replace(
        '["America/Sao_Paulo","Europe/Berlin"]', '["Europe/Berlin","America/Sao_Paulo"]')
    assert fails(prefix(BERLIN, U("y", "America/Sao_Paulo")), reading(swapped)) == POLICY
    # Zones of an earlier turn do not count.
    earlier = [ev(0, "turn/start", {"turn": 1}), ev(1, "user/message", {"id": "a", **BERLIN}),
               ev(2, "turn/end", {"turn": 1, "reason": {"kind": "completed"}})]
    later = [ev(3 + e.seq, e.type, e.value()) for e in prefix(U("x"), turn=2)]
    assert fails(earlier + later, reading(text(turn=2))) == POLICY
    check_reading(earlier + later, reading(text(turn=2, zones=())), canonicalize)


def test_check_6_raises_client_zone_errors() -> None:
    with pytest.raises(ClientZoneError) as caught:
        check_reading(prefix(U("x", "Asia/Calcutta")), reading(text()), canonicalize)
    assert str(caught.value) == 'client time zone must be canonical: "Asia/Calcutta"'


# --- check 7 ---------------------------------------------------------------------------------

def test_check_7_baseline_phrase() -> None:
    wrong = text(step=2).replace("step context", "model-visible message")
    assert fails(prefix(BERLIN, step=2), reading(wrong)) == \
        'time-context step 2 uses the wrong elapsed-time baseline "model-visible message"'
    wrong = text(step=1).replace("model-visible message", "step context")
    assert fails(prefix(BERLIN), reading(wrong)) == \
        'time-context step 1 uses the wrong elapsed-time baseline "step context"'


# --- check 8 ---------------------------------------------------------------------------------

TIMESTAMP = "time-context rendered timestamp must parse and not postdate its durable event"


@pytest.mark.parametrize("time", [B - 1, B - 1000, True, 1.7707248e12, 2**53, -(2**53), None])
def test_check_8_event_time(time: Any) -> None:
    assert fails(prefix(BERLIN), reading(text(), time=time)) == TIMESTAMP


@pytest.mark.parametrize("time", [B, B + 999, B + 10**12])
def test_check_8_no_upper_bound(time: int) -> None:
    check_reading(prefix(BERLIN), reading(text(), time=time), canonicalize)


@pytest.mark.parametrize(
    ("old", "new"),
    [("2026-02-10", "2026-13-10"), ("2026-02-10", "0000-02-10"), ("12:00:00", "25:00:00"),
     ("+00:00", "+24:00")],
)
def test_check_8_timestamp_must_parse(old: str, new: str) -> None:
    assert fails(prefix(U("x")), reading(text(zones=()).replace(old, new))) == TIMESTAMP


# --- check 9 ---------------------------------------------------------------------------------

UNIQUE = "time-context rendered timestamp does not match the unique client zone"


def test_check_9_unique_zone_must_render_the_clock() -> None:
    in_utc = text().replace("2026-02-10T13:00:00+01:00[Europe/Berlin]",
                            "2026-02-10T12:00:00+00:00[UTC]")
    assert fails(prefix(BERLIN), reading(in_utc)) == UNIQUE
    relabelled = text().replace("[Europe/Berlin]", "[Europe/Paris]")
    assert fails(prefix(BERLIN), reading(relabelled)) == UNIQUE
    # Mixed and missing contexts do not check the bracket.
    check_reading(prefix(U("x")), reading(text(zones=(), fallback="Asia/Kathmandu")), canonicalize)
    check_reading(prefix(U("x")), reading(text(zones=()).replace("[UTC]", "[Mars/Olympus]")),
                  canonicalize)


def test_check_9_formatter_failure() -> None:
    stamp = "9999-12-31T23:59:59+00:00"
    instant = 253402300799000
    body = text(zones=("Asia/Tokyo",)).split(": ", 1)[1].split("\n", 1)[1]
    bad = f"Time sampled while preparing turn 1, step 1: {stamp}[Asia/Tokyo]\n{body}"
    with pytest.raises(ValueError) as expected:
        format_timestamp(instant, "Asia/Tokyo")
    assert fails(prefix(U("x", "Asia/Tokyo")), reading(bad, time=instant)) == (
        "time-context client zone cannot format its durable timestamp: "
        f"ValueError: {expected.value}")


# --- validate_readings ----------------------------------------------------------------------

def test_validate_readings_counts_checks_and_skips_foreign_readings() -> None:
    events = prefix(BERLIN)
    events.append(reading(text(), seq=len(events)))
    foreign = ("Time sampled while preparing turn 1, step 1: 2026-02-10T13:00:00+01:00[Europe/Berlin]\n"
               "Browser time zone for this request: Europe/Berlin.\n"
               "Elapsed since the preceding model-visible message: unavailable.")
    events.append(ev(len(events), "user/message",
                     {"id": "f", "role": "user",
                      "source": {"kind": "plugin", "plugin": "time-context"},
                      "content": [{"type": "text", "text": foreign}]}))
    events.append(reading(text(step=2), seq=len(events)))  # wrong step: check 4
    events.append(reading(text(), seq=len(events), source={"kind": "plugin",
                                                           "plugin": "time-context"}))
    events.append(ev(len(events), "request/header", {}))
    events.append(reading(text(), seq=len(events), content=[]))
    # Not readings: other plugins, other types, non-dict data.
    events.append(ev(len(events), "user/message", {"source": {"kind": "plugin", "plugin": "x"}}))
    events.append(ev(len(events), "assistant/message", reading_message(text())))
    events.append(ev(len(events), "user/message", ["time-context"]))
    report = validate_readings(events, canonicalize)
    assert report == ReadingReport(
        checked=4,
        skipped_foreign=1,
        violations=(
            ReadingViolation(5, "time-context reading names turn 1/step 2, expected turn 1/step 1"),
            ReadingViolation(6, SOURCE),
            ReadingViolation(8, ONE_BLOCK),
        ),
    )


def test_validate_readings_records_client_zone_errors() -> None:
    events = prefix(U("x", "Etc/UTC"))
    events.append(reading(text(zones=("UTC",)), seq=len(events)))
    assert validate_readings(events, canonicalize).violations == (
        ReadingViolation(3, 'client time zone must be canonical: "Etc/UTC"'),)


def test_validate_the_reminders_fixture() -> None:
    events = load_jsonl(FIXTURES / "reminders-1.jsonl")
    assert validate_readings(events, canonicalize) == ReadingReport(6, 0, ())


def test_validate_a_log_written_by_the_hook() -> None:
    s = Session(ManualClock(B))
    hook = TimeContext(s.clock, canonicalize=canonicalize, time_zone="Asia/Calcutta")
    s.append("turn/start", {"turn": 1})
    s.enter(hook, 1, 1, [U("a", "Europe/Berlin")], append_at=B + 12)
    s.clock.now = B + 5000
    s.enter(hook, 1, 2, [U("b", "America/Sao_Paulo")], continuation=True)
    s.enter(hook, 1, 3, [], continuation=True)
    report = validate_readings(s.events, canonicalize)
    assert report == ReadingReport(3, 0, ())


# --- hypothesis: everything TimeContext writes validates ----------------------------------------

ZONES = ["UTC", "Europe/Berlin", "America/Sao_Paulo", "Asia/Kathmandu", "Pacific/Chatham",
         "America/St_Johns", "Pacific/Kiritimati", "Etc/GMT+5", "Australia/Lord_Howe"]

prompt = st.builds(
    lambda rpc, zone: U(rpc, zone) if rpc is not None else U(None, zone),
    st.one_of(st.none(), st.text(max_size=3)),
    st.one_of(st.none(), st.sampled_from(ZONES)),
)
step_plan = st.fixed_dictionaries({
    "steering": st.lists(prompt, max_size=2),
    "jump": st.integers(-(10**7), 10**9),
    "lag": st.integers(0, 5000),
    "request": st.booleans(),
    "tool": st.booleans(),
})
turn_plan = st.fixed_dictionaries({
    "prompt": st.lists(prompt, max_size=2),
    "steps": st.lists(step_plan, min_size=1, max_size=4),
    "followup": st.booleans(),
})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start=st.integers(-(2**41), 2**42),
    interval=st.sampled_from([None, 0, 1000, 300000]),
    fallback=st.sampled_from(ZONES),
    turns=st.lists(turn_plan, min_size=1, max_size=4),
)
def test_the_validator_accepts_every_reading_time_context_writes(
    start: int, interval: int | None, fallback: str, turns: list[dict[str, Any]]
) -> None:
    s = Session(ManualClock(start))
    hook = TimeContext(s.clock, canonicalize=canonicalize, time_zone=fallback,
                       refresh_interval_ms=interval)
    written = 0
    for number, turn in enumerate(turns, start=1):
        s.append("turn/start", {"turn": number})
        for index, step in enumerate(turn["steps"], start=1):
            s.clock.now += step["jump"]
            batch = list(turn["prompt"]) if index == 1 else []
            if index == 1 and turn["followup"]:
                batch.append({"role": "user", "source": {"kind": "plugin", "plugin": "schedule"},
                              "content": [{"type": "text", "text": "[SCHEDULE REMINDER] x"}]})
            batch += step["steering"]
            before = len(s.events)
            decision = s.enter(hook, number, index, batch, continuation=index > 1,
                               append_at=s.clock.now + step["lag"])
            assert isinstance(decision, Enter)
            written += len(readings(s.events[before:]))
            if len(s.events) == before:
                break  # an empty first batch opens no step: the turn ends
            if not step["request"]:
                del s.events[-1]  # the step failed before its request/header
            s.append("assistant/message", {"turn": number, "step": index, "message": assistant()})
            if step["tool"]:
                s.append("tool/result", {"turn": number, "step": index, "message": {}})
            s.append("step/end", {"turn": number, "step": index})
        s.append("turn/end", {"turn": number, "reason": {"kind": "completed"}})
    report = validate_readings(s.events, canonicalize)
    assert report.violations == ()
    assert report.checked == written and report.skipped_foreign == 0
