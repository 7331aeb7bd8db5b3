"""Web §8 scenario 8 against a real ``turnlog web`` process: nothing the user typed is lost.

- A browser whose zone the host refuses (``invalid-time-zone``) keeps the draft, and ``Send
  without time zone`` sends it without a zone; the draft also survives a page reload.
- While the server is down a send is impossible (``Send`` disabled, ``Enter`` sends nothing), and
  the draft typed meanwhile survives a page reload once it is back, then sends.
- A session held by a second process (``turnlog serve``) refuses the prompt with ``session-busy``:
  the page keeps the draft, says why and disables ``Send``; nothing is appended.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import msgspec

from eventlog import read_log
from tests.host.process_support import TURNLOG, clean_env
from tests.web.browser_support import Tab, events, only_session
from tests.web.process_support import WebProcess, free_port

WAIT_MS = 20_000  # only guards against a hang
HANG_GUARD_S = 30.0
BUSY = "This session is open in another turnlog process; you can read it here but not send."

# The page has no test hook: the zone it reads comes from Intl, so the init script replaces that.
MARS = """(() => {
  const original = Intl.DateTimeFormat.prototype.resolvedOptions;
  Intl.DateTimeFormat.prototype.resolvedOptions = function () {
    return { ...original.call(this), timeZone: 'Mars/Olympus' };
  };
})();"""


def test_a_refused_zone_keeps_the_draft_and_it_can_be_sent_without_one(tmp_path: Path, chromium: Any) -> None:
    root = tmp_path / "s"
    with WebProcess(tmp_path, root) as web:
        context = chromium.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
        try:
            context.add_init_script(MARS)
            page = context.new_page()
            page.set_default_timeout(WAIT_MS)
            problems: list[str] = []
            page.on("pageerror", lambda error: problems.append(f"pageerror: {error}"))
            page.goto(web.url)
            box = page.get_by_role("textbox", name="Message")
            box.fill("hello from Mars")
            page.reload()
            assert box.input_value() == "hello from Mars"
            page.get_by_role("button", name="Send").click()
            again = page.get_by_role("button", name="Send without time zone")
            again.wait_for()
            assert box.input_value() == "hello from Mars"
            again.click()
            page.get_by_role("log", name="Conversation").locator('[data-kind="assistant"]').first.wait_for()
            assert problems == []
        finally:
            context.close()
        (path,) = root.glob("*.jsonl")
        prompts = [
            msgspec.json.decode(e.to_json())["data"]
            for e in read_log(path).events
            if e.type == "user/message"
        ]
        mine = [p for p in prompts if p["source"]["kind"] == "user"]
        assert [(p["content"], p["source"].get("clientTimeZone")) for p in mine] == [([{"type": "text", "text": "hello from Mars"}], None)]
    assert web.proc.returncode == 0


def user_prompts(root: Path, session_id: str) -> list[str]:
    """The texts of the user's prompts in the log, in order."""
    return [
        e["data"]["content"][0]["text"]
        for e in events(root, session_id, "user/message")
        if e["data"]["source"]["kind"] == "user"
    ]


def test_a_send_while_the_server_is_down_is_impossible_and_the_draft_survives_a_reload(
    tmp_path: Path, chromium: Any, tabs: list[Tab]
) -> None:
    root, port = tmp_path / "s", free_port()
    draft = "typed while turnlog was down"
    tab = Tab(chromium, "Europe/Berlin")
    tabs.append(tab)
    box = tab.page.get_by_role("textbox", name="Message")
    send = tab.page.get_by_role("button", name="Send", exact=True)
    status = tab.page.get_by_role("status", name="Connection")
    with WebProcess(tmp_path, root, port=port) as web:
        tab.open(web)
        tab.send("hi")
        tab.conversation().get_by_text("You said: hi", exact=True).wait_for()
        session_id = only_session(root)
        assert web.stop(signal.SIGTERM) == 0
    status.filter(has_text="Reconnecting").wait_for()
    box.fill(draft)
    assert send.is_disabled()
    box.press("Enter")  # the keyboard path refuses too
    assert box.input_value() == draft
    assert tab.conversation().get_by_text(draft).count() == 0
    with WebProcess(tmp_path, root, port=port):
        status.filter(has_text="Connected").wait_for()
        assert user_prompts(root, session_id) == ["hi"]  # nothing went out while it was down
        tab.page.reload()
        status.filter(has_text="Connected").wait_for()
        tab.conversation().get_by_text("You said: hi", exact=True).wait_for()
        assert box.input_value() == draft
        send.click()
        tab.conversation().get_by_text(f"You said: {draft}", exact=True).wait_for()
        assert user_prompts(root, session_id) == ["hi", draft]
        tab.page.reload()  # admitted: the stored draft is gone
        tab.conversation().get_by_text(f"You said: {draft}", exact=True).wait_for()
        assert box.input_value() == ""
    # The lost connection is reported in the console by the browser itself, and only that.
    assert all("WebSocket" in p or "ERR_CONNECTION_REFUSED" in p for p in tab.problems), tab.problems


def hold(root: Path, home: Path, session_id: str) -> subprocess.Popen[bytes]:
    """``turnlog serve`` on ``root`` with ``session_id`` created and live in it (its lock held)
    once this returns: its first turn has ended on disk."""
    serve = subprocess.Popen(
        [str(TURNLOG), "serve", "--root", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,  # the log on disk says when it is done
        stderr=subprocess.PIPE,
        env=clean_env(TURNLOG_HOME=str(home)),
    )
    assert serve.stdin is not None
    prompt = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "session/prompt",
        "params": {"sessionId": session_id, "contentBlocks": [{"type": "text", "text": "hello from serve"}]},
    }
    serve.stdin.write(json.dumps(prompt).encode() + b"\n")
    serve.stdin.flush()
    path = root / f"{session_id}.jsonl"
    deadline = time.monotonic() + HANG_GUARD_S
    while not (path.exists() and any(e.type == "turn/end" for e in read_log(path).events)):
        assert serve.poll() is None and time.monotonic() < deadline, "turnlog serve did not finish its turn"
        time.sleep(0.05)  # polls the log, the only way to see the other process's progress
    return serve


def test_a_session_open_in_another_process_keeps_the_draft_and_disables_send(
    tmp_path: Path, chromium: Any, tabs: list[Tab]
) -> None:
    root, session_id = tmp_path / "s", "held-elsewhere"
    root.mkdir()
    serve = hold(root, tmp_path, session_id)
    path = root / f"{session_id}.jsonl"
    try:
        with WebProcess(tmp_path, root) as web:
            tab = Tab(chromium, "Europe/Berlin")
            tabs.append(tab)
            tab.open(web, session_id)
            tab.conversation().get_by_text("You said: hello from serve", exact=True).wait_for()
            before = path.read_bytes()
            tab.send("a prompt for a busy session")
            tab.page.get_by_text(BUSY, exact=True).wait_for()
            tab.page.get_by_role("alert").filter(has_text="(session-busy)").wait_for()
            assert tab.page.get_by_role("textbox", name="Message").input_value() == "a prompt for a busy session"
            assert tab.page.get_by_role("button", name="Send", exact=True).is_disabled()
            assert tab.conversation().get_by_text("a prompt for a busy session").count() == 0
            assert path.read_bytes() == before
            assert tab.problems == []
        assert web.proc.returncode == 0
    finally:
        assert serve.stdin is not None
        serve.stdin.close()  # end of input: serve flushes and exits
        assert serve.wait(HANG_GUARD_S) == 0
    assert user_prompts(root, session_id) == ["hello from serve"]
