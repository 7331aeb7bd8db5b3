"""Shared by the browser tests (web §8): a browser tab that collects page and console errors, and
the session log read with eventlog's readers (no lock), for waits and checks on what was written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from eventlog import read_log
from tests.web.process_support import WebProcess

WAIT_MS = 20_000  # only guards against a hang


class Tab:
    """One browser context and page, collecting page errors and console errors."""

    def __init__(self, browser: Any, timezone_id: str, color_scheme: str = "light") -> None:
        self.context = browser.new_context(
            viewport={"width": 1280, "height": 800},
            locale="en-US",
            timezone_id=timezone_id,
            color_scheme=color_scheme,
        )
        self.page = self.context.new_page()
        self.page.set_default_timeout(WAIT_MS)
        self.problems: list[str] = []
        self.page.on("pageerror", lambda error: self.problems.append(f"pageerror: {error}"))
        self.page.on(
            "console", lambda m: self.problems.append(f"console: {m.text}") if m.type == "error" else None
        )

    def open(self, web: WebProcess, session_id: str | None = None) -> None:
        """Sign in with the launch link, at ``/s/<session_id>`` when given (each context has its
        own cookie, so every tab signs in)."""
        self.page.goto(web.url if session_id is None else web.url.replace("/#", f"/s/{session_id}#"))

    def send(self, text: str) -> None:
        self.page.get_by_role("textbox", name="Message").fill(text)
        self.page.get_by_role("button", name="Send").click()

    def conversation(self) -> Any:
        return self.page.get_by_role("log", name="Conversation")

    def close(self) -> None:
        self.context.close()


def events(root: Path, session_id: str, type_: str | None = None) -> list[dict[str, Any]]:
    """The session's events (of ``type_`` when given) as JSON values."""
    return [
        msgspec.json.decode(e.to_json())
        for e in read_log(root / f"{session_id}.jsonl").events
        if type_ is None or e.type == type_
    ]


def only_session(root: Path) -> str:
    (path,) = root.glob("*.jsonl")
    return path.stem
