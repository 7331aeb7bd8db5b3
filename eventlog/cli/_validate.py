"""``validate``: the statuses and the checks of one log (log-format §10.3).

A log is ``ok``, ``repairable`` (a torn tail or an open final turn, which the next open fixes),
``invalid`` (it reads, but breaks a higher rule: the core vocabulary of log-format §9, the
turn/step structure of log-format §9.3, the surface fold of log-format §3.3, a fork seed that
differs from its parent in the same root, or a package's check), ``corrupt``, ``unsupported``
or ``unreadable``.

``validate_log`` reads one log without writing it and returns its ``Verdict``; the rules are
plain functions over the reader's values (``core_messages``, ``seed_messages``,
``rule_messages``).
"""

from __future__ import annotations

import errno
import itertools
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec

from .. import surface, vocab
from ..errors import (
    CorruptLog,
    EventLogError,
    InvalidSessionId,
    SessionNotFound,
    SurfaceError,
    UnsupportedFormat,
)
from ..format import ID_PATTERN, TEMP_SUFFIX, Event, check_session_id
from ..reader import LogIndexer, LogSnapshot, iter_events
from ._render import json_text, plural, repair_summary

Check = Callable[[LogSnapshot], list[str]]
"""A package rule for ``validate``: every message it returns makes the log ``invalid``."""

STATUSES = ("ok", "repairable", "invalid", "corrupt", "unsupported", "unreadable")
FAILING = frozenset({"invalid", "corrupt", "unsupported", "unreadable"})
"""The statuses that make ``validate`` exit 1 (with ``--strict``, ``repairable`` too)."""

_TEMP_RE = re.compile(ID_PATTERN + r"\.jsonl" + TEMP_SUFFIX)


class Verdict(msgspec.Struct, frozen=True):
    """One ``validate`` result (log-format §10.3)."""

    id: str | None
    path: str
    status: str
    events: int | None
    messages: tuple[str, ...]
    label: str  # what the human line names: the id, or the path given

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` object: ``{"id","path","status","events","messages"}``."""
        return {
            "id": self.id,
            "path": json_text(self.path),
            "status": self.status,
            "events": self.events,
            "messages": [json_text(message) for message in self.messages],
        }

    def lines(self) -> list[str]:
        """``<status>  <id or path>  <events or first message>``, further messages indented."""
        if self.messages:
            first, rest = self.messages[0], self.messages[1:]
        else:
            first, rest = plural(self.events or 0, "event"), ()
        return [f"{self.status}  {self.label}  {first}"] + [f"    {m}" for m in rest]


class _ParentUnreadable(Exception):
    """The fork parent could not be read while comparing the seed; the cause is chained."""


def _parent_events(parent_path: Path) -> Iterator[Event]:
    # The parent's events, with its read errors told apart from the child's (whose events are
    # read from the file too, and whose errors are the child's own verdict).
    try:
        yield from iter_events(parent_path)
    except (EventLogError, OSError) as exc:
        raise _ParentUnreadable() from exc


def seed_messages(child: LogSnapshot, parent_path: Path) -> list[str]:
    """Compare a fork child's seed with its parent's first ``seedLength`` events, as canonical
    records (log-format §10.3). Empty when they agree. (Reading the child already refused one
    whose ``seedLength`` exceeds its own events.)

    Both logs are streamed in step, one event of each at a time. A parent that cannot be read
    raises ``_ParentUnreadable`` chained to its error; errors reading the child propagate."""
    parent_id = child.header.parent_session
    seed_length = child.header.seed_length or 0
    seen = 0
    # The parent first: one parent event past the seed is read (or the parent's end reached,
    # with its end-of-file checks) before the comparison stops.
    for parent_event, child_event in zip(
        _parent_events(parent_path), itertools.islice(child.events, seed_length), strict=False
    ):
        if parent_event.to_json() != child_event.to_json():
            return [f'fork seed differs from parent "{parent_id}" at seq {seen} (seedLength {seed_length})']
        seen += 1
    if seen < seed_length:
        return [
            f'parent "{parent_id}" has {plural(seen, "committed event")}, fewer than seedLength {seed_length}'
        ]
    return []


def core_messages(events: Iterable[Event], closers: Iterable[Event]) -> list[str]:
    """eventlog's own rules over one pass of ``events``: the core vocabulary (log-format §9),
    then the turn/step structure (log-format §9.3) of the events followed by ``closers``, then the surface
    fold (log-format §3.3). ``closers`` is iterated only after ``events`` is exhausted."""
    vocabulary: list[str] = []
    history = surface.History()
    folded: list[str] = []

    def checked() -> Iterator[Event]:
        decode = vocab.decode
        for event in events:
            try:
                decode(event)
            except EventLogError as exc:
                vocabulary.append(str(exc))
            if not folded:  # the fold stops at its first error
                try:
                    history.add(event)
                except SurfaceError as exc:
                    folded.append(str(exc))
            yield event

    structure = vocab.check_structure(itertools.chain(checked(), closers))
    return [*vocabulary, *structure, *folded]


def _concerns(exc: BaseException, snapshot: LogSnapshot) -> bool:
    """True for an error reading the snapshot's own file (it changed or vanished under a
    file-backed snapshot): the log's verdict, not a failure of the check that met it."""
    if isinstance(exc, CorruptLog):
        return exc.path == snapshot.path
    if isinstance(exc, OSError) and exc.filename is not None:
        return Path(exc.filename) == snapshot.path
    return False


def _closers(snapshot: LogSnapshot) -> tuple[Event, ...]:
    # The structure is judged on the log as the next open will leave it: repair's closers end
    # an interrupted turn, which alone is "repairable", not "invalid".
    return snapshot.repair.closers if snapshot.repair is not None else ()


def rule_messages(snapshot: LogSnapshot, checks: Sequence[Check], *, core: list[str] | None = None) -> list[str]:
    """Every higher-rule violation of a readable log: core vocabulary (log-format §9), turn/step
    structure (log-format §9.3), the surface fold (log-format §3.3), the fork seed, then the
    packages' checks.

    ``core`` is ``core_messages`` of the snapshot when the caller already has it (validate
    runs them on the scan that indexes the log). ``snapshot.events`` is only iterated, never
    copied (it may be file-backed, log-format §11): one pass for eventlog's rules unless given,
    one for the seed, then whatever each check does. Errors reading the snapshot's own file
    (``CorruptLog`` for a log that changed, ``OSError``) propagate."""
    if core is None:
        core = core_messages(snapshot.events, _closers(snapshot))
    messages = list(core)
    parent = snapshot.header.parent_session
    if parent is not None:
        parent_path = _sibling(snapshot.path, parent)
        if parent_path is not None and parent_path.is_file():
            try:
                messages.extend(seed_messages(snapshot, parent_path))
            except _ParentUnreadable as exc:
                messages.append(f'cannot compare the fork seed with parent "{parent}": {exc.__cause__}')
    for check in checks:
        try:
            messages.extend(check(snapshot))
        except Exception as exc:  # a broken check is reported, never fatal to validate
            if _concerns(exc, snapshot):
                raise
            name = getattr(check, "__qualname__", repr(check))
            messages.append(f"check {name} failed: {type(exc).__name__}: {exc}")
    return messages


def _sibling(path: Path, session_id: str) -> Path | None:
    try:
        return path.parent / f"{check_session_id(session_id)}.jsonl"
    except InvalidSessionId:
        return None


def os_message(path: Path | str, exc: OSError) -> str:
    """The one-line message for a log that cannot be read."""
    if exc.errno == errno.ELOOP:  # O_NOFOLLOW refused a symlink
        return f'cannot read "{path}": symbolic link (session files are never followed)'
    return f'cannot read "{path}": {exc.strerror or exc}'


def validate_log(
    path: Path,
    *,
    expected_id: str | None,
    label: str,
    checks: Sequence[Check],
    not_found: Callable[[SessionNotFound], str] = str,
) -> Verdict:
    """Read one log without writing and judge it (log-format §10.3).

    The log is indexed, not loaded (``index_log``): the checks stream it from the file, so
    memory stays bounded by the largest record plus 8 bytes per event (log-format §11).
    eventlog's own rules run on the indexing scan itself, saving a pass. A log that changes
    while it is judged is ``corrupt``; one that becomes unreadable, ``unreadable``; one that is
    missing, ``unreadable`` with the message ``not_found`` makes of the error."""

    def closers() -> Iterator[Event]:
        # Pulled once the scan is over, when the snapshot knows what repair would append.
        yield from _closers(indexer.snapshot())

    try:
        indexer = LogIndexer(path, expected_id=expected_id)
        core = core_messages(indexer, closers())
        snapshot = indexer.snapshot()
        events = len(snapshot.events)
        ident = snapshot.header.id
        messages = rule_messages(snapshot, checks, core=core)
    except UnsupportedFormat as exc:
        return Verdict(expected_id, str(path), "unsupported", None, (str(exc),), label)
    except CorruptLog as exc:
        return Verdict(expected_id, str(path), "corrupt", None, (str(exc),), label)
    except SessionNotFound as exc:
        return Verdict(expected_id, str(path), "unreadable", None, (not_found(exc),), label)
    except OSError as exc:
        return Verdict(expected_id, str(path), "unreadable", None, (os_message(path, exc),), label)
    if messages:
        return Verdict(ident, str(path), "invalid", events, tuple(messages), label)
    if snapshot.repair is not None:
        return Verdict(ident, str(path), "repairable", events, tuple(repair_summary(snapshot.repair)), label)
    return Verdict(ident, str(path), "ok", events, (), label)


def leftover_temp_files(root: Path) -> list[Path]:
    """Temp files of interrupted publishes (``<id>.jsonl.<12 hex>.tmp``) in ``root``."""
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    return [root / name for name in names if _TEMP_RE.fullmatch(name)]
