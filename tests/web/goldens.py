"""Aria-snapshot goldens of the page's named states (web §8 Goldens).

``assert_golden(locator, scenario, state)`` compares ``locator.aria_snapshot()`` — with clocks,
dates, durations and ids normalised (:func:`normalise`) — to
``tests/web/snapshots/<scenario>/<state>.yml``. The page may still be settling when it is called,
so it re-reads the snapshot until it matches, up to a guard against a hang, and then fails with a
diff. ``TURNLOG_REFRESH_GOLDENS=1`` writes the file instead of comparing (review the diff before
committing it); CI only compares, and a missing golden fails saying how to create it.
"""

from __future__ import annotations

import difflib
import os
import re
import time
from pathlib import Path
from typing import Any

SNAPSHOTS = Path(__file__).with_name("snapshots")
REFRESH_ENV = "TURNLOG_REFRESH_GOLDENS"
SETTLE_S = 10.0  # only guards against a hang

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
# Order matters: whole instants before their dates and clocks, dated clocks before bare ones.
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
    (re.compile(r"\bsession-[0-9a-f]{32}\b"), "<session-id>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,3})?(?:Z|[+-]\d{2}:\d{2})"), "<instant>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}\b"), "<date>"),
    (re.compile(rf"\b{_MONTH} \d{{1,2}}(?: \d{{4}})?, \d{{2}}:\d{{2}}\b"), "<clock>"),
    # A clock with seconds and milliseconds, and one cut short by an 80-character summary ("09:30:0…").
    (re.compile(r"\b\d{2}:\d{2}(?::\d{1,2}(?:\.\d{1,3})?)?(?=\D|$)"), "<clock>"),
    (re.compile(r"\b(?:\d+[dhm] )*\d+s\b"), "<duration>"),
)


class GoldenError(AssertionError):
    """A snapshot that differs from its golden, or a golden that does not exist."""


def normalise(snapshot: str) -> str:
    """``snapshot`` with what changes from run to run replaced by placeholders: ``<clock>`` for
    the page's clocks (``HH:MM``, ``MMM D, HH:MM``, ``MMM D YYYY, HH:MM``, with seconds too),
    ``<date>``, ``<instant>``, ``<duration>`` (``Ran for 1m 5s``), ``<uuid>`` and ``<session-id>``."""
    for pattern, placeholder in _RULES:
        snapshot = pattern.sub(placeholder, snapshot)
    return snapshot.rstrip("\n") + "\n"


def golden_path(scenario: str, state: str, root: Path = SNAPSHOTS) -> Path:
    return root / scenario / f"{state}.yml"


def refreshing() -> bool:
    if os.environ.get(REFRESH_ENV) != "1":
        return False
    if os.environ.get("CI") == "true":
        raise GoldenError(f"{REFRESH_ENV}=1 is not honoured under CI=true: CI only compares goldens")
    return True


def compare(actual: str, path: Path) -> None:
    """Raise :class:`GoldenError` unless ``actual`` (normalised) is the golden at ``path``."""
    if not path.exists():
        raise GoldenError(f"no golden {path}: run the test with {REFRESH_ENV}=1 to create it, and review it")
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True), str(path), "page"))
        raise GoldenError(f"the page differs from {path} ({REFRESH_ENV}=1 rewrites it):\n{diff}")


def assert_golden(locator: Any, scenario: str, state: str, root: Path = SNAPSHOTS) -> None:
    """``locator``'s normalised aria snapshot is the golden of ``scenario``/``state``."""
    path = golden_path(scenario, state, root)
    if refreshing():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(normalise(locator.aria_snapshot()), encoding="utf-8")
        return
    deadline = time.monotonic() + SETTLE_S
    while True:
        try:
            compare(normalise(locator.aria_snapshot()), path)
            return
        except GoldenError:
            if not path.exists() or time.monotonic() > deadline:
                raise
        time.sleep(0.1)  # a poll of the DOM, not a wait for time to pass
