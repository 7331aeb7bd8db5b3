"""Model providers and their configuration (host §6.5).

| provider | adapter | base URL (first set) | key (first set) |
|---|---|---|---|
| `scripted` | scripted | — | — |
| `openai` | openai | TURNLOG_BASE_URL, DEEPSEEK_BASE_URL, https://api.openai.com/v1 | TURNLOG_API_KEY, DEEPSEEK_API_KEY |
| `deepseek-official` | openai | DEEPSEEK_BASE_URL, TURNLOG_BASE_URL, https://api.deepseek.com | DEEPSEEK_API_KEY, TURNLOG_API_KEY |

Empty variables count as unset. The model is ``initialize.model``, else ``--model``, else
``TURNLOG_MODEL``, else the configuration file's (:mod:`._settings`); the scripted provider falls
back to ``scripted``. The file's ``base_url`` and ``api_key_file`` come after the variables, and
its ``provider`` after ``TURNLOG_BASE_URL``'s rule. :class:`ProviderConfig` says where each value
came from, so the command line can tell people what it uses and which variable to set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from os import PathLike

from ._scripted import SCRIPT_ENV, ScriptedAdapter, ScriptLine, load_script
from ._settings import NO_SETTINGS, Settings, read_key_file
from .openai import OpenAIAdapter

SCRIPTED_MODEL = "scripted"
MODEL_ENV = "TURNLOG_MODEL"


@dataclass(frozen=True, slots=True)
class _Route:
    adapter: str
    base_url_vars: tuple[str, ...]
    default_base_url: str | None
    key_vars: tuple[str, ...]


_ROUTES: dict[str, _Route] = {
    "scripted": _Route("scripted", (), None, ()),
    "openai": _Route(
        "openai",
        ("TURNLOG_BASE_URL", "DEEPSEEK_BASE_URL"),
        "https://api.openai.com/v1",
        ("TURNLOG_API_KEY", "DEEPSEEK_API_KEY"),
    ),
    "deepseek-official": _Route(
        "openai",
        ("DEEPSEEK_BASE_URL", "TURNLOG_BASE_URL"),
        "https://api.deepseek.com",
        ("DEEPSEEK_API_KEY", "TURNLOG_API_KEY"),
    ),
}
PROVIDERS: tuple[str, ...] = tuple(_ROUTES)  # the `--provider` choices


class UnknownProviderError(ValueError):
    """A provider name that has no registered adapter."""

    def __init__(self, provider: str) -> None:
        super().__init__(f'no adapter registered for provider "{provider}"')
        self.provider = provider


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    """A provider's resolved endpoint; ``base_url`` and ``api_key`` are ``None`` for scripted.
    ``base_url_source`` and ``api_key_source`` say where they came from: a variable's name,
    ``config.toml`` (the configuration file), ``default``, or ``None`` for no value."""

    provider: str
    adapter: str
    base_url: str | None
    api_key: str | None
    base_url_source: str | None = None
    api_key_source: str | None = None
    key_vars: tuple[str, ...] = ()
    base_url_vars: tuple[str, ...] = ()


def _first(env: Mapping[str, str], names: tuple[str, ...]) -> tuple[str, str] | None:
    return next(((env[name], name) for name in names if env.get(name)), None)


def provider_config(
    provider: str, env: Mapping[str, str], settings: Settings = NO_SETTINGS
) -> ProviderConfig:
    """The provider's endpoint from ``env``, then ``settings``, by the table above. Raises
    :class:`UnknownProviderError`, or ``SettingsError`` for a key file that cannot be used."""
    route = _ROUTES.get(provider)
    if route is None:
        raise UnknownProviderError(provider)
    if route.adapter == "scripted":
        return ProviderConfig(provider, route.adapter, None, None)
    configured = settings.for_provider(provider)
    base_url, base_source = _first(env, route.base_url_vars) or (None, None)
    if base_url is None and configured.base_url:
        base_url, base_source = configured.base_url, settings.path.name if settings.path else None
    if base_url is None:
        base_url, base_source = route.default_base_url, "default"
    api_key, key_source = _first(env, route.key_vars) or (None, None)
    if api_key is None and configured.api_key_file:
        api_key, key_source = read_key_file(configured.api_key_file, settings.path), configured.api_key_file
    return ProviderConfig(
        provider=provider,
        adapter=route.adapter,
        base_url=base_url,
        api_key=api_key,
        base_url_source=base_source,
        api_key_source=key_source,
        key_vars=route.key_vars,
        base_url_vars=route.base_url_vars,
    )


def default_provider(env: Mapping[str, str], settings: Settings = NO_SETTINGS) -> str:
    """``--provider``'s default: ``openai`` when ``TURNLOG_BASE_URL`` is set, else the
    configuration file's ``provider``, else ``scripted``."""
    if env.get("TURNLOG_BASE_URL"):
        return "openai"
    return settings.provider or "scripted"


def resolve_model(
    provider: str,
    env: Mapping[str, str],
    *,
    initialize_model: str | None = None,
    flag_model: str | None = None,
    settings: Settings = NO_SETTINGS,
) -> str | None:
    """The route's model, or ``None`` when a non-scripted provider has none configured."""
    model = initialize_model or flag_model or env.get(MODEL_ENV) or None
    if model is None and provider != "scripted":
        model = settings.for_provider(provider).model
    if model is None and provider == "scripted":
        return SCRIPTED_MODEL
    return model


def missing_model_usage_error(provider: str) -> str:
    """chat's startup usage error for a non-scripted route without a model."""
    return f'--model or TURNLOG_MODEL is required for provider "{provider}"'


def load_configured_script(
    flag: str | PathLike[str] | None, env: Mapping[str, str]
) -> tuple[ScriptLine, ...] | None:
    """Load and validate the configured script at startup: ``--script FILE``, else
    ``TURNLOG_SCRIPT``, else none (``ScriptError`` is a usage error)."""
    path = flag or env.get(SCRIPT_ENV)
    return load_script(path) if path else None


def make_adapter(
    provider: str,
    *,
    env: Mapping[str, str],
    script: tuple[ScriptLine, ...] | None = None,
    settings: Settings = NO_SETTINGS,
) -> ScriptedAdapter | OpenAIAdapter:
    """A new adapter for ``provider``; ``script`` (already loaded) switches scripted to script mode.
    Raises :class:`UnknownProviderError` (or ``SettingsError`` for an unusable key file)."""
    config = provider_config(provider, env, settings)
    if config.adapter == "scripted":
        return ScriptedAdapter(script)
    assert config.base_url is not None
    return OpenAIAdapter(base_url=config.base_url, api_key=config.api_key, provider=provider)


class ModelAdapters:
    """The process's adapters, one per provider, made on first use, so a script's cursor is shared
    by every session. The scripted adapter is made at construction."""

    def __init__(
        self,
        *,
        env: Mapping[str, str],
        script: tuple[ScriptLine, ...] | None = None,
        settings: Settings = NO_SETTINGS,
    ) -> None:
        self._env = dict(env)
        self._settings = settings
        self._adapters: dict[str, ScriptedAdapter | OpenAIAdapter] = {"scripted": ScriptedAdapter(script)}

    def get(self, provider: str) -> ScriptedAdapter | OpenAIAdapter:
        """The provider's adapter; raises :class:`UnknownProviderError`."""
        adapter = self._adapters.get(provider)
        if adapter is None:
            adapter = self._adapters[provider] = make_adapter(
                provider, env=self._env, settings=self._settings
            )
        return adapter

    async def aclose(self) -> None:
        """Close the HTTP clients of the adapters made so far."""
        for adapter in self._adapters.values():
            if not isinstance(adapter, ScriptedAdapter):
                await adapter.aclose()
