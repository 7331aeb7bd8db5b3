"""Properties of the reader (hypothesis): truncation never loses a complete record; corruption
is refused or recovered as documented, never with another exception or a silent loss."""

from __future__ import annotations

from pathlib import Path

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventlog.errors import CorruptLog, UnsupportedFormat
from eventlog.format import build_event
from eventlog.reader import iter_events, read_log
from eventlog.scan import Scanner, scan_bytes
from tests.eventlog.spec_examples import E1_LINES, log_bytes

SETTINGS = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _turn(seq: int, turn: int, texts: list[str], row: list[str]) -> list[bytes]:
    records = [
        build_event("turn/start", seq, 10 * seq, {"turn": turn}),
        build_event("step/start", seq + 1, 10 * seq, {"turn": turn, "step": 1}),
        build_event(
            "user/message",
            seq + 2,
            10 * seq,
            {"id": f"u{seq}", "role": "user", "source": {"kind": "user"}, "content": [{"type": "text", "text": t} for t in texts]},
            surface_op="append",
        ),
    ]
    lines = [e.to_json() for e in records]
    seq += 3
    if row:
        dt = list(range(len(row) - 1))
        lines.append(
            msgspec.json.encode(
                {"type": "text-chunks", "seq0": seq, "time0": 5, "data": {"turn": turn, "step": 1, "index": 0, "dt": dt, "texts": row}}
            )
        )
        seq += len(row)
    tail = [
        build_event("step/end", seq, 10 * seq, {"turn": turn, "step": 1}),
        build_event("turn/end", seq + 1, 10 * seq, {"turn": turn, "reason": {"kind": "completed"}}),
    ]
    return lines + [e.to_json() for e in tail]


@st.composite
def valid_logs(draw: st.DrawFn) -> tuple[list[bytes], list[int]]:
    """A valid log's records (header first) and how many events each record holds."""
    lines = list(E1_LINES)
    counts = [0] + [1] * 6
    for turn in range(2, 2 + draw(st.integers(0, 3))):
        texts = draw(st.lists(st.text(max_size=12), min_size=1, max_size=3))
        row = draw(st.lists(st.text(min_size=1, max_size=4), max_size=3))
        new = _turn(sum(counts), turn, texts, row)
        lines += new
        counts += [1, 1, 1] + ([len(row)] if row else []) + [1, 1]
    return lines, counts


def _write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "prop.jsonl"
    path.write_bytes(data)
    return path


@SETTINGS
@given(log=valid_logs(), cut=st.floats(0, 1))
def test_any_truncation_keeps_every_complete_record(tmp_path: Path, log: tuple[list[bytes], list[int]], cut: float) -> None:
    lines, counts = log
    data = log_bytes(lines)
    header_end = len(lines[0]) + 1
    size = header_end + round(cut * (len(data) - header_end))
    path = _write(tmp_path, data[:size])
    snapshot = read_log(path)
    # Complete records are those whose LF is within the first ``size`` bytes.
    complete = 0
    end = header_end
    for line in lines[1:]:
        if end + len(line) + 1 > size:
            break
        end += len(line) + 1
        complete += 1
    kept_events = sum(counts[1 : 1 + complete])
    assert len(snapshot.events) == kept_events
    assert [e.seq for e in snapshot.events] == list(range(kept_events))
    assert snapshot.committed_bytes == end and snapshot.file_bytes == size
    if size > end:
        assert snapshot.repair is not None and snapshot.repair.truncate_to == end
        assert snapshot.repair.dropped_records == 0
        assert snapshot.repair.defect is not None and snapshot.repair.defect.reason == "torn final record"
    assert [e.seq for e in iter_events(path)] == list(range(kept_events))


@SETTINGS
@given(
    log=valid_logs(),
    edits=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), min_size=1, max_size=3),
)
def test_random_corruption_is_refused_or_recovered_visibly(
    tmp_path: Path, log: tuple[list[bytes], list[int]], edits: list[tuple[float, int]]
) -> None:
    lines, counts = log
    original = log_bytes(lines)
    data = bytearray(original)
    positions = []
    for where, value in edits:
        position = min(int(where * len(data)), len(data) - 1)
        data[position] = value
        positions.append(position)
    first_change = min((p for p in positions if data[p] != original[p]), default=len(data))
    path = _write(tmp_path, bytes(data))
    try:
        snapshot = read_log(path)
    except (CorruptLog, UnsupportedFormat):
        return
    clean = read_log(_write(tmp_path, original))
    path.write_bytes(bytes(data))
    # Every record that ends before the first changed byte is kept, unchanged.
    intact = original[:first_change].count(b"\n") - 1
    events_before = sum(counts[1 : 1 + max(intact, 0)])
    assert [e.to_json() for e in snapshot.events[:events_before]] == [
        e.to_json() for e in clean.events[:events_before]
    ]
    # Nothing is lost silently: every complete record is either kept or counted as dropped.
    complete_records = bytes(data).count(b"\n") - 1
    repair = snapshot.repair
    dropped = repair.dropped_records if repair is not None else 0
    kept_bytes = snapshot.committed_bytes
    kept_records = bytes(data)[:kept_bytes].count(b"\n") - 1
    assert kept_records + dropped == complete_records
    if kept_bytes < len(data):
        assert repair is not None and repair.truncate_to == kept_bytes
        assert repair.dropped_bytes == len(data) - kept_bytes


@SETTINGS
@given(log=valid_logs(), size=st.integers(1, 64))
def test_bulk_and_line_by_line_scans_agree(log: tuple[list[bytes], list[int]], size: int) -> None:
    data = log_bytes(log[0])
    whole, expected = scan_bytes(data)
    scanner = Scanner("<bytes>")
    events = []
    for start in range(0, len(data), size):
        events += scanner.feed(data[start : start + size])
    scanner.finish()
    assert events == expected and [e.to_json() for e in events] == [e.to_json() for e in expected]
    assert (scanner.committed_bytes, scanner.committed_line, scanner.next_seq) == (
        whole.committed_bytes,
        whole.committed_line,
        whole.next_seq,
    )
