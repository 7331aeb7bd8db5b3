"""What the read-only log commands load (issue 15, start-up): ``turnlog ls``, ``show``,
``inspect`` and ``validate`` (and ``python -m eventlog``'s) find the root through ``host._root``,
run as plain calls and load neither trio nor the agent runtime, the model adapters, the JSON-RPC
server or the web front door. ``tail`` and ``fork`` still run under trio.

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

AGENT_LAYERS = ("host.runtime", "host.models", "host.rpc", "host.web")

# Runs the console script's entry point (or eventlog's), then reports sys.modules.
PROBE = """
import json, sys
from {module} import main
status = main(sys.argv[1:])
sys.stdout.flush()
print(json.dumps({{"status": status, "modules": sorted(sys.modules)}}), file=sys.stderr)
"""


def loaded(tmp_path: Path, *argv: str, module: str = "host.cli") -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k not in ("DSH_SESSION_ROOT", "XDG_DATA_HOME")}
    env["TURNLOG_HOME"] = str(tmp_path)
    probe = PROBE.format(module=module)
    result = subprocess.run(
        [sys.executable, "-c", probe, *argv], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    report: dict[str, object] = json.loads(result.stderr.strip().splitlines()[-1])
    return report


@pytest.fixture
def home(tmp_path: Path) -> Path:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    (sessions / "demo-1.jsonl").write_bytes((FIXTURES / "demo-1.jsonl").read_bytes())
    return tmp_path


def heavy(report: dict[str, object]) -> list[str]:
    """The modules of trio and of host's agent layers that the command loaded."""
    modules = report["modules"]
    assert isinstance(modules, list)
    return sorted(m for m in modules if m.split(".")[0] == "trio" or m.startswith(AGENT_LAYERS))


@pytest.mark.parametrize(
    "argv",
    [["ls"], ["ls", "--json"], ["show", "demo-1"], ["inspect", "demo-1"], ["inspect", "demo-1", "--json"],
     ["validate"]],
    ids=" ".join,
)
def test_a_read_only_log_command_loads_neither_trio_nor_an_agent_layer(home: Path, argv: list[str]) -> None:
    report = loaded(home, *argv)
    assert report["status"] == 0
    assert heavy(report) == []


@pytest.mark.parametrize("argv", [["ls"], ["inspect", "demo-1"], ["validate"]], ids=" ".join)
def test_python_m_eventlog_read_only_commands_load_no_trio(home: Path, argv: list[str]) -> None:
    report = loaded(home, *argv, "--root", str(home / "sessions"), module="eventlog.cli")
    assert report["status"] == 0
    assert heavy(report) == []


def test_the_waiting_commands_still_run_under_trio(home: Path) -> None:
    report = loaded(home, "tail", "demo-1", "-n", "1")
    assert report["status"] == 0 and "trio" in heavy(report)


def test_serve_loads_neither_the_line_editor_nor_the_web_front_door(home: Path) -> None:
    """``turnlog serve`` answers JSON-RPC on stdio: prompt_toolkit (chat's line editor), hypercorn
    and starlette (``turnlog web``) are not on its way to the first reply."""
    env = {k: v for k, v in os.environ.items() if k not in ("DSH_SESSION_ROOT", "XDG_DATA_HOME")}
    env["TURNLOG_HOME"] = str(home)
    probe = PROBE.format(module="host.cli")
    request = '{"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}\n'
    result = subprocess.run(
        [sys.executable, "-c", probe, "serve"], input=request, capture_output=True, text=True, env=env,
        timeout=120, check=False,
    )
    assert json.loads(result.stdout.splitlines()[0])["id"] == 1
    report = json.loads(result.stderr.strip().splitlines()[-1])
    assert report["status"] == 0
    modules = report["modules"]
    assert [m for m in modules if m.split(".")[0] in ("prompt_toolkit", "hypercorn", "starlette")] == []
    assert "host.rpc" in modules  # the probe did run the server
