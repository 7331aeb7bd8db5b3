"""Model setup that explains itself (host §7.2 "Model setup"): a short chat against a fake
OpenAI-compatible server on 127.0.0.1 that is down, slow, and refuses the key, checking what chat
says — the banner naming the model and where its settings come from, the retry progress, the
failure and the variable to fix — plus the missing key reported before the first prompt, and
``turnlog models``."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.host.process_support import TURNLOG, clean_env, with_default_sigint
from tests.web.fake_model import FakeModel, http_error, text

HANG_GUARD_S = 60.0


@pytest.fixture
def fake() -> Iterator[FakeModel]:
    with FakeModel() as server:
        yield server
    assert server.problems == []


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def chat(tmp_path: Path, stdin: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TURNLOG), "chat", "--root", str(tmp_path / "root"), "--session", "m", "--no-time-context"],
        check=False, input=stdin, capture_output=True, text=True, timeout=HANG_GUARD_S,
        env=clean_env(TURNLOG_HOME=str(tmp_path / "home"), **env),
    )


def test_a_slow_server_answers_and_the_banner_names_the_setup(tmp_path: Path, fake: FakeModel) -> None:
    fake.script(text("Hello from", " the fake model.").late(1.5))
    done = chat(tmp_path, "hi\n", TURNLOG_BASE_URL=fake.base_url, TURNLOG_MODEL="fake-1", TURNLOG_API_KEY="sk-test")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[2:4] == ["> hi", "Hello from the fake model."]
    assert done.stderr == f"model: fake-1 at {fake.base_url} (from TURNLOG_BASE_URL) · key from TURNLOG_API_KEY\n"
    (request,) = fake.requests
    assert request.headers["authorization"] == "Bearer sk-test" and request.body["model"] == "fake-1"


def test_a_refused_key_names_the_variable_and_fails_the_run(tmp_path: Path, fake: FakeModel) -> None:
    fake.script(http_error(401, "Incorrect API key provided"))
    done = chat(tmp_path, "hi\n", TURNLOG_BASE_URL=fake.base_url, TURNLOG_MODEL="fake-1", TURNLOG_API_KEY="sk-bad")
    assert done.returncode == 1
    assert "! AUTH: Incorrect API key provided" in done.stdout.splitlines()
    assert done.stderr.splitlines()[1:] == [
        f"turnlog: {fake.base_url} refused the key from TURNLOG_API_KEY: check it, or set TURNLOG_API_KEY "
        "(or DEEPSEEK_API_KEY), or api_key_file in " + str(tmp_path / "home" / "config.toml"),
    ]


def test_a_server_that_is_down_shows_its_retries(tmp_path: Path) -> None:
    base = f"http://127.0.0.1:{free_port()}/v1"
    proc = subprocess.Popen(
        with_default_sigint([str(TURNLOG), "chat", "--root", str(tmp_path / "root"), "--session", "d",
                             "--no-time-context"]),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=clean_env(TURNLOG_HOME=str(tmp_path / "home"), TURNLOG_BASE_URL=base, TURNLOG_MODEL="m"),
    )
    try:
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.write("hi\n")
        proc.stdin.flush()
        lines = [proc.stderr.readline() for _ in range(3)]  # the banner, then the first two retries
        proc.send_signal(signal.SIGINT)  # a running turn is cancelled
        out, _rest = proc.communicate(timeout=HANG_GUARD_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert lines[0] == f"model: m at {base} (from TURNLOG_BASE_URL) · no API key\n"
    for number, line in enumerate(lines[1:], start=1):
        assert line.startswith("retrying in ") and line.endswith(f" s ({number}/5): connection refused\n"), line
    assert "! cancelled" in out.splitlines()
    assert proc.returncode == 0  # cancelled, not failed


def test_a_missing_key_is_reported_before_the_first_prompt(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(TURNLOG), "chat", "--root", str(tmp_path / "root"), "--provider", "deepseek-official",
         "--model", "deepseek-chat"],
        check=False, input="", capture_output=True, text=True, timeout=HANG_GUARD_S,
        env=clean_env(TURNLOG_HOME=str(tmp_path / "home")),
    )
    assert done.returncode == 0
    assert done.stderr.splitlines() == [
        "model: deepseek-chat at https://api.deepseek.com · no API key",
        ("turnlog: no API key for https://api.deepseek.com: set DEEPSEEK_API_KEY (or TURNLOG_API_KEY), or "
        f"api_key_file in {tmp_path / 'home' / 'config.toml'} (turnlog models shows every setting and where it "
        "comes from)"),
    ]


def test_the_config_file_supplies_the_model_and_a_private_key_file(tmp_path: Path, fake: FakeModel) -> None:
    home = tmp_path / "home"
    home.mkdir()
    key = home / "fake.key"
    key.write_text("sk-from-file\n")
    os.chmod(key, 0o600)
    (home / "config.toml").write_text(
        f'provider = "openai"\nmodel = "fake-2"\nbase_url = "{fake.base_url}"\napi_key_file = "fake.key"\n')
    fake.script(text("configured"))
    done = chat(tmp_path, "hi\n")
    assert done.returncode == 0, done.stderr
    assert "configured" in done.stdout.splitlines()
    assert done.stderr == f"model: fake-2 at {fake.base_url} (from config.toml) · key from fake.key\n"
    (request,) = fake.requests
    assert request.headers["authorization"] == "Bearer sk-from-file" and request.body["model"] == "fake-2"
    os.chmod(key, 0o644)
    refused = chat(tmp_path, "hi\n")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == f"turnlog: the API key file {key} is readable by others (mode 0644); run: chmod 600 {key}\n"
