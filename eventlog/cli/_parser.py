"""The command line of the five log commands (log-format §10): one ``argparse`` parser.

Usage errors follow the project's convention: one line, exit status 2 (``UsageError``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import NoReturn


class UsageError(Exception):
    """A bad command line: exit status 2."""


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
directory); anything else is a session id in the root. {times}
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

_LOG_HELP = "a session id, or a path containing /"


class _Commands:
    """Adds the subcommands to a parser; each gets its own ``--root`` and examples."""

    def __init__(self, parser: argparse.ArgumentParser, prog: str, root_help: str) -> None:
        self._subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
        self._prog = prog
        self._root_help = root_help

    def add(self, name: str, summary: str, examples: str, details: str = "") -> argparse.ArgumentParser:
        sub = self._subparsers.add_parser(
            name,
            help=summary,
            description=summary + (f".\n\n{details}" if details else ""),
            epilog="examples:\n" + examples.format(prog=self._prog),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        # SUPPRESS keeps a --root given before the command from being reset here.
        sub.add_argument("--root", metavar="DIR", default=argparse.SUPPRESS, help=self._root_help)
        return sub


def _add_ls(commands: _Commands) -> None:
    sub = commands.add(
        "ls",
        "list the sessions in the root with their headers",
        "  {prog} ls\n  {prog} ls --root fixtures --json\n",
    )
    sub.add_argument("--json", action="store_true", help="print a JSON array")
    _add_utc(sub)


def _add_utc(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--utc", action="store_true", help="show times in UTC (human output; --json is always UTC)"
    )


def _add_inspect(commands: _Commands) -> None:
    sub = commands.add(
        "inspect",
        "show a log's header, events and what repair would do, without writing",
        "  {prog} inspect demo-1\n  {prog} inspect ./session.jsonl --from 40 --full\n"
        "  {prog} inspect demo-1 --type schedule/change --type turn/end\n"
        "  {prog} inspect demo-1 --json\n",
        "A log that open would repair (torn tail, interrupted turn) is shown with what the\n"
        "repair would do and exits 0; a corrupt or unsupported log exits 1.",
    )
    sub.add_argument("log", metavar="PATH|ID", help=_LOG_HELP)
    sub.add_argument("--json", action="store_true", help="print one JSON object")
    sub.add_argument("--from", dest="from_seq", metavar="SEQ", type=_count, help="show events from SEQ on")
    sub.add_argument("--type", action="append", metavar="TYPE", help="show only events of TYPE (repeatable)")
    sub.add_argument("--full", action="store_true", help="do not cut event data at 80 characters")
    _add_utc(sub)


def _add_validate(commands: _Commands) -> None:
    sub = commands.add(
        "validate",
        "check logs against the format, vocabulary, surface and package rules",
        "  {prog} validate\n  {prog} validate demo-1 ./session.jsonl --json\n"
        "  {prog} validate --strict     # repairable logs fail too\n",
        "Each log gets a status: ok; repairable (torn tail or interrupted turn, which the next\n"
        "open fixes); invalid (breaks the vocabulary, turn/step structure, surface, fork\n"
        "seed or a package rule); corrupt; unsupported; unreadable. Exit status 1 if any log\n"
        "is invalid, corrupt, unsupported or unreadable (with --strict, repairable too).",
    )
    sub.add_argument("logs", metavar="PATH|ID", nargs="*", help="logs to check (default: every store file)")
    sub.add_argument("--json", action="store_true", help="print a JSON array")
    sub.add_argument("--strict", action="store_true", help="fail on repairable logs as well")


def _add_tail(commands: _Commands) -> None:
    sub = commands.add(
        "tail",
        "print the last events of a log, and with -f follow new ones",
        "  {prog} tail demo-1\n  {prog} tail -f -n 0 demo-1 --json\n"
        "  {prog} tail ./session.jsonl --from 100\n",
        "Only committed events are printed (a torn last record is not). A log truncated while\n"
        "followed is reported on stderr and followed on; Ctrl-C ends -f with status 0.",
    )
    sub.add_argument("log", metavar="PATH|ID", help=_LOG_HELP)
    which = sub.add_mutually_exclusive_group()
    which.add_argument(
        "-n", dest="lines", metavar="N", type=_count, default=10,
        help="print the last N committed events (default 10)",
    )
    which.add_argument("--from", dest="from_seq", metavar="SEQ", type=_count, help="print every event from SEQ on")
    sub.add_argument("-f", "--follow", action="store_true", help="keep following new events (Ctrl-C ends)")
    sub.add_argument("--json", action="store_true", help="print canonical records (JSONL)")
    _add_utc(sub)


def _add_fork(commands: _Commands) -> None:
    sub = commands.add(
        "fork",
        "fork a log into a new session in the root; the parent is never modified",
        "  {prog} fork demo-1 --at 5\n  {prog} fork ./session.jsonl --id imported --json\n",
        "The child holds the parent's events 0..SEQ, then a session/end-seed marker (unless\n"
        "event SEQ is one). SEQ may not end inside an open turn: end on a turn/end or between\n"
        "turns.",
    )
    sub.add_argument("log", metavar="PATH|ID", help=_LOG_HELP)
    sub.add_argument("--at", metavar="SEQ", type=int, help="last parent event to copy (default: the last one)")
    sub.add_argument("--id", metavar="NEWID", help="the child's id (default: a new UUID)")
    sub.add_argument("--json", action="store_true", help="print one JSON object")
    add_layout_options(sub)


def add_layout_options(sub: argparse.ArgumentParser) -> None:
    """``--layout`` and ``--compression`` of the commands that write a root (dsh-roots §3)."""
    sub.add_argument(
        "--layout", choices=("flat", "dsh"), default="auto",
        help="the root's layout when it is empty (default: detected; flat for a new root)",
    )
    sub.add_argument(
        "--compression", choices=("none", "zstd"), default=None,
        help="a dsh root's encoding when it is empty (default: detected; zstd for a new dsh root)",
    )


def build_parser(
    prog: str = "turnlog",
    *,
    default: Path | None = None,
    explain_default: bool = True,
    local_times: bool = False,
) -> argparse.ArgumentParser:
    """The argument parser of the five log commands. ``default`` is the root used without
    ``--root`` (shown in the help); ``explain_default`` adds eventlog's own root rule to it;
    ``local_times`` says that human output shows times in the user's zone. Its ``error``
    raises ``UsageError``."""
    times = "Times show in your time zone (--utc: UTC)." if local_times else "Times print as UTC."
    parser = _Parser(
        prog=prog,
        description="Inspect, validate, follow and fork turnlog session logs.",
        epilog=_EPILOG.format(prog=prog, root_rule=_ROOT_RULE if explain_default else "", times=times),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    root_help = "session root directory" + (f" (default: {default})" if default else "")
    parser.add_argument("--root", metavar="DIR", help=root_help)
    commands = _Commands(parser, prog, root_help)
    for add in (_add_ls, _add_inspect, _add_validate, _add_tail, _add_fork):
        add(commands)
    return parser
