"""``turnlog demo``: a non-interactive, self-checking tour on the offline scripted model (host §7.1).

A reminder is created through a prompt, fires as a follow-up turn, the host shuts down, a fresh
host resumes the session, and the file on disk is checked: exactly one dispatch of
``schedule-1``, no active reminder, no turn beyond turn 2. Every check is exact; a failed one is
``turnlog: demo check failed: <what>`` and exit status 1.
"""

from __future__ import annotations

import json
import secrets
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import trio

import schedule
from eventlog import Event, EventLogError, SessionStore, read_log
from eventlog.values import compact_json
from host.models import ScriptedAdapter
from host.runtime import (
    EventAppended,
    HostConfig,
    HostError,
    Notification,
    StatusChanged,
    open_host,
    sole_exception,
)

from ._chat import admit_text
from ._chatview import PROMPT, reminder_notice, reminders_inserted, text_of, transcript_lines

FIRST_TURN_TIMEOUT_S = 30.0
REMINDER_GRACE_S = 30.0  # beyond the reminder's delay, before the demo gives up
SCHEDULE_ID = "schedule-1"


class DemoCheckFailed(Exception):
    """One of the demo's checks failed; the message says which."""


def demo_config(root: Path) -> HostConfig:
    """The demo's host: scripted model (rules mode), time context on."""
    return HostConfig(root=root, provider="scripted", time_context=True)


def demo_session_id(now_s: float, suffix: str) -> str:
    """``demo-<YYYYMMDDTHHMMSSZ>-<4 hex>``."""
    return f"demo-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(now_s))}-{suffix}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the checks found in the file."""

    events: int
    turns: int
    dispatches: int


def check_log(events: list[Event], seed_length: int) -> Verdict:
    """The exact checks of host §7.1 step 5 over the events read back from the file."""
    dispatches = 0
    turns = 0
    for event in events:
        if event.type == "turn/start":
            turn = event.value()["turn"]
            turns += 1
            if turn > 2:
                raise DemoCheckFailed(f"the log has a turn {turn}, beyond turn 2")
        elif event.type == "schedule/change":
            data = event.value()
            if data.get("operation") == "dispatch" and data.get("id") == SCHEDULE_ID:
                dispatches += 1
    if dispatches != 1:
        raise DemoCheckFailed(f"expected exactly 1 dispatch of {SCHEDULE_ID}, found {dispatches}")
    active = schedule.fold(events, seed_length).active
    if active:
        raise DemoCheckFailed(f"{len(active)} reminders are still active after the restart")
    if turns != 2:
        raise DemoCheckFailed(f"expected 2 turns, found {turns}")
    return Verdict(len(events), turns, dispatches)


@dataclass
class _Watch:
    """Collects one session's events and idle flips, and wakes waiters on each."""

    session_id: str
    events: list[Event] = field(default_factory=list)
    idle_after: int = -1  # events seen when the session last became idle
    changed: trio.Event = field(default_factory=trio.Event)

    def __call__(self, value: Notification) -> None:
        if isinstance(value, EventAppended) and value.session_id == self.session_id:
            self.events.append(value.event)
        elif (
            isinstance(value, StatusChanged)
            and value.session_id == self.session_id
            and value.status == "idle"
        ):
            self.idle_after = len(self.events)
        else:
            return
        self.changed.set()
        self.changed = trio.Event()

    def turn_end(self, turn: int) -> int | None:
        """The index of turn ``turn``'s ``turn/end`` once the session went idle after it."""
        for index, event in enumerate(self.events):
            if event.type == "turn/end" and event.value()["turn"] == turn:
                return index if self.idle_after > index else None
        return None

    async def until(self, ready: Callable[[], int | None]) -> int:
        while (value := ready()) is None:
            await self.changed.wait()
        return value


async def run_demo(
    config: HostConfig,
    seconds: int,
    as_json: bool,
    *,
    name_root: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """The tour; returns the exit status (0, or 1 after a failed check or a host error).
    With ``name_root`` (the user chose ``--root``) the suggested commands name the root too."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr

    def say(text: str = "") -> None:
        if not as_json:
            out.write(text + "\n")
            out.flush()

    session_id = demo_session_id(time.time(), secrets.token_hex(2))
    root = Path(config.root)
    try:
        verdict, replayed, path = await _tour(config, session_id, seconds, say)
    except (DemoCheckFailed, HostError, EventLogError, BaseExceptionGroup) as raised:
        exc = sole_exception(raised)
        if isinstance(exc, DemoCheckFailed):
            err.write(f"turnlog: demo check failed: {exc}\n")
        elif isinstance(exc, (HostError, EventLogError)):
            err.write(f"turnlog: {exc}\n")
        else:
            raise
        return 1
    if as_json:
        result = {
            "sessionId": session_id,
            "path": str(path),
            "events": verdict.events,
            "turns": verdict.turns,
            "dispatches": verdict.dispatches,
            "ok": True,
        }
        out.write(compact_json(result) + "\n")
        return 0
    say(f"restarted: {replayed} events replayed, 0 active reminders, 1 dispatch (no second dispatch)")
    say()
    say(f"log: {path}")
    say("next:")
    where = f" --root {shlex.quote(str(root))}" if name_root else ""
    say(f"  turnlog inspect {session_id}{where}")
    say(f"  turnlog tail {session_id}{where}")
    return 0


async def _tour(
    config: HostConfig, session_id: str, seconds: int, say: Callable[[str], None]
) -> tuple[Verdict, int, Path]:
    root = Path(config.root)
    async with open_host(config, adapters={"scripted": ScriptedAdapter()}) as host:
        watch = _Watch(session_id)
        host.subscribe(watch)
        say(f"root: {root}")
        say(f"session: {session_id}")
        say("model: scripted (offline)")
        say("")
        prompt = f"remind me in {seconds} seconds to stretch"
        say(PROMPT + prompt)
        await admit_text(host, session_id, prompt)
        first_end: int | None = None
        with trio.move_on_after(FIRST_TURN_TIMEOUT_S):
            first_end = await watch.until(lambda: watch.turn_end(1))
        if first_end is None:
            raise DemoCheckFailed(f"the first turn did not finish within {FIRST_TURN_TIMEOUT_S:.0f} s")
        first = watch.events[: first_end + 1]
        for event in first:
            if event.type != "user/message":
                for line in transcript_lines(event):
                    say(line)
        _check_created(first)
        say("")
        say(f"waiting {seconds} s for the reminder…")
        second_end: int | None = None
        with trio.move_on_after(seconds + REMINDER_GRACE_S):
            second_end = await watch.until(lambda: watch.turn_end(2))
        if second_end is None:
            raise DemoCheckFailed(f"the reminder did not fire within {seconds + REMINDER_GRACE_S:.0f} s")
        for event in watch.events[first_end + 1 : second_end + 1]:
            notices = reminders_inserted(event)
            if notices:
                say(reminder_notice(notices[0]))
            elif event.type != "user/message":
                for line in transcript_lines(event):
                    say(line)
        report = await host.shutdown()
        if not report.ok:
            raise DemoCheckFailed(f"the log could not be flushed: {next(iter(report.failed.values()))}")
    say("")
    say("restarting the host on the same root…")
    async with open_host(config, adapters={"scripted": ScriptedAdapter()}) as host:
        await host.resume(session_id)
        live = host.live(session_id)
        assert live is not None
        replayed = len(live.session.events)
        # Settle twice: a (wrong) second dispatch would run a turn that the second wait covers.
        for _ in range(2):
            await live.runtime.wait_settled()
            await live.agent.when_idle()
        report = await host.shutdown()
        if not report.ok:
            raise DemoCheckFailed(f"the log could not be flushed: {next(iter(report.failed.values()))}")
    # Where the log is, once it exists: a dsh root names its directories after the session's cwd.
    path = await trio.to_thread.run_sync(SessionStore(root).path, session_id)
    snapshot = await trio.to_thread.run_sync(lambda: read_log(path, expected_id=session_id))
    if snapshot.repair is not None:
        raise DemoCheckFailed("the log needs repair after a clean shutdown")
    return check_log(list(snapshot.events), snapshot.header.seed_length or 0), replayed, path


def _check_created(turn: list[Event]) -> None:
    """The first turn must have created ``schedule-1``."""
    for event in turn:
        if event.type == "tool/result":
            message = event.value()["message"]
            block = message["content"][0]
            text = text_of(block.get("content", ()))
            if block.get("isError"):
                raise DemoCheckFailed(f"schedule_create failed: {text}")
            try:
                created = json.loads(text)
            except ValueError:
                created = None
            if isinstance(created, dict) and created.get("id") == SCHEDULE_ID:
                return
            raise DemoCheckFailed(f"schedule_create did not create {SCHEDULE_ID}: {text}")
    raise DemoCheckFailed("the first turn made no schedule_create call")
