"""Web §8 scenario 7 against a real ``turnlog web`` process: the log inspector (web §6.12) of a
seeded session with two reminders (one dispatched, one deleted) and time readings.

The session is written by a host in process (``host.testing``, virtual time, time context on):
prompts in two zones, a reminder that fires and one that is deleted, readings at every step. The
test then only reads it through the page: the lanes show both reminder lifecycles and every
reading; replaying to the seq before the dispatch shows that reminder active and ``overdue``;
``Fork at seq N`` inside an open turn shows eventlog's own refusal, and at a turn end creates the
child and links it. Expected values come from the log on disk (and eventlog's fork), never from
constants.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from eventlog import ForkError, SessionStore, read_log
from host.testing import open_harness
from tests.web.browser_support import Tab, events
from tests.web.process_support import WebProcess

SESSION = "inspected"
CHILD = "inspected-child"
POLICY = re.compile(r"^Client time zone for this request: (mixed|unavailable|[^ .]+)", re.MULTILINE)
MARK = re.compile(r"^(\S+) (create|dispatch|delete) at seq (\d+)")


def seed(root: Path) -> None:
    """Prompts from Shanghai and Berlin; reminder 1 fires after 5 s, reminder 2 (in an hour) is
    deleted; every step carries a time reading."""

    async def run() -> None:
        async with open_harness(root, time_context=True, time_zone="UTC") as h:
            await h.start()
            await h.prompt(SESSION, "remind me in 5 seconds to stretch", client_time_zone="Asia/Shanghai")
            await h.settle()
            await h.prompt(SESSION, "remind me in 1 hour to call mom", client_time_zone="Europe/Berlin")
            await h.settle()
            await h.advance(10)
            (later,) = [
                e["data"]["schedule"]["id"]
                for e in h.events(SESSION, "schedule/change")
                if e["data"]["operation"] == "create" and e["data"]["schedule"]["prompt"] == "call mom"
            ]
            await h.prompt(SESSION, f"delete reminder {later}", client_time_zone="Asia/Shanghai")
            await h.settle()

    trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))


def fork_refusal(path: Path, boundary: int, scratch: Path) -> str:
    """What eventlog itself says when asked to fork ``path`` at ``boundary``: the line the page
    must show (message, then the host's code for it)."""
    with pytest.raises(ForkError) as refused:
        trio.run(lambda: SessionStore(scratch).fork(path, at=boundary, id=CHILD))
    return f"{refused.value} ({refused.value.code.lower().replace('_', '-')})"


def reading_label(event: dict[str, Any]) -> str:
    match = POLICY.search(event["data"]["content"][0]["text"])
    assert match is not None, event
    return match.group(1)


@dataclass(frozen=True)
class Seeded:
    """What the log on disk says the inspector must show."""

    root: Path
    lifecycles: dict[str, list[tuple[str, int]]]  # schedule id -> [(operation, seq)]
    fired: str
    dispatch_seq: int
    readings: list[tuple[int, str]]  # (seq, zone | mixed | unavailable)
    inside_turn: int  # a seq inside turn 1 (its first step/start)
    turn_end: int  # turn 1's turn/end

    @classmethod
    def read(cls, root: Path) -> Seeded:
        lifecycles: dict[str, list[tuple[str, int]]] = {}
        for change in events(root, SESSION, "schedule/change"):
            data = change["data"]
            schedule_id = data["schedule"]["id"] if data["operation"] == "create" else data["id"]
            lifecycles.setdefault(schedule_id, []).append((data["operation"], change["seq"]))
        (fired,) = [i for i, marks in lifecycles.items() if marks[-1][0] == "dispatch"]
        readings = [
            (e["seq"], reading_label(e))
            for e in events(root, SESSION, "user/message")
            if e["data"]["source"].get("plugin") == "time-context"
        ]
        return cls(
            root=root,
            lifecycles=lifecycles,
            fired=fired,
            dispatch_seq=lifecycles[fired][-1][1],
            readings=readings,
            inside_turn=events(root, SESSION, "step/start")[0]["seq"],
            turn_end=events(root, SESSION, "turn/end")[0]["seq"],
        )


def test_the_inspector_shows_replays_and_forks_a_seeded_session(
    tmp_path: Path, chromium: Any, tabs: list[Tab]
) -> None:
    root = tmp_path / "s"
    seed(root)
    seeded = Seeded.read(root)
    assert sorted([op for op, _ in marks] for marks in seeded.lifecycles.values()) == [
        ["create", "delete"],
        ["create", "dispatch"],
    ]
    assert {label for _, label in seeded.readings} >= {"Asia/Shanghai", "Europe/Berlin", "unavailable"}
    refusal = fork_refusal(root / f"{SESSION}.jsonl", seeded.inside_turn, tmp_path / "scratch")

    with WebProcess(tmp_path, root) as web:
        tab = Tab(chromium, "Asia/Shanghai")
        tabs.append(tab)
        tab.page.goto(web.url.replace("/#", f"/s/{SESSION}/log#"))
        inspector = tab.page.get_by_role("region", name="Log inspector")
        inspector.locator(f'[role="option"][data-seq="{seeded.dispatch_seq}"]').wait_for()
        check_lanes(inspector, seeded)
        check_replay(tab, inspector, seeded)
        check_forks(tab, inspector, seeded, refusal)
        assert tab.problems == []
        assert web.stderr == []
    assert web.proc.returncode == 0


def mark_labels(lane: Any) -> list[str]:
    labels: list[str] = lane.get_by_role("button").evaluate_all("(marks) => marks.map((m) => m.ariaLabel)")
    return labels


def check_lanes(inspector: Any, seeded: Seeded) -> None:
    """One track per schedule id with each operation at its seq; one mark per time reading; a mark
    selects its row."""
    reminders = inspector.get_by_role("group", name="Reminders")
    shown: dict[str, list[tuple[str, int]]] = {}
    for label in mark_labels(reminders):
        match = MARK.match(label)
        assert match is not None, label
        shown.setdefault(match.group(1), []).append((match.group(2), int(match.group(3))))
    assert shown == seeded.lifecycles
    readings = inspector.get_by_role("group", name="Time readings")
    assert mark_labels(readings) == [f"Time reading at seq {seq}: {label}" for seq, label in seeded.readings]

    reminders.locator(f'[data-seq="{seeded.dispatch_seq}"]').click()
    selected = inspector.get_by_role("region", name="Selected event")
    selected.get_by_text(f'"seq": {seeded.dispatch_seq},').wait_for()
    assert '"operation": "dispatch"' in selected.inner_text()


def replay_to(tab: Tab, seq: int) -> Any:
    """Type ``seq`` into the replay's seq field; the state panel once it shows that seq."""
    field = tab.page.get_by_role("spinbutton", name="Seq")
    field.fill(str(seq))
    field.press("Enter")
    panel = tab.page.get_by_label("State at this seq")
    panel.get_by_role("heading", name=f"State at seq {seq}", exact=True).wait_for()
    return panel


def check_replay(tab: Tab, inspector: Any, seeded: Seeded) -> None:
    """At the seq before the dispatch the fired reminder is active and overdue (its time has come
    and nothing dispatched it yet); at the dispatch it is gone. Later rows dim; the URL keeps the seq."""
    before = seeded.dispatch_seq - 1
    panel = replay_to(tab, before)
    fired = panel.locator(f'[data-kind="reminders"] [data-schedule-id="{seeded.fired}"]')
    assert fired.get_attribute("data-state") == "overdue"
    assert tab.page.url.endswith(f"/s/{SESSION}/log?seq={before}")
    assert classes(inspector, seeded.dispatch_seq) >= {"trow", "later"}
    assert "later" not in classes(inspector, before)

    panel = replay_to(tab, seeded.dispatch_seq)
    assert fired.count() == 0
    # Only the other reminder is active there: it is deleted later.
    assert panel.locator('[data-kind="reminders"] [data-schedule-id]').count() == 1


def classes(inspector: Any, seq: int) -> set[str]:
    return set((inspector.locator(f'[role="option"][data-seq="{seq}"]').get_attribute("class") or "").split())


def fork_at(tab: Tab, seq: int) -> None:
    replay_to(tab, seq)
    tab.page.get_by_role("button", name=f"Fork at seq {seq}", exact=True).click()
    dialog = tab.page.get_by_role("dialog", name=f"Fork at seq {seq}")
    dialog.get_by_role("textbox", name="Child session id (optional)").fill(CHILD)
    dialog.get_by_role("button", name="Fork", exact=True).click()


def check_forks(tab: Tab, inspector: Any, seeded: Seeded, refusal: str) -> None:
    """Inside an open turn: eventlog's refusal and no child. At a turn end: the child, its seed
    the parent's events through that seq byte for byte, linked from the notice, and its own
    inspector linking back to the parent at that seq."""
    root = seeded.root
    fork_at(tab, seeded.inside_turn)
    notice = inspector.get_by_role("alert")
    notice.filter(has_text=refusal).wait_for()
    assert notice.inner_text() == refusal
    assert not (root / f"{CHILD}.jsonl").exists()

    fork_at(tab, seeded.turn_end)
    link = notice.get_by_role("link", name=CHILD)
    link.wait_for()
    assert link.get_attribute("href") == f"/s/{CHILD}"
    child = read_log(root / f"{CHILD}.jsonl")
    parent = read_log(root / f"{SESSION}.jsonl")
    assert child.header.parent_session == SESSION
    cut = seeded.turn_end + 1
    assert [e.to_json() for e in child.events[:cut]] == [e.to_json() for e in parent.events[:cut]]
    assert [e.type for e in child.events[cut:]] == ["session/end-seed"]

    notice.get_by_role("link", name="its log").click()
    tab.page.get_by_role("link", name=f"{SESSION} at seq {seeded.turn_end}").wait_for()
    assert tab.page.url.endswith(f"/s/{CHILD}/log")


# --- the replay point scrolls the timeline -----------------------------------------------------------

LONG = "long"


def seed_long(root: Path, turns: int) -> None:
    """A session of ``turns`` short turns: far more rows than the timeline shows at once."""

    async def run() -> None:
        async with open_harness(root) as h:
            await h.start()
            for index in range(turns):
                await h.prompt(LONG, f"hello {index}")
                await h.settle()

    trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))


IN_VIEW = """(timeline, seq) => {
  const row = timeline.querySelector(`[role="option"][data-seq="${seq}"]`);
  if (row === null) return false;
  const box = timeline.getBoundingClientRect();
  const r = row.getBoundingClientRect();
  return r.top >= box.top && r.bottom <= box.bottom;
}"""


def test_moving_the_replay_point_scrolls_the_timeline_to_its_row(
    tmp_path: Path, chromium: Any, tabs: list[Tab]
) -> None:
    """web §6.12: the slider (keys and a drag's value), the seq field and a ``?seq=N`` link bring
    the replay point's row into the timeline's view; with a filter hiding it, the last shown row
    before it. Opening without a seq starts at the first event."""
    root = tmp_path / "s"
    seed_long(root, 60)
    log = events(root, LONG)
    last = log[-1]["seq"]
    turn_starts = [e["seq"] for e in log if e["type"] == "turn/start"]
    middle = last // 2
    assert last > 300

    with WebProcess(tmp_path, root) as web:
        tab = Tab(chromium, "UTC")
        tabs.append(tab)
        tab.page.goto(web.url.replace("/#", f"/s/{LONG}/log#"))
        page = tab.page
        timeline = page.get_by_role("listbox", name="Events")

        def wait_in_view(seq: int) -> None:
            page.wait_for_function(
                f"([timeline, seq]) => ({IN_VIEW})(timeline, seq)", arg=[timeline.element_handle(), seq]
            )

        def in_view(seq: int) -> bool:
            return bool(timeline.evaluate(IN_VIEW, seq))

        timeline.locator('[role="option"][data-seq="0"]').wait_for()
        assert in_view(0) and not in_view(last)

        slider = page.get_by_role("slider", name="Replay to seq")
        slider.focus()
        page.keyboard.press("Home")  # the replay point starts at the last event, the view at the first
        wait_in_view(0)
        page.get_by_label("State at this seq").get_by_role("heading", name="State at seq 0").wait_for()
        page.keyboard.press("End")
        wait_in_view(last)
        assert not in_view(0)
        page.keyboard.press("Home")
        wait_in_view(0)
        page.keyboard.press("Shift+ArrowRight")  # one turn: to the second turn's start
        wait_in_view(turn_starts[1])
        slider.fill(str(middle))  # where a drag lets go
        wait_in_view(middle)
        assert page.url.endswith(f"/s/{LONG}/log?seq={middle}")

        field = page.get_by_role("spinbutton", name="Seq")
        field.fill(str(last - 5))
        field.press("Enter")
        wait_in_view(last - 5)

        # A filter hides the replay point's row: the last shown row before it comes into view.
        page.get_by_role("combobox", name="Filter by type").select_option("turn/start")
        field.fill(str(turn_starts[10] + 2))
        field.press("Enter")
        wait_in_view(turn_starts[10])
        page.get_by_role("combobox", name="Filter by type").select_option("")

        # A link to ?seq=N opens at that row.
        page.goto(web.url.replace("/#", f"/s/{LONG}/log?seq={middle + 7}#"))
        page.get_by_label("State at this seq").get_by_role("heading", name=f"State at seq {middle + 7}").wait_for()
        wait_in_view(middle + 7)
        assert tab.problems == []
    assert web.proc.returncode == 0
