"""The session store: one ``<root>/<id>.jsonl`` file per session (log-format §4, log-format §5.3,
log-format §7.4, log-format §8).

``SessionStore`` creates, opens, forks, lists, inspects and deletes sessions. Blocking file work
runs in ``trio.to_thread.run_sync``; every durable effect goes through ``eventlog.fileio``.

One writer per file: a live session's descriptor holds an exclusive ``flock``, and the store
also refuses ids it has open (or is creating, opening, forking into or deleting) itself. A store
is used from one ``trio.run`` and is not thread-safe.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import functools
import logging
import os
import stat
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Literal

import msgspec

from . import fileio
from ._dsh import (
    LOG_NAMES,
    Compression,
    Entry,
    Layout,
    RootConflict,
    RootContent,
    detect_root,
    dsh_log_path,
    find_session,
    list_root,
    resolve_layout,
)
from ._logfile import remove_leftover_temps
from ._zstd import FrameWriter, encode_frame
from .errors import (
    CorruptLog,
    ForkError,
    PersistenceError,
    SessionBusy,
    SessionExists,
    SessionNotFound,
    UnsupportedFormat,
)
from .format import Event, SessionHeader, build_event, check_session_id, temp_path
from .reader import HEADER_LIMIT, LogSnapshot, Repair, iter_events, read_header, read_log, read_log_fd
from .session import Session
from .values import Clock, SystemClock, is_safe_int

# trio is imported inside the functions that use it, not with the module: reading logs (the read-
# only log commands, which import eventlog) never loads it.
if TYPE_CHECKING:
    import trio

__all__ = ["SessionInfo", "SessionRootError", "SessionStore", "default_root"]

logger = logging.getLogger("eventlog")

_CHILD_CHUNK = 1 << 20


def default_root() -> Path:
    """The store root when none is given (log-format §4.1), first match wins: ``$TURNLOG_HOME/sessions``
    (a relative value is made absolute now); ``$XDG_DATA_HOME/turnlog/sessions`` (ignored
    unless absolute); ``~/.local/share/turnlog/sessions``. Empty variables count as unset."""
    home = os.environ.get("TURNLOG_HOME")
    if home:
        return Path(os.path.abspath(home)) / "sessions"
    data = os.environ.get("XDG_DATA_HOME")
    if data and os.path.isabs(data):
        return Path(data) / "turnlog" / "sessions"
    return Path.home() / ".local" / "share" / "turnlog" / "sessions"


class SessionInfo(msgspec.Struct, frozen=True):
    """One store file as ``list`` sees it: its header, or the problem that hides it."""

    id: str
    path: Path
    size: int
    header: SessionHeader | None
    problem: str | None


class SessionRootError(PersistenceError):
    """The store root cannot be created or is not a writable directory (``ensure_root``), or
    holds more than one layout or encoding, or not the one asked for (dsh-roots §3; then the
    message is the whole ``message``)."""

    def __init__(self, root: Path, detail: str, *, message: str | None = None) -> None:
        Exception.__init__(self, message or f'cannot use session root "{root}": {detail}')
        self.id = ""
        self.root = root
        self.detail = detail
        self.permanent = False


class SessionStore:
    """Sessions stored as ``<root>/<id>.jsonl`` (layout ``flat``) or as
    ``<root>/<project dir>/<encoded id>/session.jsonl[.zstd]`` (layout ``dsh``, dsh-roots §2-§3).

    ``root`` defaults to ``default_root()`` and is made absolute; ``clock`` (default
    ``SystemClock()``) stamps headers and events; ``write_delay_ms`` (an int in 0..60000) is
    every session's batching window (log-format §6.1). ``layout`` and ``compression`` say what
    the root holds or gets: ``"auto"`` detects it from the root's listing at first use (an
    empty root takes the default: ``flat``, or ``dsh``/``zstd`` with ``dsh_default``, for a
    root that came from ``$DSH_SESSION_ROOT``); an explicit choice must match a non-empty root
    (``SessionRootError`` otherwise). ``store.layout``/``store.compression`` report what is in
    force.
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        layout: Literal["auto", "flat", "dsh"] = "auto",
        compression: Compression | None = None,
        clock: Clock | None = None,
        write_delay_ms: int = 5,
        dsh_default: bool = False,
    ) -> None:
        if type(write_delay_ms) is not int or not 0 <= write_delay_ms <= 60000:
            raise ValueError(f"write_delay_ms must be an int in 0..60000, got {write_delay_ms!r}")
        self.root = Path(os.path.abspath(root)) if root is not None else default_root()
        # Checked now (ValueError for a bad combination); the root is detected at first use.
        resolve_layout(self.root, RootContent(None, None), layout=layout, compression=compression)
        self._asked: tuple[Literal["auto", "flat", "dsh"], Compression | None, bool] = (
            layout,
            compression,
            dsh_default,
        )
        self._layout: tuple[Layout, Compression] | None = None
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._write_delay_ms = write_delay_ms
        # ids this store has open for writing; None marks an id being created, opened,
        # forked into or deleted
        self._live: dict[str, Session | None] = {}
        # ids whose file a delete removed but whose root sync failed: a retry finishes it
        self._unsynced_deletes: set[str] = set()

    def __repr__(self) -> str:
        return f"SessionStore({str(self.root)!r})"

    @property
    def layout(self) -> Layout:
        """The layout in force (detected from the root at first use)."""
        return self._resolve()[0]

    @property
    def compression(self) -> Compression:
        """The encoding in force: always ``"none"`` for ``flat``."""
        return self._resolve()[1]

    def _listing(self) -> tuple[Entry, ...] | None:
        # The root's listing for detection, or None when it cannot be listed: then the
        # operation itself fails with its usual error (creating the root, opening the file).
        try:
            return list_root(self.root)
        except OSError:
            return None

    def _resolve(self) -> tuple[Layout, Compression]:
        # Detection happens once; a root that was empty keeps the default chosen then.
        return self._layout or self._detect(self._listing())[0]

    def _detect(self, listing: tuple[Entry, ...] | None) -> tuple[tuple[Layout, Compression], RootContent]:
        layout, compression, dsh_default = self._asked
        try:
            content = detect_root(self.root, listing or ())
            resolved = resolve_layout(
                self.root, content, layout=layout, compression=compression, dsh_default=dsh_default
            )
        except RootConflict as exc:
            raise SessionRootError(self.root, str(exc), message=str(exc)) from None
        if self._layout is None and listing is not None:
            self._layout = resolved
        return self._layout or resolved, content

    def path(self, id: str) -> Path:
        """``<root>/<id>.jsonl`` of a ``flat`` root (no I/O beyond the root's detection at first
        use); in a ``dsh`` root, ``locate(id)``, which lists the root. Raises ``InvalidSessionId``
        first."""
        check_session_id(id)
        if self._resolve()[0] == "dsh":
            return self.locate(id)
        return self.root / f"{id}.jsonl"

    def locate(self, id: str, cwd: str | None = None) -> Path:
        """Where session ``id``'s log is (blocking: lists a ``dsh`` root). In a ``dsh`` root: the
        log of the one session directory named for ``id`` in any project directory; if there is
        none, where a new session with ``cwd`` goes. Raises ``InvalidSessionId``, ``CorruptLog``
        (the id in two project directories), ``SessionRootError``."""
        check_session_id(id)
        (layout, compression), content = self._detect(self._listing())
        if layout == "flat":
            return self.root / f"{id}.jsonl"
        found = find_session(self.root, content, id)
        if found is not None:
            return self.root.joinpath(*found.parts)
        return dsh_log_path(self.root, cwd, id, compression)

    async def find(self, id: str) -> Path | None:
        """Session ``id``'s log, or ``None`` when there is none (a name that is not a regular
        file, a symbolic link say, counts as there: opening it gives the error). ``locate`` and
        the check run in a worker thread, since locating lists a ``dsh`` root. Raises what
        ``locate`` raises."""
        import trio

        check_session_id(id)
        return await trio.to_thread.run_sync(self._find, id)

    def _find(self, id: str) -> Path | None:
        path = self.locate(id)
        return path if os.path.lexists(path) else None

    # ----------------------------------------------------------------------------- live sessions

    def create(
        self, *, id: str | None = None, cwd: str | None = None
    ) -> AbstractAsyncContextManager[Session]:
        """A new session (``id`` defaults to a UUID4; ``cwd`` is made absolute).

        Entering raises ``SessionExists`` if the file exists or the id is open in this store.
        ``createdAt`` is the clock's now. Nothing is written before the first durable batch,
        which publishes the file atomically (log-format §6.3). On exit the session is closed (``aclose``).
        """
        sid = check_session_id(str(uuid.uuid4()) if id is None else id)
        return self._create(sid, None if cwd is None else os.path.abspath(cwd))

    @asynccontextmanager
    async def _create(self, id: str, cwd: str | None) -> AsyncIterator[Session]:
        import trio
        path = await trio.to_thread.run_sync(self.locate, id, cwd)
        with self._reserve(id, SessionExists):
            if await trio.to_thread.run_sync(os.path.lexists, path):
                raise SessionExists(id)
            header = SessionHeader(id=id, created_at=self._clock.now_ms(), cwd=cwd)
            session = self._session(header, path, events=[], fd=None, good_size=0, repair=None)
        async with self._running(session) as live:
            yield live

    def open(self, id: str) -> AbstractAsyncContextManager[Session]:
        """An existing session, for writing.

        Entering raises ``SessionNotFound``, ``SessionBusy`` (lock held here or elsewhere),
        ``CorruptLog``/``UnsupportedFormat`` (checked through the locked descriptor), or
        ``PersistenceError`` (I/O). It commits the repair of log-format §7.4 exactly once (logged at
        WARNING and kept in ``session.recovered``) and syncs the file once, so every event in
        ``session.events`` is durable. On exit the session is closed (``aclose``).
        """
        return self._open(check_session_id(id))

    @asynccontextmanager
    async def _open(self, id: str) -> AsyncIterator[Session]:
        import trio
        path = await trio.to_thread.run_sync(self.locate, id)
        with self._reserve(id, SessionBusy):
            fd, snapshot = await trio.to_thread.run_sync(_open_locked, id, path, self._identity)
            try:
                repair = snapshot.repair
                session = self._session(
                    snapshot.header,
                    path,
                    events=list(snapshot.events),
                    fd=fd,
                    good_size=snapshot.committed_bytes,
                    repair=repair,
                )
                await trio.to_thread.run_sync(
                    session._recover,
                    snapshot.file_bytes > snapshot.committed_bytes,
                    (*repair.recovered, *repair.closers) if repair is not None else (),
                )
            except BaseException:
                fileio.close(fd)
                raise
            if repair is not None:
                logger.warning('session "%s": repaired on open: %s', id, describe_repair(repair))
        async with self._running(session) as live:
            yield live

    def _session(
        self,
        header: SessionHeader,
        path: Path,
        *,
        events: list[Event],
        fd: int | None,
        good_size: int,
        repair: Repair | None,
    ) -> Session:
        session = Session(
            header=header,
            path=path,
            clock=self._clock,
            write_delay_ms=self._write_delay_ms,
            events=events,
            fd=fd,
            good_size=good_size,
            recovered=repair,
            on_release=self._release,
            zstd=path.name == LOG_NAMES["zstd"],
        )
        self._live[header.id] = session
        return session

    def _identity(self, path: Path, header: SessionHeader) -> None:
        """A ``dsh`` log must sit where its header's cwd and id put it (dsh-roots §3)."""
        if self._resolve()[0] == "dsh":
            expected = dsh_log_path(self.root, header.cwd, header.id, self._resolve()[1])
            if os.path.realpath(path) != os.path.realpath(expected):
                raise CorruptLog(path, f'header id "{header.id}" and cwd identify "{expected}"')

    def _release(self, session: Session) -> None:
        if self._live.get(session.id) is session:
            del self._live[session.id]

    def _running(self, session: Session) -> _Running:
        return _Running(session)

    @contextmanager
    def _reserve(self, id: str, error: type[Exception]) -> Iterator[None]:
        # Marks ``id`` as taken by this store while an operation runs. On success an operation
        # may leave its live session registered in its place; on failure the id is freed.
        if id in self._live:
            raise error(id)
        self._live[id] = None
        try:
            yield
        except BaseException:
            del self._live[id]
            raise
        if self._live.get(id) is None:
            del self._live[id]

    # ----------------------------------------------------------------------------- fork

    async def fork(
        self,
        source: str | os.PathLike[str],
        *,
        at: int | None = None,
        id: str | None = None,
    ) -> SessionHeader:
        """Fork ``source`` at boundary ``at`` (inclusive; default: its last event) into a new
        session ``id`` (default: a UUID4) and return the child's header (log-format §8).

        ``source`` as ``str`` is a session id in this store (used live, flushed first, if open
        here); an ``os.PathLike`` is any session file, read by path. A cold parent is only
        read: never locked, repaired or written. Checks run in the order of log-format §8.3
        (``InvalidSessionId``, ``SessionExists``, ``SessionNotFound``, ``ForkError``); the
        child is published atomically with one durable write and is not left open.
        """
        import trio
        child = check_session_id(str(uuid.uuid4()) if id is None else id)
        if isinstance(source, str):
            check_session_id(source)  # ids are checked before any file system access
            parent_path = await trio.to_thread.run_sync(self.locate, source)
            expected: str | None = source
        else:
            parent_path = Path(os.fspath(source))
            expected = None
        cwd = None
        if self._resolve()[0] == "dsh":
            # The child's directory follows its header's cwd, the parent's (dsh-roots §2).
            live_parent = self._live.get(expected) if expected is not None else None
            if live_parent is not None:
                cwd = live_parent.header.cwd
            else:
                cwd = (await trio.to_thread.run_sync(functools.partial(read_header, parent_path))).cwd
        child_path = await trio.to_thread.run_sync(self.locate, child, cwd)
        with self._reserve(child, SessionExists):
            if await trio.to_thread.run_sync(os.path.lexists, child_path):
                raise SessionExists(child)
            live = self._live.get(expected) if expected is not None else None
            if live is not None and live._closed:
                live = None  # closing: its file is the authority now
            if live is not None:
                # Copy only what this flush made durable: events appended while it waited
                # (e.g. by an on_flushed observer) may not be on disk yet (log-format §8.2).
                through = await live.flush()
                parent, events = live.header, live.events[: through + 1]
                _check_at(at, parent.id)
                boundary = len(events) - 1 if at is None else at
                now = self._clock.now_ms()  # here, not in a thread: a clock may need trio
                return await trio.to_thread.run_sync(
                    _write_child, parent, events, boundary, child, child_path, now
                )
            now = self._clock.now_ms()
            return await trio.to_thread.run_sync(
                _fork_file, parent_path, expected, at, child, child_path, now
            )

    # ----------------------------------------------------------------------------- reading

    async def list(self) -> list[SessionInfo]:
        """Every store file (``<id>.jsonl`` with a valid id; symlinks reported, not followed),
        reading only line 1 of each: sorted by ``(created_at, id)``, files with a problem last
        by id. A missing root lists nothing."""
        import trio
        return await trio.to_thread.run_sync(self.list_blocking)

    # ``builtins.list``: in this class body ``list`` is the method above.
    def list_blocking(self) -> builtins.list[SessionInfo]:
        """``list`` in the calling thread, for callers without an event loop (the read-only
        log commands)."""
        (layout, _), content = self._detect(self._listing())
        if layout == "dsh":
            return self._list_dsh(content)
        try:
            entries = os.scandir(self.root)
        except FileNotFoundError:
            return []
        good: list[tuple[int, str, SessionInfo]] = []  # (created_at, id, info)
        bad: list[SessionInfo] = []
        with entries:
            for entry in entries:
                name = entry.name
                if not name.endswith(".jsonl"):
                    continue
                sid = name[: -len(".jsonl")]
                try:
                    check_session_id(sid)
                    st = entry.stat(follow_symlinks=False)
                except (ValueError, FileNotFoundError):
                    continue
                path = Path(entry.path)
                if stat.S_ISLNK(st.st_mode):
                    bad.append(SessionInfo(sid, path, st.st_size, None, _SYMLINK))
                    continue
                if not stat.S_ISREG(st.st_mode):
                    continue
                try:
                    header, problem = _list_header(path, sid)
                except SessionNotFound:
                    continue  # removed since the listing: no longer a store file
                info = SessionInfo(sid, path, st.st_size, header, problem)
                if header is not None and problem is None:
                    good.append((header.created_at, sid, info))
                else:
                    bad.append(info)
        good.sort(key=lambda item: item[:2])
        bad.sort(key=lambda info: info.id)
        return [info for _, _, info in good] + bad

    def _list_dsh(self, content: RootContent) -> builtins.list[SessionInfo]:
        # Each session directory's log, from its header (frame 0 only for Zstandard); entries
        # that only look like sessions are listed with their problem, never dropped (dsh-roots §3).
        good: list[tuple[int, str, SessionInfo]] = []
        bad: list[SessionInfo] = []
        for session in content.sessions:
            path = self.root.joinpath(*session.parts)
            try:
                size = os.lstat(path).st_size
                header, problem = _list_header(path, session.id)
            except (FileNotFoundError, SessionNotFound):
                continue  # removed since the listing
            if session.problem is not None:
                problem = session.problem  # readable by path, never opened by id
            if problem is None and header is not None:
                try:
                    self._identity(path, header)
                except CorruptLog as exc:
                    problem = exc.detail
            info = SessionInfo(session.id, path, size, header, problem)
            if header is not None and problem is None:
                good.append((header.created_at, session.id, info))
            else:
                bad.append(info)
        for entry in content.problems:
            path = self.root.joinpath(*entry.parts)
            try:
                size = os.lstat(path).st_size
            except FileNotFoundError:
                continue
            bad.append(
                SessionInfo(
                    entry.parts[-1] if len(entry.parts) < 3 else entry.parts[1],
                    path,
                    size,
                    None,
                    entry.problem,
                )
            )
        good.sort(key=lambda item: item[:2])
        bad.sort(key=lambda info: info.id)
        return [info for _, _, info in good] + bad

    async def inspect(self, id: str) -> LogSnapshot:
        """``read_log(self.path(id), expected_id=id)`` in a thread: never writes or locks.
        For a session open here it shows only what has been written."""
        import trio
        path = await trio.to_thread.run_sync(self.locate, id)
        return await trio.to_thread.run_sync(functools.partial(read_log, path, expected_id=id))

    # ----------------------------------------------------------------------------- deleting

    async def delete(self, id: str) -> None:
        """Remove session ``id``: take its lock briefly (``SessionBusy`` if held), unlink the
        file, sync the root. Its forks are independent files and are not touched.

        Raises ``SessionNotFound`` if there is no file, ``PersistenceError`` on an I/O error. A
        delete whose unlink succeeded but whose root sync failed can be retried: the retry
        finds the file gone, syncs the root and returns."""
        import trio
        path = await trio.to_thread.run_sync(self.locate, id)
        with self._reserve(id, SessionBusy):
            try:
                await trio.to_thread.run_sync(_unlink_session, id, path)
            except SessionNotFound:
                if id not in self._unsynced_deletes:
                    raise
            self._unsynced_deletes.add(id)
            await trio.to_thread.run_sync(_sync_root, id, path.parent)
            self._unsynced_deletes.discard(id)

    async def ensure_root(self) -> Path:
        """Create the root now (each missing directory 0700, parents synced) and check it is a
        writable directory; raises ``SessionRootError`` (a ``PersistenceError``)."""
        import trio
        return await trio.to_thread.run_sync(self._ensure_root)

    def _ensure_root(self) -> Path:
        try:
            fileio.make_dirs(self.root)
        except OSError as exc:
            raise SessionRootError(self.root, str(exc)) from exc
        if not os.access(self.root, os.W_OK | os.X_OK):
            raise SessionRootError(self.root, "the directory is not writable")
        return self.root


class _Running:
    """The block a live session is used in: its writer runs in a nursery of its own, and
    whatever ends the block, ``aclose`` flushes (shielded), stops the writer and releases the
    file. The body's exception (or ``aclose``'s ``PersistenceError``, chained to it) comes out
    unchanged, not wrapped in an ``ExceptionGroup``: the nursery is left without an exception,
    and the writer never fails, so it has nothing of its own to report."""

    def __init__(self, session: Session) -> None:
        import trio
        self._session = session
        self._nursery: AbstractAsyncContextManager[trio.Nursery] = trio.open_nursery()

    async def __aenter__(self) -> Session:
        nursery = await self._nursery.__aenter__()
        try:
            await nursery.start(self._session._run_writer)
        except BaseException as exc:  # never entered: release the file, then re-raise
            await self._close(exc)
            raise
        return self._session

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._close(exc)

    async def _close(self, body: BaseException | None) -> None:
        closing: PersistenceError | None = None
        try:
            await self._session.aclose()
        except PersistenceError as exc:
            closing = exc
        await self._nursery.__aexit__(None, None, None)
        if closing is not None:
            closing.__context__ = body
            raise closing


# ------------------------------------------------------------------------------- helpers

_SYMLINK = "symbolic link (session files are never followed)"


def describe_repair(repair: Repair) -> str:
    """One line saying what a repair drops and appends."""
    parts = []
    if repair.truncate_to is not None:
        what = f"dropped {repair.dropped_bytes} bytes"
        if repair.dropped_records:
            what += f" ({repair.dropped_records} complete records)"
        what += f" from byte {repair.truncate_to}"
        if repair.defect is not None:
            what += f" ({repair.defect.reason} at line {repair.defect.line})"
        parts.append(what)
    if repair.closers:
        first, last = repair.closers[0].seq, repair.closers[-1].seq
        seqs = f"seq {first}" if first == last else f"seqs {first}-{last}"
        parts.append(f"closed interrupted turn {repair.open_turn} with {len(repair.closers)} events ({seqs})")
    return "; ".join(parts)


def _check_at(at: object, parent: str) -> None:
    if at is not None and not (is_safe_int(at) and at >= 0):
        raise ForkError(
            f'fork boundary for session "{parent}" must be a non-negative safe integer, got {at!r}',
            code="INVALID_BOUNDARY",
        )


class _TurnData(msgspec.Struct):
    turn: object = None


def _turn_of(event: Event) -> str:
    try:
        turn = msgspec.json.decode(event.data, type=_TurnData).turn
    except msgspec.DecodeError:
        turn = None
    return "?" if turn is None else msgspec.json.encode(turn).decode()


def _lock_store_file(id: str, path: Path, *, writable: bool) -> int:
    """Open session ``id``'s file (never through a symlink) and take its writer lock.

    Raises ``SessionNotFound`` (missing, or not a regular file), ``SessionBusy`` (lock held),
    ``CorruptLog`` (a symlink) or ``PersistenceError`` (any other I/O error)."""
    try:
        fd = fileio.open_existing(path, writable=writable)
    except (FileNotFoundError, IsADirectoryError):
        raise SessionNotFound(id) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CorruptLog(path, f"the session file is a {_SYMLINK}") from None
        raise PersistenceError(id, f"cannot open the session file: {exc}") from exc
    try:
        try:
            if not stat.S_ISREG(fileio.fstat(fd).st_mode):
                raise SessionNotFound(id)  # a directory or other name that is not a store file
            fileio.lock(fd)
        except BlockingIOError:
            raise SessionBusy(id) from None
        except OSError as exc:
            raise PersistenceError(id, f"cannot lock the session file: {exc}") from exc
    except BaseException:
        fileio.close(fd)
        raise
    return fd


def _open_locked(
    id: str, path: Path, identity: Callable[[Path, SessionHeader], None]
) -> tuple[int, LogSnapshot]:
    """Open ``path`` for writing, lock it, and read it through the locked descriptor; then,
    still under the lock, remove the session's leftover publish temp names (syncing the root
    if any went). The removal is best effort: at worst a leftover stays, or comes back after a
    crash, and it is harmless."""
    fd = _lock_store_file(id, path, writable=True)
    try:
        if fileio.fstat(fd).st_nlink == 0:
            raise SessionNotFound(id)  # deleted between our open and our lock
        try:
            snapshot = read_log_fd(fd, path, expected_id=id)
        except OSError as exc:
            raise PersistenceError(id, f"cannot read the session file: {exc}") from exc
        identity(path, snapshot.header)  # before any repair (dsh-roots §3)
        if remove_leftover_temps(path, own=fd):
            with contextlib.suppress(OSError):
                fileio.sync_dir(path.parent)
    except BaseException:
        fileio.close(fd)
        raise
    return fd, snapshot


def _unlink_session(id: str, path: Path) -> None:
    """Remove the name of session ``id``'s file under its lock (the root is not synced yet)."""
    fd = _lock_store_file(id, path, writable=False)
    try:
        own = fileio.fstat(fd)
        named = fileio.lstat(path)
        if (own.st_dev, own.st_ino) != (named.st_dev, named.st_ino):
            raise SessionBusy(id)  # replaced between our open and our lock
        fileio.unlink(path)
    except FileNotFoundError:
        raise SessionNotFound(id) from None
    except OSError as exc:
        raise PersistenceError(id, f"delete failed: {exc}") from exc
    finally:
        fileio.close(fd)


def _sync_root(id: str, root: Path) -> None:
    """Make a removed name durable: ``fsync`` the root (``PersistenceError`` on failure)."""
    try:
        fileio.sync_dir(root)
    except OSError as exc:
        raise PersistenceError(id, f"delete failed: {exc}") from exc


def _list_header(path: Path, id: str) -> tuple[SessionHeader | None, str | None]:
    """Line 1 of a store file (8 KiB reads until the first LF): its header, or the problem.
    Raises ``SessionNotFound`` for a file removed since the root was listed."""
    try:
        return read_header(path, expected_id=id, max_bytes=HEADER_LIMIT), None
    except CorruptLog as exc:
        return None, exc.detail
    except UnsupportedFormat as exc:
        return None, str(exc)
    except OSError as exc:
        return None, f"unreadable: {exc.strerror}"


def _fork_file(
    path: Path, expected_id: str | None, at: int | None, child_id: str, child_path: Path, now: int
) -> SessionHeader:
    """Fork a cold parent file: read-only, streamed (memory bounded by the largest record).
    A missing parent is the readers' ``SessionNotFound``."""
    parent = read_header(path, expected_id=expected_id)
    _check_at(at, parent.id)
    if at is None:
        # The boundary is the last event; the header's seedLength needs it before the child's
        # first byte, so count first (streaming, like the copy below).
        boundary = sum(1 for _ in iter_events(path)) - 1
    else:
        boundary = at
    return _write_child(parent, iter_events(path), boundary, child_id, child_path, now)


def _write_child(
    parent: SessionHeader,
    events: Iterable[Event],
    boundary: int,
    child_id: str,
    child_path: Path,
    now: int,
) -> SessionHeader:
    """Stream the parent's events into the child's temp file, check the boundary (log-format §8.3
    steps 4–5, over every eligible event), add the marker and publish (log-format §6.3)."""
    header = SessionHeader(
        id=child_id,
        created_at=now,
        cwd=parent.cwd,
        parent_session=parent.id,
        seed_length=boundary + 1,
    )
    child = _ChildFile(child_id, child_path, header.to_json() + b"\n")
    try:
        count = 0
        marker: Event | None = None  # last turn/start or turn/end at or before the boundary
        last: Event | None = None  # the event at the boundary
        for event in events:
            count += 1
            if event.seq <= boundary:
                child.add(event.to_json())
                last = event
                if event.type == "turn/start" or event.type == "turn/end":
                    marker = event
        if boundary >= count:
            last_seq = "none" if count == 0 else str(count - 1)
            raise ForkError(
                f'fork boundary {boundary} does not exist in session "{parent.id}" (last seq: {last_seq})',
                code="INVALID_BOUNDARY",
            )
        if marker is not None and marker.type == "turn/start":
            raise ForkError(
                f'fork boundary {boundary} in session "{parent.id}" ends inside open turn {_turn_of(marker)}',
                code="OPEN_TURN",
            )
        if last is None or last.type != "session/end-seed":
            child.add(build_event("session/end-seed", boundary + 1, now, {}).to_json())
        child.publish()
    except BaseException:
        child.discard()
        raise
    return header


class _ChildFile:
    """A fork child being written: a temp file filled in ~1 MiB pieces, then published. A
    Zstandard child (``session.jsonl.zstd``) is frame 0 (the header), then one frame of all its
    records: it is published with one durable write, one batch (dsh-roots §4)."""

    def __init__(self, id: str, path: Path, header_line: bytes) -> None:
        self._path = path
        self._tmp = temp_path(path)
        self._id = id
        self._fd: int | None = None
        self._linked = False
        self._size = 0
        self._frame = FrameWriter() if path.name == LOG_NAMES["zstd"] else None
        self._pending = [encode_frame(header_line)] if self._frame is not None else [header_line]
        self._pending_bytes = len(header_line)

    def add(self, record: bytes) -> None:
        self._pending.append(record + b"\n")
        self._pending_bytes += len(record) + 1
        if self._pending_bytes >= _CHILD_CHUNK:
            self._spill()

    def _spill(self, last: bool = False) -> None:
        if self._frame is not None:
            # Frame 0 is already compressed; the records go through the one batch frame.
            head = self._pending[0] if self._fd is None else b""
            records = b"".join(self._pending[1:] if self._fd is None else self._pending)
            data = head + self._frame.write(records) + (self._frame.finish() if last else b"")
        else:
            data = b"".join(self._pending)
        self._pending.clear()
        self._pending_bytes = 0
        op = "write"
        try:
            if self._fd is None:
                op = f'creating the session root "{self._path.parent}"'
                fileio.make_dirs(self._path.parent)
                op = "creating the temp file"
                self._fd = fileio.open_new(self._tmp)
                op = "write"
            fileio.pwrite(self._fd, data, self._size)
        except OSError as exc:
            raise PersistenceError(self._id, f"{op} failed: {exc}") from exc
        self._size += len(data)

    def publish(self) -> None:
        """Sync, link under the final name (``SessionExists`` if taken), sync the root."""
        self._spill(last=True)
        assert self._fd is not None
        op = "sync"
        try:
            fileio.sync(self._fd)
            op = "link"
            fileio.link(self._tmp, self._path)
            self._linked = True
            op = "directory sync"
            fileio.sync_dir(self._path.parent)
        except FileExistsError:
            raise SessionExists(self._id) from None
        except OSError as exc:
            if op == "link" and exc.errno in fileio.NO_HARD_LINKS:
                raise PersistenceError(self._id, fileio.no_hard_links(self._path.parent, exc)) from exc
            raise PersistenceError(self._id, f"{op} failed: {exc}") from exc
        self._linked = False  # published: discard() must keep the final name now
        self.discard()

    def discard(self) -> None:
        """Remove the temp name (and the final name if publishing failed after the link)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                fileio.close(fd)
            except OSError:
                pass
        names = [self._tmp, self._path] if self._linked else [self._tmp]
        self._linked = False
        for name in names:
            try:
                fileio.unlink(name)
            except OSError:
                pass
