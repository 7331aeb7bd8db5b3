"""Part of web §8 scenario 8 against a real ``turnlog web`` process: a browser whose zone the host
refuses (``invalid-time-zone``) keeps the draft, and ``Send without time zone`` sends it without a
zone; the draft also survives a page reload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from eventlog import read_log
from tests.web.process_support import WebProcess

WAIT_MS = 20_000  # only guards against a hang

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
