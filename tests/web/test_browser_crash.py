"""Web §8 scenario 4, the SIGKILL variant, in Chromium against a real ``turnlog web`` process on
the fake model (tests/web/fake_model.py).

The model holds a reply mid-stream while the page shows the turn running; the server is killed
with SIGKILL, so nothing of turnlog runs any more: no cleanup, no closing events. Started again
on the same port, root and ``TURNLOG_HOME``, the open tab reconnects by itself and, since the
session is cold in the new process, shows the turn as ``Unfinished: turnlog stopped during this
turn``. ``Open session`` resumes it: opening repairs the log, which then ends the turn with one
``turn/end`` ``interrupted``, and the page shows ``Interrupted: turnlog stopped during this turn``.
Resuming asks the model nothing (the fake model fails the test on an unscripted request).
Goldens: tests/web/snapshots/4-sigkill/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.web.browser_support import Tab, events, only_session
from tests.web.fake_model import FakeModel, Gate, text
from tests.web.goldens import assert_golden
from tests.web.process_support import WebProcess, free_port

UNFINISHED = "Unfinished: turnlog stopped during this turn"
INTERRUPTED = "Interrupted: turnlog stopped during this turn"


def test_a_turn_killed_mid_stream_is_unfinished_then_interrupted_once_opened(
    tmp_path: Path, chromium: Any, tabs: list[Tab], fake_model: FakeModel
) -> None:
    held = Gate()
    fake_model.script(
        text("Hello there."),
        text("Once upon ", "a time, ", "there was a log.").held(held, after=1),
    )
    root, port = tmp_path / "s", free_port()
    tab = Tab(chromium, "Europe/Berlin")
    tabs.append(tab)
    conversation = tab.conversation()
    status = tab.page.get_by_role("status", name="Connection")
    with WebProcess(tmp_path, root, *fake_model.args, port=port, env=fake_model.env) as web:
        tab.open(web)
        tab.send("hi")
        conversation.locator('[data-kind="turn-end"][data-turn="1"]').wait_for()
        tab.send("tell me a story")
        held.wait_reached()
        conversation.get_by_text("Once upon", exact=False).wait_for()  # the streamed delta, painted
        session_id = only_session(root)
        web.kill()
    status.filter(has_text="Reconnecting").wait_for()
    assert fake_model.requests[1].closed.wait(10)  # the killed host's stream went away

    turn_ends = events(root, session_id, "turn/end")
    assert [e["data"]["turn"] for e in turn_ends] == [1]  # turn 2 has no end on disk
    with WebProcess(tmp_path, root, *fake_model.args, port=port, env=fake_model.env) as web:
        status.filter(has_text="Connected").wait_for(timeout=15_000)
        conversation.get_by_text(UNFINISHED, exact=True).wait_for()
        assert conversation.get_by_text(INTERRUPTED).count() == 0
        assert conversation.get_by_text("Once upon").count() == 0  # never logged: gone after the restart
        assert_golden(conversation, "4-sigkill", "unfinished")

        tab.page.get_by_role("button", name="Open session").click()
        conversation.get_by_text(INTERRUPTED, exact=True).wait_for()
        assert conversation.get_by_text(UNFINISHED).count() == 0
        assert_golden(conversation, "4-sigkill", "interrupted")
        interrupted = [e for e in events(root, session_id, "turn/end") if e["data"]["reason"]["kind"] == "interrupted"]
        assert [e["data"]["turn"] for e in interrupted] == [2]
        assert [e["data"]["turn"] for e in events(root, session_id, "turn/end")] == [1, 2]
        assert len(fake_model.requests) == 2
        # Opening says what it repaired, and nothing else goes to stderr.
        (repaired,) = web.stderr
        assert repaired.startswith(f'turnlog web: session "{session_id}": repaired on open: closed interrupted turn 2 ')
    assert web.proc.returncode == 0
    # The lost connection is reported in the console by the browser itself, and only that.
    assert all("WebSocket" in p or "ERR_CONNECTION_REFUSED" in p for p in tab.problems), tab.problems
