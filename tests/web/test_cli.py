"""``turnlog web`` as a process (web §2, web §4.3, web §7): the start-up lines, refusals before
anything is served, the key file, the launch file and browser, and how each signal ends it."""

from __future__ import annotations

import json
import signal
import socket
import stat
import subprocess
from pathlib import Path

import httpx
import trio
import trio_websocket

from tests.host.process_support import TURNLOG, clean_env
from tests.web.process_support import URL_LINE, WebProcess

STOPPED = "turnlog web: stopped; reminders fire only while a session is open"


def run(*args: str, home: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TURNLOG), *args],
        check=False,
        capture_output=True,
        text=True,
        env=clean_env(TURNLOG_HOME=str(home), **(env or {})),
        cwd=str(home),
        timeout=60,
    )


def test_start_up_lines_and_sigterm(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    with WebProcess(tmp_path, root) as web:
        assert URL_LINE.fullmatch(web.stdout[0])
        assert web.stdout[1] == (
            f"turnlog web: sessions in {root}; model scripted (offline); "
            "Ctrl-C stops (reminders fire only while a session is open)"
        )
        assert root.is_dir() and stat.S_IMODE(root.stat().st_mode) == 0o700  # ensure_root
        key = tmp_path / "web-key"
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
        page = httpx.get(f"{web.origin}/")
        assert page.status_code == 200
        assert web.stop(signal.SIGTERM) == 0
    assert web.stdout[2:] == [STOPPED]
    assert web.stderr == []
    assert web.token not in (tmp_path / "web-key").read_text()
    secrets = (web.token, web.key())
    assert not any(secret in line for secret in secrets for line in [*web.stdout[1:], *web.stderr])
    assert not any(secret in part for secret in secrets for part in web.argv)


def test_sigint_exits_130_and_a_second_signal_changes_nothing(tmp_path: Path) -> None:
    async def sigint_acted_on(web: WebProcess) -> trio_websocket.CloseReason:
        """SIGINT, then the 1001 close of an open socket: the process has taken the first signal."""
        async with trio_websocket.open_websocket_url(
            f"ws://{web.origin.removeprefix('http://')}/rpc",
            extra_headers=[(b"Authorization", f"Bearer {web.token}".encode())],
        ) as socket:
            web.proc.send_signal(signal.SIGINT)
            with trio.fail_after(20):
                while True:
                    try:
                        await socket.get_message()
                    except trio_websocket.ConnectionClosed as closed:
                        assert closed.reason is not None
                        return closed.reason

    with WebProcess(tmp_path, tmp_path / "s") as web:
        reason = trio.run(sigint_acted_on, web)
        assert reason.code == 1001
        # Sent only once the exit code is decided, so the test cannot race the first signal.
        assert web.stop(signal.SIGTERM) == 130
    assert web.stdout[-1] == STOPPED


def test_the_browser_key_outlives_a_restart_and_new_key_replaces_it(tmp_path: Path) -> None:
    with WebProcess(tmp_path, tmp_path / "s") as first:
        key = first.key()
        first.stop()
    with WebProcess(tmp_path, tmp_path / "s") as second:
        assert second.key() == key and second.token != first.token
        cookie = {"Cookie": f"turnlog-web-{second.port}={key}"}
        assert httpx.get(f"{second.origin}/api/whoami", headers=cookie).status_code == 200
        second.stop()
    with WebProcess(tmp_path, tmp_path / "s", "--new-key") as third:
        assert third.key() != key
        cookie = {"Cookie": f"turnlog-web-{third.port}={key}"}
        assert httpx.get(f"{third.origin}/api/whoami", headers=cookie).status_code == 401
        third.stop()


def test_refusals_before_serving(tmp_path: Path) -> None:
    answer = run("web", "--host", "0.0.0.0", "--no-browser", home=tmp_path)
    assert (answer.returncode, answer.stdout) == (2, "")
    assert answer.stderr == (
        "turnlog: web: --host must be a loopback address (127.0.0.1, ::1 or localhost); "
        "use SSH port forwarding for remote access\n"
    )
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        answer = run("web", "--port", str(port), "--no-browser", home=tmp_path)
    assert (answer.returncode, answer.stdout) == (1, "")
    assert answer.stderr == (
        f"turnlog: web: port {port} is in use; pass --port N, or --port 0 for any free port\n"
    )
    key = tmp_path / "web-key"
    key.chmod(0o644)
    answer = run("web", "--port", "0", "--no-browser", home=tmp_path)
    assert (answer.returncode, answer.stdout) == (1, "")
    assert answer.stderr == f"turnlog: web: {key} must be readable only by you (chmod 600 {key})\n"
    key.chmod(0o600)
    key.write_text("not a key\n")
    answer = run("web", "--port", "0", "--no-browser", home=tmp_path)
    assert answer.returncode == 1 and "--new-key" in answer.stderr and answer.stdout == ""
    blocker = tmp_path / "file"
    blocker.write_text("")
    answer = run("web", "--root", str(blocker / "sessions"), "--port", "0", "--no-browser", "--new-key", home=tmp_path)
    assert answer.returncode == 1 and answer.stdout == "" and answer.stderr.startswith("turnlog: ")
    answer = run("web", "--port", "x", home=tmp_path)
    assert answer.returncode == 2 and "--port" in answer.stderr
    answer = run("web", "--time-zone", "Mars/Olympus", "--port", "0", "--no-browser", home=tmp_path)
    assert answer.returncode == 2 and answer.stdout == "" and answer.stderr.startswith("turnlog: time-context: ")


def test_help_names_web(tmp_path: Path) -> None:
    assert "  web  " in run("--help", home=tmp_path).stdout
    answer = run("web", "--help", home=tmp_path)
    assert answer.returncode == 0
    for flag in ("--port", "--host", "--no-browser", "--new-key", "--max-message-bytes", "--provider",
                 "--time-context", "--root"):
        assert flag in answer.stdout


def test_the_browser_gets_a_launch_file_and_never_the_token(tmp_path: Path) -> None:
    """web §2: the launcher's argv names a 0600 launch file holding the URL; it is gone at exit."""
    seen = tmp_path / "browser-argv.json"
    launcher = tmp_path / "fake-browser"
    launcher.write_text(
        "#!/bin/sh\n"
        f'python3 -c \'import json,sys,os,stat; p=sys.argv[1][len("file://"):]; '
        f'json.dump({{"argv": sys.argv[1:], "mode": stat.S_IMODE(os.stat(p).st_mode), '
        f'"text": open(p).read()}}, open("{seen}", "w"))\' "$@"\n'
    )
    launcher.chmod(0o755)
    env = {"BROWSER": str(launcher), "DISPLAY": ":0"}
    with WebProcess(tmp_path, tmp_path / "s", env=env, browser=True) as web:
        web.wait_for(seen.exists)
        web.wait_for(lambda: seen.stat().st_size > 0 and seen.read_text().endswith("}"))
        record = json.loads(seen.read_text())
        launch = tmp_path / f"web-open-{web.port}.html"
        assert record["argv"] == [launch.as_uri()]
        assert record["mode"] == 0o600
        assert web.url.replace("&", "&amp;") in record["text"] and 'http-equiv="refresh"' in record["text"]
        assert launch.exists()
        assert web.stop() == 0
    assert not launch.exists()
    assert web.stderr == []


def test_no_browser_over_ssh(tmp_path: Path) -> None:
    """The wiring of web §2's browser decision (every case of it is tested in test_launch)."""
    marker = tmp_path / "opened"
    launcher = tmp_path / "fake-browser"
    launcher.write_text(f"#!/bin/sh\ntouch {marker}\n")
    launcher.chmod(0o755)
    env = {"BROWSER": str(launcher), "DISPLAY": ":0", "SSH_CONNECTION": "10.0.0.1 5 10.0.0.2 22"}
    with WebProcess(tmp_path, tmp_path / "s", env=env, browser=True) as web:
        assert web.stop() == 0
    assert not marker.exists()
    assert not list(tmp_path.glob("web-open-*.html"))
