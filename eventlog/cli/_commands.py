"""The five log commands (log-format §10): ``ls``, ``inspect``, ``validate``, ``tail`` and
``fork``, each an async function of the parsed arguments and an ``Env``.

These are the effects: reading (in worker threads, abandoned on Ctrl-C since reading never
writes), following, forking, and writing the output that ``_render`` and ``_validate`` compute.
None of them writes to an existing session file, takes its lock or repairs it; only ``fork``
writes, and only a new file. A failure already described by its message is ``CommandFailed``
(exit status 1).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import itertools
import os
import signal
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path
from typing import IO, Any, TypeVar

import msgspec
import trio

from .._dsh import LOG_NAMES
from .._zstd import ZstdLogError, header_text
from ..errors import ForkError, InvalidSessionId, SessionNotFound
from ..format import ZSTD_MAGIC, Event, SessionHeader, check_session_id
from ..reader import HEADER_LIMIT, LogSnapshot, iter_events, read_header, read_log, tail
from ..store import SessionInfo, SessionRootError, SessionStore
from ._parser import UsageError
from ._render import (
    event_line,
    fork_lines,
    header_lines,
    header_object,
    inspect_json,
    json_text,
    last_turn_end,
    leftover_warning,
    ls_lines,
    open_turn_hint,
    repair_lines,
)
from ._validate import FAILING, Check, Verdict, leftover_temp_files, validate_log

T = TypeVar("T")

ERROR_PREFIX = "turnlog"
WRITE_BATCH_BYTES = 1 << 20  # JSON output is written in pieces of about this size
PROGRESS_MIN_BYTES = 16 * 1024 * 1024  # logs at least this large get a progress indication
PROGRESS_DELAY_S = 0.3  # ... if reading takes longer than this
TAIL_BATCH = 4096  # events read per worker-thread call by `tail --from`


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


def _resolve(arg: str, env: Env) -> tuple[Path, str | None]:
    """``PATH|ID``: an argument containing ``/`` is a file path, anything else an id in the root."""
    if "/" in arg:
        return Path(arg), None
    try:
        return env.store().path(arg), arg
    except InvalidSessionId as exc:
        raise UsageError(f"{exc} (to read a file, give a path containing '/', e.g. ./{arg})") from None


def _check_root(env: Env) -> None:
    """The root a read-only command consults must exist: a root not created yet is an error, so
    a mistyped ``--root`` is not taken for an empty store (and neither is a non-directory)."""
    if not env.root.is_dir():
        if env.root.exists():
            raise CommandFailed(f'session root "{env.root}" is not a directory')
        raise CommandFailed(
            f"no session root at {env.root} (nothing has been stored there yet; pass --root DIR)"
        )


def _not_found_message(env: Env, arg: str, exc: SessionNotFound) -> str:
    """A missing log: by id, ``session "<id>" not found in <root>; see turnlog ls`` (and how to
    read a file of that name in the current directory, if there is one); by path, the error."""
    if exc.id is None:
        return str(exc)
    message = f"{exc} in {env.root}; see {env.prog} ls"
    if Path(arg).is_file():
        message += f' (to read the file in the current directory, write "./{arg}")'
    return message


def _file_size(path: Path) -> int:
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


def _encoding(path: Path) -> str:
    # The encoding a store file's name says (dsh-roots §2): only a dsh log may be Zstandard.
    return "zstd" if path.name == LOG_NAMES["zstd"] else "none"


def _layout(path: Path) -> str:
    return "dsh" if path.name in LOG_NAMES.values() else "flat"


def _header_json(path: Path, header: SessionHeader) -> msgspec.Raw:
    return header_object(_header_line(path), header)


async def _with_progress(env: Env, label: str, size: int, work: Callable[[], Awaitable[T]]) -> T:
    """Run ``work``; while it lasts longer than a moment on a large log, show an elapsed-time
    indication on stderr if stderr is a terminal. The line is erased afterwards."""
    isatty = getattr(env.err, "isatty", None)
    if size < PROGRESS_MIN_BYTES or not (isatty is not None and isatty()):
        return await work()
    megabytes = size / 1e6
    shown = False

    async def indicate() -> None:
        nonlocal shown
        start = trio.current_time()
        await trio.sleep(PROGRESS_DELAY_S)
        spinner = "|/-\\"
        tick = 0
        while True:
            elapsed = trio.current_time() - start
            env.err.write(f"\r{spinner[tick % 4]} reading {label} ({megabytes:,.1f} MB) … {elapsed:4.1f}s")
            env.err.flush()
            shown = True
            tick += 1
            await trio.sleep(0.1)

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(indicate)
            try:
                return await work()
            finally:
                nursery.cancel_scope.cancel()
                if shown:
                    env.err.write("\r\x1b[K")
                    env.err.flush()
    except BaseExceptionGroup as group:
        # The indicator never fails, so the group holds the work's own exception.
        raise single(group) from None


def single(exc: BaseException) -> BaseException:
    """The one exception inside (nested) single-member exception groups, else ``exc``."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


async def _in_thread(fn: Callable[[], T]) -> T:
    # Reading never writes, so a Ctrl-C may abandon the worker thread.
    return await trio.to_thread.run_sync(fn, abandon_on_cancel=True)


# --------------------------------------------------------------------------- ls


async def _store_files(env: Env) -> list[SessionInfo]:
    """Every store file (``SessionStore.list``) of a root that exists."""
    _check_root(env)
    return await env.store().list()


async def cmd_ls(args: argparse.Namespace, env: Env) -> int:
    infos = await _store_files(env)
    if args.json:
        env.print_json(
            [
                {
                    "id": info.id,
                    "path": json_text(str(info.path)),
                    "bytes": info.size,
                    "header": None if info.header is None else _header_json(info.path, info.header),
                    "problem": None if info.problem is None else json_text(info.problem),
                    "layout": _layout(info.path),
                    "encoding": _encoding(info.path),
                }
                for info in infos
            ]
        )
        return 0
    for line in ls_lines(infos, env.zone):
        env.print(line)
    return 0


# --------------------------------------------------------------------------- inspect


async def _read_snapshot(arg: str, env: Env) -> LogSnapshot:
    path, id = _resolve(arg, env)
    label = id or str(path)

    async def work() -> LogSnapshot:
        if id is not None:
            _check_root(env)
            try:
                return await env.store().inspect(id)
            except SessionNotFound as exc:
                raise CommandFailed(_not_found_message(env, arg, exc)) from None
        return await _in_thread(lambda: read_log(path))

    return await _with_progress(env, label, _file_size(path), work)


async def cmd_inspect(args: argparse.Namespace, env: Env) -> int:
    snapshot = await _read_snapshot(args.log, env)
    types = set(args.type or ())
    events = (
        event
        for event in snapshot.events
        if (args.from_seq is None or event.seq >= args.from_seq) and (not types or event.type in types)
    )
    if args.json:
        env.write_pieces(inspect_json(snapshot, _header_json(snapshot.path, snapshot.header), events))
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


async def cmd_validate(args: argparse.Namespace, env: Env) -> int:
    targets: list[tuple[Path, str | None, str]] = []
    if args.logs:
        for arg in args.logs:
            path, id = _resolve(arg, env)
            targets.append((path, id, id or arg))
        scan_root = any(id is not None for _, id, _ in targets)
        if scan_root:
            _check_root(env)
    else:
        targets = [(info.path, info.id, info.id) for info in await _store_files(env)]
        scan_root = True
    verdicts: list[Verdict] = []
    for path, id, label in targets:
        judge = functools.partial(
            validate_log,
            path,
            expected_id=id,
            label=label,
            checks=env.checks,
            not_found=functools.partial(_not_found_message, env, label),
        )
        verdict = await _with_progress(env, label, _file_size(path), functools.partial(_in_thread, judge))
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


# --------------------------------------------------------------------------- tail


def _emit(env: Env, event: Event, as_json: bool) -> None:
    env.print(event.to_json().decode("utf-8") if as_json else event_line(event, zone=env.zone))


async def _print_from(env: Env, path: Path, start_seq: int, as_json: bool) -> int:
    """Print every committed event from ``start_seq`` as it is read, in batches, so memory stays
    bounded by a batch (log-format §11); return the seq to follow from."""
    events = iter_events(path, start_seq=start_seq)
    next_seq = start_seq
    while batch := await _in_thread(lambda: list(itertools.islice(events, TAIL_BATCH))):
        for event in batch:
            _emit(env, event, as_json)
        next_seq = batch[-1].seq + 1
    return next_seq


async def _print_last(env: Env, path: Path, label: str, count: int, as_json: bool) -> int:
    """Print the last ``count`` committed events; return the seq to follow from."""

    def last_events() -> tuple[list[Event], int]:
        last: collections.deque[Event] = collections.deque(maxlen=count)
        seen = 0
        for event in iter_events(path):
            last.append(event)
            seen += 1
        return list(last), seen

    first, next_seq = await _with_progress(env, label, _file_size(path), lambda: _in_thread(last_events))
    for event in first:
        _emit(env, event, as_json)
    return next_seq


async def cmd_tail(args: argparse.Namespace, env: Env) -> int:
    path, id = _resolve(args.log, env)
    if id is not None:
        _check_root(env)
    try:
        if id is not None:
            # The identity rule of log-format §4.2 for a log named by id (tail reads by path).
            await _in_thread(lambda: read_header(path, expected_id=id))
        if args.from_seq is not None:
            next_seq = await _print_from(env, path, args.from_seq, args.json)
        else:
            next_seq = await _print_last(env, path, id or str(path), args.lines, args.json)
    except SessionNotFound as exc:
        # Without -f a missing log is an error; -f waits for it to appear, like tail -F, in
        # a directory that exists (log-format §10.4).
        if not args.follow or not path.parent.is_dir():
            raise CommandFailed(_not_found_message(env, args.log, exc)) from None
        env.warn(f"waiting for {path} to appear")
        next_seq = 0 if args.from_seq is None else args.from_seq
    env.out.flush()
    if args.follow:
        await _follow_until_interrupted(env, path, next_seq, args.json, id)
    return 0


async def _follow(env: Env, path: Path, start_seq: int, as_json: bool, id: str | None) -> None:
    following = tail(
        path,
        start_seq=start_seq,
        follow=True,
        on_truncate=lambda size: env.warn(f"log truncated to {size} bytes"),
        expected_id=id,
    )
    async with contextlib.aclosing(following):
        async for event in following:
            _emit(env, event, as_json)
            env.out.flush()


async def _follow_until_interrupted(env: Env, path: Path, start_seq: int, as_json: bool, id: str | None) -> None:
    """Follow until Ctrl-C (SIGINT), which ends the follow quietly (log-format §10.4).

    While following, SIGINT is received as a message, not raised as ``KeyboardInterrupt``: the
    follow's first wait imports parts of its watcher lazily, and a ``KeyboardInterrupt``
    raised inside an import that executes generated code marks the interpreter to kill itself
    with SIGINT at exit, so the command would end with that signal instead of status 0."""
    with trio.open_signal_receiver(signal.SIGINT) as interrupts:
        async with trio.open_nursery() as nursery:

            async def stop_on_interrupt() -> None:
                async for _ in interrupts:
                    nursery.cancel_scope.cancel()

            nursery.start_soon(stop_on_interrupt)
            await _follow(env, path, start_seq, as_json, id)
            nursery.cancel_scope.cancel()


# --------------------------------------------------------------------------- fork


async def cmd_fork(args: argparse.Namespace, env: Env) -> int:
    path, id = _resolve(args.log, env)
    if args.id is not None:
        try:
            check_session_id(args.id)
        except InvalidSessionId as exc:
            raise UsageError(f"--id: {exc}") from None
    source: str | Path = id if id is not None else path
    try:
        store = SessionStore(env.root, layout=args.layout, compression=args.compression)
        _ = store.layout  # detect the target root now: a mixed or contradicted root fails here
    except (SessionRootError, ValueError) as exc:
        raise CommandFailed(str(exc)) from None
    try:
        child = await _with_progress(
            env, id or str(path), _file_size(path), lambda: store.fork(source, at=args.at, id=args.id)
        )
    except SessionNotFound as exc:
        raise CommandFailed(_not_found_message(env, args.log, exc)) from None
    except ForkError as exc:
        if exc.code != "OPEN_TURN":
            raise
        last_end = await _in_thread(lambda: last_turn_end(iter_events(path), args.at))
        raise CommandFailed(f"{exc} ({open_turn_hint(last_end)})") from None
    child_path = store.path(child.id)
    events = await _in_thread(lambda: sum(1 for _ in iter_events(child_path)))
    if args.json:
        env.print_json(
            {
                "id": child.id,
                "path": json_text(str(child_path)),
                "parentSession": child.parent_session,
                "seedLength": child.seed_length or 0,
                "events": events,
                "layout": _layout(child_path),
                "encoding": _encoding(child_path),
            }
        )
        return 0
    for line in fork_lines(child, str(child_path), events):
        env.print(line)
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace, Env], Awaitable[int]]] = {
    "ls": cmd_ls,
    "inspect": cmd_inspect,
    "validate": cmd_validate,
    "tail": cmd_tail,
    "fork": cmd_fork,
}
