"""``turnlog chat``: an interactive terminal assistant over an in-process host (host §7.2).

The pure part renders what a person sees: tool calls (``· <name> <arguments>``), tool results
(``· → <text>``), a turn that ended badly (``! <code>: <message>`` or ``! cancelled``) and reminder
notices (``⏰ reminder: <prompt>``, ``⏰ <n> reminders``). :class:`Display` is the host observer
that prints them as they happen, streaming assistant text from live deltas and keeping the
``> `` prompt marker on its own line when a reminder arrives while the user types.
:func:`run_chat` reads stdin without blocking trio (a worker thread per read) and handles the
slash commands, Ctrl-C and Ctrl-D.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import trio

import schedule
import timecontext
from eventlog import Event, EventLogError
from host._process import EXIT_SIGINT
from host.models import BlockEnd, Chunk, TextDelta
from host.runtime import (
    Adapters,
    Delta,
    EventAppended,
    Host,
    HostConfig,
    HostError,
    LiveSession,
    Notification,
    StatusChanged,
    check_session_id,
    open_host,
)

PROMPT = "> "
STDIN_FD = 0
SCHEDULE_SOURCE = {"kind": "plugin", "plugin": "schedule"}
RECENT_MESSAGES = 5
EXIT_LINE = "reminders fire only while the session is open; continue with: turnlog chat --session {id}"
HELP = """\
commands:
  /steer TEXT   add TEXT to the running turn at its next step
  /reminders    list the active reminders of this session
  /session      print the session id and its log file
  /help         this list
  /quit         leave (also Ctrl-D); Ctrl-C cancels a running turn, or leaves when idle
anything else is a prompt; a line typed while a turn runs is queued for the next turn"""


# --- rendering (pure) ----------------------------------------------------------------------------


def text_of(content: Sequence[Mapping[str, Any]]) -> str:
    """The text blocks of a content list, joined."""
    return "".join(block.get("text", "") for block in content if block.get("type") == "text")


def tool_call_line(name: str, arguments: str) -> str:
    return f"· {name} {arguments}"


def tool_result_line(message: Mapping[str, Any]) -> str:
    """``· → <text>`` for a ``tool/result`` message (its tool-result block's text)."""
    blocks = message.get("content") or ()
    inner = blocks[0].get("content", ()) if blocks else ()
    return f"· → {text_of(inner)}"


def turn_end_line(reason: Mapping[str, Any]) -> str | None:
    """``! <code>: <message>`` for an error, ``! cancelled`` for an abort, else nothing."""
    kind = reason.get("kind")
    if kind == "error":
        error = reason.get("error") or {}
        return f"! {error.get('code')}: {error.get('message')}"
    if kind == "aborted":
        return "! cancelled"
    return None


def _framed_value(text: str, key: str) -> Any:
    prefix = f"{key}: "
    for line in text.split("\n"):
        if line.startswith(prefix):
            try:
                return json.loads(line[len(prefix) :])
            except ValueError:
                return None
    return None


def reminder_notice(message: Mapping[str, Any]) -> str:
    """``⏰ reminder: <prompt>`` for one reminder, ``⏰ <n> reminders`` for a batch."""
    text = text_of(message.get("content") or ())
    batch = _framed_value(text, "reminders_json")
    if isinstance(batch, list):
        return f"⏰ {len(batch)} reminders"
    prompt = _framed_value(text, "reminder_prompt_json")
    return f"⏰ reminder: {prompt if isinstance(prompt, str) else text}"


def is_reminder(message: Mapping[str, Any]) -> bool:
    return message.get("source") == SCHEDULE_SOURCE


def reminders_inserted(event: Event) -> list[Mapping[str, Any]]:
    """The schedule follow-ups a splice inserts (empty for any other event)."""
    if event.type != "agent/inbox/spliced":
        return []
    return [message for message in event.value().get("inserted", ()) if is_reminder(message)]


def transcript_lines(event: Event) -> list[str]:
    """How a surface event reads in a transcript (the resumed session's recent messages, the
    demo): prompts as ``> <text>``, reminders, tool calls, results and replies. Time readings
    and other events give nothing."""
    data = event.value()
    if event.type == "user/message":
        if is_reminder(data):
            return [reminder_notice(data)]
        if (data.get("source") or {}).get("kind") != "user":  # time readings, among others
            return []
        return [PROMPT + text_of(data.get("content") or ())]
    if event.type == "assistant/message":
        content = data["message"].get("content") or ()
        lines = [tool_call_line(b["name"], b["arguments"]) for b in content if b.get("type") == "tool-call"]
        text = text_of(content)
        return ([text] if text else []) + lines
    if event.type == "tool/result":
        return [tool_result_line(data["message"])]
    return []


def reminder_lines(live: LiveSession) -> list[str]:
    """``/reminders``: the active reminders from schedule's fold of the session."""
    active = schedule.fold(live.session.events, live.session.seed_length).active
    if not active:
        return ["no active reminders"]
    lines = []
    for record in active:
        every = f" (every {record.every_seconds} s)" if isinstance(record, schedule.EveryRecord) else ""
        lines.append(f"{record.id}  {record.scheduled_at}{every}  {record.prompt}")
    return lines


# --- the display ---------------------------------------------------------------------------------


class Display:
    """Prints one session's activity as it happens (a :meth:`Host.subscribe` observer).

    ``interactive`` shows the ``> `` marker whenever the session becomes idle and again after a
    reminder notice. Output that arrives while the marker is shown starts on a fresh line, so a
    line the user is typing is never overwritten.
    """

    def __init__(self, session_id: str, out: TextIO, *, interactive: bool) -> None:
        self.session_id = session_id
        self.out = out
        self.interactive = interactive
        self._at_prompt = False  # the marker (and maybe typed text) ends the screen's last line
        self._mid_line = False  # streamed text without its newline yet
        self._streamed = False  # this step's text was shown from deltas

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def _fresh_line(self) -> None:
        if self._at_prompt or self._mid_line:
            self._write("\n")
        self._at_prompt = self._mid_line = False

    def line(self, text: str) -> None:
        """Print ``text`` on its own line."""
        self._fresh_line()
        self._write(text + "\n")

    def prompt(self) -> None:
        """Show the ``> `` marker (interactive only)."""
        if self.interactive and not self._at_prompt:
            self._fresh_line()
            self._write(PROMPT)
            self._at_prompt = True

    def user_entered(self) -> None:
        """The user pressed Enter: the terminal moved to a new line."""
        self._at_prompt = False

    def __call__(self, value: Notification) -> None:
        if isinstance(value, Delta):
            if value.session_id == self.session_id:
                self._delta(value.chunk)
        elif isinstance(value, EventAppended):
            if value.session_id == self.session_id:
                self._event(value.event)
        elif (
            isinstance(value, StatusChanged)
            and value.session_id == self.session_id
            and value.status == "idle"
        ):
            self.prompt()

    def _delta(self, chunk: Chunk) -> None:
        if isinstance(chunk, TextDelta) and chunk.text:
            if not self._mid_line:
                self._fresh_line()
            self._write(chunk.text)
            self._mid_line = self._streamed = True
        elif isinstance(chunk, BlockEnd) and self._mid_line:
            self._write("\n")
            self._mid_line = False

    def _event(self, event: Event) -> None:
        kind = event.type
        if kind == "agent/inbox/spliced":
            reminders = reminders_inserted(event)
            if len(reminders) == 1:
                self.line(reminder_notice(reminders[0]))
            elif reminders:
                self.line(f"⏰ {len(reminders)} reminders")
            if reminders:
                self.prompt()
        elif kind == "step/start":
            self._streamed = False
        elif kind == "assistant/message" and not self._streamed:
            text = text_of(event.value()["message"].get("content") or ())
            if text:
                self.line(text)
        elif kind == "tool/call":
            data = event.value()
            self.line(tool_call_line(data["name"], data["arguments"]))
        elif kind == "tool/result":
            self.line(tool_result_line(event.value()["message"]))
        elif kind == "turn/end":
            notice = turn_end_line(event.value()["reason"])
            if notice is not None:
                self.line(notice)


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


class _Chat:
    """One chat run: the reader, the signal watcher and the commands."""

    def __init__(self, host: Host, live: LiveSession, display: Display, *, interactive: bool) -> None:
        self.host = host
        self.live = live
        self.display = display
        self.interactive = interactive
        self.exit_code = 0
        self.done = trio.Event()

    def finish(self, code: int) -> None:
        if not self.done.is_set():
            self.exit_code = code
            self.done.set()

    async def read_lines(self) -> None:
        """One line at a time from stdin (worker-thread reads; the terminal edits the line)."""
        pending = b""
        while True:
            data = await trio.to_thread.run_sync(os.read, STDIN_FD, 65536, abandon_on_cancel=True)
            if not data:
                break
            pending += data
            while b"\n" in pending:
                raw, pending = pending.split(b"\n", 1)
                self.display.user_entered()
                if await self.handle(raw.decode("utf-8", "replace").strip()):
                    return
        if pending.strip() and await self.handle(pending.decode("utf-8", "replace").strip()):
            return
        await self.live.agent.when_idle()
        # Ctrl-D leaves the cursor after the "> " marker: what follows starts a fresh line.
        self.finish(0)

    async def watch_signals(self, signals: AsyncIterator[int]) -> None:
        async for _ in signals:
            if self.live.agent.status == "running":
                self.live.agent.cancel("user")
            else:
                self.finish(EXIT_SIGINT)

    async def handle(self, line: str) -> bool:
        """Act on one line; True when the chat should end."""
        if not line:
            self.display.prompt()
            return False
        if not self.interactive:
            self.display.line(PROMPT + line)
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
            self.display.line(HELP)
        elif name == "/session":
            self.display.line(f"session: {self.live.id}\nlog: {self.live.session.path}")
        elif name == "/reminders":
            self.display.line("\n".join(reminder_lines(self.live)))
        elif name == "/steer":
            if argument:
                await self.send(argument, mode="steer")
                return False
            self.display.line("usage: /steer TEXT")
        else:
            self.display.line(f"unknown command {name}; /help lists the commands")
        self.display.prompt()
        return False

    async def send(self, text: str, *, mode: str) -> None:
        try:
            await admit_text(self.host, self.live.id, text, mode=mode)
        except HostError as exc:
            self.display.line(f"! {exc.code}: {exc.message}")
            self.display.prompt()
            return
        if not self.interactive:
            await self.live.agent.when_idle()


async def run_chat(
    config: HostConfig,
    adapters: Adapters,
    session_id: str | None,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Run the chat until ``/quit``, Ctrl-D, end of input (0) or Ctrl-C at an idle prompt (130);
    1 when the session cannot be opened or flushed, 2 for an invalid ``--session``."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    sid = session_id if session_id is not None else f"session-{uuid.uuid4().hex}"
    try:
        check_session_id(sid)
    except HostError:
        err.write(
            f"turnlog: invalid session id {sid!r}: use 1-128 characters from [A-Za-z0-9._-], "
            "starting with a letter or digit\n"
        )
        return 2
    interactive = os.isatty(STDIN_FD)
    # Ctrl-C is ours from here on: queued until the watcher runs, never a KeyboardInterrupt.
    with trio.open_signal_receiver(signal.SIGINT) as signals:
        return await _chat_session(config, adapters, sid, signals, interactive=interactive, out=out, err=err)


async def _chat_session(
    config: HostConfig,
    adapters: Adapters,
    sid: str,
    signals: AsyncIterator[int],
    *,
    interactive: bool,
    out: TextIO,
    err: TextIO,
) -> int:
    async with open_host(config, adapters=adapters) as host:
        path = Path(host.store.path(sid))
        existed = await trio.to_thread.run_sync(path.exists)
        # A resumed session may start at once (a queued prompt, an overdue reminder): hold that
        # back until the start-up lines are out, so the recent messages are the file's and the
        # display misses nothing.
        held = _Held()
        host.subscribe(held)
        try:
            live = await host.session(sid)
        except (HostError, EventLogError) as exc:
            err.write(f"turnlog: {exc}\n")
            return 1
        display = Display(sid, out, interactive=interactive)
        display.line(f"session: {sid}\nlog: {path}")
        if existed:  # the last five messages a transcript shows (time readings show nothing)
            on_disk = live.session.events[: held.first_seq(sid)]
            shown = [lines for event in on_disk if (lines := transcript_lines(event))]
            for lines in shown[-RECENT_MESSAGES:]:
                for line in lines:
                    display.line(line)
        if interactive:
            display.line("type /help for commands")
        held.release(display)
        chat = _Chat(host, live, display, interactive=interactive)
        display.prompt()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(chat.read_lines)
            nursery.start_soon(chat.watch_signals, signals)
            await chat.done.wait()
            nursery.cancel_scope.cancel()
        report = await host.shutdown()
    display.line(EXIT_LINE.format(id=sid))
    err.writelines(
        f'turnlog: session "{failed_id}" could not be flushed: {message}\n'
        for failed_id, message in report.failed.items()
    )
    if report.failed:
        return 1
    return chat.exit_code
