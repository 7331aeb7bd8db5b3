"""The command line's own failures: one ``turnlog: <what was wrong and what to do>`` line on
stderr, and the exit status that goes with it (host §7)."""

from __future__ import annotations


class UsageError(Exception):
    """A bad command line: exit status 2."""


class StartupError(Exception):
    """The command cannot start (e.g. an unusable session root): exit status 1."""
