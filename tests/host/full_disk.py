"""``turnlog`` with a disk that is full while a flag file exists, for the storage tests that run
real subprocesses: ``python full_disk.py FLAG <turnlog arguments>``. Every session write fails
with ``ENOSPC`` while ``FLAG`` exists, through eventlog's file-I/O seam (``eventlog.fileio``)."""

from __future__ import annotations

import errno
import os
import sys

import eventlog.fileio
from host.cli import main

_write = eventlog.fileio.pwrite


def _pwrite(fd: int, data: bytes, offset: int) -> None:
    if os.path.exists(FLAG):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    _write(fd, data, offset)


if __name__ == "__main__":
    FLAG = sys.argv.pop(1)
    eventlog.fileio.pwrite = _pwrite
    sys.exit(main())
