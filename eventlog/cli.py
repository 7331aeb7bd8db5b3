"""The log commands of turnlog (spec eventlog.md §10): ``ls``, ``inspect``, ``validate``,
``tail [-f]`` and ``fork``.

``main(argv, *, checks=(), root=None, prog="turnlog")`` is the whole contract: the host's
``turnlog`` script mounts it with its own root (host.md §5.1) and package checks, and
``python -m eventlog`` runs it with ``eventlog.default_root()``.

Guarantees:

- None of these commands writes to an existing session file, takes its lock or repairs it;
  only ``fork`` writes, and only a new file.
- ``--json`` output has exactly the keys, in the order, of §10.1–§10.5; human output may change.
- Exit status: 0 success, 1 failure (one line ``turnlog: <message>`` on stderr), 2 usage error.

Rendering (times, event lines, the repair section, validate lines) is a set of pure functions
over the reader's values; the effects (reading, following, forking) are the ``_cmd_*`` functions.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime
import errno
import functools
import itertools
import json
import os
import re
import sys
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, NoReturn, TypeVar

import msgspec
import trio

from . import surface, vocab
from .errors import (
    CorruptLog,
    EventLogError,
    ForkError,
    InvalidSessionId,
    SessionNotFound,
    SurfaceError,
    UnsupportedFormat,
)
from .format import TEMP_SUFFIX, Event, SessionHeader, check_session_id
from .reader import LogIndexer, LogSnapshot, Repair, iter_events, read_header, read_log, tail
from .store import SessionInfo, SessionStore, default_root

__all__ = ["Check", "main"]

Check = Callable[[LogSnapshot], list[str]]
"""A package rule for ``validate``: every message it returns makes the log ``invalid``."""

T = TypeVar("T")

ERROR_PREFIX = "turnlog"
DATA_WIDTH = 80  # characters of data shown per event line without --full
WRITE_BATCH_BYTES = 1 << 20  # JSON output is written in pieces of about this size
HEADER_LINE_LIMIT = 1 << 20  # a longer header is a problem for `list` (§11)
PROGRESS_MIN_BYTES = 16 * 1024 * 1024  # logs at least this large get a progress indication
PROGRESS_DELAY_S = 0.3  # ... if reading takes longer than this
TAIL_BATCH = 4096  # events read per worker-thread call by `tail --from`
_TEMP_RE = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]{0,127})\.jsonl" + TEMP_SUFFIX)

FAILING = frozenset({"invalid", "corrupt", "unsupported", "unreadable"})


class UsageError(Exception):
    """A bad command line: exit status 2."""


class CommandFailed(Exception):
    """A failure already described by its message: exit status 1."""


# =========================================================================== rendering (pure)


@functools.lru_cache(maxsize=4096)
def _utc_date(days: int) -> str | None:
    """``YYYY-MM-DD`` of a day counted from 1970-01-01, or None outside years 0001–9999."""
    try:
        date = datetime.date(1970, 1, 1) + datetime.timedelta(days=days)
    except OverflowError:
        return None
    return f"{date.year:04d}-{date.month:02d}-{date.day:02d}"


def format_time(ms: int) -> str:
    """Epoch milliseconds as UTC ``YYYY-MM-DDTHH:MM:SS.mmmZ``; the bare integer when the
    instant is outside years 0001–9999 (event times are any safe integer)."""
    days, rest = divmod(ms, 86_400_000)
    date = _utc_date(days)
    if date is None:
        return str(ms)
    seconds, milli = divmod(rest, 1000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return f"{date}T{hour:02d}:{minute:02d}:{second:02d}.{milli:03d}Z"


def compact_data(raw: bytes) -> str:
    """``data`` as compact JSON text. turnlog and deepseek-harness write it compact already; a
    hand-edited record with whitespace is re-encoded (key order kept)."""
    if b" " in raw or b"\t" in raw or b"\n" in raw or b"\r" in raw:
        try:
            raw = msgspec.json.encode(msgspec.json.decode(raw))
        except (msgspec.DecodeError, msgspec.EncodeError, OverflowError):
            pass
    return raw.decode("utf-8")


_SURROGATE = re.compile("[\ud800-\udfff]")


def json_text(text: str) -> str | msgspec.Raw:
    """A string for a ``--json`` document. A path whose bytes are not UTF-8 reaches Python
    with lone surrogates (surrogateescape), which msgspec refuses to encode; those are written
    as ``\\uXXXX`` escapes, as Python's ``json`` module writes them, so
    ``os.fsencode(json.loads(...))`` gives the path's bytes back."""
    if not _SURROGATE.search(text):
        return text
    quoted = json.dumps(text, ensure_ascii=False)
    return msgspec.Raw(
        _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted).encode("utf-8")
    )


def event_line(event: Event, *, full: bool = False) -> str:
    """``seq  time  type  data``; data cut to 80 characters and marked with ``…`` unless ``full``."""
    data = compact_data(bytes(event.data))
    if not full and len(data) > DATA_WIDTH:
        data = data[:DATA_WIDTH] + "…"
    return f"{event.seq}  {format_time(event.time)}  {event.type}  {data}"


def header_json(path: Path, header: SessionHeader) -> msgspec.Raw:
    """The header object as on disk: line 1 of ``path`` verbatim (a deepseek-harness header may
    omit ``delegationDepth`` or carry extra keys), or the canonical encoding of ``header`` if
    the line cannot be read back as the same JSON object."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as file:
            line = file.readline(HEADER_LINE_LIMIT)
        line = line.rstrip(b"\r\n")
        if msgspec.json.decode(line).get("id") == header.id:
            return msgspec.Raw(line)
    except (OSError, msgspec.DecodeError, AttributeError):
        pass
    return msgspec.Raw(header.to_json())


def inspect_json(snapshot: LogSnapshot, events: Iterable[Event]) -> Iterator[bytes]:
    """The ``inspect --json`` document (§10.2) in pieces, the events one record at a time, so
    a large log is never encoded twice in memory. The pieces end with an LF."""
    head = msgspec.json.encode(
        {
            "path": json_text(str(snapshot.path)),
            "id": snapshot.header.id,
            "header": header_json(snapshot.path, snapshot.header),
        }
    )
    yield head[:-1] + b',"events":['
    separator = b""
    for event in events:
        yield separator + event.to_json()
        separator = b","
    rest = msgspec.json.encode(
        {
            "fileBytes": snapshot.file_bytes,
            "committedBytes": snapshot.committed_bytes,
            "repair": snapshot.repair,  # Repair encodes with the §10.2 keys, in order
        }
    )
    yield b"]," + rest[1:] + b"\n"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def repair_summary(repair: Repair) -> list[str]:
    """One sentence per repair action, as ``validate`` prints them."""
    lines = []
    if repair.truncate_to is not None:
        where = ""
        if repair.defect is not None:
            where = (
                f" from line {repair.defect.line}, byte {repair.defect.offset}"
                f" ({repair.defect.reason})"
            )
        lines.append(
            f"open will drop {_plural(repair.dropped_bytes, 'byte')} and "
            f"{_plural(repair.dropped_records, 'complete record')}{where}, "
            f"truncating to {repair.truncate_to} bytes"
        )
    if repair.closers:
        lines.append(
            f"turn {repair.open_turn} is open: open will append "
            f"{_plural(len(repair.closers), 'closing event')}"
        )
    return lines


def repair_lines(repair: Repair | None, *, full: bool = False) -> list[str]:
    """The repair section of human ``inspect`` output."""
    if repair is None:
        return ["repair: none needed"]
    lines = ["repair: opening this log for writing would"]
    if repair.truncate_to is not None:
        lines.append(
            f"  truncate it to {repair.truncate_to} bytes, dropping "
            f"{_plural(repair.dropped_bytes, 'byte')} and "
            f"{_plural(repair.dropped_records, 'complete record')}"
        )
        if repair.defect is not None:
            defect = repair.defect
            lines.append(
                f"    from line {defect.line}, byte {defect.offset}: {defect.reason}"
                + (f" ({defect.detail})" if defect.detail else "")
            )
    if repair.closers:
        lines.append(
            f"  close open turn {repair.open_turn} by appending "
            f"{_plural(len(repair.closers), 'event')}:"
        )
        lines.extend("    " + event_line(event, full=full) for event in repair.closers)
    return lines


def header_lines(snapshot: LogSnapshot) -> list[str]:
    """The header block of human ``inspect`` output."""
    header = snapshot.header
    parent = "-"
    if header.parent_session is not None:
        parent = f"{header.parent_session} (seedLength {header.seed_length or 0})"
    elif header.seed_length is not None:
        parent = f"- (seedLength {header.seed_length})"
    rows = [
        ("session", header.id),
        ("path", str(snapshot.path)),
        ("created", format_time(header.created_at)),
        ("cwd", header.cwd or "-"),
        ("parent", parent),
    ]
    extra = []
    if header.origin is not None:
        extra.append(f"origin {header.origin}")
    if header.delegation_depth:
        extra.append(f"delegationDepth {header.delegation_depth}")
    if header.agent_preset is not None:
        extra.append(f"agentPreset {header.agent_preset}")
    if header.owner is not None:
        extra.append(f"owner {header.owner}")
    if extra:
        rows.append(("agent", ", ".join(extra)))
    rows.append(("events", str(len(snapshot.events))))
    rows.append(
        ("bytes", f"{snapshot.committed_bytes} committed, {snapshot.file_bytes} in file")
    )
    return [f"{name:<8} {value}" for name, value in rows]


def ls_table(rows: Sequence[tuple[str, ...]]) -> list[str]:
    """Left-aligned columns separated by two spaces; the last cell of a row is not padded, so a
    short row (an id and its problem) spans the remaining columns."""
    widths: dict[int, int] = {}
    for row in rows:
        for i, cell in enumerate(row[:-1]):
            widths[i] = max(widths.get(i, 0), len(cell))
    return [
        "  ".join([cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])] + [row[-1]])
        for row in rows
    ]


@dataclass(frozen=True)
class Verdict:
    """One ``validate`` result (§10.3)."""

    id: str | None
    path: str
    status: str
    events: int | None
    messages: tuple[str, ...]
    label: str  # what the human line names: the id, or the path given

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": json_text(self.path),
            "status": self.status,
            "events": self.events,
            "messages": [json_text(message) for message in self.messages],
        }

    def lines(self) -> list[str]:
        if self.messages:
            first, rest = self.messages[0], self.messages[1:]
        else:
            first, rest = _plural(self.events or 0, "event"), ()
        return [f"{self.status}  {self.label}  {first}"] + [f"    {m}" for m in rest]


# =========================================================================== validation rules


class _ParentUnreadable(Exception):
    """The fork parent could not be read while comparing the seed; the cause is chained."""


def _parent_events(parent_path: Path) -> Iterator[Event]:
    # The parent's events, with its read errors told apart from the child's (whose events are
    # read from the file too, and whose errors are the child's own verdict).
    try:
        yield from iter_events(parent_path)
    except (EventLogError, OSError) as exc:
        raise _ParentUnreadable() from exc


def seed_messages(child: LogSnapshot, parent_path: Path) -> list[str]:
    """Compare a fork child's seed with its parent's first ``seedLength`` events, as canonical
    records (§10.3). Empty when they agree. (Reading the child already refused one whose
    ``seedLength`` exceeds its own events.)

    Both logs are streamed in step, one event of each at a time. A parent that cannot be read
    raises ``_ParentUnreadable`` chained to its error; errors reading the child propagate."""
    parent_id = child.header.parent_session
    seed_length = child.header.seed_length or 0
    seen = 0
    # The parent first: as before, one parent event past the seed is read (or the parent's end
    # reached, with its end-of-file checks) before the comparison stops.
    for parent_event, child_event in zip(
        _parent_events(parent_path), itertools.islice(child.events, seed_length)
    ):
        if parent_event.to_json() != child_event.to_json():
            return [
                f'fork seed differs from parent "{parent_id}" at seq {seen} '
                f"(seedLength {seed_length})"
            ]
        seen += 1
    if seen < seed_length:
        return [
            f'parent "{parent_id}" has {_plural(seen, "committed event")}, fewer than '
            f"seedLength {seed_length}"
        ]
    return []


def core_messages(events: Iterable[Event], closers: Iterable[Event]) -> list[str]:
    """eventlog's own rules over one pass of ``events``: the core vocabulary (§9), then the
    turn/step structure (§9.3) of the events followed by ``closers``, then the surface fold
    (§3.3). ``closers`` is iterated only after ``events`` is exhausted."""
    vocabulary: list[str] = []
    history = surface.History()
    folded: list[str] = []

    def checked() -> Iterator[Event]:
        decode = vocab.decode
        for event in events:
            try:
                decode(event)
            except EventLogError as exc:
                vocabulary.append(str(exc))
            if not folded:  # the fold stops at its first error
                try:
                    history.add(event)
                except SurfaceError as exc:
                    folded.append(str(exc))
            yield event

    structure = vocab.check_structure(itertools.chain(checked(), closers))
    return [*vocabulary, *structure, *folded]


def _concerns(exc: BaseException, snapshot: LogSnapshot) -> bool:
    """True for an error reading the snapshot's own file (it changed or vanished under a
    file-backed snapshot): the log's verdict, not a failure of the check that met it."""
    if isinstance(exc, CorruptLog):
        return exc.path == snapshot.path
    if isinstance(exc, OSError) and exc.filename is not None:
        return Path(exc.filename) == snapshot.path
    return False


def _closers(snapshot: LogSnapshot) -> tuple[Event, ...]:
    # The structure is judged on the log as the next open will leave it: repair's closers end
    # an interrupted turn, which alone is "repairable", not "invalid".
    return snapshot.repair.closers if snapshot.repair is not None else ()


def rule_messages(
    snapshot: LogSnapshot, checks: Sequence[Check], *, core: list[str] | None = None
) -> list[str]:
    """Every higher-rule violation of a readable log: core vocabulary (§9), turn/step
    structure (§9.3), the surface fold (§3.3), the fork seed, then the packages' checks.

    ``core`` is ``core_messages`` of the snapshot when the caller already has it (validate
    runs them on the scan that indexes the log). ``snapshot.events`` is only iterated, never
    copied (it may be file-backed, §11): one pass for eventlog's rules unless given, one for
    the seed, then whatever each check does. Errors reading the snapshot's own file
    (``CorruptLog`` for a log that changed, ``OSError``) propagate."""
    if core is None:
        core = core_messages(snapshot.events, _closers(snapshot))
    messages = list(core)
    parent = snapshot.header.parent_session
    if parent is not None:
        parent_path = _sibling(snapshot.path, parent)
        if parent_path is not None and parent_path.is_file():
            try:
                messages.extend(seed_messages(snapshot, parent_path))
            except _ParentUnreadable as exc:
                messages.append(
                    f'cannot compare the fork seed with parent "{parent}": {exc.__cause__}'
                )
    for check in checks:
        try:
            messages.extend(check(snapshot))
        except Exception as exc:  # a broken check is reported, never fatal to validate
            if _concerns(exc, snapshot):
                raise
            name = getattr(check, "__qualname__", repr(check))
            messages.append(f"check {name} failed: {type(exc).__name__}: {exc}")
    return messages


def _sibling(path: Path, session_id: str) -> Path | None:
    try:
        return path.parent / f"{check_session_id(session_id)}.jsonl"
    except InvalidSessionId:
        return None


def validate_log(
    path: Path, *, expected_id: str | None, label: str, checks: Sequence[Check]
) -> Verdict:
    """Read one log without writing and judge it (§10.3).

    The log is indexed, not loaded (``index_log``): the checks stream it from the file, so
    memory stays bounded by the largest record plus 8 bytes per event (§11). eventlog's own
    rules run on the indexing scan itself, saving a pass. A log that changes while it is
    judged is ``corrupt``; one that becomes unreadable, ``unreadable``."""

    def closers() -> Iterator[Event]:
        # Pulled once the scan is over, when the snapshot knows what repair would append.
        yield from _closers(indexer.snapshot())

    try:
        indexer = LogIndexer(path, expected_id=expected_id)
        core = core_messages(indexer, closers())
        snapshot = indexer.snapshot()
        events = len(snapshot.events)
        ident = snapshot.header.id
        messages = rule_messages(snapshot, checks, core=core)
    except UnsupportedFormat as exc:
        return Verdict(expected_id, str(path), "unsupported", None, (str(exc),), label)
    except CorruptLog as exc:
        return Verdict(expected_id, str(path), "corrupt", None, (str(exc),), label)
    except SessionNotFound as exc:
        message = f"{exc}{_not_found_hint(label)}"
        return Verdict(expected_id, str(path), "unreadable", None, (message,), label)
    except OSError as exc:
        return Verdict(expected_id, str(path), "unreadable", None, (_os_message(path, exc),), label)
    if messages:
        return Verdict(ident, str(path), "invalid", events, tuple(messages), label)
    if snapshot.repair is not None:
        return Verdict(
            ident, str(path), "repairable", events, tuple(repair_summary(snapshot.repair)), label
        )
    return Verdict(ident, str(path), "ok", events, (), label)


def leftover_temp_files(root: Path) -> list[Path]:
    """Temp files of interrupted publishes (``<id>.jsonl.<12 hex>.tmp``) in ``root``."""
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    return [root / name for name in names if _TEMP_RE.fullmatch(name)]


# =========================================================================== effects


@dataclass
class _Env:
    root: Path
    checks: tuple[Check, ...]
    out: IO[str]
    err: IO[str]

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


def _os_message(path: Path | str, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:  # O_NOFOLLOW refused a symlink
        return f'cannot read "{path}": symbolic link (session files are never followed)'
    return f'cannot read "{path}": {exc.strerror or exc}'


def _resolve(arg: str, env: _Env) -> tuple[Path, str | None]:
    """``PATH|ID``: an argument containing ``/`` is a file path, anything else an id in the root."""
    if "/" in arg:
        return Path(arg), None
    try:
        return env.store().path(arg), arg
    except InvalidSessionId as exc:
        raise UsageError(f"{exc} (to read a file, give a path containing '/', e.g. ./{arg})") from None


def _not_found_hint(arg: str) -> str:
    if Path(arg).is_file():
        return f' (to read the file in the current directory, write "./{arg}")'
    return ""


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


async def _with_progress(env: _Env, label: str, size: int, work: Callable[[], Awaitable[T]]) -> T:
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
            env.err.write(
                f"\r{spinner[tick % 4]} reading {label} ({megabytes:,.1f} MB) … {elapsed:4.1f}s"
            )
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
        raise _single(group) from None


async def _in_thread(fn: Callable[[], T]) -> T:
    # Reading never writes, so a Ctrl-C may abandon the worker thread.
    return await trio.to_thread.run_sync(fn, abandon_on_cancel=True)


# --------------------------------------------------------------------------- ls


async def _store_files(env: _Env) -> list[SessionInfo]:
    """Every store file (``SessionStore.list``); none for a root not created yet. A root that
    is not a directory fails, so a mistyped ``--root`` is not taken for an empty store."""
    if not env.root.is_dir():
        if env.root.exists():
            raise CommandFailed(f'session root "{env.root}" is not a directory')
        return []
    return await env.store().list()


async def _cmd_ls(args: argparse.Namespace, env: _Env) -> int:
    infos = await _store_files(env)
    if args.json:
        env.print_json(
            [
                {
                    "id": info.id,
                    "path": json_text(str(info.path)),
                    "bytes": info.size,
                    "header": None if info.header is None else header_json(info.path, info.header),
                    "problem": None if info.problem is None else json_text(info.problem),
                }
                for info in infos
            ]
        )
        return 0
    if not infos:
        return 0
    rows: list[tuple[str, ...]] = [("ID", "CREATED", "BYTES", "PARENT", "CWD")]
    for info in infos:
        header = info.header
        if header is None or info.problem is not None:
            rows.append((info.id, f"problem: {info.problem}"))
            continue
        parent = "-"
        if header.parent_session is not None:
            parent = f"{header.parent_session}@{header.seed_length or 0}"
        rows.append(
            (info.id, format_time(header.created_at), str(info.size), parent, header.cwd or "-")
        )
    for line in ls_table(rows):
        env.print(line)
    return 0


# --------------------------------------------------------------------------- inspect


async def _read_snapshot(arg: str, env: _Env) -> LogSnapshot:
    path, id = _resolve(arg, env)
    label = id or str(path)

    async def work() -> LogSnapshot:
        if id is not None:
            try:
                return await env.store().inspect(id)
            except SessionNotFound as exc:
                raise CommandFailed(f"{exc}{_not_found_hint(arg)}") from None
        return await _in_thread(lambda: read_log(path))

    return await _with_progress(env, label, _file_size(path), work)


async def _cmd_inspect(args: argparse.Namespace, env: _Env) -> int:
    snapshot = await _read_snapshot(args.log, env)
    types = set(args.type or ())
    events = (
        event
        for event in snapshot.events
        if (args.from_seq is None or event.seq >= args.from_seq)
        and (not types or event.type in types)
    )
    if args.json:
        env.write_pieces(inspect_json(snapshot, events))
        return 0
    for line in header_lines(snapshot):
        env.print(line)
    env.print()
    shown = 0
    for event in events:
        env.print(event_line(event, full=args.full))
        shown += 1
    if shown:
        env.print()
    for line in repair_lines(snapshot.repair, full=args.full):
        env.print(line)
    return 0


# --------------------------------------------------------------------------- validate


async def _cmd_validate(args: argparse.Namespace, env: _Env) -> int:
    targets: list[tuple[Path, str | None, str]] = []
    if args.logs:
        for arg in args.logs:
            path, id = _resolve(arg, env)
            targets.append((path, id, id or arg))
        scan_root = any(id is not None for _, id, _ in targets)
    else:
        targets = [(info.path, info.id, info.id) for info in await _store_files(env)]
        scan_root = True
    verdicts: list[Verdict] = []
    for path, id, label in targets:
        judge = functools.partial(
            validate_log, path, expected_id=id, label=label, checks=env.checks
        )
        verdict = await _with_progress(
            env, label, _file_size(path), functools.partial(_in_thread, judge)
        )
        verdicts.append(verdict)
        if not args.json:
            for line in verdict.lines():
                env.print(line)
    temps = leftover_temp_files(env.root) if scan_root else []
    for temp in temps:
        message = f"leftover temp file {temp} from an interrupted publish: safe to delete"
        if args.json:
            env.warn(f"warning: {message}")
        else:
            env.print(f"warning  {message}")
    if args.json:
        env.print_json([verdict.to_json() for verdict in verdicts])
    failing = FAILING | ({"repairable"} if args.strict else set())
    return 1 if any(v.status in failing for v in verdicts) else 0


# --------------------------------------------------------------------------- tail


def _emit(env: _Env, event: Event, as_json: bool) -> None:
    env.print(event.to_json().decode("utf-8") if as_json else event_line(event))


async def _print_from(env: _Env, path: Path, start_seq: int, as_json: bool) -> int:
    """Print every committed event from ``start_seq`` as it is read, in batches, so memory stays
    bounded by a batch (§11); return the seq to follow from."""
    events = iter_events(path, start_seq=start_seq)
    next_seq = start_seq
    while batch := await _in_thread(lambda: list(itertools.islice(events, TAIL_BATCH))):
        for event in batch:
            _emit(env, event, as_json)
        next_seq = batch[-1].seq + 1
    return next_seq


async def _cmd_tail(args: argparse.Namespace, env: _Env) -> int:
    path, id = _resolve(args.log, env)
    if id is not None:
        # The identity rule of §4.2 for a log named by id (tail reads by path).
        try:
            await _in_thread(lambda: read_header(path, expected_id=id))
        except FileNotFoundError:
            raise CommandFailed(f'session "{id}" not found{_not_found_hint(id)}') from None

    if args.from_seq is not None:
        next_seq = await _print_from(env, path, args.from_seq, args.json)
    else:

        def last_events() -> tuple[list[Event], int]:
            """The last ``-n`` events (a bounded deque), and the seq to follow from."""
            last: collections.deque[Event] = collections.deque(maxlen=args.lines)
            count = 0
            for event in iter_events(path):
                last.append(event)
                count += 1
            return list(last), count

        first, next_seq = await _with_progress(
            env, id or str(path), _file_size(path), lambda: _in_thread(last_events)
        )
        for event in first:
            _emit(env, event, args.json)
    env.out.flush()
    if args.follow:
        following = tail(
            path,
            start_seq=next_seq,
            follow=True,
            on_truncate=lambda size: env.warn(f"log truncated to {size} bytes"),
        )
        async with contextlib.aclosing(following):
            async for event in following:
                _emit(env, event, args.json)
                env.out.flush()
    return 0


# --------------------------------------------------------------------------- fork


def last_turn_end(events: Iterable[Event], boundary: int | None) -> int | None:
    """The seq of the last ``turn/end`` at or before ``boundary`` (``None``: the whole log)."""
    found = None
    for event in events:
        if boundary is not None and event.seq > boundary:
            break
        if event.type == "turn/end":
            found = event.seq
    return found


def open_turn_hint(last_end: int | None) -> str:
    """The hint added to an ``OPEN_TURN`` refusal (§10.5)."""
    if last_end is None:
        return "no turn has ended before this boundary, so no earlier boundary closes a turn"
    return f"the last valid boundary is seq {last_end}, the last turn/end: try --at {last_end}"


async def _cmd_fork(args: argparse.Namespace, env: _Env) -> int:
    path, id = _resolve(args.log, env)
    if args.id is not None:
        try:
            check_session_id(args.id)
        except InvalidSessionId as exc:
            raise UsageError(f"--id: {exc}") from None
    source: str | Path = id if id is not None else path
    store = env.store()
    try:
        child = await _with_progress(
            env,
            id or str(path),
            _file_size(path),
            lambda: store.fork(source, at=args.at, id=args.id),
        )
    except SessionNotFound as exc:
        raise CommandFailed(f"{exc}{_not_found_hint(args.log)}") from None
    except ForkError as exc:
        if exc.code != "OPEN_TURN":
            raise
        last_end = await _in_thread(lambda: last_turn_end(iter_events(path), args.at))
        raise CommandFailed(f"{exc} ({open_turn_hint(last_end)})") from None
    child_path = store.path(child.id)
    events = await _in_thread(lambda: sum(1 for _ in iter_events(child_path)))
    seed_length = child.seed_length or 0
    if args.json:
        env.print_json(
            {
                "id": child.id,
                "path": json_text(str(child_path)),
                "parentSession": child.parent_session,
                "seedLength": seed_length,
                "events": events,
            }
        )
        return 0
    at = f"at seq {seed_length - 1}" if seed_length else "with an empty seed"
    env.print(
        f"forked {child.parent_session} {at} -> {child.id} "
        f"(seedLength {seed_length}, {events} events)"
    )
    env.print(str(child_path))
    return 0


# =========================================================================== command line


class _Parser(argparse.ArgumentParser):
    """argparse with the project's error convention: one line, exit status 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f'{message} (see "{self.prog} --help")')


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


_EPILOG = """\
PATH|ID: an argument containing "/" is a file path (write ./x.jsonl for the current
directory); anything else is a session id in the root. Times print as UTC.
{root_rule}These commands never write to an existing session file; only fork writes,
and only a new file.

examples:
  {prog} ls
  {prog} inspect demo-1 --type turn/end
  {prog} inspect ./session.jsonl --json
  {prog} validate --strict
  {prog} tail -f demo-1
  {prog} fork demo-1 --at 5 --id demo-1-b
"""

_ROOT_RULE = """\
Without --root the root is $TURNLOG_HOME/sessions, else $XDG_DATA_HOME/turnlog/sessions,
else ~/.local/share/turnlog/sessions.
"""


def build_parser(
    prog: str = "turnlog", *, default: Path | None = None, explain_default: bool = True
) -> argparse.ArgumentParser:
    """The argument parser of the five log commands. ``default`` is the root used without
    ``--root`` (shown in the help); ``explain_default`` adds eventlog's own root rule to it."""
    parser = _Parser(
        prog=prog,
        description="Inspect, validate, follow and fork turnlog session logs.",
        epilog=_EPILOG.format(prog=prog, root_rule=_ROOT_RULE if explain_default else ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    root_help = "session root directory" + (f" (default: {default})" if default else "")
    parser.add_argument("--root", metavar="DIR", help=root_help)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(
        name: str, summary: str, examples: str, details: str = ""
    ) -> argparse.ArgumentParser:
        sub = commands.add_parser(
            name,
            help=summary,
            description=summary + (f".\n\n{details}" if details else ""),
            epilog="examples:\n" + examples.format(prog=prog),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        # SUPPRESS keeps a --root given before the command from being reset here.
        sub.add_argument("--root", metavar="DIR", default=argparse.SUPPRESS, help=root_help)
        return sub

    sub = command(
        "ls",
        "list the sessions in the root with their headers",
        "  {prog} ls\n  {prog} ls --root fixtures --json\n",
    )
    sub.add_argument("--json", action="store_true", help="print a JSON array")

    sub = command(
        "inspect",
        "show a log's header, events and what repair would do, without writing",
        "  {prog} inspect demo-1\n  {prog} inspect ./session.jsonl --from 40 --full\n"
        "  {prog} inspect demo-1 --type schedule/change --type turn/end\n"
        "  {prog} inspect demo-1 --json\n",
        "A log that open would repair (torn tail, interrupted turn) is shown with what the\n"
        "repair would do and exits 0; a corrupt or unsupported log exits 1.",
    )
    sub.add_argument("log", metavar="PATH|ID", help="a session id, or a path containing /")
    sub.add_argument("--json", action="store_true", help="print one JSON object")
    sub.add_argument(
        "--from", dest="from_seq", metavar="SEQ", type=_count, help="show events from SEQ on"
    )
    sub.add_argument(
        "--type", action="append", metavar="TYPE", help="show only events of TYPE (repeatable)"
    )
    sub.add_argument("--full", action="store_true", help="do not cut event data at 80 characters")

    sub = command(
        "validate",
        "check logs against the format, vocabulary, surface and package rules",
        "  {prog} validate\n  {prog} validate demo-1 ./session.jsonl --json\n"
        "  {prog} validate --strict     # repairable logs fail too\n",
        "Each log gets a status: ok; repairable (torn tail or interrupted turn, which the next\n"
        "open fixes); invalid (breaks the vocabulary, turn/step structure, surface, fork\n"
        "seed or a package rule); corrupt; unsupported; unreadable. Exit status 1 if any log\n"
        "is invalid, corrupt, unsupported or unreadable (with --strict, repairable too).",
    )
    sub.add_argument(
        "logs", metavar="PATH|ID", nargs="*", help="logs to check (default: every store file)"
    )
    sub.add_argument("--json", action="store_true", help="print a JSON array")
    sub.add_argument("--strict", action="store_true", help="fail on repairable logs as well")

    sub = command(
        "tail",
        "print the last events of a log, and with -f follow new ones",
        "  {prog} tail demo-1\n  {prog} tail -f -n 0 demo-1 --json\n"
        "  {prog} tail ./session.jsonl --from 100\n",
        "Only committed events are printed (a torn last record is not). A log truncated while\n"
        "followed is reported on stderr and followed on; Ctrl-C ends -f with status 0.",
    )
    sub.add_argument("log", metavar="PATH|ID", help="a session id, or a path containing /")
    which = sub.add_mutually_exclusive_group()
    which.add_argument(
        "-n", dest="lines", metavar="N", type=_count, default=10,
        help="print the last N committed events (default 10)",
    )
    which.add_argument(
        "--from", dest="from_seq", metavar="SEQ", type=_count, help="print every event from SEQ on"
    )
    sub.add_argument(
        "-f", "--follow", action="store_true", help="keep following new events (Ctrl-C ends)"
    )
    sub.add_argument("--json", action="store_true", help="print canonical records (JSONL)")

    sub = command(
        "fork",
        "fork a log into a new session in the root; the parent is never modified",
        "  {prog} fork demo-1 --at 5\n  {prog} fork ./session.jsonl --id imported --json\n",
        "The child holds the parent's events 0..SEQ, then a session/end-seed marker (unless\n"
        "event SEQ is one). SEQ may not end inside an open turn: end on a turn/end or between\n"
        "turns.",
    )
    sub.add_argument("log", metavar="PATH|ID", help="a session id, or a path containing /")
    sub.add_argument(
        "--at", metavar="SEQ", type=int, help="last parent event to copy (default: the last one)"
    )
    sub.add_argument("--id", metavar="NEWID", help="the child's id (default: a new UUID)")
    sub.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


_COMMANDS: dict[str, Callable[[argparse.Namespace, _Env], Awaitable[int]]] = {
    "ls": _cmd_ls,
    "inspect": _cmd_inspect,
    "validate": _cmd_validate,
    "tail": _cmd_tail,
    "fork": _cmd_fork,
}


def _single(exc: BaseException) -> BaseException:
    """The one exception inside (nested) single-member exception groups, else ``exc``."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def main(
    argv: Sequence[str] | None = None,
    *,
    checks: Iterable[Check] = (),
    root: str | os.PathLike[str] | None = None,
    prog: str = "turnlog",
) -> int:
    """Run one log command and return its exit status (§10).

    ``argv`` excludes the program name (default ``sys.argv[1:]``). ``checks`` are the
    packages' rules for ``validate``. ``root`` is the session root to use when no ``--root`` is
    given (default ``eventlog.default_root()``). ``prog`` names the program in usage texts.
    """
    err = sys.stderr
    fallback = Path(root).absolute() if root is not None else default_root()
    parser = build_parser(prog, default=fallback, explain_default=root is None)
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown:
            # argparse leaves a subcommand's unknown options to the top level, whose error
            # would point at the general help; point at the command's own.
            raise UsageError(
                f"unrecognized arguments: {' '.join(unknown)} "
                f'(see "{prog} {args.command} --help")'
            )
    except UsageError as exc:
        err.write(f"{ERROR_PREFIX}: {exc}\n")
        return 2
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    chosen = Path(args.root).absolute() if args.root is not None else fallback
    out = sys.stdout
    reconfigure = getattr(out, "reconfigure", None)
    if reconfigure is not None:
        # Human output prints a path whose bytes are not UTF-8 as those bytes, as stderr
        # does (backslashreplace), instead of failing under a strict UTF-8 locale.
        reconfigure(errors="surrogateescape")
    env = _Env(root=chosen, checks=tuple(checks), out=out, err=err)
    try:
        return trio.run(_COMMANDS[args.command], args, env)
    except BaseException as raw:
        exc = _single(raw)
        if isinstance(exc, KeyboardInterrupt):
            # Ctrl-C is how `tail -f` ends (§10.4); anything else was interrupted.
            return 0 if args.command == "tail" else 130
        if isinstance(exc, UsageError):
            err.write(f"{ERROR_PREFIX}: {exc}\n")
            return 2
        if isinstance(exc, BrokenPipeError):
            # The reader of our output went away (`| head`): stop quietly.
            _silence_stdout()
            return 1
        if isinstance(exc, InvalidSessionId):
            err.write(f"{ERROR_PREFIX}: {exc}\n")
            return 2
        if isinstance(exc, (CommandFailed, EventLogError)):
            err.write(f"{ERROR_PREFIX}: {exc}\n")
            return 1
        if isinstance(exc, OSError):
            message = _os_message(exc.filename, exc) if exc.filename else str(exc)
            err.write(f"{ERROR_PREFIX}: {message}\n")
            return 1
        raise


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
