"""What the read-only log commands load (issue 15, start-up): ``turnlog ls``, ``inspect`` and
``validate`` find the root through ``host._root`` and never load the agent runtime, the model
adapters, the JSON-RPC server or the web front door; eventlog's read-only commands run as
plain calls, never under ``trio.run``.

Each command runs in a fresh interpreter, which then prints the modules it has loaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixture_paths import FIXTURES

HEAVY = ("host.runtime", "host.models", "host.rpc", "host.web")

# Runs the console script's entry point, then reports sys.modules and whether trio.run was
# called (trio, when something loads it, is wrapped before any command can use it).
PROBE = """
import json, sys
import trio
ran = []
real_run = trio.run
def run(*args, **kwargs):
    ran.append(True)
    return real_run(*args, **kwargs)
trio.run = run
from host.cli import main
status = main(sys.argv[1:])
sys.stdout.flush()
print(json.dumps({"status": status, "modules": sorted(sys.modules), "trio_run": bool(ran)}), file=sys.stderr)
"""


def loaded(tmp_path: Path, *argv: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k not in ("DSH_SESSION_ROOT", "XDG_DATA_HOME")}
    env["TURNLOG_HOME"] = str(tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    report: dict[str, object] = json.loads(result.stderr.strip().splitlines()[-1])
    return report


@pytest.fixture
def home(tmp_path: Path) -> Path:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    (sessions / "demo-1.jsonl").write_bytes((FIXTURES / "demo-1.jsonl").read_bytes())
    return tmp_path


@pytest.mark.parametrize(
    "argv",
    [["ls"], ["ls", "--json"], ["inspect", "demo-1"], ["inspect", "demo-1", "--json"], ["validate"]],
    ids=lambda argv: " ".join(argv),
)
def test_a_read_only_log_command_loads_no_agent_layer(home: Path, argv: list[str]) -> None:
    report = loaded(home, *argv)
    assert report["status"] == 0
    modules = report["modules"]
    assert isinstance(modules, list)
    heavy = sorted(m for m in modules if m.startswith(HEAVY))
    assert heavy == []


@pytest.mark.parametrize("argv", [["ls", "--json"], ["inspect", "demo-1"], ["validate"]], ids=" ".join)
def test_eventlog_read_only_commands_run_without_an_event_loop(home: Path, argv: list[str]) -> None:
    report = loaded(home, *argv)
    assert report["status"] == 0 and report["trio_run"] is False


def test_the_waiting_commands_still_run_under_trio(home: Path) -> None:
    report = loaded(home, "tail", "demo-1", "-n", "1")
    assert report["status"] == 0 and report["trio_run"] is True
