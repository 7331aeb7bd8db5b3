"""The commands behind ``turnlog demo``, ``chat`` and ``serve`` (host §7): their flags,
start-up checks and runners. The log commands are ``_logcommands``'.

``main`` imports this module only once one of these commands is chosen. Start-up problems raise
:class:`~host.cli.UsageError` (exit 2) or :class:`~host.cli.StartupError` (exit 1) before any
output.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import zoneinfo
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import trio

import schedule
import timecontext
from eventlog.values import SystemClock
from host.models import (
    PROVIDERS,
    ModelAdapters,
    ScriptError,
    ScriptLine,
    Settings,
    SettingsError,
    config_path,
    default_provider,
    load_configured_script,
    load_settings,
    missing_model_usage_error,
    provider_config,
    resolve_model,
)
from host.rpc import DEFAULT_MAX_LINE_BYTES, serve_stdio
from host.runtime import (
    DEFAULT_MAX_STEPS,
    DEFAULT_SYSTEM_PROMPT,
    HostConfig,
    open_host,
    resolve_root,
    root_from_dsh_session_root,
)

from ._errors import Parser, StartupError, UsageError
from ._modelsetup import ModelSetup

SYSTEM_ZONE_HINT = "; pass --time-zone ZONE or --no-time-context"
SERVE_PREFIX = "turnlog serve: "
CHAT_EPILOG = """\
examples:
  turnlog chat                                   a new session with the offline model
  turnlog chat -c                                continue the most recent session
  turnlog chat --session kitchen                 continue (or create) the session "kitchen"
  TURNLOG_BASE_URL=http://127.0.0.1:8080/v1 TURNLOG_MODEL=qwen turnlog chat
                                                 a local OpenAI-compatible server
  DEEPSEEK_API_KEY=... turnlog chat --provider deepseek-official --model deepseek-chat

environment:
  TURNLOG_HOME          home of sessions/ and config.toml (default: XDG directories)
  DSH_SESSION_ROOT      session root set by the deepseek-harness SDK client
  XDG_DATA_HOME         sessions in $XDG_DATA_HOME/turnlog/sessions (default ~/.local/share)
  XDG_CONFIG_HOME       config in $XDG_CONFIG_HOME/turnlog/config.toml (default ~/.config)
  TURNLOG_BASE_URL      OpenAI-compatible endpoint; setting it makes --provider default to openai
  TURNLOG_API_KEY       its API key
  TURNLOG_MODEL         the model name (or --model)
  DEEPSEEK_BASE_URL     endpoint of --provider deepseek-official (default https://api.deepseek.com)
  DEEPSEEK_API_KEY      its API key
  TURNLOG_SCRIPT        a JSONL script for the scripted model (or --script)
  TURNLOG_HISTORY       the input history file ('' for none; default beside the session root)
  TZ                    your time zone: sent with every prompt and used to show times
  NO_COLOR              any value turns colour off

config.toml (optional) holds defaults: provider, model, base_url, api_key_file (a 0600 file
holding the key) and [providers.<name>] tables; flags and variables come first.
turnlog models lists the providers, what each needs, and where each setting comes from.
"""


# The front doors' parser (turnlog web builds its own from it too).
_Parser = Parser


# --- argument parsing ----------------------------------------------------------------------------


def _int_in(low: int, high: int | None, what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what}, got {text!r}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{what}, got {text}")
        return value

    return parse


def _whole_number(text: str) -> int:
    """An integer; range checks are the consumer's (timecontext names its own limits)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def _add_root(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", metavar="DIR", help="session root directory (see `turnlog --help`)")
    parser.add_argument(
        "--layout", choices=("flat", "dsh"), default="auto",
        help="layout of a new root (default: detected, else flat)",
    )
    parser.add_argument(
        "--compression", choices=("none", "zstd"), default=None,
        help="encoding of a new dsh root (default: detected; zstd)",
    )


def store_options(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, Any]:
    """The HostConfig fields of ``--layout``/``--compression`` (dsh-roots §3), and the default of
    an empty root: dsh in zstd for a root from ``$DSH_SESSION_ROOT``, else flat."""
    return {
        "layout": args.layout,
        "compression": args.compression,
        "dsh_default": root_from_dsh_session_root(args.root, environ),
    }


def _add_model_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("model")
    group.add_argument(
        "--provider",
        choices=PROVIDERS,
        help="model provider (default: openai when TURNLOG_BASE_URL is set, else scripted)",
    )
    group.add_argument("--model", metavar="M", help="model name (default: $TURNLOG_MODEL)")
    group.add_argument(
        "--script", metavar="FILE", help="JSONL script for the scripted model (or $TURNLOG_SCRIPT)"
    )
    group.add_argument("--system", metavar="TEXT", help="system prompt ('' for none)")
    group.add_argument(
        "--max-steps",
        metavar="N",
        type=_int_in(1, None, "must be a positive integer"),
        default=DEFAULT_MAX_STEPS,
        help=f"steps per turn before it fails (default {DEFAULT_MAX_STEPS})",
    )
    group = parser.add_argument_group("time context")
    group.add_argument(
        "--time-context",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="add a time reading before every model step (default: on)",
    )
    group.add_argument(
        "--time-zone", metavar="ZONE", help="display zone of readings (default: the system zone)"
    )
    group.add_argument(
        "--time-refresh-ms",
        metavar="N",
        type=_whole_number,
        help="refresh interval of readings in ms (default 0)",
    )


def build_parsers() -> dict[str, argparse.ArgumentParser]:
    """The parsers of ``demo``, ``chat`` and ``serve``."""
    demo = _Parser(
        prog="turnlog demo",
        description="A non-interactive, self-checking tour on the offline scripted model: a reminder "
        "is created, fires as a follow-up turn, and the host restarts without firing it again.",
    )
    _add_root(demo)
    demo.add_argument(
        "--seconds",
        metavar="N",
        type=_int_in(1, 60, "must be between 1 and 60"),
        default=3,
        help="reminder delay, 1-60 (default 3)",
    )
    demo.add_argument("--json", action="store_true", help="print one JSON object instead of the tour")

    chat = _Parser(
        prog="turnlog chat",
        description="An interactive terminal assistant. Reminders fire while the session is open.",
        epilog=CHAT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_root(chat)
    which = chat.add_mutually_exclusive_group()
    which.add_argument(
        "--session", metavar="ID", help="continue this session (on a terminal, asks before creating it)"
    )
    which.add_argument(
        "-c",
        "--continue",
        dest="continue_latest",
        action="store_true",
        help="continue the most recently active session",
    )
    chat.add_argument("--utc", action="store_true", help="show times in UTC instead of your time zone")
    _add_model_flags(chat)

    serve = _Parser(
        prog="turnlog serve",
        description="JSON-RPC 2.0 over stdio for the deepseek-harness-sdk client.",
    )
    _add_root(serve)
    _add_model_flags(serve)
    serve.add_argument(
        "--max-line-bytes",
        metavar="N",
        type=_int_in(1, None, "must be a positive integer"),
        default=DEFAULT_MAX_LINE_BYTES,
        help=f"longest accepted request line (default {DEFAULT_MAX_LINE_BYTES})",
    )
    serve.add_argument(
        "--profile", metavar="NAME", help="accepted and ignored (deepseek-harness compatibility)"
    )
    serve.add_argument("--patch", metavar="PATH", action="append", default=[], help="accepted and ignored")
    return {"demo": demo, "chat": chat, "serve": serve}


# --- start-up of demo, chat and serve ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Startup:
    """What ``chat`` and ``serve`` start a host with: its configuration, the script, the
    configuration file's settings, and the model setup as people read it."""

    config: HostConfig
    script: tuple[ScriptLine, ...] | None
    settings: Settings
    setup: ModelSetup


def load_config_file(environ: Mapping[str, str]) -> Settings:
    """The configuration file's settings (host §7); an invalid file is a :class:`UsageError`."""
    try:
        return load_settings(environ, PROVIDERS)
    except SettingsError as exc:
        raise UsageError(str(exc)) from None


def model_startup(args: argparse.Namespace, environ: Mapping[str, str], root: Path, *, chat: bool) -> Startup:
    """The host configuration from the model flags, the environment and the configuration file
    (host §6.5, host §7); usage errors raise :class:`UsageError`."""
    settings = load_config_file(environ)
    provider = args.provider or default_provider(environ, settings)
    model = resolve_model(provider, environ, flag_model=args.model, settings=settings)
    if chat and model is None:
        raise UsageError(missing_model_usage_error(provider))
    try:
        script = load_configured_script(args.script, environ)
        endpoint = provider_config(provider, environ, settings)
    except (ScriptError, SettingsError) as exc:
        raise UsageError(str(exc)) from None
    if args.system is None:
        system: str | None = DEFAULT_SYSTEM_PROMPT
    else:
        system = args.system or None
    config = HostConfig(
        root=root,
        provider=provider,
        model=None if provider == "scripted" and model == "scripted" else model,
        system=system,
        max_steps=args.max_steps,
        time_context=args.time_context,
        time_zone=args.time_zone,
        time_refresh_ms=args.time_refresh_ms,
        **store_options(args, environ),
    )
    check_time_context(config, environ)
    setup = ModelSetup(endpoint, model, settings.path or config_path(environ))
    return Startup(config, script, settings, setup)


def check_time_context(config: HostConfig, environ: Mapping[str, str]) -> None:
    """Construct the time context the host will construct, so a bad ``--time-zone``,
    ``--time-refresh-ms`` or an unresolvable system zone is a usage error before any output."""
    if not config.time_context:
        return
    try:
        timecontext.TimeContext(
            SystemClock(),
            canonicalize=schedule.canonicalize_time_zone,
            time_zone=config.time_zone,
            refresh_interval_ms=config.time_refresh_ms,
            environ=environ,
        )
    except timecontext.TimeContextConfigError as exc:
        message = str(exc)
        if config.time_zone is None and message == "time-context: failed to resolve the system time zone":
            message += SYSTEM_ZONE_HINT
        raise UsageError(message) from None


def host_root(option: str | None, environ: Mapping[str, str]) -> Path:
    """The session root of host §5.1 for ``--root`` (or ``None``), relative to the process cwd."""
    return resolve_root(option, environ, cwd=os.getcwd())


def check_root(root: Path) -> None:
    """A root that can never hold sessions — it, or its nearest existing ancestor, is not a
    directory — is a start-up failure (exit 1) before any output. The root itself is created
    later, with the first session."""
    existing = root
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if existing == root and not root.is_dir():
        raise StartupError(f'session root "{root}" is not a directory; pass --root DIR')
    if not existing.is_dir():
        raise StartupError(
            f'session root "{root}" cannot be created: "{existing}" is not a directory; pass --root DIR'
        )


class _PrefixFormatter(logging.Formatter):
    """Prefixes every line of a record (tracebacks included)."""

    def __init__(self, prefix: str) -> None:
        super().__init__("%(message)s")
        self._prefix = prefix

    def format(self, record: logging.LogRecord) -> str:
        return "\n".join(self._prefix + line for line in super().format(record).split("\n"))


class _StderrLogging:
    """Routes the packages' log records to stderr, one prefixed line each, while active."""

    def __init__(self, prefix: str) -> None:
        self._handler = logging.StreamHandler(sys.stderr)
        self._handler.setFormatter(_PrefixFormatter(prefix))
        self._level = logging.NOTSET

    def __enter__(self) -> None:
        root = logging.getLogger()
        self._level = root.level
        root.addHandler(self._handler)
        root.setLevel(logging.WARNING)

    def __exit__(self, *exc: object) -> None:
        root = logging.getLogger()
        root.removeHandler(self._handler)
        root.setLevel(self._level)


# --- commands ------------------------------------------------------------------------------------


def _serve(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """host §7.3: the JSON-RPC server; stdout carries frames only, everything else goes to stderr."""
    root = host_root(args.root, environ)
    startup = model_startup(args, environ, root, chat=False)
    check_root(root)
    for patch in args.patch:
        sys.stderr.write(f"{SERVE_PREFIX}ignoring --patch {patch} (turnlog has no patches)\n")

    def diagnostic(line: str) -> None:
        sys.stderr.write(SERVE_PREFIX + line + "\n")
        sys.stderr.flush()

    async def run(frames_fd: int) -> int:
        adapters = ModelAdapters(env=environ, script=startup.script, settings=startup.settings)
        try:
            async with open_host(startup.config, adapters=adapters) as host:
                return await serve_stdio(
                    host, max_line_bytes=args.max_line_bytes, stdout_fd=frames_fd, diagnostic=diagnostic
                )
        finally:
            await adapters.aclose()

    sys.stdout.flush()
    # Frames get a private copy of stdout; fd 1 becomes stderr, so nothing else can reach stdout.
    frames_fd = os.dup(1)
    os.dup2(2, 1)
    try:
        with _StderrLogging(SERVE_PREFIX):
            return trio.run(run, frames_fd)
    finally:
        sys.stdout.flush()
        os.dup2(frames_fd, 1)
        os.close(frames_fd)


def _chat(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """host §7.2: the terminal assistant."""
    # Here, not at the top: the line editor's prompt_toolkit (~90 ms) is for chat and demo only,
    # and serve answers its first request sooner without it.
    from ._chat import ChatOptions, run_chat

    root = host_root(args.root, environ)
    startup = model_startup(args, environ, root, chat=True)
    check_root(root)

    options = ChatOptions(
        session_id=args.session, continue_latest=args.continue_latest, setup=startup.setup, utc=args.utc
    )

    async def run() -> int:
        adapters = ModelAdapters(env=environ, script=startup.script, settings=startup.settings)
        try:
            return await run_chat(startup.config, adapters, options, environ=environ)
        finally:
            await adapters.aclose()

    with _StderrLogging("turnlog: "):
        return trio.run(run)


def _demo(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """host §7.1: the self-checking tour."""
    from ._demo import demo_config, run_demo  # it uses chat's admission: see _chat above

    root = host_root(args.root, environ)
    config = replace(demo_config(root), **store_options(args, environ))
    check_time_context(config, environ)
    check_root(root)

    async def run() -> int:
        return await run_demo(config, args.seconds, args.json, name_root=args.root is not None)

    with _StderrLogging("turnlog: "):
        return trio.run(run)


_HOST_RUNNERS: dict[str, Callable[[argparse.Namespace, Mapping[str, str]], int]] = {
    "demo": _demo,
    "chat": _chat,
    "serve": _serve,
}


def run_host_command(command: str, argv: Sequence[str], environ: Mapping[str, str]) -> int:
    """``turnlog demo|chat|serve ARGS`` and its exit status (``--help`` prints and returns 0)."""
    try:
        args = build_parsers()[command].parse_args(argv)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    # Every zone — host, schedule, timecontext — comes from tzdata, the same on every machine.
    zoneinfo.reset_tzpath(to=())
    return _HOST_RUNNERS[command](args, environ)
