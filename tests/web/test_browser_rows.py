"""The conversation's rows for what only a real model endpoint produces (web §6.3, §6.4), in
Chromium against a real ``turnlog web`` process on the fake model: streamed deltas as a
provisional block that a retry clears and the logged message replaces; a retry row, a thinking
row, Markdown, a failed turn, the token limit and a failed tool call. Goldens:
tests/web/snapshots/rows/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.web.browser_support import Tab, events, only_session
from tests.web.fake_model import FakeModel, Gate, Reply, http_error, text, tool_call
from tests.web.goldens import assert_golden
from tests.web.process_support import WebProcess


def test_a_retry_clears_the_streamed_text_and_the_logged_message_replaces_it(
    tmp_path: Path, chromium: Any, tabs: list[Tab], fake_model: FakeModel
) -> None:
    held = Gate()
    fake_model.script(text("Half an answer").cut(after=1).held(held, after=1), text("Whole", " answer."))
    root = tmp_path / "s"
    with WebProcess(tmp_path, root, *fake_model.args, env=fake_model.env) as web:
        tab = Tab(chromium, "Europe/Berlin")
        tabs.append(tab)
        tab.open(web)
        tab.send("Answer me.")
        held.wait_reached()
        conversation = tab.conversation()
        conversation.get_by_text("Half an answer", exact=True).wait_for()  # provisional, never logged
        assert conversation.locator('[data-kind="assistant"]').count() == 0
        held.release()
        conversation.locator('[data-kind="turn-end"][data-turn="1"]').wait_for()
        conversation.get_by_text("Retrying model request (1/5) after TRANSPORT:").wait_for()
        assert conversation.get_by_text("Half an answer").count() == 0
        (reply,) = conversation.locator('[data-kind="assistant"]').all_inner_texts()
        assert reply == "Whole answer."
        session_id = only_session(root)
        (retry,) = events(root, session_id, "llm/retry")
        assert retry["data"]["failure"]["code"] == "TRANSPORT"
        assert [e["data"]["reason"] for e in events(root, session_id, "turn/end")] == [{"kind": "completed"}]
        assert tab.problems == [] and web.stderr == []


def test_retries_thinking_markdown_failures_and_the_token_limit(
    tmp_path: Path, chromium: Any, tabs: list[Tab], fake_model: FakeModel
) -> None:
    fake_model.script(
        http_error(503, "overloaded"),
        Reply(({"reasoning_content": "Weigh it first.\nThen answer."}, {"content": "Back **again**, see `x`."})),
        http_error(400, "the request was refused"),
        Reply(({"content": "Cut off"},), finish="length"),
        tool_call("no_such_tool", {"x": 1}),
        text("That tool does not exist."),
    )
    root = tmp_path / "s"
    with WebProcess(tmp_path, root, *fake_model.args, env=fake_model.env) as web:
        tab = Tab(chromium, "Europe/Berlin")
        tabs.append(tab)
        tab.open(web)
        conversation = tab.conversation()
        for turn, prompt in enumerate(("one", "two", "three", "four"), start=1):
            tab.send(prompt)
            conversation.locator(f'[data-kind="turn-end"][data-turn="{turn}"]').wait_for()
        conversation.get_by_text("Retrying model request (1/5) after SERVER: overloaded", exact=True).wait_for()
        conversation.get_by_role("button", name="Thinking Weigh it first.").wait_for()
        conversation.get_by_text("This turn failed: the request was refused (INVALID_REQUEST)", exact=True).wait_for()
        conversation.get_by_text('The reply hit the token limit; send "continue" to go on.', exact=True).wait_for()
        tool = conversation.locator('[data-kind="tool"]')
        assert tool.get_by_role("button").inner_text().endswith('failed: Error: unknown tool "no_such_tool"')
        assert_golden(conversation, "rows", "four-turns")

        session_id = only_session(root)
        reasons = [e["data"]["reason"]["kind"] for e in events(root, session_id, "turn/end")]
        assert reasons == ["completed", "error", "max-tokens", "completed"]
        assert tab.problems == [] and web.stderr == []
