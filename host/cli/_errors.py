"""The command line's own failures: one ``turnlog: <what was wrong and what to do>`` line on
stderr, and the exit status that goes with it (host §7)."""

from __future__ import annotations

import argparse
import difflib
from typing import NoReturn


class UsageError(Exception):
    """A bad command line: exit status 2."""


class StartupError(Exception):
    """The command cannot start (e.g. an unusable session root): exit status 1."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors become :class:`UsageError` (one ``turnlog:`` line that
    names the nearest flag of a mistyped one and points at the command's ``--help``)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message}{self._near_flags(message)}; see {self.prog} --help")

    def _near_flags(self, message: str) -> str:
        prefix = "unrecognized arguments: "
        if not message.startswith(prefix):
            return ""
        flags = list(self._option_string_actions)
        near = [
            match
            for token in message[len(prefix) :].split()
            if token.startswith("-")
            for match in difflib.get_close_matches(token.split("=", 1)[0], flags, n=1, cutoff=0.6)
        ]
        return f" (did you mean {' or '.join(dict.fromkeys(near))}?)" if near else ""
