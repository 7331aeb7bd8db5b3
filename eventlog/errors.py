"""Typed errors of the eventlog package (log-format §5.6).

Every message is one line and names the session or the path it is about.
"""

from __future__ import annotations

import os
from pathlib import Path


class EventLogError(Exception):
    """Base class of every error raised by eventlog."""


class InvalidSessionId(EventLogError, ValueError):
    """A session id does not match ``[A-Za-z0-9][A-Za-z0-9._-]{0,127}``."""

    def __init__(self, value: object) -> None:
        super().__init__(
            f"invalid session id {value!r}: use 1-128 characters from [A-Za-z0-9._-], "
            "starting with a letter or digit"
        )
        self.value = value


class SessionNotFound(EventLogError, LookupError):
    """No session file: asked for by id, ``session "<id>" not found``; read by path alone,
    ``session log "<path>" not found``. ``id`` is the requested id (None when read by path);
    ``path`` the file looked for, when known."""

    def __init__(self, id: str | None = None, *, path: str | os.PathLike[str] | None = None) -> None:
        if id is not None:
            message = f'session "{id}" not found'
        elif path is not None:
            message = f'session log "{os.fspath(path)}" not found'
        else:
            raise TypeError("SessionNotFound needs the session id or the path looked for")
        super().__init__(message)
        self.id = id
        self.path = None if path is None else Path(path)


class SessionExists(EventLogError):
    def __init__(self, id: str) -> None:
        super().__init__(f'session "{id}" already exists')
        self.id = id


class SessionBusy(EventLogError):
    def __init__(self, id: str) -> None:
        super().__init__(f'session "{id}" is already open for writing')
        self.id = id


class SessionClosed(EventLogError):
    def __init__(self, id: str) -> None:
        super().__init__(f'session "{id}" is closed')
        self.id = id


class InvalidEvent(EventLogError, ValueError):
    """An event refused by ``Session.append`` or by ``vocab.decode``."""


class CorruptLog(EventLogError):
    """A log that cannot be read: ``corrupt session log "<path>": …``, or for a Zstandard log
    (``zstd``) ``corrupt Zstandard session log "<path>": …`` (dsh-roots §4)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        detail: str,
        *,
        line: int | None = None,
        offset: int | None = None,
        zstd: bool = False,
    ) -> None:
        kind = "Zstandard session log" if zstd else "session log"
        super().__init__(f'corrupt {kind} "{os.fspath(path)}": {detail}')
        self.path = Path(path)
        self.detail = detail
        self.line = line
        self.offset = offset


class UnsupportedFormat(EventLogError):
    """A log in a format this build cannot read (another version, Zstandard)."""

    def __init__(self, message: str, *, version: float | None) -> None:
        super().__init__(message)
        self.version = version


class ForkError(EventLogError):
    """A fork refused for its boundary; ``code`` is INVALID_BOUNDARY or OPEN_TURN."""

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.code = code


class SurfaceError(EventLogError, ValueError):
    """The model-visible history cannot be folded (log-format §3.3)."""


class PersistenceError(EventLogError):
    """Durability is uncertain: ``failed to persist session "<id>": …``.

    ``permanent`` is true when the session can never write again (its publish was lost
    to another process, or its file was removed or replaced behind it).
    """

    def __init__(self, id: str, detail: str, *, permanent: bool = False) -> None:
        super().__init__(f'failed to persist session "{id}": {detail}')
        self.id = id
        self.detail = detail
        self.permanent = permanent
