"""``turnlog show PATH|ID`` (host §7.4): a session as a readable conversation.

Reads the log without writing or locking (``read_log``; a torn tail is left out), folds it with
:mod:`._transcript` and prints it: coloured and through ``$PAGER`` (default ``less -R``, with
``LESS=FRX`` unless set, so a short transcript is printed and left on the screen) when stdout is
a terminal; plain otherwise, or with ``NO_COLOR``. ``--json`` prints the entries for programs.
Works on any session file, deepseek-harness logs with packed rows included.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from eventlog import EventLogError, InvalidSessionId, LogSnapshot, SessionNotFound, SessionStore, read_log
from eventlog.values import SystemClock

from ._errors import Parser, StartupError, UsageError
from ._sessions import suggestions
from ._style import style_for
from ._transcript import document, entries, render
from ._when import user_zone

DEFAULT_PAGER = "less -R"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="turnlog show",
        description="Show a session as a conversation: prompts, replies (Markdown), tool calls and "
        "results condensed, reminders, time readings folded, forks marked. Never writes.",
        epilog="examples:\n  turnlog show kitchen\n  turnlog show ./session.jsonl --full\n"
        "  turnlog show fixtures/deepseek-harness/fork-child.jsonl\n  turnlog show kitchen --json | jq .entries\n\n"
        "PATH|ID: an argument containing / is a file path; anything else is a session id in the root.\n"
        "On a terminal the transcript is coloured and paged ($PAGER, default 'less -R'); NO_COLOR\n"
        "turns colour off, --no-pager prints it directly.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--root", metavar="DIR", help="session root directory (see `turnlog --help`)")
    parser.add_argument("log", metavar="PATH|ID", help="a session id, or a path containing /")
    parser.add_argument("--full", action="store_true", help="show reasoning, tool traffic and readings whole")
    parser.add_argument("--utc", action="store_true", help="show times in UTC instead of your time zone")
    parser.add_argument("--no-pager", action="store_true", help="print directly, without $PAGER")
    parser.add_argument("--json", action="store_true", help="print the transcript as one JSON object")
    return parser


def read_session(arg: str, root: Path) -> tuple[LogSnapshot, str]:
    """The log named by ``arg`` (a path if it contains ``/``, else an id in ``root``) and how
    it was named. Raises :class:`StartupError` (a missing log or root, an unreadable one) or
    :class:`UsageError` (an invalid id)."""
    if "/" in arg:
        try:
            return read_log(arg), arg
        except (EventLogError, OSError) as exc:
            raise StartupError(str(exc)) from None
    try:
        path = SessionStore(root).path(arg)
    except InvalidSessionId as exc:
        raise UsageError(f"{exc} (to read a file, give a path containing '/', e.g. ./{arg})") from None
    if not root.is_dir():
        raise StartupError(f"no session root at {root} (nothing has been stored there yet; pass --root DIR)")
    try:
        return read_log(path, expected_id=arg), arg
    except (SessionNotFound, FileNotFoundError):
        near = suggestions(arg, [info.id for info in SessionStore(root).list_blocking()])
        close = f" (did you mean {' or '.join(near)}?)" if near else ""
        hint = f' (to read the file in the current directory, write "./{arg}")' if Path(arg).is_file() else ""
        raise StartupError(f'session "{arg}" not found in {root}{close}; see turnlog ls{hint}') from None
    except (EventLogError, OSError) as exc:
        raise StartupError(str(exc)) from None


def page(text: str, environ: Mapping[str, str], out: TextIO) -> None:
    """Write ``text`` through the pager (``$PAGER``, default ``less -R``; empty or ``cat``: none).
    A pager that cannot be started, or a reader that quits early, is not an error."""
    command = environ.get("PAGER", DEFAULT_PAGER).strip()
    if command in ("", "cat"):
        out.write(text)
        return
    env = dict(environ)
    env.setdefault("LESS", "FRX")  # short texts print and stay; colours pass through
    out.flush()
    try:
        pager = subprocess.Popen(shlex.split(command), stdin=subprocess.PIPE, env=env, text=True)
    except OSError:
        out.write(text)
        return
    assert pager.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        pager.stdin.write(text)
        pager.stdin.close()
    while True:
        try:
            pager.wait()
            return
        except KeyboardInterrupt:  # Ctrl-C is the pager's (less interrupts a search with it)
            continue


def run_show(argv: Sequence[str], environ: Mapping[str, str], root: Path) -> int:
    """``turnlog show ARGS`` and its exit status (0; 1 for a log that cannot be read)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    chosen = Path(args.root).absolute() if args.root is not None else root
    snapshot, _ = read_session(args.log, chosen)
    shown = entries(snapshot.events)
    out = sys.stdout
    if args.json:
        out.write(document(snapshot.header.to_json(), snapshot.header.id, str(snapshot.path), shown).decode())
        return 0
    tty = out.isatty()
    style = style_for(out, environ)
    lines = render(
        snapshot.header,
        shown,
        style=style,
        zone=user_zone(environ, utc=args.utc),
        now_ms=SystemClock().now_ms(),
        full=args.full,
        path=str(snapshot.path),
        open_turn=snapshot.repair.open_turn
        if snapshot.repair is not None and snapshot.repair.closers
        else None,
    )
    text = "\n".join(lines) + "\n"
    if tty and not args.no_pager:
        page(text, environ, out)
    else:
        out.write(text)
    return 0
