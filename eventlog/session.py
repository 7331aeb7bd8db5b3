"""The live session handle and its writer task (log-format §5.4, log-format §6).

``Session.append`` commits an event to memory at once (no I/O, no await). A per-session writer
task turns pending events into write batches — one ``pwrite`` then one sync — with a fixed
batching window, group commit and an atomic first publish. ``flush()`` is the durability
barrier. Sessions are made by ``SessionStore.create`` / ``open``, never directly.

Guarantees (see also the package README):

- ``durable_through`` only grows; every event with ``seq <= durable_through`` has been written
  and synced (and, for a new file, its directory entry synced).
- A batch is written at ``good_size``, the size of the durable prefix; after a failed write,
  sync or truncate the file is cut back to ``good_size`` and the whole batch stays pending, in
  order, so a retry writes the same bytes and never duplicates or reorders events.
- ``on_flushed`` is called once per durable batch with a strictly increasing ``through_seq``.

All blocking file work of a live session (``_logfile.LogFile``: the write, sync and rollback
of a batch, the first publish) runs on the session's own writer thread (``_WriterThread``),
started at its first batch and ended by ``aclose()``: the trio side hands it one batch at a time
and the thread hands the outcome back through the run's ``TrioToken``, so a flush costs one
wake-up each way and no worker-pool hop. The write cannot be cancelled: a cancelled waiter
never interrupts a write, and a cancelled host still persists what it appended (``aclose``
flushes shielded). Open's repair runs before the thread exists, in ``trio.to_thread``.
"""

from __future__ import annotations

import functools
import logging
import math
import queue
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from ._logfile import FileFailure, LogFile
from .errors import EventLogError, InvalidEvent, PersistenceError, SessionClosed
from .format import Event, SessionHeader, SurfaceOp, build_event
from .reader import Repair
from .values import Clock

# trio is imported inside the functions that use it, not with the module: reading logs (the read-
# only log commands, which import eventlog) never loads it.
if TYPE_CHECKING:
    import trio

__all__ = ["Session", "writes_in_flight"]

logger = logging.getLogger("eventlog")

_REENTRANT_APPEND = "session append cannot reenter while another append is being published"


class _EventsView(Sequence[Event]):
    """A read-only view of a session's events (no copy)."""

    __slots__ = ("_events",)

    def __init__(self, events: list[Event]) -> None:
        self._events = events

    @overload
    def __getitem__(self, index: int) -> Event: ...
    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...
    def __getitem__(self, index: int | slice) -> Event | list[Event]:
        return self._events[index]

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[Event]:
        return iter(self._events)

    def __repr__(self) -> str:
        return f"<{len(self._events)} events>"


class _Attempt:
    """One write batch, from the moment a flusher asks for it until it is durable or failed."""

    __slots__ = ("done", "error", "wanted")

    def __init__(self) -> None:
        import trio
        self.wanted = False  # a flusher waits for it: start it as soon as possible
        self.done = trio.Event()
        self.error: PersistenceError | None = None


def _copy(err: PersistenceError) -> PersistenceError:
    # Each waiting flusher raises its own instance (tracebacks are per raise).
    fresh = PersistenceError(err.id, err.detail, permanent=err.permanent)
    fresh.__cause__ = err.__cause__
    return fresh


@functools.cache
def _in_flight() -> trio.lowlevel.RunVar[int]:
    """The count of this trio run's batches in flight on their writer threads (per run, not
    global): one RunVar, made on first use so that importing eventlog does not load trio."""
    import trio

    return trio.lowlevel.RunVar("eventlog writes in flight", default=0)


def writes_in_flight() -> int:
    """How many batches of the current trio run's sessions are being written on their writer
    threads now. A task waiting for one is not runnable, so an autojumping ``MockClock`` would
    let virtual time pass during the write; ``host.testing`` holds the clock while this is
    non-zero (as it does while trio's default thread limiter has tokens out)."""
    return _in_flight().get()


# What the writer thread hands back for a batch: the first seq not durable afterwards and the
# failure that stopped it, if any.
_Outcome = tuple[int, FileFailure | None]


class _WriterThread:
    """The thread that does a session's blocking file work, one batch at a time.

    It is one long ``trio.to_thread.run_sync`` call with a limiter of its own, hosted by a task
    in the writer task's nursery and started by the first ``submit``: a thread trio made, so
    ``trio.from_thread`` works in it (fault-injection tests use that), and no pool slot is held
    on behalf of other sessions. ``submit`` (trio thread) queues a batch; the thread runs
    ``LogFile.persist`` on it and calls ``done(outcome)`` on the trio thread through the run's
    token (in trio's entry-queue task, so ``done`` must not raise). The session never submits
    a batch while another is in flight, so the ``LogFile`` is only ever touched by this thread.
    An exception that is not a ``FileFailure`` (a bug, or a test's stand-in for a ``fileio``
    call raising something other than ``OSError``) is logged and fails that batch like a
    failed write, instead of ending the thread and leaving its flushers waiting. ``stop``
    lets the thread end after the batch in flight; the nursery then waits for it.
    """

    def __init__(self, file: LogFile, nursery: trio.Nursery) -> None:
        self._file = file
        self._nursery = nursery
        self._jobs: queue.SimpleQueue[tuple[int, list[Event], Callable[[_Outcome], None]] | None] = (
            queue.SimpleQueue()
        )
        self._started = False
        self.stopped = False

    def submit(self, start: int, batch: list[Event], done: Callable[[_Outcome], None]) -> None:
        import trio
        if not self._started:
            self._started = True
            self._nursery.start_soon(self._host, trio.lowlevel.current_trio_token())
        self._jobs.put((start, batch, done))

    def stop(self) -> None:
        self.stopped = True
        if self._started:
            self._jobs.put(None)

    async def _host(self, token: trio.lowlevel.TrioToken) -> None:
        import trio
        await trio.to_thread.run_sync(
            self._run, token, thread_name=f"eventlog writer {self._file.id}", limiter=trio.CapacityLimiter(1)
        )

    def _run(self, token: trio.lowlevel.TrioToken) -> None:
        while (job := self._jobs.get()) is not None:
            start, batch, done = job
            outcome: _Outcome
            try:
                outcome = self._file.persist(start, batch)
            except Exception as exc:
                logger.exception('writer of session "%s" failed unexpectedly', self._file.id)
                outcome = start, FileFailure(f"write failed: {exc!r}", exc)
            token.run_sync_soon(done, outcome)


class Session:
    """A session open for writing: its events in memory, appends, and the durability barrier.

    Attributes: ``id``, ``header``, ``path``, ``seed_length`` (``header.seed_length`` or 0),
    ``recovered`` (the ``Repair`` that ``open`` committed, or ``None``); properties ``events``
    (read-only view, repair closers included), ``next_seq`` and ``durable_through``.
    """

    def __init__(
        self,
        *,
        header: SessionHeader,
        path: Path,
        clock: Clock,
        write_delay_ms: int,
        events: list[Event],
        fd: int | None,
        good_size: int,
        recovered: Repair | None,
        on_release: Callable[[Session], None],
        zstd: bool = False,
    ) -> None:
        # Built by SessionStore: ``fd`` is None for a session not yet published (create), else
        # the locked descriptor of its file whose first ``good_size`` bytes are the durable log.
        import trio
        self.id = header.id
        self.header = header
        self.path = path
        self.seed_length = header.seed_length or 0
        self.recovered = recovered
        self._clock = clock
        self._delay = write_delay_ms / 1000
        self._events = events
        self._view = _EventsView(events)
        self._durable_through = len(events) - 1
        self._unbatched_from = len(events)  # first seq neither durable nor in flight
        self._on_release = on_release
        # the file, touched only by the writer thread (and, before it starts, open's repair)
        self._file = LogFile(
            id=header.id, path=path, header_line=header.to_json() + b"\n", fd=fd, good_size=good_size, zstd=zstd
        )
        self._writer: _WriterThread | None = None  # made by the writer task
        # writer coordination
        self._deadline = math.inf  # end of the current batching window (trio time)
        self._paused = False  # background writes pause after a failure
        self._warned = False  # a background failure has been logged since the last success
        self._next = _Attempt()  # the batch that starts next
        self._in_flight: _Attempt | None = None
        self._released_together = 0  # flushers the last completed batch released
        self._regroup = False  # the writer task waits one scheduling round before cutting a batch
        self._wake = trio.Event()
        self._timer: trio.CancelScope | None = None  # the writer task's sleep, while it sleeps
        self._writer_started = False
        self._writer_done = trio.Event()
        self._stopping = False
        self._closed = False
        self._released = trio.Event()
        self._failure: PersistenceError | None = None  # permanent failure
        self._publishing = False  # an append is calling its observers
        self._event_observers: list[Callable[[Session, Event], None]] = []
        self._flushed_observers: list[Callable[[Session, int], None]] = []
        self._guards: dict[str, list[Callable[[Session, Any], None]]] = {}

    def __repr__(self) -> str:
        return f"<Session {self.id!r} next_seq={self.next_seq} durable_through={self.durable_through}>"

    @property
    def events(self) -> Sequence[Event]:
        return self._view

    @property
    def next_seq(self) -> int:
        return len(self._events)

    @property
    def durable_through(self) -> int:
        return self._durable_through

    # ----------------------------------------------------------------------------- appending

    def append(
        self,
        type: str,
        data: Any,
        *,
        surface_op: SurfaceOp | None = None,
        source_event_seqs: Sequence[int] | None = None,
        ignorable: bool = False,
    ) -> Event:
        """Validate and commit one event to memory, wake the writer, notify ``on_event``
        observers; return the event. Never does I/O and never awaits.

        Raises ``InvalidEvent`` (log-format §3.5; ``session/end-seed`` is written only by fork),
        ``SessionClosed``, the session's ``PersistenceError`` after a permanent failure, an
        append guard's exception unchanged, or ``EventLogError`` when called from an observer.
        On any error nothing is committed.
        """
        import trio
        if self._closed:
            raise SessionClosed(self.id)
        if self._failure is not None:
            raise self._failure
        if self._publishing:
            raise EventLogError(_REENTRANT_APPEND)
        if type == "session/end-seed":
            raise InvalidEvent('session event "session/end-seed" is written only by fork')
        seq = len(self._events)
        event = build_event(
            type,
            seq,
            self._clock.now_ms(),
            data,
            surface_op=surface_op,
            source_event_seqs=source_event_seqs,
            ignorable=ignorable,
        )
        self._publishing = True
        try:
            for guard in tuple(self._guards.get(type, ())):
                guard(self, data)
            self._events.append(event)
            if seq == self._unbatched_from or self._paused:
                # The pending buffer just became non-empty (or retries resume): a new window.
                self._paused = False
                self._deadline = trio.current_time() + self._delay
                self._arm()
            for observer in tuple(self._event_observers):
                try:
                    observer(self, event)
                except Exception:
                    logger.exception('on_event observer of session "%s" failed', self.id)
        finally:
            self._publishing = False
        return event

    def on_event(self, cb: Callable[[Session, Event], None]) -> Callable[[], None]:
        """Call ``cb(session, event)`` after each append; returns the unsubscribe callable."""
        return _subscribe(self._event_observers, cb)

    def on_flushed(self, cb: Callable[[Session, int], None]) -> Callable[[], None]:
        """Call ``cb(session, through_seq)`` once per durable batch; returns the unsubscribe
        callable."""
        return _subscribe(self._flushed_observers, cb)

    def add_append_guard(
        self, type: str, guard: Callable[[Session, Any], None]
    ) -> Callable[[], None]:
        """Have ``append`` call ``guard(session, data)`` for events of ``type`` after the
        envelope checks and before the commit; an exception refuses the event. Returns the
        callable that removes the guard."""
        return _subscribe(self._guards.setdefault(type, []), guard)

    # ----------------------------------------------------------------------------- barrier

    async def flush(self) -> int:
        """Wait until every event appended before the call is durable; return ``through_seq``
        (>= the last seq appended before the call; ``-1`` for a session without events).

        Returns at once, without I/O, if those events are already durable. Otherwise waits for
        the write in flight, then for a batch started after the call; at most one new attempt
        is made per call, and its failure raises ``PersistenceError``. Raises ``SessionClosed``
        after ``aclose``.

        Cancelling cancels only the wait: the batch this call asked for is still written and
        synced by the writer thread (and ``on_flushed`` still reports it), so a cancelled flush
        guarantees nothing about durability, and costs no event: whatever it covered becomes
        durable with that batch or, if it fails, stays pending for the next one.
        """
        if self._closed:
            raise SessionClosed(self.id)
        return await self._flush()

    async def _flush(self) -> int:
        if self._failure is not None:
            raise self._failure
        target = len(self._events) - 1
        if target <= self._durable_through:
            return self._durable_through
        in_flight = self._in_flight
        if in_flight is not None and target < self._unbatched_from:
            # Every event up to target is durable or in the write in flight: wait for it.
            await in_flight.done.wait()
            if self._durable_through >= target:
                return self._durable_through
            if self._failure is not None:
                raise self._failure
        # Ask for the next batch now, even with a write in flight: it starts as soon as that
        # write completes (log-format §6.1), and it completes after it, so one wait serves this call.
        following = self._next
        following.wanted = True
        self._paused = False
        if self._in_flight is None:
            if self._released_together <= 1:
                self._start_due()  # a lone flusher: no scheduling round before the write
                self._arm()  # no window's timer stays armed while the write is in flight
            else:
                # Other flushers released by the last batch may be about to append: the writer
                # task starts this batch after every task running now, so that they join it
                # (group commit).
                self._wake.set()
        # With a write in flight, its completion starts the batch.
        await following.done.wait()
        # A batch can fail after making part of itself durable (a publish completed before
        # the write of later events failed): this call's events may be among that part.
        if self._durable_through >= target:
            return self._durable_through
        if following.error is not None:
            raise following.error if following.error.permanent else _copy(following.error)
        if self._durable_through < target:
            raise SessionClosed(self.id)  # the writer stopped without writing (closed)
        return self._durable_through

    async def aclose(self) -> None:
        """Stop admitting appends, flush inside a shielded cancel scope, stop the writer,
        release the lock and close the descriptor. If the final flush fails, raises
        ``PersistenceError`` after releasing everything (the unflushed events are lost with
        the handle). Idempotent: a later call waits for the first to finish and returns."""
        import trio
        if self._closed:
            with trio.CancelScope(shield=True):
                await self._released.wait()
            return
        self._closed = True
        error: PersistenceError | None = None
        with trio.CancelScope(shield=True):
            try:
                if len(self._events) - 1 > self._durable_through:
                    await self._flush()
            except PersistenceError as exc:
                error = exc
            finally:
                self._stopping = True
                self._wake.set()
                if self._writer_started:
                    await self._writer_done.wait()
                self._release()
        if error is not None:
            raise error

    def _release(self) -> None:
        try:
            self._file.close()  # drops the flock
        finally:
            self._on_release(self)
            self._released.set()

    # ----------------------------------------------------------------------------- writer

    async def _run_writer(self, *, task_status: trio.TaskStatus[None]) -> None:
        """The writer task; started by the store in the session's nursery, stopped by aclose.
        It starts the batches that no completion starts (a flush with nothing in flight, an
        expired window), hosts the writer thread, and returns once stopping with no batch in
        flight and the thread ended."""
        import trio
        with trio.CancelScope(shield=True):
            self._writer_started = True
            try:
                async with trio.open_nursery() as nursery:
                    self._writer = _WriterThread(self._file, nursery)
                    task_status.started()
                    try:
                        await self._writer_loop()
                    finally:
                        self._writer.stop()
            finally:
                self._writer_done.set()
                self._next.done.set()  # release anyone still waiting: flush sees it as closed

    async def _writer_loop(self) -> None:
        import trio
        while True:
            if self._regroup:
                self._regroup = False
                # One scheduling round: every flusher the last batch released (all runnable
                # now) appends and flushes before the next batch is cut.
                await trio.lowlevel.checkpoint()
            self._start_due()
            if self._in_flight is None and self._stopping:
                return
            self._wake = trio.Event()
            with trio.CancelScope(deadline=self._window_end()) as self._timer:
                await self._wake.wait()
            self._timer = None

    def _window_end(self) -> float:
        """When the writer task must start a background batch: the end of the window of what
        is pending, if nothing is in flight and background writes are on; else never."""
        if (
            self._in_flight is None
            and self._unbatched_from < len(self._events)
            and self._failure is None
            and self._delay > 0
            and not self._paused
        ):
            return self._deadline
        return math.inf

    def _arm(self) -> None:
        """Set the sleeping writer task's timer to what the state now asks (``_window_end``),
        without waking it: an append that opens a window, or a batch started or completed
        outside the writer task, costs no task switch. A running writer task reads the state
        itself before it sleeps."""
        if self._timer is not None:
            end = self._window_end()
            if end != self._timer.deadline:  # a deadline change costs a few µs in trio
                self._timer.deadline = end

    def _window_expired(self) -> bool:
        import trio
        return self._delay > 0 and not self._paused and trio.current_time() >= self._deadline

    def _start_due(self) -> None:
        """With no batch in flight: start the next one if a flusher wants it or its window has
        expired, or settle a wanted one that has nothing to write (already covered, or the
        session failed permanently)."""
        if self._in_flight is not None or self._writer is None or self._writer.stopped:
            return  # (a wanted batch left when the writer stopped is released as closed)
        following = self._next
        if self._failure is not None:
            if following.wanted:
                self._next = _Attempt()
                following.error = self._failure
                following.done.set()
        elif self._unbatched_from < len(self._events) and (following.wanted or self._window_expired()):
            self._next = _Attempt()
            self._in_flight = following
            start, end = self._unbatched_from, len(self._events)
            self._unbatched_from = end
            in_flight = _in_flight()
            in_flight.set(in_flight.get() + 1)
            self._writer.submit(start, self._events[start:end], functools.partial(self._completed, following, end))
        elif following.wanted:
            self._next = _Attempt()
            following.done.set()

    def _completed(self, attempt: _Attempt, end: int, outcome: _Outcome) -> None:
        """The writer thread's outcome for the batch in flight (ending before ``end``), on the
        trio thread (trio's entry-queue task: nothing here may raise): advance
        ``durable_through`` and notify, or keep the batch pending and record the failure;
        release the batch's flushers; start the next batch at once if it is due."""
        durable_end, failure = outcome
        in_flight = _in_flight()
        in_flight.set(in_flight.get() - 1)
        if durable_end - 1 > self._durable_through:
            self._durable_through = durable_end - 1
            self._warned = False
            for observer in tuple(self._flushed_observers):
                try:
                    observer(self, self._durable_through)
                except Exception:
                    logger.exception('on_flushed observer of session "%s" failed', self.id)
        if failure is not None:
            self._unbatched_from = durable_end  # the batch stays pending, ahead of newer events
            # Automatic retries pause until a new event arrives; one appended during this
            # write already has its window running.
            self._paused = len(self._events) == end
            err = attempt.error = failure.error(self.id)
            if failure.permanent:
                self._failure = err
            if not attempt.wanted and not self._warned:
                self._warned = True
                logger.warning(
                    'background write for session "%s" failed (buffered events retained): %s',
                    self.id,
                    failure.detail,
                )
        self._in_flight = None
        self._released_together = attempt.done.statistics().tasks_waiting
        attempt.done.set()
        if self._released_together > 1:
            # The flushers just released may append again at once: the writer task starts the
            # next batch once they have run, so that they join it (group commit).
            self._regroup = True
            self._wake.set()
        else:
            self._start_due()
            if self._in_flight is None and self._stopping:
                self._wake.set()  # the writer task finishes closing
            else:
                self._arm()  # the window of what is still pending, if any

    def _recover(self, truncate: bool, closers: Sequence[Event]) -> None:
        """Commit open's repair (log-format §7.4) under the lock, in a worker thread (before the
        writer thread exists): cut the
        tail, sync, write the closers as one synced batch; then hold the closers as durable
        events. Raises ``PersistenceError``."""
        self._file.repair(truncate, closers)
        self._events.extend(closers)
        self._unbatched_from = len(self._events)
        self._durable_through = len(self._events) - 1


def _subscribe(registry: list[Any], item: Any) -> Callable[[], None]:
    registry.append(item)

    def remove() -> None:
        try:
            registry.remove(item)
        except ValueError:
            pass  # already removed

    return remove
