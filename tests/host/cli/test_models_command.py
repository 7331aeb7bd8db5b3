"""``turnlog models`` (host §7 "models"), and the command table: ``show``/``models`` in the help,
"did you mean" for a mistyped command."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.host.process_support import TURNLOG, clean_env


def turnlog(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(TURNLOG), *args], capture_output=True, text=True, check=False,
                          env=clean_env(**env), timeout=60)


def test_models_lists_what_each_provider_needs_and_where_settings_come_from(tmp_path: Path) -> None:
    bare = turnlog("models", TURNLOG_HOME=str(tmp_path)).stdout
    assert "  key       not set: set TURNLOG_API_KEY or DEEPSEEK_API_KEY, or api_key_file in config.toml" in bare
    done = turnlog("models", TURNLOG_HOME=str(tmp_path), DEEPSEEK_API_KEY="sk-secret")
    assert done.returncode == 0 and done.stderr == ""
    out = done.stdout
    assert "sk-secret" not in out  # a key is never printed
    assert out.startswith("scripted  (the default: no --provider needed)\n")
    assert "  base URL  https://api.openai.com/v1  (default; set TURNLOG_BASE_URL or DEEPSEEK_BASE_URL)" in out
    assert "  model     not set: pass --model M or set TURNLOG_MODEL" in out
    deepseek = out.split("deepseek-official")[1]
    assert "  key       set, from DEEPSEEK_API_KEY" in deepseek
    assert f"config file: {tmp_path / 'config.toml'} (not found; optional)" in out


def test_models_json_follows_the_variables_and_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('provider = "openai"\nmodel = "qwen"\nbase_url = "http://127.0.0.1:8080/v1"\n')
    done = turnlog("models", "--json", TURNLOG_HOME=str(tmp_path))
    rows = {row["provider"]: row for row in json.loads(done.stdout)}
    assert list(rows) == ["scripted", "openai", "deepseek-official"]
    assert rows["openai"] == {
        "provider": "openai", "adapter": "openai", "default": True, "model": "qwen", "modelSource": "config.toml",
        "baseUrl": "http://127.0.0.1:8080/v1", "baseUrlSource": "config.toml", "keySet": False, "keySource": None,
        "keyVariables": ["TURNLOG_API_KEY", "DEEPSEEK_API_KEY"], "baseUrlVariables": ["TURNLOG_BASE_URL", "DEEPSEEK_BASE_URL"],
    }
    assert rows["scripted"]["default"] is False and rows["scripted"]["model"] == "scripted"
    overridden = json.loads(turnlog("models", "--json", TURNLOG_HOME=str(tmp_path), TURNLOG_MODEL="m2").stdout)
    assert overridden[1]["model"] == "m2" and overridden[1]["modelSource"] == "TURNLOG_MODEL"
    (tmp_path / "config.toml").write_text("modle = 1\n")
    bad = turnlog("models", TURNLOG_HOME=str(tmp_path))
    assert bad.returncode == 2 and bad.stderr.startswith(f"turnlog: {tmp_path / 'config.toml'}: ")
    assert bad.stderr.count("\n") == 1


def test_the_command_table(tmp_path: Path) -> None:
    top = turnlog("--help").stdout
    for command in ("models", "show", "ls", "chat", "web"):
        assert f"\n  {command} " in top
    done = turnlog("shwo", "x")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "turnlog: unknown command 'shwo'; did you mean 'show'? see turnlog --help\n"
    done = turnlog("frobnicate")
    assert done.stderr == "turnlog: unknown command 'frobnicate'; see turnlog --help\n"
    chat_help = turnlog("chat", "--help").stdout
    for variable in ("TURNLOG_HOME", "TURNLOG_BASE_URL", "TURNLOG_API_KEY", "TURNLOG_MODEL", "DEEPSEEK_BASE_URL",
                     "DEEPSEEK_API_KEY", "TURNLOG_SCRIPT", "TURNLOG_HISTORY", "TZ", "NO_COLOR", "XDG_CONFIG_HOME",
                     "DSH_SESSION_ROOT", "XDG_DATA_HOME", "--continue", "--utc", "config.toml"):
        assert variable in chat_help, variable
    assert os.path.basename(str(TURNLOG)) == "turnlog"
