"""Where the project's fixture logs are. Tests copy them before anything that could write."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
"""turnlog's hand-written logs (``fixtures/*.jsonl``, a flat store root)."""

DSH_FIXTURES = FIXTURES / "deepseek-harness"
"""Real deepseek-harness logs, vendored with their MIT notice (``fixtures/deepseek-harness``)."""
