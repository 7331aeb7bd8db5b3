"""Diagnostics shared by the tools and the runtime (schedule §10.4, schedule §11.8).

Log lines go to ``logging.getLogger("schedule")`` at WARNING; their wording is diagnostic,
not protocol. Host code (the session, the agent, the clock, the observer) may raise anything, and
so may a fold of a log that host code hands over. Where schedule's rules say to survive that,
the step runs inside ``failing_as``, which turns any ``Exception`` into one ``Failure`` naming
the rule that applies; one handler then logs it (and perhaps faults).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


def schedule_logger(logger: logging.Logger | None) -> logging.Logger:
    """``logger``, or the package logger ``schedule`` when none is injected."""
    return logger if logger is not None else logging.getLogger("schedule")


def describe(exc: BaseException) -> str:
    """An exception's message, or its class name when the message is empty."""
    return str(exc) or type(exc).__name__


class Failure(Exception):
    """``cause`` was raised during the step the diagnostic ``what`` names.

    ``faults``: the failure stops the runtime for good (schedule §11.8); ``if_live``: it is
    logged only while the runtime is still runnable.
    """

    def __init__(self, what: str, cause: Exception, *, faults: bool, if_live: bool) -> None:
        super().__init__(f"{what}: {describe(cause)}")
        self.what = what
        self.cause = cause
        self.faults = faults
        self.if_live = if_live


@contextmanager
def failing_as(what: str, *, faults: bool = False, if_live: bool = False) -> Iterator[None]:
    """Raise any ``Exception`` of the body as a ``Failure(what, …)`` chained to it.

    A ``Failure`` raised inside passes through unchanged, so the innermost rule wins;
    ``BaseException``s such as ``trio.Cancelled`` and ``KeyboardInterrupt`` are never caught.
    """
    try:
        yield
    except Failure:
        raise
    except Exception as exc:
        raise Failure(what, exc, faults=faults, if_live=if_live) from exc
