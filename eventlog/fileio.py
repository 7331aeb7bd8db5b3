"""The few operating-system calls the store makes, and the seam that lets tests fail them.

Every durable effect of ``eventlog`` (creating the root, publishing a session file, writing and
syncing a batch, truncating back, locking, deleting) goes through the plain functions of this
module. ``session.py`` and ``store.py`` look them up **at call time** (``fileio.sync(fd)``, never
``from eventlog.fileio import sync``), so a test can replace any of them::

    monkeypatch.setattr(eventlog.fileio, "sync", failing_sync)

or, with the helper below, fail the next calls of one operation with one errno::

    with eventlog.fileio.fail("sync", errno.EIO) as fault:
        with pytest.raises(PersistenceError):
            await session.flush()
    assert fault.failures == 1

The functions are blocking; callers run them off the event loop (a session's writer thread, or
``trio.to_thread.run_sync``). They raise
``OSError`` unchanged; mapping errors to ``PersistenceError`` and friends is the caller's job.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "Fault",
    "close",
    "fail",
    "fstat",
    "link",
    "lock",
    "lstat",
    "make_dirs",
    "open_existing",
    "open_new",
    "pwrite",
    "spy",
    "sync",
    "sync_dir",
    "truncate",
    "unlink",
]

FILE_MODE = 0o600
DIR_MODE = 0o700
# errno values with which link(2) says the file system has no hard links (log-format §6.3 step 4). Not in
# __all__, which names the operations a test may fail.
NO_HARD_LINKS = frozenset({errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS})


def no_hard_links(directory: Path, exc: OSError) -> str:
    """The detail of a publish that failed because ``directory``'s file system has no hard
    links (shared by live sessions and fork children)."""
    return (
        f'publishing needs hard links, which the file system of "{directory}" does not '
        f"support ({exc})"
    )


def open_new(path: Path) -> int:
    """Create ``path`` for reading and writing: ``O_EXCL`` (never an existing file), mode 0600,
    ``O_NOFOLLOW``. Returns the descriptor."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.open(path, flags, FILE_MODE)


def open_existing(path: Path, *, writable: bool) -> int:
    """Open an existing file without following a symlink in its last component
    (``ELOOP`` for a symlink). Read-only unless ``writable``. ``O_NONBLOCK`` so that a FIFO in
    the file's place cannot make the open wait for a writer (the caller rejects anything but
    a regular file; on a regular file the flag changes nothing)."""
    flags = (os.O_RDWR if writable else os.O_RDONLY) | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    return os.open(path, flags)


def close(fd: int) -> None:
    """Close a descriptor (which also drops its ``flock``)."""
    os.close(fd)


def pwrite(fd: int, data: bytes, offset: int) -> None:
    """Write all of ``data`` at ``offset``, looping on short writes."""
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        if written <= 0:
            # A regular file never legitimately accepts zero bytes; don't spin.
            raise OSError(errno.EIO, "write accepted no bytes")
        view = view[written:]
        offset += written


def sync(fd: int) -> None:
    """Make the file's data durable: ``fdatasync`` on Linux; ``F_FULLFSYNC`` on macOS (a plain
    ``fsync`` there only reaches the drive's cache), falling back to ``fsync`` where the file
    system refuses it; ``fsync`` elsewhere."""
    if sys.platform == "darwin":
        try:
            fcntl.fcntl(fd, fcntl.F_FULLFSYNC)  # type: ignore[attr-defined]
            return
        except OSError:
            pass
        os.fsync(fd)
    elif hasattr(os, "fdatasync"):
        os.fdatasync(fd)
    else:
        os.fsync(fd)


def truncate(fd: int, size: int) -> None:
    """Cut the file back to ``size`` bytes."""
    os.ftruncate(fd, size)


def link(source: Path, target: Path) -> None:
    """Give ``source``'s inode the additional name ``target``; never overwrites
    (``FileExistsError`` if ``target`` exists)."""
    os.link(source, target)


def unlink(path: Path) -> None:
    """Remove one name of a file."""
    os.unlink(path)


def sync_dir(path: Path) -> None:
    """``fsync`` a directory, making the names created or removed in it durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs(path: Path) -> None:
    """Create ``path`` and any missing ancestors, each with mode 0700, syncing each new
    directory's parent so the new name is durable (a directory whose parent fails to sync is
    removed again). An existing directory is left alone (its permissions included); a
    non-directory in the way raises ``NotADirectoryError``."""
    missing: list[Path] = []
    current = path
    while True:
        try:
            st = os.stat(current)
        except FileNotFoundError:
            missing.append(current)
            if current.parent == current:
                break
            current = current.parent
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(current))
        break
    for directory in reversed(missing):
        made = True
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:
            # Another process created it meanwhile; it must be a directory to be usable.
            if not stat.S_ISDIR(os.stat(directory).st_mode):
                raise
            made = False
        try:
            sync_dir(directory.parent)
        except OSError:
            # Left in place, the directory would look finished to the next attempt, which
            # would then never sync its entry: remove it (best effort) so that attempt
            # creates and syncs it again.
            if made:
                with contextlib.suppress(OSError):
                    os.rmdir(directory)
            raise


def lock(fd: int) -> None:
    """Take an exclusive, non-blocking ``flock`` on the open file; ``BlockingIOError`` if
    another open file description holds it. Closing the descriptor releases it."""
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def fstat(fd: int) -> os.stat_result:
    """``os.fstat`` (link count and inode of an open file)."""
    return os.fstat(fd)


def lstat(path: Path) -> os.stat_result:
    """``os.lstat``: the name itself, never a symlink's target."""
    return os.lstat(path)


# ---------------------------------------------------------------------------------------------
# Fault injection for tests


class Fault:
    """A stand-in for one operation of this module that fails some of its calls.

    Calls number ``skip + 1`` to ``skip + times`` raise ``OSError(err)``; every other call is
    passed to the real operation. ``calls`` counts all calls, ``failures`` the raised ones.
    """

    def __init__(
        self, operation: Callable[..., Any], err: int, *, times: int = 1, skip: int = 0
    ) -> None:
        self.operation = operation
        self.err = err
        self.times = times
        self.skip = skip
        self.calls = 0
        self.failures = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.skip < self.calls <= self.skip + self.times:
            self.failures += 1
            raise OSError(self.err, os.strerror(self.err))
        return self.operation(*args, **kwargs)


_OPERATIONS = frozenset(__all__) - {"Fault", "fail", "spy"}


@contextlib.contextmanager
def fail(op: str, err: int, *, times: int = 1, skip: int = 0) -> Iterator[Fault]:
    """Within the block, make calls ``skip + 1 .. skip + times`` of ``fileio.<op>`` raise
    ``OSError(err)`` (e.g. ``fail("pwrite", errno.ENOSPC)``). Yields the ``Fault`` so the test
    can check how often the operation ran. Not for use by concurrent tests in one process."""
    if op not in _OPERATIONS:
        raise ValueError(f"unknown fileio operation {op!r}")
    module = sys.modules[__name__]
    original = getattr(module, op)
    fault = Fault(original, err, times=times, skip=skip)
    setattr(module, op, fault)
    try:
        yield fault
    finally:
        setattr(module, op, original)


def spy(op: str) -> contextlib.AbstractContextManager[Fault]:
    """Count the calls of ``fileio.<op>`` within the block without failing any."""
    return fail(op, errno.EIO, times=0)
