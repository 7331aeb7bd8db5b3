"""host — the assistant runtime of turnlog (spec host.md).

The agent loop (:mod:`host.agent`), the live sessions and the operations every front door uses
(:mod:`host.app`) with their pure boundary rules (:mod:`host.boundary`), the model adapters
(:mod:`host.model`, :mod:`host.scripted`, :mod:`host.openai`, :mod:`host.providers`), the tool
registry (:mod:`host.tools`) and the restart-testing harness (:mod:`host.testing`). It is the only package that wires ``eventlog``,
``schedule`` and ``timecontext`` together.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Public names and the module that defines each. They load on first use (PEP 562), so the
# `turnlog` command line can answer --help and --version, or run a log command, without
# importing trio, httpx and every package of the host.
_EXPORTS = {
    "DEFAULT_SYSTEM_PROMPT": "host.agent",
    "Agent": "host.agent",
    "AgentClosed": "host.agent",
    "Route": "host.agent",
    "SchedulePort": "host.agent",
    "Adapters": "host.app",
    "ChildCreated": "host.app",
    "Delta": "host.app",
    "EventAppended": "host.app",
    "Host": "host.app",
    "HostConfig": "host.app",
    "LiveSession": "host.app",
    "Notification": "host.app",
    "ShutdownReport": "host.app",
    "StatusChanged": "host.app",
    "open_host": "host.app",
    "HostError": "host.boundary",
    "canonical_client_zone": "host.boundary",
    "check_session_id": "host.boundary",
    "resolve_root": "host.boundary",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'host' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
