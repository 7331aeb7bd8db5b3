"""The scan of a session log over bytes (log-format §7.1, log-format §7.2, log-format §11).

``Scanner`` is fed the file's bytes in order, in chunks of any size, and keeps the committed,
valid prefix: the header, then every event up to the first defect. After the first defect it
only counts the remaining complete records and looks for the turn/end signal that turns a
droppable tail into committed corruption (``CorruptLog``). A final segment without LF is a torn
fragment and never part of the log.

No I/O: readers (``reader.py``) feed it from a file descriptor. Memory stays bounded by what
the caller keeps: ``feed`` returns the events of each chunk and holds only a partial record.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from ._lone import decode_record
from .errors import CorruptLog
from .format import (
    SEQ_GAP,
    UNPARSABLE,
    Event,
    MalformedRecord,
    RecordDecoder,
    SessionHeader,
    check_not_zstd,
    decode_header,
)

__all__ = ["CHUNK_SIZE", "TORN", "Defect", "Scanner", "scan_bytes"]

CHUNK_SIZE = 1 << 20
_UTF8_SLICE = 1 << 16
TORN = "torn final record"


class Defect(msgspec.Struct, frozen=True, rename="camel"):
    """The first defect of a log: where it starts and why (log-format §5.5)."""

    line: int  # 1-based physical line (the header is line 1)
    offset: int  # byte offset of the start of the record
    reason: str  # "torn final record" | "unparsable committed event" |
    #              "invalid event envelope" | "seq gap in committed region"
    detail: str


class _TypeProbe(msgspec.Struct):
    type: Any = None


_TYPE_PROBE = msgspec.json.Decoder(_TypeProbe)


def _signals_turn_end(line: bytes) -> bool:
    # log-format §7.2: the record parses as a JSON object whose "type" is "turn/end" (nothing else
    # checked), escaped lone surrogates included (dsh-roots §5).
    try:
        kind: object = _TYPE_PROBE.decode(line).type
    except msgspec.DecodeError:
        try:
            value = decode_record(line).value
        except (ValueError, RecursionError):
            return False
        kind = value.get("type") if isinstance(value, dict) else None
    return kind == "turn/end"


def _is_utf8(data: bytes) -> bool:
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _utf8_valid_until(chunk: bytes, start: int, end: int) -> int:
    # Offset in ``chunk`` up to which chunk[start:end] is valid UTF-8 (``end`` if all of it).
    # Lines end at LF, which never occurs inside a multibyte sequence, so every line that ends
    # before the returned offset is valid on its own, and so does every slice cut after an LF.
    # Decoding ~64 KiB slices rather than the whole chunk is several times faster: the decoded
    # text (thrown away) stays in reused, cached memory.
    if chunk.isascii():
        return end
    view = memoryview(chunk)
    pos = start
    while pos < end:
        cut = chunk.find(b"\n", min(pos + _UTF8_SLICE, end) - 1, end) + 1 or end
        try:
            str(view[pos:cut], "utf-8")
        except UnicodeDecodeError as exc:
            return pos + exc.start
        pos = cut
    return end


class Scanner:
    """Incremental scan of one log (log-format §7.1). Feed the bytes in file order, then call ``finish``.

    After ``finish``: ``header``; ``next_seq`` (number of kept events); ``committed_bytes``
    (end of the last kept record, just past its LF); ``defect`` (the first defect, a torn
    fragment included); ``dropped_records`` (complete records after ``committed_bytes``);
    ``file_bytes`` (bytes fed).

    ``feed`` and ``finish`` raise ``CorruptLog`` for header errors, committed corruption
    (log-format §7.2), a header-less file and a ``seedLength`` beyond the committed events;
    ``UnsupportedFormat`` for another version or a Zstandard file.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        expected_id: str | None = None,
        resume: tuple[SessionHeader, int, int, int] | None = None,
    ) -> None:
        """Scan from the start of the file, or ``resume=(header, offset, line, next_seq)`` from a
        record boundary found by an earlier scan (``offset`` bytes and ``line`` lines before it)."""
        self.path = path
        self._expected_id = expected_id
        self._decoder = RecordDecoder()
        self._parts: list[bytes] = []  # the pending partial record
        self._pending = 0  # its length
        self.header: SessionHeader | None = None
        self.next_seq = 0
        self.committed_bytes = 0
        self.committed_line = 0  # physical lines through the last kept record
        self.file_bytes = 0  # bytes fed (absolute offset of the end of the input so far)
        self.defect: Defect | None = None
        self.dropped_records = 0
        self._line = 0  # physical lines completed so far
        if resume is not None:
            self.header, offset, line, self.next_seq = resume
            self.committed_bytes = self.file_bytes = offset
            self.committed_line = self._line = line

    # ---------------------------------------------------------------- feeding

    def feed(self, chunk: bytes) -> list[Event]:
        """Scan the next bytes of the file; return the events kept from the records they
        complete. Pass a fresh ``bytes`` object: kept events may reference it."""
        if not chunk:
            return []
        kept: list[Event] = []
        start = 0
        if self._parts or self.file_bytes == 0:
            if self.file_bytes == 0:
                check_not_zstd(chunk, self.path)
            lf = chunk.find(b"\n")
            if lf < 0:
                self._parts.append(chunk)
                self._pending += len(chunk)
                self.file_bytes += len(chunk)
                return kept
            line = b"".join((*self._parts, chunk[:lf])) if self._parts else chunk[:lf]
            record_start = self.file_bytes - self._pending
            self._parts.clear()
            self._pending = 0
            self._record(line, record_start, _is_utf8(line), kept)
            start = lf + 1
        end = chunk.rfind(b"\n") + 1
        if end > start:
            self._records(chunk, start, end, kept)
        else:
            end = start
        if end < len(chunk):
            rest = chunk[end:]
            self._parts.append(rest)
            self._pending = len(rest)
        self.file_bytes += len(chunk)
        return kept

    def _records(self, chunk: bytes, start: int, end: int, kept: list[Event]) -> None:
        # The complete records chunk[start:end] (``end`` just past an LF): all at once when
        # they are plain valid event lines, else one by one (the hot loop of the slow path).
        base = self.file_bytes
        valid_until = _utf8_valid_until(chunk, start, end)
        if self.defect is None and self.header is not None and valid_until == end:
            events = self._decoder.decode_region(chunk, start, end, self.next_seq)
            if events is not None:  # one event per line
                kept += events
                self.next_seq += len(events)
                self._line += len(events)
                self.committed_line = self._line
                self.committed_bytes = base + end
                return
        find = chunk.find
        decode = self._decoder.decode
        pos = start
        while pos < end:
            lf = find(b"\n", pos)
            if self.defect is None and self.header is not None and lf <= valid_until:
                try:
                    events = decode(chunk[pos:lf], self.next_seq)
                except MalformedRecord:
                    self._record(chunk[pos:lf], base + pos, True, kept)
                except RecursionError:
                    raise self._too_deep(self._line + 1, base + pos) from None
                else:
                    kept += events
                    self.next_seq += len(events)
                    self._line += 1
                    self.committed_line = self._line
                    self.committed_bytes = base + lf + 1
            else:
                line = chunk[pos:lf]
                self._record(line, base + pos, lf <= valid_until or _is_utf8(line), kept)
            pos = lf + 1

    def _record(self, line: bytes, offset: int, utf8: bool, kept: list[Event]) -> None:
        # One complete record (without its LF) starting at file offset ``offset``.
        self._line += 1
        if self.header is None:
            if not utf8:
                raise CorruptLog(self.path, "header line is not valid JSON (not UTF-8)", line=1, offset=0)
            self.header = decode_header(line, self.path, expected_id=self._expected_id)
            self.committed_bytes = offset + len(line) + 1
            self.committed_line = self._line
            return
        try:
            self._event_record(line, offset, utf8, kept)
        except RecursionError:
            raise self._too_deep(self._line, offset) from None

    def _event_record(self, line: bytes, offset: int, utf8: bool, kept: list[Event]) -> None:
        # ``_record`` after the header.
        if self.defect is not None:
            self.dropped_records += 1
            if _signals_turn_end(line):
                raise self.corruption()
            return
        try:
            if not utf8:
                raise MalformedRecord(UNPARSABLE, "record is not valid UTF-8")
            events = self._decoder.decode(line, self.next_seq)
        except MalformedRecord as exc:
            self.defect = Defect(self._line, offset, exc.reason, exc.detail)
            self.dropped_records = 1
            if _signals_turn_end(line):
                raise self.corruption() from None
            return
        kept += events
        self.next_seq += len(events)
        self.committed_line = self._line
        self.committed_bytes = offset + len(line) + 1

    def _too_deep(self, line: int, offset: int) -> CorruptLog:
        # A record nested deeper than the decoders recurse may still be valid JSON, and so may
        # be a committed turn/end: it is neither kept nor dropped as a tail; the log is refused.
        return CorruptLog(
            self.path,
            f"record at line {line}, byte {offset} is nested too deeply to read",
            line=line,
            offset=offset,
        )

    def corruption(self) -> CorruptLog:
        """The ``CorruptLog`` of the first defect, as committed corruption (log-format §7.2)."""
        defect = self.defect
        assert defect is not None
        where = f"at line {defect.line}, byte {defect.offset}"
        if defect.reason == SEQ_GAP:
            message = f"{defect.reason} {where} ({defect.detail})"
        else:
            message = f"{defect.reason} {where}: {defect.detail}"
        return CorruptLog(self.path, message, line=defect.line, offset=defect.offset)

    # ---------------------------------------------------------------- end of input

    def finish(self) -> None:
        """End of file: a pending partial record is the torn fragment (recorded as the defect if
        there is none yet); check that there is a header and that ``seedLength`` fits."""
        if self.header is None:
            raise CorruptLog(self.path, "empty or header-less session log", line=1, offset=0)
        if self._pending and self.defect is None:
            self.defect = Defect(
                self._line + 1,
                self.file_bytes - self._pending,
                TORN,
                f"{self._pending} bytes after the last LF",
            )
        seed_length = self.header.seed_length
        if seed_length is not None and seed_length > self.next_seq:
            raise CorruptLog(
                self.path,
                f"seedLength {seed_length} exceeds the {self.next_seq} committed events",
                line=1,
                offset=0,
            )


def scan_bytes(
    data: bytes, path: str | os.PathLike[str] = "<bytes>", *, expected_id: str | None = None
) -> tuple[Scanner, list[Event]]:
    """Scan a whole log held in memory (tests, small files): the finished scanner and the
    kept events."""
    scanner = Scanner(path, expected_id=expected_id)
    events = scanner.feed(data)
    scanner.finish()
    return scanner, events
