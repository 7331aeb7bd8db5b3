"""eventlog.reader.tail: following a log with watchfiles (log-format §5.5, log-format §10.4), on
real files."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from pathlib import Path

import pytest
import trio

from eventlog import SessionStore
from eventlog.errors import CorruptLog, SessionNotFound
from eventlog.format import Event
from eventlog.reader import tail
from tests.eventlog.spec_examples import E1_LINES, E5_LINES, log_bytes

# Hang guard only (the follow loop re-reads at least once per second); never a speed check.
GUARD_S = 20


def record(seq: int, text: str = "x") -> bytes:
    return b'{"type":"note/added","seq":%d,"time":1,"data":"%s"}' % (seq, text.encode())


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


async def test_without_follow_yields_committed_events_and_stops(tmp_path: Path) -> None:
    path = tmp_path / "demo-1.jsonl"
    path.write_bytes(log_bytes([*E1_LINES, *E5_LINES]) + b'{"type":"tu')
    got = [e.to_json() async for e in tail(path, follow=False)]
    assert got == [*E1_LINES[1:], *E5_LINES]
    assert [e.seq async for e in tail(path, start_seq=9, follow=False)] == [9, 10]


async def test_a_log_of_several_chunks_is_yielded_in_order_then_followed(tmp_path: Path) -> None:
    # ~3 MB: the first pass reads and yields it chunk by chunk.
    path = tmp_path / "big.jsonl"
    path.write_bytes(log_bytes([E1_LINES[0], *(record(seq, "y" * 300) for seq in range(9000))]))
    assert [e.seq async for e in tail(path, follow=False)] == list(range(9000))
    assert [e.seq async for e in tail(path, start_seq=8990, follow=False)] == list(range(8990, 9000))
    with trio.fail_after(GUARD_S):
        async with aclosing(tail(path, start_seq=8999)) as events:
            assert (await anext(events)).seq == 8999
            append(path, record(9000) + b"\n")
            assert (await anext(events)).seq == 9000


async def test_without_follow_raises_on_corruption(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(log_bytes([*E1_LINES[:3], b"junk", *E1_LINES[4:]]))
    with pytest.raises(CorruptLog, match="unparsable committed event at line 4, byte 256"):
        async for _ in tail(path, follow=False):
            pass


class Follower:
    """Runs ``tail(follow=True)`` in a task and hands its events over a channel."""

    def __init__(self, path: Path, start_seq: int = 0) -> None:
        self.path = path
        self.start_seq = start_seq
        self.truncations: list[int] = []
        self.send, self.receive = trio.open_memory_channel[Event](1000)

    async def run(self) -> None:
        async with aclosing(
            tail(self.path, start_seq=self.start_seq, on_truncate=self.truncations.append)
        ) as events:
            async for event in events:
                self.send.send_nowait(event)

    async def next_seqs(self, count: int) -> list[int]:
        return [(await self.receive.receive()).seq for _ in range(count)]

    def nothing_pending(self) -> bool:
        return self.receive.statistics().current_buffer_used == 0


def demo_log(tmp_path: Path) -> Path:
    path = tmp_path / "demo-1.jsonl"
    path.write_bytes(log_bytes(E1_LINES))
    return path


@asynccontextmanager
async def following(path: Path, start_seq: int = 0) -> AsyncIterator[Follower]:
    """A ``Follower`` of ``path`` running for the body, under the hang guard."""
    follower = Follower(path, start_seq)
    with trio.fail_after(GUARD_S):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(follower.run)
            yield follower
            nursery.cancel_scope.cancel()


async def test_follow_yields_new_records_as_they_complete(tmp_path: Path) -> None:
    path = demo_log(tmp_path)
    async with following(path, start_seq=4) as follower:
        assert await follower.next_seqs(2) == [4, 5]
        append(path, record(6) + b"\n" + record(7) + b"\n")
        assert await follower.next_seqs(2) == [6, 7]
        # A record becomes visible only once its LF is written.
        line = record(8)
        append(path, line[:10])
        await trio.sleep(0.6)  # idle re-reads happen meanwhile
        assert follower.nothing_pending()
        append(path, line[10:] + b"\n")
        assert await follower.next_seqs(1) == [8]
    assert follower.truncations == []


async def test_follow_is_woken_by_appends_through_the_publish_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A session created here writes through the descriptor of its temp name (log-format §6.3), so its
    # change notifications carry that name, not the log's. With the idle re-read pushed out
    # past the guard, only those notifications can deliver the appends in time.
    monkeypatch.setattr("eventlog.reader.TAIL_REREAD_MS", 4000)
    async with SessionStore(tmp_path).create(id="live") as session:
        session.append("note/added", "first")
        await session.flush()
        async with following(session.path) as follower:
            assert await follower.next_seqs(1) == [0]
            await trio.sleep(0.5)  # the watcher is running
            for seq in (1, 2):
                session.append("note/added", "more")
                await session.flush()
                with trio.fail_after(2):
                    assert await follower.next_seqs(1) == [seq]


async def test_follow_waits_at_a_malformed_record_until_truncated(tmp_path: Path) -> None:
    path = demo_log(tmp_path)
    async with following(path) as follower:
        assert await follower.next_seqs(6) == list(range(6))
        append(path, b"garbage\n" + record(6) + b"\n")
        await trio.sleep(0.6)
        assert follower.nothing_pending()  # never past the malformed record
        # The next writer truncates the tail and appends again.
        os.truncate(path, 887)
        append(path, record(6, "again") + b"\n")
        event = await follower.receive.receive()
        assert (event.seq, event.value()) == (6, "again")
    assert follower.truncations and all(size >= 887 for size in follower.truncations)


async def test_shrink_does_not_repeat_yielded_seqs(tmp_path: Path) -> None:
    path = demo_log(tmp_path)
    async with following(path) as follower:
        assert await follower.next_seqs(6) == list(range(6))
        append(path, record(6) + b"\n" + record(7) + b"\n")
        assert await follower.next_seqs(2) == [6, 7]
        # Roll back to the middle of the log and rewrite: seqs 6 and 7 were yielded already.
        os.truncate(path, 790)
        while not follower.truncations:
            await trio.sleep(0.05)
        assert follower.truncations == [790]
        rewritten = [E1_LINES[6], record(6, "bb"), record(7, "bb"), record(8, "bb")]
        append(path, log_bytes(rewritten))
        event = await follower.receive.receive()
        assert (event.seq, event.value()) == (8, "bb")


async def test_truncation_to_zero_is_waited_out_like_a_removal(tmp_path: Path) -> None:
    # log-format §5.5, log-format §10.4: a shrink is reported and followed, even one below the
    # header (truncated in place to 0 bytes, then a torn header); the follow resumes once the
    # header is back.
    path = demo_log(tmp_path)
    async with following(path) as follower:
        assert await follower.next_seqs(6) == list(range(6))
        os.truncate(path, 0)
        while not follower.truncations:
            await trio.sleep(0.02)
        append(path, E1_LINES[0][:20])
        await trio.sleep(0.3)  # over a re-read period with no header: nothing happens
        assert follower.truncations == [0] and follower.nothing_pending()
        append(path, log_bytes([E1_LINES[0][20:], *E1_LINES[1:], record(6, "again")]))
        event = await follower.receive.receive()
        assert (event.seq, event.value()) == (6, "again")


async def test_replaced_file_is_rescanned(tmp_path: Path) -> None:
    path = demo_log(tmp_path)
    async with following(path) as follower:
        assert await follower.next_seqs(6) == list(range(6))
        replacement = tmp_path / "new.tmp"
        replacement.write_bytes(log_bytes([*E1_LINES, record(6, "new")]))
        os.replace(replacement, path)
        event = await follower.receive.receive()
        assert (event.seq, event.value()) == (6, "new")
    assert follower.truncations  # a replacement counts as a shrink to the start


async def test_removed_file_is_waited_for_and_its_republication_followed(tmp_path: Path) -> None:
    # log-format §10.4: the directory is watched, so a file published again under the name is seen.
    path = demo_log(tmp_path)
    async with following(path) as follower:
        assert await follower.next_seqs(6) == list(range(6))
        path.unlink()
        while not follower.truncations:
            await trio.sleep(0.02)
        await trio.sleep(0.3)  # over a re-read period with the file gone: nothing happens
        assert follower.truncations == [0] and follower.nothing_pending()
        staged = tmp_path / "staged.tmp"
        staged.write_bytes(log_bytes([*E1_LINES, record(6, "again")]))
        os.link(staged, path)  # published as the store does it
        event = await follower.receive.receive()
        assert (event.seq, event.value()) == (6, "again")  # seqs 0-5 are not yielded twice
    assert follower.truncations == [0]


async def test_follow_raises_on_committed_corruption(tmp_path: Path) -> None:
    path = demo_log(tmp_path)
    seen = []
    with trio.fail_after(GUARD_S):
        async with aclosing(tail(path)) as events:
            with pytest.raises(CorruptLog, match="seq gap in committed region at line 8, byte 887"):
                async for event in events:
                    seen.append(event.seq)
                    if event.seq == 5:
                        append(path, record(9) + b"\n" + b'{"type":"turn/end","seq":10,"time":1,"data":{}}\n')
    assert seen == list(range(6))


async def test_a_missing_file_without_follow_is_session_not_found(tmp_path: Path) -> None:
    with pytest.raises(SessionNotFound, match="^session log .* not found$"):
        async for _ in tail(tmp_path / "none.jsonl", follow=False):
            pass


async def test_follow_waits_for_a_missing_file_to_appear(tmp_path: Path) -> None:
    # log-format §5.5, log-format §10.4: like tail -F, a follow of a file that does not exist
    # yet waits for it and then yields its events from seq 0 (the real publish path: a session
    # created and flushed, then appended to).
    path = tmp_path / "later.jsonl"
    async with following(path) as follower:
        await trio.sleep(0.3)  # the follow is waiting: nothing to yield, no error
        assert follower.nothing_pending()
        async with SessionStore(tmp_path).create(id="later") as session:
            session.append("note/added", "a")
            assert await session.flush() == 0
            assert await follower.next_seqs(1) == [0]
            session.append("note/added", "b")
            assert await session.flush() == 1
            assert await follower.next_seqs(1) == [1]


async def test_follow_of_a_missing_file_checks_the_identity_when_it_appears(tmp_path: Path) -> None:
    path = tmp_path / "other.jsonl"
    with trio.fail_after(GUARD_S):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_publish_later, path)
            with pytest.raises(CorruptLog, match='requested id "other" does not match header id "demo-1"'):
                async with aclosing(tail(path, expected_id="other")) as events:
                    async for _ in events:
                        pass


async def _publish_later(path: Path) -> None:
    await trio.sleep(0.2)
    path.write_bytes(log_bytes(E1_LINES))
