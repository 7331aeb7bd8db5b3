"""The host's boundary rules, as pure functions over values (host §4.2, host §4.3, host §5.1).

What every front door checks before anything is appended (session ids, ``clientTimeZone``), where
sessions live (the root), the typed refusal :class:`HostError` and the mapping of store errors to
its codes, and the result shapes of ``session/list`` and ``session/history``. Nothing here does
I/O; the host and the session registry call these around their effects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

import schedule
from eventlog import (
    CorruptLog,
    Event,
    ForkError,
    InvalidSessionId,
    PersistenceError,
    SessionBusy,
    SessionExists,
    SessionHeader,
    SessionInfo,
    SessionNotFound,
    UnsupportedFormat,
)
from eventlog.format import check_session_id as _check_eventlog_id

from ._history import InboxReplayError, MalformedPersisted

SESSION_ID_RULE = "[A-Za-z0-9][A-Za-z0-9._-]{0,127}"  # log-format §4.2, as the refusals quote it
INVALID_TIME_ZONE_MESSAGE = "clientTimeZone must be UTC or a valid IANA Area/Location name"


class HostError(Exception):
    """A refused operation: ``code`` is the stable ``data.code`` of host §4.2 and ``data`` its
    extra members (e.g. ``{"value": …}`` for ``invalid-time-zone``). The message is one line."""

    def __init__(self, code: str, message: str, **data: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def shutting_down() -> HostError:
    """The refusal of every request but ``shutdown`` once shutdown has begun (host §4.2)."""
    return HostError("shutting-down", "SDK server is shutting down")


_STORE_CODES: tuple[tuple[type[Exception], str], ...] = (
    (SessionNotFound, "session-not-found"),
    (SessionBusy, "session-busy"),
    (CorruptLog, "session-corrupt"),
    (InboxReplayError, "session-corrupt"),
    (MalformedPersisted, "session-corrupt"),
    (UnsupportedFormat, "session-unsupported"),
    (SessionExists, "session-exists"),
)


def as_host_error(exc: BaseException, session_id: str, what: str) -> BaseException:
    """The :class:`HostError` a client sees for an eventlog error (or malformed persisted data
    found while resuming), with its message; ``what`` prefixes a ``persistence-failed`` message. Anything else is
    returned unchanged."""
    for kind, code in _STORE_CODES:
        if isinstance(exc, kind):
            return HostError(code, str(exc))
    if isinstance(exc, ForkError):
        return HostError(exc.code.lower().replace("_", "-"), str(exc))
    if isinstance(exc, InvalidSessionId):
        return HostError("invalid-session-id", f"sessionId must match {SESSION_ID_RULE}", value=exc.value)
    if isinstance(exc, PersistenceError):
        return HostError("persistence-failed", f"{what}: {exc}", sessionId=session_id)
    return exc


def check_session_id(session_id: object) -> str:
    """``session_id`` if it matches eventlog's id rule, else :class:`HostError` ``invalid-session-id``."""
    try:
        return _check_eventlog_id(session_id)
    except InvalidSessionId:
        raise HostError(
            "invalid-session-id", f"sessionId must match {SESSION_ID_RULE}", value=session_id
        ) from None


def canonical_client_zone(value: object) -> str:
    """The stored form of a prompt's ``clientTimeZone`` (host §4.3.2 step 3): the canonical
    name, or :class:`HostError` ``invalid-time-zone`` carrying the value as received."""
    try:
        if isinstance(value, str):
            return schedule.canonicalize_time_zone(value)
    except schedule.ScheduleInputError as exc:
        raise HostError("invalid-time-zone", INVALID_TIME_ZONE_MESSAGE, value=value) from exc
    raise HostError("invalid-time-zone", INVALID_TIME_ZONE_MESSAGE, value=value)


def list_result(
    infos: Iterable[SessionInfo], live: Mapping[str, tuple[SessionHeader, str]]
) -> dict[str, Any]:
    """``{"sessions":[…],"skipped":[…]}`` of host §4.3.6 from the store's listing and the live
    sessions (id → header and public status).

    A live session is listed with ``live`` true and its ``status``, also when it has no file yet
    (a session is created in memory and its file appears with its first flush); every other entry
    comes from a file's header. Sessions are sorted by ``createdAt``, then ``sessionId``; a file
    whose header cannot be read is skipped."""
    sessions: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    listed: set[str] = set()
    for info in infos:
        listed.add(info.id)
        header = info.header
        if info.problem is not None or header is None:
            skipped.append({"file": info.path.name, "error": info.problem or "unreadable header"})
            continue
        sessions.append(_list_entry(info.id, header, live.get(info.id)))
    for session_id, (header, status) in live.items():
        if session_id not in listed:
            sessions.append(_list_entry(session_id, header, (header, status)))
    sessions.sort(key=lambda entry: (entry["createdAt"], entry["sessionId"]))
    return {"sessions": sessions, "skipped": skipped}


def _list_entry(
    session_id: str, header: SessionHeader, live: tuple[SessionHeader, str] | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {"sessionId": session_id, "createdAt": header.created_at}
    if header.cwd is not None:
        entry["cwd"] = header.cwd
    if header.parent_session is not None:
        entry["parentSessionId"] = header.parent_session
    if header.seed_length is not None:
        entry["seedLength"] = header.seed_length
    entry["live"] = live is not None
    if live is not None:
        entry["status"] = live[1]
    return entry


@dataclass(frozen=True, slots=True)
class HistoryPage:
    """One page of ``session/history`` (host §4.3.7): the session's header and the envelopes of
    the page as the log holds them, with ``next_seq`` and ``done``. :meth:`result` is the result
    object as plain values; a transport may instead write the envelopes' stored bytes."""

    session_id: str
    header: SessionHeader
    events: Sequence[Event]
    next_seq: int
    done: bool

    def result(self) -> dict[str, Any]:
        """``{"sessionId","header","events","nextSeq","done"}`` with every record decoded."""
        return {
            "sessionId": self.session_id,
            "header": _decoded(self.header),
            "events": [_decoded(event) for event in self.events],
            "nextSeq": self.next_seq,
            "done": self.done,
        }


def history_page(
    session_id: str,
    header: SessionHeader,
    events: Sequence[Event],
    *,
    limit: int,
    from_seq: int = 0,
    before_seq: int | None = None,
) -> HistoryPage:
    """A page of at most ``limit`` envelopes, ascending (host §4.3.7).

    Forwards from ``from_seq``: ``next_seq`` is ``from_seq`` when none is returned. Backwards with
    ``before_seq`` (``from_seq`` is then ignored): the events from
    ``max(0, min(before_seq, count) - limit)`` to ``min(before_seq, count) - 1``, and ``next_seq``
    is ``min(before_seq, count)`` when none is returned. ``done`` is true when no event follows
    the page."""
    count = len(events)
    if before_seq is not None:
        end = min(before_seq, count)
        start = max(0, end - limit)
    else:
        start = from_seq
        end = min(count, from_seq + limit)
    page = events[start:end] if start < end else []
    next_seq = end if start < end or before_seq is not None else from_seq
    return HistoryPage(session_id, header, page, next_seq, next_seq >= count)


def _decoded(record: Event | SessionHeader) -> Any:
    return msgspec.json.decode(record.to_json())
