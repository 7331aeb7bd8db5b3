"""SessionStore through its public API on real files (log-format §4, log-format §5.3,
log-format §7.4, log-format §12)."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import trio

import eventlog
from eventlog import (
    CorruptLog,
    InvalidSessionId,
    PersistenceError,
    SessionBusy,
    SessionExists,
    SessionNotFound,
    SessionStore,
    fileio,
)
from tests.eventlog.live_support import E1_BYTES, E1_CREATED_AT, SetClock, place, replay
from tests.eventlog.spec_examples import E1_LINES, E4_CLOSERS, E5_CLOSERS, E5_LINES, log_bytes

E3_LINE4 = b'{"type":"user/message","seq":2,"time":1767261600102,"data":{"id":"msg-1"'


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def clock() -> SetClock:
    return SetClock()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "home" / "sessions"


@pytest.fixture
def store(root: Path, clock: SetClock) -> SessionStore:
    return SessionStore(root, clock=clock)


async def test_e1_round_trip_bytes_modes_and_reopen(
    store: SessionStore, root: Path, clock: SetClock
) -> None:
    old_umask = os.umask(0)  # the modes come from the store, not from a friendly umask
    try:
        async with store.create(id="demo-1", cwd="/home/ana") as session:
            replay(session, clock, E1_LINES[1:])
            assert await session.flush() == 5
            assert session.durable_through == 5
    finally:
        os.umask(old_umask)
    path = root / "demo-1.jsonl"
    assert path.read_bytes() == E1_BYTES
    assert len(E1_BYTES) == 887
    assert mode(path) == 0o600
    assert mode(root) == 0o700 and mode(root.parent) == 0o700
    assert sorted(os.listdir(root)) == ["demo-1.jsonl"]  # the temp name is gone

    async with store.open("demo-1") as session:
        assert session.id == "demo-1"
        assert session.path == path
        assert session.header.created_at == E1_CREATED_AT and session.header.cwd == "/home/ana"
        assert [event.to_json() for event in session.events] == E1_LINES[1:]
        assert session.next_seq == 6 and session.durable_through == 5
        assert session.recovered is None and session.seed_length == 0
        clock.now = 1767265200000
        assert session.append("turn/start", {"turn": 2}).seq == 6
    assert path.read_bytes() == E1_BYTES + E5_LINES[0] + b"\n"


async def test_create_defaults_and_writes_nothing_until_the_first_batch(
    store: SessionStore, root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    async with store.create(cwd="work") as session:
        assert session.header.cwd == str(tmp_path / "work")  # made absolute, not resolved
        assert session.header.created_at == E1_CREATED_AT
        assert session.header.parent_session is None and session.header.seed_length is None
        assert await session.flush() == -1
        assert str(session.id) and not root.exists()
        assert await store.list() == []
    assert not root.exists()  # a session closed without events leaves no trace
    assert eventlog.format.check_session_id(session.id) == session.id


async def test_create_refuses_an_existing_or_open_id(store: SessionStore, root: Path) -> None:
    place(root, "taken.jsonl", E1_BYTES.replace(b'"demo-1"', b'"taken"', 1))
    with pytest.raises(SessionExists, match='^session "taken" already exists$'):
        async with store.create(id="taken"):
            pass
    async with store.create(id="fresh"):
        with pytest.raises(SessionExists, match='session "fresh" already exists'):
            async with store.create(id="fresh"):
                pass


async def test_open_missing_and_busy(store: SessionStore, root: Path, clock: SetClock) -> None:
    with pytest.raises(SessionNotFound, match='^session "nope" not found$'):
        async with store.open("nope"):
            pass
    place(root, "demo-1.jsonl", E1_BYTES)
    async with store.open("demo-1"):
        with pytest.raises(SessionBusy, match='^session "demo-1" is already open for writing$'):
            async with store.open("demo-1"):
                pass
        # a second store in the same process meets the flock
        with pytest.raises(SessionBusy):
            async with SessionStore(root).open("demo-1"):
                pass
    async with store.open("demo-1") as session:  # released on close
        assert session.next_seq == 6


BAD_IDS = ["", "..", ".", "../x", "a/b", "/etc/passwd", "a\x00b", ".hidden", "-x", "x\n", "é", "a" * 129, 7]


@pytest.mark.parametrize("bad", BAD_IDS)
async def test_invalid_ids_are_refused_before_any_file_system_access(
    store: SessionStore, bad: object
) -> None:
    def no_fs(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"file system touched for id {bad!r}")

    with pytest.MonkeyPatch.context() as patch:
        for name in ("open", "stat", "lstat", "scandir", "mkdir", "link", "unlink"):
            patch.setattr(os, name, no_fs)
        with pytest.raises(InvalidSessionId, match="invalid session id"):
            store.path(bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidSessionId):
            store.create(id=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidSessionId):
            store.open(bad)  # type: ignore[arg-type]
        # The async methods refuse before their first checkpoint, so nothing else runs.
        with pytest.raises(InvalidSessionId):
            await store.fork("demo-1", id=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidSessionId):
            await store.delete(bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidSessionId):
            await store.inspect(bad)  # type: ignore[arg-type]
        if isinstance(bad, str) and bad:
            with pytest.raises(InvalidSessionId):
                await store.fork(bad, id="child")


async def test_open_repairs_a_torn_tail_e2(
    store: SessionStore, root: Path, clock: SetClock, caplog: pytest.LogCaptureFixture
) -> None:
    torn = b'{"type":"turn/start","seq":6,"ti'
    assert len(torn) == 32
    path = place(root, "demo-1.jsonl", E1_BYTES + torn)
    with caplog.at_level(logging.WARNING, logger="eventlog"):
        async with store.open("demo-1") as session:
            assert path.stat().st_size == 887
            repair = session.recovered
            assert repair is not None
            assert (repair.truncate_to, repair.dropped_bytes, repair.dropped_records) == (887, 32, 0)
            assert repair.defect is not None and repair.defect.reason == "torn final record"
            assert (repair.defect.line, repair.defect.offset) == (8, 887)
            assert repair.closers == () and repair.open_turn is None
            assert session.durable_through == 5
            clock.now = 1767265200000
            assert session.append("turn/start", {"turn": 2}).seq == 6
    messages = [r.getMessage() for r in caplog.records if r.name == "eventlog"]
    assert len(messages) == 1
    assert messages[0].startswith('session "demo-1": repaired on open: ')
    assert path.read_bytes() == E1_BYTES + E5_LINES[0] + b"\n"


async def test_open_closes_an_interrupted_turn_once_e5(
    store: SessionStore, root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = place(root, "demo-1.jsonl", E1_BYTES + log_bytes(E5_LINES))
    with caplog.at_level(logging.WARNING, logger="eventlog"):
        async with store.open("demo-1") as session:
            assert [e.to_json() for e in session.events[11:]] == E5_CLOSERS
            assert session.next_seq == 15 and session.durable_through == 14
            assert session.recovered is not None and session.recovered.open_turn == 2
            assert session.recovered.truncate_to is None
            # durable before open returns
            assert path.read_bytes() == E1_BYTES + log_bytes(E5_LINES) + log_bytes(E5_CLOSERS)
    assert any(
        r.getMessage().startswith('session "demo-1": repaired on open: ') for r in caplog.records
    )
    before = path.read_bytes()
    caplog.clear()
    async with store.open("demo-1") as session:  # a balanced log: nothing to do
        assert session.recovered is None
    assert path.read_bytes() == before
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_open_truncates_then_closes_e4(store: SessionStore, root: Path) -> None:
    damaged = log_bytes(E1_LINES[:3] + [E3_LINE4] + E1_LINES[4:6])
    path = place(root, "demo-1.jsonl", damaged)
    async with store.open("demo-1") as session:
        repair = session.recovered
        assert repair is not None
        assert (repair.truncate_to, repair.dropped_bytes, repair.dropped_records) == (256, 411, 3)
        assert session.next_seq == 4
    assert path.read_bytes() == log_bytes(E1_LINES[:3] + E4_CLOSERS)


async def test_open_refuses_committed_corruption_e3_and_leaves_the_file(
    store: SessionStore, root: Path
) -> None:
    damaged = log_bytes(E1_LINES[:3] + [E3_LINE4] + E1_LINES[4:])
    path = place(root, "demo-1.jsonl", damaged)
    for _ in range(2):  # the lock was released: the second try meets the same corruption
        with pytest.raises(CorruptLog) as info:
            async with store.open("demo-1"):
                pass
        assert str(info.value).startswith(
            f'corrupt session log "{path}": unparsable committed event at line 4, byte 256: '
        )
    assert path.read_bytes() == damaged


async def test_open_checks_identity_before_repair(store: SessionStore, root: Path) -> None:
    path = place(root, "other.jsonl", E1_BYTES + b'{"type":"turn/st')
    with pytest.raises(CorruptLog) as info:
        async with store.open("other"):
            pass
    assert str(info.value) == (
        f'corrupt session log "{path}": requested id "other" does not match header id "demo-1"'
    )
    assert path.read_bytes() == E1_BYTES + b'{"type":"turn/st'


def header(id: str, created_at: int) -> bytes:
    return (
        f'{{"type":"session","version":0,"id":"{id}","createdAt":{created_at},'
        f'"delegationDepth":0}}\n'
    ).encode()


async def test_list_reads_headers_sorts_and_reports_problems(
    store: SessionStore, root: Path
) -> None:
    assert await store.list() == []  # the root does not exist yet
    place(root, "b.jsonl", header("b", 20))
    place(root, "a.jsonl", header("a", 20) + b"garbage without LF")
    place(root, "c.jsonl", header("c", 10) + log_bytes(E1_LINES[1:]))
    place(root, "z-empty.jsonl", b"")
    place(root, "y-future.jsonl", b'{"type":"session","version":3,"id":"y-future"}\n')
    place(root, "x-mismatch.jsonl", header("other", 1))
    place(root, "c.jsonl.0123456789ab.tmp", header("c", 10))
    place(root, "notes.txt", b"hello\n")
    place(root, ".bad-id.jsonl", header(".bad-id", 1))
    (root / "dir.jsonl").mkdir()
    os.symlink(root / "b.jsonl", root / "link.jsonl")
    infos = await store.list()
    assert [info.id for info in infos] == [
        "c", "a", "b", "link", "x-mismatch", "y-future", "z-empty",
    ]
    by_id = {info.id: info for info in infos}
    assert by_id["c"].header is not None and by_id["c"].header.created_at == 10
    assert by_id["c"].size == (root / "c.jsonl").stat().st_size
    assert by_id["c"].path == root / "c.jsonl" and by_id["c"].problem is None
    for bad in ("link", "x-mismatch", "y-future", "z-empty"):
        assert by_id[bad].header is None and by_id[bad].problem
    assert "symbolic link" in by_id["link"].problem  # type: ignore[operator]
    assert by_id["z-empty"].problem == "empty or header-less session log"
    assert "v3" in by_id["y-future"].problem  # type: ignore[operator]
    assert by_id["x-mismatch"].problem == 'requested id "x-mismatch" does not match header id "other"'


async def test_list_reads_only_the_first_line(store: SessionStore, root: Path) -> None:
    # Everything after line 1 is garbage: list must not look at it.
    place(root, "s.jsonl", header("s", 5) + b"\xff\xfe not a log at all\n" * 1000)
    [info] = await store.list()
    assert info.problem is None and info.header is not None and info.header.id == "s"
    place(root, "huge.jsonl", b'{"type":"session","version":0,"id":"huge","pad":"' + b"x" * (1 << 20))
    infos = {info.id: info for info in await store.list()}
    assert infos["huge"].header is None and infos["huge"].problem


async def test_inspect_reports_without_writing(store: SessionStore, root: Path) -> None:
    path = place(root, "demo-1.jsonl", E1_BYTES + log_bytes(E5_LINES) + b'{"type"')
    before = path.read_bytes()
    mtime = path.stat().st_mtime_ns
    snapshot = await store.inspect("demo-1")
    assert len(snapshot.events) == 11 and snapshot.file_bytes == len(before)
    assert snapshot.repair is not None and snapshot.repair.open_turn == 2
    assert [e.to_json() for e in snapshot.repair.closers] == E5_CLOSERS
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime
    with pytest.raises(SessionNotFound, match='session "nope" not found'):
        await store.inspect("nope")


async def test_delete(store: SessionStore, root: Path, clock: SetClock) -> None:
    place(root, "demo-1.jsonl", E1_BYTES)
    await store.fork("demo-1", id="child")
    async with store.open("demo-1"):
        with pytest.raises(SessionBusy):
            await store.delete("demo-1")
    await store.delete("demo-1")
    assert not (root / "demo-1.jsonl").exists()
    assert (root / "child.jsonl").exists()  # forks are independent files
    with pytest.raises(SessionNotFound):
        await store.delete("demo-1")
    async with store.create(id="fresh") as session:
        session.append("note/x", {})
        await session.flush()
        with pytest.raises(SessionBusy):
            await store.delete("fresh")
    assert [info.id for info in await store.list()] == ["fresh", "child"] or [
        info.id for info in await store.list()
    ] == ["child", "fresh"]


async def test_open_syncs_a_clean_log_once_and_delete_locks_then_syncs_the_root(
    store: SessionStore, root: Path
) -> None:
    # log-format §5.3: open syncs the file once (a crashed writer may have left unsynced bytes) and
    # writes nothing; delete takes the lock, unlinks, then syncs the root.
    path = place(root, "demo-1.jsonl", E1_BYTES)
    with fileio.spy("sync") as sync, fileio.spy("pwrite") as pwrite, fileio.spy("truncate") as truncate:
        async with store.open("demo-1") as session:
            assert session.durable_through == 5
    assert (sync.calls, pwrite.calls, truncate.calls) == (1, 0, 0)
    assert path.read_bytes() == E1_BYTES
    with fileio.spy("lock") as lock, fileio.spy("sync_dir") as sync_dir:
        await store.delete("demo-1")
    assert lock.calls == 1 and sync_dir.calls == 1
    assert not path.exists()


async def test_open_and_delete_ignore_a_directory_named_like_a_session(
    store: SessionStore, root: Path
) -> None:
    # log-format §4.1: only regular files named <id>.jsonl belong to the store.
    (root / "dir.jsonl").mkdir(parents=True)
    with pytest.raises(SessionNotFound, match='session "dir" not found'):
        async with store.open("dir"):
            pass
    with pytest.raises(SessionNotFound, match='session "dir" not found'):
        await store.delete("dir")
    assert (root / "dir.jsonl").is_dir()


async def test_open_and_delete_do_not_wait_on_a_fifo_named_like_a_session(
    store: SessionStore, root: Path
) -> None:
    # log-format §4.1: only regular files belong to the store. Opening a FIFO for reading blocks until a
    # writer appears, so a store that opened it without O_NONBLOCK would wait forever.
    root.mkdir(parents=True)
    fifo = root / "pipe.jsonl"
    os.mkfifo(fifo, 0o600)
    finished = threading.Event()
    rescued: list[bool] = []

    def rescue() -> None:
        # Only a guard, so that a regression fails here instead of hanging the suite: if the
        # store still waits after 30 s, become the writer it waits for.
        if not finished.wait(30):
            rescued.append(True)
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    guard = threading.Thread(target=rescue, daemon=True)
    guard.start()
    try:
        with pytest.raises(SessionNotFound, match='session "pipe" not found'):
            async with store.open("pipe"):
                pass
        with pytest.raises(SessionNotFound, match='session "pipe" not found'):
            await store.delete("pipe")
    finally:
        finished.set()
        guard.join()
    assert rescued == []
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


async def test_ensure_root(tmp_path: Path) -> None:
    root = tmp_path / "a" / "b" / "c"
    old_umask = os.umask(0)
    try:
        assert await SessionStore(root).ensure_root() == root
    finally:
        os.umask(old_umask)
    assert mode(root) == mode(root.parent) == mode(root.parent.parent) == 0o700
    existing = tmp_path / "existing"
    existing.mkdir(mode=0o755)
    existing.chmod(0o755)
    await SessionStore(existing).ensure_root()
    assert mode(existing) == 0o755  # an existing root's permissions are left alone
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(PersistenceError, match="session root"):
        await SessionStore(blocker / "sessions").ensure_root()
    with pytest.raises(PersistenceError, match="session root"):
        await SessionStore(blocker).ensure_root()


def test_default_root_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    for name in ("TURNLOG_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    default = tmp_path / "home" / ".local" / "share" / "turnlog" / "sessions"
    assert eventlog.default_root() == default
    monkeypatch.setenv("XDG_DATA_HOME", "relative/data")  # not absolute: ignored
    assert eventlog.default_root() == default
    monkeypatch.setenv("XDG_DATA_HOME", "/data")
    assert eventlog.default_root() == Path("/data/turnlog/sessions")
    monkeypatch.setenv("TURNLOG_HOME", "")  # empty counts as unset
    assert eventlog.default_root() == Path("/data/turnlog/sessions")
    monkeypatch.setenv("TURNLOG_HOME", "tl")  # relative: made absolute
    assert eventlog.default_root() == tmp_path / "tl" / "sessions"
    assert SessionStore().root == tmp_path / "tl" / "sessions"
    assert SessionStore("rel").root == tmp_path / "rel"


@pytest.mark.parametrize("bad", [-1, 60001, 1.5, True, "5", None])
def test_write_delay_must_be_an_int_in_range(bad: object) -> None:
    with pytest.raises(ValueError, match="write_delay_ms"):
        SessionStore("/tmp/x", write_delay_ms=bad)  # type: ignore[arg-type]


HOLDER = """
import sys, trio
from eventlog import SessionStore
async def main():
    async with SessionStore(sys.argv[1]).open(sys.argv[2]):
        print("ready", flush=True)
        await trio.to_thread.run_sync(sys.stdin.readline)
trio.run(main)
"""


async def test_second_writer_in_another_process_e15(store: SessionStore, root: Path) -> None:
    path = place(root, "demo-1.jsonl", E1_BYTES)
    holder = await trio.lowlevel.open_process(
        [sys.executable, "-c", HOLDER, str(root), "demo-1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None
        line = b""
        while not line.endswith(b"\n") and (more := await holder.stdout.receive_some()):
            line += more
        assert line == b"ready\n"
        with pytest.raises(SessionBusy, match='^session "demo-1" is already open for writing$'):
            async with store.open("demo-1"):
                pass
        with pytest.raises(SessionBusy):
            await store.delete("demo-1")
        snapshot = await store.inspect("demo-1")
        assert len(snapshot.events) == 6
        child = await store.fork("demo-1", at=5, id="demo-1-b")
        assert child.seed_length == 6
        assert path.read_bytes() == E1_BYTES
    finally:
        assert holder.stdin is not None
        await holder.stdin.send_all(b"\n")
        await holder.stdin.aclose()
        with trio.fail_after(30):
            assert await holder.wait() == 0
    async with store.open("demo-1") as session:
        assert session.next_seq == 6
    assert path.read_bytes() == E1_BYTES
    await trio.lowlevel.checkpoint()
