"""A real crash test (log-format §6, log-format §7): a writer process is SIGKILLed at random points,
over and over, on the same session. Every acknowledged event must survive, in order, exactly
once, and the file must always open (repairing an interrupted turn if needed). The rounds run
on a flat root and on a dsh root in Zstandard (dsh-roots §7), where a kill may land inside a frame."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest
import trio

from eventlog import SessionStore, read_log

WRITER = Path(__file__).with_name("crash_writer.py")
ROUNDS = 16


def run_and_kill(root: Path, round_: int, rng: random.Random, layout: str) -> tuple[int, int]:
    """Run the writer until a random number of acknowledgements, SIGKILL it; return the
    ``next_seq`` it opened with and the highest acknowledged seq (-1 if none)."""
    proc = subprocess.Popen(
        [sys.executable, str(WRITER), str(root), "s", str(round_), layout],
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    assert proc.stdout is not None
    try:
        first = proc.stdout.readline()
        assert first.startswith("open "), first
        opened = int(first.split()[1])
        acked = -1
        for _ in range(rng.randint(0, 120)):
            line = proc.stdout.readline()
            assert line.startswith("ack "), line
            acked = max(acked, int(line.split()[1]))
        time.sleep(rng.random() * 0.003)  # land anywhere: mid-batch, mid-sync, between
    finally:
        proc.send_signal(signal.SIGKILL)
        rest, _ = proc.communicate(timeout=30)
    for line in rest.splitlines():  # acks printed before the kill landed count too
        if line.startswith("ack "):
            acked = max(acked, int(line.split()[1]))
    return opened, acked


async def reopen(root: Path) -> tuple[Path, list[bytes]]:
    async with SessionStore(root).open("s") as session:  # the root's layout is detected
        return session.path, [event.to_json() for event in session.events]


@pytest.mark.parametrize("layout", ["flat", "dsh-zstd"])
def test_sigkill_at_random_points_never_loses_an_acknowledged_event(tmp_path: Path, layout: str) -> None:
    rng = random.Random(20260101)
    root = tmp_path / "sessions"
    known: list[bytes] = []  # the log as verified after the previous round
    for round_ in range(ROUNDS):
        opened, acked = run_and_kill(root, round_, rng, layout)
        assert opened >= len(known)
        path, records = trio.run(reopen, root)
        assert path.name == ("session.jsonl.zstd" if layout == "dsh-zstd" else "s.jsonl")
        # the open repaired whatever the kill left: the file now reads with nothing to repair
        after = read_log(path)
        assert after.repair is None and [event.to_json() for event in after.events] == records
        # everything that was there before this round is still there, byte for byte
        assert records[: len(known)] == known
        # every acknowledged event is present
        assert len(records) - 1 >= acked
        # the events this round's writer made are in order, each exactly once
        for seq, record in enumerate(records[opened:], start=opened):
            event = msgspec.json.decode(record)
            assert event["seq"] == seq
            if event["type"] == "note/x":
                assert event["data"]["seq"] == seq and event["data"]["round"] == round_
        known = records
    turns = [msgspec.json.decode(r) for r in known if b'"turn/' in r[:30]]
    assert turns and turns[-1]["type"] == "turn/end"  # the last reopen left no open turn
