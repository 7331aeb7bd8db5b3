"""The aria-snapshot goldens (tests/web/goldens.py): what is normalised, and that a missing or
different golden fails saying what to do, while a refresh writes it (never under CI)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.web.goldens import REFRESH_ENV, GoldenError, assert_golden, golden_path, normalise


class Snapshot:
    """A locator's one method the goldens use, answering a fixed text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def aria_snapshot(self) -> str:
        return self.text


PAGE = """- log "Conversation":
  - text: Remind me at 09:30.
  - time: 23:21
  - time: Dec 2, 07:05
  - time: Jan 31 2025, 00:00
  - 'button "schedule_create {\\"at\\":{\\"date\\":\\"2026-12-02\\",\\"time\\":\\"23:21:5… done"'
  - text: Ran for 1h 2m 3s
  - text: Working… 15s
  - link "session-0123456789abcdef0123456789abcdef"
  - text: 2026-12-02T15:21:50.000Z b8e5e7dd-52a1-437e-a0b6-93725eba64dd"""


def test_clocks_dates_durations_and_ids_are_normalised() -> None:
    assert normalise(PAGE) == """- log "Conversation":
  - text: Remind me at <clock>.
  - time: <clock>
  - time: <clock>
  - time: <clock>
  - 'button "schedule_create {\\"at\\":{\\"date\\":\\"<date>\\",\\"time\\":\\"<clock>… done"'
  - text: Ran for <duration>
  - text: Working… <duration>
  - link "<session-id>"
  - text: <instant> <uuid>
"""
    assert normalise("- paragraph: Fourth of 12 items\n\n") == "- paragraph: Fourth of 12 items\n"


def test_a_missing_golden_fails_saying_how_to_make_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REFRESH_ENV, raising=False)
    with pytest.raises(GoldenError, match=f"no golden .*state.yml: run the test with {REFRESH_ENV}=1"):
        assert_golden(Snapshot(PAGE), "scenario", "state", root=tmp_path)


def test_a_refresh_writes_the_golden_and_a_later_change_fails_with_a_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv(REFRESH_ENV, "1")
    assert_golden(Snapshot("- time: 10:00"), "scenario", "state", root=tmp_path)
    assert golden_path("scenario", "state", tmp_path).read_text() == "- time: <clock>\n"
    monkeypatch.delenv(REFRESH_ENV)
    assert_golden(Snapshot("- time: 11:59\n"), "scenario", "state", root=tmp_path)
    monkeypatch.setattr("tests.web.goldens.SETTLE_S", 0.0)
    with pytest.raises(GoldenError, match=r"(?s)differs from .*state.yml.*\n - time: <clock>\n\+- text: new\n$"):
        assert_golden(Snapshot("- time: 10:00\n- text: new"), "scenario", "state", root=tmp_path)


def test_ci_never_rewrites_a_golden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv(REFRESH_ENV, "1")
    with pytest.raises(GoldenError, match="not honoured under CI=true"):
        assert_golden(Snapshot("- time: 10:00"), "scenario", "state", root=tmp_path)
    assert not (tmp_path / "scenario").exists()
