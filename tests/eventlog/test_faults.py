"""Fault injection through the ``fileio`` seam (log-format §6.2–6.4, log-format §7.4, E14): every
failure gives a typed ``PersistenceError``, leaves a loadable file, and a retry succeeds without
duplicating or reordering events. The tests of a batch write, a publish, open's repair and a fork
also run on a dsh root in Zstandard (dsh-roots §4, §7), where each write is one frame."""

from __future__ import annotations

import errno
import logging
import os
import threading
from pathlib import Path

import pytest
import trio
import trio.testing

from eventlog import PersistenceError, Session, SessionNotFound, SessionStore, dsh_log_path, fileio, read_log
from eventlog._zstd import encode_frame, read_text
from tests.eventlog.live_support import E1_BYTES, SetClock, TrioWallClock, place, replay
from tests.eventlog.spec_examples import E1_LINES, E4_CLOSERS, E5_CLOSERS, E5_LINES, log_bytes

ERRNOS = [errno.ENOSPC, errno.EIO]
E3_LINE4 = b'{"type":"user/message","seq":2,"time":1767261600102,"data":{"id":"msg-1"'


class Layout:
    """How a test's logs are laid out: ``flat`` (``<root>/<id>.jsonl``), or ``dsh-zstd`` (a dsh
    root in Zstandard: frame 0 the header, one frame per batch)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.zstd = name == "dsh-zstd"

    def store(self, root: Path, clock: SetClock) -> SessionStore:
        if self.zstd:
            return SessionStore(root, layout="dsh", compression="zstd", clock=clock, write_delay_ms=0)
        return SessionStore(root, layout="flat", clock=clock, write_delay_ms=0)

    def path(self, root: Path, id: str, cwd: str | None = "/home/ana") -> Path:
        return dsh_log_path(root, cwd, id, "zstd") if self.zstd else root / f"{id}.jsonl"

    def log(self, lines: list[bytes], torn: bytes = b"") -> bytes:
        """A log of the header and record ``lines`` (one batch), then ``torn``: the start of a
        record for a raw log, a frame of it whose write was cut short for a Zstandard one."""
        if not self.zstd:
            return log_bytes(lines) + torn
        head = encode_frame(log_bytes(lines[:1])) + encode_frame(log_bytes(lines[1:]))
        return head + (encode_frame(torn)[:-1] if torn else b"")

    def place(self, root: Path, id: str, data: bytes) -> Path:
        """Put ``data`` (a raw log, re-encoded as ``log`` does) where session ``id`` goes."""
        lines = data.splitlines()
        path = self.path(root, id)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        return place(path.parent, path.name, self.log(lines) if self.zstd else data)

    def text(self, path: Path) -> bytes:
        """The log's plaintext (a Zstandard log's complete frames)."""
        return read_text(path.read_bytes()).committed if self.zstd else path.read_bytes()

    def files(self, root: Path) -> list[str]:
        """Every file below the root (directories left out), as paths relative to it."""
        return sorted(str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir())


LAYOUTS = ["flat", "dsh-zstd"]


@pytest.fixture
def layout(request: pytest.FixtureRequest) -> Layout:
    # Tests that list both layouts parametrize this fixture; the others run flat.
    return Layout(getattr(request, "param", "flat"))


@pytest.fixture
def clock() -> SetClock:
    return SetClock()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "sessions"


@pytest.fixture
def store(root: Path, clock: SetClock, layout: Layout) -> SessionStore:
    return layout.store(root, clock)


both_layouts = pytest.mark.parametrize("layout", LAYOUTS, indirect=True)


def temp_files(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.endswith(".tmp"))


def check_error(exc: PersistenceError, id: str, err: int) -> None:
    assert str(exc).startswith(f'failed to persist session "{id}": ')
    assert isinstance(exc.__cause__, OSError) and exc.__cause__.errno == err
    assert not exc.permanent


@both_layouts
async def test_failed_sync_e14(store: SessionStore, root: Path, clock: SetClock, layout: Layout) -> None:
    path = layout.place(root, "demo-1", E1_BYTES)
    size = path.stat().st_size
    flushed: list[int] = []
    async with store.open("demo-1") as session:
        session.on_flushed(lambda s, through: flushed.append(through))
        replay(session, clock, E5_LINES[:2])  # seqs 6 and 7
        with fileio.fail("sync", errno.EIO) as fault, pytest.raises(PersistenceError) as info:
            await session.flush()
        assert fault.failures == 1
        check_error(info.value, "demo-1", errno.EIO)
        assert path.stat().st_size == size
        assert session.durable_through == 5 and flushed == []
        assert await session.flush() == 7
        assert flushed == [7]
    assert layout.text(path) == E1_BYTES + log_bytes(E5_LINES[:2])


@both_layouts
@pytest.mark.parametrize("err", ERRNOS)
@pytest.mark.parametrize("op", ["pwrite", "sync"])
async def test_failed_batch_rolls_back_and_retries(
    store: SessionStore, root: Path, clock: SetClock, op: str, err: int, layout: Layout
) -> None:
    path = layout.place(root, "demo-1", E1_BYTES)
    placed = path.read_bytes()
    async with store.open("demo-1") as session:
        replay(session, clock, E5_LINES[:3])
        with fileio.fail(op, err), pytest.raises(PersistenceError) as info:
            await session.flush()
        check_error(info.value, "demo-1", err)
        assert path.read_bytes() == placed  # loadable, back at its size before the batch
        replay(session, clock, E5_LINES[3:])  # newer events queue behind the failed batch
        assert await session.flush() == 10
    assert layout.text(path) == E1_BYTES + log_bytes(E5_LINES)


@both_layouts
@pytest.mark.parametrize("err", ERRNOS)
async def test_failed_truncate(store: SessionStore, root: Path, clock: SetClock, err: int, layout: Layout) -> None:
    path = layout.place(root, "demo-1", E1_BYTES)
    size = path.stat().st_size
    async with store.open("demo-1") as session:
        replay(session, clock, E5_LINES[:2])
        # The write fails, and so does every truncate back: the file keeps the failed batch's
        # bytes beyond good_size for now.
        with fileio.fail("sync", err), fileio.fail("truncate", err, times=2) as truncate:
            with pytest.raises(PersistenceError):
                await session.flush()
            assert path.stat().st_size > size
            read_log(path)  # still loadable
            # the next batch must cut the file back first; that fails too
            with pytest.raises(PersistenceError) as info:
                await session.flush()
            assert "truncate failed" in str(info.value)
            assert truncate.failures == 2
        check_error(info.value, "demo-1", err)
        replay(session, clock, E5_LINES[2:3])
        assert await session.flush() == 8
    assert layout.text(path) == E1_BYTES + log_bytes(E5_LINES[:3])


@both_layouts
@pytest.mark.parametrize("err", ERRNOS)
@pytest.mark.parametrize("op", ["pwrite", "sync", "link"])
async def test_failed_publish_leaves_nothing_and_retries(
    store: SessionStore, root: Path, clock: SetClock, op: str, err: int, layout: Layout
) -> None:
    root.mkdir()
    async with store.create(id="demo-1", cwd="/home/ana") as session:
        replay(session, clock, E1_LINES[1:4])
        with fileio.fail(op, err), pytest.raises(PersistenceError) as info:
            await session.flush()
        check_error(info.value, "demo-1", err)
        assert layout.files(root) == []  # no final name, no temp file
        assert session.durable_through == -1
        replay(session, clock, E1_LINES[4:])
        assert await session.flush() == 5
    path = layout.path(root, "demo-1")
    assert layout.text(path) == E1_BYTES
    assert layout.files(root) == [str(path.relative_to(root))]


@both_layouts
@pytest.mark.parametrize("err", ERRNOS)
@pytest.mark.parametrize("more_events", [False, True])
async def test_failed_directory_sync_after_link_repeats_only_the_directory_sync(
    store: SessionStore, root: Path, clock: SetClock, err: int, more_events: bool, layout: Layout
) -> None:
    layout.path(root, "demo-1").parent.mkdir(parents=True)  # the publish's only directory sync is the link's
    async with store.create(id="demo-1", cwd="/home/ana") as session:
        replay(session, clock, E1_LINES[1:4])
        with fileio.fail("sync_dir", err), pytest.raises(PersistenceError) as info:
            await session.flush()
        check_error(info.value, "demo-1", err)
        assert session.durable_through == -1  # linked, but not durable before the directory sync
        if more_events:
            replay(session, clock, E1_LINES[4:])
        with fileio.spy("pwrite") as pwrite, fileio.spy("sync_dir") as sync_dir:
            assert await session.flush() == session.next_seq - 1
        assert sync_dir.calls == 1
        assert pwrite.calls == (1 if more_events else 0)  # the published bytes are not rewritten
        replay(session, clock, E1_LINES[4:] if not more_events else [])
    path = layout.path(root, "demo-1")
    assert layout.text(path) == E1_BYTES
    assert layout.files(root) == [str(path.relative_to(root))]


async def test_flush_returns_once_its_events_are_durable_though_the_rest_of_the_batch_fails(
    store: SessionStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # log-format §6.5 step 2: a flush returns as soon as durable_through >= its target. After a failed
    # directory sync, the next batch first completes the publish (seqs 0-2 durable), then
    # writes seq 3; a failure of that write must not reach a flusher whose target was 2.
    root.mkdir()
    entered, gate = threading.Event(), threading.Event()
    real = fileio.sync_dir
    calls = 0

    def sync_dir(path: Path) -> None:
        nonlocal calls
        calls += 1
        if calls <= 2:
            if calls == 2:  # the retry that flusher "a" waits for: held, then failed
                entered.set()
                gate.wait(30)
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real(path)

    monkeypatch.setattr(fileio, "sync_dir", sync_dir)
    results: dict[str, int | PersistenceError] = {}
    flushed: list[int] = []
    async with store.create(id="p") as session:
        session.on_flushed(lambda s, through: flushed.append(through))
        for n in range(3):
            session.append("note/x", {"n": n})
        with pytest.raises(PersistenceError):
            await session.flush()  # linked under its name, directory not synced

        async def flush(name: str) -> None:
            try:
                results[name] = await session.flush()
            except PersistenceError as exc:
                results[name] = exc

        with fileio.fail("pwrite", errno.EIO) as pwrite:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(flush, "a")
                await trio.to_thread.run_sync(entered.wait)  # the retry of 0-2 is in flight
                nursery.start_soon(flush, "b")  # target 2: waits for that write, then its own
                await trio.testing.wait_all_tasks_blocked()
                session.append("note/x", {"n": 3})  # joins b's batch
                gate.set()
        assert pwrite.failures == 1  # b's batch: publish completed, then seq 3's write failed
        assert isinstance(results["a"], PersistenceError)
        assert results["b"] == 2 and flushed == [2]
        assert await session.flush() == 3
    assert [e.value() for e in read_log(root / "p.jsonl").events] == [{"n": n} for n in range(4)]


@pytest.mark.parametrize(
    ("layout", "skip"), [("flat", 0), ("dsh-zstd", 0), ("dsh-zstd", 1), ("dsh-zstd", 2)], indirect=["layout"]
)
async def test_failed_root_creation(store: SessionStore, root: Path, clock: SetClock, layout: Layout, skip: int) -> None:
    async with store.create(id="r") as session:
        session.append("note/x", {})
        # the sync of a new directory's parent after mkdir fails: the root's; in a dsh root
        # also the root itself (for the project directory) or the project directory (for the
        # session directory)
        with fileio.fail("sync_dir", errno.EIO, skip=skip), pytest.raises(PersistenceError, match="session root"):
            await session.flush()
        assert await session.flush() == 0
    assert [e.type for e in read_log(layout.path(root, "r", cwd=None)).events] == ["note/x"]


class SyncedDirs:
    """A ``fileio.sync_dir`` that records the directories it syncs."""

    def __init__(self) -> None:
        self.real = fileio.sync_dir
        self.paths: list[Path] = []

    def __call__(self, path: Path) -> None:
        self.paths.append(path)
        self.real(path)


@pytest.mark.parametrize("skip", [0, 1])  # fail the sync of tmp_path, or of tmp_path/"a"
async def test_a_retried_root_creation_syncs_every_new_directory_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, skip: int
) -> None:
    # log-format §4.1: each missing directory's parent is synced. A directory whose entry failed to
    # sync must not look finished to the retry, or its entry would never be made durable.
    root = tmp_path / "a" / "sessions"
    synced = SyncedDirs()
    monkeypatch.setattr(fileio, "sync_dir", synced)
    async with SessionStore(root, clock=SetClock(), write_delay_ms=0).create(id="r") as session:
        session.append("note/x", {})
        with fileio.fail("sync_dir", errno.EIO, skip=skip), pytest.raises(PersistenceError, match="session root"):
            await session.flush()
        synced.paths.clear()
        assert await session.flush() == 0
    assert synced.paths[:-1] == [tmp_path, tmp_path / "a"][skip:]  # then the root, for the link
    ensure = SessionStore(tmp_path / "b" / "sessions")
    with fileio.fail("sync_dir", errno.EIO, skip=skip), pytest.raises(PersistenceError):
        await ensure.ensure_root()
    synced.paths.clear()
    await ensure.ensure_root()
    assert synced.paths == [tmp_path, tmp_path / "b"][skip:]


async def test_file_system_without_hard_links(store: SessionStore, root: Path) -> None:
    async with store.create(id="nolink") as session:
        session.append("note/x", {})
        with fileio.fail("link", errno.EPERM), pytest.raises(PersistenceError, match="hard links") as info:
            await session.flush()
        assert not info.value.permanent
        assert await session.flush() == 0


async def test_fork_on_a_file_system_without_hard_links(store: SessionStore, root: Path) -> None:
    # log-format §6.3 step 4 covers a fork child's publish too: the error says why, and nothing is left.
    place(root, "demo-1.jsonl", E1_BYTES)
    with fileio.fail("link", errno.EPERM), pytest.raises(PersistenceError, match="hard links") as info:
        await store.fork("demo-1", at=5, id="child")
    check_error(info.value, "child", errno.EPERM)
    assert sorted(os.listdir(root)) == ["demo-1.jsonl"]


async def test_publish_lost_to_another_process_is_permanent(
    store: SessionStore, root: Path
) -> None:
    other = b'{"type":"session","version":0,"id":"x","createdAt":1,"delegationDepth":0}\n'
    with pytest.raises(PersistenceError) as closing:
        async with store.create(id="x") as session:
            place(root, "x.jsonl", other)  # someone else took the id after create
            session.append("note/x", {})
            with pytest.raises(PersistenceError, match="another process") as info:
                await session.flush()
            assert info.value.permanent
            with pytest.raises(PersistenceError) as again:
                session.append("note/y", {})
            assert again.value is info.value
            with pytest.raises(PersistenceError) as again:
                await session.flush()
            assert again.value is info.value
    assert closing.value.permanent  # aclose: the unflushed event is lost with the handle
    assert (root / "x.jsonl").read_bytes() == other
    assert temp_files(root) == []


@pytest.mark.parametrize("how", ["removed", "replaced"])
async def test_file_removed_or_replaced_behind_the_writer(
    store: SessionStore, root: Path, how: str
) -> None:
    path = place(root, "demo-1.jsonl", E1_BYTES)
    with pytest.raises(PersistenceError):
        async with store.open("demo-1") as session:
            if how == "removed":
                path.unlink()
            else:
                place(root, "new.jsonl", E1_BYTES).rename(path)
            session.append("turn/start", {"turn": 2})
            with pytest.raises(PersistenceError, match="removed") as info:
                await session.flush()
            assert info.value.permanent
    if how == "replaced":
        assert path.read_bytes() == E1_BYTES  # the newcomer is not written to
    async with store.open("demo-1") if how == "replaced" else store.create(id="demo-1"):
        pass  # everything was released


class SignallingFault:
    """A ``fileio.pwrite`` whose first ``times`` calls fail with ENOSPC and tell the test so
    (the call happens in the writer's worker thread)."""

    def __init__(self, times: int) -> None:
        self.real = fileio.pwrite
        self.times = times
        self.calls = 0
        self.failed = [trio.Event() for _ in range(times)]

    def __call__(self, fd: int, data: bytes, offset: int) -> None:
        self.calls += 1
        if self.calls <= self.times:
            trio.from_thread.run_sync(self.failed[self.calls - 1].set)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.real(fd, data, offset)


async def test_background_failure_is_logged_once_and_retries_pause(
    root: Path,
    autojump_clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = SessionStore(root, clock=TrioWallClock(), write_delay_ms=5)
    fault = SignallingFault(times=2)
    monkeypatch.setattr(fileio, "pwrite", fault)
    flushed: list[int] = []
    done = trio.Event()
    with caplog.at_level(logging.WARNING, logger="eventlog"):
        async with store.create(id="bg") as session:

            def on_flushed(s: Session, through: int) -> None:
                flushed.append(through)
                done.set()

            session.on_flushed(on_flushed)
            session.append("note/x", {"n": 0})
            await fault.failed[0].wait()  # the window's background write failed
            await trio.sleep(3600)
            assert fault.calls == 1  # ... and automatic retries paused
            session.append("note/x", {"n": 1})  # a new event resumes them: fails again
            await fault.failed[1].wait()
            await trio.sleep(3600)
            assert fault.calls == 2
            session.append("note/x", {"n": 2})
            await done.wait()
            assert flushed == [2]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        (
            'background write for session "bg" failed (buffered events retained): '
            "write failed: [Errno 28] No space left on device"
        )
    ]
    assert [e.value() for e in read_log(root / "bg.jsonl").events] == [{"n": n} for n in range(3)]


async def test_event_appended_during_a_failing_background_write_is_still_written(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SessionStore(root, clock=SetClock(), write_delay_ms=1)
    entered, gate = threading.Event(), threading.Event()
    real = fileio.pwrite
    calls = 0

    def pwrite(fd: int, data: bytes, offset: int) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            entered.set()
            gate.wait(30)
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real(fd, data, offset)

    monkeypatch.setattr(fileio, "pwrite", pwrite)
    done = trio.Event()
    async with store.create(id="d") as session:
        session.on_flushed(lambda s, through: done.set() if through == 1 else None)
        session.append("note/x", {"n": 0})  # its window's background write will fail
        await trio.to_thread.run_sync(entered.wait)
        session.append("note/x", {"n": 1})  # a new event: retries must not stay paused
        gate.set()
        with trio.fail_after(30):
            await done.wait()
    assert [e.value() for e in read_log(root / "d.jsonl").events] == [{"n": 0}, {"n": 1}]


@both_layouts
async def test_io_error_during_open_releases_the_lock(store: SessionStore, root: Path, layout: Layout) -> None:
    path = layout.place(root, "demo-1", E1_BYTES)
    placed = path.read_bytes()
    with fileio.fail("sync", errno.EIO), pytest.raises(PersistenceError):
        async with store.open("demo-1"):
            pass
    async with store.open("demo-1") as session:
        assert session.next_seq == 6
    assert path.read_bytes() == placed


@both_layouts
@pytest.mark.parametrize("op", ["pwrite", "sync"])
async def test_failed_closers_are_computed_again(store: SessionStore, root: Path, op: str, layout: Layout) -> None:
    path = layout.place(root, "demo-1", E1_BYTES + log_bytes(E5_LINES))
    placed = path.read_bytes()
    with fileio.fail(op, errno.EIO, skip=1 if op == "sync" else 0), pytest.raises(PersistenceError):
        async with store.open("demo-1"):
            pass
    assert path.read_bytes() == placed
    async with store.open("demo-1") as session:
        assert session.next_seq == 15
    assert path.read_bytes().startswith(placed)
    assert layout.text(path) == E1_BYTES + log_bytes(E5_LINES) + log_bytes(E5_CLOSERS)


@both_layouts
async def test_crash_between_truncation_and_closers_is_harmless(
    store: SessionStore, root: Path, layout: Layout
) -> None:
    # E4: a defect with no later turn/end: truncate to 256, then two closers. The closers'
    # write fails after the truncation was synced, as if the process died there. In Zstandard
    # the defect and what follows it are in a torn final frame (dsh-roots §4 repair, steps 1-2).
    committed = layout.log(E1_LINES[:3])
    path = layout.place(root, "demo-1", b"")
    path.write_bytes(layout.log(E1_LINES[:3], torn=log_bytes([E3_LINE4] + E1_LINES[4:6])))
    with fileio.fail("pwrite", errno.EIO), pytest.raises(PersistenceError):
        async with store.open("demo-1"):
            pass
    assert path.read_bytes() == committed  # truncated, no closers yet
    async with store.open("demo-1") as session:
        assert session.recovered is not None and session.recovered.truncate_to is None
        assert [e.to_json() for e in session.recovered.closers] == E4_CLOSERS
    assert path.read_bytes().startswith(committed)
    assert layout.text(path) == log_bytes(E1_LINES[:3] + E4_CLOSERS)


@both_layouts
@pytest.mark.parametrize("err", ERRNOS)
@pytest.mark.parametrize(
    ("op", "step"),
    [
        ("open_new", "creating the temp file"),
        ("pwrite", "write"),
        ("sync", "sync"),
        ("link", "link"),
        ("sync_dir", "directory sync"),
    ],
)
async def test_failed_fork_leaves_nothing_and_retries(
    store: SessionStore, root: Path, op: str, step: str, err: int, layout: Layout
) -> None:
    parent = layout.place(root, "demo-1", E1_BYTES)
    placed = parent.read_bytes()
    child = layout.path(root, "child")
    # In a dsh root the child's new session directory is made first, its parent synced.
    skip = 1 if layout.zstd and op == "sync_dir" else 0
    with fileio.fail(op, err, skip=skip), pytest.raises(PersistenceError, match=f'"child": {step} failed: ') as info:
        await store.fork("demo-1", at=5, id="child")
    check_error(info.value, "child", err)
    assert layout.files(root) == [str(parent.relative_to(root))]
    header = await store.fork("demo-1", at=5, id="child")
    assert header.seed_length == 6
    assert len(read_log(child).events) == 7
    assert parent.read_bytes() == placed


async def test_a_delete_whose_root_sync_failed_can_be_retried(store: SessionStore, root: Path) -> None:
    # The unlink succeeded and the root's sync failed: the deletion is not durable yet. A retry
    # syncs the root and returns (it said SessionNotFound); only then is the session gone.
    async with store.create(id="doomed") as session:
        session.append("note/x", {})
        assert await session.flush() == 0
    with fileio.fail("sync_dir", errno.EIO) as fault, pytest.raises(PersistenceError, match="delete failed"):
        await store.delete("doomed")
    assert fault.failures == 1 and not (root / "doomed.jsonl").exists()
    with fileio.spy("sync_dir") as synced, fileio.spy("unlink") as unlinked:
        await store.delete("doomed")
    assert (synced.calls, unlinked.calls) == (1, 0)
    with pytest.raises(SessionNotFound, match='^session "doomed" not found$'):
        await store.delete("doomed")  # done: a third call finds nothing


async def test_a_retried_delete_of_a_session_created_again_deletes_the_new_file(
    store: SessionStore, root: Path
) -> None:
    async with store.create(id="again") as session:
        session.append("note/x", {})
    with fileio.fail("sync_dir", errno.EIO), pytest.raises(PersistenceError):
        await store.delete("again")
    async with store.create(id="again") as session:
        session.append("note/y", {})
    await store.delete("again")
    assert not (root / "again.jsonl").exists()
    with pytest.raises(SessionNotFound):
        await store.delete("again")
