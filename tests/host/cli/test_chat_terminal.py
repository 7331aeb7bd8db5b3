"""``turnlog chat`` on a terminal (host §7.2 "Input"), through a real pseudo-terminal: arrow keys and
a history that persists, bracketed paste, an explicit multi-line mode, a reminder arriving while a
line is half typed, Ctrl-C on a typed line, on an empty one and during a turn, Ctrl-D, and the
question before a mistyped session is created. Every test checks the screen and the log."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from eventlog import read_log
from tests.host.cli.terminal_support import (
    CTRL_C,
    CTRL_D,
    ENTER,
    ESC_ENTER,
    LEFT,
    UP,
    Terminal,
    file_mode,
    history_file,
    paste,
)

EXIT_LINE = "reminders fire only while the session is open; continue with: turnlog chat --session {id}"
READY = "type /help for commands"


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    """Every terminal a test opens is killed at its end if chat is still running."""
    opened: list[Terminal] = []
    yield opened
    for term in opened:
        term.kill()


def start(terminals: list[Terminal], tmp_path: Path, *args: str, **kw: object) -> Terminal:
    term = Terminal(["--root", str(tmp_path / "root"), *args], tmp_path, **kw)  # type: ignore[arg-type]
    terminals.append(term)
    return term


def prompts(tmp_path: Path, session_id: str) -> list[str]:
    """The texts of the user's prompts in the log."""
    return [
        "".join(block["text"] for block in e.value()["content"] if block["type"] == "text")
        for e in read_log(tmp_path / "root" / f"{session_id}.jsonl").events
        if e.type == "user/message" and e.value()["source"]["kind"] == "user"
    ]


def test_arrow_keys_edit_and_history_persists_across_runs(tmp_path: Path, terminals: list[Terminal]) -> None:
    term = start(terminals, tmp_path, "--session", "keys")
    term.wait_for("Create it?")
    term.type("y")
    term.wait_for(READY)
    term.type("first prompt" + ENTER)
    term.wait_for("You said: first prompt")
    term.type("helo" + LEFT + "l" + ENTER)  # the cursor moves inside the line; nothing is echoed raw
    term.wait_for("You said: hello")
    term.type(UP + UP)
    term.wait_for(lambda t: t.prompt_line() == "> first prompt")
    term.type(ENTER)
    term.wait_for(lambda t: t.text().count("You said: first prompt") == 2)
    term.type(CTRL_D)
    assert term.close() == 0
    assert prompts(tmp_path, "keys") == ["first prompt", "hello", "first prompt"]
    assert "^[" not in term.text() and "\x1b" not in "".join(prompts(tmp_path, "keys"))
    history = history_file(tmp_path)
    assert file_mode(history) == 0o600 and not history.is_relative_to(tmp_path / "root")

    again = start(terminals, tmp_path, "--session", "keys")  # a new process reads the same history
    again.wait_for(READY)
    again.wait_for("> hello")  # the recent messages of the resumed session
    again.type(UP)
    again.wait_for(lambda t: t.prompt_line() == "> first prompt")
    again.type(CTRL_C + CTRL_D)
    assert again.close() == 0
    assert prompts(tmp_path, "keys") == ["first prompt", "hello", "first prompt"]  # nothing more was sent


def test_a_paste_is_one_prompt_and_esc_enter_starts_a_new_line(tmp_path: Path, terminals: list[Terminal]) -> None:
    term = start(terminals, tmp_path, "--session", "paste", "--no-time-context")
    term.wait_for("Create it?")
    term.type("y")
    term.wait_for(READY)
    traceback = 'Traceback (most recent call last):\n  File "app.py", line 3, in <module>\n    main()\nValueError: boom'
    term.type(paste(traceback))
    term.settle()
    assert "You said" not in term.text()  # the newlines of a paste do not send it
    term.type(ENTER)
    term.wait_for("ValueError: boom\n>")
    long_line = "x" * 5000
    term.type(paste(long_line) + ENTER)
    term.wait_for(lambda t: len(prompts(tmp_path, "paste")) == 2 and "You said: xxx" in t.text())
    term.type("two" + ESC_ENTER + "lines" + ENTER)
    term.wait_for("You said: two\nlines")
    term.type(CTRL_D)
    assert term.close() == 0
    assert prompts(tmp_path, "paste") == [traceback, long_line, "two\nlines"]  # nothing cut at 4,095


def test_a_reminder_arrives_while_a_line_is_half_typed(tmp_path: Path, terminals: list[Terminal]) -> None:
    term = start(terminals, tmp_path, "--session", "tty")
    term.wait_for("Create it?")
    term.type("y")
    term.wait_for(READY)
    term.type("remind me in 1 second to stretch" + ENTER)
    term.wait_for("Reminder schedule-1 is set for ")
    # the chat display adds the local time next to the UTC instant of the model's reply
    assert re.search(r"Reminder schedule-1 is set for \S+Z \([0-9]{2}:[0-9]{2} in Asia/Shanghai, (now|in 1 s)\)\.",
                     term.text())
    term.type("half a lin")

    def reminded(t: Terminal) -> bool:
        lines = t.screen.lines()  # the reminder and its turn above, the typed line redrawn intact below
        return lines[-1:] == ["> half a lin"] and "⏰ reminder: stretch" in lines and "Reminder: stretch" in lines

    term.wait_for(reminded)
    lines = term.screen.lines()
    assert term.prompt_line() == "> half a lin"
    assert lines.index("⏰ reminder: stretch") < lines.index("Reminder: stretch")
    term.type("e" + ENTER)
    term.wait_for("You said: half a line")
    term.type(CTRL_D)
    assert term.close() == 0
    assert EXIT_LINE.format(id="tty") in term.text()
    assert prompts(tmp_path, "tty") == ["remind me in 1 second to stretch", "half a line"]
    snapshot = read_log(tmp_path / "root" / "tty.jsonl")
    assert snapshot.repair is None
    assert [e.value()["reason"]["kind"] for e in snapshot.events if e.type == "turn/end"] == ["completed"] * 3


def test_ctrl_c_clears_a_line_explains_on_an_empty_one_and_quits_when_pressed_again(
    tmp_path: Path, terminals: list[Terminal]
) -> None:
    term = start(terminals, tmp_path, "--session", "c", "--no-time-context")
    term.wait_for("Create it?")
    term.type("y")
    term.wait_for(READY)
    term.type("never sent")
    term.wait_for(lambda t: t.prompt_line() == "> never sent")
    term.type(CTRL_C)
    term.wait_for(lambda t: t.prompt_line() == ">")
    assert "Ctrl-C again" not in term.text()  # a typed line is only cleared
    term.type(CTRL_C)
    term.wait_for("(Ctrl-C again, Ctrl-D or /quit leaves; reminders fire only while chat is open)")
    term.type("still here" + ENTER)  # chat did not quit
    term.wait_for("You said: still here")
    term.type(CTRL_C)
    term.wait_for(lambda t: t.text().count("Ctrl-C again") == 2)
    term.type(CTRL_C)
    assert term.close() == 130
    assert EXIT_LINE.format(id="c") in term.text()
    assert prompts(tmp_path, "c") == ["still here"]
    assert read_log(tmp_path / "root" / "c.jsonl").repair is None


def test_ctrl_c_on_an_empty_line_cancels_a_running_turn(tmp_path: Path, terminals: list[Terminal]) -> None:
    script = tmp_path / "hang.jsonl"
    script.write_text('{"toolCalls":[{"name":"schedule_list","arguments":{}}]}\n{"hang":true}\n')
    term = start(terminals, tmp_path, "--session", "h", "--script", str(script), "--no-time-context")
    term.wait_for("Create it?")
    term.type("y")
    term.wait_for(READY)
    term.type("wait forever" + ENTER)
    term.wait_for("· → []")
    term.type("typed")
    term.wait_for(lambda t: t.prompt_line() == "> typed")
    term.type(CTRL_C)  # clears the line; the turn goes on
    term.wait_for(lambda t: t.prompt_line() == ">")
    term.type(CTRL_C)
    term.wait_for("! cancelled")
    term.type("/session" + ENTER)
    term.wait_for("session: h\nlog: ")
    term.type(CTRL_D)
    assert term.close() == 0
    events = read_log(tmp_path / "root" / "h.jsonl").events
    assert [e.value()["reason"] for e in events if e.type == "turn/end"] == [{"kind": "aborted", "reason": {"kind": "user"}}]


def test_a_mistyped_session_is_not_created_without_a_yes(tmp_path: Path, terminals: list[Terminal]) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "kitchen.jsonl").write_text('{"type":"session","version":0,"id":"kitchen","createdAt":1}\n')
    term = start(terminals, tmp_path, "--session", "kitchn")
    term.wait_for(f'session "kitchn" does not exist in {tmp_path / "root"} (did you mean kitchen?). Create it?')
    term.type("n")
    assert term.close() == 1
    assert "nothing created; turnlog ls lists the sessions" in term.text()
    assert sorted(p.name for p in (tmp_path / "root").iterdir()) == ["kitchen.jsonl"]


def test_the_banner_says_what_a_resumed_session_holds(tmp_path: Path, terminals: list[Terminal]) -> None:
    term = start(terminals, tmp_path, "--session", "b")
    term.wait_for("Create it?")
    term.type("y")
    term.wait_for("new session\nmodel: scripted (offline)")
    term.type("remind me in 2 hours to stretch" + ENTER)
    term.wait_for("Reminder schedule-1 is set")
    term.type(CTRL_D)
    assert term.close() == 0
    again = start(terminals, tmp_path, "-c")  # --continue: the most recent session
    again.wait_for(READY)
    text = again.text()
    assert "session: b\n" in text
    assert "resumed: 1 turn, 1 active reminder; next: 'stretch' at " in text and "(in 2 h)" in text
    # the recent reply shows its instant in the local zone, as it did when it was new
    # (a day word comes first when the instant falls on another local day: "tomorrow 00:30")
    assert re.search(
        r"\nReminder schedule-1 is set for \S+Z \(((tomorrow|today) )?[0-9]{2}:[0-9]{2} in Asia/Shanghai, "
        r"in (2 h|1 h 59 min)\)\.\n",
        text,
    )
    again.type(CTRL_D)
    assert again.close() == 0
