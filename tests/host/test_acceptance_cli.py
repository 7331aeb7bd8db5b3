"""Acceptance tests of the ``turnlog`` command line as a user meets it (host §7, host §5.1,
log-format §10): every command runs as a subprocess of the installed console script, and every
expectation comes from the spec text.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from eventlog import SessionStore, dsh_log_path, read_header
from tests.host.process_support import TURNLOG, UUID4, VERSION, clean_env

HANG_GUARD_S = 60.0  # guards against a hang only; never an assertion about speed
DEMO_ID = r"demo-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{4}"
ZONE_FAILURE = (
    "turnlog: time-context: failed to resolve the system time zone; pass --time-zone ZONE or --no-time-context\n"
)
EXIT_LINE = "reminders fire only while the session is open; continue with: turnlog chat --session {id}"
MODEL_FLAGS = ("--provider", "--model", "--script", "--system", "--max-steps", "--time-context",
               "--no-time-context", "--time-zone", "--time-refresh-ms")



def turnlog(*args: str, env: dict[str, str] | None = None, stdin: str = "", cwd: Path | None = None,
            module: bool = False) -> subprocess.CompletedProcess[str]:
    """``turnlog ARGS`` (or ``python -m host ARGS``) to completion, text in and out."""
    argv = [sys.executable, "-m", "host"] if module else [str(TURNLOG)]
    return subprocess.run([*argv, *args], input=stdin, check=False, capture_output=True, text=True,
                          env=env if env is not None else clean_env(), cwd=cwd, timeout=HANG_GUARD_S)


def header_line(session_id: str, created_at: int = 1) -> str:
    return json.dumps({"type": "session", "version": 0, "id": session_id, "createdAt": created_at},
                      separators=(",", ":")) + "\n"


def write_session(root: Path, session_id: str) -> Path:
    """A small, complete session file: one finished turn."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"{session_id}.jsonl"
    path.write_text(
        header_line(session_id)
        + '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}\n'
        + '{"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}\n'
    )
    return path


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


# === help, version, usage errors ==================================================================


def test_version_and_help() -> None:
    for done in (turnlog("--version"), turnlog("--version", module=True)):
        assert done.returncode == 0 and done.stderr == ""
        assert VERSION in done.stdout and done.stdout.count("\n") == 1
    top = turnlog("--help")
    assert top.returncode == 0 and top.stderr == ""
    assert turnlog("--root", "elsewhere", "--help").stdout == top.stdout
    assert turnlog("--root", "elsewhere", "--version").stdout == turnlog("--version").stdout
    for command in ("demo", "chat", "serve", "ls", "inspect", "validate", "tail", "fork"):
        assert command in top.stdout
    expected = {
        "demo": ("--root", "--seconds", "--json"),
        "chat": ("--root", "--session", *MODEL_FLAGS),
        "serve": ("--root", *MODEL_FLAGS, "--max-line-bytes", "--profile", "--patch"),
        "tail": ("--root", "-n", "--from", "-f", "--json"),
        "fork": ("--root", "--at", "--id", "--json"),
    }
    for command, flags in expected.items():
        done = turnlog(command, "--help")
        assert done.returncode == 0 and done.stderr == "", done.stderr
        for flag in flags:
            assert flag in done.stdout, (command, flag)


@pytest.mark.parametrize(("argv", "env", "message"), [
    ([], {}, None),
    (["frobnicate"], {}, None),
    (["--root"], {}, None),
    (["demo", "--seconds", "0"], {}, None),
    (["demo", "--seconds", "61"], {}, None),
    (["chat", "--provider", "bogus"], {}, None),
    (["serve", "--time-zone", "utc"], {}, 'turnlog: time-context: invalid IANA timeZone "utc"\n'),
    (["serve", "--max-line-bytes", "0"], {}, None),
    (["chat", "--provider", "openai"], {}, 'turnlog: --model or TURNLOG_MODEL is required for provider "openai"\n'),
    (["chat"], {"TURNLOG_BASE_URL": "http://127.0.0.1:9"},  # the default provider is then openai
     'turnlog: --model or TURNLOG_MODEL is required for provider "openai"\n'),
    (["chat", "--provider", "deepseek-official"], {"DEEPSEEK_API_KEY": "k"},
     'turnlog: --model or TURNLOG_MODEL is required for provider "deepseek-official"\n'),
    (["serve", "--script", "/nonexistent/script.jsonl"], {}, None),
    (["inspect"], {}, None),
    (["ls", "--bogus"], {}, None),
])
def test_usage_errors_exit_2_with_one_line(tmp_path: Path, argv: list[str], env: dict[str, str],
                                           message: str | None) -> None:
    commands = ("demo", "chat", "serve", "ls", "inspect")
    root = ["--root", str(tmp_path / "root")] if argv and argv[0] in commands else []
    done = turnlog(*argv, *root, env=clean_env(**env))
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("turnlog: ")
    if message is not None:
        assert done.stderr == message
    assert not (tmp_path / "root").exists()


def test_a_bad_script_is_a_usage_error_naming_its_line(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text('{"text":"fine"}\n\n{"finish":"sideways"}\n')
    for command in ("serve", "chat"):
        done = turnlog(command, "--root", str(tmp_path / "root"), "--script", str(script))
        assert done.returncode == 2 and done.stdout == ""
        assert re.fullmatch(r"turnlog: script line 3: [^\n]+\n", done.stderr), done.stderr
    done = turnlog("serve", "--root", str(tmp_path / "root"), env=clean_env(TURNLOG_SCRIPT=str(script)))
    assert done.returncode == 2 and done.stderr.startswith("turnlog: script line 3: ")


def test_unresolvable_system_zone(tmp_path: Path) -> None:
    """host §7 start-up: with time context on, no --time-zone and TZ=EST5EDT, exit 2 before any output."""
    env = clean_env(TZ="EST5EDT")
    root = tmp_path / "root"
    for argv in (["demo", "--seconds", "1"], ["chat"], ["serve"], ["serve", "--time-context"]):
        done = turnlog(*argv, "--root", str(root), env=env, stdin="hi\n")
        assert (done.returncode, done.stdout, done.stderr) == (2, "", ZONE_FAILURE), argv
    assert not root.exists()
    for argv in (["serve", "--no-time-context"], ["serve", "--time-zone", "Asia/Calcutta"]):
        done = turnlog(*argv, "--root", str(root), env=env)  # EOF at once: a clean exit
        assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), argv


# === host §7.1 demo ====================================================================================


def test_demo_json(tmp_path: Path) -> None:
    done = turnlog("demo", "--seconds", "1", "--json", "--root", "rel", cwd=tmp_path,
                   env=clean_env(TZ="Asia/Calcutta"))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.count("\n") == 1
    summary = json.loads(done.stdout)
    assert list(summary) == ["sessionId", "path", "events", "turns", "dispatches", "ok"]
    assert re.fullmatch(DEMO_ID, summary["sessionId"])
    path = tmp_path / "rel" / f"{summary['sessionId']}.jsonl"  # --root resolves against the cwd
    assert summary["path"] == str(path)
    events = records(path)
    assert summary == {"sessionId": summary["sessionId"], "path": str(path), "events": len(events), "turns": 2,
                       "dispatches": 1, "ok": True}
    assert done.stdout == json.dumps(summary, separators=(",", ":")) + "\n"
    # The demo's own checks, made again on the file.
    assert [e["data"]["turn"] for e in events if e["type"] == "turn/start"] == [1, 2]
    assert [e["data"] for e in events if e["type"] == "schedule/change" and e["data"]["operation"] == "dispatch"] == [
        {"version": 1, "operation": "dispatch", "id": "schedule-1"}]
    prompts = [e["data"] for e in events if e["type"] == "user/message" and e["data"]["source"]["kind"] == "user"]
    assert [p["content"] for p in prompts] == [[{"type": "text", "text": "remind me in 1 seconds to stretch"}]]
    source = prompts[0]["source"]
    assert list(source) == ["kind", "rpcId", "clientTimeZone"] and source["clientTimeZone"] == "Asia/Kolkata"
    assert re.fullmatch(UUID4, source["rpcId"])
    assert events[-1]["type"] == "turn/end" and events[-1]["data"] == {"turn": 2, "reason": {"kind": "completed"}}


def test_demo_tour(tmp_path: Path) -> None:
    env = clean_env(TURNLOG_HOME=str(tmp_path / "home"), DSH_SESSION_ROOT=str(tmp_path / "dsh"))
    done = turnlog("demo", "--seconds", "1", env=env)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    lines = done.stdout.splitlines()
    root = tmp_path / "home" / "sessions"
    session_id = re.search(DEMO_ID, done.stdout).group(0)  # type: ignore[union-attr]
    path = root / f"{session_id}.jsonl"
    events = records(path)
    assert str(root) in lines[0] and session_id in lines[1] and "model: scripted (offline)" in lines[2]
    for expected in ("waiting 1 s for the reminder…", "Reminder: stretch",
                     f"restarted: {len(events)} events replayed, 0 active reminders, 1 dispatch (no second dispatch)"):
        assert expected in lines, (expected, lines)
    assert lines.index("waiting 1 s for the reminder…") < lines.index("Reminder: stretch")
    assert any("stretch" in line for line in lines[lines.index("waiting 1 s for the reminder…") + 1:
                                                      lines.index("Reminder: stretch")])
    tail = "\n".join(lines[-4:])
    assert str(path) in done.stdout
    assert f"turnlog inspect {session_id}" in tail and f"turnlog tail {session_id}" in tail
    assert not (tmp_path / "dsh").exists()  # TURNLOG_HOME comes first


# === host §7.2 chat, piped =============================================================================


def test_chat_piped(tmp_path: Path) -> None:
    root = tmp_path / "root"
    done = turnlog("chat", "--root", str(root), env=clean_env(TZ="Asia/Calcutta"),
                   stdin="hi\nremind me in 5 minutes to stretch\n/reminders\n/session\n")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    session_id = re.search(r"session-[0-9a-f]{32}", lines[0]).group(0)  # type: ignore[union-attr]
    path = root / f"{session_id}.jsonl"
    assert str(path) in done.stdout.split("You said: hi")[0]  # id and path printed at start
    assert "You said: hi" in lines
    assert '· schedule_create {"prompt":"stretch","after_seconds":300}' in lines
    result_line = next(line for line in lines if line.startswith("· → "))
    created = json.loads(result_line[len("· → "):])
    assert created["id"] == "schedule-1" and created["afterSeconds"] == 300
    assert f"Reminder schedule-1 is set for {created['scheduledAt']}." in lines
    assert any("schedule-1" in line and "stretch" in line for line in lines[lines.index(result_line) + 2:])
    assert lines[-1] == EXIT_LINE.format(id=session_id)
    events = records(path)
    sources = [e["data"]["source"] for e in events if e["type"] == "user/message"
               and e["data"]["source"]["kind"] == "user"]
    assert len(sources) == 2 and len({s["rpcId"] for s in sources}) == 2  # a fresh UUID4 per prompt
    assert all(list(s) == ["kind", "rpcId", "clientTimeZone"] and re.fullmatch(UUID4, s["rpcId"])
               and s["clientTimeZone"] == "Asia/Kolkata" for s in sources)

    # Resumed: the last five shown messages, then the new prompt; an unresolvable process zone
    # is never sent (and never replaced by a default); errors show as `! <code>: <message>`.
    script = tmp_path / "script.jsonl"
    script.write_text('{"error":{"message":"nope","code":"AUTH","status":401}}\n')
    again = turnlog("chat", "--root", str(root), "--session", session_id, "--no-time-context", "--script",
                    str(script), env=clean_env(TZ="EST5EDT"), stdin="tell me\n")
    assert again.returncode == 1, again.stderr  # piped chat exits 1 when a turn failed
    shown = again.stdout.splitlines()
    assert shown[:7] == [  # the id and path, then the five messages before this run
        f"session: {session_id}", f"log: {path}", "You said: hi", "> remind me in 5 minutes to stretch",
        '· schedule_create {"prompt":"stretch","after_seconds":300}', result_line,
        f"Reminder schedule-1 is set for {created['scheduledAt']}.",
    ]
    assert "! AUTH: nope" in shown
    assert shown[-1] == EXIT_LINE.format(id=session_id)
    last = [e["data"]["source"] for e in records(path) if e["type"] == "user/message"
            and e["data"]["source"]["kind"] == "user"][-1]
    assert list(last) == ["kind", "rpcId"]


def test_chat_rejects_a_bad_session_id(tmp_path: Path) -> None:
    done = turnlog("chat", "--root", str(tmp_path), "--session", "../x")
    assert done.returncode == 2 and done.stdout == "" and done.stderr.startswith("turnlog: ")
    assert list(tmp_path.iterdir()) == []


# === host §7.3 serve and bare --profile ================================================================


def test_bare_profile_is_serve_and_patches_are_ignored(tmp_path: Path) -> None:
    line = '{"jsonrpc":"2.0","id":1,"method":"session/list"}\n'
    done = turnlog("--profile", "sdk", "--patch", "/p.patch", "--root", str(tmp_path), stdin=line)
    assert done.returncode == 0
    assert done.stdout == '{"jsonrpc":"2.0","id":1,"result":{"sessions":[],"skipped":[]}}\n'
    assert done.stderr.startswith("turnlog serve: ") and "/p.patch" in done.stderr
    assert done.stderr.count("\n") == 1
    done = turnlog("serve", "--profile", "anything", "--root", str(tmp_path), stdin=line)
    assert done.returncode == 0 and done.stderr == ""


def test_serve_start_up_failures_write_no_frame(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for root in (tmp_path / "file", tmp_path / "file" / "below"):
        done = turnlog("serve", "--root", str(root), stdin='{"jsonrpc":"2.0","id":1,"method":"session/list"}\n')
        assert done.returncode == 1 and done.stdout == "", done
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("turnlog: ")


# === host §7.4 log commands: mounted, with the root rules of host §5.1 ======================================


def test_a_fork_into_an_empty_root_from_dsh_session_root_writes_dsh_zstd(tmp_path: Path) -> None:
    # dsh-roots §3: the root's default is the reference's when it came from $DSH_SESSION_ROOT,
    # not when --root names it.
    source = tmp_path / "parent.jsonl"
    source.write_text(header_line("parent") + '{"type":"note/x","seq":0,"time":2,"data":{}}\n')
    env = clean_env(DSH_SESSION_ROOT=str(tmp_path / "dsh"))
    done = turnlog("fork", str(source), "--id", "child", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["path"] == str(dsh_log_path(tmp_path / "dsh", None, "child", "zstd"))
    done = turnlog("--root", str(tmp_path / "named"), "fork", str(source), "--id", "child", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["path"] == str(tmp_path / "named" / "child.jsonl")


def test_log_commands_follow_the_root_rules(tmp_path: Path) -> None:
    write_session(tmp_path / "flag", "from-flag")
    write_session(tmp_path / "th" / "sessions", "from-turnlog-home")
    write_session(tmp_path / "dsh", "from-dsh")
    write_session(tmp_path / "xdg" / "turnlog" / "sessions", "from-xdg")
    write_session(tmp_path / "home" / ".local" / "share" / "turnlog" / "sessions", "from-home")
    every = {"TURNLOG_HOME": str(tmp_path / "th"), "DSH_SESSION_ROOT": str(tmp_path / "dsh"),
             "XDG_DATA_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path / "home")}
    cases: list[tuple[list[str], dict[str, str], str]] = [
        (["--root", "flag", "ls", "--json"], every, "from-flag"),
        (["ls", "--json", "--root", "flag"], every, "from-flag"),
        (["ls", "--json"], every, "from-turnlog-home"),
        (["ls", "--json"], {**every, "TURNLOG_HOME": "", "DSH_SESSION_ROOT": "dsh"}, "from-dsh"),
        (["ls", "--json"], {**every, "TURNLOG_HOME": "", "DSH_SESSION_ROOT": ""}, "from-xdg"),
        (["ls", "--json"], {"HOME": str(tmp_path / "home"), "XDG_DATA_HOME": "xdg",  # relative: ignored
                            "DSH_HOME": str(tmp_path / "dsh"), "DSH_CWD": str(tmp_path / "dsh")}, "from-home"),
    ]
    for argv, env, expected in cases:
        done = turnlog(*argv, env=clean_env(**env), cwd=tmp_path)
        assert done.returncode == 0, (argv, env, done.stderr)
        assert [row["id"] for row in json.loads(done.stdout)] == [expected], (argv, env)


def test_log_commands_never_lock_and_tail_follows_until_ctrl_c(tmp_path: Path) -> None:
    root = tmp_path / "dsh"
    env = clean_env(DSH_SESSION_ROOT=str(root))
    serve = subprocess.Popen([str(TURNLOG), "serve", "--no-time-context"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    follower: subprocess.Popen[bytes] | None = None
    try:
        assert serve.stdin is not None and serve.stdout is not None
        prompt = {"jsonrpc": "2.0", "id": "p", "method": "session/prompt",
                  "params": {"sessionId": "main", "contentBlocks": [{"type": "text", "text": "hi"}]}}
        serve.stdin.write(json.dumps(prompt).encode() + b"\n")
        serve.stdin.flush()
        while b'"status":"idle"' not in serve.stdout.readline():
            pass
        # A root from DSH_SESSION_ROOT is the reference's: the dsh layout in zstd (dsh-roots §3).
        store = SessionStore(root)
        main = store.path("main")
        assert main == dsh_log_path(root, read_header(main).cwd, "main", "zstd")
        before = main.read_bytes()
        inspected = turnlog("inspect", "main", "--json", env=env)
        assert inspected.returncode == 0 and json.loads(inspected.stdout)["id"] == "main"
        tailed = turnlog("tail", "main", "-n", "2", "--json", env=env)
        assert tailed.returncode == 0
        assert [json.loads(line)["type"] for line in tailed.stdout.splitlines()] == ["step/end", "turn/end"]
        validated = turnlog("validate", "main", "--json", env=env)
        assert validated.returncode == 0 and json.loads(validated.stdout)[0]["status"] == "ok"
        forked = turnlog("fork", "main", "--id", "child", "--json", env=env)
        assert forked.returncode == 0 and json.loads(forked.stdout)["id"] == "child"
        assert store.path("child") == main.parents[1] / "child" / "session.jsonl.zstd"
        assert store.path("child").exists() and main.read_bytes() == before

        follower = subprocess.Popen([str(TURNLOG), "tail", "child", "-f", "--json"], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=env)
        assert follower.stdout is not None
        follower.stdout.readline()  # it is following now
        time.sleep(0.2)  # let it settle into its watch before the interrupt
        follower.send_signal(signal.SIGINT)
        assert follower.wait(timeout=HANG_GUARD_S) == 0  # Ctrl-C ends tail -f with 0
        serve.stdin.close()
        assert serve.wait(timeout=HANG_GUARD_S) == 0
    finally:
        for proc in (serve, follower):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
