"""schedule — durable session-local reminders (spec schedule.md).

The public names of §9; everything else is private.
"""

from __future__ import annotations

from .create import allocate_id, create_after, create_at, create_every
from .errors import AgentBusy, InvalidToolArguments, ScheduleInputError, ScheduleLogError
from .fold import EveryBatch, Fold, OneShot, Wait, check_append, decide, fold, resolve_every
from .jsontext import compact_json, js_trim
from .protocols import AgentPort, Clock, LoggedEvent, SessionHandle
from .queue import ScheduleQueue
from .records import (
    AfterRecord,
    AtRecord,
    Create,
    Delete,
    Dispatch,
    EveryRecord,
    ScheduleChange,
    decode_change,
)
from .runtime import ScheduleRuntime
from .timeparse import format_instant, parse_instant
from .timezones import canonicalize_time_zone
from .tools import ScheduleTools, ToolSpec

__all__ = [
    "AfterRecord",
    "AgentBusy",
    "AgentPort",
    "AtRecord",
    "Clock",
    "Create",
    "Delete",
    "Dispatch",
    "EveryBatch",
    "EveryRecord",
    "Fold",
    "InvalidToolArguments",
    "LoggedEvent",
    "OneShot",
    "ScheduleChange",
    "ScheduleInputError",
    "ScheduleLogError",
    "ScheduleQueue",
    "ScheduleRuntime",
    "ScheduleTools",
    "SessionHandle",
    "ToolSpec",
    "Wait",
    "allocate_id",
    "canonicalize_time_zone",
    "check_append",
    "compact_json",
    "create_after",
    "create_at",
    "create_every",
    "decide",
    "decode_change",
    "fold",
    "format_instant",
    "js_trim",
    "parse_instant",
    "resolve_every",
]
