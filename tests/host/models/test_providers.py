"""Provider table and configuration (host §6.5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventlog.vocab import TextBlock
from host.models import (
    PROVIDERS,
    Assembled,
    Failed,
    ModelAdapters,
    ModelRequest,
    OpenAIAdapter,
    ScriptedAdapter,
    ScriptError,
    UnknownProviderError,
    default_provider,
    load_configured_script,
    make_adapter,
    missing_model_usage_error,
    provider_config,
    resolve_model,
    run_attempt,
)

ALL = {
    "TURNLOG_BASE_URL": "http://turnlog.local/v1/",
    "DEEPSEEK_BASE_URL": "https://deepseek.local",
    "TURNLOG_API_KEY": "tk",
    "DEEPSEEK_API_KEY": "dk",
}


def test_registered_names() -> None:
    assert PROVIDERS == ("scripted", "openai", "deepseek-official")
    assert all(provider_config(p, {}).provider == p for p in PROVIDERS)
    with pytest.raises(UnknownProviderError) as info:
        provider_config("anthropic", {})
    assert str(info.value) == 'no adapter registered for provider "anthropic"'


@pytest.mark.parametrize(
    ("provider", "env", "base_url", "key"),
    [
        ("openai", ALL, "http://turnlog.local/v1/", "tk"),
        ("openai", {"DEEPSEEK_BASE_URL": "https://deepseek.local", "DEEPSEEK_API_KEY": "dk"}, "https://deepseek.local", "dk"),
        ("openai", {}, "https://api.openai.com/v1", None),
        ("openai", {"TURNLOG_BASE_URL": "", "TURNLOG_API_KEY": ""}, "https://api.openai.com/v1", None),
        ("deepseek-official", ALL, "https://deepseek.local", "dk"),
        ("deepseek-official", {"TURNLOG_BASE_URL": "http://t", "TURNLOG_API_KEY": "tk"}, "http://t", "tk"),
        ("deepseek-official", {}, "https://api.deepseek.com", None),
        ("scripted", ALL, None, None),
    ],
)
def test_endpoint_precedence(provider: str, env: dict[str, str], base_url: str | None, key: str | None) -> None:
    config = provider_config(provider, env)
    assert (config.base_url, config.api_key) == (base_url, key)
    assert config.adapter == ("scripted" if provider == "scripted" else "openai")


def test_default_provider() -> None:
    assert default_provider({"TURNLOG_BASE_URL": "http://x"}) == "openai"
    assert default_provider({"TURNLOG_BASE_URL": ""}) == "scripted"
    assert default_provider({"DEEPSEEK_BASE_URL": "http://x"}) == "scripted"


def test_model_resolution() -> None:
    env = {"TURNLOG_MODEL": "env-model"}
    assert resolve_model("openai", env, initialize_model="init", flag_model="flag") == "init"
    assert resolve_model("openai", env, flag_model="flag") == "flag"
    assert resolve_model("openai", env) == "env-model"
    assert resolve_model("openai", {}) is None
    assert resolve_model("openai", {"TURNLOG_MODEL": ""}) is None
    assert resolve_model("scripted", {}) == "scripted"
    assert resolve_model("scripted", env) == "env-model"


def test_missing_model_texts() -> None:
    assert missing_model_usage_error("openai") == '--model or TURNLOG_MODEL is required for provider "openai"'


async def test_make_adapter() -> None:
    scripted = make_adapter("scripted", env=ALL)
    assert isinstance(scripted, ScriptedAdapter) and scripted.provider == "scripted"
    adapter = make_adapter("deepseek-official", env=ALL)
    assert isinstance(adapter, OpenAIAdapter)
    assert (adapter.provider, adapter.url) == ("deepseek-official", "https://deepseek.local/chat/completions")
    await adapter.aclose()
    adapter = make_adapter("openai", env=ALL)
    assert adapter.url == "http://turnlog.local/v1/chat/completions"
    await adapter.aclose()


def test_script_comes_from_the_flag_then_the_environment(tmp_path: Path) -> None:
    flag = tmp_path / "flag.jsonl"
    flag.write_text('{"text":"from flag"}\n')
    env_file = tmp_path / "env.jsonl"
    env_file.write_text('{"text":"from env"}\n{"text":"second"}\n')
    env = {"TURNLOG_SCRIPT": str(env_file)}
    assert [line.text for line in load_configured_script(flag, env) or ()] == ["from flag"]
    assert [line.text for line in load_configured_script(None, env) or ()] == ["from env", "second"]
    assert load_configured_script(None, {"TURNLOG_SCRIPT": ""}) is None
    env_file.write_text('{"text":"ok"}\n{"bad":1}\n')
    with pytest.raises(ScriptError, match='^script line 2: unknown key "bad"$'):
        load_configured_script(None, env)


def request(session: str) -> ModelRequest:
    return ModelRequest(session_id=session, turn=1, step=1, provider="scripted", model="scripted", system=None,
                        messages=(), tools=(), max_tokens=None, reasoning_effort=None)


async def test_model_adapters_share_one_adapter_per_provider(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"text":"one"}\n{"text":"two"}\n')
    adapters = ModelAdapters(env={}, script=load_configured_script(path, {}))
    assert adapters.get("scripted") is adapters.get("scripted")
    first = await run_attempt(adapters.get("scripted"), request("a"))
    second = await run_attempt(adapters.get("scripted"), request("b"))
    assert isinstance(first, Assembled) and first.content == [TextBlock(text="one")]
    assert isinstance(second, Assembled) and second.content == [TextBlock(text="two")]
    assert isinstance(await run_attempt(adapters.get("scripted"), request("a")), Failed)
    openai = adapters.get("openai")
    assert openai is adapters.get("openai") and isinstance(openai, OpenAIAdapter)
    with pytest.raises(UnknownProviderError):
        adapters.get("nope")
    await adapters.aclose()
