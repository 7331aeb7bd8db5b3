"""Fixtures shared by the eventlog tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.fixture_paths import DSH_FIXTURES

DSH = DSH_FIXTURES


@pytest.fixture
def dsh(tmp_path: Path) -> Path:
    """A directory of copies of the real deepseek-harness logs (the originals are read-only)."""
    target = tmp_path / "dsh"
    shutil.copytree(DSH, target)
    return target
