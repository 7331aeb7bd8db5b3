"""What ``turnlog chat`` shows (host §7.2 "Display"), as pure renderings and two displays.

The renderings: tool calls (``· <name> <arguments>``), tool results (``· → <text>``), a turn that
ended badly (``! <code>: <message>``, ``! cancelled``), reminder notices (``⏰ reminder: <prompt>``,
``⏰ <n> reminders``), ``/reminders`` lines in the user's zone, the retry progress line
(``retrying in 4 s (2/5): connection refused``) and the recent messages of a resumed session.

A display is the host observer of one session. :class:`PipedDisplay` writes what a pipe or a file
gets, exactly as host §7.2 describes it (streamed text as it comes, no colour, diagnostics on
stderr). :class:`TerminalDisplay` prints above chat's line editor: each finished line once, with
local times after the UTC instants replies show (``(09:18 in Asia/Shanghai, in 5 min)``), colour,
the line still streaming shown in place, and a waiting indicator while the model is silent.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TextIO

import schedule
from eventlog import Event
from host.models import BlockEnd, TextDelta
from host.runtime import Delta, EventAppended, Notification, StatusChanged

from ._modelsetup import ModelSetup
from ._style import Style
from ._when import Zone, annotate, span, when

PROMPT = "> "
SCHEDULE_SOURCE = {"kind": "plugin", "plugin": "schedule"}
WAITING_AFTER_S = 2  # silence before the waiting indicator shows the seconds


# --- rendering (pure) ----------------------------------------------------------------------------


def text_of(content: Sequence[Mapping[str, Any]]) -> str:
    """The text blocks of a content list, joined."""
    return "".join(block.get("text", "") for block in content if block.get("type") == "text")


TOOL_MARK = "· "  # the start of a tool call's and a tool result's line


def tool_call_line(name: str, arguments: str) -> str:
    return f"{TOOL_MARK}{name} {arguments}"


def tool_result_line(message: Mapping[str, Any]) -> str:
    """``· → <text>`` for a ``tool/result`` message (its tool-result block's text)."""
    blocks = message.get("content") or ()
    inner = blocks[0].get("content", ()) if blocks else ()
    return f"{TOOL_MARK}→ {text_of(inner)}"


def turn_end_line(reason: Mapping[str, Any]) -> str | None:
    """``! <code>: <message>`` for an error, ``! cancelled`` for an abort, else nothing."""
    kind = reason.get("kind")
    if kind == "error":
        error = reason.get("error") or {}
        return f"! {error.get('code')}: {error.get('message')}"
    if kind == "aborted":
        return "! cancelled"
    return None


def framed_value(text: str, key: str) -> Any:
    """The JSON value of a reminder framing's ``<key>: `` line (schedule §11.4), or ``None``."""
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
    batch = framed_value(text, "reminders_json")
    if isinstance(batch, list):
        return f"⏰ {len(batch)} reminders"
    prompt = framed_value(text, "reminder_prompt_json")
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


def reminder_lines(
    active: Iterable[schedule.AfterRecord | schedule.AtRecord | schedule.EveryRecord], zone: Zone, now_ms: int
) -> list[str]:
    """``/reminders``: ``<id>  <local time> (<in …>)[, every <span>]  <prompt>`` per active
    reminder, in creation order."""
    lines = []
    for record in active:
        due = when(schedule.parse_instant(record.scheduled_at), zone, now_ms)
        every = (
            f", every {span(record.every_seconds * 1000)}" if isinstance(record, schedule.EveryRecord) else ""
        )
        lines.append(f"{record.id}  {due}{every}  {record.prompt}")
    return lines or ["no active reminders"]


def retry_line(data: Mapping[str, Any]) -> str:
    """``retrying in 4 s (2/5): <what failed>`` for an ``llm/retry`` event's data (host §3.6)."""
    delay_ms = int(data.get("delayMs", 0))
    delay = (
        f"{delay_ms / 1000:.1f}".rstrip("0").rstrip(".") if delay_ms < 10_000 else str(round(delay_ms / 1000))
    )
    failure = data.get("failure") or {}
    message = str(failure.get("message", ""))
    if failure.get("code") == "TRANSPORT" and " failed: " in message:
        message = message.split(" failed: ", 1)[1]  # the base URL is in the banner already
    elif failure.get("code"):
        message = f"{failure.get('code')}: {message}"
    return f"retrying in {delay} s ({data.get('retry')}/{data.get('maxRetries')}): {message}"


# --- the displays --------------------------------------------------------------------------------


class _Screen(Protocol):
    """Where a terminal display's output goes: chat's line editor."""

    def print_above(self, text: str, *, live: str | None = None) -> None: ...

    def set_live(self, text: str) -> None: ...


class Display(abc.ABC):
    """Maps one session's notifications to what a person reads (a :meth:`Host.subscribe`
    observer). Subclasses say how lines, streamed text and diagnostics reach the screen.
    ``failed_turns`` counts the turns that ended with an error."""

    def __init__(self, session_id: str, setup: ModelSetup | None = None) -> None:
        self.session_id = session_id
        self.setup = setup
        self.failed_turns = 0
        self._streamed = False  # this step's text was shown from deltas

    @abc.abstractmethod
    def line(self, text: str, *styles: str, local_times: bool = True) -> None:
        """Print ``text`` on its own line(s); ``local_times`` allows a note after UTC instants."""

    @abc.abstractmethod
    def notice(self, text: str) -> None:
        """A diagnostic: retry progress, advice after a failure."""

    def hint(self, text: str) -> None:
        """Advice: what to set or check after a failure, or before the first prompt."""
        self.notice(text)

    def reminder(self, message: Mapping[str, Any]) -> str:
        """The notice for one inserted reminder message (host §7.2: ``⏰ reminder: <prompt>``,
        ``⏰ <n> reminders`` for a batch)."""
        return reminder_notice(message)

    @abc.abstractmethod
    def stream(self, text: str) -> None:
        """Streamed assistant text, as it arrives."""

    @abc.abstractmethod
    def stream_end(self) -> None:
        """The streamed block ended."""

    def step_started(self) -> None:
        """A model step begins (the terminal shows that it is waiting)."""

    def turn_ended(self) -> None:
        """The running turn ended."""

    def idle(self) -> None:
        """The session became idle."""

    def __call__(self, value: Notification) -> None:
        if getattr(value, "session_id", None) != self.session_id:
            return
        if isinstance(value, Delta):
            if isinstance(value.chunk, TextDelta) and value.chunk.text:
                self.stream(value.chunk.text)
                self._streamed = True
            elif isinstance(value.chunk, BlockEnd):
                self.stream_end()
        elif isinstance(value, EventAppended):
            self._event(value.event)
        elif isinstance(value, StatusChanged) and value.status == "idle":
            self.idle()

    def _event(self, event: Event) -> None:
        kind = event.type
        if kind == "agent/inbox/spliced":
            reminders = reminders_inserted(event)
            if len(reminders) == 1:
                self.line(self.reminder(reminders[0]), "yellow", "bold")
            elif reminders:
                self.line(f"⏰ {len(reminders)} reminders", "yellow", "bold")
        elif kind == "step/start":
            self._streamed = False
            self.step_started()
        elif kind == "assistant/message" and not self._streamed:
            text = text_of(event.value()["message"].get("content") or ())
            if text:
                self.line(text)
        elif kind == "tool/call":
            data = event.value()
            self.line(tool_call_line(data["name"], data["arguments"]), "dim", local_times=False)
        elif kind == "tool/result":
            self.line(tool_result_line(event.value()["message"]), "dim", local_times=False)
        elif kind == "llm/retry":
            self.notice(retry_line(event.value()))
        elif kind == "turn/end":
            self.turn_ended()
            reason = event.value()["reason"]
            notice = turn_end_line(reason)
            if notice is not None:
                self.line(notice, "red")
            if reason.get("kind") == "error":
                self.failed_turns += 1
                error = reason.get("error") or {}
                hint = (
                    self.setup.failure_hint(str(error.get("code")), str(error.get("message")))
                    if self.setup
                    else None
                )
                if hint is not None:
                    self.hint(hint)


class PipedDisplay(Display):
    """host §7.2's display for a stdin that is not a terminal: lines and streamed text on ``out``
    exactly as they come, diagnostics as lines on ``err``."""

    def __init__(self, session_id: str, out: TextIO, err: TextIO, setup: ModelSetup | None = None) -> None:
        super().__init__(session_id, setup)
        self.out = out
        self.err = err
        self._mid_line = False  # streamed text without its newline yet

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def line(self, text: str, *styles: str, local_times: bool = True) -> None:
        if self._mid_line:
            self._write("\n")
            self._mid_line = False
        self._write(text + "\n")

    def notice(self, text: str) -> None:
        self.err.write(text + "\n")
        self.err.flush()

    def hint(self, text: str) -> None:
        self.notice(f"turnlog: {text}")

    def stream(self, text: str) -> None:
        self._write(text)
        self._mid_line = True

    def stream_end(self) -> None:
        if self._mid_line:
            self._write("\n")
            self._mid_line = False


class TerminalDisplay(Display):
    """The display above chat's line editor: finished lines are printed once (assistant text
    with a local time after each UTC instant), the line still streaming grows in the editor's
    live area, and while the model is silent the live area shows ``…`` (with the seconds after
    a moment, see :meth:`tick`)."""

    def __init__(
        self,
        session_id: str,
        screen: _Screen,
        *,
        style: Style,
        zone: Zone,
        now_ms: Callable[[], int],
        setup: ModelSetup | None = None,
    ) -> None:
        super().__init__(session_id, setup)
        self.screen = screen
        self.style = style
        self.zone = zone
        self.now_ms = now_ms
        self._partial = ""  # streamed text of the current line
        self._waiting_since: int | None = None  # ms, while a step waits for its first text

    def _live(self) -> str:
        if self._partial:
            return self._partial
        if self._waiting_since is None:
            return ""
        waited = (self.now_ms() - self._waiting_since) // 1000
        return self.style.dim(f"… {waited} s" if waited >= WAITING_AFTER_S else "…")

    def line(self, text: str, *styles: str, local_times: bool = True) -> None:
        shown = annotate(text, self.zone, self.now_ms()) if local_times else text
        self.screen.print_above(self.style.apply(shown, *styles) + "\n", live=self._live())

    def notice(self, text: str) -> None:
        self.screen.print_above(self.style.dim(text) + "\n", live=self._live())

    def stream(self, text: str) -> None:
        self._waiting_since = None
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        if lines:
            finished = "".join(annotate(line, self.zone, self.now_ms()) + "\n" for line in lines)
            self.screen.print_above(finished, live=self._partial)
        else:
            self.screen.set_live(self._partial)

    def stream_end(self) -> None:
        if self._partial:
            rest, self._partial = self._partial, ""
            self.screen.print_above(annotate(rest, self.zone, self.now_ms()) + "\n", live=self._live())

    def reminder(self, message: Mapping[str, Any]) -> str:
        """A batch names its prompts: ``⏰ reminder: <p>`` for one, ``⏰ 2 reminders: <p1>; <p2>``."""
        batch = framed_value(text_of(message.get("content") or ()), "reminders_json")
        if not isinstance(batch, list):
            return reminder_notice(message)
        prompts = [str(item.get("reminder_prompt")) for item in batch if isinstance(item, dict)]
        if len(prompts) == 1:
            return f"⏰ reminder: {prompts[0]}"
        return f"⏰ {len(prompts)} reminders: {'; '.join(prompts)}"

    def step_started(self) -> None:
        self._waiting_since = self.now_ms()
        self.screen.set_live(self._live())

    def turn_ended(self) -> None:
        self._waiting_since = None
        if not self._partial:
            self.screen.set_live("")

    def tick(self) -> None:
        """Refresh the waiting indicator (chat calls this about once a second)."""
        if self._waiting_since is not None and not self._partial:
            self.screen.set_live(self._live())
