"""The file of one live session: its durable prefix and its atomic first publish
(log-format §6.2, log-format §6.3, log-format §7.4).

``LogFile`` does the blocking file work of a ``Session``: writing a batch at ``good_size`` (the
size of the durable prefix) and syncing it, cutting the file back after a failure, publishing a
new session's file through a locked temp name and a hard link, and committing open's repair.
Every effect goes through ``eventlog.fileio``. The session's writer thread calls it (the store,
through ``trio.to_thread``, during open, before that thread exists), never two threads at once;
it holds no trio state.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from . import fileio
from ._zstd import encode_frame
from .errors import PersistenceError
from .format import Event, temp_name_pattern, temp_path


class FileFailure(Exception):
    """A failed file operation, before the session makes it a ``PersistenceError``."""

    def __init__(self, detail: str, cause: BaseException | None, *, permanent: bool = False) -> None:
        super().__init__(detail)
        self.detail = detail
        self.cause = cause
        self.permanent = permanent

    def error(self, id: str) -> PersistenceError:
        err = PersistenceError(id, self.detail, permanent=self.permanent)
        err.__cause__ = self.cause
        return err


def _failed(op: str, cause: OSError) -> FileFailure:
    return FileFailure(f"{op} failed: {cause}", cause)


def encode(events: Sequence[Event]) -> bytes:
    """The records of ``events``, each followed by LF (log-format §3.1)."""
    return b"\n".join([event.to_json() for event in events]) + b"\n"


class LogFile:
    """The file of session ``id`` at ``path``.

    ``fd`` is None for a session not yet published (create); else the locked descriptor of its
    file, whose first ``good_size`` bytes are the durable log. Guarantees: a batch is written at
    ``good_size`` and synced before ``good_size`` grows; after a failed write, sync or truncate
    the file is cut back to ``good_size`` (best effort, synced), so a retry rewrites the same
    bytes; a failed sync is never retried alone. With ``zstd`` every batch is one checksummed
    Zstandard frame and the header is frame 0 (dsh-roots §4): a rollback to ``good_size`` drops
    a whole frame, so a retry writes one whole frame again.
    """

    def __init__(
        self, *, id: str, path: Path, header_line: bytes, fd: int | None, good_size: int, zstd: bool = False
    ) -> None:
        self.id = id
        self.path = path
        self._zstd = zstd
        self._header_line = encode_frame(header_line) if zstd else header_line
        self._fd = fd
        self._good_size = good_size
        self._dirty = False  # the file may be longer than good_size
        self._tmp: Path | None = None  # temp name of a publish not yet complete
        self._awaiting_dir_sync = False  # linked under its final name; directory not yet synced
        self._published_end = 0  # end seq (exclusive) of the events the publish wrote

    def persist(self, start: int, batch: Sequence[Event]) -> tuple[int, FileFailure | None]:
        """Make ``batch`` (seqs ``start``…) durable. Returns the first seq that is not durable
        afterwards and the failure that stopped it, if any."""
        end = start + len(batch)
        durable = start
        try:
            if self._fd is None:
                self._publish(self._header_line + self._encode(batch))
                self._published_end = end
            if self._awaiting_dir_sync:
                self._finish_publish()
                durable = self._published_end
            if durable < end:
                self._write(self._encode(batch[durable - start :]))
                durable = end
        except FileFailure as failure:
            return durable, failure
        return durable, None

    def _encode(self, batch: Sequence[Event]) -> bytes:
        return encode_frame(encode(batch)) if self._zstd else encode(batch)

    def _publish(self, payload: bytes) -> None:
        """log-format §6.3 steps 1–4: root, locked temp file, header and batch, sync, link."""
        root = self.path.parent
        try:
            fileio.make_dirs(root)
        except OSError as exc:
            raise _failed(f'creating the session root "{root}"', exc) from None
        tmp = temp_path(self.path)
        try:
            fd = fileio.open_new(tmp)
        except OSError as exc:
            raise _failed("creating the temp file", exc) from None
        op = "lock"
        try:
            fileio.lock(fd)
            op = "write"
            fileio.pwrite(fd, payload, 0)
            op = "sync"
            fileio.sync(fd)
            op = "link"
            fileio.link(tmp, self.path)
        except OSError as exc:
            _close_quietly(fd)
            _discard(tmp)
            if isinstance(exc, FileExistsError):
                raise FileFailure(
                    f'another process published session "{self.id}" first', exc, permanent=True
                ) from None
            if op == "link" and exc.errno in fileio.NO_HARD_LINKS:
                raise FileFailure(fileio.no_hard_links(root, exc), exc) from None
            raise _failed(op, exc) from None
        self._fd = fd
        self._tmp = tmp
        self._good_size = len(payload)
        self._awaiting_dir_sync = True
        # Under the lock, before step 5: that root sync also makes the removals durable.
        remove_leftover_temps(self.path, own=fd, keep=tmp)

    def _finish_publish(self) -> None:
        """log-format §6.3 steps 5–6 (and the retry of step 5): check the final name is still this inode,
        sync the root directory, drop the temp name."""
        assert self._fd is not None
        self._check_file()
        try:
            fileio.sync_dir(self.path.parent)
        except OSError as exc:
            raise _failed("directory sync", exc) from None
        self._awaiting_dir_sync = False
        if self._tmp is not None:
            _discard(self._tmp)  # best effort: a leftover is a harmless second name
            self._tmp = None

    def _check_file(self) -> None:
        assert self._fd is not None
        try:
            own = fileio.fstat(self._fd)
            if own.st_nlink == 0:
                raise FileFailure(
                    f'session file "{self.path}" was removed while the session was open',
                    None,
                    permanent=True,
                )
            try:
                named = fileio.lstat(self.path)
            except FileNotFoundError:
                named = None
        except OSError as exc:
            raise _failed("stat", exc) from None
        if named is None or (named.st_dev, named.st_ino) != (own.st_dev, own.st_ino):
            raise FileFailure(
                f'session file "{self.path}" was removed or replaced while the session was open',
                None,
                permanent=True,
            )

    def _write(self, data: bytes) -> None:
        """log-format §6.2: write ``data`` at ``good_size`` and sync; on failure cut back to
        ``good_size`` (best effort, synced) and raise."""
        assert self._fd is not None
        fd = self._fd
        self._check_file()
        op = "truncate"
        try:
            if self._dirty:
                fileio.truncate(fd, self._good_size)
                self._dirty = False
            op = "write"
            self._dirty = True
            fileio.pwrite(fd, data, self._good_size)
            op = "sync"
            fileio.sync(fd)
        except OSError as exc:
            self._roll_back()
            raise _failed(op, exc) from None
        self._good_size += len(data)
        self._dirty = False

    def _roll_back(self) -> None:
        assert self._fd is not None
        try:
            fileio.truncate(self._fd, self._good_size)
            fileio.sync(self._fd)
            self._dirty = False
        except OSError:
            self._dirty = True  # truncated before the next write

    def repair(self, truncate: bool, closers: Sequence[Event]) -> None:
        """Commit open's repair (log-format §7.4) under the lock: cut the tail back to
        ``good_size`` and sync, or just sync once (a crashed writer may have left unsynced
        bytes); then write the closers (for a Zstandard log: the events recovered from its torn
        frame, then the closers, dsh-roots §4) as one synced batch. Raises ``PersistenceError``."""
        assert self._fd is not None
        op = "truncate"
        try:
            if truncate:
                fileio.truncate(self._fd, self._good_size)
            op = "sync"
            fileio.sync(self._fd)
            if closers:
                self._write(self._encode(closers))
        except OSError as exc:
            raise _failed(op, exc).error(self.id) from None
        except FileFailure as failure:
            raise failure.error(self.id) from None

    def close(self) -> None:
        """Close the descriptor (dropping the lock) and remove the temp name of a publish that
        did not complete. Raises the ``OSError`` of closing, after removing the temp name."""
        try:
            if self._fd is not None:
                fd, self._fd = self._fd, None
                fileio.close(fd)
        finally:
            if self._tmp is not None:
                _discard(self._tmp)
                self._tmp = None


def remove_leftover_temps(final: Path, *, own: int, keep: Path | None = None) -> bool:
    """Remove the publish temp names of ``final`` that no publish holds any more (log-format
    §6.3: a process killed during a first publish leaves one), except ``keep``. ``own`` is the
    locked descriptor of ``final``'s session: a second name of that file is removed; any other
    temp file only if its lock can be taken, so one that a live publish holds is kept. Returns
    True if a name was removed (the caller syncs the root). Best effort: a name that cannot be
    examined or removed stays (harmless; ``validate`` reports it)."""
    pattern = temp_name_pattern(final.name)
    try:
        names = [name for name in os.listdir(final.parent) if pattern.fullmatch(name)]
        mine = fileio.fstat(own)
    except OSError:
        return False
    removed = False
    for name in names:
        candidate = final.parent / name
        if candidate == keep or not _abandoned(candidate, mine):
            continue
        try:
            fileio.unlink(candidate)
        except OSError:
            continue
        removed = True
    return removed


def _abandoned(candidate: Path, mine: os.stat_result) -> bool:
    # A second name of our own (locked) file, or a regular file nobody holds locked.
    try:
        named = fileio.lstat(candidate)
        if (named.st_dev, named.st_ino) == (mine.st_dev, mine.st_ino):
            return True
        if not stat.S_ISREG(named.st_mode):
            return False
        fd = fileio.open_existing(candidate, writable=False)
    except OSError:
        return False
    try:
        fileio.lock(fd)  # released by the close below
    except OSError:  # BlockingIOError: a live publish holds it
        return False
    finally:
        _close_quietly(fd)
    return True


def _close_quietly(fd: int) -> None:
    try:
        fileio.close(fd)
    except OSError:
        pass


def _discard(path: Path) -> None:
    try:
        fileio.unlink(path)
    except OSError:
        pass
