"""Helpers for the store, session and durability tests: wall clocks and the worked examples of
log-format §12 replayed through the public API."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

from eventlog import Session
from tests.eventlog.spec_examples import E1_LINES, log_bytes

E1_CREATED_AT = 1767261600000
E1_BYTES = log_bytes(E1_LINES)


class SetClock:
    """A wall clock the test sets by hand (``clock.now = …``)."""

    def __init__(self, now: int = E1_CREATED_AT) -> None:
        self.now = now

    def now_ms(self) -> int:
        return self.now


class TrioWallClock:
    """A wall clock derived from trio time, so tests on ``MockClock`` get matching instants."""

    def __init__(self, epoch_ms: int = E1_CREATED_AT) -> None:
        self.epoch_ms = epoch_ms

    def now_ms(self) -> int:
        return self.epoch_ms + round(trio.current_time() * 1000)


def replay(session: Session, clock: SetClock, lines: Sequence[bytes | str]) -> None:
    """Append the events of the worked example's record ``lines`` (not the header) with their own times."""
    for line in lines:
        record: dict[str, Any] = json.loads(line)
        clock.now = record["time"]
        session.append(
            record["type"],
            record["data"],
            surface_op=record.get("surfaceOp"),
            source_event_seqs=record.get("sourceEventSeqs"),
        )


def place(root: Path, name: str, data: bytes) -> Path:
    """Put a hand-written log into a store root (0700 root, 0600 file)."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = root / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path
