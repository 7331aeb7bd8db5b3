"""Zstandard frames of a session log (dsh-roots §4): scan, decode, encode, and the log-level rules.

A Zstandard session log is a concatenation of RFC 8878 frames. Frame 0 holds exactly the header
line; every durable batch is one more frame of LF-terminated records. Everything here is pure
(bytes in, values out); the reader, store and commands do the file work around it.

- ``scan_frames`` walks the frames structurally, never decompressing: the byte range of every
  complete frame and the **torn start** (the first byte of a frame cut by the end of the data).
- ``decode_frame`` decompresses one complete frame and verifies its checksum; ``decode_torn``
  yields what a streaming decoder gives for a torn final frame without completing it.
- ``encode_frame`` writes one frame as turnlog writes them: level 3, content checksum, no
  dictionary.
- ``frame_plaintext``, ``header_text``, ``committed_pieces`` and ``read_text`` apply the
  log-level rules: frame 0 is exactly one header line, complete frames end on a record boundary,
  only the torn final frame is tolerant. ``committed_pieces`` is what the readers scan (pieces of
  about 1 MiB); ``read_text`` gives the whole plaintext with each frame's range in it.

Every refusal is a ``ZstdLogError`` carrying the reason as data (``reason``, ``offset``);
readers report it as ``corrupt Zstandard session log "<path>": <reason>`` (``message``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Final

import msgspec

from .format import ZSTD_MAGIC

if sys.version_info >= (3, 14):
    from compression import zstd as _zstd
else:
    from backports import zstd as _zstd

__all__ = [
    "EMPTY_LOG",
    "FIRST_FRAME",
    "TORN_RECORD",
    "Buffer",
    "Frame",
    "FrameScan",
    "FrameText",
    "FrameWriter",
    "ZstdLogError",
    "ZstdText",
    "committed_pieces",
    "decode_frame",
    "decode_torn",
    "encode_frame",
    "frame_plaintext",
    "header_text",
    "read_text",
    "scan_first_frame",
    "scan_frames",
]

Buffer = bytes | bytearray | memoryview
"""What the scanner and decoders read: the file's bytes (or a ``memoryview`` of an ``mmap``)."""

EMPTY_LOG: Final = "empty or header-less Zstandard session log"
FIRST_FRAME: Final = "first frame is not exactly one header line"
TORN_RECORD: Final = "complete frame contains a torn JSONL record"

# The frame header descriptor's bits (RFC 8878, section 3.1.1.1.1).
_RESERVED_BITS = 0x18  # the unused bit 4 and the reserved bit 3: refused (dsh-roots §4)
_SINGLE_SEGMENT = 0x20
_CHECKSUM = 0x04
_DICT_ID_SIZES = (0, 1, 2, 4)  # by Dictionary_ID_flag (bits 0-1)
_CONTENT_SIZE_SIZES = (0, 2, 4, 8)  # by Frame_Content_Size_flag (bits 6-7); 1 byte if single segment
_RLE_BLOCK = 1
_RESERVED_BLOCK = 3

_OPTIONS: Final[dict[int, int]] = {
    _zstd.CompressionParameter.compression_level: 3,
    _zstd.CompressionParameter.checksum_flag: 1,
    _zstd.CompressionParameter.dict_id_flag: 0,
}


class ZstdLogError(Exception):
    """A Zstandard session log refused: ``reason`` (one of the dsh-roots §4 messages, e.g.
    ``invalid frame magic at byte 12``) and ``offset``, the file offset it is about: the N of an
    ``at byte N`` reason, the frame's first byte for ``FIRST_FRAME`` and ``TORN_RECORD``, 0 for
    ``EMPTY_LOG``. ``str(exc)`` is the reason alone."""

    def __init__(self, reason: str, offset: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.offset = offset

    def message(self, path: object) -> str:
        """The one-line message readers report: ``corrupt Zstandard session log "<path>": <reason>``."""
        return f'corrupt Zstandard session log "{path}": {self.reason}'


class Frame(msgspec.Struct, frozen=True):
    """One complete frame: bytes ``start`` (its magic) to ``end`` (exclusive) of the file, and
    whether it carries a content checksum."""

    start: int
    end: int
    checksum: bool


class FrameScan(msgspec.Struct, frozen=True):
    """What ``scan_frames`` found: the complete frames in file order, the torn start (the first
    byte of a final frame the data ends inside of, else ``None``) and ``end``, the file offset
    just past the data scanned."""

    frames: tuple[Frame, ...]
    torn_start: int | None
    end: int


def _scan_one(data: Buffer, pos: int, base: int) -> tuple[int, bool] | None:
    """The end (index into ``data``) and checksum flag of the frame starting at ``data[pos]``,
    or ``None`` when the data ends inside it. Raises ``ZstdLogError`` for a structural error."""
    size = len(data)
    start = pos
    available = size - pos
    if available < 4:
        if data[pos:size] == ZSTD_MAGIC[:available]:
            return None
        raise ZstdLogError(f"invalid frame magic at byte {base + start}", base + start)
    if data[pos : pos + 4] != ZSTD_MAGIC:
        raise ZstdLogError(f"invalid frame magic at byte {base + start}", base + start)
    pos += 4
    if pos >= size:
        return None
    descriptor = data[pos]
    if descriptor & _RESERVED_BITS:
        raise ZstdLogError(f"reserved frame-header bit at byte {base + pos}", base + pos)
    single_segment = descriptor & _SINGLE_SEGMENT
    content_size = _CONTENT_SIZE_SIZES[descriptor >> 6] or (1 if single_segment else 0)
    # descriptor, window byte (absent in a single segment), dictionary id, content size
    pos += 1 + (0 if single_segment else 1) + _DICT_ID_SIZES[descriptor & 3] + content_size
    while True:
        if pos + 3 > size:
            return None
        header = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
        block_type = (header >> 1) & 3
        if block_type == _RESERVED_BLOCK:
            raise ZstdLogError(f"reserved block type at byte {base + pos}", base + pos)
        pos += 3 + (1 if block_type == _RLE_BLOCK else header >> 3)
        if header & 1:  # Last_Block
            break
    checksum = bool(descriptor & _CHECKSUM)
    if checksum:
        pos += 4
    return (pos, checksum) if pos <= size else None


def scan_frames(data: Buffer, base: int = 0) -> FrameScan:
    """Walk the frames of ``data`` (the file from offset ``base`` on) without decompressing.

    Checks each frame's magic (anything else, skippable frames included, is
    ``invalid frame magic at byte N``), its header descriptor (a reserved bit ``0x18`` is
    ``reserved frame-header bit at byte N``, N the descriptor byte), skips the window byte,
    dictionary id and content size fields, walks the 3-byte block headers (block type 3 is
    ``reserved block type at byte N``, N the block header's first byte; an RLE block's payload is
    one byte) and the optional 4-byte checksum. Offsets are file offsets (``base`` added). The end
    of the data inside a frame (a partial magic included) makes that frame's start the torn start
    and ends the scan. Raises ``ZstdLogError`` for the first structural error; empty data has no
    frames and no torn start.
    """
    frames: list[Frame] = []
    pos = 0
    size = len(data)
    while pos < size:
        found = _scan_one(data, pos, base)
        if found is None:
            return FrameScan(tuple(frames), base + pos, base + size)
        end, checksum = found
        frames.append(Frame(base + pos, base + end, checksum))
        pos = end
    return FrameScan(tuple(frames), None, base + size)


def scan_first_frame(data: Buffer) -> Frame | None:
    """Frame 0 of a log whose first bytes are ``data``: the frame, or ``None`` when ``data`` ends
    inside it (or is empty). Looks at nothing after frame 0 (``ls`` reads only the header).
    Raises ``ZstdLogError`` for a structural error in frame 0."""
    if not data:
        return None
    found = _scan_one(data, 0, 0)
    return None if found is None else Frame(0, found[0], found[1])


def decode_frame(data: Buffer, frame: Frame, base: int = 0) -> bytes:
    """The plaintext of one complete frame of ``data`` (the file from offset ``base`` on).

    Decompresses that frame alone (a fresh decoder, never a whole-file call) and verifies its
    content checksum and content size when it has them. Raises ``ZstdLogError``
    (``frame at byte N failed validation``) when decoding fails or the decoder does not end the
    frame exactly at ``frame.end``.
    """
    decoder = _zstd.ZstdDecompressor()
    try:
        text = decoder.decompress(data[frame.start - base : frame.end - base])
    except _zstd.ZstdError:
        text = None
    if text is None or not decoder.eof or decoder.unused_data:
        raise ZstdLogError(f"frame at byte {frame.start} failed validation", frame.start)
    return text


def decode_torn(data: Buffer, start: int, base: int = 0) -> bytes:
    """The plaintext a streaming decoder yields from the torn final frame at file offset ``start``
    (``data`` is the file from ``base`` on) without completing it: each block it could decode,
    with no checksum to verify. A decoder error counts as no plaintext (``b""``). Never raises."""
    try:
        return _zstd.ZstdDecompressor().decompress(data[start - base :])
    except _zstd.ZstdError:
        return b""


def encode_frame(plaintext: Buffer) -> bytes:
    """One frame holding ``plaintext`` (which may be empty): compression level 3, the content
    checksum flag set, the content size recorded, no dictionary. Never a skippable frame."""
    return _zstd.compress(plaintext, options=_OPTIONS)


class FrameWriter:
    """One frame written in pieces (a fork child's batch, which may be large): ``write`` returns
    the compressed bytes ready so far, ``finish`` the rest, checksum included. Same options as
    ``encode_frame``; the content size is not recorded (it is not known up front)."""

    def __init__(self) -> None:
        self._compressor = _zstd.ZstdCompressor(options=_OPTIONS)

    def write(self, plaintext: Buffer) -> bytes:
        return self._compressor.compress(plaintext)

    def finish(self) -> bytes:
        return self._compressor.flush(_zstd.ZstdCompressor.FLUSH_FRAME)


def frame_plaintext(data: Buffer, frame: Frame, *, first: bool, base: int = 0) -> bytes:
    """``decode_frame`` plus the log-level rule for that frame.

    Frame 0 (``first``) must decode to exactly one LF-terminated line, else ``FIRST_FRAME``; any
    later frame must be empty or end with LF, else ``TORN_RECORD``. Raises ``ZstdLogError``
    (offset: the frame's first byte).
    """
    text = decode_frame(data, frame, base)
    if first:
        if not text.endswith(b"\n") or text.count(b"\n") != 1:
            raise ZstdLogError(FIRST_FRAME, frame.start)
    elif text and not text.endswith(b"\n"):
        raise ZstdLogError(TORN_RECORD, frame.start)
    return text


def committed_pieces(data: Buffer, frames: tuple[Frame, ...], size: int) -> Iterator[bytes]:
    """The plaintext of the complete ``frames`` of ``data`` (``scan_frames(data).frames``, frame 0
    first), each decoded and checked by ``frame_plaintext``, in pieces of whole frames joined up
    to about ``size`` bytes: a reader scans each piece as the raw readers scan a chunk (the
    readers pass their chunk size, small enough to stay in the CPU cache while it is scanned), and
    no whole-file plaintext is built. Each piece is a fresh ``bytes``. Raises ``ZstdLogError``
    when it reaches a frame that breaks its rule (after yielding the pieces before it)."""
    view = memoryview(data)  # frames are sliced without copying
    group: list[bytes] = []
    length = 0
    for index, frame in enumerate(frames):
        text = frame_plaintext(view, frame, first=index == 0)
        group.append(text)
        length += len(text)
        if length >= size:
            yield group[0] if len(group) == 1 else b"".join(group)
            group, length = [], 0
    if group:
        yield group[0] if len(group) == 1 else b"".join(group)


def header_text(data: Buffer) -> bytes:
    """The header line (LF included) of a log whose first bytes are ``data``, read from frame 0
    only. Raises ``ZstdLogError``: ``EMPTY_LOG`` when frame 0 is not complete in ``data``, else
    whatever ``scan_first_frame`` and ``frame_plaintext`` raise for frame 0."""
    frame = scan_first_frame(data)
    if frame is None:
        raise ZstdLogError(EMPTY_LOG, 0)
    return frame_plaintext(data, frame, first=True)


class FrameText(msgspec.Struct, frozen=True):
    """A complete frame and where its plaintext lies in ``ZstdText.committed``:
    ``committed[text_start:text_end]``."""

    frame: Frame
    text_start: int
    text_end: int


class ZstdText(msgspec.Struct, frozen=True):
    """A whole Zstandard log read by ``read_text``.

    ``committed``: the plaintext of every complete frame, in order: the header line, then whole
    records; feed it to the strict scan (a defect anywhere in it is corruption).
    ``frames``: each complete frame's byte range and plaintext range. ``torn_start``: where the
    torn final frame starts (repair truncates the file there), else ``None``. ``recovered``: what
    the torn frame yielded (``b""`` when none or not decodable); scan it tolerantly, after
    ``committed``, and keep its complete valid records. ``file_bytes``: the size read.
    """

    committed: bytes
    frames: tuple[FrameText, ...]
    torn_start: int | None
    recovered: bytes
    file_bytes: int


def read_text(data: Buffer) -> ZstdText:
    """Read a whole Zstandard session log: scan its frames, decode each complete frame with its
    rule (``frame_plaintext``) and decode the torn final frame tolerantly (``decode_torn``).

    Raises ``ZstdLogError``: a structural error (``scan_frames``); ``EMPTY_LOG`` when there is no
    complete frame; a frame that fails validation; ``FIRST_FRAME``; ``TORN_RECORD``.
    """
    scan = scan_frames(data)
    if not scan.frames:
        raise ZstdLogError(EMPTY_LOG, 0)
    view = memoryview(data)  # frames are sliced without copying
    texts: list[bytes] = []
    frames: list[FrameText] = []
    length = 0
    for index, frame in enumerate(scan.frames):
        text = frame_plaintext(view, frame, first=index == 0)
        texts.append(text)
        frames.append(FrameText(frame, length, length + len(text)))
        length += len(text)
    recovered = b"" if scan.torn_start is None else decode_torn(data, scan.torn_start)
    return ZstdText(b"".join(texts), tuple(frames), scan.torn_start, recovered, scan.end)
