"""The process ``test_crash.py`` kills: it appends and flushes forever.

Usage: ``python crash_writer.py ROOT ID ROUND [LAYOUT]``, LAYOUT ``flat`` (the default) or
``dsh-zstd`` (a dsh root in Zstandard, dsh-roots §4). Opens session ``ID`` (creating it if missing),
prints ``open <next_seq>``, then runs three tasks on the one session: turns of a few events and
two appenders of notes, each flushing often and printing ``ack <through_seq>`` after every
flush that returned. Every note carries its own seq and the round, so the test can check that
acknowledged events are present, in order, exactly once.
"""

from __future__ import annotations

import os
import random
import sys

import trio

from eventlog import Session, SessionStore


def ack(through: int) -> None:
    print(f"ack {through}", flush=True)


def note(session: Session, round_: int, rng: random.Random) -> None:
    session.append(
        "note/x", {"round": round_, "seq": session.next_seq, "pad": "x" * rng.randint(0, 400)}
    )


async def turns(session: Session, round_: int, rng: random.Random) -> None:
    turn = sum(1 for event in session.events if event.type == "turn/start") + 1
    while True:
        session.append("turn/start", {"turn": turn})
        for _ in range(rng.randint(0, 4)):
            note(session, round_, rng)
            if rng.random() < 0.5:
                ack(await session.flush())
        session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
        ack(await session.flush())
        turn += 1


async def notes(session: Session, round_: int, rng: random.Random) -> None:
    while True:
        note(session, round_, rng)
        ack(await session.flush())


async def main(root: str, id: str, round_: int, layout: str) -> None:
    if layout == "dsh-zstd":
        store = SessionStore(root, layout="dsh", compression="zstd", write_delay_ms=1)
    else:
        store = SessionStore(root, layout="flat", write_delay_ms=1)
    exists = os.path.exists(store.path(id))
    async with store.open(id) if exists else store.create(id=id) as session:
        print(f"open {session.next_seq}", flush=True)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(turns, session, round_, random.Random(round_))
            for k in range(2):
                nursery.start_soon(notes, session, round_, random.Random(round_ * 10 + k))

if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else "flat")
