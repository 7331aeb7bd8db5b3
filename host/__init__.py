"""host — the assistant runtime of turnlog (spec host.md).

The agent loop (:mod:`host.agent`), the live sessions and the operations every front door uses
(:mod:`host.app`) with their pure boundary rules (:mod:`host.boundary`), the model adapters
(:mod:`host.model`, :mod:`host.scripted`, :mod:`host.openai`, :mod:`host.providers`), the tool
registry (:mod:`host.tools`) and the restart-testing harness (:mod:`host.testing`). It is the only package that wires ``eventlog``,
``schedule`` and ``timecontext`` together.
"""

from __future__ import annotations

from host.agent import DEFAULT_SYSTEM_PROMPT, Agent, AgentClosed, Route, SchedulePort
from host.app import (
    Adapters,
    ChildCreated,
    Delta,
    EventAppended,
    Host,
    HostConfig,
    LiveSession,
    Notification,
    ShutdownReport,
    StatusChanged,
    open_host,
)
from host.boundary import HostError, canonical_client_zone, check_session_id, resolve_root

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "Adapters",
    "Agent",
    "AgentClosed",
    "ChildCreated",
    "Delta",
    "EventAppended",
    "Host",
    "HostConfig",
    "HostError",
    "LiveSession",
    "Notification",
    "Route",
    "SchedulePort",
    "ShutdownReport",
    "StatusChanged",
    "canonical_client_zone",
    "check_session_id",
    "open_host",
    "resolve_root",
]
