"""The package boundary (time-context §2, time-context §8.4): imports and public names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import timecontext


def test_timecontext_imports_neither_schedule_nor_host() -> None:
    code = (
        "import sys, timecontext\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('schedule', 'host'))\n"
        "assert not bad, bad\n"
    )
    root = Path(timecontext.__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)


def test_public_names() -> None:
    expected = {
        "TimeContext", "format_timestamp", "format_duration", "client_zones", "policy_line",
        "render_reading", "reading_message", "process_zone", "sampled_zone", "PreStep", "Enter",
        "Reject", "ClientZoneError", "TimeContextConfigError", "ReadingInvariantError",
        "ReadingViolation", "ReadingReport", "check_reading", "validate_readings", "ZONE_SHAPE",
        "EventLike", "Clock", "ZoneCanonicalizer", "PreStepHook", "Decision", "Message",
    }
    assert expected <= set(timecontext.__all__)
    assert all(hasattr(timecontext, name) for name in timecontext.__all__)
    for error in (timecontext.ClientZoneError, timecontext.TimeContextConfigError,
                  timecontext.ReadingInvariantError):
        assert issubclass(error, ValueError)
