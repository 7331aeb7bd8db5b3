"""The ``turnlog`` command line (host §7): the demo as a user runs it, help and version,
usage errors, and the log commands mounted with the host's root rules (host §5.1)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import trio

from eventlog import SessionStore, read_log
from host.cli import main
from tests.host.process_support import TURNLOG, with_default_sigint

REPO = Path(__file__).resolve().parents[3]
ROOT_VARS = ("TURNLOG_HOME", "DSH_SESSION_ROOT", "XDG_DATA_HOME")
DEMO_ID = r"demo-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{4}"


def turnlog(
    *args: str, env: dict[str, str] | None = None, stdin: bytes | None = b""
) -> subprocess.CompletedProcess[str]:
    """The installed console script, as a user runs it."""
    base = {k: v for k, v in os.environ.items() if k not in ROOT_VARS and k != "TZ"}
    return subprocess.run(
        [str(TURNLOG), *args],
        input=stdin,
        check=False,
        capture_output=True,
        env={**base, **(env or {})},
        timeout=120,
    )


def _text(done: subprocess.CompletedProcess[Any]) -> tuple[str, str]:
    return done.stdout.decode(), done.stderr.decode()


def _dispatches(path: Path) -> list[str]:
    return [
        e.value()["id"]
        for e in read_log(path).events
        if e.type == "schedule/change" and e.value()["operation"] == "dispatch"
    ]


# --- demo ----------------------------------------------------------------------------------------


def test_demo_tour_in_the_default_root(tmp_path: Path) -> None:
    done = turnlog("demo", "--seconds", "1", env={"HOME": str(tmp_path)})
    out, err = _text(done)
    assert done.returncode == 0, err
    assert err == ""
    root = tmp_path / ".local" / "share" / "turnlog" / "sessions"
    lines = out.splitlines()
    session_id = re.search(DEMO_ID, out).group(0)
    assert lines[0] == f"root: {root}"
    assert session_id in lines[1]
    assert "model: scripted (offline)" in lines
    assert "> remind me in 1 seconds to stretch" in lines
    assert any(line.startswith("· schedule_create ") for line in lines)
    assert any(line.startswith('· → {"id":"schedule-1"') for line in lines)
    assert "waiting 1 s for the reminder…" in lines
    assert "Reminder: stretch" in lines
    restarted = [line for line in lines if line.startswith("restarted: ")]
    assert len(restarted) == 1
    assert re.fullmatch(
        r"restarted: [0-9]+ events replayed, 0 active reminders, 1 dispatch \(no second dispatch\)",
        restarted[0],
    )
    path = root / f"{session_id}.jsonl"
    assert str(path) in out
    assert f"turnlog inspect {session_id}" in out and f"turnlog tail {session_id}" in out
    # the checks the demo reports, made again on the file
    assert _dispatches(path) == ["schedule-1"]
    turns = [e.value()["turn"] for e in read_log(path).events if e.type == "turn/start"]
    assert turns == [1, 2]
    assert oct(root.stat().st_mode & 0o777) == oct(0o700)
    inspected = turnlog("inspect", session_id, "--json", env={"HOME": str(tmp_path)})
    assert inspected.returncode == 0 and json.loads(inspected.stdout)["id"] == session_id


def test_demo_json_in_turnlog_home(tmp_path: Path) -> None:
    done = turnlog("demo", "--seconds", "1", "--json", env={"TURNLOG_HOME": str(tmp_path / "home")})
    out, err = _text(done)
    assert done.returncode == 0, err
    result = json.loads(out)
    assert out.count("\n") == 1
    assert list(result) == ["sessionId", "path", "events", "turns", "dispatches", "ok"]
    assert re.fullmatch(DEMO_ID, result["sessionId"])
    path = Path(result["path"])
    assert path == tmp_path / "home" / "sessions" / f"{result['sessionId']}.jsonl"
    assert (result["turns"], result["dispatches"], result["ok"]) == (2, 1, True)
    assert result["events"] == len(read_log(path).events)
    assert _dispatches(path) == ["schedule-1"]


def test_demo_in_a_new_dsh_zstd_root(tmp_path: Path) -> None:
    """The demo's final check reads the log where a dsh root puts it (dsh-roots §3), found once
    the session exists, not a flat path guessed before."""
    root = tmp_path / "dsh"
    done = turnlog(
        "demo", "--seconds", "1", "--json", "--root", str(root), "--layout", "dsh", "--compression", "zstd"
    )
    out, err = _text(done)
    assert done.returncode == 0, err
    result = json.loads(out)
    path = Path(result["path"])
    assert path.name == "session.jsonl.zstd" and path.parent.name == result["sessionId"]
    assert path.parent.parent.parent == root and path.parent.parent.name.startswith("--")
    assert result["ok"] is True and _dispatches(path) == ["schedule-1"]


def test_demo_in_an_unusable_root_fails_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    done = turnlog("demo", "--seconds", "1", "--root", str(tmp_path / "file" / "root"))
    _, err = _text(done)
    assert done.returncode == 1
    assert len(err.splitlines()) == 1 and err.startswith("turnlog: ")


def test_demo_interrupted_by_ctrl_c_exits_130_without_a_traceback(tmp_path: Path) -> None:
    """host §7: 130 after SIGINT, also when the Ctrl-C lands while the demo waits inside the host."""
    base = {k: v for k, v in os.environ.items() if k not in ROOT_VARS and k != "TZ"}
    proc = subprocess.Popen(
        # SIGINT at its default even when this test run was started in the background (an
        # ignored SIGINT is inherited, and the demo then could not be interrupted at all)
        with_default_sigint([str(TURNLOG), "demo", "--seconds", "60", "--root", str(tmp_path)]),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=base,
    )
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            if raw.startswith(b"waiting 60 s"):
                break
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert err == b""


# --- help, version, usage errors -----------------------------------------------------------------


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"turnlog {version}\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["-h"],
        ["demo", "--help"],
        ["chat", "--help"],
        ["serve", "--help"],
        ["ls", "--help"],
        ["inspect", "--help"],
        ["validate", "--help"],
        ["tail", "--help"],
        ["fork", "--help"],
    ],
)
def test_help_on_every_command(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "usage: turnlog" in captured.out and captured.err == ""
    assert "--root" in captured.out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "turnlog: missing command; see turnlog --help"),
        (["frobnicate"], "turnlog: unknown command 'frobnicate'; see turnlog --help"),
        (["demo", "--seconds", "0"], None),
        (["demo", "--seconds", "61"], None),
        (["demo", "--seconds", "three"], None),
        (["demo", "--bogus"], None),
        (["chat", "--max-steps", "0"], None),
        (["serve", "--provider", "nope"], None),
        (["serve", "--time-zone", "GMT"], 'turnlog: time-context: invalid IANA timeZone "GMT"'),
        (["serve", "--time-refresh-ms", "-1"], None),
        (
            ["chat", "--provider", "openai"],
            'turnlog: --model or TURNLOG_MODEL is required for provider "openai"',
        ),
        (["ls", "--bogus"], None),
        (
            ["chat", "--sesion", "x"],
            "turnlog: unrecognized arguments: --sesion x (did you mean --session?); see turnlog chat --help",
        ),
        (
            ["show", "x", "--jsn", "--utcc"],
            "turnlog: unrecognized arguments: --jsn --utcc (did you mean --json or --utc?); see turnlog show --help",
        ),
        (["ls", "--zzz"], "turnlog: unrecognized arguments: --zzz; see turnlog ls --help"),
        (
            ["chat", "--sesion=x"],
            "turnlog: unrecognized arguments: --sesion=x (did you mean --session?); see turnlog chat --help",
        ),
        (
            ["models", "--jason"],
            "turnlog: unrecognized arguments: --jason (did you mean --json?); see turnlog models --help",
        ),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    argv: list[str], message: str | None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TURNLOG_MODEL", raising=False)
    monkeypatch.delenv("TURNLOG_BASE_URL", raising=False)
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1 and captured.err.startswith("turnlog: ")
    if message is not None:
        assert captured.err == message + "\n"


def test_bad_script_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "s.jsonl"
    script.write_text('{"text":"ok"}\n\n{"text":5}\n')
    assert main(["chat", "--script", str(script), "--root", str(tmp_path)]) == 2
    assert re.fullmatch(r"turnlog: script line 3: .+\n", capsys.readouterr().err)


@pytest.mark.parametrize("command", ["demo", "chat", "serve"])
def test_unresolvable_system_zone_exits_2_before_any_output(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "EST5EDT")
    assert main([command, "--root", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "turnlog: time-context: failed to resolve the system time zone; pass --time-zone ZONE or --no-time-context\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_serve_without_time_context_ignores_the_system_zone(tmp_path: Path) -> None:
    done = turnlog("serve", "--root", str(tmp_path), "--no-time-context", env={"TZ": "EST5EDT"})
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def test_bare_profile_means_serve(tmp_path: Path) -> None:
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/list"}).encode() + b"\n"
    done = turnlog("--profile", "sdk", "--root", str(tmp_path), stdin=line)
    assert done.returncode == 0
    assert json.loads(done.stdout) == {"jsonrpc": "2.0", "id": 1, "result": {"sessions": [], "skipped": []}}


# --- log commands and the root rules -------------------------------------------------------------


def _make_session(root: Path, session_id: str, events: list[tuple[str, dict[str, Any]]]) -> None:
    async def write() -> None:
        async with SessionStore(root).create(id=session_id) as session:
            for kind, data in events:
                session.append(kind, data, surface_op="append" if kind == "user/message" else None)
            await session.flush()

    trio.run(write)


def _ls(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(argv) == 0
    return [row["id"] for row in json.loads(capsys.readouterr().out)]


def test_log_commands_use_the_host_root_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ROOT_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    done = [("turn/start", {"turn": 1}), ("turn/end", {"turn": 1, "reason": {"kind": "completed"}})]
    _make_session(tmp_path / "dsh", "from-dsh", done)
    _make_session(tmp_path / "th" / "sessions", "from-home", done)
    _make_session(tmp_path / "xdg" / "turnlog" / "sessions", "from-xdg", done)
    _make_session(tmp_path / "home" / ".local" / "share" / "turnlog" / "sessions", "from-default", done)
    _make_session(tmp_path / "flag", "from-flag", done)

    assert _ls(["ls", "--json"], capsys) == ["from-default"]
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert _ls(["ls", "--json"], capsys) == ["from-xdg"]
    monkeypatch.setenv("DSH_SESSION_ROOT", str(tmp_path / "dsh"))
    assert _ls(["ls", "--json"], capsys) == ["from-dsh"]
    monkeypatch.setenv("TURNLOG_HOME", "")  # empty counts as unset
    assert _ls(["ls", "--json"], capsys) == ["from-dsh"]
    monkeypatch.setenv("TURNLOG_HOME", str(tmp_path / "th"))
    assert _ls(["ls", "--json"], capsys) == ["from-home"]
    assert _ls(["ls", "--json", "--root", str(tmp_path / "flag")], capsys) == ["from-flag"]
    assert _ls(["--root", str(tmp_path / "flag"), "ls", "--json"], capsys) == ["from-flag"]
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TURNLOG_HOME")
    monkeypatch.setenv("DSH_SESSION_ROOT", "dsh")  # relative to the process cwd
    assert _ls(["ls", "--json"], capsys) == ["from-dsh"]
    assert main(["inspect", "from-dsh", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == "from-dsh"
    assert main(["fork", "from-dsh", "--id", "child", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == "child"
    assert (tmp_path / "dsh" / "child.jsonl").exists()


def test_validate_runs_the_schedule_and_time_context_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (
        "Time sampled while preparing turn 1, step 1: 2026-02-10T12:00:00+00:00[UTC]\n"
        "Client time zone for this request: unavailable. Ask the user to clarify otherwise-unqualified "
        "dates and times.\nElapsed since the preceding model-visible message: unavailable."
    )
    reading = {
        "id": "r1",
        "role": "user",
        "source": {
            "kind": "plugin",
            "plugin": "time-context",
            "form": "snapshot",
            "sections": [{"name": "time-context", "text": text}],
        },
        "content": [{"type": "text", "text": text}],
    }
    _make_session(
        tmp_path,
        "bad-schedule",
        [("schedule/change", {"version": 1, "operation": "dispatch", "id": "schedule-9"})],
    )
    _make_session(tmp_path, "bad-reading", [("user/message", reading)])
    _make_session(
        tmp_path,
        "fine",
        [("turn/start", {"turn": 1}), ("turn/end", {"turn": 1, "reason": {"kind": "completed"}})],
    )
    assert main(["validate", "--root", str(tmp_path), "--json"]) == 1
    verdicts = {v["id"]: v for v in json.loads(capsys.readouterr().out)}
    assert verdicts["fine"]["status"] == "ok"
    assert verdicts["bad-schedule"]["status"] == "invalid"
    assert 'schedule dispatch targets inactive id "schedule-9"' in verdicts["bad-schedule"]["messages"]
    assert verdicts["bad-reading"]["status"] == "invalid"
    assert "time-context reading must be appended inside an open turn" in verdicts["bad-reading"]["messages"]
