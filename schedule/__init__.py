"""schedule — durable session-local reminders (docs/schedule.md).

The public names of schedule §9; every module is private.
"""

from __future__ import annotations

from eventlog.values import Clock as Clock
from eventlog.values import compact_json as compact_json

from ._create import allocate_id as allocate_id
from ._create import create_after as create_after
from ._create import create_at as create_at
from ._create import create_every as create_every
from ._decide import EveryBatch as EveryBatch
from ._decide import OneShot as OneShot
from ._decide import Wait as Wait
from ._decide import decide as decide
from ._decide import resolve_every as resolve_every
from ._errors import AgentBusy as AgentBusy
from ._errors import InvalidToolArguments as InvalidToolArguments
from ._errors import ScheduleInputError as ScheduleInputError
from ._errors import ScheduleLogError as ScheduleLogError
from ._fold import Fold as Fold
from ._fold import ScheduleGuard as ScheduleGuard
from ._fold import check_append as check_append
from ._fold import fold as fold
from ._protocols import AgentPort as AgentPort
from ._protocols import LoggedEvent as LoggedEvent
from ._protocols import SessionHandle as SessionHandle
from ._queue import ScheduleQueue as ScheduleQueue
from ._records import AfterRecord as AfterRecord
from ._records import AtRecord as AtRecord
from ._records import Create as Create
from ._records import Delete as Delete
from ._records import Dispatch as Dispatch
from ._records import EveryRecord as EveryRecord
from ._records import ScheduleChange as ScheduleChange
from ._records import decode_change as decode_change
from ._records import view as view
from ._runtime import ScheduleRuntime as ScheduleRuntime
from ._timeparse import format_instant as format_instant
from ._timeparse import parse_instant as parse_instant
from ._timezones import canonicalize_time_zone as canonicalize_time_zone
from ._tools import ScheduleTools as ScheduleTools
from ._tools import ToolSpec as ToolSpec
from ._trim import js_trim as js_trim

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
    "ScheduleGuard",
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
    "view",
]
