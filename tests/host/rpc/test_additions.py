"""The protocol additions both transports serve (web §5.4): ``initialize``'s ``instance`` (host
§4.3.1, in test_rpc), ``session/history`` ``beforeSeq`` (host §4.3.7), ``session/cancel`` (host
§4.3.10) and ``session/inspect`` (host §4.3.11), here over stdio; and the bounded output queue of
a ``Connection`` (web §5.2)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from eventlog import Event, SessionHeader, read_log
from host.models import Chunk, ModelRequest, ScriptedAdapter
from host.rpc import Connection, OutputLimit, Request, history_frame, result_frame
from host.runtime import HostConfig, HostError, history_page, inspect_state, open_host
from tests.host.rpc_support import error_of, events_of, prompt, request, running_server

MAX = 9007199254740991
PLAIN_TURN = [
    "agent/inbox/spliced",
    "turn/start",
    "agent/inbox/spliced",
    "step/start",
    "user/message",
    "request/header",
    "assistant/message",
    "step/end",
    "turn/end",
]


class HoldFirst(ScriptedAdapter):
    """The scripted model (rules mode), except that its first request waits, after
    :attr:`started` is set, until it is cancelled."""

    def __init__(self) -> None:
        super().__init__()
        self.started = trio.Event()

    async def stream(self, request: ModelRequest) -> AsyncIterator[Chunk | Mapping[str, Any]]:
        if not self.started.is_set():
            self.started.set()
            await trio.sleep_forever()
        async for chunk in super().stream(request):
            yield chunk


def seqs(result: dict[str, Any]) -> list[int]:
    return [event["seq"] for event in result["events"]]


# --- session/history beforeSeq (host §4.3.7) -----------------------------------------------------


async def test_history_pages_backwards_with_before_seq(tmp_path: Path) -> None:
    async with running_server(tmp_path) as s:
        await s.wire.send(prompt("p", "main", "hi"))
        await s.wire.idle("main")
        cases = [
            ({"beforeSeq": MAX, "limit": 2}, [7, 8], 9, True),
            ({"beforeSeq": 7, "limit": 3}, [4, 5, 6], 7, False),
            ({"beforeSeq": 2, "limit": 5}, [0, 1], 2, False),
            ({"beforeSeq": 0}, [], 0, False),
            ({"beforeSeq": 100}, list(range(9)), 9, True),
        ]
        for index, (params, expected, next_seq, done) in enumerate(cases):
            rid = f"h-{index}"
            await s.wire.send(request(rid, "session/history", {"sessionId": "main", **params}))
            result = (await s.wire.reply(rid))["result"]
            assert list(result) == ["sessionId", "header", "events", "nextSeq", "done"]
            assert (seqs(result), result["nextSeq"], result["done"]) == (expected, next_seq, done), params
        await s.wire.send(request("both", "session/history", {"sessionId": "main", "fromSeq": 0, "beforeSeq": 3}))
        assert error_of(await s.wire.reply("both")) == (
            "invalid-params",
            "session/history takes fromSeq or beforeSeq, not both",
            {"code": "invalid-params", "field": "beforeSeq"},
        )
        for index, bad in enumerate([-1, 1.5, True, "3", None, MAX + 1]):
            rid = f"bad-{index}"
            await s.wire.send(request(rid, "session/history", {"sessionId": "main", "beforeSeq": bad}))
            code, message, data = error_of(await s.wire.reply(rid))
            assert (code, message, data["field"]) == (
                "invalid-params",
                "session/history beforeSeq must be a non-negative safe integer",
                "beforeSeq",
            )
    # A cold session pages backwards from disk the same way.
    async with running_server(tmp_path) as s:
        await s.wire.send(request("cold", "session/history", {"sessionId": "main", "beforeSeq": MAX, "limit": 4}))
        result = (await s.wire.reply("cold"))["result"]
        assert (seqs(result), result["nextSeq"], result["done"]) == ([5, 6, 7, 8], 9, True)
        assert s.host.live("main") is None


def test_history_page_windows() -> None:
    header = SessionHeader(id="s", created_at=0)
    events = [Event("x", seq, seq, msgspec.Raw(b"{}")) for seq in range(5)]

    def window(**kwargs: Any) -> tuple[list[int], int, bool]:
        page = history_page("s", header, events, **kwargs)
        return [e.seq for e in page.events], page.next_seq, page.done

    assert window(limit=2) == ([0, 1], 2, False)
    assert window(limit=10, from_seq=3) == ([3, 4], 5, True)
    assert window(limit=10, from_seq=5) == ([], 5, True)
    assert window(limit=10, from_seq=50) == ([], 50, True)
    assert window(limit=2, before_seq=MAX) == ([3, 4], 5, True)
    assert window(limit=2, before_seq=3) == ([1, 2], 3, False)
    assert window(limit=2, before_seq=0) == ([], 0, False)
    assert window(limit=3, before_seq=1, from_seq=4) == ([0], 1, False)  # beforeSeq decides
    assert window(limit=2, before_seq=MAX) == window(limit=2, before_seq=5)
    empty = history_page("s", header, [], limit=5, before_seq=MAX)
    assert (list(empty.events), empty.next_seq, empty.done) == ([], 0, True)


async def test_history_frames_are_the_stored_records_as_the_generic_encoder_writes_them(tmp_path: Path) -> None:
    """The history reply is joined from the envelopes' records, and says byte for byte what encoding
    the decoded page would say."""
    async with open_host(HostConfig(root=tmp_path), adapters={"scripted": ScriptedAdapter()}) as host:
        await host.admit("main", [{"type": "text", "text": "grüße, 你好 \u2028 \"quoted\" \\ \x01"}], rpc_id="r")
        live = host.live("main")
        assert live is not None
        with trio.fail_after(20):
            while live.status != "idle" or not live.session.events or live.session.events[-1].type != "turn/end":
                await trio.sleep(0.01)
        for kwargs in ({"from_seq": 0, "limit": 1000}, {"from_seq": 3, "limit": 2}, {"before_seq": MAX, "limit": 4}):
            page = await host.history_page("main", **kwargs)
            for rid in ("h", 7, 2.5):
                assert history_frame(rid, page) == result_frame(rid, page.result())
            assert json.loads(history_frame("h", page))["result"] == await host.history("main", **kwargs)


# --- session/cancel (host §4.3.10) ----------------------------------------------------------------


async def test_cancel_stops_the_running_turn_and_keeps_the_queue(tmp_path: Path) -> None:
    adapter = HoldFirst()
    async with running_server(tmp_path, adapter=adapter) as s:
        await s.wire.send(request("c0", "session/cancel", {"sessionId": "main"}))
        assert (await s.wire.reply("c0"))["result"] == {"cancelled": False}  # not live: nothing
        await s.wire.send(request("c1", "session/cancel", {"sessionId": "a b"}))
        assert error_of(await s.wire.reply("c1"))[0] == "invalid-session-id"
        assert not (tmp_path / "main.jsonl").exists() and s.host.live("main") is None

        await s.wire.send(prompt("p1", "main", "first"))
        with trio.fail_after(20):
            await adapter.started.wait()
        await s.wire.send(prompt("p2", "main", "queued one"), prompt("p3", "main", "queued two"))
        await s.wire.reply("p3")
        await s.wire.send(request("c2", "session/cancel", {"sessionId": "main"}))
        frames = await s.wire.until(lambda f: f.get("id") == "c2")
        assert frames[-1]["result"] == {"cancelled": True}
        frames += await s.wire.idle("main")
        await s.wire.send(request("c3", "session/cancel", {"sessionId": "main"}))
        assert (await s.wire.reply("c3"))["result"] == {"cancelled": False}  # idle: nothing
    events = read_log(tmp_path / "main.jsonl").events
    ends = [e.value() for e in events if e.type == "turn/end"]
    assert ends == [
        {"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "user"}}},
        {"turn": 2, "reason": {"kind": "completed"}},
        {"turn": 3, "reason": {"kind": "completed"}},
    ]
    splices = [e.value() for e in events if e.type == "agent/inbox/spliced"]
    assert not any(splice.get("reason") == "canceled" or "canceled" in json.dumps(splice) for splice in splices)
    replies = [e.value()["message"]["content"][0]["text"] for e in events if e.type == "assistant/message"]
    assert replies == ["You said: queued one", "You said: queued two"]
    claims = [e for e in events if e.type == "turn/start"]
    assert len(claims) == 3
    # no idle between the stopped turn and the queued ones (host §4.5 3)
    statuses = [f["params"]["status"] for f in frames if f.get("method") == "session.status"]
    assert statuses == ["idle"]


async def test_cancel_in_maintenance_or_idle_appends_nothing(tmp_path: Path) -> None:
    async with running_server(tmp_path) as s:
        await s.wire.send(prompt("p", "main", "hi"))
        await s.wire.idle("main")
        live = s.host.live("main")
        assert live is not None
        before = len(live.session.events)
        assert live.agent.run_maintenance(lambda: s.host.cancel("main")) is False
        await s.wire.send(request("c", "session/cancel", {"sessionId": "main"}))
        assert (await s.wire.reply("c"))["result"] == {"cancelled": False}
        assert len(live.session.events) == before


# --- session/inspect (host §4.3.11) ---------------------------------------------------------------


async def test_inspect_a_live_session(tmp_path: Path) -> None:
    async with running_server(tmp_path, cwd=tmp_path) as s:
        await s.wire.send(prompt("r-1", "main", "hi"))
        frames = await s.wire.idle("main")
        message = events_of(frames)[0]["data"]["inserted"][0]
        await s.wire.send(request("i-1", "session/inspect", {"sessionId": "main", "atSeq": 1}))
        at_start = (await s.wire.reply("i-1"))["result"]
        assert list(at_start) == [
            "sessionId", "atSeq", "events", "live", "header", "repair", "openTurn", "inbox", "reminders",
        ]
        assert at_start == {
            "sessionId": "main",
            "atSeq": 1,
            "events": 9,
            "live": True,
            "header": {"type": "session", "version": 0, "id": "main", "createdAt": at_start["header"]["createdAt"],
                       "cwd": str(tmp_path), "delegationDepth": 0},
            "repair": None,
            "openTurn": {"turn": 1, "step": None},
            "inbox": {"next-turn": [message], "next-step": []},
            "reminders": {"active": [], "createdIds": []},
        }
        await s.wire.send(request("i-2", "session/inspect", {"sessionId": "main", "atSeq": 4}))
        mid = (await s.wire.reply("i-2"))["result"]
        assert (mid["openTurn"], mid["inbox"]) == ({"turn": 1, "step": 1}, {"next-turn": [], "next-step": []})
        await s.wire.send(request("i-3", "session/inspect", {"sessionId": "main"}))
        last = (await s.wire.reply("i-3"))["result"]
        assert (last["atSeq"], last["openTurn"]) == (8, None)

        await s.wire.send(prompt("r-2", "main", "remind me in 300 seconds to stretch"))
        await s.wire.idle("main")
        await s.wire.send(request("i-4", "session/inspect", {"sessionId": "main"}))
        state = (await s.wire.reply("i-4"))["result"]
        (view,) = state["reminders"]["active"]
        assert state["reminders"]["createdIds"] == [view["id"]]
        assert view["prompt"] == "stretch" and view["kind"] == "after"
        assert list(view)[-2:] == ["state", "deliveryMode"]
        assert (view["state"], view["deliveryMode"]) == ("scheduled", "session-local")

        for rid, params in [("e-1", {"atSeq": 9999}), ("e-2", {"atSeq": -1}), ("e-3", {"atSeq": "1"}),
                            ("e-4", {"atSeq": True}), ("e-5", {"atSeq": None})]:
            await s.wire.send(request(rid, "session/inspect", {"sessionId": "main", **params}))
            assert error_of(await s.wire.reply(rid)) == (
                "invalid-params",
                "session/inspect atSeq must be a seq of this session",
                {"code": "invalid-params", "field": "atSeq"},
            )
        await s.wire.send(request("e-6", "session/inspect", {"sessionId": "nobody"}))
        assert error_of(await s.wire.reply("e-6"))[:2] == ("session-not-found", 'session "nobody" not found')
        await s.wire.send(request("e-7", "session/inspect", {"sessionId": "../x"}))
        assert error_of(await s.wire.reply("e-7"))[0] == "invalid-session-id"
    assert not (tmp_path / "nobody.jsonl").exists()


async def test_inspect_a_cold_session_reads_without_repairing(tmp_path: Path) -> None:
    adapter = HoldFirst()
    async with running_server(tmp_path, adapter=adapter) as s:
        await s.wire.send(prompt("p", "main", "hi"))
        with trio.fail_after(20):
            await adapter.started.wait()
        live = s.host.live("main")
        assert live is not None
        await live.session.flush()
        cut = (tmp_path / "main.jsonl").read_bytes()
    # The host stopped the turn at shutdown; give back the file as a crash mid-turn left it.
    path = tmp_path / "main.jsonl"
    path.write_bytes(cut + b'{"type":"step/st')
    before = path.read_bytes()
    async with running_server(tmp_path) as s:
        await s.wire.send(request("i", "session/inspect", {"sessionId": "main"}))
        state = (await s.wire.reply("i"))["result"]
        assert s.host.live("main") is None
    assert path.read_bytes() == before  # nothing written, nothing repaired
    assert state["live"] is False and state["openTurn"] == {"turn": 1, "step": 1}
    repair = state["repair"]
    assert list(repair) == ["truncateTo", "droppedBytes", "droppedRecords", "defect", "openTurn", "closers"]
    assert repair["truncateTo"] == len(cut) and repair["openTurn"] == 1
    assert [closer["type"] for closer in repair["closers"]][-1] == "turn/end"
    assert state["events"] == len(read_log(path).events)


def _event(seq: int, time: int, type_: str, data: Any) -> Event:
    return Event(type_, seq, time, msgspec.Raw(msgspec.json.encode(data)))


def test_inspect_state_replays_reminders_at_the_instant_of_a_seq() -> None:
    created = {"version": 1, "operation": "create", "schedule": {
        "id": "r1", "kind": "at", "prompt": "stand up", "scheduledAt": "2026-02-10T12:00:05.000Z"}}
    events = [
        _event(0, 1_770_724_800_000, "schedule/change", created),
        _event(1, 1_770_724_803_000, "session/note", {}),
        _event(2, 1_770_724_806_000, "session/note", {}),
        _event(3, 1_770_724_807_000, "schedule/change", {"version": 1, "operation": "dispatch", "id": "r1"}),
    ]
    header = SessionHeader(id="s", created_at=0)

    def at(seq: int | None) -> dict[str, Any]:
        return inspect_state("s", header, events, live=False, repair=None, at_seq=seq)

    assert [v["state"] for v in at(1)["reminders"]["active"]] == ["scheduled"]
    assert [v["state"] for v in at(2)["reminders"]["active"]] == ["overdue"]
    assert at(None)["reminders"] == {"active": [], "createdIds": ["r1"]}
    assert at(None)["atSeq"] == 3
    empty = inspect_state("s", header, [], live=False, repair=None, at_seq=None)
    assert (empty["atSeq"], empty["events"], empty["openTurn"]) == (None, 0, None)
    with pytest.raises(HostError) as raised:
        inspect_state("s", header, [], live=False, repair=None, at_seq=0)
    assert (raised.value.code, raised.value.data) == ("invalid-params", {"field": "atSeq"})


def test_inspect_state_reports_a_fold_that_raises_in_place() -> None:
    events = [
        _event(0, 1, "schedule/change", {"version": 1, "operation": "dispatch", "id": "ghost"}),
        _event(1, 2, "agent/inbox/spliced", {"target": "next-turn", "start": 3, "inserted": []}),
    ]
    state = inspect_state("s", SessionHeader(id="s", created_at=0), events, live=True, repair=None, at_seq=None)
    assert state["inbox"] == {"error": "invalid persisted inbox splice at session seq 1"}
    assert list(state["reminders"]) == ["error"] and "ghost" in state["reminders"]["error"]
    # before the bad splice the inbox still replays
    early = inspect_state("s", SessionHeader(id="s", created_at=0), events, live=True, repair=None, at_seq=0)
    assert early["inbox"] == {"next-turn": [], "next-step": []}


def test_inspect_state_ignores_the_seed_of_a_fork() -> None:
    seed = [_event(0, 1, "agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [{"id": "m"}]}),
            _event(1, 2, "session/end-seed", {})]
    header = SessionHeader(id="c", created_at=0, parent_session="p", seed_length=2)
    state = inspect_state("c", header, seed, live=False, repair=None, at_seq=None)
    assert state["inbox"] == {"next-turn": [], "next-step": []}


# --- the bounded output queue (web §5.2) ----------------------------------------------------------


async def test_a_connection_over_its_output_limit_ends_its_output(tmp_path: Path) -> None:
    def refuse(request: Request) -> None:
        raise AssertionError("no shutdown here")

    async with open_host(HostConfig(root=tmp_path), adapters={"scripted": ScriptedAdapter()}) as host:
        by_frames = Connection(host, shutdown=refuse, diagnostic=print, limit=OutputLimit(frames=3, bytes=10_000))
        for frame in (b"a\n", b"b\n", b"c\n"):
            by_frames.send(frame)
        assert not by_frames.overflowed.is_set()
        assert by_frames.output.receive_nowait() == b"a\n"
        by_frames.send(b"d\n")  # three queued again: still fits
        by_frames.send(b"e\n")
        assert by_frames.overflowed.is_set()
        by_frames.send(b"f\n")  # after an overflow nothing more is queued
        assert [frame async for frame in by_frames.output] == [b"b\n", b"c\n", b"d\n"]

        by_bytes = Connection(host, shutdown=refuse, diagnostic=print, limit=OutputLimit(frames=100, bytes=10))
        by_bytes.send(b"12345\n")
        assert by_bytes.output.receive_nowait() == b"12345\n"  # taken frames no longer count
        by_bytes.send(b"1234\n")
        by_bytes.send(b"1234\n")
        assert not by_bytes.overflowed.is_set()
        by_bytes.send(b"x\n")
        assert by_bytes.overflowed.is_set()
        assert [frame async for frame in by_bytes.output] == [b"1234\n", b"1234\n"]

        unbounded = Connection(host, shutdown=refuse, diagnostic=print)
        for _ in range(10_000):
            unbounded.send(b"{}\n")
        assert not unbounded.overflowed.is_set()
        assert unbounded.output.statistics().current_buffer_used == 10_000
