"""Web §8 scenario 6 in Chromium against a real ``turnlog web`` process on the fake model: while
the model holds turn 1 mid-stream, two prompts are queued; ``Stop`` ends turn 1 as ``Stopped``
(its streamed text stays, greyed), and the queued prompts then run in order. ``session/cancel``
keeps the inbox, so the log has no canceled splice. Goldens: tests/web/snapshots/6-stop-keeps-queue/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.web.browser_support import Tab, events, only_session
from tests.web.fake_model import FakeModel, Gate, text
from tests.web.goldens import assert_golden
from tests.web.process_support import WebProcess

PROMPTS = ("Summarise the release notes.", "Then list the open bugs.", "And draft the announcement.")
REPLIES = ("Two bugs are open.", "Here is a draft.")


def test_stop_ends_the_held_turn_and_the_queued_prompts_run_in_order(
    tmp_path: Path, chromium: Any, tabs: list[Tab], fake_model: FakeModel
) -> None:
    held = Gate()
    fake_model.script(text("The release notes say", " nothing yet.").held(held, after=1), *map(text, REPLIES))
    root = tmp_path / "s"
    with WebProcess(tmp_path, root, *fake_model.args, env=fake_model.env) as web:
        tab = Tab(chromium, "Europe/Lisbon")
        tabs.append(tab)
        tab.open(web)
        page, conversation = tab.page, tab.conversation()
        tab.send(PROMPTS[0])
        held.wait_reached()
        conversation.get_by_text("The release notes say").wait_for()  # the streamed delta
        box = page.get_by_role("textbox", name="Message")
        for prompt in PROMPTS[1:]:
            box.fill(prompt)
            box.press("Enter")
        queued = page.locator('[data-kind="queued"]')
        queued.nth(1).wait_for()
        assert queued.all_inner_texts() == [f"Queued {p}" for p in PROMPTS[1:]]
        assert_golden(page.locator("main"), "6-stop-keeps-queue", "held-with-two-queued")

        stop = page.get_by_role("button", name="Stop")
        stop.click()
        conversation.locator('[data-kind="turn-end"][data-turn="1"]').get_by_text("Stopped", exact=True).wait_for()
        for number, reply in enumerate(REPLIES, start=2):
            conversation.locator(f'[data-kind="turn-end"][data-turn="{number}"]').wait_for()
            conversation.locator(f'[data-kind="assistant"][data-turn="{number}"]').get_by_text(reply).wait_for()
        assert queued.count() == 0 and stop.is_hidden()
        assert_golden(conversation, "6-stop-keeps-queue", "after")

        first, second, third = fake_model.wait_requests(3)
        assert first.closed.wait(20), "the stopped turn's model stream was not closed"
        assert second.messages[-2] == {"role": "user", "content": PROMPTS[1]}
        assert third.messages[-2] == {"role": "user", "content": PROMPTS[2]}

        session_id = only_session(root)
        ends = [e["data"] for e in events(root, session_id, "turn/end")]
        assert ends == [
            {"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "user"}}},
            {"turn": 2, "reason": {"kind": "completed"}},
            {"turn": 3, "reason": {"kind": "completed"}},
        ]
        splices = [e["data"] for e in events(root, session_id, "agent/inbox/spliced")]
        assert [s for s in splices if "outcome" in s] == []
        claimed = [
            e["data"]["content"][0]["text"]
            for e in events(root, session_id, "user/message")
            if e["data"]["source"]["kind"] == "user"
        ]
        assert claimed == list(PROMPTS)
        assert tab.problems == []
        assert web.stderr == []
    assert web.proc.returncode == 0
