"""Restart testing with the harness (issue item 6; schedule §11.10; host §5.3, host §8):
reminders across clean restarts and crashes, every-reminders over 30 virtual days, queued input
surviving a crash, and refusals that append nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from eventlog import Event
from host.runtime import HostError
from host.testing import Harness, open_harness
from schedule import format_instant
from tests.fixture_paths import FIXTURES
from tests.host.loop_support import B, dispatches, of_type, script, texts

DAY_MS = 86_400_000
DAY_S = 86_400


def reminder_messages(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reminder follow-ups that reached a turn (``user/message`` from schedule)."""
    return [e["data"] for e in of_type(events, "user/message") if e["data"]["source"].get("plugin") == "schedule"]


def is_dispatch(session_id: str, event: Event) -> bool:
    return event.type == "schedule/change" and event.value()["operation"] == "dispatch"


async def create_reminder(h: Harness, text: str) -> None:
    await h.prompt("main", text)
    await h.settle()


async def test_one_shot_is_dispatched_exactly_once_across_clean_restarts(tmp_path, autojump_clock) -> None:
    async with open_harness(tmp_path) as h:
        await h.start()
        await create_reminder(h, "remind me in 60 seconds to stretch")
        await h.restart()  # before it is due: the reminder waits in the log
        await h.resume("main")
        await h.advance(61)
        fired = h.events("main")
        await h.restart()
        await h.resume("main")
        await h.advance(3600)
        await h.restart()
        await h.resume("main")
        await h.settle()
        final = h.events("main")
    assert dispatches(fired) == [{"version": 1, "operation": "dispatch", "id": "schedule-1"}]
    dispatch = of_type(fired, "schedule/change")[1]
    assert dispatch["time"] == B + 60_000  # on time by the virtual wall clock
    assert texts(reminder_messages(fired)[0]).endswith('reminder_prompt_json: "stretch"')
    # later restarts neither re-deliver nor make a model request
    assert final[len(fired) :] == []
    assert [e["data"]["turn"] for e in of_type(final, "turn/start")] == [1, 2]


async def test_an_overdue_one_shot_fires_once_when_the_session_is_resumed(tmp_path, autojump_clock) -> None:
    async with open_harness(tmp_path) as h:
        await h.start()
        await create_reminder(h, "remind me in 5 minutes to take the tea out")
        await h.stop()
        await h.advance(3600)  # the host is down when it falls due
        await h.start()
        await h.resume("main")
        await h.settle()
        events = h.events("main")
        await h.restart()
        await h.resume("main")
        await h.settle()
        again = h.events("main")
    assert len(dispatches(events)) == 1
    assert of_type(events, "schedule/change")[1]["time"] == B + 3_600_000
    assert texts(of_type(events, "assistant/message")[-1]["data"]["message"]) == "Reminder: take the tea out"
    assert again == events


async def test_crash_before_the_dispatch_is_durable_delivers_at_least_once(tmp_path, autojump_clock) -> None:
    async with open_harness(tmp_path) as h:
        await h.start()
        await create_reminder(h, "remind me in 30 seconds to stretch")
        h.crash_when(is_dispatch)  # follow-up queued and dispatch appended, neither durable
        await h.advance(30)
        await h.crashed()
        crashed = h.events("main")
        await h.start()
        await h.resume("main")
        await h.settle()
        events = h.events("main")
    assert dispatches(crashed) == [] and reminder_messages(crashed) == []
    assert len(dispatches(events)) == 1
    assert len(reminder_messages(events)) == 1  # delivered after the restart
    assert texts(of_type(events, "assistant/message")[-1]["data"]["message"]) == "Reminder: stretch"


async def test_a_torn_dispatch_after_a_durable_follow_up_repeats_the_reminder(tmp_path, autojump_clock) -> None:
    """The documented window (schedule §11.10): the follow-up reached the disk, its dispatch
    did not. After the restart the queued follow-up runs and the reminder fires again —
    visible duplication, never silent loss."""
    async with open_harness(tmp_path) as h:
        await h.start()
        await create_reminder(h, "remind me in 30 seconds to stretch")
        h.crash_when(is_dispatch, survivors="before-match", torn_tail=True)
        await h.advance(30)
        await h.crashed()
        raw = (tmp_path / "main.jsonl").read_bytes()
        crashed = h.events("main")
        await h.start()
        await h.resume("main")
        await h.settle()
        events = h.events("main")
        await h.restart()
        await h.resume("main")
        await h.settle()
        final = h.events("main")
    assert not raw.endswith(b"\n")  # the dispatch record was torn
    receipt = crashed[-1]["data"]
    assert receipt["inserted"][0]["source"] == {"kind": "plugin", "plugin": "schedule"}
    assert dispatches(crashed) == []
    assert len(reminder_messages(events)) == 2
    assert len(dispatches(events)) == 1
    assert final == events  # the second delivery was durable: nothing repeats again


async def test_queued_input_survives_a_crash_and_runs_after_resume(tmp_path, autojump_clock) -> None:
    async with open_harness(tmp_path, adapters=script({"text": "slow", "delayMs": 1000}, {"text": "next"})) as h:
        await h.start()
        await h.prompt("main", "first")
        await h.prompt("main", "queued")
        await h.host.live("main").session.flush()
        await h.crash()
        await h.start()
        await h.resume("main")
        await h.settle()
        events = h.events("main")
    ends = [e["data"]["reason"] for e in of_type(events, "turn/end")]
    assert ends == [{"kind": "interrupted"}, {"kind": "completed"}]
    turn2 = events[[e["type"] for e in events].index("turn/start", 3) :]
    assert texts(of_type(turn2, "user/message")[0]["data"]) == "queued"
    assert texts(of_type(turn2, "assistant/message")[0]["data"]["message"]) == "next"


async def test_every_reminders_follow_their_anchors_with_latest_only_catch_up(tmp_path, autojump_clock) -> None:
    async with open_harness(tmp_path, schedule_segment_ms=3_600_000) as h:
        await h.start()
        await create_reminder(h, "remind me every 24 hours to water the plants")
        await h.advance(3.5 * DAY_S)  # live: days 1, 2, 3 on time
        await h.stop()
        await h.advance(10 * DAY_S)  # down through days 4–13
        await h.start()
        await h.resume("main")  # day 13.5: one catch-up with the latest occurrence
        await h.settle()
        await h.advance(6.75 * DAY_S)  # live: days 14–20 on time
        await h.crash()
        await h.advance(10.25 * DAY_S)  # down through days 21–30
        await h.start()
        await h.resume("main")  # day 30.5
        await h.settle()
        await h.advance(0.75 * DAY_S)  # day 31 on time
        await h.restart()
        await h.resume("main")
        await h.settle()
        events = h.events("main")

    def anchor(day: float) -> str:
        return format_instant(B + int(day * DAY_MS))

    expected_accepted = [1, 2, 3, 13.5, *range(14, 21), 30.5, 31]
    expected_occurrence = [1, 2, 3, 13, *range(14, 21), 30, 31]
    got = dispatches(events)
    assert [d["acceptedAt"] for d in got] == [anchor(day) for day in expected_accepted]
    assert all(d["id"] == "schedule-1" for d in got)
    framed = []
    for message in reminder_messages(events):
        text = texts(message)
        assert text.startswith("[SCHEDULE REMINDER BATCH]\n")
        (item,) = json.loads(text.split("reminders_json: ", 1)[1])
        assert item["schedule_id"] == "schedule-1" and item["reminder_prompt"] == "water the plants"
        framed.append(item["occurrence_at"])
    assert framed == [anchor(day) for day in expected_occurrence]
    replies = [texts(e["data"]["message"]) for e in of_type(events, "assistant/message")][2:]
    assert replies == ["Reminders: water the plants"] * len(expected_accepted)
    assert [e["data"]["turn"] for e in of_type(events, "turn/start")] == list(range(1, len(expected_accepted) + 2))


async def test_an_invalid_client_time_zone_after_a_restart_appends_nothing(tmp_path, autojump_clock) -> None:
    async with open_harness(tmp_path) as h:
        await h.start()
        await create_reminder(h, "remind me in 10 minutes to call Ana")
        await h.restart()
        before = (tmp_path / "main.jsonl").read_bytes()
        with pytest.raises(HostError) as raised:
            await h.prompt("main", "what time is it?", client_time_zone="GMT")
        assert (raised.value.code, raised.value.data) == ("invalid-time-zone", {"value": "GMT"})
        assert h.host.live("main") is None  # refused before the session was even resumed
        assert (tmp_path / "main.jsonl").read_bytes() == before
        await h.prompt("main", "what time is it?", client_time_zone="Asia/Calcutta")
        await h.settle()
        events = h.events("main")
    assert of_type(events, "agent/inbox/spliced")[-2]["data"]["inserted"][0]["source"]["clientTimeZone"] == "Asia/Kolkata"


async def test_the_readme_example(tmp_path, autojump_clock) -> None:
    """host/README.md's harness example, verbatim."""
    async with open_harness(tmp_path, time_context=True, time_zone="Europe/Berlin") as h:
        await h.start()
        await h.prompt("main", "remind me in 5 seconds to stretch", client_time_zone="Europe/Berlin")
        await h.settle()  # every session idle, reminders settled
        await h.crash()  # unflushed events lost, locks released, no cleanup
        await h.start()  # a fresh host on the same root
        await h.resume("main")  # repair, inbox replay, the runtime folds the log
        await h.advance(10)  # 10 virtual seconds, then settle
        await h.restart()  # clean shutdown, fresh host
        await h.resume("main")
        await h.settle()
        dispatches = [e for e in h.events("main", "schedule/change") if e["data"]["operation"] == "dispatch"]
        assert len(dispatches) == 1


@pytest.mark.parametrize(("keep", "survivors", "lines"), [(5, [0, 1, 2, 3], 5), (6, [0, 1, 2, 3, 4, 5, 6], 6)])
async def test_a_crash_cuts_at_record_boundaries_of_packed_rows(tmp_path, autojump_clock, keep, survivors, lines) -> None:
    """A record of several events (a deepseek-harness chunk row, seqs 4-6 here) survives a cut
    whole or not at all: the harness cuts where eventlog's reader says the records end."""
    original = (FIXTURES / "packed-1.jsonl").read_bytes()
    (tmp_path / "packed-1.jsonl").write_bytes(original)
    async with open_harness(tmp_path) as h:
        await h.start()
        await h.resume("packed-1")
        await h.crash(keep={"packed-1": keep})
        assert [e.seq for e in h.read("packed-1").events] == survivors
        assert (tmp_path / "packed-1.jsonl").read_bytes() == b"".join(original.splitlines(keepends=True)[:lines])
