"""host — the assistant runtime of turnlog (docs/host.md): the only package that wires
``eventlog``, ``schedule`` and ``timecontext`` together, and the only one with a ``main``.

Its layers import downwards only: ``cli`` and ``web`` (the front doors) → ``rpc`` (the JSON-RPC
protocol) → ``runtime`` (agent loop, sessions, tools) → ``models`` (adapters). ``testing`` is the
public restart harness. This module re-exports what a program embedding a host uses; each name is imported from its
layer on first use, so `turnlog --version` and the log commands load no agent runtime.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eventlog.vocab import ToolSpec as ToolSpec

    from .models import BlockEnd as BlockEnd
    from .models import BlockStart as BlockStart
    from .models import Chunk as Chunk
    from .models import Failure as Failure
    from .models import Finish as Finish
    from .models import FinishError as FinishError
    from .models import FinishMaxTokens as FinishMaxTokens
    from .models import FinishStop as FinishStop
    from .models import FinishToolCalls as FinishToolCalls
    from .models import ModelAdapter as ModelAdapter
    from .models import ModelAdapters as ModelAdapters
    from .models import ModelRequest as ModelRequest
    from .models import OpenAIAdapter as OpenAIAdapter
    from .models import ReasoningDelta as ReasoningDelta
    from .models import ScriptedAdapter as ScriptedAdapter
    from .models import TextDelta as TextDelta
    from .models import ToolCallDelta as ToolCallDelta
    from .models import UsageReport as UsageReport
    from .runtime import DEFAULT_SYSTEM_PROMPT as DEFAULT_SYSTEM_PROMPT
    from .runtime import Adapters as Adapters
    from .runtime import ChildCreated as ChildCreated
    from .runtime import Delta as Delta
    from .runtime import EventAppended as EventAppended
    from .runtime import FunctionTool as FunctionTool
    from .runtime import Host as Host
    from .runtime import HostConfig as HostConfig
    from .runtime import HostError as HostError
    from .runtime import LiveSession as LiveSession
    from .runtime import Notification as Notification
    from .runtime import ShutdownReport as ShutdownReport
    from .runtime import StatusChanged as StatusChanged
    from .runtime import Storage as Storage
    from .runtime import StorageChanged as StorageChanged
    from .runtime import ToolContext as ToolContext
    from .runtime import ToolError as ToolError
    from .runtime import canonical_client_zone as canonical_client_zone
    from .runtime import check_session_id as check_session_id
    from .runtime import open_host as open_host
    from .runtime import resolve_root as resolve_root

# Where each public name lives (imported on first use, see above).
_HOMES = {
    "ToolSpec": "eventlog.vocab",
    "BlockEnd": "host.models",
    "BlockStart": "host.models",
    "Chunk": "host.models",
    "Failure": "host.models",
    "Finish": "host.models",
    "FinishError": "host.models",
    "FinishMaxTokens": "host.models",
    "FinishStop": "host.models",
    "FinishToolCalls": "host.models",
    "ModelAdapter": "host.models",
    "ModelAdapters": "host.models",
    "ModelRequest": "host.models",
    "OpenAIAdapter": "host.models",
    "ReasoningDelta": "host.models",
    "ScriptedAdapter": "host.models",
    "TextDelta": "host.models",
    "ToolCallDelta": "host.models",
    "UsageReport": "host.models",
    "DEFAULT_SYSTEM_PROMPT": "host.runtime",
    "Adapters": "host.runtime",
    "ChildCreated": "host.runtime",
    "Delta": "host.runtime",
    "EventAppended": "host.runtime",
    "FunctionTool": "host.runtime",
    "Host": "host.runtime",
    "HostConfig": "host.runtime",
    "HostError": "host.runtime",
    "LiveSession": "host.runtime",
    "Notification": "host.runtime",
    "ShutdownReport": "host.runtime",
    "StatusChanged": "host.runtime",
    "Storage": "host.runtime",
    "StorageChanged": "host.runtime",
    "ToolContext": "host.runtime",
    "ToolError": "host.runtime",
    "canonical_client_zone": "host.runtime",
    "check_session_id": "host.runtime",
    "open_host": "host.runtime",
    "resolve_root": "host.runtime",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value
