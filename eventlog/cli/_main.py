"""``main``: parse the command line, run one log command (the read-only ones as plain calls,
``tail`` and ``fork`` under ``trio.run``), map every outcome to an exit status and at most one
line on stderr (log-format §10)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from datetime import tzinfo
from pathlib import Path
from typing import IO

from ..errors import EventLogError, InvalidSessionId
from ..store import default_root
from ._commands import COMMANDS, ERROR_PREFIX, CommandFailed, Env, single
from ._parser import UsageError, build_parser
from ._validate import Check, os_message


def main(
    argv: Sequence[str] | None = None,
    *,
    checks: Iterable[Check] = (),
    root: str | os.PathLike[str] | None = None,
    prog: str = "turnlog",
    zone: tzinfo | None = None,
    dsh_default: bool = False,
) -> int:
    """Run one log command and return its exit status (log-format §10).

    ``argv`` excludes the program name (default ``sys.argv[1:]``). ``checks`` are the
    packages' rules for ``validate``. ``root`` is the session root to use when no ``--root`` is
    given (default ``eventlog.default_root()``). ``prog`` names the program in usage texts.
    ``zone`` is the zone human output shows times in (default: UTC, as log-format §10 writes
    them); ``--utc`` overrides it. ``--json`` output is the same in every zone. ``dsh_default``
    says that ``root`` came from ``$DSH_SESSION_ROOT``: a ``fork`` into it while it is empty
    writes the dsh layout in Zstandard (dsh-roots §3); a ``--root`` given here drops it.

    Exit status 0 on success; 1 on a failure, described by one line ``turnlog: <message>`` on
    stderr; 2 on a usage error (also one line); 130 when interrupted (Ctrl-C), except that
    Ctrl-C is how ``tail -f`` ends, with 0. A reader of the output that goes away (``| head``)
    ends the command quietly with 1.
    """
    err = sys.stderr
    fallback = Path(root).absolute() if root is not None else default_root()
    parser = build_parser(prog, default=fallback, explain_default=root is None, local_times=zone is not None)
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown:
            # argparse leaves a subcommand's unknown options to the top level, whose error
            # would point at the general help; point at the command's own.
            raise UsageError(
                f'unrecognized arguments: {" ".join(unknown)} (see "{prog} {args.command} --help")'
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
    shown_in = None if getattr(args, "utc", False) else zone
    env = Env(
        root=chosen,
        checks=tuple(checks),
        out=out,
        err=err,
        prog=prog,
        zone=shown_in,
        dsh_default=dsh_default and args.root is None,
    )
    try:
        command = COMMANDS.get(args.command)
        if command is not None:
            return command(args, env)
        # Only the commands that wait load trio (and the modules that need it).
        import trio

        from ._follow import COMMANDS as WAITING

        return trio.run(WAITING[args.command], args, env)
    except BaseException as raw:
        status = _exit_status(single(raw), args.command, err)
        if status is None:
            raise  # not an outcome of the command: a bug, with its traceback
        return status


def _exit_status(exc: BaseException, command: str, err: IO[str]) -> int | None:
    """The exit status for what ended a command, after writing its one line on stderr; None
    for anything that is not an outcome of the command."""
    if isinstance(exc, KeyboardInterrupt):
        # Ctrl-C is how `tail -f` ends (log-format §10.4); anything else was interrupted.
        return 0 if command == "tail" else 130
    if isinstance(exc, BrokenPipeError):
        # The reader of our output went away (`| head`): stop quietly.
        _silence_stdout()
        return 1
    if isinstance(exc, (UsageError, InvalidSessionId)):
        message, status = str(exc), 2
    elif isinstance(exc, (CommandFailed, EventLogError)):
        message, status = str(exc), 1
    elif isinstance(exc, OSError):
        message, status = (os_message(exc.filename, exc) if exc.filename else str(exc)), 1
    else:
        return None
    err.write(f"{ERROR_PREFIX}: {message}\n")
    return status


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
