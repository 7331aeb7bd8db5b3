"""The optional configuration file (host §6.5, host §7 "Configuration file"): defaults for the
provider, the model and the base URL, and where an API key file is, for people who do not want to
export variables in every shell.

It is ``$TURNLOG_HOME/config.toml``, else ``$XDG_CONFIG_HOME/turnlog/config.toml`` (an absolute
``XDG_CONFIG_HOME`` only), else ``~/.config/turnlog/config.toml``::

    provider = "deepseek-official"      # the default --provider
    model = "deepseek-chat"             # the default model of that provider
    # base_url = "https://api.deepseek.com"
    # api_key_file = "~/.config/turnlog/deepseek.key"   # mode 0600; the key itself never goes here

    [providers.openai]                  # settings of one provider, used whenever it is chosen
    base_url = "http://127.0.0.1:8080/v1"
    model = "qwen2.5-7b-instruct"

The top-level ``model``, ``base_url`` and ``api_key_file`` belong to the top-level ``provider``
(to every provider when it names none); a ``[providers.<name>]`` table overrides them for that
provider. Flags, ``initialize`` and the environment variables of host §6.5 always come first.
Unknown keys and wrong types are errors naming the file, so a typo is not silently ignored.
Parsing is pure (:func:`parse_settings`); :func:`load_settings` and :func:`read_key_file` read
files.
"""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

CONFIG_FILE = "config.toml"


class SettingsError(ValueError):
    """An unreadable or invalid configuration or key file; the message names the file and says
    what to fix."""


class ProviderSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One provider's entries: a model, a base URL, a key file; each optional."""

    model: str | None = None
    base_url: str | None = None
    api_key_file: str | None = None


class _File(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    api_key_file: str | None = None
    providers: dict[str, ProviderSettings] = {}


@dataclass(frozen=True, slots=True)
class Settings:
    """What the configuration file says (nothing, when there is none). ``path`` is the file the
    values came from."""

    provider: str | None = None
    defaults: ProviderSettings = field(default_factory=ProviderSettings)
    providers: Mapping[str, ProviderSettings] = field(default_factory=dict)
    path: Path | None = None

    def for_provider(self, provider: str) -> ProviderSettings:
        """The entries that apply to ``provider``: its own table first, then the top-level entries
        when they belong to it (``provider`` unset or equal)."""
        own = self.providers.get(provider, ProviderSettings())
        shared = self.defaults if self.provider in (None, provider) else ProviderSettings()
        return ProviderSettings(
            model=own.model or shared.model,
            base_url=own.base_url or shared.base_url,
            api_key_file=own.api_key_file or shared.api_key_file,
        )


NO_SETTINGS = Settings()


def config_path(env: Mapping[str, str], *, home: Path | None = None) -> Path:
    """Where the configuration file is looked for (it need not exist)."""
    if turnlog_home := env.get("TURNLOG_HOME"):
        return Path(os.path.abspath(turnlog_home)) / CONFIG_FILE
    xdg = env.get("XDG_CONFIG_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "turnlog" / CONFIG_FILE
    return (home if home is not None else Path.home()) / ".config" / "turnlog" / CONFIG_FILE


def parse_settings(text: str, path: Path, providers: tuple[str, ...]) -> Settings:
    """The settings in TOML ``text`` read from ``path``; ``providers`` are the valid names.
    Raises :class:`SettingsError` naming the problem."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: not valid TOML ({exc}); fix or remove the file") from None
    try:
        parsed = msgspec.convert(raw, _File)
    except msgspec.ValidationError as exc:
        raise SettingsError(f"{path}: {exc}; see turnlog models for the keys it may hold") from None
    for name in (parsed.provider, *parsed.providers):
        if name is not None and name not in providers:
            raise SettingsError(f"{path}: unknown provider {name!r}; choose one of {', '.join(providers)}")
    defaults = ProviderSettings(parsed.model, parsed.base_url, parsed.api_key_file)
    return Settings(parsed.provider, defaults, dict(parsed.providers), path)


def load_settings(env: Mapping[str, str], providers: tuple[str, ...]) -> Settings:
    """The configuration file's settings, or none when it does not exist. Raises
    :class:`SettingsError` for a file that cannot be read or is invalid."""
    path = config_path(env)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return NO_SETTINGS
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    return parse_settings(text, path, providers)


def read_key_file(name: str, config: Path | None) -> str:
    """The API key in the file ``name`` (``~`` expanded; relative to the configuration file's
    directory), which must be readable by its owner only. Raises :class:`SettingsError`."""
    path = Path(name).expanduser()
    if not path.is_absolute() and config is not None:
        path = config.parent / path
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise SettingsError(f"cannot read the API key file {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as file:
        mode = os.fstat(file.fileno()).st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise SettingsError(
                f"the API key file {path} is readable by others (mode {stat.S_IMODE(mode):04o}); "
                f"run: chmod 600 {path}"
            )
        key = file.read(64 * 1024).decode("utf-8", errors="replace").strip()
    if not key:
        raise SettingsError(f"the API key file {path} is empty")
    return key
