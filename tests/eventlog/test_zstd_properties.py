"""Properties of Zstandard logs at the reader and store level (dsh-roots §4, §7).

The logs are written by turnlog's own store (a ``dsh``/``zstd`` root, one flush per batch, so one
frame per batch); the file's size after each flush says where each frame ends, independently of
the scanner. Then:

- any truncation keeps every event of its complete frames (``read_log``); what the torn frame
  yields is reported as ``repair.recovered``, a prefix of that batch; opening the session in the
  store repairs it, and the result reads strict, with every event it kept;
- a byte flipped inside a complete frame gives ``CorruptLog`` with the Zstandard prefix, or the
  same events, or a reported repair of a prefix: never another exception, never fewer events
  without a repair saying so.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import trio
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from eventlog import CorruptLog, Event, SessionStore, dsh_log_path, read_log
from eventlog._zstd import read_text, scan_first_frame
from tests.eventlog.live_support import SetClock

ID = "prop-1"
CWD = "/home/ana/work"
# The reference's text that a JSON encoder writes as escapes or multi-byte UTF-8: an astral
# character, a lone surrogate (written \udXXX, dsh-roots §5), a CJK character, controls.
ODD_TEXT = ["😀 astral", "lone \ud83d here", "开发", "tab\tand\u0000nul", "~/.."]


class WrittenLog(msgspec.Struct, frozen=True):
    """A log as turnlog's store wrote it: the file's bytes, the bytes of each frame end (header
    frame first) and the events of each batch (the header frame has none)."""

    data: bytes
    ends: tuple[int, ...]
    batches: tuple[tuple[bytes, ...], ...]

    def events_through(self, size: int) -> list[bytes]:
        """The records of every frame complete within the first ``size`` bytes."""
        return [record for end, batch in zip(self.ends, self.batches, strict=True) if end <= size for record in batch]

    @property
    def records(self) -> list[bytes]:
        return self.events_through(len(self.data))


def _records(events: object) -> list[bytes]:
    assert isinstance(events, (list, tuple))
    return [event.to_json() for event in events if isinstance(event, Event)]


async def _write(root: Path, plan: list[list[tuple[str, object]]]) -> WrittenLog:
    clock = SetClock()
    store = SessionStore(root, layout="dsh", compression="zstd", clock=clock, write_delay_ms=0)
    path = dsh_log_path(root, CWD, ID, "zstd")
    ends: list[int] = []
    batches: list[tuple[bytes, ...]] = [()]
    async with store.create(id=ID, cwd=CWD) as session:
        for batch in plan:
            first = session.next_seq
            for kind, data in batch:
                clock.now += 1
                session.append(kind, data)
            await session.flush()
            if not ends:  # the first publish wrote the header frame and this batch's frame
                ends.append(len(_first_frame_of(path)))
            ends.append(path.stat().st_size)
            batches.append(tuple(_records(list(session.events[first:]))))
    return WrittenLog(path.read_bytes(), tuple(ends), tuple(batches))


def _first_frame_of(path: Path) -> bytes:
    data = path.read_bytes()
    frame = scan_first_frame(data)
    assert frame is not None
    return data[: frame.end]


def _turn(turn: int, notes: list[object], *, end: bool = True) -> list[tuple[str, object]]:
    events: list[tuple[str, object]] = [("turn/start", {"turn": turn}), ("step/start", {"turn": turn, "step": 1})]
    events += [("note/x", note) for note in notes]
    if end:
        events += [("step/end", {"turn": turn, "step": 1}), ("turn/end", {"turn": turn, "reason": {"kind": "completed"}})]
    return events


def _plans() -> list[list[list[tuple[str, object]]]]:
    rng = random.Random(20261202)
    # Hex of random bytes (it compresses only 2:1), so a large batch's frame has several blocks and a cut inside it
    # leaves plaintext a streaming decoder can yield.
    big = [{"pad": rng.randbytes(40_000).hex()} for _ in range(4)]
    small = [{"n": n, "text": ODD_TEXT[n % len(ODD_TEXT)]} for n in range(12)]
    many_small = [_turn(1, small[:2])[:3], _turn(1, small[2:4])[3:], *([("note/x", note)] for note in small[4:])]
    open_turn = [*many_small, _turn(2, small[:3], end=False)[:2], _turn(2, small[3:6], end=False)[2:]]
    with_big = [_turn(1, small[:1]), _turn(2, big, end=False), [("note/x", {"text": text}) for text in ODD_TEXT]]
    return [open_turn, with_big]


@pytest.fixture(scope="module")
def written() -> Iterator[list[WrittenLog]]:
    with tempfile.TemporaryDirectory() as tmp:
        yield [trio.run(_write, Path(tmp) / f"log{i}", plan) for i, plan in enumerate(_plans())]


def test_the_written_logs_have_many_frames_and_odd_text(written: list[WrittenLog]) -> None:
    # What the properties below rely on: several batches per log, odd text in the records.
    for log in written:
        assert len(log.ends) >= 4 and list(log.ends) == sorted(set(log.ends))
        assert log.ends[-1] == len(log.data)
        assert any(b"\\ud83d" in record for record in log.records)
    assert max(b - a for a, b in zip(written[1].ends, written[1].ends[1:])) > 128 * 1024


def _placed(tmp: str, data: bytes) -> Path:
    path = dsh_log_path(Path(tmp) / "root", CWD, ID, "zstd")
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return path


async def _open_and_close(root: Path) -> list[bytes]:
    async with SessionStore(root, clock=SetClock()).open(ID) as session:
        return _records(list(session.events))


def _check_repaired(path: Path, kept: list[bytes], closers: int) -> None:
    # Open repairs the file; afterwards it reads strict: no repair, every event kept, then the
    # closers, and the whole plaintext is the header and those records.
    opened = trio.run(_open_and_close, path.parents[2])
    assert opened[: len(kept)] == kept and len(opened) == len(kept) + closers
    again = read_log(path, expected_id=ID)
    assert again.repair is None and _records(list(again.events)) == opened
    assert read_text(path.read_bytes()).committed.split(b"\n")[1:] == [*opened, b""]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, 1), near_boundary=st.booleans(), where=st.integers(0, 1 << 30), delta=st.integers(-6, 6))
def test_any_truncation_keeps_every_complete_frame_and_repair_reads_strict(
    written: list[WrittenLog], which: int, near_boundary: bool, where: int, delta: int
) -> None:
    log = written[which]
    if near_boundary:
        size = min(max(log.ends[where % len(log.ends)] + delta, 0), len(log.data))
    else:
        size = where % (len(log.data) + 1)
    kept = log.events_through(size)
    with tempfile.TemporaryDirectory() as tmp:
        path = _placed(tmp, log.data[:size])
        if size < log.ends[0]:  # no complete frame: not a log
            with pytest.raises(CorruptLog, match="empty or header-less Zstandard session log$"):
                read_log(path)
            return
        snapshot = read_log(path, expected_id=ID)
        assert _records(list(snapshot.events)) == kept
        assert snapshot.frames == sum(1 for end in log.ends if end <= size)
        repair = snapshot.repair
        torn = size not in log.ends
        event("torn frame" if torn else "frame boundary")
        if torn:
            assert repair is not None and repair.truncate_to == max(end for end in log.ends if end <= size)
            next_batch = log.records[len(kept) :]
            recovered = _records(list(repair.recovered))
            assert next_batch[: len(recovered)] == recovered
            kept += recovered
            event("recovered events" if recovered else "nothing recovered")
        else:
            assert repair is None or (repair.truncate_to is None and repair.recovered == ())
        _check_repaired(path, kept, 0 if repair is None else len(repair.closers))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, 1), frame=st.integers(0, 1 << 30), where=st.integers(0, 1 << 30), flip=st.integers(1, 255))
def test_a_flipped_byte_in_a_complete_frame_is_corruption_or_a_reported_repair(
    written: list[WrittenLog], which: int, frame: int, where: int, flip: int
) -> None:
    # Any frame alike (the header frame and small batches too, not mostly the large one), any byte in it.
    log = written[which]
    hit = frame % len(log.ends)  # the damaged frame
    start = log.ends[hit - 1] if hit else 0
    position = start + where % (log.ends[hit] - start)
    damaged = bytearray(log.data)
    damaged[position] ^= flip
    before = log.events_through(start)
    with tempfile.TemporaryDirectory() as tmp:
        path = _placed(tmp, bytes(damaged))
        try:
            snapshot = read_log(path, expected_id=ID)
        except CorruptLog as exc:
            assert str(exc).startswith(f'corrupt Zstandard session log "{path}": ')
            event("refused")
            return
        records = _records(list(snapshot.events))
        repair = snapshot.repair
        recovered = [] if repair is None else _records(list(repair.recovered))
        # What it kept is the written log's prefix, at least every frame before the damage...
        assert (records + recovered) == log.records[: len(records) + len(recovered)]
        assert records[: len(before)] == before
        # ... and anything it did not keep is reported as a repair that drops bytes.
        event("same" if repair is None else "reported repair")
        if len(records) < len(log.records):
            assert repair is not None and repair.truncate_to is not None and repair.dropped_bytes > 0
        _check_repaired(path, records + recovered, 0 if repair is None else len(repair.closers))


def test_every_frame_boundary_shifted_by_one_byte(written: list[WrittenLog]) -> None:
    # The cases the random cuts above may miss: one byte short of and past each frame's end.
    for log in written:
        for end in log.ends:
            for size in (end - 1, end, end + 1):
                if size > len(log.data):
                    continue
                with tempfile.TemporaryDirectory() as tmp:
                    path = _placed(tmp, log.data[:size])
                    if size < log.ends[0]:
                        with pytest.raises(CorruptLog):
                            read_log(path)
                        continue
                    assert _records(list(read_log(path).events)) == log.events_through(size)
