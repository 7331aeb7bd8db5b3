"""Golden texts for the human output of chat, ``ls`` and ``show`` (tests/host/cli/golden/). When a
change of that output is intended, regenerate them and review the diff:

    TURNLOG_REGENERATE_GOLDENS=1 .venv/bin/python -m pytest tests/host/cli
"""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN = Path(__file__).with_name("golden")
REGENERATE = os.environ.get("TURNLOG_REGENERATE_GOLDENS") == "1"


def check_golden(name: str, text: str) -> None:
    """``text`` equals the golden file ``name`` (written instead when regenerating)."""
    path = GOLDEN / name
    if REGENERATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"no golden {name}; regenerate with TURNLOG_REGENERATE_GOLDENS=1"
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"{name} differs from its golden"
