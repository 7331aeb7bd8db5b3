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
    "DEFAULT_SYSTEM_PROMPT": "host.runtime",
    "Agent": "host.runtime",
    "AgentClosed": "host.runtime",
    "Route": "host.runtime",
    "SchedulePort": "host.runtime",
    "Adapters": "host.runtime",
    "ChildCreated": "host.runtime",
    "Delta": "host.runtime",
    "EventAppended": "host.runtime",
    "Host": "host.runtime",
    "HostConfig": "host.runtime",
    "LiveSession": "host.runtime",
    "Notification": "host.runtime",
    "ShutdownReport": "host.runtime",
    "StatusChanged": "host.runtime",
    "open_host": "host.runtime",
    "HostError": "host.runtime",
    "canonical_client_zone": "host.runtime",
    "check_session_id": "host.runtime",
    "resolve_root": "host.runtime",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from host.runtime import (
        DEFAULT_SYSTEM_PROMPT,
        Adapters,
        Agent,
        AgentClosed,
        ChildCreated,
        Delta,
        EventAppended,
        Host,
        HostConfig,
        HostError,
        LiveSession,
        Notification,
        Route,
        SchedulePort,
        ShutdownReport,
        StatusChanged,
        canonical_client_zone,
        check_session_id,
        open_host,
        resolve_root,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'host' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
