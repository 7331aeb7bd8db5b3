"""The log commands (log-format §10) through ``eventlog.cli.main`` and ``python -m eventlog``.

Expected outputs are derived from the worked examples of log-format §12 (tests/eventlog/spec_examples.py)
and the hand-written fixtures, never from the code under test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import zoneinfo
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventlog.cli import main
from tests.eventlog.spec_examples import E1_LINES, E5_CLOSERS, E9_EVENTS, log_bytes

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
TIMEOUT = 30.0
FIXTURE_IDS = ["demo-1", "demo-1-b", "interrupted-1", "packed-1", "reminders-1", "torn-1"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A store root holding copies of every fixture."""
    store = tmp_path / "sessions"
    store.mkdir()
    for name in FIXTURE_IDS:
        shutil.copyfile(FIXTURES / f"{name}.jsonl", store / f"{name}.jsonl")
    return store


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path, **kwargs) -> tuple[int, str, str]:
    code = main([str(a) for a in argv], **kwargs)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str | Path, **kwargs):
    code, out, err = run(capsys, *argv, "--json", **kwargs)
    assert code == 0, err
    return json.loads(out), out


def snapshot_dir(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(directory.iterdir())
    }


def error_line(err: str) -> str:
    """The one error line of a failed command."""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("turnlog: "), err
    return lines[0]


# =========================================================================== ls


def test_ls_of_an_empty_root_prints_nothing(capsys, tmp_path: Path) -> None:
    assert run(capsys, "ls", "--root", tmp_path) == (0, "", "")
    data, _ = run_json(capsys, "ls", "--root", tmp_path)
    assert data == []


def test_ls_json_lists_headers_in_created_order_problems_last(capsys, root: Path) -> None:
    (root / "broken.jsonl").write_bytes(b"[0]\n")
    (root / "demo-1.jsonl.0123456789ab.tmp").write_bytes(b"x")  # ignored
    (root / "notes.txt").write_text("ignored")
    data, _ = run_json(capsys, "ls", "--root", root)
    # createdAt order, ties by id: packed-1 (900), then demo-1, interrupted-1, torn-1 (all
    # 1767261600000), demo-1-b (1767268800000), reminders-1 (1770724800000); problems last
    assert [entry["id"] for entry in data] == [
        "packed-1", "demo-1", "interrupted-1", "torn-1", "demo-1-b", "reminders-1", "broken",
    ]
    for entry in data:
        assert list(entry) == ["id", "path", "bytes", "header", "problem", "layout", "encoding"]
    demo = data[1]
    assert demo["path"] == str(root / "demo-1.jsonl")
    assert demo["bytes"] == 887
    assert demo["problem"] is None
    assert demo["header"] == json.loads(E1_LINES[0])
    assert list(demo["header"]) == list(json.loads(E1_LINES[0]))
    broken = data[-1]
    assert broken["header"] is None
    assert "first line is not a session header" in broken["problem"]


def test_ls_human_has_the_columns(capsys, root: Path) -> None:
    code, out, err = run(capsys, "ls", "--root", root)
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "CREATED", "BYTES", "PARENT", "CWD"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["demo-1"] == ["demo-1", "2026-01-01T10:00:00.000Z", "887", "-", "/home/ana"]
    assert rows["demo-1-b"] == [
        "demo-1-b", "2026-01-01T12:00:00.000Z", "996", "demo-1@6", "/home/ana",
    ]
    assert rows["packed-1"][1] == "1970-01-01T00:00:00.900Z"


def test_ls_shows_a_problem_in_place_of_the_header(capsys, root: Path) -> None:
    (root / "v3.jsonl").write_bytes(b'{"type":"session","version":3,"id":"v3"}\n')
    code, out, _ = run(capsys, "ls", "--root", root)
    assert code == 0
    last = out.splitlines()[-1]
    assert last.startswith("v3 ") and "log format v3" in last


# =========================================================================== inspect


def test_inspect_json_of_e1(capsys, root: Path) -> None:
    data, raw = run_json(capsys, "inspect", "demo-1", "--root", root)
    assert list(data) == [
        "path", "id", "header", "events", "fileBytes", "committedBytes", "repair", "layout", "encoding", "frames",
    ]
    assert data["path"] == str(root / "demo-1.jsonl")
    assert data["id"] == "demo-1"
    assert data["header"] == json.loads(E1_LINES[0])
    assert (data["fileBytes"], data["committedBytes"], data["repair"]) == (887, 887, None)
    # events are the canonical records, byte for byte
    assert b'"events":[' + b",".join(E1_LINES[1:]) + b"]" in raw.encode()


def test_inspect_json_of_e2_torn_tail_reports_and_never_writes(capsys, root: Path) -> None:
    before = snapshot_dir(root)
    data, _ = run_json(capsys, "inspect", "torn-1", "--root", root)
    assert len(data["events"]) == 6
    assert (data["fileBytes"], data["committedBytes"]) == (919, 887)
    repair = data["repair"]
    assert list(repair) == [
        "truncateTo", "droppedBytes", "droppedRecords", "defect", "openTurn", "closers",
    ]
    assert list(repair["defect"]) == ["line", "offset", "reason", "detail"]
    assert repair["defect"]["detail"]
    repair["defect"]["detail"] = "…"
    assert repair == {
        "truncateTo": 887, "droppedBytes": 32, "droppedRecords": 0,
        "defect": {"line": 8, "offset": 887, "reason": "torn final record", "detail": "…"},
        "openTurn": None, "closers": [],
    }
    assert snapshot_dir(root) == before


def test_inspect_json_of_e5_shows_the_closers(capsys, root: Path) -> None:
    data, raw = run_json(capsys, "inspect", "interrupted-1", "--root", root)
    assert [e["seq"] for e in data["events"]] == list(range(11))
    repair = data["repair"]
    assert repair["truncateTo"] is None
    assert (repair["droppedBytes"], repair["droppedRecords"], repair["defect"]) == (0, 0, None)
    assert repair["openTurn"] == 2
    assert b'"closers":[' + b",".join(E5_CLOSERS) + b"]" in raw.encode()


def test_inspect_json_expands_packed_rows(capsys, root: Path) -> None:
    _, raw = run_json(capsys, "inspect", "packed-1", "--root", root)
    assert b",".join(E9_EVENTS) in raw.encode()
    assert b"text-chunks" not in raw.encode()


def test_inspect_filters_apply_to_event_lines(capsys, root: Path) -> None:
    data, _ = run_json(
        capsys, "inspect", "reminders-1", "--root", root, "--type", "schedule/change",
        "--type", "turn/end", "--from", "20",
    )
    assert [(e["seq"], e["type"]) for e in data["events"]] == [
        (21, "schedule/change"), (29, "turn/end"), (31, "schedule/change"), (39, "turn/end"),
        (48, "schedule/change"), (55, "turn/end"),
    ]
    code, out, _ = run(capsys, "inspect", "demo-1", "--root", root, "--type", "step/end")
    assert code == 0
    assert '4  2026-01-01T10:00:01.501Z  step/end  {"turn":1,"step":1}' in out.splitlines()
    assert "turn/start" not in out


def test_inspect_human_output(capsys, root: Path) -> None:
    code, out, err = run(capsys, "inspect", "demo-1", "--root", root)
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert "demo-1" in lines[0]
    for fragment in ("2026-01-01T10:00:00.000Z", "/home/ana", "887"):
        assert fragment in out
    assert '0  2026-01-01T10:00:00.100Z  turn/start  {"turn":1}' in lines
    assert '5  2026-01-01T10:00:01.502Z  turn/end  {"turn":1,"reason":{"kind":"completed"}}' in lines
    # data longer than 80 characters is cut, with an ellipsis, unless --full
    user = json.loads(E1_LINES[3])
    data = json.dumps(user["data"], separators=(",", ":"), ensure_ascii=False)
    assert len(data) > 80
    assert f"2  2026-01-01T10:00:00.102Z  user/message  {data[:80]}…" in lines
    assert lines[-1] == "repair: none needed"
    _, full, _ = run(capsys, "inspect", "demo-1", "--root", root, "--full")
    assert f"2  2026-01-01T10:00:00.102Z  user/message  {data}" in full.splitlines()


def test_event_times_print_as_utc_or_as_the_bare_integer(capsys, tmp_path: Path) -> None:
    # E10: a negative time is valid; a time past year 9999 has no calendar form
    lines = [
        E1_LINES[0],
        b'{"type":"note/a","seq":0,"time":-5,"data":null}',
        b'{"type":"note/b","seq":1,"time":9007199254740991,"data":[1]}',
        b'{"type":"note/c","seq":2,"time":-62135596800000,"data":{}}',
    ]
    (tmp_path / "demo-1.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    code, out, _ = run(capsys, "tail", "demo-1", "--root", tmp_path)
    assert code == 0
    assert out.splitlines() == [
        "0  1969-12-31T23:59:59.995Z  note/a  null",
        "1  9007199254740991  note/b  [1]",
        "2  0001-01-01T00:00:00.000Z  note/c  {}",
    ]


def test_inspect_human_repair_section(capsys, root: Path) -> None:
    _, out, _ = run(capsys, "inspect", "torn-1", "--root", root)
    section = out[out.index("repair:"):]
    for fragment in ("887", "32 bytes", "line 8", "byte 887", "torn final record"):
        assert fragment in section
    _, out, _ = run(capsys, "inspect", "interrupted-1", "--root", root)
    section = out[out.index("repair:"):]
    assert "turn 2" in section
    closer_lines = [line.strip() for line in section.splitlines() if "  2026-" in line]
    assert [line.split("  ")[0] for line in closer_lines] == ["11", "12", "13", "14"]
    assert closer_lines[-1].endswith('turn/end  {"turn":2,"reason":{"kind":"interrupted"}}')


def test_inspect_by_path_never_derives_the_id_from_the_name(capsys, tmp_path: Path) -> None:
    renamed = tmp_path / "copy of demo.jsonl"
    renamed.write_bytes(b"\n".join(E1_LINES) + b"\n")
    data, _ = run_json(capsys, "inspect", renamed)
    assert data["id"] == "demo-1" and data["path"] == str(renamed)


def test_inspect_relative_path(capsys, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "demo-1.jsonl").write_bytes(b"\n".join(E1_LINES) + b"\n")
    monkeypatch.chdir(tmp_path)
    data, _ = run_json(capsys, "inspect", "./demo-1.jsonl", "--root", tmp_path / "empty")
    assert len(data["events"]) == 6


def test_inspect_e3_committed_corruption_fails(capsys, tmp_path: Path) -> None:
    damaged = list(E1_LINES)
    damaged[3] = b'{"type":"user/message","seq":2,"time":1767261600102,"data":{"id":"msg-1"'
    path = tmp_path / "demo-1.jsonl"
    path.write_bytes(b"\n".join(damaged) + b"\n")
    before = path.read_bytes()
    code, out, err = run(capsys, "inspect", "demo-1", "--root", tmp_path)
    assert code == 1 and out == ""
    assert error_line(err).startswith(
        f'turnlog: corrupt session log "{path}": unparsable committed event at line 4, byte 256: '
    )
    assert path.read_bytes() == before


def test_inspect_e11_unsupported_version(capsys, tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"type":"session","version":3,"id":"x"}\n')
    code, _, err = run(capsys, "inspect", "x", "--root", tmp_path)
    assert code == 1
    assert error_line(err) == (
        'turnlog: session "x" uses log format v3, but this turnlog reads only v0: the log was '
        f"written by a newer program — upgrade turnlog to open it (raw log: {path})"
    )


def test_inspect_identity_mismatch(capsys, tmp_path: Path) -> None:
    path = tmp_path / "other.jsonl"
    path.write_bytes(b"\n".join(E1_LINES) + b"\n")
    code, _, err = run(capsys, "inspect", "other", "--root", tmp_path)
    assert code == 1
    assert error_line(err) == (
        f'turnlog: corrupt session log "{path}": requested id "other" does not match header id '
        '"demo-1"'
    )


def test_inspect_missing_session_and_missing_file(capsys, tmp_path: Path) -> None:
    code, _, err = run(capsys, "inspect", "nope", "--root", tmp_path)
    assert (code, error_line(err)) == (1, f'turnlog: session "nope" not found in {tmp_path}; see turnlog ls')
    code, _, err = run(capsys, "inspect", tmp_path / "nope.jsonl")
    assert (code, error_line(err)) == (1, f'turnlog: session log "{tmp_path / "nope.jsonl"}" not found')


def test_a_directory_given_as_a_log_is_named_in_the_error(capsys, tmp_path: Path) -> None:
    directory = tmp_path / "logs"
    directory.mkdir()
    for command in ("inspect", "tail", "fork"):
        code, _, err = run(capsys, command, directory, "--root", tmp_path / "store")
        assert (code, error_line(err)) == (1, f'turnlog: cannot read "{directory}": Is a directory')
    assert run(capsys, "validate", directory)[:2] == (
        1, f'unreadable  {directory}  cannot read "{directory}": Is a directory\n'
    )


def test_paths_that_are_not_utf8_are_printed_not_crashed_on(capsys, tmp_path: Path) -> None:
    # A root and a file whose names hold a byte that is not UTF-8: --json writes the path
    # with \\uXXXX escapes that give its bytes back, human output prints it, nothing crashes.
    root = tmp_path / os.fsdecode(b"r\xff")
    root.mkdir()
    path = root / "demo-1.jsonl"
    path.write_bytes(log_bytes(E1_LINES))
    odd = root / os.fsdecode(b"copy\xfe.jsonl")
    odd.write_bytes(log_bytes(E1_LINES[:3]) + b"junk\n" + log_bytes(E1_LINES[4:]))
    data, _ = run_json(capsys, "inspect", path)
    assert os.fsencode(data["path"]) == os.fsencode(path)
    data, _ = run_json(capsys, "ls", "--root", root)
    assert [os.fsencode(row["path"]) for row in data] == [os.fsencode(path)]
    data, _ = run_json(capsys, "fork", "demo-1", "--root", root, "--id", "kid")
    assert os.fsencode(data["path"]) == os.fsencode(root / "kid.jsonl")
    code, out, _ = run(capsys, "validate", odd, "--json")
    [verdict] = json.loads(out)
    assert code == 1 and verdict["status"] == "corrupt"
    assert os.fsencode(verdict["path"]) == os.fsencode(odd)
    assert os.fsencode(str(odd)) in os.fsencode(verdict["messages"][0])
    # Human output, under a strict UTF-8 stdout (as a UTF-8 locale other than C gives).
    result = subprocess.run(
        [sys.executable, "-m", "eventlog", "inspect", path],
        capture_output=True, timeout=60, cwd=REPO, check=False,
        env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"},
    )
    assert result.returncode == 0, result.stderr
    assert b"path     " + os.fsencode(path) + b"\n" in result.stdout


def test_inspect_deepseek_harness_logs(capsys, dsh: Path) -> None:
    data, _ = run_json(capsys, "inspect", dsh / "fork-parent.jsonl")
    assert len(data["events"]) == 200 and data["repair"] is None
    assert [e["seq"] for e in data["events"]] == list(range(200))
    data, _ = run_json(capsys, "inspect", dsh / "fork-child.jsonl")
    header = data["header"]
    assert (header["origin"], header["delegationDepth"], header["seedLength"]) == (
        "subagent", 1, 42,
    )
    # the header as on disk: this one has no delegationDepth
    data, _ = run_json(capsys, "inspect", dsh / "multi-turn-packed-rows.jsonl")
    first_line = (dsh / "multi-turn-packed-rows.jsonl").read_bytes().split(b"\n", 1)[0]
    assert data["header"] == json.loads(first_line)
    assert "delegationDepth" not in data["header"]
    code, out, _ = run(capsys, "inspect", dsh / "tool-edit-packed-rows.jsonl")
    assert code == 0 and "tool/call" in out and "repair: none needed" in out


# =========================================================================== validate


def test_validate_the_fixture_store(capsys, root: Path) -> None:
    code, out, err = run(capsys, "validate", "--root", root)
    assert code == 0, out + err
    lines = out.splitlines()
    status = {line.split("  ")[1]: line.split("  ")[0] for line in lines if "  " in line}
    assert status == {
        "demo-1": "ok", "demo-1-b": "ok", "interrupted-1": "repairable", "packed-1": "ok",
        "reminders-1": "ok", "torn-1": "repairable",
    }
    assert "ok  demo-1  6 events" in lines
    assert "ok  packed-1  27 events" in lines
    code, _, _ = run(capsys, "validate", "--root", root, "--strict")
    assert code == 1


def test_validate_json_shape(capsys, root: Path) -> None:
    code, out, _ = run(capsys, "validate", "demo-1", "torn-1", "--root", root, "--json")
    assert code == 0
    data = json.loads(out)
    assert [list(v) for v in data] == [["id", "path", "status", "events", "messages"]] * 2
    assert data[0] == {
        "id": "demo-1", "path": str(root / "demo-1.jsonl"), "status": "ok", "events": 6,
        "messages": [],
    }
    assert (data[1]["status"], data[1]["events"]) == ("repairable", 6)
    assert data[1]["messages"]


def test_validate_statuses_for_broken_logs(capsys, tmp_path: Path) -> None:
    damaged = list(E1_LINES)
    damaged[0] = damaged[0].replace(b'"demo-1"', b'"bad-e3"')  # same length: same offsets
    damaged[3] = b'{"type":"user/message","seq":2,"time":1767261600102,"data":{"id":"msg-1"'
    (tmp_path / "bad-e3.jsonl").write_bytes(b"\n".join(damaged) + b"\n")
    (tmp_path / "v3.jsonl").write_bytes(b'{"type":"session","version":3,"id":"v3"}\n')
    (tmp_path / "dir.jsonl").mkdir()
    code, out, _ = run(
        capsys, "validate", "bad-e3", "v3", "missing", tmp_path / "dir.jsonl",
        "--root", tmp_path, "--json",
    )
    assert code == 1
    data = json.loads(out)
    assert [v["status"] for v in data] == ["corrupt", "unsupported", "unreadable", "unreadable"]
    assert all(v["events"] is None and len(v["messages"]) == 1 for v in data)
    assert "unparsable committed event at line 4, byte 256" in data[0]["messages"][0]
    assert data[2]["messages"] == [f'session "missing" not found in {tmp_path}; see turnlog ls']


def test_validate_reports_higher_rule_violations_as_invalid(capsys, tmp_path: Path) -> None:
    lines = list(E1_LINES)
    lines[0] = lines[0].replace(b'"demo-1"', b'"bad-1"')
    lines[1] = b'{"type":"turn/start","seq":0,"time":1767261600100,"data":{"turn":0}}'
    (tmp_path / "bad-1.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    code, out, _ = run(capsys, "validate", "--root", tmp_path, "--json")
    assert code == 1
    (verdict,) = json.loads(out)
    assert (verdict["status"], verdict["events"]) == ("invalid", 6)
    assert any("turn/start" in m for m in verdict["messages"])


def test_validate_surface_fold_violation_is_invalid(capsys, tmp_path: Path) -> None:
    lines = list(E1_LINES)
    lines[0] = lines[0].replace(b'"demo-1"', b'"fold-1"')
    # the assistant message replaces nodes 0..2, which are not in the surface
    lines[4] = lines[4].replace(
        b'"surfaceOp":"append"', b'"surfaceOp":{"op":"replace","start":0,"end":2},"sourceEventSeqs":[2]'
    )
    (tmp_path / "fold-1.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    code, out, _ = run(capsys, "validate", "--root", tmp_path, "--json")
    assert code == 1
    (verdict,) = json.loads(out)
    assert verdict["status"] == "invalid"
    assert "start seq 0 not found in surface" in verdict["messages"]


def test_validate_checks_hook(capsys, root: Path) -> None:
    seen = []

    def no_schedule(snapshot) -> list[str]:
        seen.append(snapshot.header.id)
        types = {event.type for event in snapshot.events}
        return ["schedule changes are not allowed here"] if "schedule/change" in types else []

    def broken(snapshot) -> list[str]:
        raise RuntimeError("boom")

    code, out, _ = run(capsys, "validate", "demo-1", "reminders-1", "--root", root, checks=[no_schedule])
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "ok  demo-1  6 events"
    assert lines[1] == "invalid  reminders-1  schedule changes are not allowed here"
    assert seen == ["demo-1", "reminders-1"]
    code, out, _ = run(capsys, "validate", "demo-1", "--root", root, "--json", checks=[broken])
    (verdict,) = json.loads(out)
    assert code == 1 and verdict["status"] == "invalid"
    assert "RuntimeError: boom" in verdict["messages"][0]


def test_validate_compares_the_fork_seed_with_the_parent(capsys, root: Path) -> None:
    code, _, _ = run(capsys, "validate", "demo-1-b", "--root", root)
    assert code == 0
    parent = root / "demo-1.jsonl"
    parent.write_bytes(parent.read_bytes().replace(b"Sure, 9:00.", b"Sure, 9:30."))
    code, out, _ = run(capsys, "validate", "demo-1-b", "--root", root, "--json")
    assert code == 1
    (verdict,) = json.loads(out)
    assert verdict["status"] == "invalid"
    assert any("seq 3" in m and "demo-1" in m for m in verdict["messages"])


def test_validate_warns_about_leftover_temp_files(capsys, root: Path) -> None:
    temp = root / "demo-1.jsonl.0123456789ab.tmp"
    temp.write_bytes(b"")
    code, out, _ = run(capsys, "validate", "--root", root)
    assert code == 0
    (warning,) = [line for line in out.splitlines() if str(temp) in line]
    assert "warning" in warning and "safe to delete" in warning
    code, out, err = run(capsys, "validate", "--root", root, "--json")
    assert code == 0
    json.loads(out)  # stdout stays one JSON document
    assert str(temp) in err and "safe to delete" in err


def test_validate_reports_a_symlink_in_the_root(capsys, root: Path) -> None:
    (root / "alias.jsonl").symlink_to(root / "demo-1.jsonl")
    code, out, _ = run(capsys, "validate", "--root", root)
    assert code == 1
    (line,) = [line for line in out.splitlines() if " alias " in line]
    assert line.startswith("unreadable  alias  ") and "symbolic link" in line


def test_validate_empty_store(capsys, tmp_path: Path) -> None:
    assert run(capsys, "validate", "--root", tmp_path) == (0, "", "")
    assert run(capsys, "validate", "--root", tmp_path, "--json") == (0, "[]\n", "")


def test_validate_and_ls_refuse_a_root_that_is_not_a_directory(capsys, tmp_path: Path) -> None:
    # A mistyped --root naming a file is a failure (exit 1), not an empty store that passes.
    not_a_root = tmp_path / "demo-1.jsonl"
    not_a_root.write_bytes(log_bytes(E1_LINES))
    expected = f'turnlog: session root "{not_a_root}" is not a directory'
    for argv in (["validate"], ["validate", "--json"], ["ls"], ["ls", "--json"]):
        code, out, err = run(capsys, *argv, "--root", not_a_root)
        assert (code, out, error_line(err)) == (1, "", expected)


def test_validate_deepseek_harness_logs(capsys, dsh: Path) -> None:
    # the parent under its own id, next to the child: the seed is compared
    parent_id = json.loads((dsh / "fork-parent.jsonl").read_bytes().split(b"\n", 1)[0])["id"]
    shutil.copyfile(dsh / "fork-parent.jsonl", dsh / f"{parent_id}.jsonl")
    paths = sorted(dsh.glob("*.jsonl"))
    code, out, _ = run(capsys, "validate", *paths, "--json")
    data = json.loads(out)
    assert code == 0, out
    assert {v["status"] for v in data} == {"ok"}
    events = {Path(v["path"]).name: v["events"] for v in data}
    assert events["fork-parent.jsonl"] == 200


# =========================================================================== tail (no follow)


def test_tail_prints_the_last_events(capsys, root: Path) -> None:
    code, out, _ = run(capsys, "tail", "demo-1", "--root", root, "-n", "2", "--json")
    assert code == 0
    assert out.encode() == E1_LINES[5] + b"\n" + E1_LINES[6] + b"\n"
    _, out, _ = run(capsys, "tail", "demo-1", "--root", root, "--json")  # default 10: all 6
    assert out.encode() == b"\n".join(E1_LINES[1:]) + b"\n"
    _, out, _ = run(capsys, "tail", "demo-1", "--root", root, "-n", "0")
    assert out == ""
    _, out, _ = run(capsys, "tail", "demo-1", "--root", root, "-n", "1")
    assert out == '5  2026-01-01T10:00:01.502Z  turn/end  {"turn":1,"reason":{"kind":"completed"}}\n'


def test_tail_from_seq_expands_rows(capsys, root: Path) -> None:
    code, out, _ = run(capsys, "tail", root / "packed-1.jsonl", "--from", "4", "--json")
    assert code == 0
    lines = out.encode().splitlines()
    assert lines[:3] == E9_EVENTS
    assert len(lines) == 27 - 4


def test_tail_from_seq_streams_a_log_larger_than_one_batch(capsys, tmp_path: Path) -> None:
    lines = [b'{"type":"note/x","seq":%d,"time":%d,"data":{"n":%d}}' % (i, i, i) for i in range(9000)]
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"\n".join([E1_LINES[0], *lines]) + b"\n")
    code, out, _ = run(capsys, "tail", path, "--from", "7", "--json")
    assert code == 0 and out.encode() == b"\n".join(lines[7:]) + b"\n"
    code, out, _ = run(capsys, "tail", path, "--from", "9000", "--json")
    assert (code, out) == (0, "")


def test_tail_stops_at_the_committed_end(capsys, root: Path) -> None:
    _, out, _ = run(capsys, "tail", "torn-1", "--root", root, "--json", "-n", "1")
    assert out.encode() == E1_LINES[6] + b"\n"


def test_tail_errors(capsys, tmp_path: Path) -> None:
    code, _, err = run(capsys, "tail", "nope", "--root", tmp_path)
    assert (code, error_line(err)) == (1, f'turnlog: session "nope" not found in {tmp_path}; see turnlog ls')
    code, _, err = run(capsys, "tail", tmp_path / "nope.jsonl")
    assert (code, error_line(err)) == (1, f'turnlog: session log "{tmp_path / "nope.jsonl"}" not found')
    path = tmp_path / "other.jsonl"
    path.write_bytes(b"\n".join(E1_LINES) + b"\n")
    code, _, err = run(capsys, "tail", "other", "--root", tmp_path)
    assert code == 1 and 'requested id "other" does not match header id "demo-1"' in err


# =========================================================================== fork


def test_fork_e6(capsys, root: Path) -> None:
    before = snapshot_dir(root)
    code, out, err = run(capsys, "fork", "demo-1", "--at", "5", "--id", "demo-1-c", "--root", root)
    assert code == 0, err
    child = root / "demo-1-c.jsonl"
    assert out.splitlines() == [
        "forked demo-1 at seq 5 -> demo-1-c (seedLength 6, 7 events)",
        str(child),
    ]
    lines = child.read_bytes().split(b"\n")
    header = json.loads(lines[0])
    assert list(header) == [
        "type", "version", "id", "createdAt", "cwd", "parentSession", "seedLength",
        "delegationDepth",
    ]
    assert (header["parentSession"], header["seedLength"]) == ("demo-1", 6)
    assert lines[1:7] == E1_LINES[1:]
    marker = json.loads(lines[7])
    assert (marker["type"], marker["seq"], marker["data"]) == ("session/end-seed", 6, {})
    after = snapshot_dir(root)
    del after["demo-1-c.jsonl"]
    assert after == before


def test_fork_json_and_nested_fork_e8(capsys, root: Path) -> None:
    data, _ = run_json(capsys, "fork", "demo-1-b", "--at", "6", "--id", "n7", "--root", root)
    assert list(data) == ["id", "path", "parentSession", "seedLength", "events", "layout", "encoding"]
    assert data == {
        "id": "n7", "path": str(root / "n7.jsonl"), "parentSession": "demo-1-b",
        "seedLength": 7, "events": 7, "layout": "flat", "encoding": "none",
    }
    data, _ = run_json(capsys, "fork", "demo-1-b", "--at", "5", "--id", "n6", "--root", root)
    assert (data["seedLength"], data["events"]) == (6, 7)


def test_fork_default_id_and_boundary(capsys, root: Path) -> None:
    data, _ = run_json(capsys, "fork", "demo-1", "--root", root)
    assert (data["seedLength"], data["events"], data["parentSession"]) == (6, 7, "demo-1")
    assert Path(data["path"]) == root / f"{data['id']}.jsonl"


def test_fork_e7_refusals(capsys, root: Path) -> None:
    before = snapshot_dir(root)
    code, _, err = run(capsys, "fork", "interrupted-1", "--at", "8", "--root", root)
    line = error_line(err)
    assert code == 1
    assert line.startswith(
        'turnlog: fork boundary 8 in session "interrupted-1" ends inside open turn 2'
    )
    assert "seq 5" in line  # the hint: the last turn/end
    code, _, err = run(capsys, "fork", "interrupted-1", "--root", root)
    assert code == 1 and "fork boundary 10" in err and "open turn 2" in err and "seq 5" in err
    code, _, err = run(capsys, "fork", "interrupted-1", "--at", "11", "--root", root)
    assert (code, error_line(err)) == (
        1, 'turnlog: fork boundary 11 does not exist in session "interrupted-1" (last seq: 10)'
    )
    code, _, err = run(capsys, "fork", "interrupted-1", "--at", "-1", "--root", root)
    assert code == 1 and "must be a non-negative safe integer, got -1" in error_line(err)
    code, _, err = run(capsys, "fork", "interrupted-1", "--at", "5", "--id", "demo-1", "--root", root)
    assert (code, error_line(err)) == (1, 'turnlog: session "demo-1" already exists')
    assert snapshot_dir(root) == before
    code, out, _ = run(capsys, "fork", "interrupted-1", "--at", "5", "--id", "ok-5", "--root", root)
    assert code == 0 and out.startswith("forked interrupted-1 at seq 5 -> ok-5 (seedLength 6, 7 events)")


def test_fork_open_turn_hint_without_a_turn_end(capsys, tmp_path: Path) -> None:
    lines = [E1_LINES[0], E1_LINES[1], E1_LINES[2]]
    (tmp_path / "demo-1.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    code, _, err = run(capsys, "fork", "demo-1", "--root", tmp_path)
    assert code == 1 and "open turn 1" in error_line(err) and "no turn has ended" in err


def test_fork_deepseek_harness_log_by_path(capsys, dsh: Path, tmp_path: Path) -> None:
    source = dsh / "fork-parent.jsonl"
    before = (source.read_bytes(), source.stat().st_mtime_ns)
    parent_header = json.loads(source.read_bytes().split(b"\n", 1)[0])
    store = tmp_path / "store"
    data, _ = run_json(capsys, "fork", source, "--id", "imported", "--root", store)
    assert data["parentSession"] == parent_header["id"]
    assert (data["seedLength"], data["events"]) == (200, 201)
    assert (source.read_bytes(), source.stat().st_mtime_ns) == before
    # the child holds the expanded events as ordinary lines, and reads back as a store session
    inspected, _ = run_json(capsys, "inspect", "imported", "--root", store)
    parent, _ = run_json(capsys, "inspect", source)
    assert inspected["events"][:200] == parent["events"]
    assert inspected["header"]["parentSession"] == parent_header["id"]


def test_fork_of_an_empty_log(capsys, tmp_path: Path) -> None:
    (tmp_path / "empty-1.jsonl").write_bytes(E1_LINES[0].replace(b"demo-1", b"empty-1") + b"\n")
    code, out, _ = run(capsys, "fork", "empty-1", "--id", "child", "--root", tmp_path)
    assert code == 0
    assert out.splitlines()[0] == "forked empty-1 with an empty seed -> child (seedLength 0, 1 events)"
    data, _ = run_json(capsys, "inspect", "child", "--root", tmp_path)
    assert [(e["seq"], e["type"]) for e in data["events"]] == [(0, "session/end-seed")]
    assert data["header"]["seedLength"] == 0


def test_fork_missing_parent(capsys, tmp_path: Path) -> None:
    code, _, err = run(capsys, "fork", "nope", "--root", tmp_path)
    assert (code, error_line(err)) == (1, f'turnlog: session "nope" not found in {tmp_path}; see turnlog ls')
    code, _, err = run(capsys, "fork", tmp_path / "nope.jsonl", "--root", tmp_path)
    assert (code, error_line(err)) == (1, f'turnlog: session log "{tmp_path / "nope.jsonl"}" not found')


def test_a_root_that_does_not_exist_is_an_error_for_the_read_only_commands(capsys, tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent"
    expected = f"turnlog: no session root at {missing} (nothing has been stored there yet; pass --root DIR)"
    for argv in (["ls"], ["ls", "--json"], ["validate"], ["validate", "--json"], ["validate", "demo-1"],
                 ["inspect", "demo-1"], ["tail", "demo-1"], ["tail", "-f", "demo-1"]):
        code, out, err = run(capsys, *argv, "--root", missing)
        assert (code, out, error_line(err)) == (1, "", expected), argv
    assert not missing.exists()  # read-only: nothing was created
    # an existing empty root prints nothing and succeeds, as before
    (tmp_path / "empty").mkdir()
    for argv in (["ls"], ["validate"]):
        assert run(capsys, *argv, "--root", tmp_path / "empty") == (0, "", ""), argv
    assert run(capsys, "ls", "--json", "--root", tmp_path / "empty") == (0, "[]\n", "")
    assert run(capsys, "validate", "--json", "--root", tmp_path / "empty") == (0, "[]\n", "")


# =========================================================================== common rules


def test_no_command_writes_to_an_existing_session_file(capsys, root: Path) -> None:
    before = snapshot_dir(root)
    for argv in (
        ["ls"], ["ls", "--json"], ["inspect", "torn-1"], ["inspect", "interrupted-1", "--json"],
        ["validate"], ["validate", "--json", "--strict"], ["tail", "torn-1"],
        ["tail", "interrupted-1", "--json", "--from", "0"],
        ["fork", "demo-1", "--at", "5", "--id", "new-1"],
        ["fork", "interrupted-1", "--at", "8"],
    ):
        main([*argv, "--root", str(root)])
    capsys.readouterr()
    after = snapshot_dir(root)
    assert set(after) - set(before) == {"new-1.jsonl"}
    del after["new-1.jsonl"]
    assert after == before


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["inspect"],
        ["inspect", "demo-1", "--from", "-1"],
        ["inspect", "demo-1", "--bogus"],
        ["tail", "demo-1", "-n", "x"],
        ["tail", "demo-1", "-n", "2", "--from", "3"],
        ["fork", "demo-1", "--at", "five"],
        ["fork", "demo-1", "--id", "bad id"],
        ["inspect", "bad id"],
        ["validate", "demo-1", ".."],
    ],
)
def test_usage_errors_exit_2_with_one_line(capsys, root: Path, argv: list[str]) -> None:
    before = snapshot_dir(root)
    code, out, err = run(capsys, *argv, "--root", root) if argv else run(capsys)
    assert code == 2 and out == ""
    error_line(err)
    assert snapshot_dir(root) == before


def test_an_unknown_option_points_at_the_commands_own_help(capsys, root: Path) -> None:
    code, _, err = run(capsys, "ls", "--bogus", "x", "--root", root)
    assert (code, error_line(err)) == (
        2, 'turnlog: unrecognized arguments: --bogus x (see "turnlog ls --help")'
    )


def test_help_lists_commands_and_examples(capsys) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for name in ("ls", "inspect", "validate", "tail", "fork", "examples:", "--root"):
        assert name in out
    code, out, _ = run(capsys, "tail", "--help")
    assert code == 0 and "-f" in out and "examples:" in out
    # What validate's statuses mean and which of them fail.
    code, out, _ = run(capsys, "validate", "--help")
    assert code == 0
    for word in ("repairable", "invalid", "corrupt", "unsupported", "unreadable", "Exit status 1"):
        assert word in out


def test_root_resolution(capsys, root: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TURNLOG_HOME", str(root.parent))  # $TURNLOG_HOME/sessions == root
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    code, out, _ = run(capsys, "inspect", "demo-1", "--json")
    assert code == 0 and json.loads(out)["id"] == "demo-1"
    # a caller-supplied root (the host's turnlog script) beats the default ...
    (tmp_path / "elsewhere").mkdir()
    code, _, err = run(capsys, "inspect", "demo-1", root=tmp_path / "elsewhere")
    assert code == 1 and f"not found in {tmp_path / 'elsewhere'}" in err
    # ... and --root beats both, before or after the command
    code, _, _ = run(capsys, "inspect", "demo-1", "--root", root, root=tmp_path / "elsewhere")
    assert code == 0
    code, _, _ = run(capsys, "--root", str(root), "inspect", "demo-1", root=tmp_path / "x")
    assert code == 0


class Terminal:
    """A stderr that says it is a terminal and keeps what was written to it."""

    def __init__(self, on_write=lambda text: None) -> None:
        self.text = ""
        self.on_write = on_write

    def write(self, text: str) -> int:
        self.text += text
        self.on_write(text)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


def test_progress_indication_on_a_terminal_while_a_large_log_is_read(
    capsys, root: Path, monkeypatch
) -> None:
    from eventlog.cli import _commands as cli

    monkeypatch.setattr(cli, "PROGRESS_MIN_BYTES", 500)  # demo-1 (887 bytes) counts as large
    monkeypatch.setattr(cli, "PROGRESS_DELAY_S", 0)
    shown = threading.Event()
    real_read_log = cli.read_log

    def read_log_after_the_indicator(path, **kwargs):
        assert shown.wait(TIMEOUT), "no progress indication"
        return real_read_log(path, **kwargs)

    monkeypatch.setattr(cli, "read_log", read_log_after_the_indicator)
    terminal = Terminal(lambda text: "reading" in text and shown.set())
    monkeypatch.setattr(sys, "stderr", terminal)
    code, out, _ = run(capsys, "inspect", root / "demo-1.jsonl", "--json")
    assert code == 0 and json.loads(out)["id"] == "demo-1"  # stdout holds only the output
    assert f"reading {root / 'demo-1.jsonl'}" in terminal.text
    assert terminal.text.endswith("\r\x1b[K")  # the indication is erased afterwards


def test_no_progress_indication_off_a_terminal_or_for_a_small_log(
    capsys, root: Path, monkeypatch
) -> None:
    from eventlog.cli import _commands as cli

    monkeypatch.setattr(cli, "PROGRESS_DELAY_S", 0)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    code, _, _ = run(capsys, "validate", "--root", root)  # every fixture is below the size
    assert code == 0 and terminal.text == ""
    monkeypatch.setattr(cli, "PROGRESS_MIN_BYTES", 0)
    monkeypatch.setattr(sys, "stderr", sys.__stderr__)
    code, _, err = run(capsys, "inspect", "demo-1", "--root", root, "--json")
    assert code == 0 and err == ""  # capsys' stderr is not a terminal


# =========================================================================== python -m eventlog


def _module(*argv: str | Path, **kwargs) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TURNLOG_HOME", "XDG_DATA_HOME")}
    env.update(kwargs.pop("env", {}))
    return subprocess.run(
        [sys.executable, "-m", "eventlog", *map(str, argv)],
        capture_output=True, text=True, timeout=60, env=env, cwd=REPO, check=False, **kwargs,
    )


def test_module_runs_the_same_commands(root: Path, tmp_path: Path) -> None:
    result = _module("ls", "--root", root, "--json")
    assert result.returncode == 0 and len(json.loads(result.stdout)) == 6
    result = _module("validate", env={"TURNLOG_HOME": str(root.parent)})
    assert result.returncode == 0 and "ok  demo-1  6 events" in result.stdout
    result = _module("inspect", "nope", "--root", tmp_path)
    assert result.returncode == 1
    assert result.stderr == f'turnlog: session "nope" not found in {tmp_path}; see turnlog ls\n'
    result = _module("tail", "demo-1", "-n", "x", "--root", root)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    result = _module("--help")
    assert result.returncode == 0 and "validate" in result.stdout


def test_module_fork_then_inspect(root: Path) -> None:
    result = _module("fork", "./fixtures/demo-1.jsonl", "--id", "copy", "--root", root, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["parentSession"] == "demo-1"
    result = _module("inspect", "copy", "--root", root, "--json")
    assert result.returncode == 0
    assert json.loads(result.stdout)["header"]["parentSession"] == "demo-1"


# =========================================================================== times in a display zone


def test_human_times_show_in_the_callers_zone_and_utc_with_utc(capsys, root: Path) -> None:
    """The turnlog script passes the user's zone: human output shows wall times with their offset
    (Asia/Shanghai is UTC+8); --utc, and no zone, show UTC as log-format §10 writes it; --json
    never changes."""
    zoneinfo.reset_tzpath(to=())
    shanghai = zoneinfo.ZoneInfo("Asia/Shanghai")
    code, out, _ = run(capsys, "inspect", "demo-1", "--root", root, zone=shanghai)
    assert code == 0
    lines = out.splitlines()
    assert "created  2026-01-01T18:00:00.000+08:00 (Asia/Shanghai)" in lines
    assert '0  2026-01-01T18:00:00.100+08:00  turn/start  {"turn":1}' in lines
    code, out, _ = run(capsys, "inspect", "demo-1", "--root", root, "--utc", zone=shanghai)
    assert '0  2026-01-01T10:00:00.100Z  turn/start  {"turn":1}' in out.splitlines()
    assert "created  2026-01-01T10:00:00.000Z" in out.splitlines()
    code, out, _ = run(capsys, "tail", "demo-1", "-n", "1", "--root", root, zone=shanghai)
    assert out == '5  2026-01-01T18:00:01.502+08:00  turn/end  {"turn":1,"reason":{"kind":"completed"}}\n'
    code, out, _ = run(capsys, "ls", "--root", root, zone=shanghai)
    assert "2026-01-01T18:00:00.000+08:00" in out and "2026-01-01T10:00:00.000Z" not in out
    assert run(capsys, "inspect", "demo-1", "--root", root, "--json", zone=shanghai) == run(
        capsys, "inspect", "demo-1", "--root", root, "--json")
    assert run(capsys, "ls", "--root", root, "--json", zone=shanghai) == run(capsys, "ls", "--root", root, "--json")
    # a wall time that has no offset-free form stays exact: Kathmandu is UTC+05:45
    code, out, _ = run(capsys, "tail", "demo-1", "-n", "1", "--root", root, zone=zoneinfo.ZoneInfo("Asia/Kathmandu"))
    assert out.startswith("5  2026-01-01T15:45:01.502+05:45  turn/end")
    zoneinfo.reset_tzpath()


@given(st.integers(-2**53 + 1, 2**53 - 1), st.sampled_from(["Asia/Shanghai", "America/St_Johns", "Europe/Berlin",
                                                           "Pacific/Kiritimati", "Asia/Kathmandu"]))
def test_a_local_time_names_the_same_instant(ms: int, name: str) -> None:
    from datetime import datetime, timedelta

    from eventlog.cli._render import format_time

    zoneinfo.reset_tzpath(to=())
    text = format_time(ms, zoneinfo.ZoneInfo(name))
    if text == str(ms):
        return  # outside years 1-9999: the integer, as in UTC
    instant = datetime.fromisoformat(text)
    epoch = datetime.fromisoformat("1970-01-01T00:00:00+00:00")
    assert (instant - epoch) // timedelta(milliseconds=1) == ms
