"""Acceptance audit of timecontext against its contract (time-context §1-14) and of the
shared zone canonicaliser it relies on (schedule §5.4.1, host §4.3.2).

Written as an outside tester would: only public names (``from timecontext import ...``,
``schedule.canonicalize_time_zone``, ``eventlog``), with every expected value copied from the
text of docs/time-context.md or derived from it by hand (or from the standard library, never from timecontext).
"""

from __future__ import annotations

import calendar
import dataclasses
import inspect
import json
import os
import re
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog import SessionStore
from schedule import ScheduleInputError, canonicalize_time_zone
from timecontext import (
    ZONE_SHAPE,
    ClientZoneError,
    Enter,
    PreStep,
    ReadingInvariantError,
    ReadingReport,
    ReadingViolation,
    Reject,
    TimeContext,
    TimeContextConfigError,
    check_reading,
    client_zones,
    format_duration,
    format_timestamp,
    policy_line,
    process_zone,
    reading_message,
    render_reading,
    sampled_zone,
    validate_readings,
)

B = 1770724800000  # 2026-02-10T12:00:00.000Z (time-context §14)
MAX_SAFE = 2**53 - 1

UNIQUE = ("Client time zone for this request: {}. "
          "Interpret otherwise-unqualified dates and times in this zone.")
MIXED = ("Client time zone for this request: mixed {}. "
         "Ask the user to clarify otherwise-unqualified dates and times.")
MISSING = ("Client time zone for this request: unavailable. "
           "Ask the user to clarify otherwise-unqualified dates and times.")
INTERVAL = "time-context: refreshIntervalMs must be a non-negative safe integer, got "
SYSTEM_ZONE = "time-context: failed to resolve the system time zone"


def ms(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> int:
    """Epoch ms of a UTC wall time (standard library only)."""
    return calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)) * 1000


# --- doubles ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ev:
    """An ``EventLike``: ``data`` is kept as JSON text and decoded afresh by each ``value()``."""

    seq: int
    type: str
    time: Any
    raw: str

    def value(self) -> Any:
        return json.loads(self.raw)


@dataclass(frozen=True)
class StrictEv(Ev):
    """An event whose data may be read only for the types the hook inspects (time-context §3.1)."""

    def value(self) -> Any:
        assert self.type in ("turn/start", "user/message"), f"value() read on {self.type}"
        return json.loads(self.raw)


class Clock:
    def __init__(self, now: int = B) -> None:
        self.now = now
        self.reads = 0

    def now_ms(self) -> int:
        self.reads += 1
        return self.now


class Log:
    def __init__(self, event: type[Ev] = Ev) -> None:
        self.events: list[Ev] = []
        self._event = event
        self._ids = 0

    def add(self, type: str, data: Any, time: Any = B) -> Ev:
        event = self._event(len(self.events), type, time, json.dumps(data, ensure_ascii=False))
        self.events.append(event)
        return event

    def msg(self, message: dict[str, Any], time: Any = B) -> Ev:
        self._ids += 1
        return self.add("user/message", {"id": f"m-{self._ids}", **message}, time)

    def pre(self, turn: int, step: int, continuation: bool = False,
            cancelled: bool = False) -> PreStep:
        return PreStep(turn=turn, step=step, events=tuple(self.events),
                       continuation=continuation, cancelled=cancelled)


def U(rpc: str, zone: str | None = None) -> dict[str, Any]:
    """time-context §14: a user message with source
    ``{"kind":"user","rpcId":rpc[,"clientTimeZone":zone]}``."""
    source: dict[str, Any] = {"kind": "user", "rpcId": rpc}
    if zone is not None:
        source["clientTimeZone"] = zone
    return {"role": "user", "source": source, "content": [{"type": "text", "text": "hi"}]}


def with_source(source: Any) -> dict[str, Any]:
    return {"role": "user", "source": source, "content": [{"type": "text", "text": "hi"}]}


def reading_data(text: str) -> dict[str, Any]:
    """time-context §11, written out by hand."""
    return {
        "role": "user",
        "source": {"kind": "plugin", "plugin": "time-context", "form": "snapshot",
                   "sections": [{"name": "time-context", "text": text}]},
        "content": [{"type": "text", "text": text}],
    }


def assistant_data(turn: int, step: int) -> dict[str, Any]:
    return {"turn": turn, "step": step,
            "message": {"id": "a", "role": "assistant",
                        "source": {"kind": "model", "provider": "scripted", "model": "m"},
                        "content": [{"type": "text", "text": "ok"}]}}


def make(clock: Clock | None = None, **settings_: Any) -> TimeContext:
    settings_.setdefault("time_zone", "UTC")
    return TimeContext(clock or Clock(), canonicalize=canonicalize_time_zone, **settings_)


def reading_text(decision: Any) -> str:
    assert isinstance(decision, Enter)
    last = decision.messages[-1]
    assert last["source"].get("plugin") == "time-context"
    return last["content"][0]["text"]


# --- time-context §3.1, time-context §8.4: public names and shapes ------------------------------


def test_error_classes_are_value_errors() -> None:
    for error in (ClientZoneError, TimeContextConfigError, ReadingInvariantError):
        assert issubclass(error, ValueError)


@pytest.mark.parametrize(
    ("cls", "fields"),
    [
        (Enter, ["messages"]),
        (Reject, []),
        (PreStep, ["turn", "step", "events", "continuation", "cancelled"]),
        (ReadingViolation, ["seq", "message"]),
        (ReadingReport, ["checked", "skipped_foreign", "violations"]),
    ],
)
def test_value_types_are_frozen_slotted_dataclasses(cls: type, fields: list[str]) -> None:
    assert [f.name for f in dataclasses.fields(cls)] == fields
    assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert "__slots__" in cls.__dict__


def test_enter_and_reject_values() -> None:
    enter = Enter(messages=(U("a"),))
    assert enter.messages == (U("a"),)
    assert Reject() == Reject()
    with pytest.raises(dataclasses.FrozenInstanceError):
        enter.messages = ()  # type: ignore[misc]


@pytest.mark.parametrize(
    ("function", "names"),
    [
        (format_timestamp, ["epoch_ms", "zone"]),
        (format_duration, ["elapsed_ms"]),
        (client_zones, ["messages", "canonicalize"]),
        (policy_line, ["zones"]),
        (render_reading, ["turn", "step", "now_ms", "zones", "fallback_zone", "baseline_ms"]),
        (reading_message, ["text"]),
        (process_zone, ["environ", "localtime_path", "canonicalize"]),
        (sampled_zone, ["environ", "localtime_path", "canonicalize"]),
        (check_reading, ["prefix", "event", "canonicalize"]),
        (validate_readings, ["events", "canonicalize"]),
    ],
)
def test_public_function_parameters(function: Callable[..., Any], names: list[str]) -> None:
    assert list(inspect.signature(function).parameters) == names


def test_constructor_signature() -> None:
    params = inspect.signature(TimeContext.__init__).parameters
    assert list(params) == ["self", "clock", "canonicalize", "time_zone", "refresh_interval_ms",
                            "environ", "localtime_path"]
    assert params["clock"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    for name in ("canonicalize", "time_zone", "refresh_interval_ms", "environ", "localtime_path"):
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["canonicalize"].default is inspect.Parameter.empty
    assert params["time_zone"].default is None
    assert params["refresh_interval_ms"].default is None
    assert params["environ"].default is None
    assert params["localtime_path"].default == "/etc/localtime"


def test_attributes_are_read_only() -> None:
    hook = make(time_zone="Asia/Calcutta", refresh_interval_ms=60000.0)
    assert (hook.fallback_zone, hook.refresh_interval_ms) == ("Asia/Kolkata", 60000)
    with pytest.raises(AttributeError):
        hook.fallback_zone = "UTC"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        hook.refresh_interval_ms = 0  # type: ignore[misc]


def test_zone_shape_is_the_spec_pattern() -> None:
    assert ZONE_SHAPE.pattern == r"[A-Za-z][A-Za-z0-9_+.\-]*(?:/[A-Za-z0-9_+.\-]+)+"
    assert ZONE_SHAPE.flags & re.ASCII


# --- time-context §4, time-context §11: reading text and message --------------------------------


def test_policy_lines() -> None:
    assert policy_line(()) == MISSING
    assert policy_line(("Europe/Berlin",)) == UNIQUE.format("Europe/Berlin")
    assert policy_line(("America/Sao_Paulo", "Europe/Berlin")) == MIXED.format(
        '["America/Sao_Paulo","Europe/Berlin"]')


def test_render_reading_lines() -> None:
    text = render_reading(3, 12, B, ("Asia/Tokyo",), "UTC", B - 61000)
    assert text == (
        "Time sampled while preparing turn 3, step 12: 2026-02-10T21:00:00+09:00[Asia/Tokyo]\n"
        + UNIQUE.format("Asia/Tokyo") + "\n"
        "Elapsed since the preceding step context: 1m 1s."
    )
    text = render_reading(1, 1, B, (), "Europe/Berlin", None)
    assert text == (
        "Time sampled while preparing turn 1, step 1: 2026-02-10T13:00:00+01:00[Europe/Berlin]\n"
        + MISSING + "\n"
        "Elapsed since the preceding model-visible message: unavailable."
    )
    assert not text.endswith("\n")
    # mixed: the fallback shows the clock, never the user's zones
    text = render_reading(2, 1, B, ("Asia/Tokyo", "UTC"), "Asia/Kolkata", B)
    assert text.split("\n") == [
        "Time sampled while preparing turn 2, step 1: 2026-02-10T17:30:00+05:30[Asia/Kolkata]",
        MIXED.format('["Asia/Tokyo","UTC"]'),
        "Elapsed since the preceding model-visible message: 0s.",
    ]


def test_elapsed_comes_from_milliseconds_not_rendered_clocks() -> None:
    # time-context §6: baseline at …:00.999 and now at …:01.998 give 0s
    text = render_reading(1, 2, B + 1998, (), "UTC", B + 999)
    assert text.endswith("Elapsed since the preceding step context: 0s.")
    assert "2026-02-10T12:00:01+00:00[UTC]" in text


def test_reading_message_is_exact() -> None:
    text = "a\nb\nc"
    message = reading_message(text)
    assert message == reading_data(text)
    assert list(message) == ["role", "source", "content"]
    assert list(message["source"]) == ["kind", "plugin", "form", "sections"]
    assert list(message["source"]["sections"][0]) == ["name", "text"]
    assert list(message["content"][0]) == ["type", "text"]


# --- time-context §5: timestamps ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("epoch_ms", "zone", "rendered"),
    [
        (1770724800000, "UTC", "2026-02-10T12:00:00+00:00[UTC]"),
        (1770724800000, "Europe/Lisbon", "2026-02-10T12:00:00+00:00[Europe/Lisbon]"),
        (1774745999999, "Europe/Berlin", "2026-03-29T01:59:59+01:00[Europe/Berlin]"),
        (1774746000000, "Europe/Berlin", "2026-03-29T03:00:00+02:00[Europe/Berlin]"),
        (1792888200000, "Europe/Berlin", "2026-10-25T02:30:00+02:00[Europe/Berlin]"),
        (1792891800000, "Europe/Berlin", "2026-10-25T02:30:00+01:00[Europe/Berlin]"),
        (1770724800000, "Asia/Kathmandu", "2026-02-10T17:45:00+05:45[Asia/Kathmandu]"),
        (1770724800000, "Etc/GMT+5", "2026-02-10T07:00:00-05:00[Etc/GMT+5]"),
        (1798759800000, "Pacific/Kiritimati", "2027-01-01T13:30:00+14:00[Pacific/Kiritimati]"),
        (-2208988800000, "Asia/Shanghai", "1900-01-01T08:05:43+08:05:43[Asia/Shanghai]"),
    ],
)
def test_section5_table(epoch_ms: int, zone: str, rendered: str) -> None:
    assert format_timestamp(epoch_ms, zone) == rendered


@pytest.mark.parametrize(
    ("epoch_ms", "zone", "rendered"),
    [
        (B, "Pacific/Chatham", "2026-02-11T01:45:00+13:45[Pacific/Chatham]"),
        (ms(2026, 7, 1, 12), "America/St_Johns", "2026-07-01T09:30:00-02:30[America/St_Johns]"),
        (B, "Europe/London", "2026-02-10T12:00:00+00:00[Europe/London]"),
        (-1, "UTC", "1969-12-31T23:59:59+00:00[UTC]"),
        (-1000, "UTC", "1969-12-31T23:59:59+00:00[UTC]"),
        (-1001, "UTC", "1969-12-31T23:59:58+00:00[UTC]"),
        (ms(999, 1, 1) + 999, "UTC", "0999-01-01T00:00:00+00:00[UTC]"),
        (ms(1, 1, 1), "UTC", "0001-01-01T00:00:00+00:00[UTC]"),
        (ms(9999, 12, 31, 23, 59, 59) + 999, "UTC", "9999-12-31T23:59:59+00:00[UTC]"),
        (ms(2026, 1, 1, 23, 5, 9), "Etc/GMT-1", "2026-01-02T00:05:09+01:00[Etc/GMT-1]"),
    ],
)
def test_timestamp_edges(epoch_ms: int, zone: str, rendered: str) -> None:
    assert format_timestamp(epoch_ms, zone) == rendered


@pytest.mark.parametrize(
    ("epoch_ms", "zone"),
    [
        (ms(1, 1, 1) - 1, "UTC"),
        (ms(9999, 12, 31, 23, 59, 59) + 1000, "UTC"),
        (ms(1, 1, 1, 3), "America/New_York"),  # local wall time is in year 0
        (ms(9999, 12, 31, 12), "Pacific/Kiritimati"),  # local wall time is in year 10000
        (-(10**20), "UTC"),
        (10**20, "Asia/Tokyo"),
    ],
)
def test_years_outside_1_to_9999_raise_value_error(epoch_ms: int, zone: str) -> None:
    with pytest.raises(ValueError):
        format_timestamp(epoch_ms, zone)


_ZONES = sorted(zoneinfo.available_timezones())
_STAMP = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"([+-])([0-9]{2}):([0-9]{2})(?::([0-9]{2}))?\[(.+)\]", re.ASCII)


@settings(max_examples=200, deadline=None)
@given(st.integers(ms(1800, 1, 1), ms(2200, 1, 1)), st.sampled_from(_ZONES))
def test_timestamp_agrees_with_zoneinfo(epoch_ms: int, zone: str) -> None:
    from datetime import datetime, timedelta
    rendered = format_timestamp(epoch_ms, zone)
    match = _STAMP.fullmatch(rendered)
    assert match is not None, rendered
    assert "Z" not in rendered.split("[")[0]
    instant = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=epoch_ms // 1000)
    local = instant.astimezone(zoneinfo.ZoneInfo(zone))
    offset = local.utcoffset()
    assert offset is not None
    total = int(offset.total_seconds())
    y, mo, d, h, mi, s, sign, oh, om, osec, label = match.groups()
    assert (int(y), int(mo), int(d), int(h), int(mi), int(s)) == (
        local.year, local.month, local.day, local.hour, local.minute, local.second)
    assert (sign == "-") == (total < 0)
    assert int(oh) * 3600 + int(om) * 60 + int(osec or 0) == abs(total)
    assert (osec is not None) == (abs(total) % 60 != 0)
    assert label == zone


# --- time-context §6: durations -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("elapsed", "text"),
    [
        (0, "0s"), (999, "0s"), (59999, "59s"), (60000, "1m 0s"), (3601000, "1h 1s"),
        (3660000, "1h 1m 0s"), (7384000, "2h 3m 4s"), (86820000, "1d 7m 0s"),
        (172805000, "2d 5s"), (34560005000, "400d 5s"), (-2500, "0s"),
    ],
)
def test_section6_table(elapsed: int, text: str) -> None:
    assert format_duration(elapsed) == text


_DURATION = re.compile(r"(?:([0-9]+)d )?(?:([0-9]+)h )?(?:([0-9]+)m )?([0-9]+)s", re.ASCII)


@settings(max_examples=200, deadline=None)
@given(st.integers(-(10**12), 10**15))
def test_duration_parses_back(elapsed: int) -> None:
    text = format_duration(elapsed)
    match = _DURATION.fullmatch(text)
    assert match is not None, text
    d, h, m, s = (int(g) if g is not None else 0 for g in match.groups())
    assert all(g is None or int(g) > 0 for g in match.groups()[:3])
    assert h < 24 and m < 60 and s < 60
    assert ((d * 24 + h) * 60 + m) * 60 + s == max(elapsed, 0) // 1000


# --- time-context §7: client zones --------------------------------------------------------------


def test_e5_counting() -> None:
    messages = [
        U("a", "Asia/Tokyo"),
        with_source({"kind": "user", "clientTimeZone": "Europe/Paris"}),
        U("b"),
        U("c", "UTC"),
        U("d", "Asia/Tokyo"),
    ]
    assert client_zones(messages, canonicalize_time_zone) == ("Asia/Tokyo", "UTC")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("utc", 'client time zone must be canonical UTC or IANA Area/Location: "utc"'),
        ("Asia/Shanghai\n",
         'client time zone must be canonical UTC or IANA Area/Location: "Asia/Shanghai\\n"'),
        ("Mars/Olympus", 'client time zone is unsupported: "Mars/Olympus"'),
        ("Asia/Calcutta", 'client time zone must be canonical: "Asia/Calcutta"'),
        # more values, same rules
        ("Etc/UTC", 'client time zone must be canonical: "Etc/UTC"'),
        ("asia/shanghai", 'client time zone must be canonical: "asia/shanghai"'),
        ("", 'client time zone must be canonical UTC or IANA Area/Location: ""'),
        (" Europe/Paris", 'client time zone must be canonical UTC or IANA Area/Location: " Europe/Paris"'),
        ("Europe/Zürich", 'client time zone must be canonical UTC or IANA Area/Location: "Europe/Zürich"'),
        ("Asia//Shanghai", 'client time zone must be canonical UTC or IANA Area/Location: "Asia//Shanghai"'),
        ("right/UTC", 'client time zone is unsupported: "right/UTC"'),
        ("posix/Europe/Paris", 'client time zone is unsupported: "posix/Europe/Paris"'),
    ],
)
def test_e6_validation_errors(value: str, message: str) -> None:
    with pytest.raises(ClientZoneError) as caught:
        client_zones([U("r", value)], canonicalize_time_zone)
    assert str(caught.value) == message


def test_zone_quote_uses_json_dumps() -> None:
    # ZONE_SHAPE refuses quotes, so a quoted value fails the shape check first
    with pytest.raises(ClientZoneError) as caught:
        client_zones([U("r", 'Asia/"x')], canonicalize_time_zone)
    assert str(caught.value) == (
        "client time zone must be canonical UTC or IANA Area/Location: "
        + json.dumps('Asia/"x', ensure_ascii=False))


def test_first_bad_value_in_message_order_wins_before_deduplication() -> None:
    messages = [U("a", "Asia/Tokyo"), U("b", "Mars/Olympus"), U("c", "utc"), U("d", "Asia/Tokyo")]
    with pytest.raises(ClientZoneError, match="unsupported"):
        client_zones(messages, canonicalize_time_zone)
    # one bad value raises even though the others would be unique
    with pytest.raises(ClientZoneError, match='must be canonical: "Etc/UTC"'):
        client_zones([U("a", "UTC"), U("b", "Etc/UTC")], canonicalize_time_zone)


def test_any_canonicaliser_exception_means_unsupported() -> None:
    def refuse(name: str) -> str:
        raise KeyError(name)

    with pytest.raises(ClientZoneError) as caught:
        client_zones([U("a", "Europe/Berlin")], refuse)
    assert str(caught.value) == 'client time zone is unsupported: "Europe/Berlin"'


@pytest.mark.parametrize(
    "message",
    [
        with_source({"kind": "user", "rpcId": 7, "clientTimeZone": "Europe/Paris"}),
        with_source({"kind": "user", "rpcId": None, "clientTimeZone": "Europe/Paris"}),
        with_source({"kind": "user", "rpcId": "x", "clientTimeZone": None}),
        with_source({"kind": "user", "rpcId": "x", "clientTimeZone": 5}),
        with_source({"kind": "user", "rpcId": "x", "clientTimeZone": ["Europe/Paris"]}),
        with_source({"kind": "plugin", "plugin": "x", "rpcId": "x", "clientTimeZone": "Europe/Paris"}),
        with_source({"kind": "User", "rpcId": "x", "clientTimeZone": "Europe/Paris"}),
        with_source(["kind", "user"]),
        with_source("user"),
        with_source(None),
        "not a dict",
        ["kind"],
        None,
        reading_data("Time sampled ..."),
        # invalid values on non-contributing messages are never validated
        with_source({"kind": "user", "clientTimeZone": "utc"}),
        with_source({"kind": "user", "rpcId": 1, "clientTimeZone": "Mars/Olympus"}),
    ],
)
def test_messages_that_contribute_nothing(message: Any) -> None:
    assert client_zones([message], canonicalize_time_zone) == ()
    # ... and they do not count as "unzoned": with one zoned prompt the turn is unique
    assert client_zones([message, U("z", "Europe/Berlin")], canonicalize_time_zone) == (
        "Europe/Berlin",)


def test_empty_rpc_id_still_contributes() -> None:
    assert client_zones([U("", "Europe/Berlin")], canonicalize_time_zone) == ("Europe/Berlin",)


def test_zones_sort_by_code_point() -> None:
    messages = [U("a", "UTC"), U("b", "Asia/Tokyo"), U("c", "America/New_York"),
                U("d", "Etc/GMT+5"), U("e", "America/Argentina/Buenos_Aires")]
    assert client_zones(messages, canonicalize_time_zone) == (
        "America/Argentina/Buenos_Aires", "America/New_York", "Asia/Tokyo", "Etc/GMT+5", "UTC")


# --- time-context §3.3: the hook algorithm ------------------------------------------------------


def test_reject_cancel_and_empty_first_batch_return_the_decision_without_reading_the_clock() -> None:
    clock = Clock()
    hook = make(clock)
    log = Log()
    log.add("turn/start", {"turn": 1})
    reject = Reject()
    assert hook.pre_step(log.pre(1, 1), reject) is reject
    assert hook.pre_step(log.pre(1, 2, continuation=True), reject) is reject
    entering = Enter((U("a"),))
    assert hook.pre_step(log.pre(1, 1, cancelled=True), entering) is entering
    empty_continuation = Enter(())
    assert hook.pre_step(log.pre(1, 2, True, cancelled=True), empty_continuation) is empty_continuation
    empty = Enter(())
    assert hook.pre_step(log.pre(1, 1), empty) is empty
    assert hook.pre_step(log.pre(1, 3), empty) is empty
    assert clock.reads == 0


def test_empty_continuation_batch_gets_a_reading() -> None:
    log = Log()
    log.add("turn/start", {"turn": 1})
    decision = make().pre_step(log.pre(1, 2, continuation=True), Enter(()))
    assert isinstance(decision, Enter) and len(decision.messages) == 1


def test_reading_is_last_and_batch_untouched_clock_read_once() -> None:
    clock = Clock()
    log = Log()
    log.add("turn/start", {"turn": 1})
    first, second = U("a", "Europe/Berlin"), with_source({"kind": "plugin", "plugin": "x"})
    decision = make(clock).pre_step(log.pre(1, 1), Enter((first, second)))
    assert isinstance(decision, Enter)
    assert len(decision.messages) == 3
    assert decision.messages[0] is first and decision.messages[1] is second
    assert decision.messages[2] == reading_data(reading_text(decision))
    assert clock.reads == 1
    assert first == U("a", "Europe/Berlin")


def test_hook_reads_data_only_of_turn_start_and_user_message() -> None:
    log = Log(StrictEv)
    log.add("turn/start", {"turn": 1}, B - 5000)
    log.add("step/start", {"turn": 1, "step": 1}, B - 5000)
    log.msg(U("a", "Asia/Tokyo"), B - 5000)
    log.msg(reading_data("x"), B - 5000)
    log.add("request/header", {"header": {}, "reason": "initial"}, B - 4000)
    log.add("assistant/message", assistant_data(1, 1), B - 3000)
    log.add("tool/call", {"turn": 1, "step": 1}, B - 3000)
    log.add("tool/result", {"turn": 1, "step": 1}, B - 2000)
    log.add("step/end", {"turn": 1, "step": 1}, B - 2000)
    log.add("agent/inbox/spliced", {"target": "next-step"}, B - 2000)
    for interval in (None, 1):
        hook = make(refresh_interval_ms=interval)
        assert isinstance(hook.pre_step(log.pre(1, 2, continuation=True), Enter(())), Enter)
        assert isinstance(hook.pre_step(log.pre(1, 1), Enter((U("b"),))), Enter)


def test_one_instance_serves_sessions_independently() -> None:
    clock = Clock(B + 1000)
    hook = make(clock, refresh_interval_ms=60000)
    a, b = Log(), Log()
    a.add("turn/start", {"turn": 1})
    a.msg(reading_data("x"), B)
    b.add("turn/start", {"turn": 1})
    d = Enter((U("a"),))
    assert hook.pre_step(a.pre(1, 1), d) is d
    assert isinstance(hook.pre_step(b.pre(1, 1), d), Enter)


# --- time-context §14 worked examples E1-E4 through the hook -----------------------------------


def e1_log() -> Log:
    log = Log()
    log.add("turn/start", {"turn": 1}, B - 100000)
    log.add("step/start", {"turn": 1, "step": 1}, B - 100000)
    log.msg(U("r-1", "Europe/Berlin"), B - 100000)
    log.add("request/header", {"header": {}, "reason": "initial"}, B - 100000)
    log.add("assistant/message", assistant_data(1, 1), B - 89750)
    log.add("step/end", {"turn": 1, "step": 1}, B - 89750)
    log.add("turn/end", {"turn": 1, "reason": {"kind": "completed"}}, B - 89750)
    log.add("turn/start", {"turn": 2}, B)
    return log


E1_TEXT = (
    "Time sampled while preparing turn 2, step 1: 2026-02-10T13:00:00+01:00[Europe/Berlin]\n"
    "Client time zone for this request: Europe/Berlin. Interpret otherwise-unqualified dates and times in this zone.\n"
    "Elapsed since the preceding model-visible message: 1m 30s."
)
E2_TEXT = (
    "Time sampled while preparing turn 2, step 2: 2026-02-10T17:32:05+05:30[Asia/Kolkata]\n"
    'Client time zone for this request: mixed ["America/Sao_Paulo","Europe/Berlin"]. Ask the user to clarify otherwise-unqualified dates and times.\n'
    "Elapsed since the preceding step context: 2m 4s."
)


def test_e1_and_e2() -> None:
    clock = Clock(B + 400)
    hook = make(clock, time_zone="Asia/Calcutta")
    assert hook.fallback_zone == "Asia/Kolkata"
    log = e1_log()
    batch = (U("r-2", "Europe/Berlin"),)
    decision = hook.pre_step(log.pre(2, 1), Enter(batch))
    assert reading_text(decision) == E1_TEXT
    # the host logs step/start, the prompt and the reading (at B+412), then a tool round
    log.add("step/start", {"turn": 2, "step": 1}, B + 412)
    for message in decision.messages:  # type: ignore[union-attr]
        log.msg(dict(message), B + 412)
    log.add("request/header", {"header": {}, "reason": "initial"}, B + 412)
    log.add("assistant/message", assistant_data(2, 1), B + 60000)
    log.add("tool/call", {"turn": 2, "step": 1}, B + 60000)
    log.add("tool/result", {"turn": 2, "step": 1}, B + 124900)
    log.add("step/end", {"turn": 2, "step": 1}, B + 124900)
    clock.now = B + 125000
    decision = hook.pre_step(log.pre(2, 2, continuation=True),
                             Enter((U("r-3", "America/Sao_Paulo"),)))
    assert reading_text(decision) == E2_TEXT
    assert clock.reads == 2
    # what the hook wrote passes the validator
    log.add("step/start", {"turn": 2, "step": 2}, B + 125003)
    for message in decision.messages:  # type: ignore[union-attr]
        log.msg(dict(message), B + 125003)
    report = validate_readings(log.events, canonicalize_time_zone)
    assert report == ReadingReport(checked=2, skipped_foreign=0, violations=())


def test_e3_fresh_session_process_fallback(tmp_path: Path) -> None:
    localtime = tmp_path / "localtime"
    os.symlink("/usr/share/zoneinfo/Australia/Adelaide", localtime)
    hook = TimeContext(Clock(B), canonicalize=canonicalize_time_zone, environ={},
                       localtime_path=str(localtime))
    assert hook.fallback_zone == "Australia/Adelaide"
    log = Log()
    log.add("turn/start", {"turn": 1}, B)
    decision = hook.pre_step(log.pre(1, 1), Enter((U("rpc-1"),)))
    assert reading_text(decision) == (
        "Time sampled while preparing turn 1, step 1: 2026-02-10T22:30:00+10:30[Australia/Adelaide]\n"
        "Client time zone for this request: unavailable. Ask the user to clarify otherwise-unqualified dates and times.\n"
        "Elapsed since the preceding model-visible message: unavailable."
    )


def e4_log() -> Log:
    log = Log()
    log.add("turn/start", {"turn": 4}, B - 1000)
    log.add("step/start", {"turn": 4, "step": 1}, B)
    log.msg(U("r-4"), B)
    log.msg(reading_data("turn 4, step 1 reading"), B)
    log.add("request/header", {"header": {}, "reason": "initial"}, B)
    log.add("assistant/message", assistant_data(4, 1), B + 1000)
    log.add("tool/result", {"turn": 4, "step": 1}, B + 2000)
    log.add("step/end", {"turn": 4, "step": 1}, B + 2000)
    return log


def test_e4_interval_gate() -> None:
    clock = Clock()
    hook = make(clock, refresh_interval_ms=300000)
    log = e4_log()
    empty = Enter(())
    clock.now = B + 299999
    assert hook.pre_step(log.pre(4, 2, continuation=True), empty) is empty
    clock.now = B + 300000
    assert reading_text(hook.pre_step(log.pre(4, 2, continuation=True), empty)) == (
        "Time sampled while preparing turn 4, step 2: 2026-02-10T12:05:00+00:00[UTC]\n"
        + MISSING + "\nElapsed since the preceding step context: 5m 0s.")
    clock.now = B - 2000
    assert reading_text(hook.pre_step(log.pre(4, 2, continuation=True), empty)) == (
        "Time sampled while preparing turn 4, step 2: 2026-02-10T11:59:58+00:00[UTC]\n"
        + MISSING + "\nElapsed since the preceding step context: 0s.")
    assert clock.reads == 3


def test_gate_skip_validates_nothing() -> None:
    clock = Clock(B + 10)
    hook = make(clock, refresh_interval_ms=300000)
    log = e4_log()
    bad = Enter((U("r-5", "utc"),))
    assert hook.pre_step(log.pre(4, 2, continuation=True), bad) is bad
    clock.now = B + 300000
    with pytest.raises(ClientZoneError):
        hook.pre_step(log.pre(4, 2, continuation=True), bad)


@pytest.mark.parametrize(
    ("where", "reading_time", "now", "skips"),
    [
        ("earlier turn", B, B + 59999, True),
        ("earlier turn", B, B + 60000, False),
        ("earlier turn", B, B - 1, False),
        ("seeded", B, B, True),
        ("none", None, B, False),
    ],
)
def test_gate_looks_at_the_whole_log(where: str, reading_time: int | None, now: int,
                                     skips: bool) -> None:
    log = Log()
    if where == "seeded":
        log.add("turn/start", {"turn": 1}, B)
        log.msg(reading_data("browser reading\nBrowser time zone for this request: x\nz"), B)
        log.add("session/end-seed", {}, B)
    elif where == "earlier turn":
        log.add("turn/start", {"turn": 1}, B)
        log.msg(reading_data("x"), reading_time)
        log.add("turn/end", {"turn": 1, "reason": {"kind": "completed"}}, B)
        log.msg(with_source({"kind": "plugin", "plugin": "other"}), B)
    log.add("turn/start", {"turn": 2}, B)
    decision = Enter((U("a"),))
    result = make(Clock(now), refresh_interval_ms=60000).pre_step(log.pre(2, 1), decision)
    assert (result is decision) == skips
    # with interval 0 every eligible step gets a reading
    assert isinstance(make(Clock(now)).pre_step(log.pre(2, 1), decision), Enter)
    assert len(make(Clock(now)).pre_step(log.pre(2, 1), decision).messages) == 2  # type: ignore[union-attr]


# --- time-context §7.1, time-context §7.3 through the hook --------------------------------------


def policy_of(log: Log, turn: int, step: int, batch: tuple[Any, ...],
              continuation: bool = False) -> str:
    decision = make().pre_step(log.pre(turn, step, continuation), Enter(batch))
    return reading_text(decision).split("\n")[1]


def test_batch_counts_and_earlier_turns_do_not() -> None:
    log = Log()
    log.add("turn/start", {"turn": 1})
    log.msg(U("a", "Asia/Tokyo"))
    log.add("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    log.add("turn/start", {"turn": 2})
    assert policy_of(log, 2, 1, (U("b", "Europe/Berlin"),)) == UNIQUE.format("Europe/Berlin")
    assert policy_of(log, 2, 1, (U("b"),)) == MISSING


def test_open_turn_is_after_the_last_int_turn_start_of_pre_turn() -> None:
    log = Log()
    log.add("turn/start", {"turn": 1})
    log.msg(U("a", "Asia/Tokyo"))
    log.add("turn/start", {"turn": True})  # a bool is not the int 1
    log.msg(U("b", "UTC"))
    log.add("turn/start", {"turn": 1.0})  # a float is not an int
    log.add("agent/inbox/spliced", {"target": "next-step", "start": 0,
                                    "inserted": [U("c", "Europe/Paris")]})
    assert policy_of(log, 1, 2, (), continuation=True) == MIXED.format('["Asia/Tokyo","UTC"]')
    # the last matching turn/start wins: earlier messages of a repeated number do not count
    log.add("turn/start", {"turn": 1})
    log.msg(U("d", "Europe/Berlin"))
    assert policy_of(log, 1, 2, (), continuation=True) == UNIQUE.format("Europe/Berlin")


def test_no_matching_turn_start_means_only_the_batch_counts() -> None:
    log = Log()
    log.add("turn/start", {"turn": 1})
    log.msg(U("a", "Asia/Tokyo"))
    assert policy_of(log, 2, 1, (U("b", "UTC"),)) == UNIQUE.format("UTC")


def test_steering_makes_later_readings_mixed_and_hidden_messages_count() -> None:
    log = Log()
    log.add("turn/start", {"turn": 1})
    log.add("step/start", {"turn": 1, "step": 1})
    log.msg(U("a", "Europe/Berlin"))
    log.msg(with_source({"kind": "plugin", "plugin": "compaction"}))  # e.g. a summary replacing it
    assert policy_of(log, 1, 2, (), True) == UNIQUE.format("Europe/Berlin")
    assert policy_of(log, 1, 2, (U("b", "America/Sao_Paulo"),), True) == MIXED.format(
        '["America/Sao_Paulo","Europe/Berlin"]')


def test_bad_zone_in_the_log_raises_client_zone_error() -> None:
    log = Log()
    log.add("turn/start", {"turn": 1})
    log.msg(U("a", "Asia/Calcutta"))
    with pytest.raises(ClientZoneError) as caught:
        make().pre_step(log.pre(1, 2, True), Enter((U("b", "Europe/Berlin"),)))
    assert str(caught.value) == 'client time zone must be canonical: "Asia/Calcutta"'


def test_display_zone_unique_versus_fallback() -> None:
    log = Log()
    log.add("turn/start", {"turn": 1})
    hook = make(time_zone="Europe/Kiev")
    assert hook.fallback_zone == "Europe/Kyiv"
    first = reading_text(hook.pre_step(log.pre(1, 1), Enter((U("a", "Asia/Tokyo"),))))
    assert first.startswith("Time sampled while preparing turn 1, step 1: "
                            "2026-02-10T21:00:00+09:00[Asia/Tokyo]\n")
    mixed = reading_text(hook.pre_step(log.pre(1, 1), Enter((U("a", "Asia/Tokyo"),
                                                             U("b", "UTC")))))
    assert mixed.startswith("Time sampled while preparing turn 1, step 1: "
                            "2026-02-10T14:00:00+02:00[Europe/Kyiv]\n")


# --- time-context §9: baselines -----------------------------------------------------------------


def elapsed_of(log: Log, turn: int, step: int, now: int) -> str:
    decision = make(Clock(now)).pre_step(log.pre(turn, step, step > 1), Enter((U("z"),)))
    return reading_text(decision).split("\n")[2]


def test_step1_baseline_is_the_latest_message_of_any_kind() -> None:
    log = Log()
    log.add("turn/start", {"turn": 1}, B)
    assert elapsed_of(log, 1, 1, B) == "Elapsed since the preceding model-visible message: unavailable."
    log.msg(with_source({"kind": "plugin", "plugin": "summary"}), B + 1000)
    assert elapsed_of(log, 1, 1, B + 5000) == "Elapsed since the preceding model-visible message: 4s."
    log.add("assistant/message", assistant_data(1, 1), B + 2000)
    log.add("tool/result", {"turn": 1, "step": 1}, B + 3000)
    log.add("step/end", {"turn": 1, "step": 1}, B + 4000)
    log.add("turn/end", {"turn": 1, "reason": {"kind": "completed"}}, B + 4000)
    log.add("agent/inbox/spliced", {"target": "next-turn"}, B + 4500)
    log.add("turn/start", {"turn": 2}, B + 4500)
    assert elapsed_of(log, 2, 1, B + 5000) == "Elapsed since the preceding model-visible message: 2s."
    log.msg(reading_data("old"), B + 4900)
    assert elapsed_of(log, 2, 1, B + 5000) == "Elapsed since the preceding model-visible message: 0s."


def test_later_step_baseline_is_the_latest_reading_of_the_turn() -> None:
    log = Log()
    log.add("turn/start", {"turn": 1}, B - 10000)
    log.msg(reading_data("turn 1"), B - 9000)
    log.add("turn/end", {"turn": 1, "reason": {"kind": "completed"}}, B - 9000)
    log.add("turn/start", {"turn": 2}, B)
    log.msg(U("a"), B)
    log.add("assistant/message", assistant_data(2, 1), B + 500)
    # no reading yet in turn 2 (e.g. the gate skipped it): the turn/start stops the walk
    assert elapsed_of(log, 2, 2, B + 7000) == "Elapsed since the preceding step context: unavailable."
    log.msg(reading_data("turn 2 step 1"), B + 1000)
    log.add("tool/result", {"turn": 2, "step": 1}, B + 6000)
    assert elapsed_of(log, 2, 2, B + 7000) == "Elapsed since the preceding step context: 6s."
    log.msg(reading_data("turn 2 step 2"), B + 8000)
    assert elapsed_of(log, 2, 3, B + 9000) == "Elapsed since the preceding step context: 1s."


def test_later_step_walk_crosses_other_turns_starts() -> None:
    log = Log()
    log.add("turn/start", {"turn": 1}, B)
    log.msg(reading_data("x"), B)
    log.add("turn/start", {"turn": 2}, B)
    assert elapsed_of(log, 5, 2, B + 3000) == "Elapsed since the preceding step context: 3s."
    empty = Log()
    assert elapsed_of(empty, 5, 2, B) == "Elapsed since the preceding step context: unavailable."


# --- time-context §8.2, time-context §8.3, time-context §10: construction -----------------------


@pytest.mark.parametrize(
    ("value", "stored"),
    [(None, 0), (0, 0), (60000.0, 60000), (300000, 300000), (MAX_SAFE, MAX_SAFE),
     (float(MAX_SAFE), MAX_SAFE), (-0.0, 0)],
)
def test_accepted_intervals(value: object, stored: int) -> None:
    hook = make(refresh_interval_ms=value)
    assert hook.refresh_interval_ms == stored and type(hook.refresh_interval_ms) is int


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (-250, "-250"), (2.5, "2.5"), (True, "true"), (False, "false"),
        (float("-inf"), "-Infinity"), (float("inf"), "Infinity"), (float("nan"), "NaN"),
        (MAX_SAFE + 1, "9007199254740992"), (2.0**53, "9007199254740992"),
        (-1.0, "-1"), (1e20, "100000000000000000000"), (1e21, "1e+21"), (-1.5e300, "-1.5e+300"),
        (0.1, "0.1"), ("60000", "60000"), ("", ""), ([1], "[1]"),
    ],
)
def test_e10_refused_intervals(value: object, text: str) -> None:
    with pytest.raises(TimeContextConfigError) as caught:
        make(refresh_interval_ms=value)
    assert str(caught.value) == INTERVAL + text


def test_interval_is_checked_first() -> None:
    with pytest.raises(TimeContextConfigError, match="refreshIntervalMs"):
        make(time_zone="utc", refresh_interval_ms=-1)
    with pytest.raises(TimeContextConfigError, match="refreshIntervalMs"):
        TimeContext(Clock(), canonicalize=canonicalize_time_zone, refresh_interval_ms=2.5,
                    environ={"TZ": "CET-1CEST"})


@pytest.mark.parametrize(
    ("value", "fallback"),
    [("UTC", "UTC"), ("Etc/UTC", "UTC"), ("Asia/Calcutta", "Asia/Kolkata"),
     ("US/Eastern", "America/New_York"), ("europe/oslo", "Europe/Oslo"), ("Etc/GMT+5", "Etc/GMT+5")],
)
def test_configured_zone_is_canonicalised_and_environment_ignored(value: str, fallback: str) -> None:
    hook = make(time_zone=value, environ={"TZ": "CET-1CEST"}, localtime_path="/nonexistent")
    assert hook.fallback_zone == fallback


@pytest.mark.parametrize(
    ("value", "quoted"),
    [("utc", '"utc"'), ("EST", '"EST"'), ("GMT", '"GMT"'), ("Mars/Olympus", '"Mars/Olympus"'),
     ("", '""'), ("Asia/Shanghai\n", '"Asia/Shanghai\\n"'), ("Europe/Zürich", '"Europe/Zürich"'),
     (5, "5"), (True, "true"), (["UTC"], '["UTC"]'), (float("nan"), "NaN"),
     (b"UTC", json.dumps("b'UTC'"))],
)
def test_refused_configured_zone(value: object, quoted: str) -> None:
    with pytest.raises(TimeContextConfigError) as caught:
        make(time_zone=value)
    assert str(caught.value) == f"time-context: invalid IANA timeZone {quoted}"


@pytest.mark.parametrize("value", ["Mars/Olympus", "utc", "EST", "posix/Europe/Paris"])
def test_refused_configured_string_is_raised_from_the_canonicaliser_error(value: str) -> None:
    with pytest.raises(TimeContextConfigError) as caught:
        make(time_zone=value)
    assert caught.value.__cause__ is not None
    with pytest.raises(type(caught.value.__cause__)):
        canonicalize_time_zone(value)


# --- time-context §8.2 process zone, E7 ---------------------------------------------------------


def zoneinfo_tree(root: Path, *names: str) -> Path:
    """``root/zoneinfo/<name>`` files, as a system zone directory has."""
    for name in names:
        path = root / "zoneinfo" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"TZif")
    return root / "zoneinfo"


def link(tmp_path: Path, target: str | Path) -> str:
    path = tmp_path / "localtime"
    os.symlink(target, path)
    return str(path)


@pytest.mark.parametrize(
    ("tz", "zone"),
    [
        (":Asia/Calcutta", "Asia/Kolkata"),
        ("", "UTC"),
        ("/usr/share/zoneinfo/posix/Europe/Paris", "Europe/Paris"),
        ("Asia/Tokyo", "Asia/Tokyo"),
        ("UTC", "UTC"),
        ("Etc/Universal", "UTC"),
        (":/usr/share/zoneinfo/right/Asia/Calcutta", "Asia/Kolkata"),
        ("/opt/zoneinfo/x/zoneinfo/Europe/Berlin", "Europe/Berlin"),
    ],
)
def test_e7_tz(tz: str, zone: str, tmp_path: Path) -> None:
    localtime = link(tmp_path, "/usr/share/zoneinfo/Asia/Tokyo")  # TZ wins over the link
    assert process_zone({"TZ": tz}, localtime, canonicalize_time_zone) == zone
    assert sampled_zone({"TZ": tz}, localtime, canonicalize_time_zone) == zone


@pytest.mark.parametrize(
    "tz", ["CET-1CEST", "EST5EDT", "Japan", "GMT", ":", "::Asia/Tokyo", "Mars/Olympus",
           "asia/calcutta ", "/usr/share/zoneinfo/Nowhere/Zone", "/usr/lib/Europe/Paris",
           "/usr/share/zoneinfo/"],
)
def test_tz_that_names_no_zone_fails(tz: str, tmp_path: Path) -> None:
    localtime = link(tmp_path, "/usr/share/zoneinfo/Asia/Tokyo")  # no fallback to the link
    with pytest.raises(TimeContextConfigError) as caught:
        process_zone({"TZ": tz}, localtime, canonicalize_time_zone)
    assert str(caught.value) == SYSTEM_ZONE
    assert sampled_zone({"TZ": tz}, localtime, canonicalize_time_zone) is None
    with pytest.raises(TimeContextConfigError) as caught:
        TimeContext(Clock(), canonicalize=canonicalize_time_zone, environ={"TZ": tz},
                    localtime_path=localtime)
    assert str(caught.value) == SYSTEM_ZONE


def test_e7_localtime_link_to_etc_utc(tmp_path: Path) -> None:
    localtime = link(tmp_path, zoneinfo_tree(tmp_path / "share", "Etc/UTC") / "Etc/UTC")
    assert process_zone({}, localtime, canonicalize_time_zone) == "UTC"
    assert sampled_zone({}, localtime, canonicalize_time_zone) == "UTC"


@pytest.mark.parametrize(
    ("target", "zone"),
    [
        ("zoneinfo/Asia/Calcutta", "Asia/Kolkata"),
        ("zoneinfo/posix/Europe/Paris", "Europe/Paris"),
        ("zoneinfo/right/UTC", "UTC"),
        ("zoneinfo/a/zoneinfo/America/New_York", "America/New_York"),
    ],
)
def test_localtime_link_names_the_zone(target: str, zone: str, tmp_path: Path) -> None:
    localtime = link(tmp_path, tmp_path / "share" / target)
    assert process_zone({}, localtime, canonicalize_time_zone) == zone
    assert sampled_zone({}, localtime, canonicalize_time_zone) == zone


def test_localtime_uses_the_real_path(tmp_path: Path) -> None:
    # a chain of links is followed to the end; the name comes from the final path
    zoneinfo_tree(tmp_path / "share", "Europe/Paris", "Asia/Tokyo")
    os.symlink(tmp_path / "share/zoneinfo/Asia/Tokyo", tmp_path / "middle")
    assert process_zone({}, link(tmp_path, tmp_path / "middle"), canonicalize_time_zone) == "Asia/Tokyo"
    # a zoneinfo component that is itself a link does not survive realpath
    (tmp_path / "b").mkdir()
    real = tmp_path / "tzfiles" / "Europe"
    real.mkdir(parents=True)
    (real / "Paris").write_bytes(b"TZif")
    os.symlink(tmp_path / "tzfiles", tmp_path / "b" / "zoneinfo")
    other = tmp_path / "other"
    other.mkdir()
    assert process_zone({}, link(other, tmp_path / "b/zoneinfo/Europe/Paris"),
                        canonicalize_time_zone) == "UTC"


@pytest.mark.parametrize("kind", ["missing", "file", "no zoneinfo", "unknown", "bad shape"])
def test_rule4_defaults_to_utc_and_sampled_zone_is_none(kind: str, tmp_path: Path) -> None:
    if kind == "missing":
        localtime = str(tmp_path / "absent")
    elif kind == "file":
        localtime = str(zoneinfo_tree(tmp_path, "Europe/Paris") / "Europe/Paris")
    elif kind == "no zoneinfo":
        localtime = link(tmp_path, "/usr/share/tz/Europe/Paris")
    elif kind == "unknown":
        localtime = link(tmp_path, "/usr/share/zoneinfo/Mars/Olympus")
    else:
        localtime = link(tmp_path, "/usr/share/zoneinfo/EST")
    assert process_zone({}, localtime, canonicalize_time_zone) == "UTC"
    assert sampled_zone({}, localtime, canonicalize_time_zone) is None
    hook = TimeContext(Clock(), canonicalize=canonicalize_time_zone, environ={},
                       localtime_path=localtime)
    assert hook.fallback_zone == "UTC"


def test_process_zone_is_resolved_once(tmp_path: Path) -> None:
    environ = {"TZ": "Asia/Tokyo"}
    hook = TimeContext(Clock(), canonicalize=canonicalize_time_zone, environ=environ)
    environ["TZ"] = "Europe/Berlin"
    assert hook.fallback_zone == "Asia/Tokyo"
    localtime = link(tmp_path, "/usr/share/zoneinfo/Europe/Paris")
    hook = TimeContext(Clock(), canonicalize=canonicalize_time_zone, environ={},
                       localtime_path=localtime)
    os.remove(localtime)
    os.symlink("/usr/share/zoneinfo/Asia/Tokyo", localtime)
    assert hook.fallback_zone == "Europe/Paris"
    log = Log()
    log.add("turn/start", {"turn": 1})
    assert "[Europe/Paris]" in reading_text(hook.pre_step(log.pre(1, 1), Enter((U("a"),))))


def test_default_environ_is_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", ":Asia/Calcutta")
    assert TimeContext(Clock(), canonicalize=canonicalize_time_zone).fallback_zone == "Asia/Kolkata"
    monkeypatch.setenv("TZ", "CET-1CEST")
    with pytest.raises(TimeContextConfigError, match=f"^{SYSTEM_ZONE}$"):
        TimeContext(Clock(), canonicalize=canonicalize_time_zone)


# --- time-context §13: replay validator ---------------------------------------------------------

OK_TEXT = (
    "Time sampled while preparing turn 1, step 1: 2026-02-10T12:00:00+00:00[UTC]\n"
    + MISSING + "\n"
    "Elapsed since the preceding model-visible message: unavailable."
)


def e9_prefix() -> Log:
    log = Log()
    log.add("turn/start", {"turn": 1}, B)
    log.add("step/start", {"turn": 1, "step": 1}, B)
    log.msg(U("x"), B)
    return log


def reading_event(data: Any, time: Any = B + 5, seq: int = 99) -> Ev:
    return Ev(seq, "user/message", time, json.dumps(data, ensure_ascii=False))


def violation(prefix: Log, data: Any, time: Any = B + 5) -> str | None:
    """check_reading's message, cross-checked against validate_readings."""
    event = reading_event(data, time, len(prefix.events))
    try:
        check_reading(prefix.events, event, canonicalize_time_zone)
        direct = None
    except (ReadingInvariantError, ClientZoneError) as exc:
        direct = str(exc)
    report = validate_readings(prefix.events + [event], canonicalize_time_zone)
    if direct is None:
        assert report.violations == ()
    else:
        assert report.violations[-1] == ReadingViolation(event.seq, direct)
    return direct


def test_e9_position() -> None:
    log = e9_prefix()
    assert violation(log, reading_data(OK_TEXT)) is None
    log.add("request/header", {"header": {}, "reason": "initial"}, B)
    assert violation(log, reading_data(OK_TEXT)) == "time-context reading must precede request/header"
    with pytest.raises(ReadingInvariantError) as caught:
        check_reading(log.events, reading_event(reading_data(OK_TEXT)), canonicalize_time_zone)
    assert str(caught.value) == "time-context reading must precede request/header"


@pytest.mark.parametrize(
    "content",
    [
        [], [{"type": "text", "text": OK_TEXT}] * 2, "text", None,
        [{"type": "text", "text": OK_TEXT, "extra": 1}], [{"type": "image", "text": OK_TEXT}],
        [{"type": "text", "text": 5}], [{"text": OK_TEXT}], [OK_TEXT],
    ],
)
def test_check1_one_text_block(content: Any) -> None:
    data = reading_data(OK_TEXT)
    data["content"] = content
    assert violation(e9_prefix(), data) == "time-context messages must contain exactly one text block"


@pytest.mark.parametrize(
    "text",
    [
        OK_TEXT + "\n",
        OK_TEXT.replace("+00:00[UTC]", "Z[UTC]"),
        OK_TEXT.replace("12:00:00+", "12:00:00.000+"),
        OK_TEXT.replace("+00:00[UTC]", "+0000[UTC]"),
        OK_TEXT.replace("[UTC]", "[]"),
        OK_TEXT.replace("[UTC]", ""),
        OK_TEXT.replace("unavailable.", "unavailable"),
        OK_TEXT.replace(": unavailable.", ": 1h 2d 0s."),
        OK_TEXT.replace(": unavailable.", ": 5m."),
        OK_TEXT.replace("turn 1", "turn ١"),
        OK_TEXT.replace("model-visible message", "model-visible messages"),
    ],
)
def test_check2_format(text: str) -> None:
    assert violation(e9_prefix(), reading_data(text)) == (
        "time-context message does not match the durable reading format")


def test_browser_wording_is_skipped_by_validate_but_not_by_check_reading() -> None:
    text = OK_TEXT.replace("Client time zone", "Browser time zone")
    event = reading_event(reading_data(text), B + 5, 3)
    with pytest.raises(ReadingInvariantError) as caught:
        check_reading(e9_prefix().events, event, canonicalize_time_zone)
    assert str(caught.value) == "time-context message does not match the durable reading format"
    report = validate_readings(e9_prefix().events + [event], canonicalize_time_zone)
    assert report == ReadingReport(checked=0, skipped_foreign=1, violations=())


@pytest.mark.parametrize(("turn", "step"), [("0", "1"), ("1", "0"), ("1", "9007199254740992"),
                                            ("99999999999999999999", "1"), ("000", "1")])
def test_check3_safe_turn_and_step(turn: str, step: str) -> None:
    text = OK_TEXT.replace("turn 1, step 1", f"turn {turn}, step {step}")
    assert violation(e9_prefix(), reading_data(text)) == (
        "time-context turn and step must be positive safe integers")


def test_check3_largest_safe_values_pass() -> None:
    n = str(MAX_SAFE)
    log = Log()
    log.add("turn/start", {"turn": MAX_SAFE}, B)
    log.add("step/start", {"turn": MAX_SAFE, "step": MAX_SAFE}, B)
    text = OK_TEXT.replace("turn 1, step 1", f"turn {n}, step {n}").replace(
        "model-visible message", "step context")
    assert violation(log, reading_data(text)) is None


def test_check4_position_fold() -> None:
    data = reading_data(OK_TEXT)
    log = Log()
    assert violation(log, data) == "time-context reading must be appended inside an open turn"
    log.add("turn/start", {"turn": 1}, B)
    assert violation(log, data) == "time-context reading must follow step/start"
    log.add("step/start", {"turn": 1, "step": 1}, B)
    assert violation(log, data) is None
    log.add("request/header", {"header": {}, "reason": "initial"}, B)
    assert violation(log, data) == "time-context reading must precede request/header"
    log.add("step/end", {"turn": 1, "step": 1}, B)
    assert violation(log, data) == "time-context reading must follow step/start"
    log.add("step/start", {"turn": 1, "step": 2}, B)
    assert violation(log, data) == (
        "time-context reading names turn 1/step 1, expected turn 1/step 2")
    log.add("turn/end", {"turn": 1, "reason": {"kind": "completed"}}, B)
    assert violation(log, data) == "time-context reading must be appended inside an open turn"
    log.add("turn/start", {"turn": 2}, B)
    assert violation(log, data) == "time-context reading must follow step/start"
    log.add("step/start", {"turn": 2, "step": 1}, B)
    assert violation(log, data) == (
        "time-context reading names turn 1/step 1, expected turn 2/step 1")
    # a request flag from the previous step is cleared by step/start; turn/start clears all
    log.add("request/header", {"header": {}, "reason": "initial"}, B)
    log.add("step/start", {"turn": 2, "step": 1}, B)
    log.add("turn/start", {"turn": 1}, B)
    log.add("step/start", {"turn": 1, "step": 1}, B)
    assert violation(log, data) is None


@pytest.mark.parametrize(
    "change",
    [
        lambda s: s.update(zone="UTC"),
        lambda s: s.update(form="notice"),
        lambda s: s.pop("form"),
        lambda s: s.update(sections=[]),
        lambda s: s.update(sections=s["sections"] * 2),
        lambda s: s.update(sections={"name": "time-context", "text": OK_TEXT}),
        lambda s: s["sections"][0].update(name="other"),
        lambda s: s["sections"][0].update(text=OK_TEXT + " "),
        lambda s: s["sections"][0].update(authority="request"),
        lambda s: s["sections"][0].pop("name"),
    ],
)
def test_check5_exact_source(change: Callable[[dict[str, Any]], Any]) -> None:
    data = reading_data(OK_TEXT)
    change(data["source"])
    assert violation(e9_prefix(), data) == (
        "time-context source must carry only the exact snapshot text, not request authority")


def test_check6_policy_rederived_from_open_turn() -> None:
    log = Log()
    log.add("turn/start", {"turn": 1}, B)
    log.add("step/start", {"turn": 1, "step": 1}, B)
    log.msg(U("x", "Europe/Berlin"), B)
    # OK_TEXT says unavailable
    assert violation(log, reading_data(OK_TEXT)) == (
        "time-context client-zone text does not match current-turn user messages")
    berlin = OK_TEXT.replace(MISSING, UNIQUE.format("Europe/Berlin")).replace(
        "12:00:00+00:00[UTC]", "13:00:00+01:00[Europe/Berlin]")
    assert violation(log, reading_data(berlin)) is None
    # zones of earlier turns do not count
    earlier = Log()
    earlier.add("turn/start", {"turn": 1}, B)
    earlier.msg(U("x", "Europe/Berlin"), B)
    earlier.add("turn/end", {"turn": 1, "reason": {"kind": "completed"}}, B)
    earlier.add("turn/start", {"turn": 2}, B)
    earlier.add("step/start", {"turn": 2, "step": 1}, B)
    text = OK_TEXT.replace("turn 1, step 1", "turn 2, step 1")
    assert violation(earlier, reading_data(text)) is None


def test_check6_client_zone_error_is_raised_and_recorded() -> None:
    log = Log()
    log.add("turn/start", {"turn": 1}, B)
    log.add("step/start", {"turn": 1, "step": 1}, B)
    log.msg(U("x", "Etc/UTC"), B)
    event = reading_event(reading_data(OK_TEXT), B + 5, 3)
    with pytest.raises(ClientZoneError) as caught:
        check_reading(log.events, event, canonicalize_time_zone)
    assert str(caught.value) == 'client time zone must be canonical: "Etc/UTC"'
    report = validate_readings(log.events + [event], canonicalize_time_zone)
    assert report == ReadingReport(1, 0, (ReadingViolation(3, 'client time zone must be canonical: "Etc/UTC"'),))


def test_check7_baseline_phrase() -> None:
    text = OK_TEXT.replace("model-visible message", "step context")
    assert violation(e9_prefix(), reading_data(text)) == (
        'time-context step 1 uses the wrong elapsed-time baseline "step context"')
    log = Log()
    log.add("turn/start", {"turn": 1}, B)
    log.add("step/start", {"turn": 1, "step": 2}, B)
    text = OK_TEXT.replace("step 1", "step 2")
    assert violation(log, reading_data(text)) == (
        'time-context step 2 uses the wrong elapsed-time baseline "model-visible message"')


@pytest.mark.parametrize(
    ("stamp", "time"),
    [
        ("2026-13-10T12:00:00+00:00", B + 5),  # does not parse
        ("2026-02-30T12:00:00+00:00", B + 5),
        ("0000-01-01T00:00:00+00:00", B + 5),
        ("2026-02-10T24:00:00+00:00", B + 5),
        ("2026-02-10T12:00:00+00:00", B - 1),  # postdates its event
        ("2026-02-10T12:00:01+00:00", B + 999),
        ("2026-02-10T12:00:00+00:00", True),  # not an int
        ("2026-02-10T12:00:00+00:00", float(B + 5)),
        ("2026-02-10T12:00:00+00:00", MAX_SAFE + 1),
    ],
)
def test_check8_timestamp_parses_and_does_not_postdate(stamp: str, time: Any) -> None:
    text = OK_TEXT.replace("2026-02-10T12:00:00+00:00", stamp)
    assert violation(e9_prefix(), reading_data(text), time) == (
        "time-context rendered timestamp must parse and not postdate its durable event")


def test_check8_boundaries_pass() -> None:
    assert violation(e9_prefix(), reading_data(OK_TEXT), B) is None
    later = OK_TEXT.replace("12:00:00+00:00", "11:00:00-01:00")  # same instant, bracket unchecked
    assert violation(e9_prefix(), reading_data(later), B) is None
    assert violation(e9_prefix(), reading_data(OK_TEXT), MAX_SAFE) is None  # no upper bound


def unique_prefix(zone: str) -> Log:
    log = Log()
    log.add("turn/start", {"turn": 1}, B)
    log.add("step/start", {"turn": 1, "step": 1}, B)
    log.msg(U("x", zone), B)
    return log


def test_check9_unique_zone_bracket() -> None:
    policy = UNIQUE.format("Europe/Berlin")
    good = OK_TEXT.replace(MISSING, policy).replace("12:00:00+00:00[UTC]",
                                                    "13:00:00+01:00[Europe/Berlin]")
    assert violation(unique_prefix("Europe/Berlin"), reading_data(good)) is None
    for wrong in ("12:00:00+00:00[UTC]", "14:00:00+02:00[Europe/Berlin]",
                  "13:00:00+01:00[Europe/Paris]", "13:00:00+01:00[europe/berlin]"):
        text = OK_TEXT.replace(MISSING, policy).replace("12:00:00+00:00[UTC]", wrong)
        assert violation(unique_prefix("Europe/Berlin"), reading_data(text)) == (
            "time-context rendered timestamp does not match the unique client zone")


def test_check9_offset_with_seconds_round_trips() -> None:
    text = (
        "Time sampled while preparing turn 1, step 1: 1900-01-01T08:05:43+08:05:43[Asia/Shanghai]\n"
        + UNIQUE.format("Asia/Shanghai") + "\n"
        "Elapsed since the preceding model-visible message: unavailable."
    )
    assert violation(unique_prefix("Asia/Shanghai"), reading_data(text), -2208988800000) is None
    assert violation(unique_prefix("Asia/Shanghai"), reading_data(text), -2208988800001) == (
        "time-context rendered timestamp must parse and not postdate its durable event")


def test_check9_formatter_failure() -> None:
    text = (
        "Time sampled while preparing turn 1, step 1: 0001-01-01T00:00:00+00:00[America/New_York]\n"
        + UNIQUE.format("America/New_York") + "\n"
        "Elapsed since the preceding model-visible message: unavailable."
    )
    message = violation(unique_prefix("America/New_York"), reading_data(text), 0)
    assert message is not None
    assert message.startswith(
        "time-context client zone cannot format its durable timestamp: ValueError: ")
    assert "\n" not in message


def test_mixed_and_missing_contexts_do_not_check_the_bracket() -> None:
    assert violation(e9_prefix(), reading_data(OK_TEXT.replace("[UTC]", "[Mars/Olympus]"))) is None
    log = Log()
    log.add("turn/start", {"turn": 1}, B)
    log.add("step/start", {"turn": 1, "step": 1}, B)
    log.msg(U("x", "Asia/Tokyo"), B)
    log.msg(U("y", "UTC"), B)
    text = OK_TEXT.replace(MISSING, MIXED.format('["Asia/Tokyo","UTC"]')).replace(
        "[UTC]", "[Somewhere/Else]")
    assert violation(log, reading_data(text)) is None


def test_elapsed_value_and_batch_position_are_not_checked() -> None:
    log = e9_prefix()
    log.msg(reading_data(OK_TEXT), B + 5)
    log.msg(U("late"), B + 5)
    text = OK_TEXT.replace("message: unavailable.", "message: 400d 23h 59m 59s.")
    assert violation(log, reading_data(text)) is None


def test_checks_run_in_order_first_failure_wins() -> None:
    # fails 4 (no turn), 5 (source), 6 (policy) and 7 (phrase): 4 wins
    data = reading_data(OK_TEXT.replace("model-visible message", "step context"))
    data["source"]["zone"] = "UTC"
    assert violation(Log(), data) == "time-context reading must be appended inside an open turn"
    # fails 5, 6, 7, 8: 5 wins
    log = unique_prefix("Europe/Berlin")
    assert violation(log, data, B - 5) == (
        "time-context source must carry only the exact snapshot text, not request authority")
    del data["source"]["zone"]
    assert violation(log, data, B - 5) == (
        "time-context client-zone text does not match current-turn user messages")
    # fails 7 and 8: 7 wins
    data = reading_data(OK_TEXT.replace("model-visible message", "step context"))
    assert violation(e9_prefix(), data, B - 5) == (
        'time-context step 1 uses the wrong elapsed-time baseline "step context"')
    # fails 1 and everything else: 1 wins
    data = reading_data("nonsense")
    data["content"] = []
    assert violation(Log(), data) == "time-context messages must contain exactly one text block"
    # fails 2 and 4: 2 wins
    assert violation(Log(), reading_data("nonsense")) == (
        "time-context message does not match the durable reading format")
    # fails 3 and 4: 3 wins
    assert violation(Log(), reading_data(OK_TEXT.replace("turn 1", "turn 0"))) == (
        "time-context turn and step must be positive safe integers")


def test_validate_readings_counts_and_skips_foreign() -> None:
    log = e9_prefix()
    log.msg(reading_data(OK_TEXT), B + 5)  # seq 3: fine
    foreign = ("Time sampled while preparing turn 1, step 1: whatever\n"
               "Browser time zone for this request: Europe/Berlin.\nElapsed: 1s.")
    log.msg(reading_data(foreign), B + 5)  # seq 4: skipped
    log.msg({**reading_data(foreign), "source": {"kind": "plugin", "plugin": "time-context"}}, B + 5)
    log.msg(with_source({"kind": "plugin", "plugin": "other"}), B + 5)  # not a reading
    log.msg({**reading_data(OK_TEXT), "content": []}, B + 5)  # seq 7: violation
    log.add("request/header", {"header": {}, "reason": "initial"}, B + 5)
    log.add("user/messages", reading_data(OK_TEXT), B + 5)  # not a user/message
    log.msg(reading_data(OK_TEXT), B + 5)  # seq 10: after the request
    report = validate_readings(log.events, canonicalize_time_zone)
    assert report == ReadingReport(
        checked=3,
        skipped_foreign=2,
        violations=(
            ReadingViolation(7, "time-context messages must contain exactly one text block"),
            ReadingViolation(10, "time-context reading must precede request/header"),
        ),
    )


def test_validator_never_writes_and_accepts_hook_output_across_turns() -> None:
    clock = Clock()
    hook = make(clock, time_zone="Asia/Calcutta")
    log = Log()
    zones = [("Europe/Berlin", None), (None, "America/Sao_Paulo"), ("UTC", "UTC")]
    now = B
    for turn, (first, steered) in enumerate(zones, start=1):
        log.add("turn/start", {"turn": turn}, now)
        for step in (1, 2, 3):
            clock.now = now
            batch: tuple[Any, ...] = ()
            if step == 1:
                batch = (U(f"p{turn}", first) if first else U(f"p{turn}"),)
            elif step == 2 and steered:
                batch = (U(f"s{turn}", steered),)
            decision = hook.pre_step(log.pre(turn, step, step > 1), Enter(batch))
            assert isinstance(decision, Enter)
            log.add("step/start", {"turn": turn, "step": step}, now + 3)
            for message in decision.messages:
                log.msg(dict(message), now + 3)
            log.add("request/header", {"header": {}, "reason": "initial"}, now + 3)
            log.add("assistant/message", assistant_data(turn, step), now + 40000)
            log.add("step/end", {"turn": turn, "step": step}, now + 40000)
            now += 3_700_000
        log.add("turn/end", {"turn": turn, "reason": {"kind": "completed"}}, now)
    before = [e.raw for e in log.events]
    report = validate_readings(log.events, canonicalize_time_zone)
    assert report == ReadingReport(checked=9, skipped_foreign=0, violations=())
    assert [e.raw for e in log.events] == before


# --- time-context §11, E8: the logged line through a real eventlog session ----------------------

E8_LINE = (
    '{"type":"user/message","seq":11,"time":1770724800412,"data":{"id":"msg-6","role":"user","source":{"kind":"plugin","plugin":"time-context","form":"snapshot","sections":[{"name":"time-context","text":"Time sampled while preparing turn 2, step 1: 2026-02-10T13:00:00+01:00[Europe/Berlin]\\nClient time zone for this request: Europe/Berlin. Interpret otherwise-unqualified dates and times in this zone.\\nElapsed since the preceding model-visible message: 1m 30s."}]},"content":[{"type":"text","text":"Time sampled while preparing turn 2, step 1: 2026-02-10T13:00:00+01:00[Europe/Berlin]\\nClient time zone for this request: Europe/Berlin. Interpret otherwise-unqualified dates and times in this zone.\\nElapsed since the preceding model-visible message: 1m 30s."}]},"surfaceOp":"append"}'
)


async def test_e8_logged_line(tmp_path: Path) -> None:
    clock = Clock(B - 100000)
    hook = make(clock, time_zone="Asia/Calcutta")
    store = SessionStore(tmp_path, clock=clock, write_delay_ms=0)
    async with store.create(id="e8") as session:
        session.append("turn/start", {"turn": 1})
        session.append("step/start", {"turn": 1, "step": 1})
        turn1 = (U("r-1", "Europe/Berlin"),)
        decision = hook.pre_step(PreStep(1, 1, session.events, False, False), Enter(turn1))
        assert isinstance(decision, Enter)
        for number, message in enumerate(decision.messages, start=1):
            session.append("user/message", {"id": f"msg-{number}", **message},
                           surface_op="append")
        session.append("request/header", {"header": {"config": {"provider": "scripted",
                                                                 "model": "m"}},
                                          "reason": "initial"})
        clock.now = B - 89750
        session.append("assistant/message", assistant_data(1, 1), surface_op="append")
        session.append("step/end", {"turn": 1, "step": 1})
        session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
        clock.now = B
        session.append("turn/start", {"turn": 2})
        clock.now = B + 400
        batch = (U("r-2", "Europe/Berlin"),)
        decision = hook.pre_step(PreStep(2, 1, session.events, False, False), Enter(batch))
        assert isinstance(decision, Enter)
        clock.now = B + 412
        session.append("step/start", {"turn": 2, "step": 1})
        session.append("user/message", {"id": "msg-5", **decision.messages[0]},
                       surface_op="append")
        # msg-6 is whatever id the host assigned to the reading
        event = session.append("user/message", {"id": "msg-6", **decision.messages[1]},
                               surface_op="append")
        assert event.seq == 11
        await session.flush()
        lines = session.path.read_bytes().decode("utf-8").split("\n")
        events = list(session.events)
    assert lines[12] == E8_LINE
    assert event.time >= B + 400
    assert validate_readings(events, canonicalize_time_zone) == ReadingReport(2, 0, ())


# --- time-context §12: the shared canonicaliser (schedule §5.4.1, schedule §13 E5; host §4.3.2) ---


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("UTC", "UTC"), ("Etc/Zulu", "UTC"), ("asia/calcutta", "Asia/Kolkata"),
        ("America/Fort_Wayne", "America/Indiana/Indianapolis"), ("Etc/GMT-14", "Etc/GMT-14"),
        ("Etc/UTC", "UTC"), ("Etc/GMT", "UTC"), ("asia/shanghai", "Asia/Shanghai"),
        ("Asia/Calcutta", "Asia/Kolkata"), ("US/Eastern", "America/New_York"),
        ("Europe/Kiev", "Europe/Kyiv"), ("Europe/Oslo", "Europe/Oslo"), ("Etc/GMT+5", "Etc/GMT+5"),
        ("Asia/Chongqing", "Asia/Shanghai"), ("Europe/Amsterdam", "Europe/Amsterdam"),
        ("Atlantic/Reykjavik", "Atlantic/Reykjavik"),
        ("Etc/UCT", "UTC"), ("Etc/Universal", "UTC"), ("Etc/GMT0", "UTC"), ("Etc/GMT+0", "UTC"),
        ("Etc/GMT-0", "UTC"), ("Etc/Greenwich", "UTC"), ("ETC/ZULU", "UTC"),
    ],
)
def test_canonicaliser_examples(name: str, canonical: str) -> None:
    assert canonicalize_time_zone(name) == canonical


@pytest.mark.parametrize(
    "name",
    ["utc", "EST", "Etc/GMT+13", "right/UTC", " Europe/Paris", "GMT", "Z", "+08:00",
     "Asia//Shanghai", "Asia/Shanghai\n", "Mars/Olympus", "", "PRC", "posix/Europe/Paris",
     "America/../Asia/Tokyo", "Japan", "Europe/Paris ", "Europe/Paris\u00a0", "/Europe/Paris",
     "Europe/", "Europe/Zürich"],
)
def test_canonicaliser_refusals(name: str) -> None:
    with pytest.raises(Exception) as caught:
        canonicalize_time_zone(name)
    assert str(caught.value) == "time_zone must be UTC or a valid IANA Area/Location name."
    assert getattr(caught.value, "code", None) == "invalid_time_zone"


@pytest.mark.parametrize("value", [None, 8])
def test_canonicaliser_refuses_non_strings(value: Any) -> None:
    with pytest.raises(ScheduleInputError):
        canonicalize_time_zone(value)


def assert_canonical(result: str) -> None:
    """The time-context §12 properties: idempotent, and the result passes time-context §7.2's three checks."""
    assert canonicalize_time_zone(result) == result
    assert result == "UTC" or ZONE_SHAPE.fullmatch(result)
    assert client_zones([U("r", result)], canonicalize_time_zone) == (result,)
    assert format_timestamp(B, result).endswith(f"[{result}]")


def test_every_available_zone_canonicalises_to_a_stable_name() -> None:
    accepted = 0
    for name in zoneinfo.available_timezones():
        try:
            result = canonicalize_time_zone(name)
        except ScheduleInputError:
            assert not ZONE_SHAPE.fullmatch(name), name
            continue
        accepted += 1
        assert_canonical(result)
        if name != "UTC":  # exactly `UTC` is the one case-sensitive name
            assert canonicalize_time_zone(name.lower()) == result
            assert canonicalize_time_zone(name.upper()) == result
    assert accepted > 500


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=30),
                 st.sampled_from(_ZONES).map(lambda z: z.swapcase()),
                 st.from_regex(r"[A-Za-z]{1,6}/[A-Za-z_+\-0-9]{1,8}", fullmatch=True)))
def test_canonicaliser_results_are_always_canonical(name: str) -> None:
    try:
        result = canonicalize_time_zone(name)
    except ScheduleInputError:
        return
    assert_canonical(result)
