"""Benchmarks of the page (web §9), run by hand: ``TURNLOG_BENCH=1 tests/run tests/bench/web -s``.

Each prints one JSON line ``{"bench","metric","value","unit","ceiling"}`` and fails only above
its ceiling. The page records its marks in ``window.__turnlogMetrics`` when loaded with
``?metrics=1``. Rows here: B1 (first paint of a 10,000-event session), B2 (event to paint over
scripted turns, and reminder rows), B3 (2,000 streamed deltas: delta to paint and the longest
main-thread task), B4 (five tabs on one streaming session against one tab, in the same run), B5
(the inspector on 10,000 events: rows ready, and the longest task while scrolling end to end) and
B6 (JS heap after B1's load).

Streaming comes from the scripted model's script mode: a line's ``delayMs`` is slept before each
of its chunks, and a text goes out in 16-character deltas. A delta has no time of its own, so
delta to paint runs from its arrival in the page to the ``Date.now()`` after the animation frame
that painted it. Longest tasks come from a Chromium trace (``RunTask`` on the renderer's main
thread), which sees every task, not only the ones over 50 ms the Long Tasks API reports.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import trio

from eventlog import read_log
from host.models import ScriptedAdapter, parse_script
from host.testing import open_harness
from tests.web.browser_support import only_session
from tests.web.process_support import WebProcess

pytestmark = pytest.mark.skipif(
    os.environ.get("TURNLOG_BENCH") != "1", reason="benchmarks run with TURNLOG_BENCH=1"
)
VIEWPORT = {"width": 1280, "height": 800}
TRACE_CATEGORIES = ["toplevel", "disabled-by-default-devtools.timeline"]
DELTA_CHARS = 16  # the scripted model's text piece (host §6.3)


class Line(NamedTuple):
    bench: str
    metric: str
    value: float
    unit: str
    ceiling: float


def emit(*lines: Line) -> None:
    """Print every line, then fail if any is above its ceiling (so one miss hides no figure)."""
    for line in lines:
        print(json.dumps({**line._asdict(), "value": round(line.value, 2)}))
    above = [
        f"{x.bench} {x.metric}: {x.value:.2f} {x.unit} above the ceiling {x.ceiling}"
        for x in lines
        if x.value > x.ceiling
    ]
    assert not above, "; ".join(above)


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
        Line(
            "B1",
            f"first paint, {events:,}-event session (median of 5 cold loads)",
            statistics.median(paints),
            "ms",
            1500,
        ),
        Line("B6", "JS heap after B1's load", heap, "MiB", 100),
    )


def test_b2_event_to_paint(tmp_path: Path, chromium: Any) -> None:
    turns = int(os.environ.get("TURNLOG_BENCH_TURNS", "200"))
    root = tmp_path / "s"
    with WebProcess(tmp_path, root) as web:
        page = new_page(chromium, web.url.replace("/#", "/?metrics=1#"))
        composer = Composer(page)
        for i in range(turns):
            composer.send(f"turn {i}")
            turn_ends_painted(page, i + 1)
        for i in range(5):
            composer.send(f"remind me in 1 second to r{i}")
            turn_ends_painted(page, turns + 2 * (i + 1))  # the prompt's turn, then the reminder's
        page.get_by_role("log", name="Conversation").get_by_text(f"Reminder: r{i}", exact=True).wait_for()
        events = page.evaluate("() => window.__turnlogMetrics.events")
        page.context.close()
    lags = [e["painted"] - e["time"] for e in events]
    reminders = [e["painted"] - e["time"] for e in events if e["type"] == "schedule/change"]
    emit(
        Line(
            "B2", f"event to paint p50 ({len(lags)} events, {turns} turns)", statistics.median(lags), "ms", 30
        ),
        Line("B2", "event to paint p95", p95(lags), "ms", 100),
        Line(
            "B2", f"reminder row to paint p95 ({len(reminders)} schedule changes)", p95(reminders), "ms", 150
        ),
    )


# --- streaming: B3, B4 ---------------------------------------------------------------------------


def stream_line(label: str, deltas: int, delay_ms: float) -> str:
    """A script line whose text streams as ``deltas`` deltas, ``delay_ms`` apart: prose in
    paragraphs of about 400 characters, as a model writes, starting with ``label`` (so a test can
    wait for that reply)."""
    paragraph = "Streaming text that wraps like prose, with a clause or two and a full stop. " * 5 + "\n\n"
    body = (label + " " + paragraph * (deltas * DELTA_CHARS // len(paragraph) + 1))[: deltas * DELTA_CHARS]
    return json.dumps({"text": body, "delayMs": delay_ms}) + "\n"


def write_script(folder: Path, lines: list[str]) -> Path:
    path = folder / "script.jsonl"
    path.write_text("".join(lines))
    return path


def new_page(chromium: Any, url: str) -> Any:
    context = chromium.new_context(viewport=VIEWPORT, locale="en-US", timezone_id="UTC")
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(url)
    page.get_by_role("status", name="Connection").filter(has_text="Connected").wait_for()
    return page


class Longest(NamedTuple):
    """The longest main-thread task of a trace: its wall time, and the CPU time the thread spent
    in it (on a shared machine the difference is time the renderer waited for a core)."""

    wall_ms: float
    cpu_ms: float


def longest_task(trace: bytes) -> Longest:
    """The longest task on any renderer main thread of a Chromium trace."""
    events = json.loads(trace)
    events = events["traceEvents"] if isinstance(events, dict) else events
    main = {
        (e["pid"], e["tid"])
        for e in events
        if e.get("ph") == "M" and e.get("name") == "thread_name" and e["args"].get("name") == "CrRendererMain"
    }
    tasks = [
        e
        for e in events
        if e.get("ph") == "X" and e.get("name") == "RunTask" and (e.get("pid"), e.get("tid")) in main
    ]
    assert tasks, "the trace holds no renderer task"
    task = max(tasks, key=lambda e: e["dur"])
    return Longest(task["dur"] / 1000, task.get("tdur", task["dur"]) / 1000)


@contextmanager
def traced(chromium: Any, page: Any) -> Iterator[list[Longest]]:
    """Trace ``page`` while the block runs; the list then holds its longest task."""
    longest: list[Longest] = []
    chromium.start_tracing(page=page, categories=TRACE_CATEGORIES)
    try:
        yield longest
    finally:
        longest.append(longest_task(chromium.stop_tracing()))


def turn_ends_painted(page: Any, count: int) -> None:
    page.wait_for_function(
        "(n) => window.__turnlogMetrics.events.filter((e) => e.type === 'turn/end').length >= n", arg=count
    )


class Composer:
    """The page's composer, found once. Each send types into it and presses Enter, as a person
    does. The waits between turns read the page's own records: resolving a role or text locator
    again for every turn would compute roles, names or text across the whole page, in the page
    being measured, more the longer the conversation grows."""

    def __init__(self, page: Any) -> None:
        self.box = page.get_by_role("textbox", name="Message").element_handle()

    def send(self, text: str) -> None:
        self.box.fill(text)
        self.box.press("Enter")


def test_b3_streaming_deltas(tmp_path: Path, chromium: Any) -> None:
    deltas = int(os.environ.get("TURNLOG_BENCH_DELTAS", "2000"))
    script = write_script(tmp_path, [stream_line("Streamed", deltas, 5)])
    with WebProcess(tmp_path, tmp_path / "s", "--script", str(script)) as web:
        page = new_page(chromium, web.url.replace("/#", "/?metrics=1#"))
        with traced(chromium, page) as longest:
            Composer(page).send("stream please")
            turn_ends_painted(page, 1)
        painted = page.evaluate("() => window.__turnlogMetrics.deltas")
        page.context.close()
    lags = [d["painted"] - d["received"] for d in painted]
    # The deltas of the last frame may be replaced by the logged message before that frame comes:
    # they are then painted as the message, not as deltas, and have no record.
    assert deltas - 10 <= len(lags) <= deltas, f"{len(lags)} deltas painted, {deltas} streamed"
    emit(
        Line("B3", f"delta to paint p95 ({deltas} deltas at 5 ms)", p95(lags), "ms", 50),
        Line("B3", "longest main-thread task while streaming", longest[0].wall_ms, "ms", 50),
        Line("B3", "that task's main-thread CPU time", longest[0].cpu_ms, "ms", 50),
    )


# Animation frames a page paints in 250 ms, with a timer as the fallback: a hidden or throttled
# page runs no frames, and then says 0 instead of hanging.
FRAMES_IN_A_QUARTER_SECOND = """() => new Promise((resolve) => {
  let frames = 0;
  const start = performance.now();
  const done = () => resolve(frames);
  const timer = setTimeout(done, 400);
  const tick = () => {
    frames += 1;
    if (performance.now() - start < 250) requestAnimationFrame(tick);
    else { clearTimeout(timer); done(); }
  };
  requestAnimationFrame(tick);
})"""


def test_b4_five_tabs_on_one_streaming_session(tmp_path: Path, chromium: Any) -> None:
    """The same streamed turns, first watched by one tab, then by five; each tab's event-to-paint
    p95 against the single tab's p95 from this run.

    Five tabs here are five visible windows: each page has a browser context, hence a window, of
    its own, and the test checks that every one is visible and painting frames at full rate.
    That is the only setup in which B2 means something for every tab: a person with five tabs in
    one window sees one, and Chromium runs no animation frames in the four hidden ones (they
    paint when shown), so their event-to-paint would measure how long they stay hidden.
    Playwright already launches Chromium with ``--disable-background-timer-throttling``,
    ``--disable-renderer-backgrounding`` and ``--disable-backgrounding-occluded-windows``, so no
    window is throttled for being unfocused or covered; no further flags are needed. All five
    renderers, the display compositor, the server and Playwright then share the machine's cores.
    """
    turns = int(os.environ.get("TURNLOG_BENCH_STREAM_TURNS", "30"))
    script = write_script(tmp_path, [stream_line(f"Reply {i}.", 100, 5) for i in range(2 * turns)])
    root = tmp_path / "s"

    def run_turns(pages: list[Any], first: int, from_seq: int) -> list[list[float]]:
        """Turns ``first``… sent from the first page, each waited for in every page; each page's
        event-to-paint lags of the events from ``from_seq`` on."""
        composer = Composer(pages[0])
        for i in range(first, first + turns):
            composer.send(f"turn {i}")
            turn_ends_painted(pages[0], i + 1)
            for page in pages[1:]:
                turn_ends_painted(page, i + 1 - first)  # they opened at turn `first`
        return [
            [
                e["painted"] - e["time"]
                for e in page.evaluate("() => window.__turnlogMetrics.events")
                if e["seq"] >= from_seq
            ]
            for page in pages
        ]

    with WebProcess(tmp_path, root, "--script", str(script)) as web:
        first = new_page(chromium, web.url.replace("/#", "/?metrics=1#"))
        (single,) = run_turns([first], 0, 0)
        session_id = only_session(root)
        seen = len(read_log(root / f"{session_id}.jsonl").events)
        url = web.url.replace("/#", f"/s/{session_id}?metrics=1#")
        others = [new_page(chromium, url) for _ in range(4)]
        for page in others:
            page.get_by_role("log", name="Conversation").get_by_text(f"Reply {turns - 1}.").wait_for()
        for page in [first, *others]:
            assert page.evaluate("() => document.visibilityState") == "visible"
            assert page.evaluate(FRAMES_IN_A_QUARTER_SECOND) >= 8, "a window is throttled: B4 needs five visible tabs"
        five = run_turns([first, *others], turns, seen)
        for page in [first, *others]:
            page.context.close()
    baseline = p95(single)
    worst = max(p95(lags) for lags in five)
    emit(
        Line(
            "B4",
            f"single tab: event to paint p95 ({len(single)} events, streamed turns)",
            baseline,
            "ms",
            100,
        ),
        Line(
            "B4",
            f"five tabs: worst tab's event to paint p95 ({len(five[0])} events each)",
            worst,
            "ms",
            2 * baseline,
        ),
    )


# --- the inspector: B5 ---------------------------------------------------------------------------

SCROLL_END_TO_END = """async () => {
  const timeline = document.querySelector('[role="listbox"][aria-label="Events"]');
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));
  let steps = 0;
  while (timeline.scrollTop + timeline.clientHeight < timeline.scrollHeight - 1) {
    timeline.scrollTop += timeline.clientHeight;
    steps += 1;
    await frame();
  }
  await frame();
  return steps;
}"""


def test_b5_inspector(tmp_path: Path, chromium: Any) -> None:
    root = tmp_path / "s"
    session_id = big_session(root, 770)  # 10,010 events, as B1
    events = len(read_log(root / f"{session_id}.jsonl").events)
    with WebProcess(tmp_path, root) as web:
        context = chromium.new_context(viewport=VIEWPORT, locale="en-US", timezone_id="UTC")
        page = context.new_page()
        page.goto(web.url.replace("/#", f"/s/{session_id}/log?metrics=1#"))
        page.wait_for_function(
            "() => (window.__turnlogMetrics?.marks ?? []).some((m) => m.name === 'inspector-ready')",
            timeout=60_000,
        )
        ready = page.evaluate("() => window.__turnlogMetrics.marks.find((m) => m.name === 'inspector-ready')")
        assert ready["events"] == events
        page.locator('[role="option"][data-seq="0"]').wait_for()
        with traced(chromium, page) as longest:
            steps = page.evaluate(SCROLL_END_TO_END)
        page.locator(f'[role="option"][data-seq="{events - 1}"]').wait_for()
        context.close()
    emit(
        Line("B5", f"inspector: {events:,} rows ready", ready["at"], "ms", 2000),
        Line(
            "B5",
            f"longest task while scrolling end to end ({steps} page steps)",
            longest[0].wall_ms,
            "ms",
            100,
        ),
        Line("B5", "that task's main-thread CPU time", longest[0].cpu_ms, "ms", 100),
    )
