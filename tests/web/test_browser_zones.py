"""Web §8 scenarios 1 and 2 in Chromium against a real ``turnlog web`` process on the fake model
(tests/web/fake_model.py): the browser's zone reaches the model's request and the log, a reminder
created for a local time in that zone fires once into the open page, and two tabs in two zones on
one session make the turn's time reading mixed. Goldens: tests/web/snapshots/<scenario>/."""

from __future__ import annotations

import datetime
import json
import zoneinfo
from pathlib import Path
from typing import Any

from schedule import format_instant
from tests.web.browser_support import Tab, events, only_session
from tests.web.fake_model import FakeModel, Gate, Reply, Request, text, tool_call
from tests.web.goldens import assert_golden
from tests.web.process_support import WebProcess

SHANGHAI = "Asia/Shanghai"
PROMPT = "Remind me to review the release window in a few seconds in my local time."
ZONE_SENTENCE = (
    "Client time zone for this request: Asia/Shanghai. "
    "Interpret otherwise-unqualified dates and times in this zone."
)
LEAD_MS = 5_000


def at_least_five_seconds_ahead(now_ms: int) -> int:
    """The next whole second at least 5 s after ``now_ms``."""
    return -(-(now_ms + LEAD_MS) // 1000) * 1000


def shanghai_clock(ms: int) -> str:
    """The page's clock for an instant of today in Shanghai (web §6.3: ``HH:MM``, 24-hour)."""
    return datetime.datetime.fromtimestamp(ms / 1000, zoneinfo.ZoneInfo(SHANGHAI)).strftime("%H:%M")


class CreateInShanghai:
    """Request 1's answer, decided when it arrives: ``schedule_create`` at the next whole second
    at least 5 s ahead, as a local date and time in Shanghai. Keeps what it sent."""

    def __init__(self) -> None:
        self.instant_ms = 0
        self.arguments: dict[str, Any] = {}

    def __call__(self, request: Request) -> Reply:
        self.instant_ms = at_least_five_seconds_ahead(int(datetime.datetime.now(datetime.UTC).timestamp() * 1000))
        local = datetime.datetime.fromtimestamp(self.instant_ms / 1000, zoneinfo.ZoneInfo(SHANGHAI))
        self.arguments = {
            "prompt": "Review the release window",
            "at": {"date": local.date().isoformat(), "time": local.strftime("%H:%M:%S"), "time_zone": SHANGHAI},
        }
        return tool_call("schedule_create", self.arguments)


def test_a_reminder_for_a_local_time_in_the_browsers_zone(
    tmp_path: Path, chromium: Any, tabs: list[Tab], fake_model: FakeModel
) -> None:
    """Scenario 1: an Asia/Shanghai tab; the model reads the zone from the request, schedules in
    it, and the reminder comes back once, framed as untrusted, into the open page."""
    create = CreateInShanghai()
    fake_model.script(
        create,
        text("Scheduled in your browser time zone."),
        text("Reminder: Review the release window."),
    )
    root = tmp_path / "s"
    with WebProcess(tmp_path, root, *fake_model.args, env=fake_model.env) as web:
        tab = Tab(chromium, SHANGHAI)
        tabs.append(tab)
        tab.open(web)
        assert tab.page.evaluate("new Intl.DateTimeFormat().resolvedOptions().timeZone") == SHANGHAI
        tab.page.get_by_role("textbox", name="Message").press_sequentially(PROMPT)
        tab.page.get_by_role("button", name="Send").click()

        conversation = tab.conversation()
        conversation.get_by_text("Scheduled in your browser time zone.", exact=True).wait_for()
        # Until it fires, the header chip counts it and shows when, in the browser's zone (web §6.8).
        chip = tab.page.get_by_role("button", name=f"⏰ 1 next {shanghai_clock(create.instant_ms)}", exact=True)
        chip.wait_for()
        conversation.get_by_role("button", name="⏰ Reminder: Review the release window").wait_for()
        follow_up = conversation.locator('[data-kind="assistant"][data-turn="2"]')
        follow_up.get_by_text("Reminder: Review the release window.", exact=True).wait_for()
        conversation.locator('[data-kind="turn-end"][data-turn="2"]').wait_for()
        assert_golden(follow_up, "1-asia-shanghai", "follow-up")
        chip.wait_for(state="hidden")
        assert_golden(conversation, "1-asia-shanghai", "conversation")

        first, second, third = fake_model.wait_requests(3)
        assert ZONE_SENTENCE in first.text and "schedule_create" in first.tool_names
        assert first.messages[1] == {"role": "user", "content": PROMPT}
        assert second.messages[-2]["role"] == "tool" and '"state":"scheduled"' in second.messages[-2]["content"]
        assert "untrusted reminder content" in third.text
        assert 'reminder_prompt_json: "Review the release window"' in third.text

        session_id = only_session(root)
        prompts = [e["data"] for e in events(root, session_id, "user/message") if e["data"]["source"]["kind"] == "user"]
        (source,) = [p["source"] for p in prompts]
        assert source.keys() == {"kind", "rpcId", "clientTimeZone"} and isinstance(source["rpcId"], str)
        assert source["clientTimeZone"] == SHANGHAI
        # The prompt's clock: local time in the browser's zone, the UTC instant and zones in its tooltip.
        (prompt_event,) = [e for e in events(root, session_id, "user/message") if e["data"]["source"]["kind"] == "user"]
        prompt_clock = conversation.locator('[data-kind="user"] time')
        assert prompt_clock.inner_text() == shanghai_clock(prompt_event["time"])
        assert prompt_clock.get_attribute("datetime") == format_instant(prompt_event["time"])
        assert prompt_clock.get_attribute("title") == (
            f"{format_instant(prompt_event['time'])} · shown in {SHANGHAI} · sent with time zone {SHANGHAI}"
        )
        (call,) = events(root, session_id, "tool/call")
        assert call["data"]["name"] == "schedule_create"
        assert json.loads(call["data"]["arguments"]) == create.arguments
        changes = [e["data"] for e in events(root, session_id, "schedule/change")]
        assert [c["operation"] for c in changes] == ["create", "dispatch"]
        assert changes[0]["schedule"]["kind"] == "at"
        assert changes[0]["schedule"]["scheduledAt"] == format_instant(create.instant_ms)
        assert changes[0]["schedule"]["scheduledAt"].endswith("Z")
        assert tab.problems == []
        assert web.stderr == []
    assert web.proc.returncode == 0


BERLIN = "Europe/Berlin"
FIRST, SECOND, STEER = (
    "Good morning from Shanghai.",
    "Book the call for 9:00 tomorrow.",
    "Make that 9:00 my time, please.",
)
MIXED_SENTENCE = (
    'Client time zone for this request: mixed ["Asia/Shanghai","Europe/Berlin"]. '
    "Ask the user to clarify otherwise-unqualified dates and times."
)
CLARIFY = "Do you mean 9:00 in Shanghai or 9:00 in Berlin?"


def test_two_tabs_in_two_zones_steer_one_turn_into_a_mixed_reading(
    tmp_path: Path, chromium: Any, tabs: list[Tab], fake_model: FakeModel
) -> None:
    """Scenario 2: a Shanghai tab and a Berlin tab on one session. While the model holds the
    Shanghai prompt's turn, the Berlin tab sees it running and steers it; the next step's reading
    is mixed, and the clarifying reply reaches both tabs, each prompt shown once in each."""
    held = Gate()
    fake_model.script(text("Good morning."), text("Booking it.").held(held), text(CLARIFY))
    root = tmp_path / "s"
    with WebProcess(tmp_path, root, *fake_model.args, env=fake_model.env) as web:
        a, b = Tab(chromium, SHANGHAI), Tab(chromium, BERLIN)
        tabs += [a, b]
        a.open(web)
        a.send(FIRST)
        a.conversation().get_by_text("Good morning.", exact=True).wait_for()
        session_id = only_session(root)
        b.open(web, session_id)
        b.conversation().get_by_text("Good morning.", exact=True).wait_for()
        b.page.evaluate("window.__loadedOnce = true")  # gone if the tab reloads

        a.send(SECOND)
        held.wait_reached()
        b.conversation().locator('[data-kind="user"]').get_by_text(SECOND, exact=True).wait_for()
        b.page.get_by_role("button", name="Stop").wait_for()
        b.page.get_by_text("Working…").wait_for()
        assert_golden(b.page.locator("main"), "2-two-tabs", "b-while-held")
        box = b.page.get_by_role("textbox", name="Message")
        box.fill(STEER)
        box.press("Control+Enter")
        for tab in (a, b):
            tab.page.get_by_text("Steering: read at the next step").wait_for()
        held.release()

        for tab in (a, b):
            tab.conversation().get_by_text(CLARIFY, exact=True).wait_for()
            tab.conversation().locator('[data-kind="turn-end"][data-turn="2"]').wait_for()
            reading = tab.conversation().locator('[data-kind="reading"][data-turn="2"][data-step="2"]')
            assert reading.get_by_role("button").inner_text() == "Time reading · mixed zones"
            prompts = tab.conversation().locator('[data-kind="user"] .bubble').all_inner_texts()
            assert prompts == [FIRST, SECOND, STEER]
        assert b.page.evaluate("window.__loadedOnce") is True
        assert_golden(a.conversation(), "2-two-tabs", "a-after")
        assert_golden(b.conversation(), "2-two-tabs", "b-after")

        first, step1, step2 = fake_model.wait_requests(3)
        assert SHANGHAI in first.text and MIXED_SENTENCE not in first.text
        assert "Client time zone for this request: Asia/Shanghai." in step1.messages[-1]["content"]
        assert MIXED_SENTENCE in step2.messages[-1]["content"]
        assert step2.messages[-2] == {"role": "user", "content": STEER}

        sources = [
            (e["data"]["content"][0]["text"], e["data"]["source"].get("clientTimeZone"))
            for e in events(root, session_id, "user/message")
            if e["data"]["source"]["kind"] == "user"
        ]
        assert sources == [(FIRST, SHANGHAI), (SECOND, SHANGHAI), (STEER, BERLIN)]
        steered = [e["data"] for e in events(root, session_id, "agent/inbox/spliced") if e["data"]["target"] == "next-step"]
        assert [s.get("inserted", [{}])[0].get("content") for s in steered if s.get("inserted")] == [
            [{"type": "text", "text": STEER}]
        ]
        assert a.problems == [] and b.problems == []
        assert web.stderr == []
    assert web.proc.returncode == 0
