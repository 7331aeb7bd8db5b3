"""``index_log``: ``read_log`` with the events left on disk, and ``validate`` streaming through
it (log-format §5.5, log-format §10.3, log-format §11).

Every expectation is ``read_log``'s answer on the same file (the in-memory reader is the
reference), a literal or a message of docs/log-format.md; never the file-backed reader's own output.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from unittest import mock

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eventlog
import eventlog.reader
from eventlog.cli import main, rule_messages
from eventlog.errors import CorruptLog, SessionNotFound, UnsupportedFormat
from eventlog.format import Event, build_event
from eventlog.reader import LogIndexer, LogSnapshot, index_log, read_log
from tests.eventlog.spec_examples import E1_LINES, E5_LINES, E9_ROW, log_bytes
from tests.fixture_paths import DSH_FIXTURES

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
DSH = DSH_FIXTURES
CHANGED = "the log changed while it was being read"

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def fixture_files() -> list[Path]:
    return sorted(FIXTURES.glob("*.jsonl")) + sorted(DSH.glob("*.jsonl"))


def copy_in(source: Path, tmp_path: Path) -> Path:
    """A private copy (the fixture directories are never written)."""
    target = tmp_path / source.name
    shutil.copyfile(source, target)
    return target


def write(tmp_path: Path, data: bytes, name: str = "log.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def records(events: Sequence[Event]) -> list[bytes]:
    return [event.to_json() for event in events]


def assert_same_snapshot(indexed: LogSnapshot, loaded: LogSnapshot) -> None:
    """``indexed`` is ``loaded`` with file-backed events: every field and every event agree."""
    assert indexed.path == loaded.path
    assert indexed.header == loaded.header
    assert (indexed.file_bytes, indexed.committed_bytes) == (loaded.file_bytes, loaded.committed_bytes)
    assert indexed.repair == loaded.repair
    assert msgspec.json.encode(indexed.repair) == msgspec.json.encode(loaded.repair)
    assert len(indexed.events) == len(loaded.events)
    assert list(indexed.events) == list(loaded.events)
    assert records(indexed.events) == records(loaded.events)


def assert_same_access(indexed: Sequence[Event], loaded: Sequence[Event]) -> None:
    """Every index, negative index and a spread of slices read the same events."""
    n = len(loaded)
    for i in range(-n, n):
        assert indexed[i] == loaded[i], i
        assert indexed[i].to_json() == loaded[i].to_json(), i
    for i in (n, n + 3, -n - 1):
        with pytest.raises(IndexError):
            indexed[i]
    for start in (None, 0, 1, n // 2, -2, n):
        for stop in (None, 0, 1, n // 2 + 1, -1, n + 5):
            for step in (None, 1, 2, -1, -3):
                part = indexed[start:stop:step]
                assert isinstance(part, list)
                assert part == loaded[start:stop:step], (start, stop, step)
    assert list(reversed(indexed)) == list(reversed(loaded))


# --------------------------------------------------------------------------- equivalence


@pytest.mark.parametrize("source", fixture_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixtures_read_the_same_as_read_log(source: Path, tmp_path: Path) -> None:
    path = copy_in(source, tmp_path)
    before = path.read_bytes(), path.stat().st_mtime_ns
    indexed, loaded = index_log(path), read_log(path)
    assert_same_snapshot(indexed, loaded)
    assert_same_access(indexed.events, loaded.events)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before  # never writes


def test_fixture_coverage() -> None:
    # The equivalence above covers packed rows, a torn tail and an interrupted turn.
    names = {p.name for p in fixture_files()}
    assert {"packed-1.jsonl", "torn-1.jsonl", "interrupted-1.jsonl"} <= names


def test_packed_rows_share_a_record(tmp_path: Path) -> None:
    path = copy_in(FIXTURES / "packed-1.jsonl", tmp_path)
    loaded = read_log(path)
    assert len(loaded.events) == 27  # fixtures/README.md: 27 events in 23 records
    events = index_log(path).events
    # members of one row, read alone, from the end, and as slices that cut rows
    assert [events[i] for i in (5, 4, 6, 3, 26, 25)] == [loaded.events[i] for i in (5, 4, 6, 3, 26, 25)]
    assert events[5:7] == loaded.events[5:7] and events[3:5] == loaded.events[3:5]


def test_spec_row_and_interrupted_turn(tmp_path: Path) -> None:
    # E9's row, then E5's turn cut after a tool/call: closers computed from the file.
    lines = E1_LINES[:4] + [E9_ROW.replace(b'"seq0":4', b'"seq0":3')]
    path = write(tmp_path, log_bytes(lines))
    assert_same_snapshot(index_log(path), read_log(path))
    path = write(tmp_path, log_bytes(E1_LINES + E5_LINES), "e5.jsonl")
    indexed = index_log(path)
    assert_same_snapshot(indexed, read_log(path))
    assert indexed.repair is not None and indexed.repair.open_turn == 2


def test_droppable_tail_after_a_defect(tmp_path: Path) -> None:
    # a defect followed by valid-looking records, then a torn fragment: all dropped
    data = log_bytes(E1_LINES[:4] + [b"not json", E1_LINES[4]]) + b'{"type":"step/en'
    path = write(tmp_path, data)
    indexed, loaded = index_log(path), read_log(path)
    assert_same_snapshot(indexed, loaded)
    assert loaded.repair is not None and loaded.repair.dropped_records == 2
    assert_same_access(indexed.events, loaded.events)


def test_crlf_records(tmp_path: Path) -> None:
    path = write(tmp_path, b"".join(line + b"\r\n" for line in E1_LINES))
    indexed, loaded = index_log(path), read_log(path)
    assert_same_snapshot(indexed, loaded)
    assert_same_access(indexed.events, loaded.events)


def test_errors_are_read_logs(tmp_path: Path) -> None:
    with pytest.raises(SessionNotFound, match='^session "nope" not found$'):
        index_log(tmp_path / "nope.jsonl", expected_id="nope")
    with pytest.raises(SessionNotFound, match="^session log .* not found$"):
        index_log(tmp_path / "nope.jsonl")
    path = write(tmp_path, log_bytes(E1_LINES))
    with pytest.raises(CorruptLog):
        index_log(path, expected_id="other")
    # committed corruption: a damaged record followed by a turn/end
    corrupt = write(tmp_path, log_bytes(E1_LINES[:3] + [b"{", E1_LINES[6]]), "c.jsonl")
    with pytest.raises(CorruptLog) as loaded:
        read_log(corrupt)
    with pytest.raises(CorruptLog) as indexed:
        index_log(corrupt)
    assert str(indexed.value) == str(loaded.value)
    unsupported = write(tmp_path, b'{"type":"session","version":3}\n', "v.jsonl")
    with pytest.raises(UnsupportedFormat):
        index_log(unsupported)
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    with pytest.raises(OSError):
        index_log(link)  # O_NOFOLLOW, as every reader
    assert eventlog.index_log is index_log and "index_log" in eventlog.__all__


def test_the_sequence_is_read_only(tmp_path: Path) -> None:
    events = index_log(write(tmp_path, log_bytes(E1_LINES))).events
    assert isinstance(events, Sequence)
    with pytest.raises(TypeError):
        events[0] = events[1]  # type: ignore[index]
    assert not hasattr(events, "append")
    assert events.index(events[3]) == 3 and events[2] in events and events.count(events[0]) == 1


# --------------------------------------------------------------------------- property


def _turn_records(seq: int, turn: int, texts: list[str], row: list[str], open_: bool) -> list[bytes]:
    lines = [
        build_event("turn/start", seq, 10 * seq, {"turn": turn}).to_json(),
        build_event("step/start", seq + 1, 10 * seq, {"turn": turn, "step": 1}).to_json(),
        build_event(
            "user/message", seq + 2, 10 * seq,
            {"id": f"u{seq}", "role": "user", "source": {"kind": "user"},
             "content": [{"type": "text", "text": t} for t in texts]},
            surface_op="append",
        ).to_json(),
    ]
    seq += 3
    if row:
        dt = list(range(len(row) - 1))
        data = {"turn": turn, "step": 1, "index": 0, "dt": dt, "texts": row}
        lines.append(msgspec.json.encode({"type": "text-chunks", "seq0": seq, "time0": 5, "data": data}))
        seq += len(row)
    if not open_:
        lines.append(build_event("step/end", seq, 10 * seq, {"turn": turn, "step": 1}).to_json())
        lines.append(
            build_event("turn/end", seq + 1, 10 * seq, {"turn": turn, "reason": {"kind": "completed"}}).to_json()
        )
    return lines


@st.composite
def small_logs(draw: st.DrawFn) -> bytes:
    """A small valid log of turns with packed rows, maybe ending in an open turn and/or a torn
    fragment."""
    lines = [E1_LINES[0]]
    seq = 0
    turns = draw(st.integers(0, 4))
    for turn in range(1, turns + 1):
        texts = draw(st.lists(st.text(max_size=40), min_size=1, max_size=3))
        row = draw(st.lists(st.text(min_size=1, max_size=6), max_size=4))
        open_ = turn == turns and draw(st.booleans())
        new = _turn_records(seq, turn, texts, row, open_)
        lines += new
        seq += 5 + len(row) - (2 if open_ else 0)
    data = log_bytes(lines)
    if draw(st.booleans()):
        data += b'{"type":"turn/start","seq":'  # torn fragment
    return data


@SETTINGS
@given(
    data=small_logs(),
    chunk=st.integers(1, 300),
    window=st.integers(1, 400),
    accesses=st.lists(
        st.one_of(
            st.integers(-60, 60),
            st.tuples(st.integers(-60, 60) | st.none(), st.integers(-60, 60) | st.none(),
                      st.sampled_from([None, 1, 2, -1, -2])),
        ),
        max_size=25,
    ),
)
def test_random_access_equals_the_loaded_list(
    tmp_path: Path, data: bytes, chunk: int, window: int, accesses: list
) -> None:
    # Small read chunks and windows put record, row and window boundaries everywhere.
    path = write(tmp_path, data)
    loaded = read_log(path)
    with mock.patch.object(eventlog.reader, "CHUNK_SIZE", chunk), mock.patch.object(
        eventlog.reader, "INDEX_WINDOW", window
    ):
        indexed = index_log(path)
        assert_same_snapshot(indexed, loaded)
        for access in accesses:
            if isinstance(access, int):
                if -len(loaded.events) <= access < len(loaded.events):
                    assert indexed.events[access] == loaded.events[access]
                else:
                    with pytest.raises(IndexError):
                        indexed.events[access]
            else:
                key = slice(*access)
                assert indexed.events[key] == loaded.events[key]


# --------------------------------------------------------------------------- the log changes


def _big_enough(tmp_path: Path) -> Path:
    return copy_in(FIXTURES / "reminders-1.jsonl", tmp_path)


def test_truncated_under_the_snapshot(tmp_path: Path) -> None:
    path = _big_enough(tmp_path)
    first = read_log(path).events[0]
    snapshot = index_log(path)
    n = len(snapshot.events)
    os.truncate(path, snapshot.committed_bytes // 2)
    assert len(snapshot.events) == n  # the index itself is kept
    with pytest.raises(CorruptLog) as caught:
        list(snapshot.events)
    message = str(caught.value)
    assert CHANGED in message and str(path) in message and "\n" not in message
    with pytest.raises(CorruptLog, match=CHANGED):
        snapshot.events[-1]
    with pytest.raises(CorruptLog, match=CHANGED):
        snapshot.events[n - 3 :]
    assert snapshot.events[0] == first  # what the file still holds reads as before


def test_rewritten_replaced_or_removed_under_the_snapshot(tmp_path: Path) -> None:
    path = _big_enough(tmp_path)
    data = path.read_bytes()
    snapshot = index_log(path)
    # the same bytes except one record's seq (same length): it no longer decodes to its seq
    path.write_bytes(data.replace(b'"seq":20,', b'"seq":29,', 1))
    with pytest.raises(CorruptLog, match=CHANGED):
        snapshot.events[20]
    with pytest.raises(CorruptLog, match=CHANGED):
        list(snapshot.events)
    # another file under the name
    other = write(tmp_path, data, "other.jsonl")
    snapshot = index_log(path := write(tmp_path, data))
    os.replace(other, path)
    with pytest.raises(CorruptLog, match=CHANGED):
        snapshot.events[3]
    os.unlink(path)
    with pytest.raises(CorruptLog, match=CHANGED):
        list(snapshot.events)


def test_appending_changes_nothing(tmp_path: Path) -> None:
    # An appended record is beyond the committed end the snapshot indexed.
    path = write(tmp_path, log_bytes(E1_LINES[:5]))
    snapshot = index_log(path)
    loaded = list(read_log(path).events)
    with open(path, "ab") as file:
        file.write(E1_LINES[5] + b"\n")
    assert list(snapshot.events) == loaded and snapshot.events[-1] == loaded[-1]


def test_validate_reports_a_log_changed_during_the_checks(tmp_path: Path, capsys) -> None:
    path = _big_enough(tmp_path)

    def shrinking(snapshot: LogSnapshot) -> list[str]:
        os.truncate(snapshot.path, snapshot.committed_bytes // 2)
        return [f"{len(list(snapshot.events))} events"]  # never reached

    code = main(["validate", str(path), "--json"], checks=[shrinking])
    (verdict,) = json.loads(capsys.readouterr().out)
    assert code == 1
    assert verdict["status"] == "corrupt" and len(verdict["messages"]) == 1
    assert CHANGED in verdict["messages"][0]


# --------------------------------------------------------------------------- memory


def _generated_log(path: Path, turns: int) -> int:
    """A valid log of ``turns`` turns, records of ~200-900 bytes."""
    out = [E1_LINES[0].replace(b"demo-1", b"big") + b"\n"]
    seq = 0
    for turn in range(1, turns + 1):
        text = "Café at 9? " * (turn % 70 + 10)
        out.append(build_event("turn/start", seq, seq, {"turn": turn}).to_json() + b"\n")
        out.append(build_event("step/start", seq + 1, seq, {"turn": turn, "step": 1}).to_json() + b"\n")
        message = {"id": f"u{seq}", "role": "user", "source": {"kind": "user"}, "content": [{"type": "text", "text": text}]}
        out.append(build_event("user/message", seq + 2, seq, message, surface_op="append").to_json() + b"\n")
        reply = {"turn": turn, "step": 1, "message": {
            "id": f"a{seq}", "role": "assistant", "source": {"kind": "model", "provider": "p", "model": "m"},
            "content": [{"type": "text", "text": text.upper()}]}}
        out.append(build_event("assistant/message", seq + 3, seq, reply, surface_op="append").to_json() + b"\n")
        out.append(build_event("step/end", seq + 4, seq, {"turn": turn, "step": 1}).to_json() + b"\n")
        out.append(build_event("turn/end", seq + 5, seq, {"turn": turn, "reason": {"kind": "completed"}}).to_json() + b"\n")
        seq += 6
    path.write_bytes(b"".join(out))
    return path.stat().st_size


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, int, int]]:
    """A small and a large generated log: ``(path, size, turns)``."""
    directory = tmp_path_factory.mktemp("big")
    out = []
    for turns in (1000, 6000):
        path = directory / f"big-{turns}.jsonl"
        out.append((path, _generated_log(path, turns), turns))
    assert out[1][1] > 10_000_000
    return out


def test_the_snapshot_keeps_an_index_not_the_events(logs: list[tuple[Path, int, int]]) -> None:
    path, size, turns = logs[1]
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        snapshot = index_log(path)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    n = len(snapshot.events)
    assert n == 6 * turns
    kept = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    # 8 bytes of offset per event plus small fixed costs: the events' bytes stay on disk
    assert kept < 8 * n + 200_000 < size // 20


def _validate_peak(path: Path, capsys: pytest.CaptureFixture[str]) -> int:
    tracemalloc.start()
    try:
        code = main(["validate", str(path)])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (code, capsys.readouterr().out) == (0, f"ok  {path}  {len(read_log(path).events)} events\n")
    return peak


def test_validate_memory_does_not_follow_the_file(logs: list[tuple[Path, int, int]], capsys) -> None:
    # Not timed: traced allocations. A loaded log holds at least its bytes, so its peak grows
    # at least as fast as the file; a streamed one holds about a chunk plus a little per
    # event (the index, the surface fold's list of seqs).
    (small, small_size, _), (large, large_size, _) = logs
    small_peak = _validate_peak(small, capsys)
    large_peak = _validate_peak(large, capsys)
    assert large_peak < large_size // 2
    assert large_peak - small_peak < 0.35 * (large_size - small_size)


# --------------------------------------------------------------------------- validate output


def verdicts_from_loaded(paths: list[Path], checks) -> list[tuple[str, tuple[str, ...]]]:
    """What validate said before it streamed: the rules over ``read_log``'s list."""
    out = []
    for path in paths:
        snapshot = read_log(path)
        messages = rule_messages(snapshot, checks)
        status = "invalid" if messages else ("repairable" if snapshot.repair else "ok")
        out.append((status, tuple(messages)))
    return out


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    root.mkdir()
    for source in sorted(FIXTURES.glob("*.jsonl")):
        shutil.copyfile(source, root / source.name)
    return root


def _host_checks():
    host_commands = pytest.importorskip("host.cli._logcommands")
    return host_commands.CHECKS


def test_validate_agrees_with_the_loaded_rules(store: Path, capsys) -> None:
    checks = _host_checks()
    paths = sorted(store.glob("*.jsonl"))
    code = main(["validate", *map(str, paths), "--json"], checks=checks)
    got = [(v["status"], tuple(v["messages"])) for v in json.loads(capsys.readouterr().out)]
    expected = verdicts_from_loaded(paths, checks)
    assert [status for status, _ in got] == [status for status, _ in expected]
    failing = {"invalid", "corrupt", "unsupported", "unreadable"}
    assert code == int(any(status in failing for status, _ in expected))
    # repairable logs print the repair summary; invalid ones the rules' messages
    assert [m for s, m in got if s == "invalid"] == [m for s, m in expected if s == "invalid"]


def test_validate_fork_seed_messages(store: Path, capsys) -> None:
    parent = store / "demo-1.jsonl"
    original = parent.read_bytes()
    parent.write_bytes(original.replace(b"Sure, 9:00.", b"Sure, 9:30."))
    assert main(["validate", "demo-1-b", "--root", str(store)]) == 1
    assert capsys.readouterr().out == (
        'invalid  demo-1-b  fork seed differs from parent "demo-1" at seq 3 (seedLength 6)\n'
    )
    # a parent shorter than the seed
    parent.write_bytes(b"".join(original.splitlines(keepends=True)[:5]))
    assert main(["validate", "demo-1-b", "--root", str(store), "--json"]) == 1
    (verdict,) = json.loads(capsys.readouterr().out)
    assert verdict["messages"] == ['parent "demo-1" has 4 committed events, fewer than seedLength 6']
    assert verdict["events"] == 7
    # a parent that cannot be read: reported as such, the child itself is fine
    parent.write_bytes(b"not a header\n")
    assert main(["validate", "demo-1-b", "--root", str(store), "--json"]) == 1
    (verdict,) = json.loads(capsys.readouterr().out)
    (message,) = verdict["messages"]
    assert verdict["status"] == "invalid"
    assert message.startswith('cannot compare the fork seed with parent "demo-1": corrupt session log "')
    assert str(parent) in message


def test_validate_time_readings_output(store: Path, capsys) -> None:
    checks = _host_checks()
    assert main(["validate", "reminders-1", "--root", str(store)], checks=checks) == 0
    assert capsys.readouterr().out == "ok  reminders-1  56 events\n"
    # the step-2 reading (seq 16) written with the step-1 baseline wording
    path = store / "reminders-1.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    assert b'"seq":16,' in lines[17]
    lines[17] = lines[17].replace(b"preceding step context: 0s.", b"preceding model-visible message: 0s.")
    path.write_bytes(b"".join(lines))
    assert main(["validate", "reminders-1", "--root", str(store)], checks=checks) == 1
    assert capsys.readouterr().out == (
        "invalid  reminders-1  "
        'time-context step 2 uses the wrong elapsed-time baseline "model-visible message"\n'
    )
    assert verdicts_from_loaded([path], checks) == [
        ("invalid", ('time-context step 2 uses the wrong elapsed-time baseline "model-visible message"',))
    ]


# --------------------------------------------------------------------------- descriptors


def _open_fds() -> int:
    return len(os.listdir("/dev/fd"))


def test_an_abandoned_scan_closes_its_descriptor(tmp_path: Path) -> None:
    # A LogIndexer (or an iteration of the events) dropped mid-way closes its file at once,
    # as an abandoned iter_events does: not whenever the cyclic garbage collector runs.
    path = copy_in(FIXTURES / "packed-1.jsonl", tmp_path)
    gc.collect()
    gc.disable()
    try:
        before = _open_fds()
        indexer = LogIndexer(path)
        scan = iter(indexer)
        assert next(scan).seq == 0
        assert _open_fds() == before + 1
        del scan, indexer
        assert _open_fds() == before
        events = index_log(path).events
        for _ in events:
            break
        assert events[3] in events
        assert _open_fds() == before
    finally:
        gc.enable()
