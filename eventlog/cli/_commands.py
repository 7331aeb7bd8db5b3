"""The read-only log commands (log-format §10) ``ls``, ``inspect`` and ``validate``, each a
plain function of the parsed arguments and an ``Env``, and what every command shares (``Env``,
resolving ``PATH|ID``, the progress indication). ``tail`` and ``fork`` are in ``_follow``.

These are the effects: reading, and writing the output that ``_render`` and ``_validate``
compute. They run without an event loop, so a read-only command never loads trio. None of
them writes to a session file, takes its lock or repairs it. A failure already described by
its message is ``CommandFailed`` (exit status 1).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path
from typing import IO, Any

import msgspec

from .._dsh import LOG_NAMES
from .._zstd import ZstdLogError, header_text
from ..errors import InvalidSessionId, SessionNotFound
from ..format import ZSTD_MAGIC, SessionHeader
from ..reader import HEADER_LIMIT, LogSnapshot, read_log
from ..store import SessionInfo, SessionStore
from ._parser import UsageError
from ._render import (
    event_line,
    header_lines,
    header_object,
    inspect_json,
    json_text,
    leftover_warning,
    ls_lines,
    repair_lines,
)
from ._validate import FAILING, Check, Verdict, leftover_temp_files, validate_log

ERROR_PREFIX = "turnlog"
WRITE_BATCH_BYTES = 1 << 20  # JSON output is written in pieces of about this size
PROGRESS_MIN_BYTES = 16 * 1024 * 1024  # logs at least this large get a progress indication
PROGRESS_DELAY_S = 0.3  # ... if reading takes longer than this


class CommandFailed(Exception):
    """A failure already described by its message: exit status 1."""


@dataclass
class Env:
    """What a command runs against: the session root, the packages' checks, the streams, and
    the program's name for hints."""

    root: Path
    checks: tuple[Check, ...]
    out: IO[str]
    err: IO[str]
    prog: str = "turnlog"
    zone: tzinfo | None = None  # human output's times (None: UTC, as log-format §10 writes them)
    dsh_default: bool = False  # the root came from $DSH_SESSION_ROOT: empty, it gets dsh/zstd

    def store(self) -> SessionStore:
        return SessionStore(self.root)

    def print(self, line: str = "") -> None:
        self.out.write(line + "\n")

    def print_json(self, value: Any) -> None:
        self.out.write(msgspec.json.encode(value).decode("utf-8") + "\n")

    def write_pieces(self, pieces: Iterable[bytes]) -> None:
        """Write UTF-8 pieces in ~1 MiB batches."""
        batch: list[bytes] = []
        size = 0
        for piece in pieces:
            batch.append(piece)
            size += len(piece)
            if size >= WRITE_BATCH_BYTES:
                self.out.write(b"".join(batch).decode("utf-8"))
                batch, size = [], 0
        self.out.write(b"".join(batch).decode("utf-8"))

    def warn(self, message: str) -> None:
        self.err.write(f"{ERROR_PREFIX}: {message}\n")
        self.err.flush()


def resolve(arg: str, env: Env) -> tuple[Path, str | None]:
    """``PATH|ID``: an argument containing ``/`` is a file path, anything else an id in the root."""
    if "/" in arg:
        return Path(arg), None
    try:
        return env.store().path(arg), arg
    except InvalidSessionId as exc:
        raise UsageError(f"{exc} (to read a file, give a path containing '/', e.g. ./{arg})") from None


def check_root(env: Env) -> None:
    """The root a read-only command consults must exist: a root not created yet is an error, so
    a mistyped ``--root`` is not taken for an empty store (and neither is a non-directory)."""
    if not env.root.is_dir():
        if env.root.exists():
            raise CommandFailed(f'session root "{env.root}" is not a directory')
        raise CommandFailed(
            f"no session root at {env.root} (nothing has been stored there yet; pass --root DIR)"
        )


def not_found_message(env: Env, arg: str, exc: SessionNotFound) -> str:
    """A missing log: by id, ``session "<id>" not found in <root>; see turnlog ls`` (and how to
    read a file of that name in the current directory, if there is one); by path, the error."""
    if exc.id is None:
        return str(exc)
    message = f"{exc} in {env.root}; see {env.prog} ls"
    if Path(arg).is_file():
        message += f' (to read the file in the current directory, write "./{arg}")'
    return message


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _header_line(path: Path) -> bytes | None:
    """Line 1 of ``path`` without its line ending (of a Zstandard log: frame 0 only), or None if
    it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as file:
            if path.name.endswith(".zstd") or file.read(4) == ZSTD_MAGIC:
                file.seek(0)
                # Frame 0 holds only the header, so it is not much longer than the line.
                return header_text(file.read(2 * HEADER_LIMIT)).rstrip(b"\r\n")
            file.seek(0)
            return file.readline(HEADER_LIMIT).rstrip(b"\r\n")
    except (OSError, ZstdLogError):
        return None


def encoding(path: Path) -> str:
    # The encoding a store file's name says (dsh-roots §2): only a dsh log may be Zstandard.
    return "zstd" if path.name == LOG_NAMES["zstd"] else "none"


def layout(path: Path) -> str:
    return "dsh" if path.name in LOG_NAMES.values() else "flat"


def header_json(path: Path, header: SessionHeader) -> msgspec.Raw:
    return header_object(_header_line(path), header)


@contextlib.contextmanager
def progress(env: Env, label: str, size: int) -> Iterator[None]:
    """While the block lasts longer than a moment on a large log, show an elapsed-time
    indication on stderr if stderr is a terminal; the line is erased afterwards. A thread
    draws it, so the block may be plain or async code."""
    isatty = getattr(env.err, "isatty", None)
    if size < PROGRESS_MIN_BYTES or not (isatty is not None and isatty()):
        yield
        return
    megabytes = size / 1e6
    done = threading.Event()
    shown = False

    def indicate() -> None:
        nonlocal shown
        start = time.monotonic()
        if done.wait(PROGRESS_DELAY_S):
            return
        spinner = "|/-\\"
        tick = 0
        while True:
            elapsed = time.monotonic() - start
            env.err.write(f"\r{spinner[tick % 4]} reading {label} ({megabytes:,.1f} MB) … {elapsed:4.1f}s")
            env.err.flush()
            shown = True
            tick += 1
            if done.wait(0.1):
                return

    indicator = threading.Thread(target=indicate, name="turnlog-progress", daemon=True)
    indicator.start()
    try:
        yield
    finally:
        done.set()
        indicator.join()
        if shown:
            env.err.write("\r\x1b[K")
            env.err.flush()


def single(exc: BaseException) -> BaseException:
    """The one exception inside (nested) single-member exception groups, else ``exc``."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


# --------------------------------------------------------------------------- ls


def store_files(env: Env) -> list[SessionInfo]:
    """Every store file (``SessionStore.list``) of a root that exists."""
    check_root(env)
    return env.store().list_blocking()


def cmd_ls(args: argparse.Namespace, env: Env) -> int:
    infos = store_files(env)
    if args.json:
        env.print_json(
            [
                {
                    "id": info.id,
                    "path": json_text(str(info.path)),
                    "bytes": info.size,
                    "header": None if info.header is None else header_json(info.path, info.header),
                    "problem": None if info.problem is None else json_text(info.problem),
                    "layout": layout(info.path),
                    "encoding": encoding(info.path),
                }
                for info in infos
            ]
        )
        return 0
    for line in ls_lines(infos, env.zone):
        env.print(line)
    return 0


# --------------------------------------------------------------------------- inspect


def _read_snapshot(arg: str, env: Env) -> LogSnapshot:
    path, id = resolve(arg, env)
    with progress(env, id or str(path), file_size(path)):
        if id is None:
            return read_log(path)
        check_root(env)
        try:
            # SessionStore.inspect without trio: the log where the store keeps it, by id.
            return read_log(env.store().locate(id), expected_id=id)
        except SessionNotFound as exc:
            raise CommandFailed(not_found_message(env, arg, exc)) from None


def cmd_inspect(args: argparse.Namespace, env: Env) -> int:
    snapshot = _read_snapshot(args.log, env)
    types = set(args.type or ())
    events = (
        event
        for event in snapshot.events
        if (args.from_seq is None or event.seq >= args.from_seq) and (not types or event.type in types)
    )
    if args.json:
        env.write_pieces(inspect_json(snapshot, header_json(snapshot.path, snapshot.header), events))
        return 0
    for line in header_lines(snapshot, env.zone):
        env.print(line)
    env.print()
    shown = 0
    for event in events:
        env.print(event_line(event, full=args.full, zone=env.zone))
        shown += 1
    if shown:
        env.print()
    for line in repair_lines(snapshot.repair, full=args.full, zone=env.zone):
        env.print(line)
    return 0


# --------------------------------------------------------------------------- validate


def cmd_validate(args: argparse.Namespace, env: Env) -> int:
    targets: list[tuple[Path, str | None, str]] = []
    if args.logs:
        for arg in args.logs:
            path, id = resolve(arg, env)
            targets.append((path, id, id or arg))
        scan_root = any(id is not None for _, id, _ in targets)
        if scan_root:
            check_root(env)
    else:
        targets = [(info.path, info.id, info.id) for info in store_files(env)]
        scan_root = True
    verdicts: list[Verdict] = []
    for path, id, label in targets:
        with progress(env, label, file_size(path)):
            verdict = validate_log(
                path,
                expected_id=id,
                label=label,
                checks=env.checks,
                not_found=functools.partial(not_found_message, env, label),
            )
        verdicts.append(verdict)
        if not args.json:
            for line in verdict.lines():
                env.print(line)
    temps = leftover_temp_files(env.root) if scan_root else []
    for temp in temps:
        message = leftover_warning(str(temp))
        if args.json:
            env.warn(f"warning: {message}")
        else:
            env.print(f"warning  {message}")
    if args.json:
        env.print_json([verdict.to_json() for verdict in verdicts])
    failing = FAILING | ({"repairable"} if args.strict else set())
    return 1 if any(v.status in failing for v in verdicts) else 0


COMMANDS: dict[str, Callable[[argparse.Namespace, Env], int]] = {
    "ls": cmd_ls,
    "inspect": cmd_inspect,
    "validate": cmd_validate,
}
