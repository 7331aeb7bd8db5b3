"""Inputs that used to reach a traceback, each now a typed refusal that appends nothing (host §4.2,
host §4.3.1, host §4.3.4, host §4.3.6, host §5.3, host §8): working directories that cannot be
resolved, malformed persisted data found while resuming, and the listing of live sessions that
have no file yet."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from eventlog.scan import scan_bytes
from tests.fixture_paths import DSH_FIXTURES
from tests.host.rpc_support import error_of, prompt, request, running_server


def not_a_directory(path: Path) -> dict[str, Any]:
    return {
        "code": -32603,
        "message": f"working directory does not exist or is not a directory: {path}",
        "data": {"code": "not-a-directory", "path": str(path)},
    }


@pytest.fixture
def unresolvable(tmp_path: Path) -> dict[str, Path]:
    """A self-symlink (``ln -s loop loop``) and a path whose last name is 300 characters long."""
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    return {"loop": loop, "long": tmp_path / ("x" * 300)}


@pytest.mark.parametrize("kind", ["loop", "long"])
async def test_a_working_directory_that_cannot_be_resolved_is_not_a_directory(
    tmp_path: Path, unresolvable: dict[str, Path], kind: str
) -> None:
    root = tmp_path / "root"
    target = unresolvable[kind]
    async with running_server(root, cwd=tmp_path) as s:
        await s.wire.send(
            request("s", "session/working-directory/set", {"sessionId": "a", "path": str(target)})
        )
        assert (await s.wire.reply("s"))["error"] == not_a_directory(target)
        await s.wire.send(request("g", "session/working-directory/get", {"sessionId": "a"}))
        assert (await s.wire.reply("g"))["result"] == {"cwd": str(tmp_path)}
    assert not root.exists() or list(root.iterdir()) == []


@pytest.mark.parametrize("kind", ["loop", "long"])
async def test_an_initialize_cwd_that_cannot_be_resolved_is_refused_and_changes_nothing(
    tmp_path: Path, unresolvable: dict[str, Path], kind: str
) -> None:
    root = tmp_path / "root"
    target = unresolvable[kind]
    async with running_server(root, cwd=tmp_path) as s:
        params = {"cwd": str(target), "provider": "scripted", "model": "other"}
        await s.wire.send(request("i", "initialize", params))
        assert (await s.wire.reply("i"))["error"] == not_a_directory(target)
        assert s.host.route.model == "scripted"  # the route is unchanged
        await s.wire.send(request("g", "session/working-directory/get", {"sessionId": "a"}))
        assert (await s.wire.reply("g"))["result"] == {"cwd": str(tmp_path)}
    assert not root.exists() or list(root.iterdir()) == []


async def test_an_initialize_cwd_that_does_not_exist_is_still_taken(tmp_path: Path) -> None:
    async with running_server(tmp_path / "root", cwd=tmp_path) as s:
        await s.wire.send(request("i", "initialize", {"cwd": str(tmp_path / "later")}))
        assert "result" in await s.wire.reply("i")
        assert s.host.cwd == tmp_path / "later"


# === malformed persisted data found while resuming (host §5.3, host §8) ===========================


async def plain_log(root: Path, session_id: str = "main") -> list[dict[str, Any]]:
    """A session with one plain turn, written by a real host; its records, header first."""
    async with running_server(root) as s:
        await s.wire.send(prompt("p", session_id, "hi"))
        await s.wire.idle(session_id)
    return [json.loads(line) for line in (root / f"{session_id}.jsonl").read_bytes().splitlines()]


def rewrite(root: Path, session_id: str, records: list[dict[str, Any]]) -> bytes:
    data = b"".join(
        json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode() + b"\n" for r in records
    )
    (root / f"{session_id}.jsonl").write_bytes(data)
    return data


def first(records: list[dict[str, Any]], type_: str) -> dict[str, Any]:
    return next(r for r in records if r.get("type") == type_)


@pytest.mark.parametrize(
    ("type_", "mutate", "detail"),
    [
        ("turn/start", lambda d: d.clear(), "turn must be a safe integer >= 1, got None"),
        ("turn/start", lambda d: d.update(turn="1"), "turn must be a safe integer >= 1, got '1'"),
        ("turn/start", lambda d: d.update(turn=0), "turn must be a safe integer >= 1, got 0"),
        ("assistant/message", lambda d: d.pop("message"), "lacks an identified message"),
        (
            "user/message",
            lambda d: d.update(content="hi"),
            "invalid content: content must be an array of blocks",
        ),
    ],
)
async def test_malformed_persisted_data_is_session_corrupt_naming_the_line(
    tmp_path: Path, type_: str, mutate: Any, detail: str
) -> None:
    records = await plain_log(tmp_path)
    record = first(records, type_)
    mutate(record["data"])
    data = rewrite(tmp_path, "main", records)
    seq, line = record["seq"], records.index(record) + 1
    message = f"invalid persisted {type_} at session seq {seq} (line {line}): {detail}"
    async with running_server(tmp_path) as s:
        await s.wire.send(request("r", "session/resume", {"sessionId": "main"}))
        assert (await s.wire.reply("r"))["error"] == {
            "code": -32603,
            "message": message,
            "data": {"code": "session-corrupt"},
        }
        await s.wire.send(prompt("p", "main", "again"))
        assert error_of(await s.wire.reply("p"))[:2] == ("session-corrupt", message)
        await s.wire.send(request("l", "session/list"))
        [listed] = (await s.wire.reply("l"))["result"]["sessions"]
        assert listed["live"] is False
        assert s.diagnostics == []  # no traceback
    assert (tmp_path / "main.jsonl").read_bytes() == data


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(target=[]),
        lambda d: d.update(target={}),
        lambda d: d.update(start=[]),
        lambda d: d.update(inserted=[{"id": "x"}]),
        lambda d: d.update(removedCount=2**70),
    ],
)
async def test_a_malformed_inbox_splice_is_session_corrupt(tmp_path: Path, mutate: Any) -> None:
    records = await plain_log(tmp_path)
    splice = first(records, "agent/inbox/spliced")
    mutate(splice["data"])
    data = rewrite(tmp_path, "main", records)
    async with running_server(tmp_path) as s:
        await s.wire.send(request("r", "session/resume", {"sessionId": "main"}))
        assert error_of(await s.wire.reply("r"))[:2] == (
            "session-corrupt",
            f"invalid persisted inbox splice at session seq {splice['seq']}",
        )
        assert s.diagnostics == []
    assert (tmp_path / "main.jsonl").read_bytes() == data


async def test_the_line_of_an_event_in_a_packed_row_is_the_rows_line(tmp_path: Path) -> None:
    # Rows that hold several events (a deepseek-harness log): the line is the row's, not seq + 2.
    source = (DSH_FIXTURES / "multi-turn-packed-rows.jsonl").read_bytes().splitlines()
    header = json.loads(source[0])
    header["id"] = "packed"
    lines = [json.dumps(header, separators=(",", ":")).encode(), *source[1:]]
    _, events = scan_bytes(b"\n".join(lines) + b"\n", tmp_path / "packed.jsonl")
    starts = [e for e in events if e.type == "turn/start"]
    last = starts[-1]
    # find the physical line holding the last turn/start and break its turn number in place
    for number, line in enumerate(lines, start=1):
        if b'"turn/start"' in line and f'"seq":{last.seq}'.encode() in line:
            lines[number - 1] = line.replace(b'"data":{"turn":', b'"data":{"turn":-', 1)
            break
    else:
        pytest.skip("the last turn/start of the fixture is inside a packed row")
    (tmp_path / "packed.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    async with running_server(tmp_path) as s:
        await s.wire.send(request("r", "session/resume", {"sessionId": "packed"}))
        code, message, _ = error_of(await s.wire.reply("r"))
    assert code == "session-corrupt"
    assert message.startswith(f"invalid persisted turn/start at session seq {last.seq} (line {number}): ")
    assert number != last.seq + 2  # the packed rows before it hold several events each


# === session/list and live sessions without a file (host §4.3.6) ====================================


async def test_live_sessions_without_a_file_are_listed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    async with running_server(root, cwd=tmp_path) as s:
        await s.wire.send(request("g", "session/working-directory/get", {"sessionId": "fresh"}))
        await s.wire.reply("g")  # live now, and nothing written yet
        await s.wire.send(prompt("p", "main", "hi"))
        await s.wire.idle("main")
        await s.wire.send(request("l", "session/list"))
        listed = (await s.wire.reply("l"))["result"]
        created = s.host.live("fresh").session.header.created_at
    assert not (root / "fresh.jsonl").exists()
    fresh = {"sessionId": "fresh", "createdAt": created, "cwd": str(tmp_path), "live": True, "status": "idle"}
    [first_listed, second] = listed["sessions"]
    assert first_listed == fresh  # created first: sorted by createdAt, then sessionId
    assert (second["sessionId"], second["live"], second["status"]) == ("main", True, "idle")
    assert second["createdAt"] >= created
    assert listed["skipped"] == []
