"""Soak test of ``turnlog serve`` (run by hand; not collected by pytest):

    .venv/bin/python tests/bench/soak.py [--minutes 10] [--sessions 100] [--kill-every 45]

One ``turnlog serve`` process takes a steady load of prompts across ``--sessions`` sessions: most
are plain, one in four asks for a reminder 3-30 s ahead. Every ``--kill-every`` seconds it is
killed with SIGKILL and started again (the sessions with reminders pending are resumed, so overdue
ones fire). When the process may mount (root), the root is a small tmpfs that a ballast file fills
for a few seconds every ``--fill-every`` seconds; otherwise the disk part is skipped, and the
report says so. At the end every session is resumed once more and, after a grace period, the logs
— the only authority — are read and the report printed:

- reminders created, delivered (a reminder turn answered ``Reminder: <prompt>``), missed (due
  before the grace period ended, never delivered), split into those whose dispatch was durable
  (documented loss, schedule §11.10: a durable dispatch means "queued" and a crash after it is not
  retried) and those never dispatched (a bug);
- dispatches per reminder (never more than one: a dispatch is durable before its turn);
- duplicated deliveries, each inside the documented window (schedule §11.10: the earlier
  delivery's turn never ended because the process was killed or storage failed) or outside it;
- prompt replies: every ``session/prompt`` gets exactly one reply from the process it was sent
  to, or none when that process was killed first; refusals are counted by ``data.code`` (a full
  disk refuses with ``storage``); prompts keep arriving while the disk is full;
- accepted prompts whose receipt is in a log (by ``rpcId``), and those missing, split into "a
  SIGKILL or a disk fill came within 10 s of the acceptance" (the receipt was appended but its
  flush had not happened yet — host §4.3.2 replies before the turn) and the rest (a bug);
- the server's RSS over time.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from eventlog import EventLogError, read_log


class Server:
    """One ``turnlog serve`` process; a thread drains its output."""

    def __init__(self, root: Path, home: Path, ids: Iterator[int]) -> None:
        env = {**os.environ, "TURNLOG_HOME": str(home), "TZ": "UTC"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "host", "serve", "--root", str(root), "--no-time-context"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.replies: dict[str, list[dict[str, Any]]] = defaultdict(list)  # request id -> replies
        self.sent: dict[str, float] = {}  # session/prompt request id -> when it was sent
        self.tracebacks: list[str] = []
        threading.Thread(target=self._out, daemon=True).start()
        threading.Thread(target=self._err, daemon=True).start()
        self._ids = ids  # shared by every process of the run, so an rpcId names one prompt

    def _out(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            with contextlib.suppress(ValueError):
                frame = json.loads(raw)
                if "method" not in frame and isinstance(frame.get("id"), str):
                    self.replies[frame["id"]].append(frame)

    def _err(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            if b"Traceback" in raw:
                self.tracebacks.append(raw.decode("utf-8", "replace"))

    def send(self, method: str, params: dict[str, Any]) -> None:
        rid = f"soak-{next(self._ids)}"
        frame = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        if method == "session/prompt":
            self.sent[rid] = time.time()
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError, OSError):
            self.proc.stdin.write(json.dumps(frame).encode() + b"\n")
            self.proc.stdin.flush()

    def rss_mib(self) -> float:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        self.send("shutdown", {})
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()


def mount_tmpfs(path: Path, mib: int) -> bool:
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={mib}m", "tmpfs", str(path)], check=False, capture_output=True
    )
    return done.returncode == 0


def fill_for(path: Path, seconds: float) -> None:
    """Fill the file system holding ``path`` with a ballast file, keep it full, then free it."""
    with contextlib.suppress(OSError), open(path, "wb") as ballast:
        chunk = b"\0" * (1 << 20)
        while True:
            ballast.write(chunk)
            ballast.flush()
    time.sleep(seconds)
    path.unlink()


class Replies:
    """What the prompts of every server process of the run got back."""

    def __init__(self) -> None:
        self.accepted: dict[str, float] = {}  # rpcId -> when it was sent
        self.refused: Counter[str] = Counter()
        self.unanswered_at_kill = 0
        self.answered_twice: list[str] = []

    def take(self, server: Server) -> None:
        """Account for ``server``'s prompts; call it once the process has exited."""
        for rid, sent in server.sent.items():
            got = server.replies.get(rid, [])
            if not got:
                self.unanswered_at_kill += 1
            elif len(got) > 1:
                self.answered_twice.append(rid)
            elif "error" in got[0]:
                self.refused[str(got[0]["error"].get("data", {}).get("code"))] += 1
            else:
                self.accepted[rid] = sent


def reminder_texts(event: dict[str, Any]) -> list[str]:
    """The prompts a scripted reminder reply names (``Reminder: p`` or ``Reminders: p1; p2``)."""
    for block in event["data"]["message"]["content"]:
        text = block.get("text", "") if block.get("type") == "text" else ""
        if text.startswith("Reminder: "):
            return [text.removeprefix("Reminder: ")]
        if text.startswith("Reminders: "):
            return text.removeprefix("Reminders: ").split("; ")
    return []


def analyse(root: Path, grace_end_ms: int) -> dict[str, Any]:
    created: dict[str, int] = {}  # prompt -> due (ms)
    dispatches: Counter[str] = Counter()
    deliveries: dict[str, list[bool]] = defaultdict(list)  # prompt -> whether each turn ended
    unreadable = []
    all_records = []
    for path in sorted(root.glob("*.jsonl")):
        try:
            records = [msgspec.json.decode(event.to_json()) for event in read_log(path).events]
        except EventLogError as exc:
            unreadable.append(f"{path.name}: {exc}")
            continue
        all_records.append(records)
        ids: dict[str, str] = {}
        ended_turns = {
            r["data"]["turn"]
            for r in records
            if r["type"] == "turn/end" and r["data"]["reason"]["kind"] == "completed"
        }
        for r in records:
            if r["type"] == "schedule/change" and r["data"]["operation"] == "create":
                sch = r["data"]["schedule"]
                ids[sch["id"]] = sch["prompt"]
                created[sch["prompt"]] = r["time"] + sch.get("afterSeconds", 0) * 1000
            elif r["type"] == "schedule/change" and r["data"]["operation"] == "dispatch":
                dispatches[ids.get(r["data"]["id"], r["data"]["id"])] += 1
            elif r["type"] == "assistant/message":
                for prompt in reminder_texts(r):
                    deliveries[prompt].append(r["data"]["turn"] in ended_turns)
    due = {p for p, at in created.items() if at <= grace_end_ms}
    receipts = {
        r["data"]["source"]["rpcId"]
        for records in all_records
        for r in records
        if r["type"] == "user/message" and r["data"].get("source", {}).get("kind") == "user"
    }
    missed = sorted(p for p in due if not deliveries.get(p))
    duplicated = {p: d for p, d in deliveries.items() if len(d) > 1}
    inside = sum(1 for d in duplicated.values() if not all(d[:-1]))
    return {
        "created": len(created),
        "due": len(due),
        "delivered": sum(1 for p in created if deliveries.get(p)),
        "missed": missed,
        "missed_undispatched": [p for p in missed if not dispatches[p]],
        "dispatched_twice": sorted(p for p, n in dispatches.items() if n > 1),
        "duplicated": len(duplicated),
        "duplicated_inside_window": inside,
        "duplicated_outside_window": len(duplicated) - inside,
        "unreadable": unreadable,
        "receipts": receipts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--rate", type=float, default=10.0, help="prompts per second")
    parser.add_argument("--kill-every", type=float, default=45.0)
    parser.add_argument("--fill-every", type=float, default=70.0)
    parser.add_argument("--tmpfs-mib", type=int, default=64)
    parser.add_argument("--grace", type=float, default=40.0, help="seconds after the load for due reminders")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="turnlog-soak-"))
    root, home = work / "root", work / "home"
    root.mkdir()
    home.mkdir()
    tmpfs = mount_tmpfs(root, args.tmpfs_mib)
    print(
        f"root {root} ({'a ' + str(args.tmpfs_mib) + ' MiB tmpfs, filled every ' + str(args.fill_every) + ' s' if tmpfs else 'no tmpfs: not root or mount refused; disk-full part skipped'})"
    )
    rng = random.Random(1)
    sessions = [f"soak-{i:03d}" for i in range(args.sessions)]
    ids = itertools.count()
    replies = Replies()
    disturbed: list[float] = []  # wall times of SIGKILLs and disk fills
    server = Server(root, home, ids)
    server.send("initialize", {"provider": "scripted", "model": "scripted"})
    filling: threading.Thread | None = None
    start = time.monotonic()
    next_kill, next_fill, next_rss = start + args.kill_every, start + args.fill_every, start
    reminders, kills, fills, rss, tracebacks = 0, 0, 0, [], []
    end = start + args.minutes * 60
    while (now := time.monotonic()) < end:
        session = rng.choice(sessions)
        if rng.random() < 0.25:
            reminders += 1
            text = f"remind me in {rng.randint(3, 30)} seconds to r{reminders}"
        else:
            text = "hi"
        server.send(
            "session/prompt",
            {
                "sessionId": session,
                "contentBlocks": [{"type": "text", "text": text}],
                "clientTimeZone": "UTC",
            },
        )
        if now >= next_rss:
            rss.append((round(now - start), server.rss_mib()))
            next_rss += 30
        if now >= next_kill:
            tracebacks += server.tracebacks
            server.kill()
            disturbed.append(time.time())
            replies.take(server)
            kills += 1
            server = Server(root, home, ids)
            server.send("initialize", {"provider": "scripted", "model": "scripted"})
            for s in sessions:
                server.send("session/resume", {"sessionId": s})
            next_kill += args.kill_every
        if tmpfs and now >= next_fill and (filling is None or not filling.is_alive()):
            fills += 1
            disturbed.append(time.time())
            # The disk stays full for 3 s in a thread while prompts keep coming.
            filling = threading.Thread(target=fill_for, args=(root / ".ballast", 3.0), daemon=True)
            filling.start()
            next_fill += args.fill_every
        time.sleep(1 / args.rate)
    for s in sessions:  # make every session live, so what fell due fires
        server.send("session/resume", {"sessionId": s})
    time.sleep(args.grace)
    grace_end_ms = int(time.time() * 1000) - 5000  # a reminder due this late may still be on its way
    rss.append((round(time.monotonic() - start), server.rss_mib()))
    tracebacks += server.tracebacks
    server.stop()
    replies.take(server)
    if filling is not None:
        filling.join()
    report = analyse(root, grace_end_ms)
    missing = [rid for rid in replies.accepted if rid not in report["receipts"]]
    excused = [rid for rid in missing if any(0 <= t - replies.accepted[rid] <= 10 for t in disturbed)]
    print(
        f"{args.minutes:g} min, {args.sessions} sessions, {kills} SIGKILLs, {fills} disk fills, {reminders} reminder prompts"
    )
    print(
        f"reminders created {report['created']}, due {report['due']}, delivered {report['delivered']}, missed {len(report['missed'])} "
        f"(after a durable dispatch, documented {len(report['missed']) - len(report['missed_undispatched'])}; "
        f"never dispatched {len(report['missed_undispatched'])})"
    )
    print(
        f"dispatched twice {len(report['dispatched_twice'])}; duplicated deliveries {report['duplicated']} "
        f"(inside the documented window {report['duplicated_inside_window']}, outside {report['duplicated_outside_window']})"
    )
    print("RSS MiB over time: " + ", ".join(f"{t}s {m:.0f}" for t, m in rss))
    print(
        f"prompts {len(replies.accepted) + sum(replies.refused.values()) + replies.unanswered_at_kill}: "
        f"accepted {len(replies.accepted)}, refused {dict(replies.refused)}, unanswered at a SIGKILL "
        f"{replies.unanswered_at_kill}, answered twice {len(replies.answered_twice)}"
    )
    print(
        f"accepted prompts with their receipt in a log {len(replies.accepted) - len(missing)}; missing "
        f"{len(missing)} (within 10 s before a SIGKILL or disk fill {len(excused)}, otherwise {len(missing) - len(excused)})"
    )
    print(f"unreadable logs {len(report['unreadable'])}; tracebacks on stderr {len(tracebacks)}")
    unexcused = [f"receipt missing: {rid}" for rid in missing if rid not in excused]
    for line in report["missed_undispatched"][:10] + unexcused[:10] + report["unreadable"][:5] + tracebacks[:5]:
        print("  " + line)
    if tmpfs:
        subprocess.run(["umount", str(root)], check=False)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
