"""Where sessions live (host §5.1): ``resolve_root``, a pure function over the option, the
environment and the working directory, and ``root_from_dsh_session_root``, whether that root came
from ``$DSH_SESSION_ROOT`` (which sets an empty root's default layout, dsh-roots §3).

A base module (it imports nothing of host and nothing heavy) so the read-only log commands
(``turnlog ls``, ``inspect``, ``validate``) can find the root without loading the agent runtime;
``host.runtime`` re-exports it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def resolve_root(
    option: str | os.PathLike[str] | None,
    environ: Mapping[str, str],
    *,
    cwd: str | os.PathLike[str],
    home: str | os.PathLike[str] | None = None,
) -> Path:
    """The session root of host §5.1, as an absolute path; empty variables count as unset.

    ``--root`` (relative to ``cwd``), else ``$TURNLOG_HOME/sessions``, else ``$DSH_SESSION_ROOT``
    itself (relative to ``cwd``), else ``$XDG_DATA_HOME/turnlog/sessions`` when ``XDG_DATA_HOME``
    is absolute, else ``<home>/.local/share/turnlog/sessions`` (``home`` defaults to ``$HOME``).
    Pure: no file system access.
    """

    def absolute(value: str | os.PathLike[str]) -> Path:
        return Path(os.path.normpath(os.path.join(cwd, value)))

    if option is not None and os.fspath(option) != "":
        return absolute(option)
    if environ.get("TURNLOG_HOME"):
        return absolute(environ["TURNLOG_HOME"]) / "sessions"
    if environ.get("DSH_SESSION_ROOT"):
        return absolute(environ["DSH_SESSION_ROOT"])
    xdg = environ.get("XDG_DATA_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(os.path.normpath(xdg)) / "turnlog" / "sessions"
    base = home if home is not None else environ.get("HOME") or os.path.expanduser("~")
    return absolute(base) / ".local" / "share" / "turnlog" / "sessions"


def root_from_dsh_session_root(option: str | os.PathLike[str] | None, environ: Mapping[str, str]) -> bool:
    """Whether ``resolve_root`` takes the root from ``$DSH_SESSION_ROOT`` (no ``--root``, no
    ``$TURNLOG_HOME``). Such a root, when empty, gets the reference's production default: the
    dsh layout in zstd (dsh-roots §3)."""
    no_option = option is None or os.fspath(option) == ""
    return no_option and not environ.get("TURNLOG_HOME") and bool(environ.get("DSH_SESSION_ROOT"))
