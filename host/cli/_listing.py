"""``turnlog ls`` (host §7.4): the sessions of the root as people look for them — newest activity
first, with a title, the last activity, the turns, the active reminders and whether another
process has the session open — and, with ``--json``, eventlog's listing unchanged (log-format
§10.1).

The table is pure (:func:`ls_rows`); :func:`run_ls` reads each session file once, streaming
(:func:`~._sessions.read_summary`), and probes its writer lock without holding it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import schedule
from eventlog import EventLogError, SessionInfo, SessionStore
from eventlog.values import SystemClock

from ._errors import Parser, StartupError, UsageError
from ._sessions import Summary, read_summary, writer_lock_held
from ._when import Zone, clock, user_zone, when


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="turnlog ls",
        description="List the sessions in the root, most recently active first: title (the first "
        "prompt), last activity, turns, active reminders, and whether another process has it open.",
        epilog="examples:\n  turnlog ls\n  turnlog ls -n 5\n  turnlog ls -l --utc\n  turnlog ls --json\n\n"
        "--json prints eventlog's listing (id, path, bytes, header, problem) in creation order.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--root", metavar="DIR", help="session root directory (see `turnlog --help`)")
    parser.add_argument("-n", dest="limit", metavar="N", type=int, help="only the N most recently active")
    parser.add_argument("-l", "--long", action="store_true", help="add CREATED, BYTES, PARENT and CWD")
    parser.add_argument("--utc", action="store_true", help="show times in UTC instead of your time zone")
    parser.add_argument("--json", action="store_true", help="print eventlog's JSON array")
    return parser


@dataclass(frozen=True, slots=True)
class Listed:
    """One row's facts: the listing's info, and the summary or the problem that hides it."""

    info: SessionInfo
    summary: Summary | None
    problem: str | None
    open_elsewhere: bool


def _reminders(summary: Summary, zone: Zone, now_ms: int) -> str:
    due = summary.next_due
    if due is None:
        return "-"
    return f"{len(summary.active)}, next {clock(schedule.parse_instant(due.scheduled_at), zone, now_ms)}"


def ls_rows(listed: Sequence[Listed], *, zone: Zone, now_ms: int, long: bool) -> list[tuple[str, ...]]:
    """The table: a header row, then one row per session (a problem spans the other columns)."""
    head: tuple[str, ...] = ("ID", "LAST ACTIVE", "TURNS", "REMINDERS", "OPEN")
    if long:
        head += ("CREATED", "BYTES", "PARENT", "CWD")
    rows = [(*head, "TITLE")]
    for item in listed:
        summary = item.summary
        if summary is None:
            rows.append((item.info.id, f"problem: {item.problem}"))
            continue
        row: tuple[str, ...] = (
            item.info.id,
            when(summary.last_ms, zone, now_ms),
            str(summary.turns),
            _reminders(summary, zone, now_ms),
            "open" if item.open_elsewhere else "-",
        )
        if long:
            header = item.info.header
            parent = f"{summary.parent}@{summary.seed_length or 0}" if summary.parent is not None else "-"
            cwd = header.cwd if header is not None and header.cwd else "-"
            row += (clock(summary.created_ms, zone, now_ms), str(item.info.size), parent, cwd)
        rows.append((*row, summary.title or "-"))
    return rows


def table(rows: Sequence[tuple[str, ...]]) -> list[str]:
    """Left-aligned columns, two spaces apart; a row's last cell is not padded."""
    widths: dict[int, int] = {}
    for row in rows:
        for i, cell in enumerate(row[:-1]):
            widths[i] = max(widths.get(i, 0), len(cell))
    return ["  ".join([cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])] + [row[-1]]) for row in rows]


def _listed(info: SessionInfo) -> Listed:
    """Read one store file's summary (blocking)."""
    if info.header is None or info.problem is not None:
        return Listed(info, None, info.problem or "unreadable", False)
    try:
        summary = read_summary(info)
    except (EventLogError, OSError) as exc:
        return Listed(info, None, str(exc), False)
    return Listed(info, summary, None, writer_lock_held(info.path))


def newest_first(listed: Sequence[Listed]) -> list[Listed]:
    """Sessions by last activity, newest first (ties by id); those with a problem last, by id."""
    good = sorted((i for i in listed if i.summary is not None), key=lambda i: i.info.id)
    good.sort(key=lambda i: i.summary.last_ms if i.summary is not None else 0, reverse=True)
    return good + sorted((i for i in listed if i.summary is None), key=lambda i: i.info.id)


def run_ls(
    argv: Sequence[str], environ: Mapping[str, str], root: Path, *, delegate: Callable[[list[str]], int]
) -> int:
    """``turnlog ls ARGS``: the human listing, or ``delegate`` (eventlog's ``ls``) for ``--json``."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    chosen = Path(args.root).absolute() if args.root is not None else root
    if args.json:
        if args.limit is not None or args.long:
            raise UsageError("-n and -l shape the table; ls --json lists every session with its header")
        return delegate(["ls", "--json", "--root", str(chosen)])
    if args.limit is not None and args.limit < 1:
        raise UsageError(f"-n must be a positive integer, got {args.limit}")
    if not chosen.is_dir():
        if chosen.exists():
            raise StartupError(f'session root "{chosen}" is not a directory')
        raise StartupError(
            f"no session root at {chosen} (nothing has been stored there yet: start with turnlog chat, "
            "or pass --root DIR)"
        )

    # Read in this thread: a listing waits for nothing, so it needs no event loop (nor trio).
    listed = newest_first([_listed(info) for info in SessionStore(chosen).list_blocking()])
    if not listed:
        return 0
    if args.limit is not None:
        listed = listed[: args.limit]
    rows = ls_rows(
        listed, zone=user_zone(environ, utc=args.utc), now_ms=SystemClock().now_ms(), long=args.long
    )
    sys.stdout.write("".join(line + "\n" for line in table(rows)))
    return 0
