"""Storage that fails and recovers, seen through the real ``deepseek-harness-sdk`` client (0.2.1rc2),
which ends a run at the first ``session.status`` ``idle`` (host §3.3, host §4.4): a run whose turn
the full disk stopped stays open through the outage and returns the turn run again, and a
reminder due meanwhile reaches the model once the disk frees. ``turnlog serve`` runs as a
subprocess whose session writes fail while a flag file exists (``full_disk.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

from deepseek_harness import DeepSeekHarness, Notification

LAUNCHER = Path(__file__).with_name("full_disk.py")


def storage(session_id: str, status: str, state: str) -> dict[str, str]:
    return {"sessionId": session_id, "status": status, "storage": state}


def test_a_run_waits_through_a_full_disk_and_a_reminder_due_meanwhile_fires(tmp_path: Path) -> None:
    root, full = tmp_path / "sessions", tmp_path / "full"
    harness = DeepSeekHarness(
        provider="scripted",
        model="scripted",
        cwd=str(tmp_path),
        _launch_args=(sys.executable, str(LAUNCHER), str(full), "serve", "--root", str(root)),
    )
    with harness:
        assert harness.run("hi", session_id="main").final_response == "You said: hi"

        # A prompt while the disk is full: its turn fails before any model request; the run sees
        # the storage state, not an idle, and ends with the turn run again once the disk frees.
        def free_when_failing(n: Notification) -> None:
            if n.method == "session.status" and n.payload.get("storage") == "failing":
                full.unlink()

        full.touch()
        result = harness.run("hello", session_id="main", on_notification=free_when_failing)
        assert result.final_response == "You said: hello"
        assert result.finish_reason == "completed"
        statuses = [n.payload for n in result.notifications if n.method == "session.status"]
        assert statuses == [
            {"sessionId": "main", "status": "running"},
            storage("main", "running", "failing"),
            storage("main", "running", "ok"),
            {"sessionId": "main", "status": "idle"},
        ]
        ends = [e["data"]["reason"]["kind"] for e in result.events if e["type"] == "turn/end"]
        assert ends == ["error", "completed"]

        # A reminder that falls due while the disk is full.
        result = harness.run("remind me in 1 seconds to breathe", session_id="main")
        assert result.final_response.startswith("Reminder schedule-1 is set for ")
        watched = harness.client.subscribe_session_notifications("main")
        full.touch()
        seen: list[Notification] = []
        while True:
            n = watched.next()
            seen.append(n)
            if n.method == "session.status" and n.payload.get("storage") == "failing":
                full.unlink()
            if n.method == "session.status" and n.payload.get("status") == "idle":
                break
        watched.close()
    events = [n.payload["event"] for n in seen if n.method == "session.event"]
    replies = [e["data"]["message"]["content"] for e in events if e["type"] == "assistant/message"]
    assert replies == [[{"type": "text", "text": "Reminder: breathe"}]]
    dispatches = [
        e for e in events if e["type"] == "schedule/change" and e["data"]["operation"] == "dispatch"
    ]
    assert len(dispatches) == 1
    assert [n.payload for n in seen if n.method == "session.status"] == [
        {"sessionId": "main", "status": "running"},
        storage("main", "running", "failing"),
        storage("main", "running", "ok"),
        {"sessionId": "main", "status": "idle"},
    ]
