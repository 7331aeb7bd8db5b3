"""``turnlog show`` (host §7.4): a session as a readable conversation, on the vendored logs (turnlog's
and deepseek-harness's, packed rows included), in a fixed zone and with ``--utc``; colour and the
pager on a terminal; ``--json``; the errors. The sessions are older than a week, so every time in
the transcript is absolute and the goldens hold on any day."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pexpect
import pytest

from host.cli._markdown import render as markdown
from host.cli._style import PLAIN, Style
from tests.host.cli.goldens import check_golden
from tests.host.process_support import TURNLOG, clean_env

REPO = Path(__file__).resolve().parents[3]
FIXTURES = ("reminders-1", "demo-1-b", "interrupted-1", "deepseek-harness/tool-edit-packed-rows",
            "deepseek-harness/fork-child")


def show(*args: str, tz: str = "Asia/Shanghai", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(TURNLOG), "show", *args], capture_output=True, text=True, check=False, cwd=REPO,
                          env=clean_env(TZ=tz, **(env or {})), timeout=60)


@pytest.mark.parametrize("name", FIXTURES)
@pytest.mark.parametrize("zone", ["Asia/Shanghai", "utc"])
def test_transcripts_of_the_vendored_logs(name: str, zone: str) -> None:
    flags = ["--utc"] if zone == "utc" else []
    done = show(f"fixtures/{name}.jsonl", *flags)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "\x1b[" not in done.stdout  # not a terminal: no colour, no pager
    check_golden(f"show.{name.replace('/', '.')}.{zone.replace('/', '-')}.txt", done.stdout)


def test_a_packed_dsh_log_reads_as_its_conversation() -> None:
    out = show("fixtures/deepseek-harness/multi-turn-packed-rows.jsonl", "--utc").stdout
    lines = out.splitlines()
    assert lines[0].startswith("session 5f0e8a2c-1b7d-4c3e-9a6f-2d4b8c0e1f3a · created ")
    assert sum(line.startswith("── turn ") for line in lines) == 2
    assert sum(line.startswith("assistant · ") for line in lines) >= 2 and "assistant/chunk" not in out


def test_json_lists_the_entries_for_programs() -> None:
    done = show("fixtures/reminders-1.jsonl", "--json")
    document = json.loads(done.stdout)
    assert list(document) == ["id", "path", "header", "entries"]
    assert document["id"] == "reminders-1" and document["header"]["createdAt"] == 1770724800000
    kinds = [entry["kind"] for entry in document["entries"]]
    assert kinds[:4] == ["turn-start", "user", "time", "tool-call"]
    assert kinds.count("reminder") == 2 and kinds.count("turn-end") == 4
    first = document["entries"][1]
    assert list(first) == ["kind", "seq", "time", "turn", "text", "clientTimeZone"]
    assert (first["seq"], first["turn"], first["clientTimeZone"]) == (4, 1, "Europe/Berlin")
    assert first["text"] == "Remind me in 5 seconds to stretch, and every 10 minutes to drink water."
    assert done.stdout.count("\n") == 1


def test_not_found_names_the_root_and_suggests_ls(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    done = show("nope", "--root", str(tmp_path / "root"))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f'turnlog: session "nope" not found in {tmp_path / "root"}; see turnlog ls\n'
    for name in ("kitchen", "kitten"):
        (tmp_path / "root" / f"{name}.jsonl").write_text(f'{{"type":"session","version":0,"id":"{name}","createdAt":1}}\n')
    done = show("kitchn", "--root", str(tmp_path / "root"))
    assert done.stderr == (f'turnlog: session "kitchn" not found in {tmp_path / "root"} (did you mean kitchen or kitten?); '
                           "see turnlog ls\n")
    done = show("nope", "--root", str(tmp_path / "missing"))
    assert done.returncode == 1 and done.stderr.startswith(f"turnlog: no session root at {tmp_path / 'missing'} ")
    done = show("not an id")
    assert done.returncode == 2 and done.stderr.startswith("turnlog: ") and "e.g. ./not an id" in done.stderr
    done = show("./nope.jsonl")
    assert (done.returncode, done.stderr) == (1, 'turnlog: session log "./nope.jsonl" not found\n')


def test_a_terminal_gets_colour_through_the_pager(tmp_path: Path) -> None:
    record = tmp_path / "paged.txt"
    pager = tmp_path / "pager.sh"
    pager.write_text(f'#!/bin/sh\necho "LESS=$LESS" > {record}\ncat >> {record}\n')
    pager.chmod(0o755)
    for extra, coloured in (({}, True), ({"NO_COLOR": "1"}, False)):
        env = clean_env(TZ="UTC", TERM="xterm", PAGER=str(pager), **extra)
        if not extra:
            env.pop("NO_COLOR", None)
        child = pexpect.spawn(str(TURNLOG), ["show", "fixtures/reminders-1.jsonl"], cwd=str(REPO), env=env)
        child.expect(pexpect.EOF, timeout=60)
        child.close()
        assert child.exitstatus == 0
        paged = record.read_text()
        assert paged.startswith("LESS=FRX\n")  # short output prints and stays; colours pass through
        assert ("\x1b[" in paged) is coloured
        assert "Reminder: time to stretch." in paged
    env = clean_env(TZ="UTC", TERM="xterm", PAGER=str(pager), LESS="-S")
    record.unlink()
    child = pexpect.spawn(str(TURNLOG), ["show", "fixtures/reminders-1.jsonl", "--no-pager"], cwd=str(REPO), env=env)
    child.expect(pexpect.EOF, timeout=60)
    assert not record.exists() and b"Reminder: time to stretch." in child.before


def test_markdown_is_styled_only_with_colour() -> None:
    text = "# Plan\n- **bold** and `code`\n1. see [docs](https://x.org)\n```\nraw *text*\n```\n> quoted"
    assert markdown(text, PLAIN) == text.split("\n")
    styled = markdown(text, Style(True))
    assert styled[0] == "\x1b[1;4mPlan\x1b[0m"
    assert styled[1] == "• \x1b[1mbold\x1b[0m and \x1b[36mcode\x1b[0m"
    assert styled[2] == "1. see \x1b[4mdocs\x1b[0m (\x1b[2mhttps://x.org\x1b[0m)"
    assert styled[3] == "\x1b[2m│ \x1b[0mraw *text*"  # code is not emphasised
    assert styled[4] == "\x1b[2m│ \x1b[0m\x1b[3mquoted\x1b[0m"
    assert len(styled) == 5


def test_show_never_writes(tmp_path: Path) -> None:
    copy = tmp_path / "torn.jsonl"
    copy.write_bytes((REPO / "fixtures" / "torn-1.jsonl").read_bytes())
    before = copy.read_bytes(), os.stat(copy).st_mtime_ns
    assert show(str(copy)).returncode == 0
    assert (copy.read_bytes(), os.stat(copy).st_mtime_ns) == before
