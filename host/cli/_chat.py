"""``turnlog chat``: an interactive terminal assistant over an in-process host (host §7.2).

On a terminal (stdin and stdout both), input goes through :class:`~._editor.LineEditor` and
output through :class:`~._chatview.TerminalDisplay`; otherwise every stdin line is one prompt and
:class:`~._chatview.PipedDisplay` prints exactly what host §7.2 describes. The session is the
one named by ``--session``, the most recently active one with ``--continue``, or a new one; the
banner says which, what it holds and which model answers.

Input: a line typed while a turn runs is queued (``followup``); the slash commands are
:data:`COMMANDS`. On a terminal Ctrl-C clears a typed line, cancels a running turn from an empty
line, and otherwise says how to quit (a second Ctrl-C within a few seconds quits with 130);
Ctrl-D or ``/quit`` leaves with 0. A SIGINT from outside cancels a running turn, or ends chat
with 130 when idle. Piped chat exits 1 when a turn failed.
"""

from __future__ import annotations

import difflib
import os
import re
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import trio

import schedule
import timecontext
from eventlog import EventLogError
from eventlog.values import SystemClock
from host._process import EXIT_SIGINT
from host.runtime import (
    Adapters,
    EventAppended,
    Host,
    HostConfig,
    HostError,
    LiveSession,
    Notification,
    check_session_id,
    open_host,
)

from ._chatview import (
    PROMPT,
    TOOL_MARK,
    Display,
    PipedDisplay,
    TerminalDisplay,
    reminder_lines,
    transcript_lines,
)
from ._editor import LineEditor, guarded_output, history_path
from ._modelsetup import ModelSetup
from ._sessions import Summary, latest, suggestions, summarize
from ._style import style_for
from ._when import Zone, user_zone, when

STDIN_FD = 0
RECENT_MESSAGES = 5
QUIT_AGAIN_S = 3.0  # a second Ctrl-C on an empty idle line within this quits
EXIT_LINE = "reminders fire only while the session is open; continue with: turnlog chat --session {id}"
COMMANDS = ("/remind", "/reminders", "/delete", "/steer", "/session", "/model", "/help", "/quit")
HELP = """\
commands:
  /remind WHEN WHAT   set a reminder: /remind 10m stretch, /remind 18:30 call mom,
                      /remind tomorrow 9am dentist (or just say "remind me ...")
  /reminders          list the active reminders of this session
  /delete ID|WORDS    delete a reminder by id, or by words of it: /delete stretch; /delete all
  /steer TEXT         add TEXT to the running turn at its next step
  /session            print the session id and its log file
  /model              print which model answers and where its settings come from
  /help               this list
  /quit               leave (also Ctrl-D)
anything else is a prompt; a line typed while a turn runs is queued for the next turn
keys: Up/Down history, Ctrl-R search, Esc Enter (Alt+Enter) new line, Ctrl-C clears the line
or cancels a running turn"""
_DELAY = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:s|sec|m|min|h|hr|d|w)", re.ASCII)
_CLOCK = re.compile(r"[0-9]{1,2}(?::[0-9]{2}(?:[ap]m)?|[ap]m)|noon|midnight", re.ASCII)
INTERRUPT_HINT = "(Ctrl-C again, Ctrl-D or /quit leaves; reminders fire only while chat is open)"


@dataclass(frozen=True, slots=True)
class ChatOptions:
    """What ``turnlog chat`` was asked for: ``session_id`` (``--session``), ``continue_latest``
    (``--continue``), the model ``setup`` for the banner and hints, ``utc`` (``--utc``)."""

    session_id: str | None = None
    continue_latest: bool = False
    setup: ModelSetup | None = None
    utc: bool = False


# --- pure helpers --------------------------------------------------------------------------------


def remind_text(argument: str) -> str:
    """The prompt ``/remind ARGUMENT`` sends: a sentence any model reads, and the scripted model's
    phrases understand (host §6.3): ``/remind 10m stretch`` → ``remind me in 10m to stretch``,
    ``/remind 18:30 call mom`` → ``remind me to call mom at 18:30``, anything else →
    ``remind me <argument>``."""
    words = argument.split()
    first = words[0].lower() if words else ""
    rest = " ".join(words[1:])
    if rest and _DELAY.fullmatch(first):
        return f"remind me in {words[0]} to {rest}"
    if rest and _CLOCK.fullmatch(first):
        return f"remind me to {rest} at {words[0]}"
    if first in ("today", "tonight", "tomorrow") and len(words) > 2 and _CLOCK.fullmatch(words[1].lower()):
        return f"remind me to {' '.join(words[2:])} {words[0]} at {words[1]}"
    return f"remind me {argument.strip()}"


def delete_text(argument: str) -> str:
    """The prompt ``/delete ARGUMENT`` sends: ``delete reminder <id>``, ``cancel all reminders``
    or ``delete the <words> reminder``."""
    argument = argument.strip()
    if argument.lower() == "all":
        return "cancel all reminders"
    if len(argument.split()) == 1 and argument.lower().startswith("schedule-"):
        return f"delete reminder {argument}"
    return f"delete the {argument} reminder"


def banner_lines(summary: Summary, *, created: bool, zone: Zone, now_ms: int) -> list[str]:
    """What the session holds, for a person starting chat: created or resumed, turns, active
    reminders and the next one due."""
    if created:
        return ["new session"]
    parts = [f"{summary.turns} turn{'s' if summary.turns != 1 else ''}"]
    count = len(summary.active)
    parts.append(f"{count} active reminder{'s' if count != 1 else ''}")
    line = "resumed: " + ", ".join(parts)
    due = summary.next_due
    if due is not None:
        line += f"; next: {due.prompt!r} at {when(schedule.parse_instant(due.scheduled_at), zone, now_ms)}"
    return [line]


# --- admission -----------------------------------------------------------------------------------


def local_zone() -> str | None:
    """This prompt's ``clientTimeZone``: the process zone by rules 1-3 of time-context §8.2, or
    ``None`` (never a default)."""
    return timecontext.sampled_zone(os.environ, "/etc/localtime", schedule.canonicalize_time_zone)


async def admit_text(host: Host, session_id: str, text: str, *, mode: str = "queue") -> str:
    """Admit one typed prompt as any front door does: a fresh rpcId and the sampled local zone."""
    zone = local_zone()
    extra: dict[str, Any] = {} if zone is None else {"client_time_zone": zone}
    return await host.admit(
        session_id,
        [{"type": "text", "text": text}],
        rpc_id=str(uuid.uuid4()),
        mode=mode,  # type: ignore[arg-type]
        **extra,
    )


# --- the session loop ----------------------------------------------------------------------------


class _Held:
    """A host observer that holds notifications back until :meth:`release`, then passes them on
    in order, and every later one directly."""

    def __init__(self) -> None:
        self._held: list[Notification] = []
        self._target: Callable[[Notification], None] | None = None

    def __call__(self, value: Notification) -> None:
        if self._target is None:
            self._held.append(value)
        else:
            self._target(value)

    def first_seq(self, session_id: str) -> int | None:
        """The seq of the first held event of ``session_id``: where the file on disk ended."""
        for value in self._held:
            if isinstance(value, EventAppended) and value.session_id == session_id:
                return value.event.seq
        return None

    def release(self, target: Callable[[Notification], None]) -> None:
        held, self._held = self._held, []
        for value in held:
            target(value)
        self._target = target


class _Chat:
    """One chat run: input, signals, the commands."""

    def __init__(
        self,
        host: Host,
        live: LiveSession,
        display: Display,
        *,
        options: ChatOptions,
        zone: Zone,
        now_ms: Callable[[], int],
        echo: bool,
    ) -> None:
        self.host = host
        self.live = live
        self.display = display
        self.options = options
        self.zone = zone
        self.now_ms = now_ms
        self.echo = echo  # piped input: show each prompt as "> <line>"
        self.exit_code = 0
        self.done = trio.Event()
        self._interrupted_at: float | None = None

    def finish(self, code: int) -> None:
        if not self.done.is_set():
            self.exit_code = code
            self.done.set()

    # --- piped input ----------------------------------------------------------------------------

    async def read_lines(self) -> None:
        """One prompt per stdin line (worker-thread reads), each run to idle before the next."""
        pending = b""
        while True:
            data = await trio.to_thread.run_sync(os.read, STDIN_FD, 65536, abandon_on_cancel=True)
            if not data:
                break
            pending += data
            while b"\n" in pending:
                raw, pending = pending.split(b"\n", 1)
                if await self.handle(raw.decode("utf-8", "replace").strip()):
                    return
        if pending.strip() and await self.handle(pending.decode("utf-8", "replace").strip()):
            return
        await self.live.agent.when_idle()
        self.finish(0)

    # --- terminal input -------------------------------------------------------------------------

    async def read_terminal(self, editor: LineEditor) -> None:
        """Lines from the line editor until Ctrl-D, ``/quit`` or a quitting Ctrl-C."""
        while True:
            try:
                text = await trio.to_thread.run_sync(editor.read, abandon_on_cancel=True)
            except KeyboardInterrupt:
                self.interrupted()
                continue
            except EOFError:
                break
            self._interrupted_at = None
            if await self.handle(text.strip()):
                return
        if self.live.agent.status == "running":
            self.display.notice("waiting for the running turn to end (Ctrl-C cancels it)")
            await self.live.agent.when_idle()
        self.finish(0)

    def interrupted(self) -> None:
        """Ctrl-C on an empty line: cancel a running turn, else explain, else (twice) quit."""
        if self.live.agent.status == "running":
            self.live.agent.cancel("user")
            self._interrupted_at = None
            return
        now = time.monotonic()
        if self._interrupted_at is not None and now - self._interrupted_at <= QUIT_AGAIN_S:
            self.finish(EXIT_SIGINT)
            return
        self._interrupted_at = now
        self.display.notice(INTERRUPT_HINT)

    async def watch_signals(self, signals: AsyncIterator[int]) -> None:
        async for _ in signals:
            if self.live.agent.status == "running":
                self.live.agent.cancel("user")
            else:
                self.finish(EXIT_SIGINT)

    async def tick(self, display: TerminalDisplay) -> None:
        while True:
            await trio.sleep(1)
            display.tick()

    # --- lines and commands ---------------------------------------------------------------------

    async def handle(self, line: str) -> bool:
        """Act on one line; True when the chat should end."""
        if not line:
            return False
        if self.echo:
            self.display.line(PROMPT + line, local_times=False)
        if line.startswith("/"):
            return await self.command(line)
        await self.send(line, mode="queue")
        return False

    async def command(self, line: str) -> bool:
        name, _, argument = line.partition(" ")
        argument = argument.strip()
        if name == "/quit":
            self.finish(0)
            return True
        if name == "/help":
            self.display.line(HELP, local_times=False)
        elif name == "/session":
            self.display.line(f"session: {self.live.id}\nlog: {self.live.session.path}", local_times=False)
        elif name == "/model":
            setup = self.options.setup
            self.display.line(
                setup.banner() if setup else f"model: {self.host.route.model}", local_times=False
            )
        elif name == "/reminders":
            active = schedule.fold(self.live.session.events, self.live.session.seed_length).active
            self.display.line("\n".join(reminder_lines(active, self.zone, self.now_ms())), local_times=False)
        elif name in ("/steer", "/remind", "/delete"):
            if not argument:
                usage = {"/steer": "TEXT", "/remind": "WHEN WHAT", "/delete": "ID|WORDS|all"}[name]
                self.display.line(f"usage: {name} {usage}", local_times=False)
            elif name == "/steer":
                await self.send(argument, mode="steer")
            else:
                await self.send(
                    remind_text(argument) if name == "/remind" else delete_text(argument), mode="queue"
                )
        else:
            near = difflib.get_close_matches(name, COMMANDS, n=1)
            hint = f"did you mean {near[0]}? " if near else ""
            self.display.line(f"unknown command {name}; {hint}/help lists the commands", local_times=False)
        return False

    async def send(self, text: str, *, mode: str) -> None:
        try:
            await admit_text(self.host, self.live.id, text, mode=mode)
        except HostError as exc:
            self.display.line(f"! {exc.code}: {exc.message}", "red", local_times=False)
            return
        if self.echo:
            await self.live.agent.when_idle()


def _interactive() -> bool:
    try:
        return os.isatty(STDIN_FD) and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


async def run_chat(
    config: HostConfig,
    adapters: Adapters,
    options: ChatOptions,
    *,
    environ: Mapping[str, str] = os.environ,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Run the chat until ``/quit``, Ctrl-D, end of input (0) or a quitting Ctrl-C (130); 1 when
    the session cannot be opened or flushed, when the person declines to create a mistyped
    session, or when a piped turn failed; 2 for an invalid ``--session``."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    if options.session_id is not None:
        try:
            check_session_id(options.session_id)
        except HostError:
            err.write(
                f"turnlog: invalid session id {options.session_id!r}: use 1-128 characters from "
                "[A-Za-z0-9._-], starting with a letter or digit\n"
            )
            return 2
    interactive = _interactive()
    # Ctrl-C is ours from here on: queued until the watcher runs, never a KeyboardInterrupt.
    with trio.open_signal_receiver(signal.SIGINT) as signals:
        if not interactive:
            return await _chat_session(config, adapters, options, signals, None, environ, out, err)
        with guarded_output() as real_out:
            root = Path(config.root)
            editor = LineEditor(history=history_path(root, environ), commands=COMMANDS, out=real_out)
            try:
                return await _chat_session(config, adapters, options, signals, editor, environ, real_out, err)
            finally:
                await trio.to_thread.run_sync(editor.close)


_BUSY_HINT = (
    " by another turnlog (turnlog ls marks it open): close it there first, or start a new session with "
    "turnlog chat"
)


def _is_busy(exc: Exception) -> bool:
    return isinstance(exc, HostError) and exc.code == "session-busy"


async def _choose_session(
    host: Host, options: ChatOptions, editor: LineEditor | None, err: TextIO
) -> str | None:
    """The session id to open, or ``None`` when the person declined to create a mistyped one."""
    if options.continue_latest:
        chosen = latest(await host.store.list())
        if chosen is not None:
            return chosen.id
        err.write(f"turnlog: no sessions in {host.root} yet: starting a new one\n")
    if options.session_id is None:
        return f"session-{uuid.uuid4().hex}"
    sid = options.session_id
    if editor is None or await host.store.find(sid) is not None:
        return sid
    known = [info.id for info in await host.store.list()]
    near = suggestions(sid, known)
    question = f'session "{sid}" does not exist in {host.root}'
    question += f" (did you mean {' or '.join(near)}?)" if near else ""
    if await trio.to_thread.run_sync(editor.confirm, question + ". Create it?"):
        return sid
    err.write("turnlog: nothing created; turnlog ls lists the sessions\n")
    return None


async def _chat_session(
    config: HostConfig,
    adapters: Adapters,
    options: ChatOptions,
    signals: AsyncIterator[int],
    editor: LineEditor | None,
    environ: Mapping[str, str],
    out: TextIO,
    err: TextIO,
) -> int:
    clock = SystemClock()
    zone = user_zone(environ, utc=options.utc)
    setup = options.setup
    async with open_host(config, adapters=adapters) as host:
        sid = await _choose_session(host, options, editor, err)
        if sid is None:
            return 1
        existed = await host.store.find(sid) is not None
        # A resumed session may start at once (a queued prompt, an overdue reminder): hold that
        # back until the start-up lines are out, so the recent messages are the file's and the
        # display misses nothing.
        held = _Held()
        host.subscribe(held)
        try:
            live = await host.session(sid)
        except (HostError, EventLogError) as exc:
            err.write(f"turnlog: {exc}{_BUSY_HINT if _is_busy(exc) else ''}\n")
            return 1
        display: Display
        if editor is None:
            display = PipedDisplay(sid, out, err, setup)
        else:
            display = TerminalDisplay(
                sid, editor, style=style_for(out, environ), zone=zone, now_ms=clock.now_ms, setup=setup
            )
        # The live session's path: in a dsh root a new session's directory follows its cwd.
        display.line(f"session: {sid}\nlog: {live.session.path}", local_times=False)
        if editor is not None:
            summary = summarize(live.session.header, live.session.events)
            for line in banner_lines(summary, created=not existed, zone=zone, now_ms=clock.now_ms()):
                display.line(line, local_times=False)
        _model_banner(display, setup, interactive=editor is not None)
        if existed:  # the last five messages a transcript shows (time readings show nothing)
            on_disk = live.session.events[: held.first_seq(sid)]
            shown = [(event, lines) for event in on_disk if (lines := transcript_lines(event))]
            for event, lines in shown[-RECENT_MESSAGES:]:
                for line in lines:
                    # a reply's instants get their local time as they did live; calls stay verbatim
                    reply = event.type == "assistant/message" and not line.startswith(TOOL_MARK)
                    display.line(line, local_times=reply)
        if editor is not None:
            display.line("type /help for commands", "dim", local_times=False)
        held.release(display)
        chat = _Chat(
            host, live, display, options=options, zone=zone, now_ms=clock.now_ms, echo=editor is None
        )
        async with trio.open_nursery() as nursery:
            if editor is None:
                nursery.start_soon(chat.read_lines)
            else:
                nursery.start_soon(chat.read_terminal, editor)
                assert isinstance(display, TerminalDisplay)
                nursery.start_soon(chat.tick, display)
            nursery.start_soon(chat.watch_signals, signals)
            await chat.done.wait()
            if editor is not None:
                await trio.to_thread.run_sync(editor.close)
            nursery.cancel_scope.cancel()
        report = await host.shutdown()
    out.write(EXIT_LINE.format(id=sid) + "\n")
    out.flush()
    err.writelines(
        f'turnlog: session "{failed_id}" could not be flushed: {message}\n'
        for failed_id, message in report.failed.items()
    )
    if report.failed:
        return 1
    if editor is None and chat.exit_code == 0 and display.failed_turns:
        return 1
    return chat.exit_code


def _model_banner(display: Display, setup: ModelSetup | None, *, interactive: bool) -> None:
    """Which model answers, and a missing key before the first prompt: on a terminal as banner
    lines; piped, on stderr and only for a remote model (the offline one says nothing there)."""
    if setup is None:
        return
    warning = setup.key_warning()
    if interactive:
        display.line(setup.banner(), "dim", local_times=False)
    elif setup.endpoint.adapter != "scripted":
        display.notice(setup.banner())
    if warning is not None:
        display.hint(warning)
