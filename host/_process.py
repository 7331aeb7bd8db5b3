"""What the ``turnlog`` process reports about itself (host §7): its installed version and the
exit status after SIGINT. Imports nothing heavy; every layer of host may use it."""

from __future__ import annotations

import functools

EXIT_SIGINT = 130


@functools.cache
def package_version() -> str:
    """The installed turnlog version (``0.0.0`` when running from a tree that is not installed)."""
    from importlib.metadata import PackageNotFoundError, version  # deferred: it costs ~25 ms

    try:
        return version("turnlog")
    except PackageNotFoundError:
        return "0.0.0"


@functools.cache
def process_instance() -> str:
    """This process's instance id, a UUID4 hex fixed for its lifetime (host §4.3.1): a client that
    reconnects and finds another one knows the host restarted (web §6.10)."""
    import uuid

    return uuid.uuid4().hex
