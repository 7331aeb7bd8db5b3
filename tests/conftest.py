"""Project-wide test setup."""

from __future__ import annotations

import hashlib
import os
import tempfile
import zoneinfo
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase

# Every zone comes from the tzdata package, as in the turnlog application (docs/host.md §7), so
# results do not depend on the machine's system time-zone database.
zoneinfo.reset_tzpath(to=())

# A test run writes nothing into the working tree: hypothesis keeps its example database in the
# temporary directory locally (one per checkout, so two clones never replay each other's examples),
# and none at all in CI, where every run starts clean and must not depend on what an earlier run found.
_CHECKOUT = hashlib.sha256(str(Path(__file__).resolve().parents[1]).encode()).hexdigest()[:12]
_HYPOTHESIS_DB = Path(tempfile.gettempdir()) / f"turnlog-hypothesis-{os.getuid()}-{_CHECKOUT}"
settings.register_profile("dev", database=DirectoryBasedExampleDatabase(_HYPOTHESIS_DB))
settings.register_profile("ci", database=None, print_blob=True, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fuzz-long",
        action="store_true",
        help="run tests/fuzz with a long example budget (minutes) instead of the default run's short one",
    )
