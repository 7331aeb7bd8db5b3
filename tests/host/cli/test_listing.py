"""``turnlog ls`` (host §7.4): newest activity first, with a title, the last activity, turns, active
reminders and whether the session is open elsewhere; ``--json`` is eventlog's listing unchanged.
Goldens of the table in a fixed zone and in UTC at a fixed "now"; the command as a process."""

from __future__ import annotations

import json
import shutil
import subprocess
import zoneinfo
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from eventlog import SessionStore
from eventlog.values import format_instant
from host.cli._listing import _listed, ls_rows, newest_first, table
from host.cli._sessions import summarize, writer_lock_held
from host.cli._when import Zone
from tests.host.cli.goldens import check_golden
from tests.host.process_support import TURNLOG, clean_env

REPO = Path(__file__).resolve().parents[3]
NOW = 1_770_728_400_000  # 2026-02-10T13:00:00Z, an hour after reminders-1 was written
IDS = ("demo-1", "demo-1-b", "interrupted-1", "packed-1", "reminders-1", "torn-1")


@pytest.fixture(autouse=True)
def _tzdata() -> Iterator[None]:
    zoneinfo.reset_tzpath(to=())
    yield
    zoneinfo.reset_tzpath()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    store = tmp_path / "sessions"
    store.mkdir()
    for name in IDS:
        shutil.copyfile(REPO / "fixtures" / f"{name}.jsonl", store / f"{name}.jsonl")
    (store / "broken.jsonl").write_text("not a header\n")
    (store / "active-1.jsonl").write_text(active_log())
    return store


def active_log() -> str:
    """A session whose two reminders are still ahead at NOW (due in 5 min and in 2 h)."""
    created = NOW - 10 * 60_000

    def record(seq: int, kind: str, data: object) -> str:
        envelope = {"type": kind, "seq": seq, "time": created + seq, "data": data}
        if kind == "user/message":
            envelope["surfaceOp"] = "append"
        return json.dumps(envelope, separators=(",", ":"))

    def create(rid: str, prompt: str, after_s: int) -> dict[str, object]:
        due = format_instant(NOW + after_s * 1000)
        return {"version": 1, "operation": "create",
                "schedule": {"id": rid, "kind": "after", "prompt": prompt, "afterSeconds": after_s, "scheduledAt": due}}

    prompt = {"id": "m-1", "role": "user", "source": {"kind": "user", "rpcId": "r"},
              "content": [{"type": "text", "text": "remind me to stretch\nand to eat"}]}
    lines = [
        json.dumps({"type": "session", "version": 0, "id": "active-1", "createdAt": created, "cwd": "/home/ana"},
                   separators=(",", ":")),
        record(0, "turn/start", {"turn": 1}),
        record(1, "user/message", prompt),
        record(2, "schedule/change", create("schedule-1", "stretch", 300)),
        record(3, "schedule/change", create("schedule-2", "eat", 7200)),
        record(4, "turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
    ]
    return "".join(line + "\n" for line in lines)


def listing(root: Path, zone: Zone, *, long: bool = False) -> str:
    infos = trio.run(SessionStore(root).list)
    listed = newest_first([_listed(info) for info in infos])
    return "".join(line + "\n" for line in table(ls_rows(listed, zone=zone, now_ms=NOW, long=long)))


@pytest.mark.parametrize("zone", ["Asia/Shanghai", "UTC"])
def test_the_table(root: Path, zone: str) -> None:
    label = zone.replace("/", "-")
    check_golden(f"ls.{label}.txt", listing(root, Zone.named(zone)))
    check_golden(f"ls.long.{label}.txt", listing(root, Zone.named(zone), long=True))


def test_summaries(root: Path) -> None:
    from eventlog import read_log

    snapshot = read_log(root / "reminders-1.jsonl")
    summary = summarize(snapshot.header, snapshot.events)
    assert summary.title == "Remind me in 5 seconds to stretch, and every 10 minutes to…"  # one line, cut
    assert (summary.turns, summary.last_ms) == (4, snapshot.events[-1].time)
    assert summary.active == ()  # schedule-1 fired, schedule-2 was deleted
    shown = listing(root, Zone.named("UTC")).splitlines()
    assert shown[0].split() == ["ID", "LAST", "ACTIVE", "TURNS", "REMINDERS", "OPEN", "TITLE"]
    order = [line.split()[0] for line in shown[1:]]
    assert order[:2] == ["active-1", "reminders-1"] and order[-1] == "broken"  # newest first, problems last
    active = next(line for line in shown if line.startswith("active-1 "))
    assert "  2, next 13:05  " in active and active.endswith("remind me to stretch and to eat")


def test_a_held_writer_lock_is_seen_without_being_taken(tmp_path: Path) -> None:
    holder = subprocess.Popen([str(TURNLOG), "chat", "--root", str(tmp_path), "--session", "held", "--no-time-context"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env())
    try:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.write(b"hi\n")
        holder.stdin.flush()
        while b"You said: hi" not in holder.stdout.readline():
            pass
        assert writer_lock_held(tmp_path / "held.jsonl")
        done = subprocess.run([str(TURNLOG), "ls", "--root", str(tmp_path)], capture_output=True, text=True,
                              check=False, env=clean_env(), timeout=60)
        row = done.stdout.splitlines()[1].split()
        assert row[0] == "held" and "open" in row and row[-1] == "hi"
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    assert not writer_lock_held(tmp_path / "held.jsonl")  # the probe never kept it
    done = subprocess.run([str(TURNLOG), "ls", "--root", str(tmp_path)], capture_output=True, text=True,
                          check=False, env=clean_env(), timeout=60)
    assert "open" not in done.stdout.splitlines()[1].split()


def run_ls(*args: str, tz: str = "Asia/Shanghai") -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(TURNLOG), "ls", *args], capture_output=True, text=True, check=False,
                          env=clean_env(TZ=tz), timeout=60)


def test_the_command(root: Path, tmp_path: Path) -> None:
    done = run_ls("--root", str(root))
    assert done.returncode == 0 and done.stderr == ""
    lines = done.stdout.splitlines()
    assert len(lines) == 1 + len(IDS) + 2
    assert lines[2].startswith("reminders-1  ") and "2026-02-10 20:11 (" in lines[2]  # in Shanghai
    assert "2, next 2026-02-10 21:05" in lines[1]
    limited = run_ls("--root", str(root), "-n", "2").stdout.splitlines()
    assert [line.split()[0] for line in limited] == [line.split()[0] for line in lines[:3]]
    assert "2026-02-10 12:11 (" in run_ls("--root", str(root), "--utc").stdout.splitlines()[2]
    # --json is eventlog's listing, unchanged
    listed = json.loads(run_ls("--root", str(root), "--json").stdout)
    assert [list(row) for row in listed] == [["id", "path", "bytes", "header", "problem", "layout", "encoding"]] * len(listed)
    assert run_ls("--root", str(root), "--json", "-n", "1").returncode == 2
    missing = run_ls("--root", str(tmp_path / "missing"))
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr == (f"turnlog: no session root at {tmp_path / 'missing'} (nothing has been stored there yet: "
                              "start with turnlog chat, or pass --root DIR)\n")
    (tmp_path / "empty").mkdir()
    assert run_ls("--root", str(tmp_path / "empty")).stdout == ""
