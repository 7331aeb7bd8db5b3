"""Where the real deepseek-harness logs (``shared/fixtures-dsh``) are: beside the checkout, as
CI lays it out, else in the workspace's ``/work/shared``. Tests copy them before any write."""

from __future__ import annotations

from pathlib import Path

_BESIDE = Path(__file__).resolve().parents[2] / "shared" / "fixtures-dsh"

DSH_FIXTURES = next(
    (place for place in (_BESIDE, Path("/work/shared/fixtures-dsh")) if place.is_dir()), _BESIDE
)
