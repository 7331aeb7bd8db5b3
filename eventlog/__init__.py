"""eventlog: the durable JSONL session log of turnlog (spec eventlog.md).

One append-only file per session is the only authority for that session. This package owns
its format, the store (create, open, fork, list, inspect, delete), the live ``Session`` handle
with group-committed durability, crash repair and the read-only readers. The history fold is
``eventlog.surface.fold``; the core vocabulary is ``eventlog.vocab``.
"""

from __future__ import annotations

from .errors import (
    CorruptLog,
    EventLogError,
    ForkError,
    InvalidEvent,
    InvalidSessionId,
    PersistenceError,
    SessionBusy,
    SessionClosed,
    SessionExists,
    SessionNotFound,
    SurfaceError,
    UnsupportedFormat,
)
from .format import Clock, Event, ReplaceOp, SessionHeader, SurfaceOp, SystemClock
from .reader import (
    Defect,
    LogSnapshot,
    Repair,
    index_log,
    iter_events,
    read_header,
    read_log,
    tail,
)
from .session import Session
from .store import SessionInfo, SessionRootError, SessionStore, default_root
from . import surface, vocab  # so `import eventlog` gives eventlog.surface.fold and eventlog.vocab


def __getattr__(name: str) -> object:
    # `import eventlog` also gives eventlog.cli.main (§10), imported on first use: the log
    # commands' argument parsing and rendering are not needed by a host that only writes logs.
    if name == "cli":
        import importlib

        return importlib.import_module(".cli", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Clock",
    "CorruptLog",
    "Defect",
    "Event",
    "EventLogError",
    "ForkError",
    "InvalidEvent",
    "InvalidSessionId",
    "LogSnapshot",
    "PersistenceError",
    "ReplaceOp",
    "Repair",
    "Session",
    "SessionBusy",
    "SessionClosed",
    "SessionExists",
    "SessionHeader",
    "SessionInfo",
    "SessionNotFound",
    "SessionRootError",
    "SessionStore",
    "SurfaceError",
    "SurfaceOp",
    "SystemClock",
    "UnsupportedFormat",
    "default_root",
    "index_log",
    "iter_events",
    "read_header",
    "read_log",
    "tail",
]
