"""Benchmark of the host (run by hand: ``.venv/bin/python tests/bench/bench_host.py``).

1. Per-turn host overhead on the scripted model, on the real clock and real files (every turn
   ends durably before ``idle``): sequential turns on one session with and without time context,
   through the JSON-RPC server in process, and concurrent turns over many sessions; next to
   baselines measured in the same run: the scripted adapter alone, and a bare eventlog session
   appending a turn's worth of events and flushing.
2. Reminder fire lateness on the real clock: ``--sessions`` live sessions (default 1,000) with
   ``--armed`` reminders each (default 10, so 10,000 armed). One per session falls due inside a
   ``--window`` (default 20 s); the rest lie days ahead. Lateness is the wall time at the
   ``dispatch`` append minus the reminder's target; printed as p50/p99/max next to a bare
   ``trio.sleep`` baseline (one task per target, same targets' spread) in the same run.

3. Start-up of the ``turnlog`` console script (median of ``--runs``): ``--version``, ``--help``, a
   log command (``ls``) and ``serve`` up to its first reply, next to a bare ``python -c pass``
   and to importing the packages a command needs, measured in the same run.

Options: ``--turns N`` (default 300), ``--sessions N``, ``--armed N``, ``--window S``,
``--runs N`` (default 7).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import zoneinfo
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio
import trio.testing

import schedule
from eventlog import SessionStore
from host.models import ModelRequest, ScriptedAdapter
from host.rpc import Server
from host.runtime import EventAppended, Host, HostConfig, open_host

DAY_MS = 86_400_000


def now_ms() -> float:
    return time.time_ns() / 1e6


def quantiles(values: list[float]) -> tuple[float, float, float]:
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]
    return pick(0.50), pick(0.99), ordered[-1]


def report(name: str, count: int, seconds: float, unit: str = "turns") -> None:
    print(f"  {name:<52} {count / seconds:9.0f} {unit}/s  {seconds / count * 1e6:9.0f} µs each")


# --- 1. per-turn overhead ------------------------------------------------------------------------


async def timed(fn: Callable[[], Awaitable[int]]) -> tuple[int, float]:
    start = time.perf_counter()
    count = await fn()
    return count, time.perf_counter() - start


async def sequential_turns(turns: int, *, time_context: bool) -> tuple[int, float]:
    root = Path(tempfile.mkdtemp(prefix="bench-host-"))
    config = HostConfig(root=root, time_context=time_context, time_zone="UTC" if time_context else None)
    async with open_host(config, adapters={"scripted": ScriptedAdapter()}) as host:
        await turn(host, "warm", "hi")

        async def run() -> int:
            for n in range(turns):
                await turn(host, "main", f"hello {n}")
            return turns

        return await timed(run)


async def turn(host: Host, session_id: str, text: str) -> None:
    await host.admit(session_id, [{"type": "text", "text": text}], rpc_id="bench")
    live = host.live(session_id)
    assert live is not None
    await live.agent.when_idle()


async def concurrent_turns(sessions: int, per_session: int) -> tuple[int, float]:
    root = Path(tempfile.mkdtemp(prefix="bench-host-"))
    async with open_host(HostConfig(root=root), adapters={"scripted": ScriptedAdapter()}) as host:
        for s in range(sessions):
            await turn(host, f"s{s}", "warm")

        async def one(s: int) -> None:
            for n in range(per_session):
                await turn(host, f"s{s}", f"hello {n}")

        async def run() -> int:
            async with trio.open_nursery() as nursery:
                for s in range(sessions):
                    nursery.start_soon(one, s)
            return sessions * per_session

        return await timed(run)


async def rpc_turns(turns: int) -> tuple[int, float]:
    root = Path(tempfile.mkdtemp(prefix="bench-host-"))
    async with open_host(HostConfig(root=root), adapters={"scripted": ScriptedAdapter()}) as host:
        to_server, server_in = trio.testing.memory_stream_one_way_pair()
        server_out, from_server = trio.testing.memory_stream_one_way_pair()
        server = Server(host)
        buffer = b""

        async def until_idle() -> None:
            nonlocal buffer
            while True:
                while b"\n" not in buffer:
                    buffer += await from_server.receive_some()
                line, buffer = buffer.split(b"\n", 1)
                if b'"status":"idle"' in line:
                    return

        async def send(n: int) -> None:
            frame = {"jsonrpc": "2.0", "id": f"p-{n}", "method": "session/prompt",
                     "params": {"sessionId": "main", "contentBlocks": [{"type": "text", "text": f"hello {n}"}]}}
            await to_server.send_all(json.dumps(frame).encode() + b"\n")
            await until_idle()

        async def serve() -> None:
            await server.run(server_in, server_out)
            await server_out.aclose()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            await send(-1)

            async def run() -> int:
                for n in range(turns):
                    await send(n)
                return turns

            result = await timed(run)
            await to_server.aclose()
            while await from_server.receive_some():
                pass
        return result


async def adapter_only(turns: int) -> tuple[int, float]:
    adapter = ScriptedAdapter()

    async def run() -> int:
        for n in range(turns):
            request = ModelRequest(
                session_id="main", turn=n + 1, step=1, provider="scripted", model="scripted", system=None,
                messages=({"id": "u", "role": "user", "source": {"kind": "user", "rpcId": "b"},
                           "content": [{"type": "text", "text": f"hello {n}"}]},),
                tools=(), max_tokens=None, reasoning_effort=None,
            )
            async for _ in adapter.stream(request):
                pass
        return turns

    return await timed(run)


async def bare_eventlog(turns: int) -> tuple[int, float]:
    root = Path(tempfile.mkdtemp(prefix="bench-host-"))
    message = {"id": "u", "role": "user", "source": {"kind": "user", "rpcId": "b"},
               "content": [{"type": "text", "text": "hello"}]}
    async with SessionStore(root).create(id="bare") as session:

        async def run() -> int:
            for n in range(turns):
                t = n + 1
                session.append("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [message]})
                session.append("turn/start", {"turn": t})
                session.append("agent/inbox/spliced", {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []})
                session.append("step/start", {"turn": t, "step": 1})
                session.append("user/message", message, surface_op="append")
                session.append("assistant/message", {"turn": t, "step": 1, "message": message}, surface_op="append")
                session.append("step/end", {"turn": t, "step": 1})
                session.append("turn/end", {"turn": t, "reason": {"kind": "completed"}})
                await session.flush()
            return turns

        return await timed(run)


# --- 2. reminder lateness ------------------------------------------------------------------------


async def write_armed(root: Path, sessions: int, armed: int, far_ms: int) -> None:
    """Session files each holding ``armed`` creates of ``at`` reminders days ahead."""
    store = SessionStore(root)

    async def one(s: int) -> None:
        async with store.create(id=f"r{s}") as session:
            for i in range(armed):
                target = schedule.format_instant(far_ms + (s * armed + i) * 1000)
                session.append("schedule/change", {"version": 1, "operation": "create", "schedule": {
                    "id": f"schedule-{i + 1}", "kind": "at", "prompt": f"later {i}", "scheduledAt": target}})
            await session.flush()

    limiter = trio.CapacityLimiter(32)

    async def limited(s: int) -> None:
        async with limiter:
            await one(s)

    async with trio.open_nursery() as nursery:
        for s in range(sessions):
            nursery.start_soon(limited, s)


async def reminder_lateness(sessions: int, armed: int, window_s: float) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="bench-host-"))
    started = time.perf_counter()
    await write_armed(root, sessions, armed - 1, int(now_ms()) + 2 * DAY_MS)
    written = time.perf_counter()
    lateness: list[float] = []
    targets: dict[str, float] = {}
    done = trio.Event()

    def observe(value: object) -> None:
        if isinstance(value, EventAppended) and value.event.type == "schedule/change":
            data = value.event.value()
            if data["operation"] == "dispatch" and value.session_id in targets:
                lateness.append(now_ms() - targets[value.session_id])
                if len(lateness) == sessions:
                    done.set()

    async with open_host(HostConfig(root=root), adapters={"scripted": ScriptedAdapter()}) as host:
        host.subscribe(observe)
        for s in range(sessions):
            await host.resume(f"r{s}")
        resumed = time.perf_counter()
        base = now_ms() + 15_000
        spread = window_s * 1000 / sessions
        for s in range(sessions):
            target = int(base + s * spread)
            targets[f"r{s}"] = target
            await turn(host, f"r{s}", f"remind me at {schedule.format_instant(target)} to ping {s}")
        created = time.perf_counter()
        if now_ms() > base:
            print(f"  (creating the due reminders took past the first target by {now_ms() - base:.0f} ms)")
        with trio.move_on_after(window_s + 120):
            await done.wait()
        for live in host.live_sessions():
            await live.agent.when_idle()
        active = sum(len(schedule.fold(live.session.events, 0).active) for live in host.live_sessions())
    return {
        "lateness": lateness,
        "write_s": written - started,
        "resume_s": resumed - written,
        "create_s": created - resumed,
        "armed_left": active,
    }


async def sleep_lateness(count: int, window_s: float) -> list[float]:
    lateness: list[float] = []
    base = now_ms() + 2_000
    spread = window_s * 1000 / count

    async def one(target: float) -> None:
        await trio.sleep(max(0.0, (target - now_ms()) / 1000))
        lateness.append(now_ms() - target)

    async with trio.open_nursery() as nursery:
        for s in range(count):
            nursery.start_soon(one, int(base + s * spread))
    return lateness


def print_lateness(name: str, values: list[float]) -> None:
    p50, p99, worst = quantiles(values)
    print(f"  {name:<52} p50 {p50:7.1f} ms  p99 {p99:7.1f} ms  max {worst:7.1f} ms  (n={len(values)})")


# --- 3. start-up of the console script ----------------------------------------------------------


def startup_seconds(argv: list[str], runs: int, stdin: bytes = b"") -> float:
    """The median wall time of ``argv`` from spawn to exit."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, input=stdin, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def print_startup(runs: int) -> None:
    python, turnlog = sys.executable, str(Path(sys.executable).with_name("turnlog"))
    with tempfile.TemporaryDirectory() as root:
        cases = [
            ("baseline: python -c pass", [python, "-c", "pass"], b""),
            ("baseline: python -c 'import eventlog.cli'", [python, "-c", "import eventlog.cli"], b""),
            ("baseline: python -c 'import host.cli._logcommands'", [python, "-c", "import host.cli._logcommands"], b""),
            ("baseline: python -c 'import host.cli._commands'", [python, "-c", "import host.cli._commands"], b""),
            ("turnlog --version", [turnlog, "--version"], b""),
            ("turnlog --help", [turnlog, "--help"], b""),
            ("turnlog ls --root R", [turnlog, "ls", "--root", root], b""),
            ("turnlog serve (session/list, then EOF)", [turnlog, "serve", "--root", root, "--no-time-context"],
             b'{"jsonrpc":"2.0","id":1,"method":"session/list"}\n'),
        ]
        for name, argv, stdin in cases:
            print(f"  {name:<52} {startup_seconds(argv, runs) * 1000:7.0f} ms")


async def main(args: argparse.Namespace) -> None:
    print(f"per-turn overhead ({args.turns} turns each; scripted model, real files, durable before idle)")
    report("baseline: scripted adapter alone (one request)", *await adapter_only(args.turns), unit="calls")
    report("baseline: bare eventlog, a turn's 8 events + flush", *await bare_eventlog(args.turns))
    report("host, one session, no time context", *await sequential_turns(args.turns, time_context=False))
    report("host, one session, time context on", *await sequential_turns(args.turns, time_context=True))
    report("host via JSON-RPC server in process, no time context", *await rpc_turns(args.turns))
    report("host, 50 sessions concurrently, no time context", *await concurrent_turns(50, max(1, args.turns // 10)))

    print(f"\nreminder lateness ({args.sessions} live sessions x {args.armed} armed = "
          f"{args.sessions * args.armed} armed; {args.sessions} fall due over {args.window:.0f} s, real clock)")
    print_lateness("baseline: bare trio.sleep, one task per target", await sleep_lateness(args.sessions, args.window))
    result = await reminder_lateness(args.sessions, args.armed, args.window)
    print_lateness("host: target -> dispatch appended", result["lateness"])
    print(f"  setup: files {result['write_s']:.1f} s, resume {result['resume_s']:.1f} s, "
          f"create due reminders via prompts {result['create_s']:.1f} s; "
          f"{result['armed_left']} reminders still armed afterwards")

    print(f"\nstart-up of the console script (median of {args.runs} runs, spawn to exit)")
    await trio.to_thread.run_sync(print_startup, args.runs)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--armed", type=int, default=10)
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--runs", type=int, default=7)
    zoneinfo.reset_tzpath(to=())
    trio.run(main, parser.parse_args())
