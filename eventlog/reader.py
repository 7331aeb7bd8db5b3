"""Reading a session log without writing it (spec eventlog.md §5.5, §7.4, §10.4).

Every reader here is read-only: no lock, no write, no repair. Files are opened with
``O_NOFOLLOW`` (a symlink is refused with ``OSError``), read with ``os.pread`` in ~1 MiB
chunks and scanned by ``scan.Scanner``. ``read_log`` and ``read_log_fd`` report what
open-for-write would repair in ``LogSnapshot.repair``.
"""

from __future__ import annotations

import collections
import math
import os
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path

import msgspec
import trio

from .errors import CorruptLog, SessionNotFound
from .format import Event, SessionHeader, check_not_zstd, decode_header
from .repair import TurnTracker, plan_closers
from .scan import CHUNK_SIZE, Defect, Scanner

__all__ = [
    "Defect",
    "Repair",
    "LogSnapshot",
    "read_header",
    "read_log",
    "read_log_fd",
    "iter_events",
    "tail",
]

_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_HEADER_READ = 8192
TAIL_DEBOUNCE_MS = 50
# Idle re-read period. It also bounds how long a change made before the watcher started can go
# unseen and how long cancelling a follow waits for the watcher thread, hence well under 1 s.
TAIL_REREAD_MS = 200


class Repair(msgspec.Struct, frozen=True, rename="camel"):
    """What open-for-write does (or did) to make a log appendable (§7.3, §7.4)."""

    truncate_to: int | None  # committed size, when bytes must be dropped
    dropped_bytes: int
    dropped_records: int  # complete records discarded (0 for a torn fragment only)
    defect: Defect | None
    open_turn: int | None  # turn closed by the closers
    closers: tuple[Event, ...]


class LogSnapshot(msgspec.Struct, frozen=True, rename="camel"):
    """A log as read: its committed, valid events and what repair would do."""

    path: Path
    header: SessionHeader
    events: Sequence[Event]  # committed, valid events only; no closers
    file_bytes: int
    committed_bytes: int
    repair: Repair | None  # what open-for-write would do; None if nothing


def _open(path: str | os.PathLike[str]) -> int:
    return os.open(path, _OPEN_FLAGS)


def _chunks(fd: int, offset: int = 0, end: float = math.inf) -> Iterator[bytes]:
    # Fresh ``bytes`` per read (kept events may reference them), from ``offset`` to ``end`` or EOF.
    while offset < end:
        chunk = os.pread(fd, int(min(CHUNK_SIZE, end - offset)), offset)
        if not chunk:
            return
        offset += len(chunk)
        yield chunk


def read_header(
    path: str | os.PathLike[str],
    *,
    expected_id: str | None = None,
    max_bytes: int | None = None,
) -> SessionHeader:
    """Read and validate line 1 only (8 KiB reads until the first LF).

    With ``expected_id`` the header id must match (§4.2). ``max_bytes`` bounds the header line
    (``CorruptLog`` beyond it). Raises ``CorruptLog``, ``UnsupportedFormat`` or ``OSError``.
    """
    fd = _open(path)
    try:
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

    With ``expected_id`` the header id must match (§4.2) and a missing file raises
    ``SessionNotFound``; without it the file name is never interpreted. Raises ``CorruptLog``
    (header, identity, committed corruption, ``seedLength``, unrepairable open turn),
    ``UnsupportedFormat`` or ``OSError``.
    """
    try:
        fd = _open(path)
    except FileNotFoundError:
        if expected_id is None:
            raise
        raise SessionNotFound(expected_id) from None
    try:
        return read_log_fd(fd, Path(path), expected_id=expected_id)
    finally:
        os.close(fd)


def read_log_fd(fd: int, path: Path, *, expected_id: str | None = None) -> LogSnapshot:
    """``read_log`` through an already open descriptor, read with ``os.pread`` from offset 0
    (the descriptor's position is not used or moved). ``path`` is for messages and the
    snapshot. The store calls this under its writer lock."""
    scanner = Scanner(path, expected_id=expected_id)
    events: list[Event] = []
    for chunk in _chunks(fd):
        events += scanner.feed(chunk)
    scanner.finish()
    assert scanner.header is not None
    open_turn, closers = plan_closers(events, path)
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


def _check_start_seq(start_seq: int) -> None:
    if type(start_seq) is not int or start_seq < 0:
        raise ValueError(f"start_seq must be a non-negative integer, got {start_seq!r}")


def iter_events(path: str | os.PathLike[str], *, start_seq: int = 0) -> Iterator[Event]:
    """Stream the committed events with ``seq >= start_seq``, in order.

    Memory stays bounded by one chunk plus the largest record. Stops silently at the committed
    end (a torn or droppable tail is not an error); raises ``CorruptLog`` where ``read_log``
    would (header errors, committed corruption, ``seedLength`` beyond the events, an open turn
    repair could not close), possibly after yielding the events before the problem.
    """
    _check_start_seq(start_seq)
    fd = _open(path)
    try:
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

    def __init__(self, path: str | os.PathLike[str], start_seq: int) -> None:
        self.path = path
        self.next_yield = start_seq  # lowest seq not yielded yet
        self.header: SessionHeader | None = None
        self.inode: tuple[int, int] | None = None
        self.read_end = 0  # file size seen by the last pass
        # Record boundaries (offset, line, next_seq) at the end of recent passes, for shrinks.
        self.boundaries: collections.deque[tuple[int, int, int]] = collections.deque(maxlen=4096)

    def read_pass(self, on_truncate: Callable[[int], None] | None) -> Iterator[list[Event]]:
        """Read whatever is new, a chunk at a time; yield the events to yield (never one already
        yielded), in non-empty batches, so memory stays bounded by a chunk. Step it from one
        thread at a time; close it if it is abandoned."""
        fd = _open(self.path)
        try:
            stat = os.fstat(fd)
            inode = (stat.st_dev, stat.st_ino)
            size = stat.st_size
            if self.inode is not None and (inode != self.inode or size < self.read_end):
                if on_truncate is not None:
                    on_truncate(size)
                self._rewind(size if inode == self.inode else 0)
            self.inode = inode
            start, line, next_seq = self.boundaries[-1] if self.boundaries else (0, 0, 0)
            if self.header is None:
                scanner = Scanner(self.path)
            else:
                scanner = Scanner(self.path, resume=(self.header, start, line, next_seq))
            for chunk in _chunks(fd, scanner.file_bytes, size):
                fresh = [event for event in scanner.feed(chunk) if event.seq >= self.next_yield]
                if fresh:
                    self.next_yield = fresh[-1].seq + 1
                    yield fresh
            if self.header is None:
                scanner.finish()  # the first pass checks the header, seedLength, torn tail
            self.read_end = scanner.file_bytes
        finally:
            os.close(fd)
        self.header = scanner.header
        boundary = (scanner.committed_bytes, scanner.committed_line, scanner.next_seq)
        if not self.boundaries or self.boundaries[-1] != boundary:
            self.boundaries.append(boundary)

    def _rewind(self, size: int) -> None:
        # Continue from the last record boundary at or before ``size`` (or the start).
        while self.boundaries and self.boundaries[-1][0] > size:
            self.boundaries.pop()
        if not self.boundaries or size == 0:
            self.boundaries.clear()
            self.header = None


async def tail(
    path: str | os.PathLike[str],
    *,
    start_seq: int = 0,
    follow: bool = True,
    on_truncate: Callable[[int], None] | None = None,
) -> AsyncIterator[Event]:
    """Yield the committed events with ``seq >= start_seq``; with ``follow`` keep yielding new
    ones as their records become complete (§5.5, §10.4).

    Follows with ``watchfiles.awatch`` on the file's directory (filtered to this file, ~50 ms
    debounce) and re-reads every 200 ms without a notification. Never yields past a
    malformed record: it waits there until the file changes. If the file shrinks below what was
    read (or is replaced), ``on_truncate(new_size)`` is called and the scan continues from the
    last record boundary at or before the new size; events already yielded are not yielded
    again. Raises ``CorruptLog`` / ``UnsupportedFormat`` as ``read_log`` does, ``OSError`` if
    the file cannot be opened. Use it with ``contextlib.aclosing`` so the watcher stops promptly.
    """
    _check_start_seq(start_seq)
    state = _TailState(path, start_seq)
    changes = None
    if follow:
        import watchfiles  # here: only a follow needs it, not every importer of eventlog

        target = os.path.abspath(path)
        changes = watchfiles.awatch(
            os.path.dirname(target),
            watch_filter=lambda _change, changed: changed == target,
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
