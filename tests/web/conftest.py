"""Fixtures of the web tests: Debian's Chromium driven by Playwright's sync API, a loopback HTTP
server for the page's static files, and the fake OpenAI-compatible model (web §8).

The browser is never downloaded: it is ``/usr/bin/chromium`` or ``$TURNLOG_CHROMIUM``. When it is
missing the tests that need it skip saying why, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import http.server
import importlib.resources
import os
import threading
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.web.browser_support import Tab
from tests.web.fake_model import FakeModel

STATIC = Path(str(importlib.resources.files("host.web") / "static"))

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# The blank page the module tests load: no app.js, so nothing connects anywhere.
BLANK = b'<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="/static/favicon.svg"><title>modules</title></head><body></body></html>'


def chromium_path() -> Path:
    return Path(os.environ.get("TURNLOG_CHROMIUM") or "/usr/bin/chromium")


_MEDIA_TYPES = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml", ".html": "text/html"}


class _StaticHandler(http.server.SimpleHTTPRequestHandler):
    """``/static/<name>`` from the package's static directory, ``/`` the blank page."""

    def guess_type(self, path: str | os.PathLike[str]) -> str:
        return _MEDIA_TYPES.get(Path(path).suffix, "application/octet-stream")

    def do_GET(self) -> None:
        if self.path in ("/", "/blank"):
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(BLANK)))
            self.end_headers()
            self.wfile.write(BLANK)
            return
        if not self.path.startswith("/static/"):
            self.send_error(404)
            return
        self.path = self.path.removeprefix("/static")
        super().do_GET()

    def log_message(self, *args: Any) -> None:
        pass  # quiet: failures show up as failed imports in the page


@pytest.fixture(scope="session")
def static_origin() -> Iterator[str]:
    """``http://127.0.0.1:<port>``: the page's static files under ``/static/``, a blank page at ``/``."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_StaticHandler, directory=str(STATIC)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """A Chromium browser (Playwright sync API), shared by the session's tests."""
    path = chromium_path()
    if not path.exists():
        message = (
            f"Chromium not found at {path}: install Debian's chromium (apt-get install -y chromium) "
            "or set TURNLOG_CHROMIUM"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(path), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


PageFactory = Callable[..., Any]


class _Pages:
    """One blank page per time zone, shared by the module tests (they only evaluate functions)."""

    def __init__(self, browser: Any, origin: str) -> None:
        self.browser = browser
        self.origin = origin
        self.pages: dict[str, Any] = {}
        self.problems: list[str] = []

    def get(self, timezone_id: str) -> Any:
        page = self.pages.get(timezone_id)
        if page is None:
            context = self.browser.new_context(
                viewport={"width": 1280, "height": 800}, locale="en-US", timezone_id=timezone_id
            )
            page = context.new_page()
            page.on("pageerror", lambda error: self.problems.append(f"pageerror: {error}"))
            page.on(
                "console",
                lambda message: (
                    self.problems.append(f"console: {message.text}") if message.type == "error" else None
                ),
            )
            page.goto(f"{self.origin}/")
            self.pages[timezone_id] = page
        return page


@pytest.fixture(scope="session")
def _shared_pages(chromium: Any, static_origin: str) -> Iterator[_Pages]:
    pages = _Pages(chromium, static_origin)
    yield pages
    for page in pages.pages.values():
        page.context.close()


@pytest.fixture
def blank_page(_shared_pages: _Pages) -> Iterator[PageFactory]:
    """``blank_page(timezone_id=…)``: a blank page (1280×800, en-US) in that zone, for importing the
    page's modules. Pages are shared between tests; the test fails if a page reported an error or
    logged one to the console while it ran."""
    _shared_pages.problems.clear()
    yield _shared_pages.get
    problems = list(_shared_pages.problems)
    _shared_pages.problems.clear()
    assert problems == []


@pytest.fixture
def fake_model() -> Iterator[FakeModel]:
    """A fake OpenAI-compatible model server (tests/web/fake_model.py). Start ``turnlog web``
    with ``*fake_model.args`` and ``env=fake_model.env``. The test fails if a request arrived
    that the script did not answer."""
    with FakeModel() as model:
        yield model
    assert model.problems == []


@pytest.fixture
def tabs(chromium: Any) -> Iterator[list[Tab]]:
    """The test's browser tabs (:class:`tests.web.browser_support.Tab`), closed after it."""
    opened: list[Tab] = []
    yield opened
    for tab in opened:
        tab.close()
