"""The fuzz suite's budget: a few dozen examples per property in the default run, thousands with
``--fuzz-long`` (``tests/run tests/fuzz --fuzz-long``)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

SHORT_EXAMPLES = 40
LONG_EXAMPLES = 3000


@pytest.fixture(scope="session")
def fuzz_settings(request: pytest.FixtureRequest) -> settings:
    """The settings every fuzz property runs under (no deadline: the machine is shared)."""
    long = bool(request.config.getoption("--fuzz-long"))
    return settings(
        max_examples=LONG_EXAMPLES if long else SHORT_EXAMPLES,
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.function_scoped_fixture,
            HealthCheck.data_too_large,
        ],
    )
