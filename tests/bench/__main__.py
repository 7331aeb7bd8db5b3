"""Every benchmark in one run, by hand: ``.venv/bin/python -m tests.bench [--quick] [--json] [--only NAME]``.

Each benchmark runs as its own process (so one's memory and threads never disturb the next) and
prints rows ``figure  today  ceiling  ratio  target  ok/MISS``: a figure beside the ceiling or
baseline it measured in the same run (``tests/bench/_rows.py``). ``--quick`` shrinks every size
(seconds per benchmark); ``--json`` prints one JSON object ``{benchmark: [row, ...]}`` instead of
the tables. The soak test (``tests/bench/soak.py``, ten minutes) is never part of it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]

# name -> the module run as `python -m <module> [--quick] [--json]` from the project root.
BENCHES: dict[str, str] = {
    "eventlog": "tests.bench.bench_eventlog",
    "dsh": "tests.bench.bench_dsh",
    "schedule": "tests.bench.bench_schedule",
    "timecontext": "tests.bench.bench_timecontext",
    "host": "tests.bench.bench_host",
    "web": "pytest",
}
# The web benchmarks are browser tests (web §9): pytest runs them, each printing one JSON line
# {"bench","metric","value","unit","ceiling"} and failing above its ceiling; TURNLOG_BENCH_QUICK=1
# is their --quick.
WEB = ["-q", "-s", "-o", "addopts=", "-p", "no:cacheprovider", "tests/bench/web"]


def command(name: str, quick: bool, as_json: bool) -> list[str]:
    if name == "web":
        return [sys.executable, "-m", "pytest", *WEB]
    return [sys.executable, "-m", BENCHES[name], *(["--quick"] if quick else []),
            *(["--json"] if as_json else [])]


def parse(name: str, stdout: str) -> object:
    if name == "web":
        return [json.loads(line) for line in stdout.splitlines() if line.startswith('{"bench"')]
    return json.loads(stdout)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: seconds per benchmark")
    parser.add_argument("--json", action="store_true", help="one JSON object of every row on stdout")
    parser.add_argument(
        "--only", choices=sorted(BENCHES), action="append", help="run only these (repeatable)"
    )
    args = parser.parse_args()
    env = {**os.environ, "TURNLOG_BENCH": "1", "PYTHONPATH": str(PROJECT)}
    if args.quick:
        env["TURNLOG_BENCH_QUICK"] = "1"
    missed: list[str] = []
    collected: dict[str, object] = {}
    for name in args.only or list(BENCHES):
        if not args.json:
            print(f"\n=== {name} ===", flush=True)
        start = time.monotonic()
        done = subprocess.run(
            command(name, args.quick, args.json), check=False, cwd=PROJECT, env=env,
            stdout=subprocess.PIPE if args.json else None, text=True,
        )
        if args.json:
            try:
                collected[name] = parse(name, done.stdout)
            except json.JSONDecodeError:
                collected[name] = {"error": f"exit {done.returncode}, output was not JSON"}
        else:
            print(f"=== {name}: {'ok' if done.returncode == 0 else 'MISS or failed'} "
                  f"in {time.monotonic() - start:.0f} s", flush=True)
        if done.returncode != 0:
            missed.append(name)
    if args.json:
        json.dump(collected, sys.stdout, indent=1)
        print()
    elif missed:
        print(f"\na row missed its target, or the run failed, in: {', '.join(missed)}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
