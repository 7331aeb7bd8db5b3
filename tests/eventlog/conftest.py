"""Fixtures shared by the eventlog tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.shared_fixtures import DSH_FIXTURES

DSH = DSH_FIXTURES


@pytest.fixture
def dsh(tmp_path: Path) -> Path:
    """A directory of copies of the real deepseek-harness logs (the originals are read-only)."""
    if not DSH.is_dir():
        pytest.skip("deepseek-harness fixtures are not available")
    target = tmp_path / "dsh"
    shutil.copytree(DSH, target)
    return target
