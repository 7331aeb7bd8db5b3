"""Every benchmark in one run, by hand: ``.venv/bin/python -m tests.bench [--quick] [--only NAME]``.

Each benchmark runs as its own process (so one's memory and threads never disturb the next) and
prints its figures next to the ceiling or baseline it measured in the same run. ``--quick``
shrinks every size so the whole run takes a few minutes; the soak test (``tests/bench/soak.py``,
ten minutes) is never part of it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
PYTEST_BENCH = ["-m", "pytest", "-q", "-s", "-o", "addopts=", "-p", "no:cacheprovider"]

# name -> (full arguments, quick arguments); each runs as `python <args>` from the project root.
BENCHES: dict[str, tuple[list[str], list[str]]] = {
    "eventlog": (["tests/bench/bench_eventlog.py"], ["tests/bench/bench_eventlog.py", "--events", "20000"]),
    "schedule": (["-m", "tests.bench.bench_schedule"], ["-m", "tests.bench.bench_schedule", "--quick"]),
    "timecontext": (
        ["-m", "tests.bench.bench_timecontext"],
        ["-m", "tests.bench.bench_timecontext", "--events", "20000", "--calls", "500"],
    ),
    "host": (
        ["tests/bench/bench_host.py"],
        ["tests/bench/bench_host.py", "--turns", "100", "--sessions", "100", "--window", "5", "--runs", "3"],
    ),
    "web": ([*PYTEST_BENCH, "tests/bench/web"], [*PYTEST_BENCH, "tests/bench/web"]),
}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a few minutes in all")
    parser.add_argument(
        "--only", choices=sorted(BENCHES), action="append", help="run only these (repeatable)"
    )
    args = parser.parse_args()
    env = {**os.environ, "TURNLOG_BENCH": "1", "PYTHONPATH": str(PROJECT)}
    if args.quick:
        env.setdefault("TURNLOG_BENCH_TURNS", "50")
    failed = []
    for name in args.only or list(BENCHES):
        full, quick = BENCHES[name]
        print(f"\n=== {name} ===", flush=True)
        start = time.monotonic()
        code = subprocess.run(
            [sys.executable, *(quick if args.quick else full)], check=False, cwd=PROJECT, env=env
        ).returncode
        print(
            f"=== {name}: {'ok' if code == 0 else f'exit {code}'} in {time.monotonic() - start:.0f} s",
            flush=True,
        )
        if code != 0:
            failed.append(name)
    if failed:
        print(f"\nabove a ceiling or failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
