"""Benchmarks of Zstandard session logs, dsh-roots §7 (run by hand from the project root:
``.venv/bin/python -m tests.bench.bench_dsh [--quick] [--json]``; not collected by pytest).

Every row is ``figure  today  ceiling  ratio  target  ok/MISS`` (``tests/bench/_rows.py``): the
figure measured now beside what it is compared with, measured in the same run. The machine may be
shared: compare the ratios of one run, not absolute figures across runs.

- Cold ``read_log`` of the ~200k-event log of ``bench_eventlog`` (20k with ``--quick``; page
  cache warm, best of 3) in Zstandard, in plaintext MB/s, beside the same log raw through
  ``read_log`` (target >= 0.8x). The Zstandard file is framed as turnlog writes it, frame 0 the
  header and one frame per durable batch, for three batch sizes: 8 records (an interactive
  session's flushes), 64 (group commits under many appenders) and 512 (bulk writes). Beside each,
  the decompress-only baseline: the file in one streaming pass (``ZstdFile``, every frame) and
  nothing else, the floor of any reader of that file; the compressed size as a ratio of the
  raw size; and what a fresh decoder costs per frame (the library cannot reuse one across
  frames) beside the Zstandard read's extra time per frame over the raw read.
- Durable events/s with 64 concurrent appenders on one session, each awaiting ``flush()`` after
  every append, in a ``dsh``/``zstd`` store beside a flat raw store (target >= 0.8x).
"""

from __future__ import annotations

import functools
import math
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import trio

from eventlog import read_log
from eventlog._zstd import encode_frame
from tests.bench._rows import Row, bench_main, row
from tests.bench.bench_eventlog import appenders, best_of, generate_log

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

BATCHES = (8, 64, 512)
ROUNDS = 5
READ_TARGET = 0.8
APPEND_TARGET = 0.8


def framed(raw: Path, target: Path, batch: int) -> int:
    """``raw`` re-encoded as turnlog's writer frames it (frame 0 the header line, then one frame
    of ``batch`` records per durable batch); returns the compressed size."""
    lines = raw.read_bytes().splitlines(keepends=True)
    frames = [encode_frame(lines[0])]
    frames += [encode_frame(b"".join(lines[i : i + batch])) for i in range(1, len(lines), batch)]
    target.write_bytes(b"".join(frames))
    return target.stat().st_size


def decompress_only(path: Path) -> int:
    """The baseline: one streaming pass over every frame of the file, the plaintext dropped."""
    total = 0
    with zstd.ZstdFile(path) as file:
        while chunk := file.read(1 << 20):
            total += len(chunk)
    return total


def interleaved(rounds: int, **runs: Callable[[], object]) -> dict[str, float]:
    """The best time of each run over ``rounds`` rounds, taking turns within each round, so that
    a load that comes and goes on a shared machine weighs on every figure alike."""
    best = dict.fromkeys(runs, math.inf)
    for _ in range(rounds):
        for name, run in runs.items():
            best[name] = min(best[name], best_of(1, run))
    return best


def decoder_setup(count: int = 2000) -> None:
    """What reading pays per frame before decoding a byte: a fresh decoder (the library has no
    way to reuse one for the next frame)."""
    for _ in range(count):
        zstd.ZstdDecompressor()


def read_rows(work: Path, events: int) -> list[Row]:
    raw = work / "bench.jsonl"
    size = generate_log(raw, events)
    mb = size / 1e6
    count = len(read_log(raw).events)  # also warms the page cache
    rows = []
    for batch in BATCHES:
        path = work / f"frames-{batch}" / "session.jsonl.zstd"
        path.parent.mkdir()
        compressed = framed(raw, path, batch)
        assert len(read_log(path).events) == count and decompress_only(path) == size
        best = interleaved(
            ROUNDS,
            raw=functools.partial(read_log, raw),
            zstd=functools.partial(read_log, path),
            floor=functools.partial(decompress_only, path),
            setup=decoder_setup,
        )
        raw_s, zstd_s, floor_s = best["raw"], best["zstd"], best["floor"]
        frames = 1 + -(-count // batch)
        setup_us, extra_us = best["setup"] / 2000 * 1e6, (zstd_s - raw_s) / frames * 1e6
        rows += [
            row(f"zstd read_log, frames of {batch} records, vs raw read_log (plaintext MB/s)",
                mb / zstd_s, mb / raw_s, "MB/s", f">= {READ_TARGET}x raw", zstd_s * READ_TARGET <= raw_s),
            row(f"zstd read_log, frames of {batch} records, vs decompress only (one streaming pass)",
                mb / zstd_s, mb / floor_s, "MB/s", "none (the floor)", True),
            row(f"zstd size, frames of {batch} records, vs raw size ({count} events)",
                compressed / 1e6, mb, "MB", "none (printed)", True),
            row(f"decoder setup per frame vs the zstd read's extra time per frame ({frames} frames)",
                setup_us, extra_us, "us", "none (printed)", True),
        ]
    return rows


def append_rows(work: Path, per_task: int) -> list[Row]:
    # The best rate of each store over alternating runs (see ``interleaved``).
    flat = functools.partial(appenders, work, 64, per_task, layout="flat")
    dsh = functools.partial(appenders, work, 64, per_task, layout="dsh", compression="zstd")
    rates: dict[str, list[tuple[float, float]]] = {"flat": [], "dsh": []}
    for _ in range(ROUNDS):
        for name, run in (("flat", flat), ("dsh", dsh)):
            rate, per_batch, _ = trio.run(run)
            rates[name].append((rate, per_batch))
    (raw_rate, raw_batch), (zstd_rate, zstd_batch) = max(rates["flat"]), max(rates["dsh"])
    return [
        row(f"durable events/s, 64 appenders, dsh/zstd vs flat raw ({zstd_batch:.0f} vs {raw_batch:.0f} ev/batch)",
            zstd_rate, raw_rate, "ev/s", f">= {APPEND_TARGET}x raw", zstd_rate >= APPEND_TARGET * raw_rate),
    ]


def rows(quick: bool) -> list[Row]:
    work = Path(tempfile.mkdtemp(prefix="bench-dsh-"))
    try:
        return read_rows(work, 20_000 if quick else 200_000) + append_rows(work, 100 if quick else 1000)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    bench_main(__doc__, rows)
