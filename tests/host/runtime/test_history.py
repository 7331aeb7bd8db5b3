"""The pure projections of host §2 (derived history) and host §5.3 step 2 (inbox replay)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog import Event, ReplaceOp, SurfaceError, read_log
from eventlog.format import build_event
from host.runtime import HistoryView, InboxReplayError, derive_history, replay_inbox
from tests.fixture_paths import DSH_FIXTURES

FIXTURES = DSH_FIXTURES


def user(text: str, id: str = "u") -> dict[str, Any]:
    return {"id": id, "role": "user", "source": {"kind": "user"}, "content": [{"type": "text", "text": text}]}


def assistant(text: str | None, id: str = "a") -> dict[str, Any]:
    content = [] if text is None else [{"type": "text", "text": text}]
    return {"id": id, "role": "assistant", "source": {"kind": "model", "provider": "p", "model": "m"}, "content": content}


class Log:
    """Builds a valid event list seq by seq."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(self, type_: str, data: Any, **kw: Any) -> Event:
        event = build_event(type_, len(self.events), 0, data, **kw)
        self.events.append(event)
        return event

    def user(self, text: str) -> Event:
        return self.add("user/message", user(text, f"u{len(self.events)}"), surface_op="append")

    def assistant(self, text: str | None) -> Event:
        message = assistant(text, f"a{len(self.events)}")
        return self.add("assistant/message", {"turn": 1, "step": 1, "message": message}, surface_op="append")

    def splice(self, data: dict[str, Any]) -> Event:
        return self.add("agent/inbox/spliced", data)


def ids(history: list[Any]) -> list[str]:
    return [m["id"] for m in history]


def test_history_takes_surface_messages_in_order_and_skips_empty_assistants() -> None:
    log = Log()
    log.add("turn/start", {"turn": 1})
    log.user("hi")
    log.assistant(None)  # e.g. a reply cut to nothing: skipped
    log.assistant("hello")
    tool = {
        "id": "t",
        "role": "user",
        "source": {"kind": "tool", "callId": "c"},
        "content": [{"type": "tool-result", "toolCallId": "c", "isError": False, "content": []}],
    }
    log.add("tool/result", {"turn": 1, "step": 1, "message": tool}, surface_op="append")
    log.add("step/end", {"turn": 1, "step": 1})
    assert derive_history(log.events) == [user("hi", "u1"), assistant("hello", "a3"), tool]


def test_a_foreign_replace_takes_the_place_of_its_range() -> None:
    log = Log()
    log.user("one")
    log.assistant("two")
    log.user("three")
    summary = log.add("user/message", user("summary", "s"), surface_op=ReplaceOp(0, 1), source_event_seqs=[0, 1])
    log.user("four")
    assert ids(derive_history(log.events)) == ["s", "u2", "u4"]
    assert summary.seq == 3


def test_an_unfoldable_replace_raises_surface_error() -> None:
    log = Log()
    log.user("one")
    log.add("user/message", user("x", "x"), surface_op=ReplaceOp(0, 0), source_event_seqs=[0])
    log.add("user/message", user("y", "y"), surface_op=ReplaceOp(0, 0), source_event_seqs=[0])
    with pytest.raises(SurfaceError, match="start seq 0 not found in surface"):
        derive_history(log.events)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["user", "assistant", "empty", "other", "replace"]), max_size=25))
def test_incremental_view_equals_a_fresh_derivation_at_every_prefix(ops: list[str]) -> None:
    log = Log()
    view = HistoryView()
    surface: list[int] = []
    for op in ops:
        if op == "user":
            surface.append(log.user("u").seq)
        elif op in ("assistant", "empty"):
            surface.append(log.assistant(None if op == "empty" else "a").seq)
        elif op == "other":
            log.add("step/end", {"turn": 1, "step": 1})
        elif surface:
            seq = len(log.events)
            log.add("user/message", user("r", f"r{seq}"), surface_op=ReplaceOp(surface[0], surface[-1]),
                    source_event_seqs=surface)  # fmt: skip
            surface = [seq]
        assert view.update(log.events) == derive_history(log.events)


def test_deepseek_harness_logs_derive_without_replace(tmp_path: Path) -> None:
    path = shutil.copy(FIXTURES / "multi-turn-packed-rows.jsonl", tmp_path / "log.jsonl")
    events = read_log(path).events
    history = derive_history(events)
    surface = [e for e in events if e.type in ("user/message", "assistant/message", "tool/result")]
    assert 0 < len(history) <= len(surface)
    assert {m["role"] for m in history} <= {"user", "assistant"}


# --- inbox replay --------------------------------------------------------------------------------------


def test_replay_applies_receipts_claims_and_cancels() -> None:
    log = Log()
    log.splice({"target": "next-turn", "start": 0, "inserted": [user("a", "a")]})
    log.splice({"target": "next-turn", "start": 1, "inserted": [user("b", "b")]})
    log.splice({"target": "next-step", "start": 0, "inserted": [user("s", "s")]})
    log.splice({"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []})
    log.splice({"target": "next-turn", "start": 1, "inserted": [user("c", "c")]})
    queues = replay_inbox(log.events, 0)
    assert {k: ids(v) for k, v in queues.items()} == {"next-turn": ["b", "c"], "next-step": ["s"]}
    log.splice({"target": "next-step", "start": 0, "removedCount": 1, "inserted": [], "outcome": "canceled"})
    log.splice({"target": "next-turn", "start": 0, "removedCount": 2, "inserted": [], "outcome": "canceled"})
    assert replay_inbox(log.events, 0) == {"next-turn": [], "next-step": []}


def test_replay_ignores_inherited_splices() -> None:
    log = Log()
    log.splice({"target": "next-turn", "start": 0, "inserted": [user("parent", "p")]})
    log.splice({"target": "next-turn", "start": 0, "inserted": [user("child", "c")]})
    assert ids(replay_inbox(log.events, 1)["next-turn"]) == ["c"]


@pytest.mark.parametrize(
    "bad",
    [
        {"target": "next-turn", "start": 0, "removedCount": 2, "inserted": []},
        {"target": "next-turn", "start": 2, "inserted": [user("x")]},
        {"target": "elsewhere", "start": 0, "inserted": []},
        {"target": "next-turn", "start": -1, "inserted": []},
        {"target": "next-turn", "start": True, "inserted": []},
        {"target": "next-turn", "start": 0},
        {"target": "next-turn", "start": 0, "inserted": ["text"]},
        ["not", "an", "object"],
    ],
)
def test_a_splice_that_does_not_fit_names_its_seq(bad: Any) -> None:
    log = Log()
    log.add("turn/start", {"turn": 1})
    log.splice({"target": "next-turn", "start": 0, "inserted": [user("a")]})
    log.splice(bad)
    with pytest.raises(InboxReplayError) as raised:
        replay_inbox(log.events, 0)
    assert str(raised.value) == "invalid persisted inbox splice at session seq 2"
    assert raised.value.seq == 2


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["followup", "steer", "claim-step", "claim-turn", "cancel"]),
                          st.integers(0, 3)), max_size=30))  # fmt: skip
def test_replaying_host_splices_rebuilds_the_queues(ops: list[tuple[str, int]]) -> None:
    """Splices written by the rules of host §3.2 replay to the queues they describe."""
    log = Log()
    queues: dict[str, list[str]] = {"next-turn": [], "next-step": []}
    for n, (op, k) in enumerate(ops):
        if op in ("followup", "steer"):
            target = "next-turn" if op == "followup" else "next-step"
            log.splice({"target": target, "start": len(queues[target]), "inserted": [user(str(n), str(n))]})
            queues[target].append(str(n))
        elif op.startswith("claim"):
            target = "next-step" if op == "claim-step" else "next-turn"
            count = min(k, len(queues[target]))
            if count:
                log.splice({"target": target, "start": 0, "removedCount": count, "inserted": []})
                del queues[target][:count]
        else:
            for target in ("next-step", "next-turn"):
                if queues[target]:
                    log.splice({"target": target, "start": 0, "removedCount": len(queues[target]),
                                "inserted": [], "outcome": "canceled"})  # fmt: skip
                    queues[target].clear()
    replayed = replay_inbox(log.events, 0)
    assert {k: ids(v) for k, v in replayed.items()} == queues
