"""eventlog.scan: committed prefix, first defect, the turn/end rule, torn fragments, chunking."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog.errors import CorruptLog, UnsupportedFormat
from eventlog.format import INVALID_ENVELOPE, SEQ_GAP, UNPARSABLE, Event
from eventlog.scan import TORN, Scanner, scan_bytes
from tests.eventlog.spec_examples import E1_LINES, E5_LINES, E9_ROW, log_bytes

E1 = log_bytes(E1_LINES)
E1_OFFSETS = [0, 109, 178, 256, 452, 714, 790]  # log-format §12 E1
DAMAGED_4 = b'{"type":"user/message","seq":2,"time":1767261600102,"data":{"id":"msg-1"'


def scan_in_chunks(data: bytes, sizes: list[int]) -> tuple[Scanner, list[Event]]:
    scanner = Scanner("/logs/x.jsonl")
    events: list[Event] = []
    pos = 0
    index = 0
    while pos < len(data):
        size = sizes[index % len(sizes)]
        events += scanner.feed(data[pos : pos + size])
        pos += size
        index += 1
    scanner.finish()
    return scanner, events


def test_e1_clean_scan() -> None:
    scanner, events = scan_bytes(E1)
    assert [e.to_json() for e in events] == E1_LINES[1:]
    assert scanner.next_seq == 6 and scanner.committed_bytes == 887 == scanner.file_bytes
    assert scanner.defect is None and scanner.dropped_records == 0
    assert scanner.committed_line == 7


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=300), min_size=1, max_size=8))
def test_any_chunking_gives_the_same_scan(sizes: list[int]) -> None:
    data = E1 + b'{"type":"turn/start","seq":6,"ti'
    scanner, events = scan_in_chunks(data, sizes)
    assert [e.to_json() for e in events] == E1_LINES[1:]
    assert scanner.committed_bytes == 887 and scanner.file_bytes == 919
    assert scanner.defect is not None and scanner.defect.reason == TORN
    assert (scanner.defect.line, scanner.defect.offset) == (8, 887)


def test_e2_torn_fragment_even_if_complete_json() -> None:
    scanner, events = scan_bytes(E1 + b'{"type":"turn/end","seq":6,"time":1,"data":{}}')
    assert len(events) == 6 and scanner.committed_bytes == 887
    assert scanner.defect is not None and scanner.defect.reason == TORN
    assert scanner.dropped_records == 0


def test_e3_committed_corruption() -> None:
    data = log_bytes([*E1_LINES[:3], DAMAGED_4, *E1_LINES[4:]])
    with pytest.raises(CorruptLog) as info:
        scan_bytes(data, "/logs/demo-1.jsonl")
    assert str(info.value).startswith(
        'corrupt session log "/logs/demo-1.jsonl": unparsable committed event at line 4, byte 256: '
    )
    assert (info.value.line, info.value.offset) == (4, 256)


def test_e4_droppable_tail() -> None:
    scanner, events = scan_bytes(log_bytes([*E1_LINES[:3], DAMAGED_4, *E1_LINES[4:6]]))
    assert [e.seq for e in events] == [0, 1]
    assert scanner.committed_bytes == 256
    assert scanner.file_bytes - scanner.committed_bytes == 411
    assert scanner.dropped_records == 3
    assert scanner.defect is not None
    assert (scanner.defect.line, scanner.defect.offset, scanner.defect.reason) == (4, 256, UNPARSABLE)


def test_defective_record_itself_signalling_turn_end_is_corruption() -> None:
    gap = b'{"type":"turn/end","seq":9,"time":1,"data":{"turn":1}}'
    with pytest.raises(CorruptLog) as info:
        scan_bytes(log_bytes([*E1_LINES[:3], gap]), "/l")
    assert str(info.value) == (
        'corrupt session log "/l": seq gap in committed region at line 4, byte 256 (expected 2, got 9)'
    )


def test_turn_end_signal_ignores_seq_and_other_keys_but_needs_json_object() -> None:
    signal = b'{"junk":1,"type":"turn/end"}'
    with pytest.raises(CorruptLog, match="invalid event envelope at line 8, byte 887: "):
        scan_bytes(log_bytes([*E1_LINES, b'{"type":"x/y","seq":6,"time":1}', b"garbage", signal]))
    # A record that merely mentions turn/end is no signal.
    scanner, _ = scan_bytes(
        log_bytes([*E1_LINES, b"garbage", b'["turn/end"]', b'{"type":"turn/end"', b'{"data":{"type":"turn/end"}}'])
    )
    assert scanner.dropped_records == 4 and scanner.committed_bytes == 887


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        (b"", UNPARSABLE),
        (b"\r", UNPARSABLE),
        (b'{"type":"a/b","seq":6,"time":1,"data":"\xff"}', UNPARSABLE),
        (b'{"type":"a/b","seq":6,"time":1,"data":"\xed\xa0\x80"}', UNPARSABLE),  # encoded surrogate
        (b'{"type":"a/b","seq":6,"time":1,"data":1,"x":2}', INVALID_ENVELOPE),
        (b'{"type":"a/b","seq":5,"time":1,"data":1}', SEQ_GAP),
    ],
)
def test_defect_reasons(record: bytes, reason: str) -> None:
    scanner, events = scan_bytes(log_bytes([*E1_LINES, record, E1_LINES[1]]))
    assert len(events) == 6
    assert scanner.defect is not None
    assert (scanner.defect.line, scanner.defect.offset, scanner.defect.reason) == (8, 887, reason)
    assert scanner.dropped_records == 2


def test_invalid_utf8_only_affects_its_own_record_position() -> None:
    # A non-ASCII chunk whose bad byte sits late: the records before it are kept.
    good = '{"type":"a/b","seq":%d,"time":1,"data":"é"}'
    lines = [E1_LINES[0]] + [(good % i).encode() for i in range(5)] + [b'{"type":"a/b","seq":5,"time":1,"data":"\xc3"}']
    scanner, events = scan_bytes(log_bytes(lines))
    assert len(events) == 5 and scanner.defect is not None and scanner.defect.reason == UNPARSABLE
    assert scanner.defect.line == 7


def test_cr_lf_records_are_read() -> None:
    data = b"".join(line + b"\r\n" for line in E1_LINES)
    scanner, events = scan_bytes(data)
    assert [e.to_json() for e in events] == E1_LINES[1:]
    assert scanner.defect is None and scanner.committed_bytes == len(data)


def test_record_spanning_many_chunks() -> None:
    big = b'{"type":"a/b","seq":6,"time":1,"data":"' + b"x" * 3_000_000 + b'"}'
    data = log_bytes([*E1_LINES, big, b'{"type":"a/b","seq":7,"time":1,"data":null}'])
    scanner, events = scan_in_chunks(data, [1 << 20])
    assert [e.seq for e in events] == list(range(8))
    assert len(bytes(events[6].data)) == 3_000_002
    assert scanner.committed_bytes == len(data)


def test_packed_row_then_events() -> None:
    head = log_bytes(E1_LINES[:5])  # seqs 0..3
    data = head + E9_ROW + b"\n" + b'{"type":"a/b","seq":7,"time":1,"data":null}\n'
    scanner, events = scan_bytes(data)
    assert [e.seq for e in events] == list(range(8))
    assert scanner.committed_line == 7 and scanner.committed_bytes == len(data)


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"", "empty or header-less session log"),
        (E1_LINES[0], "empty or header-less session log"),
        (b"\n", "header line is not valid JSON"),
        (b"\xff\n", "header line is not valid JSON"),
        (b"[0]\n", "first line is not a session header"),
    ],
)
def test_header_errors(data: bytes, fragment: str) -> None:
    with pytest.raises(CorruptLog, match=fragment) as info:
        scan_bytes(data)
    assert info.value.line == 1


def test_header_errors_win_even_with_a_valid_rest() -> None:
    with pytest.raises(UnsupportedFormat):
        scan_bytes(b'{"type":"session","version":2}\n' + log_bytes(E1_LINES[1:]))
    with pytest.raises(UnsupportedFormat, match="Zstandard"):
        scan_bytes(b"\x28\xb5\x2f\xfd" + E1)


def test_identity_check() -> None:
    with pytest.raises(CorruptLog, match='requested id "demo-2" does not match header id "demo-1"'):
        scan_bytes(E1, expected_id="demo-2")
    scan_bytes(E1, expected_id="demo-1")


def test_seed_length_must_fit_the_committed_events() -> None:
    header = b'{"type":"session","version":0,"id":"c","createdAt":1,"seedLength":6,"delegationDepth":0}'
    scanner, _ = scan_bytes(log_bytes([header, *E1_LINES[1:]]))
    assert scanner.header is not None and scanner.header.seed_length == 6
    with pytest.raises(CorruptLog, match="seedLength 6 exceeds the 5 committed events"):
        scan_bytes(log_bytes([header, *E1_LINES[1:6]]))
    # Counted after dropping a tail: the kept events are what counts.
    with pytest.raises(CorruptLog, match="seedLength"):
        scan_bytes(log_bytes([header, *E1_LINES[1:6], b"junk"]))


def test_resume_from_a_boundary() -> None:
    first, _ = scan_bytes(E1)
    assert first.header is not None
    scanner = Scanner(
        "/x", resume=(first.header, first.committed_bytes, first.committed_line, first.next_seq)
    )
    more = scanner.feed(log_bytes(E5_LINES))
    assert [e.seq for e in more] == list(range(6, 11))
    assert scanner.committed_bytes == len(E1) + len(log_bytes(E5_LINES))


def test_two_objects_on_a_line_are_caught_even_when_another_object_spans_lines() -> None:
    # As many objects as LFs, but not one per line: the bulk path must not be fooled.
    two = b'{"type":"a/b","seq":6,"time":1,"data":1} {"type":"a/b","seq":7,"time":1,"data":2}'
    split = [b'{"type":"a/b","seq":8,"time":1,"data":', b'{"x":1}}']
    scanner, events = scan_bytes(log_bytes([*E1_LINES, two, *split]))
    assert len(events) == 6
    assert scanner.defect is not None
    assert (scanner.defect.line, scanner.defect.reason) == (8, UNPARSABLE)
    assert scanner.dropped_records == 3


@pytest.mark.parametrize(
    "record",
    [
        b'{"type":"tool/result","seq":6,"time":1,"data":{},"surfaceOp":"append","sourceEventSeqs":[6]}',
        b'{"type":"tool/result","seq":6,"time":1,"data":{},"surfaceOp":"append","sourceEventSeqs":[1,1]}',
        b'{"type":"tool/result","seq":6,"time":1,"data":{},"surfaceOp":"append","sourceEventSeqs":[]}',
        b'{"type":"a/b","seq":6,"time":1,"data":{},"ignorable":false}',
        b'{"type":"a/b","seq":6,"time":1,"data":{},"sourceEventSeqs":null}',
    ],
)
def test_bulk_path_applies_every_envelope_rule(record: bytes) -> None:
    scanner, events = scan_bytes(log_bytes([*E1_LINES, record, E1_LINES[1]]))
    assert len(events) == 6
    assert scanner.defect is not None and scanner.defect.reason == INVALID_ENVELOPE


def _non_ascii_log(events: int) -> tuple[bytes, list[bytes]]:
    line = '{"type":"a/b","seq":%d,"time":1,"data":{"t":"café ✓ %d"}}'
    lines = [(line % (i, i)).encode() for i in range(events)]
    return log_bytes([E1_LINES[0], *lines]), lines


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=0, max_value=3999), st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80"]))
def test_invalid_utf8_anywhere_in_a_large_chunk_is_found_at_its_line(bad_seq: int, bad: bytes) -> None:
    # 4000 non-ASCII lines (~240 KB) in one chunk: UTF-8 is checked in slices cut after LFs.
    data, lines = _non_ascii_log(4000)
    at = data.index(lines[bad_seq]) + lines[bad_seq].index(b"caf")
    scanner, events = scan_bytes(data[:at] + bad + data[at:])
    assert [e.seq for e in events] == list(range(bad_seq))
    assert scanner.defect is not None and scanner.defect.reason == UNPARSABLE
    assert scanner.defect.line == bad_seq + 2


def test_events_of_a_chunk_starting_mid_record_keep_their_bytes() -> None:
    data, lines = _non_ascii_log(3000)
    scanner, events = scan_in_chunks(data, [70_001])
    assert scanner.defect is None and scanner.committed_bytes == len(data)
    assert [e.to_json() for e in events] == lines
    assert events[2999].value() == {"t": "café ✓ 2999"}


DEEP = b"[" * 5000 + b"]" * 5000  # valid JSON, deeper than the decoders recurse


@pytest.mark.parametrize(
    "tail",
    [
        # the deep record itself, read in bulk with plain lines after it, or line by line
        b'{"type":"x/y","seq":6,"time":1,"data":' + DEEP + b"}\n" + E1_LINES[1] + b"\n",
        b'{"type":"x/y","seq":6,"time":1,"data":' + DEEP + b"}\r\n",
        # after a defect, where only the turn/end signal is looked for
        b'{"type":"turn/end","seq":6,"time":1,"data":' + DEEP + b"}\n"
        + b'{"type":"x/y","seq":6,"time":1,"data":' + DEEP + b"}\n",
    ],
)
def test_a_record_nested_too_deeply_to_read_is_refused_not_dropped(tmp_path, tail: bytes) -> None:
    # The record may be valid JSON the decoders cannot hold: reading must refuse the log with a
    # typed CorruptLog at that line (it was a bare RecursionError), and never take it for a
    # droppable defect that open would truncate.
    from eventlog import iter_events, read_log

    if tail.startswith(b'{"type":"turn/end"'):
        tail = b"junk\n" + tail
        line, offset = 9, len(E1) + 5
    else:
        line, offset = 8, len(E1)
    path = tmp_path / "deep.jsonl"
    path.write_bytes(E1 + tail)
    for read in (read_log, lambda p: list(iter_events(p))):
        with pytest.raises(CorruptLog) as info:
            read(path)
        assert "nested too deeply" in str(info.value)
        assert (info.value.line, info.value.offset) == (line, offset)
    assert path.read_bytes() == E1 + tail


async def test_a_header_nested_too_deeply_or_with_a_huge_number_is_typed(tmp_path) -> None:
    # Valid JSON Python's json module cannot hold (deep nesting; more digits than int() takes)
    # must not escape as RecursionError/“not valid JSON”: a deep header is a CorruptLog (and
    # store.list lists it with a problem), a huge version is still a version (log-format §3.2 step 3).
    from eventlog import SessionStore, read_log

    deep = tmp_path / "deep.jsonl"
    deep.write_bytes(b'{"type":"session","version":0,"id":"deep","createdAt":1,"x":' + DEEP + b"}\n")
    with pytest.raises(CorruptLog, match="first line is not a session header: nested too deeply"):
        read_log(deep)
    [info] = await SessionStore(tmp_path).list()
    assert info.id == "deep" and info.problem is not None and "nested too deeply" in info.problem

    digits = "7" * 5000
    huge = tmp_path / "huge.jsonl"
    huge.write_bytes(b'{"type":"session","version":%s,"id":"h"}\n' % digits.encode())
    with pytest.raises(UnsupportedFormat) as version:
        read_log(huge)
    assert str(version.value).startswith(f'session "h" uses log format v{digits}, but this turnlog reads only v0')
    huge.write_bytes(b'{"type":"session","version":0,"id":"h","createdAt":1,"x":%s}\n' % digits.encode())
    assert read_log(huge).header.id == "h"  # an unknown key, ignored
