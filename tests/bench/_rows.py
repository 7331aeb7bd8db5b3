"""The one row format every benchmark prints: ``figure  today  ceiling  ratio  target  ok/MISS``.

A row puts a figure measured today next to the ceiling or baseline measured *in the same run*
(these machines are shared, so only a ratio from one run means anything). Every benchmark module
exposes ``rows(quick: bool) -> list[Row]`` and ends with ``bench_main(__doc__, rows)``, which gives
it ``--quick`` (smaller sizes; the whole ``python -m tests.bench --quick`` stays under a minute)
and ``--json`` (the rows as one JSON array on stdout, for ``python -m tests.bench --json``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

Row = dict[str, Any]


def row(figure: str, today: float, ceiling: float, unit: str, target: str, ok: bool) -> Row:
    """One measured figure beside its same-run ceiling; ``ok`` says whether ``target`` is met."""
    ratio = today / ceiling if ceiling else float("inf")
    return {"figure": figure, "today": today, "ceiling": ceiling, "unit": unit, "ratio": ratio,
            "target": target, "ok": ok}


def print_rows(rows: list[Row]) -> None:
    print(f"{'figure':<72} {'today':>12} {'ceiling':>12} {'ratio':>10}  {'target':<24} ok/MISS")
    for r in rows:
        print(f"{r['figure']:<72} {r['today']:>9.3f} {r['unit']:<2} {r['ceiling']:>9.3f} {r['unit']:<2}"
              f" {r['ratio']:>10.4g}  {r['target']:<24} {'ok' if r['ok'] else 'MISS'}", flush=True)


def bench_main(doc: str | None, rows: Callable[[bool], list[Row]], argv: list[str] | None = None) -> None:
    """The command line of one benchmark module: ``[--quick] [--json]``; exits 1 if a row misses."""
    parser = argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, a few seconds")
    parser.add_argument("--json", action="store_true", help="print the rows as one JSON array")
    args = parser.parse_args(argv)
    result = rows(args.quick)
    if args.json:
        json.dump(result, sys.stdout, indent=1)
        print()
    else:
        print_rows(result)
    sys.exit(0 if all(r["ok"] for r in result) else 1)
