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
    Settings,
    SettingsError,
    UnknownProviderError,
    config_path,
    default_provider,
    load_configured_script,
    load_settings,
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


# --- the configuration file (host §6.5, host §7) -----------------------------------------------------


def settings_from(tmp_path: Path, text: str) -> Settings:
    (tmp_path / "config.toml").write_text(text)
    return load_settings({"TURNLOG_HOME": str(tmp_path)}, PROVIDERS)


def test_config_file_location(tmp_path: Path) -> None:
    assert config_path({"TURNLOG_HOME": "th", "XDG_CONFIG_HOME": "/xdg"}) == Path("th").absolute() / "config.toml"
    assert config_path({"XDG_CONFIG_HOME": "/xdg"}) == Path("/xdg/turnlog/config.toml")
    assert config_path({"XDG_CONFIG_HOME": "relative"}, home=tmp_path) == tmp_path / ".config/turnlog/config.toml"
    assert config_path({}, home=tmp_path) == tmp_path / ".config/turnlog/config.toml"
    assert load_settings({"TURNLOG_HOME": str(tmp_path)}, PROVIDERS) == Settings()  # no file: no settings


def test_config_file_supplies_what_flags_and_variables_leave_open(tmp_path: Path) -> None:
    key = tmp_path / "deepseek.key"
    key.write_text("sk-from-file\n")
    key.chmod(0o600)
    settings = settings_from(tmp_path, 'provider = "deepseek-official"\nmodel = "deepseek-chat"\n'
                                       'api_key_file = "deepseek.key"\n'
                                       '[providers.openai]\nbase_url = "http://127.0.0.1:8080/v1"\nmodel = "qwen"\n')
    assert default_provider({}, settings) == "deepseek-official"
    assert default_provider({"TURNLOG_BASE_URL": "http://x"}, settings) == "openai"  # the variable's rule first
    assert resolve_model("deepseek-official", {}, settings=settings) == "deepseek-chat"
    assert resolve_model("deepseek-official", {"TURNLOG_MODEL": "env"}, settings=settings) == "env"
    assert resolve_model("openai", {}, settings=settings) == "qwen"
    assert resolve_model("scripted", {}, settings=settings) == "scripted"  # nothing of it reaches scripted
    official = provider_config("deepseek-official", {}, settings)
    assert (official.base_url, official.base_url_source) == ("https://api.deepseek.com", "default")
    assert (official.api_key, official.api_key_source) == ("sk-from-file", "deepseek.key")
    from_env = provider_config("deepseek-official", {"DEEPSEEK_API_KEY": "sk-env"}, settings)
    assert (from_env.api_key, from_env.api_key_source) == ("sk-env", "DEEPSEEK_API_KEY")
    local = provider_config("openai", {}, settings)
    assert (local.base_url, local.base_url_source) == ("http://127.0.0.1:8080/v1", "config.toml")
    assert (local.api_key, local.api_key_source) == (None, None)  # the top-level key file is deepseek's
    assert provider_config("openai", {"TURNLOG_BASE_URL": "http://e"}, settings).base_url_source == "TURNLOG_BASE_URL"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("provider = ", "not valid TOML"),
        ('modle = "x"', "Object contains unknown field `modle`"),
        ("model = 3", "Expected `str | null`, got `int` - at `$.model`"),
        ('provider = "anthropic"', "unknown provider 'anthropic'; choose one of scripted, openai, deepseek-official"),
        ('[providers.nope]\nmodel = "m"', "unknown provider 'nope'"),
    ],
)
def test_a_bad_config_file_names_itself_and_the_problem(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SettingsError) as info:
        settings_from(tmp_path, text)
    assert str(info.value).startswith(f"{tmp_path / 'config.toml'}: ") and message in str(info.value)


def test_a_key_file_must_be_private(tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_text("sk")
    key.chmod(0o644)
    settings = settings_from(tmp_path, f'api_key_file = "{key}"')
    with pytest.raises(SettingsError) as info:
        provider_config("openai", {}, settings)
    assert str(info.value) == f"the API key file {key} is readable by others (mode 0644); run: chmod 600 {key}"
    key.unlink()
    with pytest.raises(SettingsError, match="^cannot read the API key file .*: No such file or directory$"):
        provider_config("openai", {}, settings)
