"""The hand-written logs in ``fixtures/`` checked byte for byte against the documented formats.

Expected bytes come from the worked examples of log-format §12 (E1, E2, E5, E6, E9),
schedule §3 and time-context §4, time-context §11 and time-context §13, written out here by hand;
nothing below is produced by the code under test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from eventlog import read_log
from tests.eventlog.spec_examples import E1_LINES, E5_CLOSERS, E5_LINES, E9_EVENTS, E9_ROW

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
TYPE_RE = re.compile(r"[a-z0-9][a-z0-9-]*(/[a-z0-9][a-z0-9-]*)+")
HEADER_ORDER = [
    "type", "version", "id", "createdAt", "cwd", "parentSession", "seedLength", "origin",
    "delegationDepth", "agentPreset", "owner",
]
EVENT_ORDER = ["type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable"]
ROW_TAGS = {"text-chunks", "reasoning-chunks", "tool-call-chunks"}
SURFACE_TYPES = {"user/message", "assistant/message", "tool/result"}

E1_BYTES = b"".join(line + b"\n" for line in E1_LINES)


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def with_id(data: bytes, new_id: str) -> bytes:
    """E1's bytes with the header id replaced (the first ``"id":"demo-1"`` is the header's)."""
    old = b'"id":"demo-1"'
    assert data.startswith(E1_LINES[0][:30])
    return data.replace(old, f'"id":"{new_id}"'.encode(), 1)


def committed_records(data: bytes) -> list[bytes]:
    """The LF-terminated records of a file (a torn fragment after the last LF is left out)."""
    return data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]


def compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


ALL_FIXTURES = sorted(p.name for p in FIXTURES.glob("*.jsonl"))


def test_fixture_set_is_the_documented_one() -> None:
    assert ALL_FIXTURES == [
        "demo-1-b.jsonl", "demo-1.jsonl", "interrupted-1.jsonl", "packed-1.jsonl",
        "reminders-1.jsonl", "torn-1.jsonl",
    ]
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    for name in ALL_FIXTURES:
        assert f"`{name}`" in readme


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_every_fixture_is_canonical(name: str) -> None:
    """log-format §3: UTF-8, compact JSON, documented key orders, LF after every record, contiguous seqs."""
    data = fixture(name)
    text = data.decode("utf-8")  # raises on invalid UTF-8
    assert not text.startswith("\ufeff") and "\r" not in text
    records = committed_records(data)
    header = json.loads(records[0])
    assert records[0].decode() == compact(header)
    assert list(header) == [k for k in HEADER_ORDER if k in header]
    assert header["type"] == "session" and header["version"] == 0
    # the file name is "<id>.jsonl" with a valid id, so a fixture can be opened by id
    assert ID_RE.fullmatch(header["id"]) and name == f"{header['id']}.jsonl"
    seq = 0
    for raw in records[1:]:
        record = json.loads(raw)
        assert raw.decode() == compact(record), "not compact or not raw UTF-8"
        if record["type"] in ROW_TAGS:
            assert list(record) == ["type", "seq0", "time0", "data"]
            assert record["seq0"] == seq
            members = record["data"]["args" if record["type"] == "tool-call-chunks" else "texts"]
            assert len(record["data"]["dt"]) == len(members) - 1
            seq += len(members)
            continue
        assert list(record) == [k for k in EVENT_ORDER if k in record]
        assert TYPE_RE.fullmatch(record["type"])
        assert record["seq"] == seq
        assert ("surfaceOp" in record) == (record["type"] in SURFACE_TYPES)
        seq += 1


def test_demo_1_is_e1_byte_for_byte() -> None:
    data = fixture("demo-1.jsonl")
    assert data == E1_BYTES
    assert len(data) == 887
    assert "é".encode() in data  # two raw UTF-8 bytes, never \u00e9
    starts = [0]
    for record in committed_records(data)[:-1]:
        starts.append(starts[-1] + len(record) + 1)
    assert starts == [0, 109, 178, 256, 452, 714, 790]


def test_demo_1_b_is_the_e6_fork_child() -> None:
    expected = (
        b'{"type":"session","version":0,"id":"demo-1-b","createdAt":1767268800000,"cwd":"/home/ana",'
        b'"parentSession":"demo-1","seedLength":6,"delegationDepth":0}\n'
        + b"".join(line + b"\n" for line in E1_LINES[1:])
        + b'{"type":"session/end-seed","seq":6,"time":1767268800000,"data":{}}\n'
    )
    assert fixture("demo-1-b.jsonl") == expected


def test_torn_1_is_e2_with_an_id_of_the_same_length() -> None:
    data = fixture("torn-1.jsonl")
    fragment = b'{"type":"turn/start","seq":6,"ti'
    assert len(fragment) == 32
    assert data == with_id(E1_BYTES, "torn-1") + fragment
    # E2's figures hold unchanged because "torn-1" is as long as "demo-1"
    assert len(data) == 919 and data.rfind(b"\n") + 1 == 887


def test_interrupted_1_is_e5_before_repair() -> None:
    data = fixture("interrupted-1.jsonl")
    assert data == with_id(E1_BYTES, "interrupted-1") + b"".join(line + b"\n" for line in E5_LINES)


def test_packed_1_holds_e9_row_after_seq_3_and_every_row_kind() -> None:
    records = committed_records(fixture("packed-1.jsonl"))
    assert records[5] == E9_ROW
    assert json.loads(records[4])["seq"] == 3
    rows = [json.loads(r) for r in records if json.loads(r)["type"] in ROW_TAGS]
    assert {r["type"] for r in rows} == ROW_TAGS
    tool_rows = [r for r in rows if r["type"] == "tool-call-chunks"]
    assert {"name" in r["data"] for r in tool_rows} == {True, False}
    for row in rows:
        keys = ["turn", "step", "index", "dt", "texts"]
        if row["type"] == "tool-call-chunks":
            keys = ["turn", "step", "index", "id"] + (["name"] if "name" in row["data"] else [])
            keys += ["dt", "args"]
        assert list(row["data"]) == keys


# --- reminders-1: schedule/change (schedule §3) and time readings (time-context) ------

RECORD_KEYS = {
    "after": ["id", "kind", "prompt", "afterSeconds", "scheduledAt"],
    "at": ["id", "kind", "prompt", "scheduledAt"],
    "every": ["id", "kind", "prompt", "everySeconds", "scheduledAt"],
}
INSTANT_RE = re.compile(
    r"(?!0000)[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])T(?:[01][0-9]|2[0-3]):[0-5][0-9]"
    r":[0-5][0-9]\.[0-9]{3}Z"
)
READING_RE = re.compile(
    r"Time sampled while preparing turn ([0-9]+), step ([0-9]+): ([0-9]{4}-[0-9]{2}-[0-9]{2}T"
    r"[0-9]{2}:[0-9]{2}:[0-9]{2}[+-][0-9]{2}:[0-9]{2}(?::[0-9]{2})?)\[([^\]\n]+)\]\n"
    r"(Client time zone for this request: [^\n]+)\nElapsed since the preceding "
    r"(model-visible message|step context): (?:unavailable|(?:[0-9]+d )?(?:[0-9]+h )?"
    r"(?:[0-9]+m )?[0-9]+s)\.",
    re.ASCII,
)


def reminder_events() -> list[dict]:
    return [json.loads(r) for r in committed_records(fixture("reminders-1.jsonl"))[1:]]


def test_reminders_1_schedule_changes_have_the_v1_shapes() -> None:
    changes = [e for e in reminder_events() if e["type"] == "schedule/change"]
    assert [e["data"]["operation"] for e in changes] == [
        "create", "create", "dispatch", "dispatch", "delete",
    ]
    for event in changes:
        assert list(event) == ["type", "seq", "time", "data"]  # log-only envelope
        data = event["data"]
        assert data["version"] == 1 and type(data["version"]) is int
        if data["operation"] == "create":
            assert list(data) == ["version", "operation", "schedule"]
            record = data["schedule"]
            assert list(record) == RECORD_KEYS[record["kind"]]
            assert INSTANT_RE.fullmatch(record["scheduledAt"])
        elif data["operation"] == "delete":
            assert list(data) == ["version", "operation", "id"]
        else:
            assert list(data) in (
                ["version", "operation", "id"], ["version", "operation", "id", "acceptedAt"]
            )
    kinds = {c["data"]["schedule"]["kind"] for c in changes if c["data"]["operation"] == "create"}
    assert kinds == {"after", "every"}
    # the every dispatch carries the decision time; the one-shot dispatch carries none
    every_dispatch = changes[3]["data"]
    assert every_dispatch == {
        "version": 1, "operation": "dispatch", "id": "schedule-2",
        "acceptedAt": "2026-02-10T12:10:00.020Z",
    }
    assert changes[2]["data"] == {"version": 1, "operation": "dispatch", "id": "schedule-1"}


def test_reminders_1_time_readings_have_the_exact_shape() -> None:
    readings = [
        e for e in reminder_events()
        if e["type"] == "user/message" and e["data"]["source"].get("plugin") == "time-context"
    ]
    assert len(readings) == 6
    for event in readings:
        assert list(event) == ["type", "seq", "time", "data", "surfaceOp"]
        assert event["surfaceOp"] == "append"
        data = event["data"]
        assert list(data) == ["id", "role", "source", "content"]
        (block,) = data["content"]
        text = block["text"]
        assert block == {"type": "text", "text": text}
        assert data["role"] == "user"
        assert data["source"] == {
            "kind": "plugin", "plugin": "time-context", "form": "snapshot",
            "sections": [{"name": "time-context", "text": text}],
        }
        match = READING_RE.fullmatch(text)
        assert match, text
        assert (match.group(6) == "model-visible message") == (match.group(2) == "1")


def test_reminders_1_first_reading_matches_timecontext_e1_wording() -> None:
    first = next(
        e for e in reminder_events()
        if e["type"] == "user/message" and e["data"]["source"]["kind"] == "plugin"
    )
    assert first["data"]["content"][0]["text"] == (
        "Time sampled while preparing turn 1, step 1: 2026-02-10T13:00:00+01:00[Europe/Berlin]\n"
        "Client time zone for this request: Europe/Berlin. Interpret otherwise-unqualified dates "
        "and times in this zone.\n"
        "Elapsed since the preceding model-visible message: unavailable."
    )


# --- the fixtures as eventlog, schedule and timecontext read them ---------------------------


@pytest.mark.parametrize(
    ("name", "events"),
    [("demo-1", 6), ("demo-1-b", 7), ("packed-1", 27), ("reminders-1", 56)],
)
def test_balanced_fixtures_read_without_repair(name: str, events: int) -> None:
    snapshot = read_log(FIXTURES / f"{name}.jsonl", expected_id=name)
    assert len(snapshot.events) == events
    assert snapshot.repair is None
    assert snapshot.committed_bytes == snapshot.file_bytes == len(fixture(f"{name}.jsonl"))


def test_torn_1_reads_as_e2() -> None:
    snapshot = read_log(FIXTURES / "torn-1.jsonl", expected_id="torn-1")
    assert [e.to_json() for e in snapshot.events] == E1_LINES[1:]
    assert (snapshot.file_bytes, snapshot.committed_bytes) == (919, 887)
    repair = snapshot.repair
    assert repair is not None and repair.defect is not None
    assert (repair.truncate_to, repair.dropped_bytes, repair.dropped_records) == (887, 32, 0)
    assert (repair.defect.line, repair.defect.offset, repair.defect.reason) == (
        8, 887, "torn final record",
    )
    assert (repair.open_turn, repair.closers) == (None, ())


def test_interrupted_1_reads_as_e5_with_its_closers() -> None:
    snapshot = read_log(FIXTURES / "interrupted-1.jsonl", expected_id="interrupted-1")
    assert [e.to_json() for e in snapshot.events] == E1_LINES[1:] + E5_LINES
    repair = snapshot.repair
    assert repair is not None
    assert (repair.truncate_to, repair.dropped_bytes, repair.defect) == (None, 0, None)
    assert repair.open_turn == 2
    assert [e.to_json() for e in repair.closers] == E5_CLOSERS


def test_packed_1_expands_e9() -> None:
    events = read_log(FIXTURES / "packed-1.jsonl").events
    assert [e.to_json() for e in events[4:7]] == E9_EVENTS
    assert [e.seq for e in events] == list(range(27))
    deltas = [json.loads(e.to_json())["data"]["chunk"] for e in events[16:19]]
    assert [d["argumentsDelta"] for d in deltas] == ['{"path"', ':"notes', '.txt"}']
    assert ["name" in d for d in deltas] == [True, True, False]


def test_reminders_1_folds_and_its_readings_validate() -> None:
    schedule = pytest.importorskip("schedule")
    timecontext = pytest.importorskip("timecontext")
    events = read_log(FIXTURES / "reminders-1.jsonl").events
    # after the two creates, both are active; the one-shot dispatch removes schedule-1; the
    # every dispatch advances schedule-2 by one interval; the delete removes it
    after_creates = schedule.fold(events[:14], 0)
    assert [r.id for r in after_creates.active] == ["schedule-1", "schedule-2"]
    assert [r.id for r in schedule.fold(events[:22], 0).active] == ["schedule-2"]
    (advanced,) = schedule.fold(events[:32], 0).active
    assert advanced.scheduled_at == "2026-02-10T12:20:00.009Z"
    final = schedule.fold(events, 0)
    assert final.active == () and final.seen_ids == ("schedule-1", "schedule-2")
    report = timecontext.validate_readings(events, schedule.canonicalize_time_zone)
    assert (report.checked, report.skipped_foreign, report.violations) == (6, 0, ())
