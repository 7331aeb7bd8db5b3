"""eventlog: the durable JSONL session log of turnlog (section numbers refer to docs/log-format.md).

One append-only file per session is the only authority for that session. This package owns
its format, the store (create, open, fork, list, inspect, delete), the live ``Session`` handle
with group-committed durability, crash repair and the read-only readers. The history fold is
``eventlog.surface.fold``; the core vocabulary is ``eventlog.vocab``; the basics every turnlog
package shares (safe integers, compact JSON, UTC instants, the clock) are ``eventlog.values``;
the log commands are ``eventlog.cli`` (log-format §10).
"""

from __future__ import annotations

from types import ModuleType

from . import fileio as fileio
from . import surface as surface
from . import values as values
from . import vocab as vocab
from ._dsh import decode_segment as decode_segment
from ._dsh import dsh_log_path as dsh_log_path
from ._dsh import encode_segment as encode_segment
from ._dsh import project_key as project_key
from .errors import CorruptLog as CorruptLog
from .errors import EventLogError as EventLogError
from .errors import ForkError as ForkError
from .errors import InvalidEvent as InvalidEvent
from .errors import InvalidSessionId as InvalidSessionId
from .errors import PersistenceError as PersistenceError
from .errors import SessionBusy as SessionBusy
from .errors import SessionClosed as SessionClosed
from .errors import SessionExists as SessionExists
from .errors import SessionNotFound as SessionNotFound
from .errors import SurfaceError as SurfaceError
from .errors import UnsupportedFormat as UnsupportedFormat
from .format import Event as Event
from .format import ReplaceOp as ReplaceOp
from .format import SessionHeader as SessionHeader
from .format import SurfaceOp as SurfaceOp
from .reader import Defect as Defect
from .reader import LogSnapshot as LogSnapshot
from .reader import Repair as Repair
from .reader import index_log as index_log
from .reader import iter_events as iter_events
from .reader import log_text as log_text
from .reader import read_header as read_header
from .reader import read_log as read_log
from .reader import tail as tail
from .session import Session as Session
from .store import SessionInfo as SessionInfo
from .store import SessionRootError as SessionRootError
from .store import SessionStore as SessionStore
from .store import default_root as default_root
from .values import Clock as Clock
from .values import SystemClock as SystemClock

# The public names (`from eventlog import *`); the modules above are attributes as well.
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
    "Repair",
    "ReplaceOp",
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
    "decode_segment",
    "default_root",
    "dsh_log_path",
    "encode_segment",
    "index_log",
    "iter_events",
    "log_text",
    "project_key",
    "read_header",
    "read_log",
    "tail",
]


def __getattr__(name: str) -> ModuleType:
    # The one lazy attribute: `eventlog.cli` (log-format §10) is imported on first use, so a
    # host that only writes logs does not pay for the commands' argument parser and rendering.
    if name == "cli":
        import importlib

        return importlib.import_module(".cli", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
