"""Deterministic restart testing: run a host in process on virtual time, crash it, restart it.

A :class:`Harness` runs a :class:`~host.runtime.Host` on ``trio.testing.MockClock(autojump_threshold=0)``
with a wall clock derived from trio time, so a 30-day reminder test runs in milliseconds and gives
the same log every time. It drives prompts, advances virtual time, waits until every session is
settled, stops cleanly or "crashes" (everything that was not durable is lost, locks are released,
no cleanup runs), restarts a fresh host on the same root, and reads the logs back from disk::

    from host.testing import open_harness

    async def test_reminder_survives_a_restart(tmp_path, autojump_clock):  # pytest-trio's MockClock
        async with open_harness(tmp_path) as h:
            await h.start()
            await h.prompt("main", "remind me in 5 seconds to stretch")
            await h.settle()
            await h.restart()                 # or: await h.crash(); await h.start()
            await h.resume("main")
            await h.advance(10)
            dispatches = [e for e in h.events("main", "schedule/change")
                          if e["data"]["operation"] == "dispatch"]
            assert len(dispatches) == 1

Virtual time and threads: file writes and fsyncs run in worker threads, and a bare autojumping
``MockClock`` jumps to the next deadline while one is in flight (nothing is runnable), so a
reminder could fall due "during" an fsync. Under a ``MockClock`` the harness runs a small task
that keeps the clock still until the thread is done; virtual time then passes only when the
whole process waits for a timer. On the real clock the harness works too, in real time.
"""

from __future__ import annotations

import math
import os
import random
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import msgspec
import trio
import trio.lowlevel
import trio.testing

from eventlog import Event, LogSnapshot, SessionStore, read_log
from eventlog._zstd import encode_frame, read_text  # crash cuts in a Zstandard log (dsh-roots §4)
from eventlog.format import ZSTD_MAGIC
from eventlog.scan import Scanner
from eventlog.session import writes_in_flight
from host.models import ScriptedAdapter
from host.runtime import (
    Adapters,
    AgentClosed,
    EventAppended,
    Host,
    HostConfig,
    Notification,
    ShutdownReport,
    open_host,
)
from timecontext import PreStepHook

DEFAULT_BASE_MS = 1_770_724_800_000
"""2026-02-10T12:00:00Z, the epoch of the spec's examples."""

_SAME_INSTANT_S = 1e-6  # deadlines closer than this to now are due now (float rounding)


class TrioWallClock:
    """The wall clock as trio time sees it: ``base_ms + round(<trio clock time> * 1000)``.

    Under a virtual trio clock this is a virtual wall clock that never jumps on its own; every
    host, schedule and time-context decision reads it. It reads the trio clock object directly,
    so it also works from worker threads (eventlog stamps a fork child in one); construct it
    inside ``trio.run``, or call it there first.
    """

    def __init__(self, base_ms: int = DEFAULT_BASE_MS) -> None:
        self.base_ms = base_ms
        self._trio_clock: trio.abc.Clock | None = None
        try:
            self._trio_clock = trio.lowlevel.current_clock()
        except RuntimeError:
            pass  # outside trio.run: captured by the first call made inside it

    def now_ms(self) -> int:
        if self._trio_clock is None:
            self._trio_clock = trio.lowlevel.current_clock()
        return self.base_ms + round(self._trio_clock.current_time() * 1000)


Survivors = Literal["durable", "before-match"]


class Harness:
    """Drives one host at a time on a session root (see the module docstring).

    Create it with :func:`open_harness`. ``config`` is the :class:`HostConfig` every
    :meth:`start` uses (its ``root`` is the harness root); ``adapters`` is called to give each
    started host its model adapters (default: a fresh rules-mode scripted adapter); ``uniform``
    is the hosts' retry-jitter source. ``notifications`` collects everything every started host
    published, in order.
    """

    def __init__(
        self,
        nursery: trio.Nursery,
        config: HostConfig,
        *,
        clock: TrioWallClock,
        adapters: Callable[[], Adapters],
        hooks: Sequence[PreStepHook] = (),
        uniform: Callable[[float, float], float],
    ) -> None:
        self._nursery = nursery
        self.config = config
        self.clock = clock
        self._adapters = adapters
        self._hooks = tuple(hooks)
        self._uniform = uniform
        self._host: Host | None = None
        self._stop_host: trio.Event | None = None
        self._host_done: trio.Event | None = None
        self._trigger: tuple[Callable[[str, Event], bool], Survivors, bool] | None = None
        self._crashed = trio.Event()
        self.notifications: list[Notification] = []

    @property
    def root(self) -> Path:
        return Path(self.config.root)

    @property
    def host(self) -> Host:
        """The running host; raises if none is running."""
        if self._host is None:
            raise RuntimeError("no host is running: call start() first")
        return self._host

    def now_ms(self) -> int:
        return self.clock.now_ms()

    # --- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> Host:
        """Start a fresh host on the root (sessions become live on first use or :meth:`resume`)."""
        if self._host is not None:
            raise RuntimeError("a host is already running: stop() or crash() it first")
        self._crashed = trio.Event()
        host: Host = await self._nursery.start(self._run_host)
        return host

    async def _run_host(self, *, task_status: trio.TaskStatus[Host] = trio.TASK_STATUS_IGNORED) -> None:
        stop, done = trio.Event(), trio.Event()
        self._stop_host, self._host_done = stop, done
        try:
            async with open_host(
                self.config,
                adapters=self._adapters(),
                clock=self.clock,
                hooks=self._hooks,
                uniform=self._uniform,
            ) as host:
                host.subscribe(self._observe)
                self._host = host
                task_status.started(host)
                await stop.wait()
        finally:
            self._host = None
            done.set()

    async def _finish_host(self) -> None:
        assert self._stop_host is not None and self._host_done is not None
        self._stop_host.set()
        await self._host_done.wait()

    async def stop(self) -> ShutdownReport:
        """Shut the host down cleanly (host §4.3.9): abort running turns as ``disposed``,
        keep queued input, flush and close every session."""
        report = await self.host.shutdown()
        await self._finish_host()
        return report

    async def crash(self, *, keep: Mapping[str, int] | None = None, torn_tail: bool = False) -> None:
        """Kill the host as a crash would. No cleanup event is written and nothing more is made
        durable: each session's file is cut back to what was durable at this moment (or to the
        last seq given in ``keep``); a session never made durable loses its file. Locks are
        released. With ``torn_tail`` the first lost record is left half-written, as a crash in
        the middle of a write would leave it (the next open repairs it)."""
        host = self.host
        survivors = await host.abandon()
        survivors.update(keep or {})
        for session_id, last_seq in survivors.items():
            # Locating a session lists a dsh root: blocking work, done in the thread too.
            await trio.to_thread.run_sync(_cut_session, host.store, session_id, last_seq, torn_tail)
        await self._finish_host()
        self._crashed.set()

    def crash_when(
        self,
        predicate: Callable[[str, Event], bool],
        *,
        survivors: Survivors = "durable",
        torn_tail: bool = False,
    ) -> None:
        """Arm a one-shot crash: when an event for which ``predicate(session_id, event)`` holds is
        appended, the host crashes (:meth:`crash`) as of that instant. ``survivors="durable"``
        loses everything that was not durable yet, the matching event included;
        ``"before-match"`` keeps every event before the matching one (the start of a write batch
        reached the disk, its end did not). Await :meth:`crashed` to wait for it."""
        self._trigger = (predicate, survivors, torn_tail)

    async def crashed(self) -> None:
        """Wait until a crash armed by :meth:`crash_when` has happened."""
        await self._crashed.wait()

    def _observe(self, value: Notification) -> None:
        self.notifications.append(value)
        trigger = self._trigger
        if trigger is None or not isinstance(value, EventAppended):
            return
        predicate, survivors, torn_tail = trigger
        if not predicate(value.session_id, value.event):
            return
        self._trigger = None
        live = self.host.live(value.session_id)
        durable = live.session.durable_through if live is not None else -1
        last = durable if survivors == "durable" else value.event.seq - 1
        self._nursery.start_soon(self._crash_at, {value.session_id: last}, torn_tail)

    async def _crash_at(self, keep: dict[str, int], torn_tail: bool) -> None:
        await self.crash(keep=keep, torn_tail=torn_tail)

    async def restart(self, *, crash: bool = False) -> Host:
        """Stop (or crash) the running host and start a fresh one on the same root."""
        if crash:
            await self.crash()
        else:
            await self.stop()
        return await self.start()

    # --- driving ----------------------------------------------------------------------------------

    async def prompt(
        self,
        session_id: str,
        text: str,
        *,
        client_time_zone: object = None,
        mode: Literal["queue", "steer"] = "queue",
        rpc_id: str | None = None,
    ) -> str:
        """Admit a text prompt as a front door would (``rpcId`` a fresh UUID4 unless given;
        ``client_time_zone`` sent only when not ``None``); returns the message id."""
        zone: dict[str, Any] = {} if client_time_zone is None else {"client_time_zone": client_time_zone}
        return await self.host.admit(
            session_id,
            [{"type": "text", "text": text}],
            rpc_id=rpc_id if rpc_id is not None else str(uuid.uuid4()),
            mode=mode,
            **zone,
        )

    async def resume(self, session_id: str) -> str:
        """Make a session on disk live without input (its runtime starts and fires overdue
        reminders); returns ``"resumed"`` or ``"already-live"``."""
        return await self.host.resume(session_id)

    async def settle(self) -> None:
        """Wait until every live session is idle and its schedule runtime settled: tasks due now
        (timers included) have run, and a final check passed without anything being published
        (nor, on a ``MockClock``, virtual time moving). Returns at once when no host is running."""
        while self._host is not None:
            await _run_due_tasks()
            before = self._progress()
            host, done = self._host, self._host_done
            sessions = host.live_sessions()
            try:
                for live in sessions:
                    await live.agent.when_idle()
                    await live.runtime.wait_settled()
            except AgentClosed:
                assert done is not None
                await done.wait()  # the host is going away (a crash); settled once it is gone
                return
            current = host.live_sessions()
            if (
                self._progress() == before
                and current == sessions
                and all(live.agent.phase == "idle" for live in current)
            ):
                return

    def _progress(self) -> tuple[float | None, int]:
        """What moves while anything happens: virtual time (a real clock always moves, so it is
        left out there) and the number of notifications published."""
        virtual = isinstance(trio.lowlevel.current_clock(), trio.testing.MockClock)
        return (trio.current_time() if virtual else None, len(self.notifications))

    async def advance(self, seconds: float) -> None:
        """Let ``seconds`` of virtual time pass (timers fire as they fall due), then settle. Works
        while no host runs too: time passes with the sessions cold."""
        await trio.sleep(seconds)
        await self.settle()

    # --- reading ----------------------------------------------------------------------------------

    def read(self, session_id: str) -> LogSnapshot:
        """The session file as it is on disk, wherever the root's layout puts it (flat, or dsh in
        either encoding), read without locking or repair."""
        if self._host is not None:
            store = self._host.store
        else:
            config = self.config
            store = SessionStore(
                config.root, layout=config.layout, compression=config.compression, dsh_default=config.dsh_default
            )
        return read_log(store.path(session_id), expected_id=session_id)

    def events(self, session_id: str, *types: str) -> list[dict[str, Any]]:
        """The session's events on disk as decoded envelopes (``{"type","seq","time","data",…}``),
        only those of ``types`` if any are given."""
        wanted = set(types)
        return [
            msgspec.json.decode(event.to_json())
            for event in self.read(session_id).events
            if not wanted or event.type in wanted
        ]


async def _hold_time_during_io() -> None:
    """Keep ``MockClock(autojump_threshold=0)`` from jumping while file work is in flight.

    The mock clock jumps to the next deadline as soon as no task is runnable, and a task waiting
    for a thread (a session's batch on its eventlog writer thread, other file work in
    ``trio.to_thread``) is not runnable: a reminder could fall due "during" an fsync. This task
    waits until every other task is blocked (such waiters go before an autojump); if a thread is
    then busy it stays runnable until the thread is done, so no virtual time passes; otherwise it
    sleeps until the next deadline and lets the jump happen.
    """
    limiter = trio.to_thread.current_default_thread_limiter()

    def busy() -> bool:
        return limiter.borrowed_tokens > 0 or writes_in_flight() > 0

    while True:
        await trio.testing.wait_all_tasks_blocked()
        if busy():
            while busy():
                await trio.lowlevel.checkpoint()
            continue
        wait = trio.lowlevel.current_statistics().seconds_to_next_deadline
        await trio.sleep(0 if math.isinf(wait) else wait)


async def _run_due_tasks() -> None:
    """Let every task that is runnable now run once, including those whose deadline lies within
    a float rounding error of the current time."""
    while True:
        await trio.lowlevel.checkpoint()
        due = trio.lowlevel.current_statistics().seconds_to_next_deadline
        if due > _SAME_INSTANT_S:
            return
        await trio.sleep(max(due, 0.0))


def _cut_session(store: SessionStore, session_id: str, last_seq: int, torn_tail: bool) -> None:
    _cut(store.path(session_id), last_seq, torn_tail)


def _cut(path: Path, last_seq: int, torn_tail: bool) -> None:
    """Cut a session file back so its last event is ``last_seq`` (a file with no surviving event
    is removed, as it was never published); optionally leave half of the first lost record.

    The record boundaries are eventlog's: its scanner reads the file a line at a time and says
    which events each record completes (a deepseek-harness row stands for several), and the cut
    falls after the last record whose events all survive. A Zstandard log (dsh-roots §4) is cut
    at the end of the last frame whose events all survive; the surviving records of the next
    frame become one frame of their own (the batch as if it had been written in two), and the
    half record is left as a frame cut short, the torn final frame a crash leaves.
    """
    if not path.exists():
        return
    if last_seq < 0:
        path.unlink()
        return
    data = path.read_bytes()
    if data.startswith(ZSTD_MAGIC):
        end, tail = _cut_frames(path, data, last_seq, torn_tail)
    else:
        scanner = Scanner(path)
        end, lost = 0, b""
        for line in data.splitlines(keepends=True):
            if any(event.seq > last_seq for event in scanner.feed(line)):
                lost = line
                break
            end = scanner.committed_bytes
        tail = _half(lost) if torn_tail else b""
    with open(path, "r+b") as file:
        file.truncate(end)
        file.seek(end)
        file.write(tail)


def _cut_frames(path: Path, data: bytes, last_seq: int, torn_tail: bool) -> tuple[int, bytes]:
    """``_cut`` of a Zstandard log: the size to keep and the frames to write after it."""
    text = read_text(data)
    scanner = Scanner(path)
    end = 0
    kept: list[bytes] = []  # the surviving records of the first frame that loses one
    lost = b""
    for frame in text.frames:
        for line in text.committed[frame.text_start : frame.text_end].splitlines(keepends=True):
            if any(event.seq > last_seq for event in scanner.feed(line)):
                lost = line
                break
            kept.append(line)
        if lost:
            break
        end, kept = frame.frame.end, []
    tail = encode_frame(b"".join(kept)) if kept else b""
    if torn_tail and lost:
        tail += encode_frame(_half(lost))[:-1]  # its checksum cut short: a torn final frame
    return end, tail


def _half(record: bytes) -> bytes:
    return record[: max(1, (len(record) - 1) // 2)] if record else b""


@asynccontextmanager
async def open_harness(
    root: str | os.PathLike[str],
    *,
    base_ms: int = DEFAULT_BASE_MS,
    adapters: Callable[[], Adapters] | None = None,
    hooks: Sequence[PreStepHook] = (),
    uniform: Callable[[float, float], float] | None = None,
    **config: Any,
) -> AsyncIterator[Harness]:
    """A :class:`Harness` on ``root``; ``hooks`` are extra pre-step hooks (run before
    ``TimeContext``) for every started host and ``uniform(0.9, 1.1)`` is their retry jitter
    (default: ``random.Random(0).uniform``, one sequence across the harness's hosts, so retry
    delays repeat from run to run too). ``config`` holds :class:`HostConfig` fields (e.g.
    ``time_context=True, time_zone="Europe/Berlin"``; ``write_delay_ms`` defaults to 0, so
    events become durable exactly at flushes). A host still running at the end is stopped
    cleanly."""
    host_config = replace(HostConfig(root=os.path.abspath(root), write_delay_ms=0), **config)
    async with trio.open_nursery() as nursery:
        if isinstance(trio.lowlevel.current_clock(), trio.testing.MockClock):
            nursery.start_soon(_hold_time_during_io)
        harness = Harness(
            nursery,
            host_config,
            clock=TrioWallClock(base_ms),
            adapters=adapters or (lambda: {"scripted": ScriptedAdapter()}),
            hooks=hooks,
            uniform=uniform or random.Random(0).uniform,
        )
        try:
            yield harness
        finally:
            if harness._host is not None:
                with trio.CancelScope(shield=True):
                    await harness.stop()
            nursery.cancel_scope.cancel()
