"""``turnlog models`` (host §7 "models"): the providers, what each one needs, and what this
environment and the configuration file give each of them — the model, the base URL and the key,
each with where it comes from. A key is never printed, only whether one is set and from where."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence

import msgspec

from host.models import (
    PROVIDERS,
    Settings,
    SettingsError,
    config_path,
    default_provider,
    load_settings,
    provider_config,
    resolve_model,
)

from ._errors import Parser, UsageError

ABOUT = {
    "scripted": "offline and deterministic: understands reminder phrases; needs nothing. "
    "--script FILE or TURNLOG_SCRIPT plays back a JSONL script instead.",
    "openai": "any OpenAI-compatible chat-completions server: llama.cpp, Ollama, vLLM, OpenAI, DeepSeek, …",
    "deepseek-official": "DeepSeek's API (the deepseek-harness SDK's default provider); prefers the DEEPSEEK_* variables.",
}


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="turnlog models",
        description="List the model providers, what each needs, and where this environment's "
        "settings for each come from (flags, variables, config.toml). Keys are never printed.",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON array")
    return parser


class ProviderRow(msgspec.Struct, frozen=True, rename="camel"):
    """What ``models`` reports about one provider."""

    provider: str
    adapter: str
    default: bool
    model: str | None
    model_source: str | None
    base_url: str | None
    base_url_source: str | None
    key_set: bool
    key_source: str | None
    key_variables: list[str]
    base_url_variables: list[str]


def _model_source(provider: str, env: Mapping[str, str], settings: Settings) -> str | None:
    if env.get("TURNLOG_MODEL"):
        return "TURNLOG_MODEL"
    if provider != "scripted" and settings.for_provider(provider).model:
        return settings.path.name if settings.path else "config.toml"
    return "default" if provider == "scripted" else None


def rows(env: Mapping[str, str], settings: Settings) -> list[ProviderRow]:
    """One row per provider. Raises ``SettingsError`` for an unusable key file."""
    chosen = default_provider(env, settings)
    out = []
    for provider in PROVIDERS:
        endpoint = provider_config(provider, env, settings)
        out.append(
            ProviderRow(
                provider=provider,
                adapter=endpoint.adapter,
                default=provider == chosen,
                model=resolve_model(provider, env, settings=settings),
                model_source=_model_source(provider, env, settings),
                base_url=endpoint.base_url,
                base_url_source=endpoint.base_url_source,
                key_set=endpoint.api_key is not None,
                key_source=endpoint.api_key_source,
                key_variables=list(endpoint.key_vars),
                base_url_variables=list(endpoint.base_url_vars),
            )
        )
    return out


def text_lines(provider_rows: Sequence[ProviderRow], config_file: str, found: bool) -> list[str]:
    """The human listing: one block per provider, then where the configuration file is."""
    lines: list[str] = []
    for row in provider_rows:
        lines.append(f"{row.provider}" + ("  (the default: no --provider needed)" if row.default else ""))
        lines.append(f"  {ABOUT[row.provider]}")
        if row.adapter != "scripted":
            source = f"from {row.base_url_source}" if row.base_url_source != "default" else "default"
            lines.append(f"  base URL  {row.base_url}  ({source}; set {' or '.join(row.base_url_variables)})")
            if row.model is not None:
                lines.append(f"  model     {row.model}  (from {row.model_source})")
            else:
                lines.append("  model     not set: pass --model M or set TURNLOG_MODEL")
            if row.key_set:
                lines.append(f"  key       set, from {row.key_source}")
            else:
                lines.append(
                    f"  key       not set: set {' or '.join(row.key_variables)}, or api_key_file in config.toml "
                    "(a local server may need none)"
                )
        lines.append("")
    state = "" if found else " (not found; optional)"
    lines.append(f"config file: {config_file}{state}")
    lines.append(
        "keys: provider, model, base_url, api_key_file (a 0600 file with the key), [providers.<name>]"
    )
    return lines


def run_models(argv: Sequence[str], environ: Mapping[str, str]) -> int:
    """``turnlog models [--json]`` and its exit status (2 for an invalid configuration file)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    try:
        settings = load_settings(environ, PROVIDERS)
        listed = rows(environ, settings)
    except SettingsError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        sys.stdout.write(msgspec.json.encode(listed).decode() + "\n")
        return 0
    path = config_path(environ)
    sys.stdout.write("".join(line + "\n" for line in text_lines(listed, str(path), path.is_file())))
    return 0
