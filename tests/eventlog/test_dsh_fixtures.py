"""The real deepseek-harness logs (``fixtures/deepseek-harness``) re-encoded as reference-style dsh
roots (dsh-roots §7): every reader and the store see exactly the events of the raw files."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventlog import Event, SessionStore, index_log, iter_events, read_header, read_log
from eventlog._zstd import scan_frames
from tests.eventlog.zstd_support import cli_decompress, reference_root, zstd_program
from tests.fixture_paths import DSH_FIXTURES

RAW = sorted(DSH_FIXTURES.glob("*.jsonl"))


def records(events: object) -> list[bytes]:
    assert isinstance(events, (list, tuple))
    return [event.to_json() for event in events if isinstance(event, Event)]


def test_there_are_real_logs_to_re_encode() -> None:
    assert len(RAW) == 4 and all(path.stat().st_size > 10_000 for path in RAW)


@pytest.mark.parametrize("compression", ["none", "zstd"])
async def test_a_reference_root_reads_to_the_raw_files_events(tmp_path: Path, compression: str) -> None:
    root = tmp_path / "root"
    paths = reference_root(root, RAW, compression)  # type: ignore[arg-type]
    store = SessionStore(root)
    assert (store.layout, store.compression) == ("dsh", compression)
    infos = {info.id: info for info in await store.list()}
    assert sorted(infos) == sorted(read_header(raw).id for raw in RAW)
    for raw, path in zip(RAW, paths, strict=True):
        expected = read_log(raw)
        snapshot = read_log(path, expected_id=expected.header.id)
        assert snapshot.header == expected.header and infos[expected.header.id].header == expected.header
        assert infos[expected.header.id].problem is None and infos[expected.header.id].path == path
        assert records(list(snapshot.events)) == records(list(expected.events))
        assert snapshot.repair == expected.repair and snapshot.encoding == compression
        # The store finds the session by id in its project directory.
        inspected = await store.inspect(expected.header.id)
        assert inspected.path == path and records(list(inspected.events)) == records(list(expected.events))
        assert records(list(iter_events(path, start_seq=7))) == records(list(expected.events))[7:]
        assert records(list(index_log(path).events)) == records(list(expected.events))
        if compression == "zstd":
            frames = scan_frames(path.read_bytes()).frames
            assert snapshot.frames == len(frames) > 3 and not any(frame.checksum for frame in frames)


def test_the_zstd_program_decompresses_a_reference_root_to_the_raw_files(tmp_path: Path) -> None:
    program = zstd_program()
    for raw, path in zip(RAW, reference_root(tmp_path, RAW, "zstd", seed=7), strict=True):
        assert cli_decompress(program, path.read_bytes()) == raw.read_bytes()
