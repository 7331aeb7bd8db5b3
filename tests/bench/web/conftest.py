"""The web benchmarks reuse the browser fixture of the web tests (Debian's Chromium)."""

from tests.web.conftest import chromium

__all__ = ["chromium"]
