"""``tail -f`` on a Zstandard log that shrinks under it (dsh-roots §6, log-format §10.4): a torn
frame repaired by open, a cut back to an earlier frame, a truncation inside frame 0. The follow
reports the shrink, starts over from frame 0 and yields only seqs it has not yielded yet."""

from __future__ import annotations

import os
from pathlib import Path

import trio

from eventlog import SessionStore, dsh_log_path
from eventlog._zstd import encode_frame
from tests.eventlog.test_tail import following
from tests.eventlog.zstd_support import ONE, SS21, TE2, TS2, H

Z1 = encode_frame(H) + encode_frame(ONE)
TE3 = b'{"type":"turn/end","seq":8,"time":1767265200002,"data":{"turn":2,"reason":{"kind":"completed"}}}\n'


def put(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as file:
        file.write(data)


async def wait_for_truncation(truncations: list[int]) -> None:
    while not truncations:
        await trio.sleep(0.02)


async def test_a_torn_frame_repaired_under_a_follow_yields_the_recovered_events_and_closers(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    path = put(dsh_log_path(root, "/home/ana", "demo-1", "zstd"), Z1 + encode_frame(TS2 + SS21 + TE2[:30])[:-2])
    async with following(path) as follower:
        assert await follower.next_seqs(6) == list(range(6))
        await trio.sleep(0.3)  # over a re-read period: the torn frame is waited for, not reported
        assert follower.nothing_pending()
        async with SessionStore(root).open("demo-1"):  # truncates at the frame, appends one frame
            pass
        events = [await follower.receive.receive() for _ in range(4)]
    assert [(e.seq, e.type) for e in events] == [
        (6, "turn/start"), (7, "step/start"), (8, "step/end"), (9, "turn/end"),
    ]
    assert events[-1].value()["reason"] == {"kind": "interrupted"}


async def test_a_cut_back_to_an_earlier_frame_is_reported_and_followed(tmp_path: Path) -> None:
    path = put(tmp_path / "session.jsonl.zstd", Z1 + encode_frame(TS2 + TE2))
    async with following(path) as follower:
        assert await follower.next_seqs(8) == list(range(8))
        os.truncate(path, len(Z1))
        await wait_for_truncation(follower.truncations)
        assert follower.truncations == [len(Z1)]
        # Rewritten after the cut: seqs 6 and 7 were yielded already, 8 is new.
        append(path, encode_frame(TS2 + SS21))
        append(path, encode_frame(TE3))
        event = await follower.receive.receive()
        assert (event.seq, event.type) == (8, "turn/end")
        assert follower.nothing_pending()


async def test_a_truncation_inside_frame_0_is_waited_out(tmp_path: Path) -> None:
    path = put(tmp_path / "session.jsonl.zstd", Z1)
    async with following(path) as follower:
        assert await follower.next_seqs(6) == list(range(6))
        os.truncate(path, 5)  # inside frame 0: no header until it is written again
        await wait_for_truncation(follower.truncations)
        await trio.sleep(0.3)
        assert follower.truncations == [5] and follower.nothing_pending()
        path.write_bytes(Z1 + encode_frame(TS2 + SS21))  # rewritten in place (same file)
        assert await follower.next_seqs(2) == [6, 7]
