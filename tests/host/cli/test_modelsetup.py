"""Model setup in words (host §7 "Model setup"): the banner, the missing-key warning and the hint
after a failure name the model, the endpoint and the variable to set."""

from __future__ import annotations

from pathlib import Path

import pytest

from host.cli._modelsetup import ModelSetup, is_local
from host.models import provider_config

CONFIG = Path("/home/me/.config/turnlog/config.toml")


def setup(provider: str, env: dict[str, str], model: str | None = "m") -> ModelSetup:
    return ModelSetup(provider_config(provider, env), model, CONFIG)


def test_banners() -> None:
    assert setup("scripted", {}, "scripted").banner() == "model: scripted (offline)"
    assert setup("deepseek-official", {"DEEPSEEK_API_KEY": "k"}, "deepseek-chat").banner() == (
        "model: deepseek-chat at https://api.deepseek.com · key from DEEPSEEK_API_KEY")
    assert setup("openai", {"TURNLOG_BASE_URL": "http://127.0.0.1:8080/v1"}, "qwen").banner() == (
        "model: qwen at http://127.0.0.1:8080/v1 (from TURNLOG_BASE_URL) · no API key")


def test_a_missing_key_is_a_warning_for_remote_endpoints_only() -> None:
    assert setup("openai", {}).key_warning() == (
        f"no API key for https://api.openai.com/v1: set TURNLOG_API_KEY (or DEEPSEEK_API_KEY), or api_key_file in "
        f"{CONFIG} (turnlog models shows every setting and where it comes from)")
    assert setup("openai", {"TURNLOG_API_KEY": "k"}).key_warning() is None
    assert setup("openai", {"TURNLOG_BASE_URL": "http://localhost:11434/v1"}).key_warning() is None
    assert setup("scripted", {}).key_warning() is None


@pytest.mark.parametrize(
    ("url", "local"),
    [("http://127.0.0.1:8080/v1", True), ("http://localhost/v1", True), ("http://192.168.1.20:8000", True),
     ("http://[::1]:8000/v1", True), ("http://gpu-box.local:8000", True), ("https://api.deepseek.com", False),
     ("https://8.8.8.8/v1", False)],
)
def test_local_endpoints(url: str, local: bool) -> None:
    assert is_local(url) is local


def test_failure_hints_name_what_to_fix() -> None:
    keyed = setup("deepseek-official", {"DEEPSEEK_API_KEY": "k"})
    assert keyed.failure_hint("AUTH", "Incorrect API key provided") == (
        f"https://api.deepseek.com refused the key from DEEPSEEK_API_KEY: check it, or set DEEPSEEK_API_KEY "
        f"(or TURNLOG_API_KEY), or api_key_file in {CONFIG}")
    assert setup("openai", {}).failure_hint("AUTH", "401") == (
        f"https://api.openai.com/v1 needs an API key: set TURNLOG_API_KEY (or DEEPSEEK_API_KEY), or api_key_file "
        f"in {CONFIG}")
    down = setup("openai", {"TURNLOG_BASE_URL": "http://127.0.0.1:9/v1"})
    assert down.failure_hint("TRANSPORT", "model API request to http://127.0.0.1:9/v1 failed: connection refused") == (
        "no model server answered at http://127.0.0.1:9/v1 (from TURNLOG_BASE_URL); start it, or point "
        "TURNLOG_BASE_URL (or DEEPSEEK_BASE_URL) at one")
    assert down.failure_hint("HTTP_404", "model endpoint not found") == (
        "check the model name (m: --model or TURNLOG_MODEL) and the base URL http://127.0.0.1:9/v1 (from "
        "TURNLOG_BASE_URL)")
    assert down.failure_hint("SERVER", "busy") is None
    assert setup("scripted", {}).failure_hint("AUTH", "x") is None
