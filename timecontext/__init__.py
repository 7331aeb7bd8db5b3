"""timecontext: a durable time reading before every model step (spec timecontext.md).

Just before the host enters a model step, ``TimeContext.pre_step`` may append one user-role
message, the *reading*: the wall-clock time in a named zone, the open turn's client time
zone(s) with an instruction for the model, and the time elapsed since a baseline event. The
reading is an ordinary durable ``user/message``; timecontext owns no other state. The host
supplies the clock and the shared zone canonicaliser; timecontext never imports ``host`` or
``schedule``.
"""

from __future__ import annotations

from .context import TimeContext
from .errors import ClientZoneError, ReadingInvariantError, TimeContextConfigError
from .hook import (
    Clock,
    Decision,
    Enter,
    EventLike,
    Message,
    PreStep,
    PreStepHook,
    Reject,
    ZoneCanonicalizer,
)
from .render import (
    format_duration,
    format_timestamp,
    policy_line,
    reading_message,
    render_reading,
)
from .validate import ReadingReport, ReadingViolation, check_reading, validate_readings
from .zones import ZONE_SHAPE, client_zones, process_zone, sampled_zone

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
