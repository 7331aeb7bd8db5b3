"""The readers on Zstandard session logs (dsh-roots §4, §6): read_log, read_header, iter_events,
index_log and tail dispatch on the encoding; complete frames are strict, only the torn final frame
is tolerant and its records are recovered."""

from __future__ import annotations

from contextlib import aclosing
from pathlib import Path

import pytest
import trio

from eventlog import CorruptLog, index_log, iter_events, read_header, read_log, tail
from eventlog._zstd import encode_frame, scan_frames
from eventlog.format import Event
from tests.eventlog.zstd_support import ONE, SS21, TE2, TS2, H, cli_compress, zstd_program

Z1 = encode_frame(H) + encode_frame(ONE)


def put(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "session.jsonl.zstd"
    path.write_bytes(data)
    return path


def lines(events: object) -> bytes:
    assert isinstance(events, (list, tuple))
    return b"".join(event.to_json() + b"\n" for event in events if isinstance(event, Event))


def test_z1_every_reader_sees_the_header_and_the_batch(tmp_path: Path) -> None:
    path = put(tmp_path, Z1)
    snapshot = read_log(path, expected_id="demo-1")
    assert lines(list(snapshot.events)) == ONE
    assert (snapshot.encoding, snapshot.frames, snapshot.repair) == ("zstd", 2, None)
    assert snapshot.committed_bytes == snapshot.file_bytes == len(Z1)
    assert read_header(path).id == "demo-1"
    assert lines(list(iter_events(path, start_seq=2))) == b"".join(ONE.splitlines(keepends=True)[2:])
    indexed = index_log(path)
    assert lines(list(indexed.events)) == ONE and indexed.frames == 2


def test_a_raw_log_reports_its_encoding(tmp_path: Path) -> None:
    path = tmp_path / "demo-1.jsonl"
    path.write_bytes(H + ONE)
    snapshot = read_log(path)
    assert (snapshot.encoding, snapshot.frames) == ("none", None)
    assert snapshot.repair is None or snapshot.repair.recovered == ()


def test_z3_a_partial_magic_is_truncated_with_nothing_recovered(tmp_path: Path) -> None:
    snapshot = read_log(put(tmp_path, Z1 + b"\x28\xb5"))
    assert lines(list(snapshot.events)) == ONE
    repair = snapshot.repair
    assert repair is not None
    assert (repair.truncate_to, repair.dropped_bytes, repair.recovered, repair.closers) == (len(Z1), 2, (), ())


def test_z4_a_frame_missing_its_last_checksum_byte_is_recovered(tmp_path: Path) -> None:
    frame = encode_frame(TS2 + TE2)
    snapshot = read_log(put(tmp_path, Z1 + frame[:-1]))
    assert lines(list(snapshot.events)) == ONE and snapshot.frames == 2
    repair = snapshot.repair
    assert repair is not None and repair.truncate_to == len(Z1)
    assert lines(list(repair.recovered)) == TS2 + TE2 and repair.closers == ()


def test_z5_a_torn_frame_recovers_its_complete_records_then_the_closers(tmp_path: Path) -> None:
    plaintext = TS2 + SS21 + TE2[:30]
    frame = encode_frame(plaintext)
    # Cut the frame inside its checksum: a streaming decoder yields the whole block.
    snapshot = read_log(put(tmp_path, Z1 + frame[:-2]))
    repair = snapshot.repair
    assert repair is not None and repair.truncate_to == len(Z1)
    assert lines(list(repair.recovered)) == TS2 + SS21
    assert [(e.type, e.seq) for e in repair.closers] == [("step/end", 8), ("turn/end", 9)]
    assert b"\"interrupted\"" in repair.closers[-1].to_json()
    assert all(e.time == repair.recovered[-1].time for e in repair.closers)
    assert repair.defect is not None and repair.defect.reason == "torn final record"


def test_z6_a_complete_frame_ending_inside_a_record_is_corrupt(tmp_path: Path) -> None:
    path = put(tmp_path, Z1 + encode_frame(b'{"type":"turn/start"'))
    for read in (read_log, index_log, lambda p: list(iter_events(p))):
        with pytest.raises(CorruptLog) as info:
            read(path)
        assert str(info.value) == (
            f'corrupt Zstandard session log "{path}": complete frame contains a torn JSONL record'
        )


def test_a_seq_gap_inside_complete_frames_is_corrupt_even_without_a_later_turn_end(tmp_path: Path) -> None:
    path = put(tmp_path, Z1 + encode_frame(TS2.replace(b'"seq":6', b'"seq":9')))
    expected = r'^corrupt Zstandard session log ".*": seq gap in committed region at line 8, byte \d+ \(expected 6, got 9\)$'
    with pytest.raises(CorruptLog, match=expected):
        read_log(path)


def test_z7_a_bad_checksum_hides_the_events_but_not_the_header(tmp_path: Path) -> None:
    data = bytearray(Z1)
    data[-1] ^= 0xFF
    path = put(tmp_path, bytes(data))
    assert read_header(path).id == "demo-1"
    start = scan_frames(Z1).frames[1].start
    with pytest.raises(CorruptLog) as info:
        read_log(path)
    assert str(info.value) == f'corrupt Zstandard session log "{path}": frame at byte {start} failed validation'


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (encode_frame(H + ONE[:10] + b"\n"), "first frame is not exactly one header line"),
        (encode_frame(b""), "first frame is not exactly one header line"),
        (b"\x28\xb5\x2f\xfd", "empty or header-less Zstandard session log"),
    ],
)
def test_z8_frame_0_is_exactly_one_header_line(tmp_path: Path, data: bytes, reason: str) -> None:
    path = put(tmp_path, data)
    for read in (read_log, read_header):
        with pytest.raises(CorruptLog) as info:
            read(path)
        assert str(info.value) == f'corrupt Zstandard session log "{path}": {reason}'


def test_the_header_identity_message_is_the_log_format_one(tmp_path: Path) -> None:
    path = put(tmp_path, Z1)
    with pytest.raises(CorruptLog) as info:
        read_log(path, expected_id="other")
    assert str(info.value) == f'corrupt session log "{path}": requested id "other" does not match header id "demo-1"'


def test_frames_made_by_the_zstd_program_read_with_and_without_checksums(tmp_path: Path) -> None:
    program = zstd_program()
    cut = ONE.index(b"\n", 200) + 1
    data = b"".join(
        cli_compress(program, part, check=check) for part, check in ((H, True), (ONE[:cut], False), (ONE[cut:], True))
    )
    assert lines(list(read_log(put(tmp_path, data)).events)) == ONE


async def collect(path: Path, count: int, grow: list[bytes]) -> list[Event]:
    seen: list[Event] = []
    with trio.fail_after(10):
        async with aclosing(tail(path, follow=True)) as events:
            async for event in events:
                seen.append(event)
                if len(seen) == count:
                    return seen
                if grow:
                    with path.open("ab") as file:
                        file.write(grow.pop(0))
    return seen


def test_tail_follows_frame_by_frame_and_waits_for_a_torn_frame(tmp_path: Path) -> None:
    path = put(tmp_path, Z1)
    frame = encode_frame(TS2 + TE2)
    # After the first event: half a frame (waited for, not corruption), then the rest.
    seen = trio.run(collect, path, 8, [frame[:7], frame[7:]])
    assert lines(seen) == ONE + TS2 + TE2


def test_tail_without_follow_stops_at_the_last_complete_frame(tmp_path: Path) -> None:
    path = put(tmp_path, Z1 + encode_frame(TS2 + TE2)[:-3])

    async def run() -> list[Event]:
        async with aclosing(tail(path, follow=False)) as events:
            return [event async for event in events]

    assert lines(trio.run(run)) == ONE
