"""timecontext: a durable time reading before every model step (docs/time-context.md).

Just before the host enters a model step, ``TimeContext.pre_step`` may append one user-role
message, the *reading*: the wall-clock time in a named zone, the open turn's client time
zone(s) with an instruction for the model, and the time elapsed since a baseline event. The
reading is an ordinary durable ``user/message``; timecontext owns no other state. The host
supplies the clock and the shared zone canonicaliser; timecontext never imports ``host`` or
``schedule``.

The public names are those of time-context §8.4 and the types and Protocols of time-context
time-context §3.1; every module is private.
"""

from __future__ import annotations

from eventlog.values import Clock as Clock

from ._context import TimeContext as TimeContext
from ._errors import ClientZoneError as ClientZoneError
from ._errors import ReadingInvariantError as ReadingInvariantError
from ._errors import TimeContextConfigError as TimeContextConfigError
from ._hook import Decision as Decision
from ._hook import Enter as Enter
from ._hook import EventLike as EventLike
from ._hook import Message as Message
from ._hook import PreStep as PreStep
from ._hook import PreStepHook as PreStepHook
from ._hook import Reject as Reject
from ._hook import ZoneCanonicalizer as ZoneCanonicalizer
from ._render import format_duration as format_duration
from ._render import format_timestamp as format_timestamp
from ._render import policy_line as policy_line
from ._render import reading_message as reading_message
from ._render import render_reading as render_reading
from ._validate import ReadingReport as ReadingReport
from ._validate import ReadingViolation as ReadingViolation
from ._validate import check_reading as check_reading
from ._validate import validate_readings as validate_readings
from ._zones import ZONE_SHAPE as ZONE_SHAPE
from ._zones import client_zones as client_zones
from ._zones import process_zone as process_zone
from ._zones import sampled_zone as sampled_zone

__all__ = [
    "ZONE_SHAPE",
    "ClientZoneError",
    "Clock",
    "Decision",
    "Enter",
    "EventLike",
    "Message",
    "PreStep",
    "PreStepHook",
    "ReadingInvariantError",
    "ReadingReport",
    "ReadingViolation",
    "Reject",
    "TimeContext",
    "TimeContextConfigError",
    "ZoneCanonicalizer",
    "check_reading",
    "client_zones",
    "format_duration",
    "format_timestamp",
    "policy_line",
    "process_zone",
    "reading_message",
    "render_reading",
    "sampled_zone",
    "validate_readings",
]
