"""The page in Debian's Chromium against a real ``turnlog web`` process (web §8, browser layer):
typing into the real composer, a reminder arriving live, the browser's zone in the log,
reconnecting through a host restart (the zone scenarios on the fake model are in
test_browser_zones.py). Waits are on DOM conditions or on the log,
never fixed sleeps. Screenshots of the chat (light and dark) and of the inspector are saved under
the test's temporary directory; ``TURNLOG_REFRESH_SCREENSHOT=1`` also writes ``docs/web-chat.png``.
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.web.browser_support import Tab, events, only_session
from tests.web.process_support import WebProcess, free_port

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("screenshots")
    print(f"screenshots in {folder}")
    return folder


def test_a_reminder_arrives_live_in_the_browsers_zone(
    tmp_path: Path, chromium: Any, tabs: list[Tab], screenshots: Path
) -> None:
    """Scenario 3 with the scripted model: the prompt carries the page's zone, the reminder
    comes back into the open page with no further interaction, and the log says it fired once."""
    root = tmp_path / "s"
    with WebProcess(tmp_path, root) as web:
        tab = Tab(chromium, "Asia/Shanghai")
        tabs.append(tab)
        tab.page.goto(web.url)
        tab.send("remind me in 3 seconds to stretch")
        conversation = tab.conversation()
        conversation.get_by_role("button", name="⏰ Reminder: stretch").wait_for()
        conversation.get_by_text("Reminder: stretch", exact=True).wait_for()
        tab.page.get_by_role("status", name="Connection").filter(has_text="Connected").wait_for()
        assert "#token" not in tab.page.url

        session_id = only_session(root)
        prompts = [
            e for e in events(root, session_id, "user/message") if e["data"]["source"]["kind"] == "user"
        ]
        assert [p["data"]["source"]["clientTimeZone"] for p in prompts] == ["Asia/Shanghai"]
        assert isinstance(prompts[0]["data"]["source"]["rpcId"], str)
        changes = [e["data"]["operation"] for e in events(root, session_id, "schedule/change")]
        assert changes == ["create", "dispatch"]
        # The page shows times in the browser's zone: 13:00 UTC is 21:00 in Shanghai.
        created_ms = events(root, session_id, "schedule/change")[0]["time"]
        hour = (created_ms // 3_600_000 + 8) % 24
        assert re.search(rf"\b{hour:02d}:\d\d\b", conversation.inner_text())

        tab.page.screenshot(path=str(screenshots / "chat-light.png"))
        if os.environ.get("TURNLOG_REFRESH_SCREENSHOT") == "1":
            tab.page.screenshot(path=str(DOCS / "web-chat.png"))

        dark = Tab(chromium, "Asia/Shanghai", color_scheme="dark")
        tabs.append(dark)
        dark.page.goto(web.url.replace("/#", f"/s/{session_id}#"))
        dark.conversation().get_by_text("Reminder: stretch", exact=True).wait_for()
        dark.page.screenshot(path=str(screenshots / "chat-dark.png"))

        tab.page.get_by_role("link", name="Log").click()
        inspector = tab.page.get_by_role("region", name="Log inspector")
        inspector.locator("[data-seq]").first.wait_for()
        tab.page.screenshot(path=str(screenshots / "inspector.png"))
        assert tab.problems == [] and dark.problems == []
        assert web.stderr == []
    assert web.proc.returncode == 0


def test_the_page_reconnects_after_a_host_restart_and_keeps_the_draft(
    tmp_path: Path, chromium: Any, tabs: list[Tab]
) -> None:
    """Scenario 4: SIGTERM the server with a draft typed; the page says it is reconnecting, keeps
    the draft and disables Send; on the same port it reconnects by itself within 12 s (no reload,
    no new link), shows the same conversation rows, and the draft sends."""
    root, port = tmp_path / "s", free_port()
    tab = Tab(chromium, "Europe/Berlin")
    tabs.append(tab)
    with WebProcess(tmp_path, root, port=port) as web:
        tab.page.goto(web.url)
        tab.send("hi")
        tab.conversation().get_by_text("You said: hi").wait_for()
        rows_before = tab.conversation().aria_snapshot()
        url_before = tab.page.url
        tab.page.evaluate("window.__sameDocument = true")  # a reload would lose it
        box = tab.page.get_by_role("textbox", name="Message")
        box.fill("a draft typed before the restart")
        assert web.stop(signal.SIGTERM) == 0
    status = tab.page.get_by_role("status", name="Connection")
    status.filter(has_text="Reconnecting").wait_for()
    assert tab.page.get_by_role("button", name="Send").is_disabled()
    assert box.input_value() == "a draft typed before the restart"
    with WebProcess(tmp_path, root, port=port):
        status.filter(has_text="Connected").wait_for(timeout=12_000)
        assert tab.page.url == url_before and tab.page.evaluate("window.__sameDocument === true")
        assert tab.conversation().aria_snapshot() == rows_before
        tab.page.get_by_role("button", name="Send").click()
        tab.conversation().get_by_text("You said: a draft typed before the restart").wait_for()
        session_id = only_session(root)
        prompts = [
            e for e in events(root, session_id, "user/message") if e["data"]["source"]["kind"] == "user"
        ]
        assert len(prompts) == 2
        receipts = [e for e in events(root, session_id, "agent/inbox/spliced") if e["data"].get("inserted")]
        assert len(receipts) == 2
    # The lost connection is reported in the console by the browser itself, and only that.
    assert all("WebSocket" in p or "ERR_CONNECTION_REFUSED" in p for p in tab.problems), tab.problems
