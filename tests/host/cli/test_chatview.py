"""What chat shows (host §7.2 "Display", "Times"): goldens of the terminal display for a recorded
session in a fixed zone and in UTC at a fixed "now", and of the piped display (host §7.2 exactly);
the streaming line, its local-time note and the waiting indicator."""

from __future__ import annotations

import zoneinfo
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
import trio.testing

from eventlog import read_log
from eventlog.vocab import TextBlock
from host.cli._chatview import PipedDisplay, TerminalDisplay
from host.cli._style import PLAIN
from host.cli._when import Zone
from host.models import BlockEnd, TextDelta
from host.runtime import Delta, EventAppended, StatusChanged
from host.testing import open_harness
from tests.host.cli.goldens import check_golden

REPO = Path(__file__).resolve().parents[3]
NOW = 1_770_724_801_000  # 2026-02-10T12:00:01Z: a second into reminders-1
BASE_MS = 1_770_724_800_000  # 2026-02-10T12:00:00Z


@pytest.fixture(autouse=True)
def _tzdata() -> Iterator[None]:
    zoneinfo.reset_tzpath(to=())
    yield
    zoneinfo.reset_tzpath()


class Screen:
    """Records what a terminal display prints and its live line."""

    def __init__(self) -> None:
        self.printed = ""
        self.live: list[str] = []

    def print_above(self, text: str, *, live: str | None = None) -> None:
        self.printed += text
        if live is not None:
            self.live.append(live)

    def set_live(self, text: str) -> None:
        self.live.append(text)


class Out:
    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> None:
        self.text += text

    def flush(self) -> None:
        pass


def replay(display: PipedDisplay | TerminalDisplay, session: str = "reminders-1") -> None:
    for event in read_log(REPO / "fixtures" / f"{session}.jsonl").events:
        display(EventAppended(session, event))
        if event.type == "turn/end":
            display(StatusChanged(session, "idle"))


CHAT = ("remind me in 5 minutes to stretch", "remind me to call mom at 18:30", "what reminders do I have?",
        "delete the stretch reminder", "hi")


@pytest.mark.parametrize("zone", ["Asia/Shanghai", "UTC"])
async def test_the_terminal_display_of_a_chat(
    zone: str, tmp_path: Path, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chat on virtual time (2026-02-10T12:00:00Z, the scripted model), each prompt sent with
    the zone as clientTimeZone, shown by the terminal display in that zone (--utc: UTC)."""
    monkeypatch.setenv("TZ", zone)
    screen = Screen()
    async with open_harness(tmp_path, base_ms=BASE_MS, time_context=True) as h:
        await h.start()
        display = TerminalDisplay("main", screen, style=PLAIN, zone=Zone.named(zone), now_ms=h.now_ms)
        h.host.subscribe(display)
        for text in CHAT:
            screen.printed += f"> {text}\n"
            await h.prompt("main", text, client_time_zone=zone)
            await h.settle()
        await h.advance(24 * 3600)  # the 18:30 reminder fires
    check_golden(f"chat.{zone.replace('/', '-')}.txt", screen.printed)


def test_the_piped_display_of_a_session() -> None:
    out, err = Out(), Out()
    replay(PipedDisplay("reminders-1", out, err))  # type: ignore[arg-type]
    check_golden("chat.reminders-1.piped.txt", out.text)
    assert err.text == ""


def test_streaming_grows_in_place_and_finished_lines_get_their_note() -> None:
    screen = Screen()
    display = TerminalDisplay("s", screen, style=PLAIN, zone=Zone.named("Asia/Shanghai"), now_ms=lambda: NOW)
    for text in ("Set for 2026-02-10T12:", "05:00.000Z.\nAnd ", "more"):
        display(Delta("s", 1, 1, TextDelta(index=0, text=text)))
    display(Delta("s", 1, 1, BlockEnd(index=0, block=TextBlock(text=""))))
    assert screen.printed == "Set for 2026-02-10T12:05:00.000Z (20:05 in Asia/Shanghai, in 5 min).\nAnd more\n"
    assert screen.live == ["Set for 2026-02-10T12:", "And ", "And more", ""]
    assert [line for line in screen.printed.splitlines() if "·" in line] == []


def test_the_waiting_indicator_counts_seconds() -> None:
    now = [NOW]
    screen = Screen()
    display = TerminalDisplay("s", screen, style=PLAIN, zone=Zone.named(None), now_ms=lambda: now[0])
    display.step_started()
    display.tick()
    now[0] += 3_000
    display.tick()
    display.turn_ended()
    assert screen.live == ["…", "…", "… 3 s", ""]


def test_a_batch_names_its_prompts_on_a_terminal() -> None:
    screen = Screen()
    display = TerminalDisplay("reminders-1", screen, style=PLAIN, zone=Zone.named("UTC"), now_ms=lambda: NOW)
    replay(display)
    assert "⏰ reminder: drink water\n" in screen.printed  # a batch of one (piped: "⏰ 1 reminders")
