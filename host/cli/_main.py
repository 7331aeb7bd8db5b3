"""The ``turnlog`` command line (host §7), also ``python -m host``: ``demo``, ``chat``,
``serve``, ``web`` and the log commands ``ls``, ``inspect``, ``validate``, ``tail`` and ``fork``
(log-format §10).

This module only picks the command; ``_logcommands``, ``_commands`` or ``_web`` runs it and is
imported only then, so ``--help``, ``--version`` and the log commands load neither the JSON-RPC
server nor chat nor the demo. (Importing ``host`` itself loads its runtime: the package re-exports its API.)

Errors are one line on stderr, ``turnlog: <what was wrong and what to do>``. Exit codes: 0
success, 1 runtime failure, 2 usage error, 130 after SIGINT. ``turnlog --profile NAME …``
without a command is ``turnlog serve --profile NAME …``, so the deepseek-harness SDK client can
launch it as its ``dsh_bin``.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Sequence

from host._process import EXIT_SIGINT, package_version

from ._errors import StartupError, UsageError

LOG_COMMANDS = ("ls", "show", "inspect", "validate", "tail", "fork")
HOST_COMMANDS = ("demo", "chat", "serve")
WEB_COMMAND = "web"
MODELS_COMMAND = "models"
COMMANDS = (*HOST_COMMANDS, WEB_COMMAND, MODELS_COMMAND, *LOG_COMMANDS)
HELP = ("-h", "--help")
VERSION = "--version"

_TOP_HELP = """\
usage: turnlog [--root DIR] COMMAND [options]

An event-sourced session service for a local AI assistant: one append-only JSONL log per
session, reminders that survive restarts, and a JSON-RPC host.

commands:
  demo       a self-checking tour on the offline scripted model (start here)
  chat       an interactive terminal assistant
  web        the assistant and a log inspector in your browser (loopback only)
  serve      JSON-RPC 2.0 over stdio (deepseek-harness-sdk compatible)
  models     the model providers, what each needs, and where your settings come from
  ls         list the sessions: title, last activity, turns, reminders
  show       a session as a readable conversation
  inspect    show a log's header, events and what repair would do
  validate   check logs against the format and the packages' rules
  tail       print the last events of a log, and follow it with -f
  fork       create a child session from a log

options:
  --root DIR   session root (default: $TURNLOG_HOME/sessions, $DSH_SESSION_ROOT,
               $XDG_DATA_HOME/turnlog/sessions, ~/.local/share/turnlog/sessions)
  --version    print the version
  -h, --help   show this help; `turnlog COMMAND --help` for a command

`turnlog --profile NAME ...` without a command runs `turnlog serve`.
"""


def split_command(argv: Sequence[str]) -> tuple[str, list[str]]:
    """The command and its arguments. Leading ``--root DIR`` options are moved after the command;
    without a command, ``--profile`` anywhere means ``serve``. ``-h``/``--help`` and
    ``--version`` in the command's place are returned as the command."""
    leading: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--root":
            if index + 1 == len(argv):
                raise UsageError("argument --root: expected one argument; see turnlog --help")
            leading += argv[index : index + 2]
            index += 2
        elif token.startswith("--root="):
            leading.append(token)
            index += 1
        else:
            break
    rest = list(argv[index:])
    if rest and rest[0] in COMMANDS:
        return rest[0], rest[1:] + leading
    if any(token == "--profile" or token.startswith("--profile=") for token in rest):
        return "serve", list(argv)
    if rest and rest[0] in (*HELP, VERSION):
        return rest[0], []
    if not rest:
        raise UsageError("missing command; see turnlog --help")
    near = difflib.get_close_matches(rest[0], COMMANDS, n=1, cutoff=0.6)
    hint = f"did you mean {near[0]!r}? " if near else ""
    raise UsageError(f"unknown command {rest[0]!r}; {hint}see turnlog --help")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``turnlog`` with ``argv`` (default ``sys.argv[1:]``) and return the exit status."""
    try:
        command, rest = split_command(list(sys.argv[1:] if argv is None else argv))
        if command in HELP:
            sys.stdout.write(_TOP_HELP)
            return 0
        if command == VERSION:
            sys.stdout.write(f"turnlog {package_version()}\n")
            return 0
        # Deferred: the packages load only for a command, and the agent runtime only for its own.
        if command in LOG_COMMANDS:
            from ._logcommands import run_log_command

            return run_log_command(command, rest, os.environ)
        if command == MODELS_COMMAND:
            from ._models import run_models

            return run_models(rest, os.environ)
        if command == WEB_COMMAND:
            from ._web import run_web

            return run_web(rest, os.environ)
        from ._commands import run_host_command

        return run_host_command(command, rest, os.environ)
    except UsageError as exc:
        _error(str(exc))
        return 2
    except StartupError as exc:
        _error(str(exc))
        return 1
    except KeyboardInterrupt:
        return EXIT_SIGINT
    except BaseExceptionGroup as group:
        # A Ctrl-C that lands inside a trio nursery (the demo waiting on its host) arrives
        # wrapped in exception groups; it is still just SIGINT, not a crash.
        if group.split(KeyboardInterrupt)[1] is None:
            return EXIT_SIGINT
        raise


def _error(message: str) -> None:
    sys.stderr.write(f"turnlog: {message}\n")
    sys.stderr.flush()
