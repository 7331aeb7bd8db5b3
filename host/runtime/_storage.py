"""The storage state of one live session and its recovery (host §3.3, host §4.4, host §8).

A write failure (a full disk, an I/O error) does not end a live session: eventlog keeps the
events it could not write pending in memory, in order, and writes them at the next flush.
:class:`StorageMonitor` is the one door every flush of the session goes through — the agent's
checkpoints and idle flush, the tools' barriers, schedule's preflights and barriers (through
:attr:`StorageMonitor.log`) — so it sees each failure. After one it reports ``failing`` and
retries the pending flush by itself with backoff, :data:`FIRST_RETRY_S` doubling up to
:data:`MAX_RETRY_S` between attempts, until a flush succeeds, whoever makes it; it then reports
``ok`` and calls ``on_recovered``. A permanent failure (the file was removed or replaced, or
another process published the session first) is reported once and never retried.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import trio

from eventlog import Event, PersistenceError, Session

Storage = Literal["ok", "failing"]
"""A live session's storage state: ``failing`` from a failed flush until a flush succeeds."""

FIRST_RETRY_S = 1.0
MAX_RETRY_S = 30.0

_logger = logging.getLogger("host")


class StorageMonitor:
    """The storage state of the live session ``session`` (initially ``ok``).

    ``on_change(storage)`` is called synchronously on each change of :attr:`state`;
    ``on_recovered()`` right after a change to ``ok``. Run :meth:`run` in the session's nursery:
    it is the task that retries while the state is ``failing``. Retry delays run on trio's clock.
    """

    def __init__(
        self,
        session: Session,
        *,
        on_change: Callable[[Storage], None],
        on_recovered: Callable[[], None],
        first_retry_s: float = FIRST_RETRY_S,
        max_retry_s: float = MAX_RETRY_S,
    ) -> None:
        self._session = session
        self._on_change = on_change
        self._on_recovered = on_recovered
        self._first_retry_s = first_retry_s
        self._max_retry_s = max_retry_s
        self._state: Storage = "ok"
        self._permanent = False
        self._changed = trio.Event()  # replaced after each change of the state
        self._kicked = trio.Event()
        self.log = MonitoredLog(session, self)

    @property
    def state(self) -> Storage:
        return self._state

    def retrying(self) -> bool:
        """Whether the state is ``failing`` and the failure not permanent: a retry will come."""
        return self._state == "failing" and not self._permanent

    async def flush(self) -> int:
        """The session's barrier (``Session.flush``), its outcome recorded: a failure makes the
        state ``failing`` (and is raised unchanged); a success while failing makes it ``ok``."""
        try:
            through = await self._session.flush()
        except PersistenceError as exc:
            self._failed(exc)
            raise
        if self._state == "failing":
            self._set("ok")
            _logger.warning(
                'session "%s": storage works again; the pending events are durable', self._session.id
            )
            self._on_recovered()
        return through

    def kick(self) -> None:
        """Retry now instead of at the end of the current delay (new input arrived); the delays
        that follow keep growing. Nothing unless :meth:`retrying`."""
        if self.retrying():
            self._kicked.set()

    async def wait_changed(self) -> None:
        """Return at the next change of :attr:`state` or of :meth:`retrying`."""
        await self._changed.wait()

    def _failed(self, exc: PersistenceError) -> None:
        if exc.permanent and not self._permanent:
            self._permanent = True
            _logger.warning('session "%s": storage failed for good, no retry: %s', self._session.id, exc)
            if self._state == "failing":
                self._signal()
        if self._state == "ok":
            if not self._permanent:
                _logger.warning(
                    'session "%s": storage failing, events stay pending; retrying in %g s, backing off to %g s: %s',
                    self._session.id,
                    self._first_retry_s,
                    self._max_retry_s,
                    exc,
                )
            self._set("failing")

    def _set(self, state: Storage) -> None:
        self._state = state
        self._signal()
        self._on_change(state)

    def _signal(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The retry task: while :meth:`retrying`, wait the delay (or a :meth:`kick`), then flush;
        the delay starts at ``first_retry_s`` after each failure and doubles up to
        ``max_retry_s``. Runs until cancelled."""
        task_status.started()
        while True:
            while not self.retrying():
                await self.wait_changed()
            delay = self._first_retry_s
            while self.retrying():
                with trio.move_on_after(delay):
                    await self._kicked.wait()
                self._kicked = trio.Event()
                if not self.retrying():  # another flush succeeded meanwhile
                    break
                try:
                    await self.flush()
                except PersistenceError:
                    delay = min(delay * 2, self._max_retry_s)


class MonitoredLog:
    """The live session as schedule's ``SessionHandle`` (schedule §8), its flushes going through
    the monitor."""

    __slots__ = ("_monitor", "_session")

    def __init__(self, session: Session, monitor: StorageMonitor) -> None:
        self._session = session
        self._monitor = monitor

    @property
    def events(self) -> Sequence[Event]:
        return self._session.events

    @property
    def seed_length(self) -> int:
        return self._session.seed_length

    def append(self, type: str, data: Mapping[str, Any]) -> Event:
        return self._session.append(type, data)

    async def flush(self) -> int:
        return await self._monitor.flush()
