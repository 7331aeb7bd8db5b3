"""Reading a session log without writing it (log-format §5.5, log-format §7.4, log-format §10.4).

Every reader here is read-only: no lock, no write, no repair. Files are opened with
``O_NOFOLLOW`` (a symlink is refused with ``OSError``), read with ``os.pread`` in ~1 MiB
chunks and scanned by ``scan.Scanner``. ``read_log``, ``read_log_fd`` and ``index_log`` report
what open-for-write would repair in ``LogSnapshot.repair``. ``index_log`` is ``read_log`` whose
``events`` stay on disk: a file-backed sequence holding one offset per event (log-format §11: validate
streams).
"""

from __future__ import annotations

import bisect
import collections
import errno
import math
import operator
import os
from array import array
from collections.abc import AsyncGenerator, Callable, Generator, Iterator, Sequence
from pathlib import Path
from stat import S_ISDIR, S_ISREG
from typing import Literal, overload

import msgspec

from ._zstd import (
    EMPTY_LOG,
    ZstdLogError,
    committed_pieces,
    decode_torn,
    frame_plaintext,
    header_text,
    scan_frames,
)
from .errors import CorruptLog, SessionNotFound
from .format import (
    ZSTD_MAGIC,
    Event,
    MalformedRecord,
    RecordDecoder,
    SessionHeader,
    check_not_zstd,
    decode_header,
    temp_name_pattern,
)
from .repair import TurnTracker, plan_closers
from .scan import CHUNK_SIZE, Defect, Scanner
from .vocab import TURN_END, TURN_START

__all__ = [
    "HEADER_LIMIT",
    "Defect",
    "LogIndexer",
    "LogSnapshot",
    "Repair",
    "index_log",
    "iter_events",
    "read_header",
    "read_log",
    "read_log_fd",
    "tail",
]

# O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below); it changes
# nothing for the regular files that are read.
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_HEADER_READ = 8192
HEADER_LIMIT = 1 << 20
"""The longest header line ``list`` reads (log-format §11); a longer one is the file's problem."""
TAIL_DEBOUNCE_MS = 50
# Idle re-read period. It also bounds how long a change made before the watcher started can go
# unseen and how long cancelling a follow waits for the watcher thread, hence well under 1 s.
TAIL_REREAD_MS = 200
# Bytes read around a record fetched by index from a file-backed snapshot: the checks walk
# back a few events from a point (timecontext), so neighbours usually come from one read.
INDEX_WINDOW = 64 * 1024


class Repair(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True):
    """What open-for-write does (or did) to make a log appendable (log-format §7.3, log-format §7.4)."""

    truncate_to: int | None  # committed size, when bytes must be dropped
    dropped_bytes: int
    dropped_records: int  # complete records discarded (0 for a torn fragment only)
    defect: Defect | None
    open_turn: int | None  # turn closed by the closers
    closers: tuple[Event, ...]
    # Events recovered from a Zstandard log's torn final frame, appended before the closers
    # (dsh-roots §4); always empty for a raw log, whose JSON therefore keeps its log-format §10.2 keys.
    recovered: tuple[Event, ...] = ()


class LogSnapshot(msgspec.Struct, frozen=True, rename="camel"):
    """A log as read: its committed, valid events and what repair would do."""

    path: Path
    header: SessionHeader
    events: Sequence[Event]  # committed, valid events only; no closers
    file_bytes: int
    committed_bytes: int  # for a Zstandard log: the end of its last complete frame
    repair: Repair | None  # what open-for-write would do; None if nothing
    encoding: Literal["none", "zstd"] = "none"
    frames: int | None = None  # complete Zstandard frames; None for a raw log


def _open(path: str | os.PathLike[str]) -> int:
    """A read-only descriptor of the regular file ``path``. Anything else (a directory, a FIFO,
    a device) raises an ``OSError`` that names the path: reading one would otherwise fail
    later without a file name (``EISDIR``, ``ESPIPE``) or block."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
    except BaseException:
        os.close(fd)
        raise
    if not S_ISREG(mode):
        os.close(fd)
        if S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
        raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
    return fd


def _chunks(fd: int, offset: int = 0, end: float = math.inf) -> Iterator[bytes]:
    # Fresh ``bytes`` per read (kept events may reference them), from ``offset`` to ``end`` or EOF.
    while offset < end:
        chunk = os.pread(fd, int(min(CHUNK_SIZE, end - offset)), offset)
        if not chunk:
            return
        offset += len(chunk)
        yield chunk


def _open_log(path: str | os.PathLike[str], expected_id: str | None) -> int:
    # A missing file is SessionNotFound (log-format §5.5, log-format §5.6): by the id asked
    # for, or by the path alone.
    try:
        return _open(path)
    except FileNotFoundError:
        raise SessionNotFound(expected_id, path=path) from None


def read_header(
    path: str | os.PathLike[str],
    *,
    expected_id: str | None = None,
    max_bytes: int | None = None,
) -> SessionHeader:
    """Read and validate line 1 only (8 KiB reads until the first LF).

    With ``expected_id`` the header id must match (log-format §4.2). ``max_bytes`` bounds the
    header line (``CorruptLog`` beyond it). Raises ``SessionNotFound`` for a missing file,
    ``CorruptLog``, ``UnsupportedFormat`` or ``OSError``.
    """
    fd = _open_log(path, expected_id)
    try:
        if _is_zstd(fd, path):
            return decode_header(_zstd_header(fd, path, max_bytes)[:-1], path, expected_id=expected_id)
        parts: list[bytes] = []
        size = 0
        while True:
            block = os.pread(fd, _HEADER_READ, size)
            if size == 0:
                check_not_zstd(block, path)
            lf = block.find(b"\n")
            if lf >= 0:
                parts.append(block[:lf])
                break
            if not block:
                raise CorruptLog(path, "empty or header-less session log", line=1, offset=0)
            parts.append(block)
            size += len(block)
            if max_bytes is not None and size > max_bytes:
                raise CorruptLog(
                    path, f"header line is longer than {max_bytes} bytes", line=1, offset=0
                )
    finally:
        os.close(fd)
    return decode_header(b"".join(parts), path, expected_id=expected_id)


def read_log(
    path: str | os.PathLike[str], *, expected_id: str | None = None
) -> LogSnapshot:
    """Read a whole log without writing it: header, committed valid events, would-be repair.

    With ``expected_id`` the header id must match (log-format §4.2); without it the file name
    is never interpreted. A missing file raises ``SessionNotFound`` (``session "<id>" not
    found`` by id, ``session log "<path>" not found`` by path). Raises ``CorruptLog`` (header,
    identity, committed corruption, ``seedLength``, unrepairable open turn),
    ``UnsupportedFormat`` or ``OSError``.
    """
    fd = _open_log(path, expected_id)
    try:
        return read_log_fd(fd, Path(path), expected_id=expected_id)
    finally:
        os.close(fd)


def read_log_fd(fd: int, path: Path, *, expected_id: str | None = None) -> LogSnapshot:
    """``read_log`` through an already open descriptor, read with ``os.pread`` from offset 0
    (the descriptor's position is not used or moved). ``path`` is for messages and the
    snapshot. The store calls this under its writer lock."""
    if _is_zstd(fd, path):
        return read_zstd(_read_all(fd), path, expected_id=expected_id)
    scanner = Scanner(path, expected_id=expected_id)
    events: list[Event] = []
    for _, kept in _scan(fd, scanner):
        events += kept
    return _snapshot(path, scanner, events, plan_closers(events, path))


def _scan(fd: int, scanner: Scanner) -> Iterator[tuple[bytes, list[Event]]]:
    # The cold scan of read_log and index_log (log-format §7.1): each chunk with the events the records
    # it completes hold, then the end-of-file checks (torn tail, seedLength).
    for chunk in _chunks(fd):
        yield chunk, scanner.feed(chunk)
    scanner.finish()


def _snapshot(
    path: Path,
    scanner: Scanner,
    events: Sequence[Event],
    planned: tuple[int | None, tuple[Event, ...]],
) -> LogSnapshot:
    # The snapshot of a finished scan, with what open-for-write would repair (log-format §7.4).
    assert scanner.header is not None
    open_turn, closers = planned
    dropped = scanner.file_bytes - scanner.committed_bytes
    repair = None
    if dropped or closers:
        repair = Repair(
            truncate_to=scanner.committed_bytes if dropped else None,
            dropped_bytes=dropped,
            dropped_records=scanner.dropped_records,
            defect=scanner.defect,
            open_turn=open_turn,
            closers=closers,
        )
    return LogSnapshot(
        path=path,
        header=scanner.header,
        events=events,
        file_bytes=scanner.file_bytes,
        committed_bytes=scanner.committed_bytes,
        repair=repair,
    )


# ------------------------------------------------------------------- Zstandard logs (dsh-roots §4)


def _is_zstd(fd: int, path: str | os.PathLike[str]) -> bool:
    """Whether the log is Zstandard: its name says so (``session.jsonl.zstd``) or its first
    bytes are the frame magic."""
    return os.fspath(path).endswith(".zstd") or os.pread(fd, 4, 0) == ZSTD_MAGIC


def _read_all(fd: int) -> bytes:
    # Frames are decoded from one buffer: a frame may span any chunk boundary.
    return _read_all_from(fd, 0, math.inf)


def _read_all_from(fd: int, offset: int, end: float) -> bytes:
    return b"".join(_chunks(fd, offset, end))


def _frame_events(plaintext: bytes, scanner: Scanner) -> list[Event]:
    # One complete frame's records, strictly (dsh-roots §4).
    events = scanner.feed(plaintext)
    if scanner.defect is not None:
        raise scanner.corruption()
    return events


def _zstd_corrupt(path: str | os.PathLike[str], exc: ZstdLogError) -> CorruptLog:
    return CorruptLog(path, exc.reason, offset=exc.offset, zstd=True)


def _zstd_header(fd: int, path: str | os.PathLike[str], max_bytes: int | None) -> bytes:
    """The header line (LF included) from frame 0 alone, read in growing blocks."""
    size = _HEADER_READ
    while True:
        data = os.pread(fd, size, 0)
        try:
            return header_text(data)
        except ZstdLogError as exc:
            if len(data) < size or (max_bytes is not None and size > max_bytes):
                raise _zstd_corrupt(path, exc) from None
        size *= 4


def _strict(
    path: str | os.PathLike[str], scan: Callable[[bytes, Scanner], list[Event]], plaintext: bytes, scanner: Scanner
) -> list[Event]:
    # The plaintext of complete frames (and of a torn frame) is read by the ordinary scanner;
    # its refusals are reported as Zstandard ones, except the header's own (log-format §4).
    try:
        return scan(plaintext, scanner)
    except CorruptLog as exc:
        if exc.line == 1:
            raise
        raise CorruptLog(path, exc.detail, line=exc.line, offset=exc.offset, zstd=True) from None


def _committed_events(plaintext: bytes, scanner: Scanner) -> list[Event]:
    # Inside complete frames the scan is strict: any defect is corruption (dsh-roots §4).
    events = _frame_events(plaintext, scanner)
    scanner.finish()
    return events


def _tolerant_events(plaintext: bytes, scanner: Scanner) -> list[Event]:
    # Only the torn final frame is tolerant: the ordinary log-format §7 rules (dsh-roots §4).
    events = scanner.feed(plaintext)
    scanner.finish()
    return events


def read_zstd(data: bytes, path: Path, *, expected_id: str | None = None) -> LogSnapshot:
    """``read_log`` of a Zstandard log held in ``data`` (dsh-roots §4): the events of its
    complete frames; a torn final frame's complete valid records are ``repair.recovered``,
    and ``repair.truncate_to`` is that frame's start. Raises ``CorruptLog``."""
    scanner = Scanner(path, expected_id=expected_id)
    events: list[Event] = []
    length = 0  # plaintext scanned
    try:
        scan = scan_frames(data)
        if not scan.frames:
            raise ZstdLogError(EMPTY_LOG, 0)
        # Piece by piece, as a raw log is scanned chunk by chunk (cache-friendly, no whole copy).
        for piece in committed_pieces(data, scan.frames, CHUNK_SIZE):
            events += _strict(path, _frame_events, piece, scanner)
            length += len(piece)
    except ZstdLogError as exc:
        raise _zstd_corrupt(path, exc) from None
    _strict(path, _committed_events, b"", scanner)  # the end of the strict scan
    torn_start = scan.torn_start
    torn_text = b"" if torn_start is None else decode_torn(data, torn_start)
    recovered: list[Event] = []
    torn: Scanner | None = None
    if torn_text:
        assert scanner.header is not None
        torn = Scanner(path, resume=(scanner.header, length, scanner.committed_line, scanner.next_seq))
        recovered = _strict(path, _tolerant_events, torn_text, torn)
    assert scanner.header is not None
    open_turn, closers = plan_closers(events + recovered if recovered else events, path)
    repair = None
    if torn_start is not None or closers:
        dropped = 0 if torn_start is None else scan.end - torn_start
        repair = Repair(
            truncate_to=torn_start,
            dropped_bytes=dropped,
            dropped_records=0 if torn is None else torn.dropped_records,
            defect=None if torn is None else torn.defect,
            open_turn=open_turn,
            closers=closers,
            recovered=tuple(recovered),
        )
    return LogSnapshot(
        path=path,
        header=scanner.header,
        events=events,
        file_bytes=scan.end,
        committed_bytes=scan.end if torn_start is None else torn_start,
        repair=repair,
        encoding="zstd",
        frames=len(scan.frames),
    )


def log_text(path: str | os.PathLike[str]) -> bytes:
    """The log's JSONL text, read without a lock: a raw log's bytes verbatim; a Zstandard log's
    frames decoded in order, a torn final frame's decodable text last — what ``zstd -dc`` prints
    (dsh-roots §4). The text is not validated. Raises ``OSError`` (``FileNotFoundError`` when there
    is no file) and ``CorruptLog`` (a frame that cannot be decoded)."""
    fd = _open(path)
    try:
        data = _read_all(fd)
        if not _is_zstd(fd, path):
            return data
    finally:
        os.close(fd)
    try:
        scan = scan_frames(data)
        text = b"".join(committed_pieces(data, scan.frames, CHUNK_SIZE))
        return text + (b"" if scan.torn_start is None else decode_torn(data, scan.torn_start))
    except ZstdLogError as exc:
        raise _zstd_corrupt(path, exc) from None


# ----------------------------------------------------------------------- file-backed snapshot


def index_log(
    path: str | os.PathLike[str], *, expected_id: str | None = None
) -> LogSnapshot:
    """``read_log`` whose ``events`` stay on disk (log-format §11: validate streams).

    The same scan, checks, errors, ``repair`` and counts as ``read_log``; ``snapshot.events``
    is a read-only ``Sequence[Event]`` backed by the file that holds only the byte offset of
    each event's record (8 bytes per event) and a small cache. ``len`` is O(1); iteration
    streams the file in ~1 MiB chunks (memory bounded by a chunk plus the largest record);
    indexing and slicing read just the records they need. Each access opens the file again
    (no descriptor is held) and yields events equal to ``read_log``'s, with byte-identical
    ``to_json()``. An access that finds the indexed events gone (the file shrank, was
    replaced or removed, or a record no longer decodes to its seq) raises ``CorruptLog``
    saying the log changed while it was being read.

    Raises what ``read_log`` raises. ``LogIndexer`` does the same while handing the events of
    the indexing scan to a caller.
    """
    return LogIndexer(path, expected_id=expected_id).snapshot()


class _SeqProbe(msgspec.Struct):
    # The first seq of a committed record: ``seq`` of an event line, ``seq0`` of a packed row.
    seq: int | None = None
    seq0: int | None = None


_SEQ_PROBE = msgspec.json.Decoder(_SeqProbe)


class LogIndexer:
    """The scan of ``index_log``, whose events a caller may consume on the way.

    Iterating it (once) opens the file, scans it exactly as ``read_log`` does and yields the
    committed events in order while recording each one's record offset, never the events
    themselves; memory stays bounded by a chunk plus the largest record. ``snapshot()`` then
    gives what ``index_log`` gives (scanning the rest first if the iteration stopped early).
    Both raise what ``read_log`` raises; after an error there is no snapshot. So a single
    pass serves a consumer of the events (e.g. ``validate``'s own rules) and the index.
    """

    def __init__(self, path: str | os.PathLike[str], *, expected_id: str | None = None) -> None:
        # The scan's state lives apart from the indexer, so the generator does not refer back
        # to it: an indexer dropped mid-scan closes its descriptor at once, not at the next
        # cyclic garbage collection.
        self._scan = _IndexScan(Path(path), expected_id)
        self._events = self._scan.run()

    def __iter__(self) -> Iterator[Event]:
        return self._events

    def snapshot(self) -> LogSnapshot:
        """The ``index_log`` snapshot; finishes the scan if the iteration did not."""
        for _ in self._events:
            pass
        if self._scan.result is None:
            raise RuntimeError("the scan failed; there is no snapshot")
        return self._scan.result


class _IndexScan:
    # The state of one LogIndexer scan: the offsets recorded so far and the result.

    def __init__(self, path: Path, expected_id: str | None) -> None:
        self._path = path
        self._expected_id = expected_id
        self._offsets = array("q")
        self._committed = 0  # committed_bytes after the previous chunk
        self._open_turn_at: int | None = None  # last turn/start, while no turn/end follows it
        self.result: LogSnapshot | None = None

    def run(self) -> Iterator[Event]:
        path = self._path
        fd = _open_log(path, self._expected_id)
        try:
            if _is_zstd(fd, path):
                # Frames cannot be entered at a record offset: a Zstandard log's events are
                # held in memory (dsh-roots §4).
                snapshot = read_zstd(_read_all(fd), path, expected_id=self._expected_id)
                yield from snapshot.events
                self.result = snapshot
                return
            stat = os.fstat(fd)
            scanner = Scanner(path, expected_id=self._expected_id)
            for chunk, kept in _scan(fd, scanner):
                if scanner.committed_bytes != self._committed:
                    self._index(scanner, chunk, kept)
                yield from kept
            assert scanner.header is not None
            events = _IndexedEvents(
                path, scanner.header, self._offsets, scanner.committed_bytes,
                (stat.st_dev, stat.st_ino),
            )
            planned: tuple[int | None, tuple[Event, ...]] = (None, ())
            if self._open_turn_at is not None:
                # log-format §7.3 reads only the events from the last turn/start on: the tracker that
                # plan_closers feeds, fed from the file (this descriptor) instead of a list.
                tracker = TurnTracker(path)
                for event in events._stream(self._open_turn_at, len(events), fd):
                    tracker.feed(event)
                planned = tracker.closers()
        finally:
            os.close(fd)
        self.result = _snapshot(path, scanner, events, planned)

    def _index(self, scanner: Scanner, chunk: bytes, events: list[Event]) -> None:
        # Record the offsets of the records this chunk completed: the lines from the previous
        # committed end to the new one. The first starts there (maybe in an earlier chunk),
        # each next one after an LF of this chunk. Before the header is committed the first
        # line is the header.
        base = scanner.file_bytes - len(chunk)
        before, self._committed = self._committed, scanner.committed_bytes
        first_seq = scanner.next_seq - len(events)
        starts = [before]
        find = chunk.find
        pos = max(before - base, 0)
        last_lf = scanner.committed_bytes - base - 1
        while (lf := find(b"\n", pos, last_lf)) >= 0:
            pos = lf + 1
            starts.append(base + pos)
        if before == 0:
            del starts[0]
        if len(starts) == len(events):
            self._offsets.extend(starts)
        else:
            self._index_rows(chunk, base, starts, first_seq, len(events))
        # Only the last turn marker matters (log-format §7.3), so look from the end of the batch.
        for k in range(len(events) - 1, -1, -1):
            kind = events[k].type
            if kind == TURN_START:
                self._open_turn_at = first_seq + k
                break
            if kind == TURN_END:
                self._open_turn_at = None
                break

    def _index_rows(
        self, chunk: bytes, base: int, starts: list[int], first_seq: int, count: int
    ) -> None:
        # Packed chunk rows (log-format §3.6) make one record stand for several events: every record but
        # the first lies wholly in this chunk, and its first seq says where its events begin.
        firsts = [first_seq]
        for start, stop in zip(starts[1:], starts[2:] + [self._committed]):
            probe = _SEQ_PROBE.decode(chunk[start - base : stop - base - 1])
            first = probe.seq if probe.seq is not None else probe.seq0
            assert first is not None  # the scanner accepted this record
            firsts.append(first)
        firsts.append(first_seq + count)
        for k, start in enumerate(starts):
            self._offsets.extend(array("q", [start]) * (firsts[k + 1] - firsts[k]))


class _IndexedEvents(Sequence[Event]):
    """The events of a log, read from its file on demand (see ``index_log``).

    Holds the path, the header, ``offsets`` (the record start of each event; the members of a
    packed row share one), the committed end, the file's identity, a decoder, and a cache of
    one read window and one decoded record. Not thread-safe for concurrent use.
    """

    __slots__ = (
        "_decoder",
        "_end",
        "_header",
        "_identity",
        "_offsets",
        "_path",
        "_record",
        "_window"
    )

    def __init__(
        self,
        path: Path,
        header: SessionHeader,
        offsets: array[int],
        end: int,
        identity: tuple[int, int],
    ) -> None:
        self._path = path
        self._header = header
        self._offsets = offsets
        self._end = end  # committed_bytes: the end of the last record
        self._identity = identity  # (st_dev, st_ino) of the indexed file
        self._decoder = RecordDecoder()
        self._window: tuple[int, bytes] = (0, b"")  # (file offset, bytes read there)
        self._record: tuple[int, int, list[Event]] | None = None  # (offset, first index, events)

    def __len__(self) -> int:
        return len(self._offsets)

    def __repr__(self) -> str:
        return f"<events of {str(self._path)!r}: {len(self)} indexed>"

    def __iter__(self) -> Iterator[Event]:
        return self._stream(0, len(self))

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...

    def __getitem__(self, index: int | slice) -> Event | list[Event]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step == 1:
                return list(self._stream(start, stop)) if start < stop else []
            return [self._event(i) for i in range(start, stop, step)]
        i = operator.index(index)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("event index out of range")
        return self._event(i)

    # ------------------------------------------------------------------ reading

    def _changed(self, detail: str) -> CorruptLog:
        return CorruptLog(self._path, f"the log changed while it was being read ({detail})")

    def _open(self) -> int:
        try:
            fd = _open(self._path)
        except FileNotFoundError:
            raise self._changed("the file is gone") from None
        stat = os.fstat(fd)
        if (stat.st_dev, stat.st_ino) != self._identity:
            os.close(fd)
            raise self._changed("the path names another file now")
        return fd

    def _bounds(self, i: int) -> tuple[int, int, int]:
        # (record start, index of its first event, record end) of the record holding event i.
        offsets = self._offsets
        start = offsets[i]
        first = bisect.bisect_left(offsets, start, 0, i)
        after = bisect.bisect_right(offsets, start, i)
        return start, first, offsets[after] if after < len(offsets) else self._end

    def _stream(self, start: int, stop: int, fd: int | None = None) -> Iterator[Event]:
        """Events ``start`` to ``stop - 1``, scanned from their records in ~1 MiB chunks."""
        if start >= stop:
            return
        begin, first, _ = self._bounds(start)
        end = self._bounds(stop - 1)[2]
        own = fd is None
        if fd is None:
            fd = self._open()
        try:
            # Resume at a record boundary found by the cold scan; its line number only serves
            # defect messages, and any defect here means the file changed, so it is not kept.
            scanner = Scanner(self._path, resume=(self._header, begin, 0, first))
            for chunk in _chunks(fd, begin, end):
                try:
                    events = scanner.feed(chunk)
                except CorruptLog:
                    raise self._changed(f"records after byte {begin} no longer scan") from None
                for event in events:
                    # A packed row's record also holds members before start or after stop.
                    if start <= event.seq < stop:
                        yield event
        finally:
            if own:
                os.close(fd)
        if scanner.next_seq < stop:
            raise self._changed(f"expected event {scanner.next_seq} at or before byte {end}")

    def _event(self, i: int) -> Event:
        record = self._record
        if record is None or record[0] != self._offsets[i]:
            start, first, end = self._bounds(i)
            line = self._read(start, end)
            try:
                if not line.isascii():
                    line.decode("utf-8")  # the decoder needs valid UTF-8 (log-format §3.1)
                events = self._decoder.decode(line, first)
            except (UnicodeDecodeError, MalformedRecord):
                raise self._changed(f"the record at byte {start} is not event {first}") from None
            if len(events) != bisect.bisect_right(self._offsets, start, i) - first:
                raise self._changed(f"the record at byte {start} holds other events")
            record = self._record = (start, first, events)
        return record[2][i - record[1]]

    def _read(self, start: int, end: int) -> bytes:
        """The record at ``[start, end)`` without its LF, from the cached window or a new
        read of up to ``INDEX_WINDOW`` bytes around it."""
        base, window = self._window
        if not (base <= start and end <= base + len(window)):
            low = max(min(start, end - INDEX_WINDOW // 2), self._offsets[0])
            high = min(max(end, start + INDEX_WINDOW // 2), self._end)
            fd = self._open()
            try:
                window = os.pread(fd, high - low, low)
            finally:
                os.close(fd)
            base = low
            if len(window) < end - low:
                raise self._changed(f"the file ends before byte {end}")
            self._window = (base, window)
        if window[end - base - 1] != 0x0A:
            raise self._changed(f"no record ends at byte {end}")
        # A copy, so the decoded events do not keep the whole window alive.
        return window[start - base : end - base - 1]


def _check_start_seq(start_seq: int) -> None:
    if type(start_seq) is not int or start_seq < 0:
        raise ValueError(f"start_seq must be a non-negative integer, got {start_seq!r}")


def iter_events(path: str | os.PathLike[str], *, start_seq: int = 0) -> Iterator[Event]:
    """Stream the committed events with ``seq >= start_seq``, in order.

    Memory stays bounded by one chunk plus the largest record. Stops silently at the committed
    end (a torn or droppable tail is not an error); raises ``CorruptLog`` where ``read_log``
    would (header errors, committed corruption, ``seedLength`` beyond the events, an open turn
    repair could not close), possibly after yielding the events before the problem. A missing
    file raises ``SessionNotFound`` (when the iteration starts).
    """
    _check_start_seq(start_seq)
    fd = _open_log(path, None)
    try:
        if _is_zstd(fd, path):
            for event in read_zstd(_read_all(fd), Path(path)).events:
                if event.seq >= start_seq:
                    yield event
            return
        scanner = Scanner(path)
        turns = TurnTracker(path)
        for chunk in _chunks(fd):
            for event in scanner.feed(chunk):
                turns.feed(event)
                if event.seq >= start_seq:
                    yield event
        scanner.finish()
        turns.closers()  # an open turn that repair could not close is corrupt, as for read_log
    finally:
        os.close(fd)


class _TailState:
    """Where a tail stands: the resumable scan position and what was already yielded."""

    def __init__(
        self, path: str | os.PathLike[str], start_seq: int, *, expected_id: str | None, follow: bool
    ) -> None:
        self.path = path
        self.expected_id = expected_id
        self.follow = follow  # a missing file is waited for, not an error
        self.next_yield = start_seq  # lowest seq not yielded yet
        self.header: SessionHeader | None = None
        self.inode: tuple[int, int] | None = None
        self.read_end = 0  # file size seen by the last pass
        self.gone = False  # the file was read, then removed: wait for it to come back
        self.started = False  # a header was read: a header-less file later is waited out
        # Record boundaries (offset, line, next_seq) at the end of recent passes, for shrinks.
        self.boundaries: collections.deque[tuple[int, int, int]] = collections.deque(maxlen=4096)
        self.zstd: bool | None = None  # the encoding, known at the first open
        self.frame_end = 0  # Zstandard: the end of the last complete frame read
        self.frame_scanner: Scanner | None = None  # Zstandard: the scan of the frames read

    def read_pass(self, on_truncate: Callable[[int], None] | None) -> Generator[list[Event], None, None]:
        """Read whatever is new, a chunk at a time; yield the events to yield (never one already
        yielded), in non-empty batches, so memory stays bounded by a chunk. Step it from one
        thread at a time; close it if it is abandoned.

        A file that does not exist yet is ``SessionNotFound``, or waited for by a follow (and
        then its header may still be incomplete when it appears: that is waited out too). Once
        the file has been read, its removal counts as a shrink to 0 bytes (reported once) and
        the follow waits for a file to be published under the name again."""
        try:
            fd = _open(self.path)
        except FileNotFoundError:
            if self.inode is None:
                if self.gone:
                    return  # still gone: wait for the next change
                if not self.follow:
                    raise SessionNotFound(self.expected_id, path=self.path) from None
                self.started = True  # not there yet: wait for it, and for its header
                return
            if on_truncate is not None:
                on_truncate(0)
            self._rewind(0)
            self.inode, self.read_end, self.gone = None, 0, True
            return
        try:
            stat = os.fstat(fd)
            inode = (stat.st_dev, stat.st_ino)
            size = stat.st_size
            if self.inode is not None and (inode != self.inode or size < self.read_end):
                if on_truncate is not None:
                    on_truncate(size)
                self._rewind(size if inode == self.inode else 0)
            self.inode, self.gone = inode, False
            if self.zstd is None:
                self.zstd = _is_zstd(fd, self.path)
            if self.zstd:
                yield from self._frames(fd, size)
                return
            start, line, next_seq = self.boundaries[-1] if self.boundaries else (0, 0, 0)
            if self.header is None:
                scanner = Scanner(self.path, expected_id=self.expected_id)
            else:
                scanner = Scanner(self.path, resume=(self.header, start, line, next_seq))
            for chunk in _chunks(fd, scanner.file_bytes, size):
                fresh = [event for event in scanner.feed(chunk) if event.seq >= self.next_yield]
                if fresh:
                    self.next_yield = fresh[-1].seq + 1
                    yield fresh
            # The first pass checks the header, seedLength and torn tail. A rescan after a
            # shrink to within line 1 (e.g. truncated to 0 bytes) waits for the header to come
            # back instead, as after a removal; a complete but bad header still raises.
            if self.header is None and not (self.started and scanner.header is None):
                scanner.finish()
            self.read_end = scanner.file_bytes
        finally:
            os.close(fd)
        self.header = scanner.header
        self.started = self.started or scanner.header is not None
        boundary = (scanner.committed_bytes, scanner.committed_line, scanner.next_seq)
        if not self.boundaries or self.boundaries[-1] != boundary:
            self.boundaries.append(boundary)

    def _frames(self, fd: int, size: int) -> Iterator[list[Event]]:
        """A pass over a Zstandard log (dsh-roots §6): each new complete frame's events; a torn
        frame is waited for (it is being written), never reported."""
        path = Path(self.path)
        base = self.frame_end
        data = _read_all_from(fd, base, size)
        first_pass = self.frame_scanner is None
        try:
            frames = scan_frames(data, base).frames
        except ZstdLogError as exc:
            raise _zstd_corrupt(path, exc) from None
        scanner = self.frame_scanner or Scanner(path, expected_id=self.expected_id)
        self.frame_scanner = scanner
        for frame in frames:
            try:
                text = frame_plaintext(data, frame, first=frame.start == 0, base=base)
            except ZstdLogError as exc:
                raise _zstd_corrupt(path, exc) from None
            events = _strict(path, _frame_events, text, scanner)
            self.frame_end = frame.end
            fresh = [event for event in events if event.seq >= self.next_yield]
            if fresh:
                self.next_yield = fresh[-1].seq + 1
                yield fresh
        if scanner.header is None:
            if not self.started:
                raise _zstd_corrupt(path, ZstdLogError(EMPTY_LOG, 0))
        else:
            if first_pass:
                scanner.finish()
            self.started = True
        self.header = scanner.header
        self.read_end = size

    def _rewind(self, size: int) -> None:
        # Continue from the last record boundary at or before ``size`` (or the start). A
        # Zstandard log starts over from its first frame (already yielded events stay so).
        if self.zstd:
            self.frame_end, self.frame_scanner, self.header = 0, None, None
            self.zstd = None
            return
        while self.boundaries and self.boundaries[-1][0] > size:
            self.boundaries.pop()
        if not self.boundaries or size == 0:
            self.boundaries.clear()
            self.header = None


def _concerns_log(target: str) -> Callable[[object, str], bool]:
    """The watch filter of a follow of ``target`` (an absolute path): its own changes, and
    those reported under a temp name of its publish (log-format §6.3). inotify names a change by the
    name the writer's descriptor was opened under, and a session published by this or another
    process keeps writing through the descriptor of ``<id>.jsonl.<12 hex>.tmp``, unlinked
    after the link, so its appends never carry the final name."""
    directory, name = os.path.split(target)
    temp_name = temp_name_pattern(name)

    def concerns(_change: object, changed: str) -> bool:
        if changed == target:
            return True
        head, tail = os.path.split(changed)
        return head == directory and temp_name.fullmatch(tail) is not None

    return concerns


async def tail(
    path: str | os.PathLike[str],
    *,
    start_seq: int = 0,
    follow: bool = True,
    on_truncate: Callable[[int], None] | None = None,
    expected_id: str | None = None,
) -> AsyncGenerator[Event, None]:
    """Yield the committed events with ``seq >= start_seq``; with ``follow`` keep yielding new
    ones as their records become complete (log-format §5.5, log-format §10.4).

    A file that does not exist is ``SessionNotFound`` without ``follow``; a follow waits for it
    to appear (as ``tail -F`` does) and then yields from ``start_seq``. With ``expected_id`` the
    header id must match (log-format §4.2), checked when the header is read.

    Follows with ``watchfiles.awatch`` on the file's directory (filtered to this file and the
    temp names it was published under, ~50 ms debounce) and re-reads every 200 ms without a
    notification. Never yields past a malformed record: it waits there until the file changes.
    If the file shrinks below what was read (or is replaced), ``on_truncate(new_size)`` is
    called and the scan continues from the last record boundary at or before the new size;
    events already yielded are not yielded again. A file removed after it was read counts as a
    shrink to 0 bytes: the follow then waits for a file to be published under the name again.
    Raises ``CorruptLog`` (header errors, committed corruption, ``seedLength`` beyond the
    events; never for an open turn, which a live writer may still close) or
    ``UnsupportedFormat`` as ``read_log`` does; ``SessionNotFound`` for a follow whose
    directory does not exist (there is nothing to watch); ``OSError`` if the file cannot be
    opened. Use it with ``contextlib.aclosing`` so the watcher stops promptly.
    """
    import trio  # here: only a tail waits, not every reader of a log

    _check_start_seq(start_seq)
    state = _TailState(path, start_seq, expected_id=expected_id, follow=follow)
    changes = None
    if follow:
        import watchfiles  # here: only a follow needs it, not every importer of eventlog

        target = os.path.abspath(path)
        directory = os.path.dirname(target)
        if not os.path.isdir(directory):
            raise SessionNotFound(expected_id, path=path)
        changes = watchfiles.awatch(
            directory,
            watch_filter=_concerns_log(target),
            debounce=TAIL_DEBOUNCE_MS,
            step=10,
            rust_timeout=TAIL_REREAD_MS,
            yield_on_timeout=True,
            recursive=False,
        )
    try:
        while True:
            batches = state.read_pass(on_truncate)
            try:
                while batch := await trio.to_thread.run_sync(next, batches, None):
                    for event in batch:
                        yield event
            finally:
                batches.close()
            if changes is None:
                return
            await anext(changes)  # a change to the file, or the periodic re-read
    finally:
        if changes is not None:
            await changes.aclose()
