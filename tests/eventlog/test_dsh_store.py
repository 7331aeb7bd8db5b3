"""SessionStore on dsh roots (dsh-roots §2-§4): detection and refusals, the Zstandard writer
(Z1, Z2), open's repair of a torn frame (Z3-Z5), identity checks, listing and fork across
layouts and encodings."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from eventlog import CorruptLog, SessionExists, SessionRootError, SessionStore, read_log
from eventlog._zstd import encode_frame, read_text, scan_frames
from tests.eventlog.live_support import SetClock, replay
from tests.eventlog.spec_examples import E1_LINES
from tests.eventlog.zstd_support import ONE, SS21, TE2, TS2, H, cli_decompress, zstd_program

ZPATH = ("--home-ana--", "demo-1", "session.jsonl.zstd")


def zstd_store(root: Path, clock: SetClock | None = None) -> SessionStore:
    return SessionStore(root, layout="dsh", compression="zstd", clock=clock or SetClock())


async def make_z1(root: Path) -> Path:
    clock = SetClock()
    async with zstd_store(root, clock).create(id="demo-1", cwd="/home/ana") as session:
        replay(session, clock, E1_LINES[1:])
        await session.flush()
    return root.joinpath(*ZPATH)


async def test_z1_z2_each_durable_batch_is_one_checksummed_frame(tmp_path: Path) -> None:
    root = tmp_path / "dsh"
    path = await make_z1(root)
    z1 = path.read_bytes()
    assert z1[:4] == bytes.fromhex("28B52FFD")
    scan = scan_frames(z1)
    assert len(scan.frames) == 2 and scan.torn_start is None
    assert all(frame.checksum for frame in scan.frames)
    assert read_text(z1).committed == H + ONE
    assert sorted(os.listdir(path.parent)) == ["session.jsonl.zstd"]
    assert stat.S_IMODE(os.lstat(path.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(path.parent.parent).st_mode) == 0o700
    clock = SetClock()
    store = zstd_store(root, clock)
    async with store.open("demo-1") as session:
        clock.now = 1767265200000
        session.append("turn/start", {"turn": 2})
        session.append("turn/end", {"turn": 2, "reason": {"kind": "completed"}})
        await session.flush()
    z2 = path.read_bytes()
    assert z2.startswith(z1) and len(scan_frames(z2).frames) == 3
    assert (store.layout, store.compression) == ("dsh", "zstd")
    assert read_text(z2).committed == H + ONE + TS2 + (
        b'{"type":"turn/end","seq":7,"time":1767265200000,"data":{"turn":2,"reason":{"kind":"completed"}}}\n'
    )


async def test_turnlogs_file_decompresses_with_the_zstd_program_to_the_raw_log(tmp_path: Path) -> None:
    path = await make_z1(tmp_path / "dsh")
    assert cli_decompress(zstd_program(), path.read_bytes()) == H + ONE


@pytest.mark.parametrize(
    ("tail", "recovered", "closers"),
    [
        (b"\x28\xb5", b"", []),  # Z3
        (encode_frame(TS2 + TE2)[:-1], TS2 + TE2, []),  # Z4
        (encode_frame(TS2 + SS21 + TE2[:30])[:-2], TS2 + SS21, ["step/end", "turn/end"]),  # Z5
    ],
)
async def test_z3_z4_z5_open_truncates_the_torn_frame_and_appends_one_frame(
    tmp_path: Path, tail: bytes, recovered: bytes, closers: list[str]
) -> None:
    path = await make_z1(tmp_path / "dsh")
    z1 = path.read_bytes()
    path.write_bytes(z1 + tail)
    async with zstd_store(tmp_path / "dsh").open("demo-1") as session:
        assert session.recovered is not None
        assert [e.type for e in session.events[6:]][len(recovered.splitlines()) :] == closers
    data = path.read_bytes()
    assert data.startswith(z1)
    scan = scan_frames(data)
    assert scan.torn_start is None and len(scan.frames) == (2 if not (recovered or closers) else 3)
    text = read_text(data).committed
    assert text.startswith(H + ONE + recovered)
    snapshot = read_log(path)
    assert snapshot.repair is None and len(snapshot.events) == 6 + len(recovered.splitlines()) + len(closers)


def place(root: Path, parts: tuple[str, ...], data: bytes) -> Path:
    path = root.joinpath(*parts)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_detection_and_defaults(tmp_path: Path) -> None:
    assert (SessionStore(tmp_path / "a").layout, SessionStore(tmp_path / "a").compression) == ("flat", "none")
    assert SessionStore(tmp_path / "b", dsh_default=True).compression == "zstd"
    assert SessionStore(tmp_path / "c", layout="dsh").compression == "zstd"
    assert SessionStore(tmp_path / "d", compression="none").layout == "dsh"
    place(tmp_path / "e", ("--p--", "x", "session.jsonl"), H)
    assert (SessionStore(tmp_path / "e", dsh_default=True).layout, SessionStore(tmp_path / "e").compression) == (
        "dsh",
        "none",
    )
    place(tmp_path / "f", ("x.jsonl",), H)
    assert SessionStore(tmp_path / "f", dsh_default=True).layout == "flat"
    with pytest.raises(ValueError, match="applies only to the dsh layout"):
        SessionStore(tmp_path / "g", layout="flat", compression="zstd")


def test_refusals_name_the_root(tmp_path: Path) -> None:
    root = tmp_path / "mixed"
    place(root, ("x.jsonl",), H)
    place(root, ("--p--", "y", "session.jsonl.zstd"), H)
    with pytest.raises(SessionRootError) as info:
        _ = SessionStore(root).layout
    assert str(info.value) == (
        f'session root "{root}" mixes flat sessions and dsh sessions; use a separate root for each'
    )
    root = tmp_path / "dsh"
    place(root, ("--p--", "y", "session.jsonl.zstd"), H)
    with pytest.raises(SessionRootError) as info:
        _ = SessionStore(root, compression="none").layout
    assert str(info.value) == f'session root "{root}" holds dsh sessions in zstd, but compression "none" was asked'


async def test_identity_is_checked_before_any_repair(tmp_path: Path) -> None:
    root = tmp_path / "dsh"
    path = await make_z1(root)
    moved = place(root, ("--elsewhere--", "demo-1", "session.jsonl.zstd"), path.read_bytes() + b"\x28")
    os.unlink(path)
    with pytest.raises(CorruptLog) as info:
        async with zstd_store(root).open("demo-1"):
            pass
    assert str(info.value).endswith(f'header id "demo-1" and cwd identify "{root.joinpath(*ZPATH)}"')
    assert moved.read_bytes().endswith(b"\x28")  # not repaired
    place(root, ZPATH, moved.read_bytes())
    with pytest.raises(CorruptLog, match='duplicate session id "demo-1" appears in project directories'):
        async with zstd_store(root).open("demo-1"):
            pass
    infos = await zstd_store(root).list()
    assert [info.problem is None for info in infos] == [True, False]


async def test_list_shows_sessions_and_problems(tmp_path: Path) -> None:
    root = tmp_path / "dsh"
    await make_z1(root)
    place(root, ("--p--", "loose.jsonl.zstd"), b"")
    place(root, ("--p--", "bad~id", "session.jsonl.zstd"), b"")
    place(root, ("--p--", "~0020x", "session.jsonl.zstd"), encode_frame(b'{"version":0}\n'))
    infos = await zstd_store(root).list()
    assert infos[0].id == "demo-1" and infos[0].header is not None and infos[0].problem is None
    problems = sorted(info.problem or "" for info in infos[1:])
    assert len(problems) == 3
    assert "flat file inside a project directory; move it into a session directory" in problems
    assert 'id not supported by turnlog: " x"' in problems


async def test_create_refuses_an_id_any_project_directory_holds(tmp_path: Path) -> None:
    root = tmp_path / "dsh"
    await make_z1(root)
    with pytest.raises(SessionExists):
        async with zstd_store(root).create(id="demo-1", cwd="/other"):
            pass


@pytest.mark.parametrize(("layout", "compression"), [("flat", None), ("dsh", "none"), ("dsh", "zstd")])
async def test_fork_across_layouts_keeps_the_records_byte_for_byte(
    tmp_path: Path, layout: str, compression: str | None
) -> None:
    source = await make_z1(tmp_path / "dsh")
    target = SessionStore(tmp_path / "target", layout=layout, compression=compression)  # type: ignore[arg-type]
    header = await target.fork(source, id="child")
    child = await target.inspect("child")
    assert header.parent_session == "demo-1" and child.header.cwd == "/home/ana"
    assert [e.to_json() for e in child.events][:6] == E1_LINES[1:]
    assert child.encoding == ("zstd" if compression == "zstd" else "none")
    if layout == "dsh":
        assert child.path == (tmp_path / "target").joinpath("--home-ana--", "child", child.path.name)
    back = await zstd_store(tmp_path / "dsh").fork(child.path, id="grandchild")
    assert back.seed_length == 7


async def test_find_locates_a_log_in_any_project_directory_or_says_none(tmp_path: Path) -> None:
    root = tmp_path / "dsh"
    path = await make_z1(root)
    store = zstd_store(root)
    assert await store.find("demo-1") == path
    assert await store.find("other") is None
    flat = SessionStore(tmp_path / "flat")
    assert await flat.find("demo-1") is None
    (tmp_path / "flat").mkdir()
    (tmp_path / "flat" / "demo-1.jsonl").symlink_to(path)  # a name that is there, if not a log
    assert await flat.find("demo-1") == tmp_path / "flat" / "demo-1.jsonl"
