"""Sessions as people look for them (host §7.4 ``ls``, host §7.2 ``--continue`` and the banner):
a one-line title, the last activity, the turns, the active reminders and the next one due, and
whether another process has the session open.

:func:`summarize` is a pure fold over a log's header and events. :func:`read_summary` streams one
file (memory bounded by a record), :func:`writer_lock_held` probes the writer lock with one
non-blocking try that is released at once, and :func:`latest` picks the most recently active
session of a listing by file modification time, without reading the files.
"""

from __future__ import annotations

import difflib
import fcntl
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import schedule
from eventlog import Event, SessionHeader, SessionInfo, iter_events, read_header

TITLE_CHARS = 60

ActiveRecord = schedule.AfterRecord | schedule.AtRecord | schedule.EveryRecord


@dataclass(frozen=True, slots=True)
class Summary:
    """What ``ls`` and chat's banner say about one session."""

    id: str
    title: str | None
    created_ms: int
    last_ms: int  # the last event's time (the header's createdAt for an empty log)
    turns: int
    active: tuple[ActiveRecord, ...]
    parent: str | None
    seed_length: int | None

    @property
    def next_due(self) -> ActiveRecord | None:
        """The active reminder due first."""
        return min(self.active, key=lambda record: record.scheduled_at, default=None)


def one_line(text: str, width: int = TITLE_CHARS) -> str:
    """``text`` on one line (whitespace runs become one space), cut to ``width`` with ``…``."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1].rstrip() + "…"


def _prompt_text(data: object) -> str | None:
    """The text of a user's own prompt (source kind ``user``), else ``None``."""
    if not isinstance(data, dict):
        return None
    source = data.get("source")
    if not isinstance(source, dict) or source.get("kind") != "user":
        return None
    content = data.get("content")
    if not isinstance(content, list):
        return None
    text = "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return text if isinstance(text, str) and text.strip() else None


def summarize(header: SessionHeader, events: Iterable[Event]) -> Summary:
    """The summary of a log: the title is the last ``session/title`` (deepseek-harness writes
    them), else the first prompt, on one line; reminders come from schedule's fold of the
    session's own events (from ``seedLength``). A schedule log schedule refuses shows none."""
    title: str | None = None
    first_prompt: str | None = None
    turns = 0
    last_ms = header.created_at
    changes: list[Event] = []
    seed = header.seed_length or 0
    for event in events:
        last_ms = event.time
        if event.type == "turn/start":
            turns += 1
        elif event.type == "schedule/change":
            changes.append(event)
        elif event.type == "session/title":
            value = event.value()
            if isinstance(value, dict) and isinstance(value.get("title"), str) and value["title"].strip():
                title = value["title"]
        elif first_prompt is None and event.type == "user/message":
            first_prompt = _prompt_text(event.value())
    try:
        active = tuple(schedule.fold([e for e in changes if e.seq >= seed], 0).active)
    except schedule.ScheduleLogError:
        active = ()
    chosen = title or first_prompt
    return Summary(
        id=header.id,
        title=None if chosen is None else one_line(chosen),
        created_ms=header.created_at,
        last_ms=last_ms,
        turns=turns,
        active=active,
        parent=header.parent_session,
        seed_length=header.seed_length,
    )


def read_summary(info: SessionInfo) -> Summary:
    """The summary of a listed store file, streaming its committed events. Blocking; raises
    eventlog's errors for a file that cannot be read."""
    header = info.header if info.header is not None else read_header(info.path, expected_id=info.id)
    return summarize(header, iter_events(info.path))


def writer_lock_held(path: Path) -> bool:
    """Whether another process holds ``path``'s writer lock (log-format §4.4): one non-blocking
    shared ``flock`` try, released at once, so a writer is never kept waiting longer than that
    try. Blocking (it opens the file); ``False`` for a file that cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def latest(infos: Sequence[SessionInfo]) -> SessionInfo | None:
    """The readable session whose file changed last (its last append), ties by id."""

    def changed(info: SessionInfo) -> tuple[float, str]:
        try:
            return info.path.stat().st_mtime, info.id
        except OSError:
            return 0.0, info.id

    readable = [info for info in infos if info.header is not None and info.problem is None]
    return max(readable, key=changed, default=None)


def suggestions(session_id: str, known: Sequence[str]) -> list[str]:
    """Existing ids close to a mistyped one, closest first."""
    return difflib.get_close_matches(session_id, known, n=3, cutoff=0.6)
