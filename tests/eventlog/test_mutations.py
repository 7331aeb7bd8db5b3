"""Mutated fixture logs: one JSON value of one record replaced by a hostile one.

Whatever the value, ``turnlog validate --json`` judges the log with one of the documented
statuses (log-format §10.3) and exits 0 or 1, and ``read_log`` either reads it or raises an
``EventLogError``: neither ever fails with another exception (a traceback for the user).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from eventlog import EventLogError, read_log
from eventlog.cli import main
from tests.fixture_paths import DSH_FIXTURES, FIXTURES

STATUSES = {"ok", "repairable", "invalid", "corrupt", "unsupported", "unreadable"}
LOGS = {
    path.relative_to(FIXTURES).as_posix(): path.read_bytes().split(b"\n")[:-1]
    for path in sorted([*FIXTURES.glob("*.jsonl"), *DSH_FIXTURES.glob("*.jsonl")])
}
# Replacements written as JSON text: they stand for values a Python round trip cannot carry
# (-0.0, an integer beyond 64 bits) or would refuse to write (nesting past the recursion limit).
HOSTILE = ["[]", "{}", "null", "-0.0", "123456789012345678901234567890", "[" * 3000 + "]" * 3000]
MARK = "\u0000hostile\u0000"


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every value inside ``value`` (not ``value`` itself), depth first."""
    items: list[tuple[Any, Any]] = []
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))
    paths = []
    for key, item in items:
        paths.append((*prefix, key))
        paths.extend(_paths(item, (*prefix, key)))
    return paths


def mutate(line: bytes, pick: int, hostile: str) -> bytes:
    """``line`` with its ``pick``-th value (modulo their number) replaced by ``hostile``."""
    record = json.loads(line)
    paths = _paths(record)
    path = paths[pick % len(paths)]
    target = record
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = MARK
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    return text.replace(json.dumps(MARK), hostile).encode("utf-8")


def validate_json(path: Path) -> tuple[int, list[dict[str, Any]]]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["validate", str(path), "--json"])
    return code, json.loads(out.getvalue())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(sorted(LOGS)),
    line=st.integers(min_value=0),
    pick=st.integers(min_value=0),
    hostile=st.sampled_from(HOSTILE),
)
# the call id of a tool result as an array or an object (validate printed a traceback)
@example(name="reminders-1.jsonl", line=11, pick=11, hostile="[]")
@example(name="reminders-1.jsonl", line=11, pick=11, hostile="{}")
def test_a_hostile_value_is_judged_never_crashes(
    tmp_path: Path, name: str, line: int, pick: int, hostile: str
) -> None:
    records = list(LOGS[name])
    index = line % len(records)
    records[index] = mutate(records[index], pick, hostile)
    path = tmp_path / "mutated.jsonl"
    path.write_bytes(b"\n".join(records) + b"\n")
    code, verdicts = validate_json(path)
    assert code in (0, 1)
    assert [verdict["status"] in STATUSES for verdict in verdicts] == [True]
    with contextlib.suppress(EventLogError):
        read_log(path)


def test_the_examples_mutate_a_tool_results_call_id() -> None:
    # The explicit examples above replace the callId of the first tool/result of reminders-1.
    mutated = json.loads(mutate(LOGS["reminders-1.jsonl"][11], 11, "[]"))
    assert mutated["type"] == "tool/result"
    assert mutated["data"]["message"]["source"] == {"kind": "tool", "callId": []}


@pytest.mark.parametrize("hostile", ["[]", "{}"])
def test_a_tool_results_call_id_that_is_not_a_string_is_invalid(tmp_path: Path, hostile: str) -> None:
    records = list(LOGS["reminders-1.jsonl"])
    records[11] = mutate(records[11], 11, hostile)
    path = tmp_path / "mutated.jsonl"
    path.write_bytes(b"\n".join(records) + b"\n")
    code, verdicts = validate_json(path)
    assert code == 1
    [verdict] = verdicts
    assert verdict["status"] == "invalid"
    assert any("invalid tool/result at seq 10" in message for message in verdict["messages"])
