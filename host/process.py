"""What the ``turnlog`` process reports about itself (host.md §7): its installed version and the
exit status after SIGINT. Free of heavy imports, so ``turnlog --version`` starts fast."""

from __future__ import annotations

import functools
from importlib.metadata import PackageNotFoundError, version

EXIT_SIGINT = 130


@functools.cache
def package_version() -> str:
    """The installed turnlog version (``0.0.0`` when running from a tree that is not installed)."""
    try:
        return version("turnlog")
    except PackageNotFoundError:
        return "0.0.0"
