"""Starting ``turnlog web``: the bind address, the browser key file, the URL line, the launch file
and opening a browser (web §2, web §4.3).

The decisions (:func:`bind_address`, :func:`key_path`, :func:`url_line`,
:func:`should_open_browser`) are pure functions of their arguments and an environ mapping. The
effects are thin: :func:`load_browser_key` (the key file), :func:`write_launch_file` /
:func:`remove_launch_file` and :func:`open_browser`, which runs :mod:`webbrowser` in a worker
thread. Failures that end the command are :class:`LaunchError`, whose message is the one stderr
line to print.

Neither secret reaches an argv: the browser is given ``file://<launch file>``, and the launch file
(mode 0600, in the key's 0700 directory) holds the URL with the token.
"""

from __future__ import annotations

import contextlib
import errno
import html
import os
import re
import secrets
import sys
import webbrowser
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

import trio

from host.web.fence import Binding

__all__ = [
    "KEY_FILE_NAME",
    "LaunchError",
    "bind_address",
    "key_path",
    "launch_file_path",
    "launch_file_text",
    "load_browser_key",
    "new_secret",
    "open_browser",
    "page_url",
    "remove_launch_file",
    "should_open_browser",
    "url_line",
    "write_launch_file",
]

KEY_FILE_NAME: Final = "web-key"

# secrets.token_urlsafe(32): 32 random bytes in unpadded URL-safe base64.
_KEY_SHAPE: Final = re.compile(r"[A-Za-z0-9_-]{43}")

_HOST_FLAG_ERROR: Final = (
    "turnlog: web: --host must be a loopback address (127.0.0.1, ::1 or localhost); "
    "use SSH port forwarding for remote access"
)


class LaunchError(Exception):
    """``turnlog web`` cannot start: ``message`` is the whole stderr line, ``exit_code`` 1 for a
    runtime failure and 2 for a usage error (web §2)."""

    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


def new_secret() -> str:
    """A launch token or browser key: ``secrets.token_urlsafe(32)`` (web §4.3)."""
    return secrets.token_urlsafe(32)


def bind_address(flag: str) -> str:
    """The address ``--host`` binds: ``127.0.0.1`` (also for ``localhost``) or ``::1``.

    Raises :class:`LaunchError` (exit 2) with web §2's message for anything else.
    """
    if flag in ("127.0.0.1", "localhost"):
        return "127.0.0.1"
    if flag == "::1":
        return "::1"
    raise LaunchError(_HOST_FLAG_ERROR, exit_code=2)


def page_url(binding: Binding, token: str) -> str:
    """``http://<addr>:<port>/#token=<token>``; the token rides in the fragment, which browsers
    never send to a server or put in a referrer."""
    return f"http://{binding.authority}/#token={token}"


def url_line(binding: Binding, token: str) -> str:
    """The first stdout line, which supervisors and tests parse (web §2):
    ``turnlog web: http://<addr>:<port>/#token=<token>``."""
    return f"turnlog web: {page_url(binding, token)}"


def key_path(environ: Mapping[str, str], *, cwd: str | os.PathLike[str], home: str | None = None) -> Path:
    """Where the browser key lives (web §4.3), as an absolute path; empty variables count as unset.

    ``$TURNLOG_HOME/web-key`` (a relative ``TURNLOG_HOME`` resolves against ``cwd``, as for the
    session root), else ``$XDG_STATE_HOME/turnlog/web-key`` when ``XDG_STATE_HOME`` is absolute,
    else ``<home>/.local/state/turnlog/web-key`` (``home`` defaults to ``$HOME``). No file access.
    """
    if environ.get("TURNLOG_HOME"):
        return Path(os.path.normpath(os.path.join(cwd, environ["TURNLOG_HOME"]))) / KEY_FILE_NAME
    state = environ.get("XDG_STATE_HOME", "")
    if state and os.path.isabs(state):
        return Path(os.path.normpath(state)) / "turnlog" / KEY_FILE_NAME
    base = home if home is not None else environ.get("HOME") or os.path.expanduser("~")
    return Path(os.path.normpath(os.path.join(cwd, base))) / ".local" / "state" / "turnlog" / KEY_FILE_NAME


def load_browser_key(path: Path, *, new_key: bool = False) -> str:
    """The browser key stored at ``path``, created on first use or replaced with ``new_key``.

    The directory is created with mode 0700 when missing. A new key is written to a private
    temporary file (0600), synced, then published atomically: linked into place when creating (so
    two starts racing keep one key), renamed over the old one for ``--new-key``. An existing key
    file is opened without following a symlink and must grant nothing to group or others.

    Raises :class:`LaunchError` (exit 1): ``turnlog: web: <path> must be readable only by you
    (chmod 600 <path>)`` for a file others may read, a line naming ``--new-key`` for a file whose
    content is not a key or cannot be read, and a line naming the path for a directory or file
    that cannot be written.
    """
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise LaunchError(f"turnlog: web: cannot create {path.parent}: {exc.strerror}") from exc
    if new_key:
        return _publish_key(path, replace=True)
    key = _read_key(path)
    if key is not None:
        return key
    try:
        return _publish_key(path, replace=False)
    except FileExistsError:  # another start created it first: use that one
        key = _read_key(path)
        if key is None:
            raise LaunchError(_unreadable(path, "it disappeared while being created")) from None
        return key


def _unreadable(path: Path, reason: str) -> str:
    return (
        f"turnlog: web: cannot read the browser key {path} ({reason}); replace it with turnlog web --new-key"
    )


def _read_key(path: Path) -> str | None:
    """The key at ``path``, or ``None`` when there is no file; :class:`LaunchError` otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        reason = "it is a symbolic link" if exc.errno == errno.ELOOP else exc.strerror or type(exc).__name__
        raise LaunchError(_unreadable(path, reason)) from exc
    with os.fdopen(fd, "rb") as file:
        if os.fstat(file.fileno()).st_mode & 0o077:
            raise LaunchError(f"turnlog: web: {path} must be readable only by you (chmod 600 {path})")
        try:
            raw = file.read(4096)
        except OSError as exc:
            raise LaunchError(_unreadable(path, exc.strerror or type(exc).__name__)) from exc
    try:
        text = raw.decode("ascii").removesuffix("\n")
    except UnicodeDecodeError:
        text = ""
    if not _KEY_SHAPE.fullmatch(text):
        raise LaunchError(_unreadable(path, "it does not hold a browser key"))
    return text


def _publish_key(path: Path, *, replace: bool) -> str:
    key = new_secret()
    temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.fchmod(fd, 0o600)  # the umask may have narrowed it; never widened
            os.write(fd, f"{key}\n".encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        if replace:
            os.replace(temp, path)
        else:
            os.link(temp, path)  # FileExistsError when another start won the race
        _sync_directory(path.parent)
    except FileExistsError:
        raise
    except OSError as exc:
        raise LaunchError(f"turnlog: web: cannot write the browser key {path}: {exc.strerror}") from exc
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
    return key


def _sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def launch_file_path(key_dir: Path, port: int) -> Path:
    """``<key dir>/web-open-<port>.html`` (web §2)."""
    return key_dir / f"web-open-{port}.html"


def launch_file_text(url: str) -> str:
    """A page that sends the browser on to ``url`` at once, with a link as a fallback; it asks for
    no referrer so the token cannot leak from it."""
    quoted = html.escape(url, quote=True)
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f'<meta http-equiv="refresh" content="0; url={quoted}">\n'
        "<title>turnlog web</title></head>\n"
        f'<body><p><a href="{quoted}">Open turnlog web</a></p></body></html>\n'
    )


def write_launch_file(key_dir: Path, port: int, url: str) -> Path:
    """Write the launch file for ``port`` (mode 0600, replacing a leftover one atomically) and return
    its path. Raises ``OSError`` when it cannot be written; the caller then reports that no browser
    could be opened and serves on."""
    path = launch_file_path(key_dir, port)
    temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, launch_file_text(url).encode("utf-8"))
        finally:
            os.close(fd)
        os.replace(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
    return path


def remove_launch_file(path: Path) -> None:
    """Delete the launch file at exit; a file already gone is fine."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


_BSD_OR_LINUX: Final = ("linux", "freebsd", "openbsd", "netbsd", "dragonfly", "sunos")


def should_open_browser(
    environ: Mapping[str, str], *, no_browser: bool, platform: str = sys.platform
) -> bool:
    """Whether ``turnlog web`` opens a browser (web §2): not with ``--no-browser``, not over SSH
    (``SSH_CONNECTION`` or ``SSH_TTY`` non-empty), and on Linux and the BSDs only with a display
    (``DISPLAY`` or ``WAYLAND_DISPLAY`` non-empty), since :mod:`webbrowser` would otherwise start a
    console browser in this terminal."""
    if no_browser or environ.get("SSH_CONNECTION") or environ.get("SSH_TTY"):
        return False
    if platform.startswith(_BSD_OR_LINUX):
        return bool(environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY"))
    return True


async def open_browser(launch_file: Path, *, opener: Callable[[str], bool] = webbrowser.open) -> str | None:
    """Open ``file://<launch file>`` with ``opener`` in a worker thread; ``None`` on success, else
    the one stderr line ``turnlog web: could not open a browser (<reason>); open the URL above``.

    A launcher's own errors (``webbrowser.Error``, ``OSError``, ``ValueError``) become that line, so
    serving continues. Cancellation abandons the thread (a launcher may block for as long as the
    browser runs).
    """
    try:
        opened = await trio.to_thread.run_sync(opener, launch_file.as_uri(), abandon_on_cancel=True)
    except (webbrowser.Error, OSError, ValueError) as exc:  # what launchers raise; reported, not raised
        reason = str(exc).replace("\n", " ").strip() or type(exc).__name__
    else:
        if opened:
            return None
        reason = "no browser found"
    return f"turnlog web: could not open a browser ({reason}); open the URL above"
