"""What a host tells its observers (host §4.4): the values ``Host.subscribe`` delivers,
synchronously and in order. The JSON-RPC forwarder, chat and the demo are all observers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from eventlog import Event
from host.models import Chunk

from ._storage import Storage

Status = Literal["idle", "running"]


@dataclass(frozen=True, slots=True)
class EventAppended:
    """An event appended to a live session (not the events eventlog writes while opening it);
    ``event.to_json()`` is the exact log line."""

    session_id: str
    event: Event


@dataclass(frozen=True, slots=True)
class StatusChanged:
    """A live session's public status flipped."""

    session_id: str
    status: Status


@dataclass(frozen=True, slots=True)
class StorageChanged:
    """A live session's storage state changed (host §3.3): ``failing`` once a flush failed and the
    session started retrying, ``ok`` once a flush succeeded again. ``status`` is the session's
    public status at that moment; this is no status flip (``StatusChanged`` reports those), so
    an ``idle`` here never ends an activity. Front doors show ``failing`` as
    ``storage full: waiting to retry``."""

    session_id: str
    status: Status
    storage: Storage


@dataclass(frozen=True, slots=True)
class Delta:
    """One streamed model chunk (host §6.1); live only, never persisted."""

    session_id: str
    turn: int
    step: int
    chunk: Chunk


@dataclass(frozen=True, slots=True)
class ChildCreated:
    """``fork`` published a child session."""

    parent_session_id: str
    child_session_id: str


Notification = EventAppended | StatusChanged | StorageChanged | Delta | ChildCreated
