"""eventlog._zstd: the structural frame scanner, per-frame decoding, the torn final frame, the
frame encoding and the log-level rules (dsh-roots §4, vectors Z1-Z9 at the frame level)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog import _zstd
from eventlog._zstd import (
    EMPTY_LOG,
    FIRST_FRAME,
    TORN_RECORD,
    Frame,
    FrameScan,
    ZstdLogError,
    committed_pieces,
    decode_frame,
    decode_torn,
    encode_frame,
    frame_plaintext,
    header_text,
    read_text,
    scan_first_frame,
    scan_frames,
)
from eventlog.repair import plan_closers
from eventlog.scan import TORN, Scanner, scan_bytes
from tests.eventlog.zstd_support import MAGIC, ONE, SS21, TE2, TS2, H, block, hand_frame

# magic; descriptor 0x24 (single segment, checksum); content size 0; an empty last raw block; checksum
EMPTY_CHECKSUMMED = bytes.fromhex("28B52FFD 24 00 010000 99E9D851")
Z1 = encode_frame(H) + encode_frame(ONE)


def refusal(data: bytes) -> ZstdLogError:
    with pytest.raises(ZstdLogError) as caught:
        read_text(data)
    return caught.value


# ------------------------------------------------------------------------------------------ Z9


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", FrameScan((), None, 0)),
        (MAGIC[:2], FrameScan((), 0, 2)),
        (MAGIC, FrameScan((), 0, 4)),
        (EMPTY_CHECKSUMMED[:-1], FrameScan((), 0, 12)),
    ],
    ids=["empty", "2 magic bytes", "4 magic bytes", "empty checksummed frame minus its last byte"],
)
def test_z9_scanner_torn_and_empty(data: bytes, expected: FrameScan) -> None:
    assert scan_frames(data) == expected


@pytest.mark.parametrize(
    ("data", "reason", "offset"),
    [
        (b"\x00\x00\x00\x00", "invalid frame magic at byte 0", 0),
        (MAGIC + b"\x08", "reserved frame-header bit at byte 4", 4),
        (MAGIC + b"\x20\x00" + b"\x07\x00\x00", "reserved block type at byte 6", 6),
    ],
    ids=["00 00 00 00", "descriptor 0x08", "block type 3"],
)
def test_z9_scanner_refusals(data: bytes, reason: str, offset: int) -> None:
    with pytest.raises(ZstdLogError) as caught:
        scan_frames(data)
    assert (caught.value.reason, caught.value.offset, str(caught.value)) == (reason, offset, reason)


def test_the_empty_checksummed_frame_is_one_complete_frame() -> None:
    assert scan_frames(EMPTY_CHECKSUMMED) == FrameScan((Frame(0, 13, True),), None, 13)
    assert decode_frame(EMPTY_CHECKSUMMED, Frame(0, 13, True)) == b""


@pytest.mark.parametrize(
    "head",
    [bytes.fromhex("50 2A 4D 18") + b"\x00\x00\x00\x00", MAGIC[:3] + b"\x00"],
    ids=["a skippable frame", "3 magic bytes and a wrong one"],
)
def test_anything_but_the_magic_is_invalid_skippable_frames_included(head: bytes) -> None:
    with pytest.raises(ZstdLogError, match="^invalid frame magic at byte 13$"):
        scan_frames(EMPTY_CHECKSUMMED + head)


def test_a_short_tail_that_is_not_a_magic_prefix_is_invalid() -> None:
    with pytest.raises(ZstdLogError, match="^invalid frame magic at byte 13$"):
        scan_frames(EMPTY_CHECKSUMMED + b"\x28\x00")
    assert scan_frames(EMPTY_CHECKSUMMED + MAGIC[:3]).torn_start == 13


def test_reserved_bit_0x10_is_refused_and_the_offsets_are_file_offsets() -> None:
    with pytest.raises(ZstdLogError) as caught:
        scan_frames(EMPTY_CHECKSUMMED + MAGIC + b"\x10\x00", base=100)
    assert caught.value.reason == "reserved frame-header bit at byte 117"


@pytest.mark.parametrize(
    ("descriptor", "fields"),
    [
        (0x00, b"\x00"),  # window byte only
        (0x01, b"\x00" + b"\x07"),  # + 1-byte dictionary id
        (0x02, b"\x00" + b"\x07\x00"),  # + 2-byte dictionary id
        (0x03, b"\x00" + b"\x07\x00\x00\x00"),  # + 4-byte dictionary id
        (0x20, b"\x05"),  # single segment: no window byte, 1-byte content size
        (0x40, b"\x00" + b"\x05\x00"),  # + 2-byte content size
        (0x80, b"\x00" + b"\x05\x00\x00\x00"),  # + 4-byte content size
        (0xC0, b"\x00" + b"\x05" + b"\x00" * 7),  # + 8-byte content size
        (0xE3, b"\x01\x02\x03\x04" + b"\x05" + b"\x00" * 7),  # dictionary id and content size
        (0x04, b"\x00"),  # checksum
    ],
)
def test_header_fields_are_skipped_by_their_flags(descriptor: int, fields: bytes) -> None:
    blocks = block(b"ab", last=False) + block(b"x", last=True, rle_size=3)
    checksum = b"\x01\x02\x03\x04" if descriptor & 0x04 else b""
    frame = MAGIC + bytes([descriptor]) + fields + blocks + checksum
    data = frame + EMPTY_CHECKSUMMED
    end = len(frame)
    assert scan_frames(data) == FrameScan(
        (Frame(0, end, bool(checksum)), Frame(end, end + 13, True)), None, end + 13
    )
    for cut in range(len(frame)):
        assert scan_frames(data[:cut]).torn_start == (0 if cut else None)


def test_rle_and_raw_blocks_decode_where_the_scanner_says() -> None:
    # Built by hand, so the real decoder checks the scanner's idea of each block's length.
    frame = hand_frame(block(b"abc\n", last=False), block(b"x", last=False, rle_size=10), block(b"\n", last=True))
    data = frame + frame
    scan = scan_frames(data)
    assert scan.frames == (Frame(0, len(frame), False), Frame(len(frame), 2 * len(frame), False))
    assert decode_frame(data, scan.frames[1]) == b"abc\nxxxxxxxxxx\n"


# ------------------------------------------------------------------------- decoding, encoding


def test_encode_frame_writes_one_checksummed_level_3_frame_without_dictionary() -> None:
    frame = encode_frame(ONE)
    assert frame.startswith(MAGIC)
    descriptor = frame[4]
    assert descriptor & 0x04 and not descriptor & 0x03  # checksum flag; no dictionary id field
    assert scan_frames(frame) == FrameScan((Frame(0, len(frame), True),), None, len(frame))
    assert decode_frame(frame, Frame(0, len(frame), True)) == ONE


def test_encode_frame_level_is_3() -> None:
    # The level is not recorded in a frame: compare with the library's own level-3 output.
    lib = _zstd._zstd
    text = ONE * 40
    level = lib.CompressionParameter.compression_level
    checksum = lib.CompressionParameter.checksum_flag
    assert encode_frame(text) == lib.compress(text, options={level: 3, checksum: 1})
    assert encode_frame(text) != lib.compress(text, options={level: 19, checksum: 1})


def test_a_big_plaintext_is_still_one_frame() -> None:
    text = b"".join(b'{"type":"x/y","seq":%d,"time":0,"data":"%s"}\n' % (i, str(i * 7919).encode()) for i in range(20000))
    frame = encode_frame(text)
    scan = scan_frames(frame)
    assert len(scan.frames) == 1 and scan.torn_start is None
    assert decode_frame(frame, scan.frames[0]) == text


def test_decode_frame_refuses_a_bad_checksum_and_a_frame_it_does_not_end_exactly() -> None:
    data = bytearray(Z1)
    data[-1] ^= 0x01
    second = scan_frames(bytes(data)).frames[1]
    with pytest.raises(ZstdLogError) as caught:
        decode_frame(bytes(data), second)
    assert caught.value.reason == f"frame at byte {second.start} failed validation"
    assert caught.value.offset == second.start
    whole = Frame(0, len(Z1), True)  # two frames are not one
    with pytest.raises(ZstdLogError, match="^frame at byte 0 failed validation$"):
        decode_frame(Z1, whole)


def test_decode_frame_reads_the_frame_at_its_file_offset() -> None:
    scan = scan_frames(Z1[len(encode_frame(H)) :], base=len(encode_frame(H)))
    assert decode_frame(Z1[scan.frames[0].start :], scan.frames[0], base=scan.frames[0].start) == ONE
    assert scan.frames[0] == Frame(len(encode_frame(H)), len(Z1), True)


def test_a_frame_with_a_dictionary_id_fails_validation() -> None:
    # turnlog writes no dictionary and reads none: the id makes the decoder ask for one.
    frame = MAGIC + b"\x01\x00\x07" + block(b"ab", last=True)
    with pytest.raises(ZstdLogError, match="^frame at byte 0 failed validation$"):
        decode_frame(frame, Frame(0, len(frame), False))


def test_decode_torn_yields_what_a_streaming_decoder_gives() -> None:
    frame = hand_frame(block(b"abc\n", last=False), block(b"x", last=False, rle_size=4), block(b"de\n", last=True))
    assert decode_torn(frame[:-2], 0) == b"abc\nxxxxd"  # a raw block streams byte by byte
    assert decode_torn(frame[:11], 0) == b"ab"  # magic, descriptor, window, block header, "ab"
    assert decode_torn(frame[:9], 0) == b""
    assert decode_torn(MAGIC, 0) == b""
    checksummed = encode_frame(TS2 + TE2)
    assert decode_torn(checksummed[:-1], 0) == TS2 + TE2
    assert decode_torn(b"xx" + checksummed[:-1], 2, base=0) == TS2 + TE2
    assert decode_torn(checksummed[:-1], 50, base=50) == TS2 + TE2


def test_decode_torn_counts_a_decoder_error_as_no_plaintext() -> None:
    assert decode_torn(MAGIC + b"\x01\x00\x07" + block(b"ab", last=False), 0) == b""


# ---------------------------------------------------------------------------- the log level


def test_z1_two_frames_header_then_batch() -> None:
    assert Z1.startswith(MAGIC)
    text = read_text(Z1)
    head = len(encode_frame(H))
    assert [f.frame for f in text.frames] == [Frame(0, head, True), Frame(head, len(Z1), True)]
    assert all(Z1[f.frame.start + 4] & 0x04 for f in text.frames)
    assert text.committed == H + ONE
    assert [text.committed[f.text_start : f.text_end] for f in text.frames] == [H, ONE]
    assert (text.torn_start, text.recovered, text.file_bytes) == (None, b"", len(Z1))


def test_z2_a_batch_appends_one_frame_after_an_unchanged_prefix() -> None:
    z2 = Z1 + encode_frame(TS2 + TE2)
    assert z2.startswith(Z1)
    text = read_text(z2)
    assert len(text.frames) == 3 and text.committed == H + ONE + TS2 + TE2


def test_z3_a_partial_magic_is_a_torn_frame_with_nothing_to_recover() -> None:
    text = read_text(Z1 + MAGIC[:2])
    assert text.committed == H + ONE and text.torn_start == len(Z1) and text.recovered == b""


def test_z4_a_frame_without_its_last_checksum_byte_recovers_its_records() -> None:
    text = read_text(Z1 + encode_frame(TS2 + TE2)[:-1])
    assert text.committed == H + ONE and text.torn_start == len(Z1)
    assert text.recovered == TS2 + TE2
    # repair: truncate at the torn start, append one frame of the recovered events (no closers:
    # the turn ended); the file then has no torn frame.
    repaired = Z1 + encode_frame(text.recovered)
    assert read_text(repaired).torn_start is None
    assert read_text(repaired).committed == H + ONE + TS2 + TE2


def test_z5_a_torn_frame_feeds_the_tolerant_scan_and_the_closers() -> None:
    partial = b'{"type":"user/message","seq":8,"ti'
    text = read_text(Z1 + encode_frame(TS2 + SS21 + partial)[:-2])
    assert text.committed == H + ONE and text.recovered == TS2 + SS21 + partial
    scanner, committed = scan_bytes(text.committed)
    assert scanner.defect is None and len(committed) == 6
    assert scanner.header is not None
    resume = (scanner.header, len(text.committed), scanner.committed_line, scanner.next_seq)
    tolerant = Scanner("<recovered>", resume=resume)
    recovered = tolerant.feed(text.recovered)
    tolerant.finish()
    assert [e.to_json() + b"\n" for e in recovered] == [TS2, SS21]
    assert tolerant.defect is not None and tolerant.defect.reason == TORN
    open_turn, closers = plan_closers([*committed, *recovered], "<log>")
    assert open_turn == 2
    assert [c.to_json() for c in closers] == [
        b'{"type":"step/end","seq":8,"time":1767265200001,"data":{"turn":2,"step":1}}',
        b'{"type":"turn/end","seq":9,"time":1767265200001,"data":{"turn":2,"reason":{"kind":"interrupted"}}}',
    ]


def test_z6_a_complete_frame_must_end_on_a_record_boundary() -> None:
    data = Z1 + encode_frame(b'{"type":"turn/start"')
    error = refusal(data)
    assert (error.reason, error.offset) == (TORN_RECORD, len(Z1))
    assert TORN_RECORD == "complete frame contains a torn JSONL record"
    assert error.message("/r/s/session.jsonl.zstd") == (
        'corrupt Zstandard session log "/r/s/session.jsonl.zstd": complete frame contains a torn JSONL record'
    )


def test_z7_a_bad_checksum_hides_the_log_but_not_its_header() -> None:
    data = bytearray(Z1)
    data[-1] ^= 0xFF
    assert header_text(bytes(data)) == H
    error = refusal(bytes(data))
    head = len(encode_frame(H))
    assert (error.reason, error.offset) == (f"frame at byte {head} failed validation", head)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (encode_frame(H + H) + encode_frame(ONE), FIRST_FRAME),
        (encode_frame(b"") + encode_frame(ONE), FIRST_FRAME),
        (encode_frame(H[:-1]), FIRST_FRAME),
        (encode_frame(H + b"x"), FIRST_FRAME),
        (MAGIC, EMPTY_LOG),
        (b"", EMPTY_LOG),
    ],
    ids=["two lines", "empty frame 0", "no LF", "text after the LF", "only the magic", "empty file"],
)
def test_z8_frame_0_is_exactly_one_header_line(data: bytes, reason: str) -> None:
    error = refusal(data)
    assert (error.reason, error.offset) == (reason, 0)
    with pytest.raises(ZstdLogError) as caught:
        header_text(data)
    assert caught.value.reason == reason
    assert FIRST_FRAME == "first frame is not exactly one header line"
    assert EMPTY_LOG == "empty or header-less Zstandard session log"


def test_an_empty_complete_frame_after_frame_0_is_valid() -> None:
    text = read_text(Z1 + encode_frame(b"") + encode_frame(TS2))
    assert text.committed == H + ONE + TS2
    assert [f.text_end - f.text_start for f in text.frames] == [len(H), len(ONE), 0, len(TS2)]


def test_a_torn_frame_0_is_a_header_less_log_whatever_it_decodes_to() -> None:
    assert decode_torn(encode_frame(H)[:-1], 0) == H
    assert refusal(encode_frame(H)[:-1]).reason == EMPTY_LOG
    assert scan_first_frame(encode_frame(H)[:-1]) is None and scan_first_frame(b"") is None


def test_frame_plaintext_applies_the_rule_of_its_position() -> None:
    frame = encode_frame(TS2)
    whole = Frame(0, len(frame), True)
    assert frame_plaintext(frame, whole, first=False) == TS2
    assert frame_plaintext(frame, whole, first=True) == TS2  # one line: a header-shaped frame
    two = encode_frame(TS2 + TE2)
    with pytest.raises(ZstdLogError, match=f"^{FIRST_FRAME}$"):
        frame_plaintext(two, Frame(0, len(two), True), first=True)
    assert frame_plaintext(two, Frame(0, len(two), True), first=False) == TS2 + TE2


def test_header_text_looks_at_nothing_after_frame_0() -> None:
    # ls reads only frame 0: garbage, a bad checksum or a cut later frame does not matter.
    assert header_text(encode_frame(H) + b"\x00\x00\x00\x00garbage") == H
    assert header_text(encode_frame(H) + encode_frame(ONE)[:7]) == H


def test_structural_errors_come_before_frame_validation() -> None:
    data = bytearray(Z1)
    data[-1] ^= 0xFF
    with pytest.raises(ZstdLogError, match=f"^invalid frame magic at byte {len(Z1)}$"):
        read_text(bytes(data) + b"\x00\x00\x00\x00")


# ------------------------------------------------------------------------------- properties

_RECORD = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b" ") + b"\n")
_BATCH = st.lists(_RECORD, max_size=4).map(b"".join)


def _frames(batches: list[bytes]) -> tuple[bytes, list[int]]:
    # The file of a header frame and one frame per batch, and every frame's end.
    ends: list[int] = []
    data = b""
    for plaintext in [H, *batches]:
        data += encode_frame(plaintext)
        ends.append(len(data))
    return data, ends


@settings(max_examples=150, deadline=None)
@given(batches=st.lists(_BATCH, min_size=1, max_size=5), cut=st.floats(0, 1))
def test_any_truncation_keeps_every_complete_frame_and_reports_the_torn_start(
    batches: list[bytes], cut: float
) -> None:
    data, ends = _frames(batches)
    size = round(cut * len(data))
    complete = [end for end in ends if end <= size]
    torn = None if size in (0, *complete) else (complete[-1] if complete else 0)
    scan = scan_frames(data[:size])
    assert [f.end for f in scan.frames] == complete and scan.torn_start == torn
    if not complete:
        with pytest.raises(ZstdLogError, match=f"^{EMPTY_LOG}$"):
            read_text(data[:size])
        return
    text = read_text(data[:size])
    assert text.committed == b"".join([H, *batches][: len(complete)])
    assert text.torn_start == torn
    if torn is not None:
        assert [H, *batches][len(complete)].startswith(text.recovered)
    else:
        assert text.recovered == b""


def _check_damage(damaged: bytes, ends: list[int], plaintexts: list[bytes], position: int) -> str:
    # The outcome of reading a file whose byte ``position`` (inside a complete frame) was damaged:
    # a typed refusal, the same plaintext, or the damaged frame reported as the torn final frame.
    hit = next(i for i, end in enumerate(ends) if position < end)
    try:
        text = read_text(damaged)
    except ZstdLogError as exc:
        assert exc.reason and isinstance(exc.offset, int)
        return "refused"
    if text.torn_start is None:  # the damage still decodes, checksum and all, to the same bytes
        assert text.committed == b"".join(plaintexts)
        return "same"
    assert text.torn_start == (ends[hit - 1] if hit else 0)
    assert text.committed == b"".join(plaintexts[:hit])
    return "torn"


@settings(max_examples=300, deadline=None)
@given(
    batches=st.lists(_BATCH, min_size=1, max_size=4),
    where=st.floats(0, 1, exclude_max=True),
    flip=st.integers(1, 255),
)
def test_corruption_inside_complete_frames_is_refused_or_visible(batches: list[bytes], where: float, flip: int) -> None:
    data, ends = _frames(batches)
    position = int(where * len(data))
    damaged = bytearray(data)
    damaged[position] ^= flip
    _check_damage(bytes(damaged), ends, [H, *batches], position)


def test_every_bit_flip_of_a_small_log_is_refused_or_visible() -> None:
    plaintexts = [H, ONE, TS2 + TE2, b""]
    data, ends = _frames(plaintexts[1:])
    outcomes = set()
    for position in range(len(data)):
        for flip in (0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xFF):
            damaged = bytearray(data)
            damaged[position] ^= flip
            outcomes.add(_check_damage(bytes(damaged), ends, plaintexts, position))
    assert outcomes == {"refused", "same", "torn"}


def test_committed_pieces_join_whole_frames_up_to_the_size_and_check_each() -> None:
    batches = [TS2, SS21, TE2, ONE]
    data, _ends = _frames(batches)
    frames = scan_frames(data).frames
    assert len(H) < len(SS21) + len(TE2) < len(H) + len(TS2)
    pieces = list(committed_pieces(data, frames, len(SS21) + len(TE2)))
    assert pieces == [H + TS2, SS21 + TE2, ONE]  # each piece reaches the size, the last is the rest
    assert list(committed_pieces(data, frames, 1 << 20)) == [H + TS2 + SS21 + TE2 + ONE]
    damaged = bytearray(data)
    damaged[frames[3].end - 1] ^= 0xFF  # the third batch's checksum
    pieces = committed_pieces(bytes(damaged), frames, 1)
    assert [next(pieces) for _ in range(3)] == [H, TS2, SS21]  # the frames before the damaged one
    with pytest.raises(ZstdLogError, match=f"^frame at byte {frames[3].start} failed validation$"):
        next(pieces)
