"""``turnlog web``: the browser front door (web §2).

Start-up, in order: the host's checks (host §7: flags, the time context, the root), the root made
and checked for writing (``SessionStore.ensure_root()``), the browser key file, the port bound,
the host opened; once Hypercorn accepts connections, two stdout lines — first exactly
``turnlog web: http://<addr>:<port>/#token=<launch token>`` — and the browser is opened (from a
launch file, never with the token in an argv). Every failure before that is one stderr line and
exit 1 (2 for usage). SIGTERM stops with 0, SIGINT with 130, a session that cannot be flushed at
the end with 1 (web §7); the launch file is deleted and a last line says serving stopped.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import zoneinfo
from collections.abc import Mapping, Sequence
from pathlib import Path

import trio

from eventlog import PersistenceError, SessionStore
from host._process import EXIT_SIGINT
from host.models import ModelAdapters
from host.runtime import Route, open_host
from host.web.fence import Binding
from host.web.launch import (
    LaunchError,
    bind_address,
    key_path,
    load_browser_key,
    new_secret,
    open_browser,
    page_url,
    remove_launch_file,
    should_open_browser,
    url_line,
    write_launch_file,
)
from host.web.server import DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_PORT, Stop, bind, serve_web

from ._commands import (
    _add_model_flags,
    _add_root,
    _int_in,
    _Parser,
    _StderrLogging,
    check_root,
    host_root,
    model_startup,
)
from ._errors import StartupError

PREFIX = "turnlog web: "
STOPPED = "turnlog web: stopped; reminders fire only while a session is open"


def build_parser() -> argparse.ArgumentParser:
    """The flags of ``turnlog web`` (web §2)."""
    parser = _Parser(
        prog="turnlog web",
        description="The browser front door: a local web page for the assistant, and a log inspector. "
        "Serves on a loopback address only; open the link it prints.",
    )
    _add_root(parser)
    parser.add_argument(
        "--port",
        metavar="N",
        type=_int_in(0, 65535, "must be a port number 0-65535"),
        default=DEFAULT_PORT,
        help=f"port to listen on (default {DEFAULT_PORT}; 0 picks a free one)",
    )
    parser.add_argument(
        "--host",
        metavar="ADDR",
        default="127.0.0.1",
        help="loopback address to bind: 127.0.0.1 (default), ::1 or localhost",
    )
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    parser.add_argument(
        "--new-key", action="store_true", help="replace the browser key, signing every browser out"
    )
    parser.add_argument(
        "--max-message-bytes",
        metavar="N",
        type=_int_in(1, None, "must be a positive integer"),
        default=DEFAULT_MAX_MESSAGE_BYTES,
        help=f"largest WebSocket message accepted (default {DEFAULT_MAX_MESSAGE_BYTES})",
    )
    _add_model_flags(parser)
    return parser


def describe_model(route: Route) -> str:
    """The model as the second start-up line names it."""
    if route.provider == "scripted":
        return "scripted (offline)"
    return f"{route.provider} {route.model}" if route.model else f"{route.provider} (no model configured)"


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _diagnostic(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def run_web(argv: Sequence[str], environ: Mapping[str, str]) -> int:
    """``turnlog web ARGS`` and its exit status."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    # Every zone — host, schedule, timecontext — comes from tzdata, the same on every machine.
    zoneinfo.reset_tzpath(to=())
    try:
        address = bind_address(args.host)
        root = host_root(args.root, environ)
        startup = model_startup(args, environ, root, chat=False)
        check_root(root)
    except LaunchError as exc:
        _diagnostic(exc.message)
        return exc.exit_code
    browser = should_open_browser(environ, no_browser=args.no_browser)
    key_file = key_path(environ, cwd=os.getcwd())

    async def run() -> int:
        try:
            await SessionStore(root).ensure_root()
        except PersistenceError as exc:
            raise StartupError(f"{exc}; pass --root DIR") from None
        browser_key = load_browser_key(key_file, new_key=args.new_key)
        sock = bind(address, args.port)
        launch_token = new_secret()
        launch_file: list[Path] = []
        stop = Stop()

        async def ready(binding: Binding) -> None:
            _say(url_line(binding, launch_token))
            _say(
                f"{PREFIX}sessions in {root}; model {describe_model(host.route)}; "
                "Ctrl-C stops (reminders fire only while a session is open)"
            )
            if browser:
                nursery.start_soon(open_page, binding)

        async def open_page(binding: Binding) -> None:
            try:
                path = write_launch_file(key_file.parent, binding.port, page_url(binding, launch_token))
            except OSError as exc:
                _diagnostic(f"{PREFIX}could not open a browser ({exc.strerror}); open the URL above")
                return
            launch_file.append(path)
            problem = await open_browser(path)
            if problem is not None:
                _diagnostic(problem)

        adapters = ModelAdapters(env=environ, script=startup.script, settings=startup.settings)
        try:
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async with trio.open_nursery() as nursery:

                    async def watch() -> None:
                        async for signum in signals:
                            stop.request(EXIT_SIGINT if signum == signal.SIGINT else 0)

                    nursery.start_soon(watch)
                    async with open_host(startup.config, adapters=adapters) as host:
                        served = await serve_web(
                            host,
                            sock,
                            launch_token=launch_token,
                            browser_key=browser_key,
                            stop=stop,
                            diagnostic=_diagnostic,
                            max_message_bytes=args.max_message_bytes,
                            on_ready=ready,
                        )
                    nursery.cancel_scope.cancel()
        finally:
            for path in launch_file:
                remove_launch_file(path)
            await adapters.aclose()
        for session_id, message in served.report.failed.items():
            _diagnostic(f'{PREFIX}shutdown: session "{session_id}" could not be flushed: {message}')
        _say(STOPPED)
        if served.exit_code == EXIT_SIGINT:
            return EXIT_SIGINT
        return 1 if served.report.failed else served.exit_code

    # What trio restores on leaving the receiver, and redelivers signals still queued to: once the
    # exit code is decided, later signals change nothing.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_IGN)
    try:
        with _StderrLogging(PREFIX):
            return trio.run(run)
    except LaunchError as exc:
        _diagnostic(exc.message)
        return exc.exit_code
