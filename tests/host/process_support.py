"""Shared by the tests that run the installed ``turnlog`` console script as a subprocess."""

from __future__ import annotations

import importlib.metadata
import os
import sys
from pathlib import Path

TURNLOG = Path(sys.executable).with_name("turnlog")
VERSION = importlib.metadata.version("turnlog")
UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


def clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without the variables turnlog reads (``TZ`` is ``UTC``), plus
    ``extra``."""
    prefixes = ("TURNLOG_", "DEEPSEEK_", "DSH_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes) and k not in ("TZ", "XDG_DATA_HOME")}
    env["TZ"] = "UTC"
    env.update(extra)
    return env


# Run as `python -c DEFAULT_SIGINT PROGRAM ARGS...`: SIGINT back to its default, then exec. A test
# run started in the background (`nohup ... &`) inherits an ignored SIGINT, and an ignored signal
# stays ignored across exec, so a child that must react to Ctrl-C needs it reset explicitly;
# exec from a fresh interpreter does that without preexec_fn (unsafe in a process with threads).
DEFAULT_SIGINT = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"


def with_default_sigint(argv: list[str]) -> list[str]:
    """``argv`` started with SIGINT at its default disposition (see ``DEFAULT_SIGINT``)."""
    return [sys.executable, "-c", DEFAULT_SIGINT, *argv]
