"""Sessions in the host (host §4.3, host §5): create, resume, repair, fork, list, history, the
clientTimeZone admission table, refusals that append nothing, and one writer per file."""

from __future__ import annotations

import errno
import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

import eventlog.fileio
from host.runtime import (
    ChildCreated,
    EventAppended,
    HostError,
    resolve_root,
    root_from_dsh_session_root,
    sole_exception,
)
from host.testing import Harness, open_harness
from tests.host.loop_support import B, of_type, script, texts, types


def file_bytes(h: Harness, session_id: str) -> bytes:
    return (h.root / f"{session_id}.jsonl").read_bytes()


async def one_turn(h: Harness, session_id: str, text: str = "hi") -> None:
    await h.prompt(session_id, text)
    await h.settle()


# --- create and resume ----------------------------------------------------------------------------------


async def test_first_prompt_creates_the_session_with_the_spec_header(tmp_path, autojump_clock) -> None:
    work = tmp_path / "work"
    work.mkdir()
    async with open_harness(tmp_path / "root", cwd=work) as h:
        await h.start()
        await one_turn(h, "main")
        first = file_bytes(h, "main").split(b"\n", 1)[0]
    header = {"type": "session", "version": 0, "id": "main", "createdAt": B, "cwd": str(work.resolve()),
              "delegationDepth": 0}  # fmt: skip
    assert first.decode() == json.dumps(header, separators=(",", ":"))
    assert oct((tmp_path / "root").stat().st_mode & 0o777) == "0o700"


async def test_concurrent_first_requests_make_one_agent_and_keep_arrival_order(tmp_path, autojump_clock) -> None:
    async with open_harness(tmp_path) as h:
        host = await h.start()
        ids: dict[str, str] = {}

        async def admit(text: str, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
            ids[text] = await host.admit("main", [{"type": "text", "text": text}], rpc_id=text, task_status=task_status)

        agents = set()
        async with trio.open_nursery() as nursery:
            for text in ("p1", "p2", "p3"):
                await nursery.start(admit, text)
        agents.add(id(host.live("main").agent))
        await h.settle()
        events = h.events("main")
    receipts = [e["data"]["inserted"][0] for e in of_type(events, "agent/inbox/spliced") if e["data"]["inserted"]]
    assert [r["source"]["rpcId"] for r in receipts] == ["p1", "p2", "p3"]
    assert [r["id"] for r in receipts] == [ids["p1"], ids["p2"], ids["p3"]]
    assert len(agents) == 1
    assert [e["data"]["turn"] for e in of_type(events, "turn/start")] == [1, 2, 3]


async def test_resume_continues_turns_and_writes_a_resume_header(tmp_path, autojump_clock) -> None:
    async with open_harness(tmp_path) as h:
        await h.start()
        await one_turn(h, "main")
        await h.restart()
        assert h.host.live("main") is None  # cold until used
        await one_turn(h, "main", "again")
        events = h.events("main")
    assert [e["data"]["turn"] for e in of_type(events, "turn/start")] == [1, 2]
    assert [e["data"]["reason"] for e in of_type(events, "request/header")] == ["initial", "resume"]


async def test_crash_mid_turn_is_repaired_on_resume_without_notifying_the_closers(tmp_path, autojump_clock) -> None:
    slow = {"text": "never finished", "delayMs": 1000}
    async with open_harness(tmp_path, adapters=script(slow, {"text": "fine"})) as h:
        await h.start()
        await h.prompt("main", "first")
        await h.host.live("main").session.flush()
        await trio.sleep(0.5)  # mid-stream
        await h.crash()
        crashed = h.events("main")
        await h.start()
        seen_before = len(h.notifications)
        await one_turn(h, "main", "second")
        events = h.events("main")
        notified = [n.event.type for n in h.notifications[seen_before:] if isinstance(n, EventAppended)]
    assert types(crashed)[-1] == "request/header"  # the turn was open when the process died
    closers = events[len(crashed) : len(crashed) + 2]
    assert [(e["type"], e["data"]) for e in closers] == [
        ("step/end", {"turn": 1, "step": 1}),
        ("turn/end", {"turn": 1, "reason": {"kind": "interrupted"}}),
    ]
    assert notified[0] == "agent/inbox/spliced" and "turn/end" in notified
    assert notified.count("turn/end") == 1  # only turn 2's, not the repair closer
    assert [e["data"]["turn"] for e in of_type(events, "turn/start")] == [1, 2]


async def test_an_invalid_persisted_splice_refuses_the_resume(tmp_path, autojump_clock) -> None:
    header = {"type": "session", "version": 0, "id": "bad", "createdAt": B, "delegationDepth": 0}
    splice = {"type": "agent/inbox/spliced", "seq": 0, "time": B,
              "data": {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}}  # fmt: skip
    tmp_path.chmod(0o700)
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(json.dumps(v, separators=(",", ":")).encode() + b"\n" for v in (header, splice)))
    before = path.read_bytes()
    async with open_harness(tmp_path) as h:
        await h.start()
        with pytest.raises(HostError) as raised:
            await h.prompt("bad", "hi")
        assert h.host.live("bad") is None
    assert raised.value.code == "session-corrupt"
    assert raised.value.message == "invalid persisted inbox splice at session seq 0"
    assert path.read_bytes() == before


async def test_resume_refuses_missing_sessions_and_reports_live_ones(tmp_path, autojump_clock) -> None:
    async with open_harness(tmp_path) as h:
        await h.start()
        with pytest.raises(HostError) as raised:
            await h.resume("ghost")
        assert (raised.value.code, raised.value.message) == ("session-not-found", 'session "ghost" not found')
        assert not (tmp_path / "ghost.jsonl").exists()
        await one_turn(h, "main")
        assert await h.resume("main") == "already-live"


# --- admission -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        ("UTC", "UTC"),
        ("Etc/UTC", "UTC"),
        ("Etc/GMT", "UTC"),
        ("Etc/Zulu", "UTC"),
        ("asia/shanghai", "Asia/Shanghai"),
        ("Asia/Calcutta", "Asia/Kolkata"),
        ("US/Eastern", "America/New_York"),
        ("Europe/Kiev", "Europe/Kyiv"),
    ],
)
async def test_client_time_zone_is_stored_canonical(tmp_path, autojump_clock, sent: str, stored: str) -> None:
    async with open_harness(tmp_path) as h:
        await h.start()
        await h.prompt("main", "hi", client_time_zone=sent, rpc_id="p-2")
        await h.settle()
        receipt = h.events("main")[0]["data"]["inserted"][0]
    assert receipt["source"] == {"kind": "user", "rpcId": "p-2", "clientTimeZone": stored}
    assert list(receipt["source"]) == ["kind", "rpcId", "clientTimeZone"]


@pytest.mark.parametrize(
    "sent", ["utc", "GMT", "EST", "Z", "+08:00", "Asia//Shanghai", "Asia/Shanghai\n", "Mars/Olympus", "", None, 8]
)
async def test_invalid_client_time_zone_is_refused_with_nothing_appended(tmp_path, autojump_clock, sent: object) -> None:
    async with open_harness(tmp_path) as h:
        host = await h.start()
        await one_turn(h, "main")
        count = len(host.live("main").session.events)
        for session_id in ("main", "fresh"):
            with pytest.raises(HostError) as raised:
                await host.admit(session_id, [{"type": "text", "text": "hi"}], rpc_id="p-3", client_time_zone=sent)
            error = raised.value
            assert (error.code, error.message) == (
                "invalid-time-zone",
                "clientTimeZone must be UTC or a valid IANA Area/Location name",
            )
            assert error.data == {"value": sent}
        assert len(host.live("main").session.events) == count
        assert host.live("fresh") is None
    assert not (tmp_path / "fresh.jsonl").exists()


async def test_without_a_zone_the_source_has_no_zone_key(tmp_path, autojump_clock) -> None:
    async with open_harness(tmp_path) as h:
        host = await h.start()
        await host.admit("main", [{"type": "text", "text": "hi"}], rpc_id="7")
        await h.settle()
        receipt = h.events("main")[0]["data"]["inserted"][0]
    assert receipt["source"] == {"kind": "user", "rpcId": "7"}


async def test_prompt_blocks_are_stored_verbatim(tmp_path, autojump_clock) -> None:
    blocks = [{"type": "text", "text": "look"}, {"type": "image", "attachment": {"uri": "file:///x.png", "n": 1}}]
    async with open_harness(tmp_path) as h:
        host = await h.start()
        await host.admit("main", blocks, rpc_id="r")
        await h.settle()
        message = of_type(h.events("main"), "user/message")[0]["data"]
    assert message["content"] == blocks


async def test_a_session_open_in_another_process_is_busy_and_untouched(tmp_path, autojump_clock) -> None:
    async with open_harness(tmp_path) as h:
        await h.start()
        await one_turn(h, "main")
        await h.stop()
    before = (tmp_path / "main.jsonl").read_bytes()
    holder = await trio.to_thread.run_sync(
        functools.partial(
            subprocess.Popen,
            [sys.executable, "-c", HOLD_LOCK, str(tmp_path), "main"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=Path(__file__).resolve().parents[3],
        )
    )
    try:
        assert (await trio.to_thread.run_sync(holder.stdout.readline)).strip() == b"ready"
        async with open_harness(tmp_path) as h:
            await h.start()
            for attempt in (lambda: h.prompt("main", "hi"), lambda: h.resume("main")):
                with pytest.raises(HostError) as raised:
                    await attempt()
                assert (raised.value.code, raised.value.message) == (
                    "session-busy",
                    'session "main" is already open for writing',
                )
            assert h.host.live("main") is None
    finally:
        holder.communicate(b"\n", timeout=30)
    assert (tmp_path / "main.jsonl").read_bytes() == before


HOLD_LOCK = """
import sys, trio
from eventlog import SessionStore
async def main():
    async with SessionStore(sys.argv[1]).open(sys.argv[2]):
        print("ready", flush=True)
        await trio.to_thread.run_sync(sys.stdin.readline)
trio.run(main)
"""


async def test_an_unusable_root_is_persistence_failed_and_admits_nothing(tmp_path, autojump_clock) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    async with open_harness(blocker / "sessions") as h:
        host = await h.start()
        with pytest.raises(HostError) as raised:
            await h.prompt("main", "hi")
        assert raised.value.code == "persistence-failed"
        assert raised.value.data == {"sessionId": "main"}
        assert raised.value.message.startswith('cannot create session "main": ')
        assert host.live("main") is None


async def test_invalid_session_ids_are_refused(tmp_path, autojump_clock) -> None:
    async with open_harness(tmp_path) as h:
        host = await h.start()
        for bad in ("", "../x", "a/b", ".hidden", "x" * 129, "a\n"):
            with pytest.raises(HostError) as raised:
                await h.prompt(bad, "hi")
            assert raised.value.code == "invalid-session-id" and raised.value.data == {"value": bad}
        with pytest.raises(HostError):
            await host.history("../x")
    assert os.listdir(tmp_path) == []


async def test_requests_after_shutdown_are_refused(tmp_path, autojump_clock) -> None:
    async with open_harness(tmp_path) as h:
        host = await h.start()
        await one_turn(h, "main")
        await host.shutdown()
        with pytest.raises(HostError) as raised:
            await h.prompt("main", "late")
        assert (raised.value.code, raised.value.message) == ("shutting-down", "SDK server is shutting down")
        events = h.events("main")
    assert [texts(e["data"]) for e in of_type(events, "user/message")] == ["hi"]


async def test_shutdown_reports_sessions_that_could_not_be_flushed(tmp_path, autojump_clock) -> None:
    # main's and other's second turns are still waiting for the model when the host stops, so
    # both have events to flush (with one reply scripted, main's turn ended at once, out of
    # script, and whether its end was durable before the failing syncs began was a race).
    slow = {"text": "slow", "delayMs": 1000}
    async with open_harness(tmp_path, adapters=script({"text": "ok"}, slow, slow)) as h:
        host = await h.start()
        await one_turn(h, "other")
        durable = file_bytes(h, "other")
        await h.prompt("main", "hi")
        await host.live("main").session.flush()
        await h.prompt("other", "pending")
        with eventlog.fileio.fail("sync", errno.EIO, times=100):
            report = await h.stop()
    assert not report.ok
    assert set(report.failed) == {"main", "other"}
    assert report.failed["other"].startswith('failed to persist session "other"')
    assert file_bytes(h, "other") == durable  # the last durable state is intact


# --- working directory, initialize -----------------------------------------------------------------------


async def test_working_directory_is_in_memory_and_per_session(tmp_path, autojump_clock) -> None:
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    async with open_harness(tmp_path / "root", cwd=work) as h:
        host = await h.start()
        assert await host.working_directory("main") == str(work.resolve())
        assert await host.set_working_directory("main", "sub") == str((work / "sub").resolve())
        assert await host.working_directory("main") == str((work / "sub").resolve())
        assert await host.working_directory("other") == str(work.resolve())
        with pytest.raises(HostError) as raised:
            await host.set_working_directory("main", "missing")
        missing = str((work / "sub" / "missing").resolve())
        assert (raised.value.code, raised.value.data) == ("not-a-directory", {"path": missing})
        assert raised.value.message == f"working directory does not exist or is not a directory: {missing}"
        assert len(host.live("main").session.events) == 0
    assert not (tmp_path / "root" / "main.jsonl").exists()  # nothing written before the first event


async def test_initialize_sets_route_and_cwd_and_refuses_unknown_providers(tmp_path, autojump_clock) -> None:
    async with open_harness(tmp_path / "root") as h:
        host = await h.start()
        before = host.route
        with pytest.raises(HostError) as raised:
            host.initialize(provider="nope", model="m")
        assert (raised.value.code, raised.value.data) == ("unknown-provider", {"provider": "nope"})
        assert raised.value.message == 'no adapter registered for provider "nope"'
        assert host.route == before
        route = host.initialize(cwd=str(tmp_path), model="mine", max_tokens=9)
        assert (route.provider, route.model, route.max_tokens) == ("scripted", "mine", 9)
        await one_turn(h, "main")
        header = json.loads(file_bytes(h, "main").split(b"\n", 1)[0])
    assert header["cwd"] == str(tmp_path.resolve())


# --- fork, list, history -----------------------------------------------------------------------------------


async def test_fork_creates_a_cold_child_that_continues_the_turn_numbering(tmp_path, autojump_clock) -> None:
    async with open_harness(tmp_path) as h:
        host = await h.start()
        await one_turn(h, "main")
        result = await host.fork("main", boundary_seq=8, child_id="main-alt")
        assert result == {"sessionId": "main-alt", "parentSessionId": "main", "seedLength": 9}
        assert list(result) == ["sessionId", "parentSessionId", "seedLength"]
        assert host.live("main-alt") is None
        children = [n for n in h.notifications if isinstance(n, ChildCreated)]
        assert children == [ChildCreated("main", "main-alt")]
        default = await host.fork("main")
        assert default["sessionId"].startswith("session-") and len(default["sessionId"]) == 40
        await one_turn(h, "main-alt", "in the child")
        child = h.events("main-alt")
        listing = await host.list_sessions()
    assert child[9]["type"] == "session/end-seed"
    assert of_type(child[10:], "turn/start")[0]["data"] == {"turn": 2}
    assert of_type(child[10:], "request/header")[0]["data"]["reason"] == "resume"
    alt = next(s for s in listing["sessions"] if s["sessionId"] == "main-alt")
    assert alt == {"sessionId": "main-alt", "createdAt": B, "cwd": alt["cwd"], "parentSessionId": "main",
                   "seedLength": 9, "live": True, "status": "idle"}  # fmt: skip


async def test_fork_refusals_carry_eventlog_messages(tmp_path, autojump_clock) -> None:
    async with open_harness(tmp_path) as h:
        host = await h.start()
        await one_turn(h, "main")
        cases = [
            ({"parent": "main", "boundary_seq": 3}, "open-turn", 'fork boundary 3 in session "main" ends inside open turn 1'),
            ({"parent": "main", "boundary_seq": 99}, "invalid-boundary", None),
            ({"parent": "ghost"}, "session-not-found", 'session "ghost" not found'),
            ({"parent": "main", "child_id": "main"}, "session-exists", 'session "main" already exists'),
        ]
        for kwargs, code, message in cases:
            parent = kwargs.pop("parent")
            with pytest.raises(HostError) as raised:
                await host.fork(parent, **kwargs)
            assert raised.value.code == code
            if message is not None:
                assert raised.value.message == message
        assert not [n for n in h.notifications if isinstance(n, ChildCreated)]


async def test_list_marks_live_sessions_and_skips_unreadable_files(tmp_path, autojump_clock) -> None:
    async with open_harness(tmp_path) as h:
        await h.start()
        await one_turn(h, "b")
        await trio.sleep(1)
        await one_turn(h, "a")
        await h.restart()
        await h.resume("a")
        (tmp_path / "junk.jsonl").write_bytes(b"not json\n")
        listing = await host_listing(h)
    assert [(s["sessionId"], s["createdAt"], s["live"], s.get("status")) for s in listing["sessions"]] == [
        ("b", B, False, None),
        ("a", B + 1000, True, "idle"),
    ]
    assert [s["file"] for s in listing["skipped"]] == ["junk.jsonl"]
    assert listing["skipped"][0]["error"]


async def host_listing(h: Harness) -> dict[str, Any]:
    return await h.host.list_sessions()


async def test_history_pages_live_and_cold_sessions(tmp_path, autojump_clock) -> None:
    async with open_harness(tmp_path) as h:
        host = await h.start()
        await one_turn(h, "main")
        page = await host.history("main", from_seq=7, limit=2)
        assert [e["type"] for e in page["events"]] == ["step/end", "turn/end"]
        assert (page["nextSeq"], page["done"]) == (9, True)
        assert list(page) == ["sessionId", "header", "events", "nextSeq", "done"]
        assert page["header"]["id"] == "main" and page["header"]["type"] == "session"
        first = await host.history("main", limit=3)
        assert (len(first["events"]), first["nextSeq"], first["done"]) == (3, 3, False)
        empty = await host.history("main", from_seq=50)
        assert (empty["events"], empty["nextSeq"], empty["done"]) == ([], 50, True)
        await h.stop()
        path = tmp_path / "main.jsonl"
        path.write_bytes(path.read_bytes() + b'{"type":"turn/start","seq":9,')  # a torn final line
        before = path.read_bytes()
        await h.start()
        cold = await h.host.history("main")
        assert len(cold["events"]) == 9 and cold["done"] and h.host.live("main") is None
        with pytest.raises(HostError) as raised:
            await h.host.history("ghost")
        assert raised.value.code == "session-not-found"
    assert path.read_bytes() == before


# --- root resolution (host §5.1) ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "env", "expected", "from_dsh"),
    [
        ("/r", {"TURNLOG_HOME": "/t", "DSH_SESSION_ROOT": "/d"}, "/r", False),
        ("rel", {}, "/cwd/rel", False),
        (None, {"TURNLOG_HOME": "/t", "DSH_SESSION_ROOT": "/d"}, "/t/sessions", False),
        (None, {"TURNLOG_HOME": "", "DSH_SESSION_ROOT": "/d"}, "/d", True),
        (None, {"DSH_SESSION_ROOT": "dsh"}, "/cwd/dsh", True),
        ("", {"DSH_SESSION_ROOT": "/d"}, "/d", True),
        (None, {"XDG_DATA_HOME": "/x", "DSH_HOME": "/ignored"}, "/x/turnlog/sessions", False),
        (None, {"XDG_DATA_HOME": "relative", "HOME": "/home/ada"}, "/home/ada/.local/share/turnlog/sessions", False),
        (None, {"HOME": "/home/ada", "DSH_CWD": "/ignored", "DSH_SESSION_ROOT": ""}, "/home/ada/.local/share/turnlog/sessions", False),
        ("", {"HOME": "/home/ada"}, "/home/ada/.local/share/turnlog/sessions", False),
    ],
)
def test_root_resolution(option: str | None, env: dict[str, str], expected: str, from_dsh: bool) -> None:
    assert resolve_root(option, env, cwd="/cwd") == Path(expected)
    # A root from $DSH_SESSION_ROOT defaults to the dsh layout in zstd (dsh-roots §3).
    assert root_from_dsh_session_root(option, env) is from_dsh


class _Interrupting:
    """A model adapter in whose stream the Ctrl-C lands (trio raises KeyboardInterrupt in the
    task that is running)."""

    def stream(self, request: Any) -> Any:
        raise KeyboardInterrupt


async def test_a_keyboard_interrupt_inside_a_live_session_reaches_the_caller_unlogged(
    tmp_path, autojump_clock, caplog: pytest.LogCaptureFixture
) -> None:
    # host §7: Ctrl-C exits 130; a session must not swallow it as its own failure.
    with pytest.raises(BaseException) as raised, trio.fail_after(600):  # virtual: a hang guard
        async with open_harness(tmp_path, adapters=lambda: {"scripted": _Interrupting()}) as h:
            await h.start()
            await one_turn(h, "main")
    assert isinstance(sole_exception(raised.value), KeyboardInterrupt)
    assert "failed" not in caplog.text
