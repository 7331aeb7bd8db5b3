"""Diagnostic logging shared by the tools and the runtime (spec schedule.md §10.4, §11).

Log lines go to ``logging.getLogger("schedule")`` at WARNING; their wording is diagnostic,
not protocol.
"""

from __future__ import annotations

import logging


def schedule_logger(logger: logging.Logger | None) -> logging.Logger:
    """``logger``, or the package logger ``schedule`` when none is injected."""
    return logger if logger is not None else logging.getLogger("schedule")


def describe(exc: BaseException) -> str:
    """An exception's message, or its class name when the message is empty."""
    return str(exc) or type(exc).__name__
