"""Benchmarks of the page (web §9), run by hand: ``TURNLOG_BENCH=1 tests/run tests/bench/web -s``.

Each prints one JSON line ``{"bench","metric","value","unit","ceiling"}`` and fails only above
its ceiling. The page records its marks in ``window.__turnlogMetrics`` when loaded with
``?metrics=1``. Rows here: B1 (first paint of a 10,000-event session), B2 (event to paint over
scripted turns, and reminder rows), B6 (JS heap after B1's load).
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path
from typing import Any

import pytest
import trio

from eventlog import read_log
from host.models import ScriptedAdapter, parse_script
from host.testing import open_harness
from tests.web.process_support import WebProcess

pytestmark = pytest.mark.skipif(
    os.environ.get("TURNLOG_BENCH") != "1", reason="benchmarks run with TURNLOG_BENCH=1"
)
VIEWPORT = {"width": 1280, "height": 800}


def emit(bench: str, metric: str, value: float, unit: str, ceiling: float) -> None:
    print(
        json.dumps(
            {"bench": bench, "metric": metric, "value": round(value, 2), "unit": unit, "ceiling": ceiling}
        )
    )
    assert value <= ceiling, f"{bench} {metric}: {value} {unit} above the ceiling {ceiling}"


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.95) - 1)]


def big_session(root: Path, turns: int) -> str:
    """A session of ``turns`` turns, each with a tool call (schedule_list) and a Markdown reply."""
    line = json.dumps({"toolCalls": [{"name": "schedule_list", "arguments": {}}]}) + "\n"
    text = (
        json.dumps({"text": "Here is a longer answer with **Markdown**, `code` and a list:\n\n- one\n- two"})
        + "\n"
    )
    adapter = ScriptedAdapter(parse_script(((line + text) * turns).encode()))

    async def run() -> None:
        async with open_harness(root, adapters=lambda: {"scripted": adapter}) as h:
            await h.start()
            for i in range(turns):
                await h.prompt("big", f"question {i}")
                await h.settle()

    trio.run(run)
    return "big"


def test_b1_first_paint_and_b6_heap(tmp_path: Path, chromium: Any) -> None:
    root = tmp_path / "s"
    session_id = big_session(root, 770)  # 13 events a turn: 10,010 events
    with WebProcess(tmp_path, root) as web:
        url = web.url.replace("/#", f"/s/{session_id}?metrics=1#")
        paints, heap = [], 0.0
        for _ in range(5):
            context = chromium.new_context(viewport=VIEWPORT, locale="en-US", timezone_id="UTC")
            page = context.new_page()
            page.goto(url)
            page.wait_for_function(
                "() => (window.__turnlogMetrics?.marks ?? []).some(m => m.name === 'first-paint')",
                timeout=60_000,
            )
            paints.append(
                page.evaluate("() => window.__turnlogMetrics.marks.find(m => m.name === 'first-paint').at")
            )
            cdp = context.new_cdp_session(page)
            cdp.send("Performance.enable")
            metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
            heap = max(heap, metrics["JSHeapUsedSize"] / 2**20)
            context.close()
    events = len(read_log(root / f"{session_id}.jsonl").events)
    emit(
        "B1",
        f"first paint, {events:,}-event session (median of 5 cold loads)",
        statistics.median(paints),
        "ms",
        1500,
    )
    emit("B6", "JS heap after B1's load", heap, "MiB", 100)


def test_b2_event_to_paint(tmp_path: Path, chromium: Any) -> None:
    turns = int(os.environ.get("TURNLOG_BENCH_TURNS", "200"))
    root = tmp_path / "s"
    with WebProcess(tmp_path, root) as web:
        context = chromium.new_context(viewport=VIEWPORT, locale="en-US", timezone_id="UTC")
        page = context.new_page()
        page.goto(web.url.replace("/#", "/?metrics=1#"))
        box = page.get_by_role("textbox", name="Message")
        conversation = page.get_by_role("log", name="Conversation")
        for i in range(turns):
            box.fill(f"turn {i}")
            page.get_by_role("button", name="Send").click()
            conversation.get_by_text(f"You said: turn {i}", exact=True).wait_for()
        for i in range(5):
            box.fill(f"remind me in 1 second to r{i}")
            page.get_by_role("button", name="Send").click()
            conversation.get_by_text(f"Reminder: r{i}", exact=True).wait_for()
        page.wait_for_timeout(100)  # the last animation frame's record
        events = page.evaluate("() => window.__turnlogMetrics.events")
        context.close()
    lags = [e["painted"] - e["time"] for e in events]
    reminders = [e["painted"] - e["time"] for e in events if e["type"] == "schedule/change"]
    emit("B2", f"event to paint p50 ({len(lags)} events, {turns} turns)", statistics.median(lags), "ms", 30)
    emit("B2", "event to paint p95", p95(lags), "ms", 100)
    emit("B2", f"reminder row to paint p95 ({len(reminders)} schedule changes)", p95(reminders), "ms", 150)
