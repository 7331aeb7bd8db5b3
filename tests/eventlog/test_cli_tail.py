"""``turnlog tail -f`` (log-format §10.4) as a user meets it: ``python -m eventlog`` in a
subprocess following a file that a real writer appends to, truncates and rewrites; Ctrl-C ends
it with status 0. Only generous timeouts, no timing assertions."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from eventlog import SessionStore
from tests.eventlog.spec_examples import E1_LINES

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 30.0


class Follower:
    """A running ``python -m eventlog tail -f`` with its output lines queued as they arrive."""

    def __init__(self, *argv: str | Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "eventlog", "tail", "-f", *map(str, argv)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        )
        self.out: queue.Queue[str] = queue.Queue()
        self.err: queue.Queue[str] = queue.Queue()
        for stream, sink in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=self._pump, args=(stream, sink), daemon=True).start()

    @staticmethod
    def _pump(stream, sink: queue.Queue[str]) -> None:
        for line in stream:
            sink.put(line.rstrip("\n"))

    def lines(self, n: int, source: str = "out") -> list[str]:
        sink = self.out if source == "out" else self.err
        try:
            return [sink.get(timeout=TIMEOUT) for _ in range(n)]
        except queue.Empty:
            self.proc.kill()
            raise AssertionError(f"tail -f printed nothing new within {TIMEOUT}s") from None

    def interrupt(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout=TIMEOUT)


@pytest.fixture
def follower_factory() -> Iterator[type[Follower]]:
    started: list[Follower] = []

    class Tracked(Follower):
        def __init__(self, *argv: str | Path) -> None:
            super().__init__(*argv)
            started.append(self)

    yield Tracked
    for follower in started:  # never leave a process behind
        if follower.proc.poll() is None:
            follower.proc.kill()
            follower.proc.wait()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    store = tmp_path / "sessions"
    store.mkdir()
    shutil.copyfile(REPO / "fixtures" / "demo-1.jsonl", store / "demo-1.jsonl")
    return store


def test_tail_f_follows_a_live_writer_and_ends_on_ctrl_c(root: Path, follower_factory) -> None:
    follower = follower_factory("demo-1", "--root", root, "-n", "2", "--json")
    assert [line.encode() for line in follower.lines(2)] == E1_LINES[5:7]

    async def write_turn_2() -> None:
        # the real writer: a live session appending and flushing (fsync) in two batches
        async with SessionStore(root).open("demo-1") as session:
            session.append("turn/start", {"turn": 2})
            assert await session.flush() == 6
            session.append("step/start", {"turn": 2, "step": 1})
            session.append("step/end", {"turn": 2, "step": 1})
            assert await session.flush() == 8

    trio.run(write_turn_2)
    printed = [json.loads(line) for line in follower.lines(3)]
    assert [(e["seq"], e["type"], e["data"]) for e in printed] == [
        (6, "turn/start", {"turn": 2}),
        (7, "step/start", {"turn": 2, "step": 1}),
        (8, "step/end", {"turn": 2, "step": 1}),
    ]
    assert follower.interrupt() == 0


def test_tail_f_reports_a_shrink_and_never_repeats_a_seq(root: Path, follower_factory) -> None:
    path = root / "demo-1.jsonl"
    follower = follower_factory(path, "-n", "1")
    follower.lines(1)  # the initial read is done: what follows is appended while it follows

    def record(seq: int, turn: int) -> bytes:
        return f'{{"type":"turn/start","seq":{seq},"time":1767265200000,"data":{{"turn":{turn}}}}}\n'.encode()

    with open(path, "ab") as log:  # a raw writer: one record, then a rolled-back write
        log.write(record(6, 2))
    (line,) = follower.lines(1)
    assert line == '6  2026-01-01T11:00:00.000Z  turn/start  {"turn":2}'
    os.truncate(path, 887)
    assert follower.lines(1, "err") == ["turnlog: log truncated to 887 bytes"]
    with open(path, "ab") as log:  # the rewrite has seq 6 again (already shown), then seq 7
        log.write(record(6, 2) + record(7, 3))
    (line,) = follower.lines(1)
    assert line.startswith("7  ") and line.endswith('turn/start  {"turn":3}')
    assert follower.interrupt() == 0
    assert follower.out.empty()


def test_tail_f_waits_at_a_torn_record_until_it_completes(root: Path, follower_factory) -> None:
    path = root / "demo-1.jsonl"
    follower = follower_factory(path, "-n", "1", "--json")
    assert follower.lines(1)[0].encode() == E1_LINES[6]
    full = b'{"type":"turn/start","seq":6,"time":1767265200000,"data":{"turn":2}}\n'
    with open(path, "ab") as log:
        log.write(full[:20])
        log.flush()
        os.fsync(log.fileno())
        log.write(full[20:])
    assert follower.lines(1)[0].encode() == full.rstrip(b"\n")
    assert follower.interrupt() == 0


@pytest.mark.parametrize("named_by", ["id", "path"])
def test_tail_f_waits_for_a_session_that_does_not_exist_yet(
    root: Path, follower_factory, named_by: str
) -> None:
    # log-format §10.4: like tail -F, a follow of a missing file says once that it waits, then
    # follows the file from seq 0 once a writer publishes it.
    path = root / "later.jsonl"
    follower = follower_factory("later" if named_by == "id" else path, "--root", root, "--json")
    assert follower.lines(1, "err") == [f"turnlog: waiting for {path} to appear"]

    async def write() -> None:
        async with SessionStore(root).create(id="later") as session:
            session.append("turn/start", {"turn": 1})
            assert await session.flush() == 0
            session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
            assert await session.flush() == 1

    trio.run(write)
    printed = [json.loads(line) for line in follower.lines(2)]
    assert [(e["seq"], e["type"]) for e in printed] == [(0, "turn/start"), (1, "turn/end")]
    assert follower.interrupt() == 0
    assert follower.err.empty()  # the waiting line was said once
