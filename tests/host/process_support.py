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
