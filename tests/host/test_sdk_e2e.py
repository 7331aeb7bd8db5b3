"""End to end through the real ``deepseek-harness-sdk`` client (0.2.1rc2), unmodified, launching
``turnlog serve`` as a subprocess on the scripted model (host §4, host §4.3.8)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from deepseek_harness import DeepSeekHarness, Notification
from deepseek_harness.errors import JsonRpcError

from eventlog import SessionStore, dsh_log_path, read_header, read_log
from tests.eventlog.zstd_support import cli_decompress, reference_root, zstd_program
from tests.fixture_paths import DSH_FIXTURES

PLAIN_TURN = [
    "agent/inbox/spliced",
    "turn/start",
    "agent/inbox/spliced",
    "step/start",
    "user/message",
    "user/message",  # serve has time context on: the reading follows the prompt
    "request/header",
    "assistant/message",
    "step/end",
    "turn/end",
]


def _harness(root: Path, cwd: Path) -> DeepSeekHarness:
    return DeepSeekHarness(
        provider="scripted",
        model="scripted",
        cwd=str(cwd),
        _launch_args=(sys.executable, "-m", "host", "serve", "--root", str(root)),
    )


def _turnlog_script() -> str:
    found = shutil.which("turnlog") or str(Path(sys.executable).with_name("turnlog"))
    assert Path(found).exists(), "the turnlog console script is not installed"
    return found


def _complete_log(root: Path, session_id: str) -> list[dict[str, Any]]:
    """The session file read back, wherever the root's layout puts it: no repair needed, and
    every turn closed."""
    snapshot = read_log(SessionStore(root).path(session_id), expected_id=session_id)
    assert snapshot.repair is None
    types = [event.type for event in snapshot.events]
    assert types.count("turn/start") == types.count("turn/end")
    return [event.value() | {"type": event.type, "seq": event.seq} for event in snapshot.events]


def test_plain_turn_via_launch_args(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    with _harness(root, tmp_path) as harness:
        result = harness.run("hi", session_id="main")
        assert result.final_response == "You said: hi"
        assert result.finish_reason == "completed"
        assert [event["type"] for event in result.events] == PLAIN_TURN
        assert [event["seq"] for event in result.events] == list(range(10))
        receipt = result.events[0]["data"]["inserted"][0]
        assert receipt["source"]["kind"] == "user" and isinstance(receipt["source"]["rpcId"], str)
        statuses = [n.payload["status"] for n in result.notifications if n.method == "session.status"]
        assert statuses == ["running", "idle"]
        session = harness.start_session("main")
        assert session.get_working_directory() == str(tmp_path)
        (tmp_path / "sub").mkdir()
        assert session.set_working_directory("sub") == str(tmp_path / "sub")
        assert session.get_working_directory() == str(tmp_path / "sub")
        assert harness.start_session("other").get_working_directory() == str(tmp_path)
    events = _complete_log(root, "main")
    assert [e["type"] for e in events] == PLAIN_TURN


def test_reminder_fires_as_a_later_turn_and_resume_continues(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    with _harness(root, tmp_path) as harness:
        harness.start()
        watched = harness.client.subscribe_session_notifications("main")
        result = harness.run("remind me in 1 seconds to stretch", session_id="main")
        assert result.finish_reason == "completed"
        assert result.final_response.startswith("Reminder schedule-1 is set for ")
        later: list[Notification] = []
        idles = 0
        while idles < 2:  # the prompt's activity, then the reminder's own
            notification = watched.next()
            later.append(notification)
            if notification.method == "session.status" and notification.payload["status"] == "idle":
                idles += 1
        watched.close()
    events = [n.payload["event"] for n in later if n.method == "session.event"]
    follow = [e for e in events if e["type"] == "agent/inbox/spliced" and e["data"]["inserted"]][-1]
    assert follow["data"]["inserted"][0]["source"] == {"kind": "plugin", "plugin": "schedule"}
    replies = [e["data"]["message"]["content"] for e in events if e["type"] == "assistant/message"]
    assert replies[-1] == [{"type": "text", "text": "Reminder: stretch"}]
    dispatches = [e for e in events if e["type"] == "schedule/change" and e["data"]["operation"] == "dispatch"]
    assert [d["data"]["id"] for d in dispatches] == ["schedule-1"]

    with _harness(root, tmp_path) as harness:
        session = harness.resume_session("main")
        result = session.run("hi again")
        assert result.final_response == "You said: hi again"
        assert result.finish_reason == "completed"
        starts = [e["data"]["turn"] for e in result.events if e["type"] == "turn/start"]
        headers = [e["data"]["reason"] for e in result.events if e["type"] == "request/header"]
        assert starts == [3] and headers == ["resume"]
        with pytest.raises(JsonRpcError) as refused:
            harness.resume_session("nobody")
        assert refused.value.code == -32603
        assert refused.value.data == {"code": "session-not-found"}
    events = _complete_log(root, "main")
    assert [e["id"] for e in events if e["type"] == "schedule/change" and e["operation"] == "dispatch"] == [
        "schedule-1"
    ]
    assert not (root / "nobody.jsonl").exists()


def test_dsh_bin_launch_uses_the_sdk_session_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``dsh_bin`` runs ``turnlog --profile sdk``; the root comes from ``DSH_SESSION_ROOT``."""
    monkeypatch.delenv("TURNLOG_HOME", raising=False)
    root = tmp_path / "dsh-root"
    harness = DeepSeekHarness(
        provider="scripted",
        model="scripted",
        cwd=str(tmp_path),
        dsh_bin=_turnlog_script(),
        dsh_home=str(tmp_path / "dsh-home"),
        patches=(str(tmp_path / "ignored.patch"),),
        env={"DSH_SESSION_ROOT": str(root)},
    )
    with harness:
        result = harness.run("hi", session_id="main")
        assert result.final_response == "You said: hi"
        assert result.finish_reason == "completed"
    assert [e["type"] for e in _complete_log(root, "main")] == PLAIN_TURN
    # A root from DSH_SESSION_ROOT is the reference's: the dsh layout in zstd (dsh-roots §3).
    log = SessionStore(root).path("main")
    assert log == dsh_log_path(root, read_header(log).cwd, "main", "zstd")
    assert not (tmp_path / "dsh-home").exists()


def test_the_sdk_resumes_a_reference_session_from_its_zstd_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """dsh-roots §1, one root, two programs: a root laid out as the reference writes it (the real
    fork-parent log, one Zstandard frame per batch), given to the SDK as ``DSH_SESSION_ROOT``;
    ``turnlog serve`` resumes the session, a turn completes, and the root still reads strict and
    decompresses with ``zstd -dc`` to the reference's records followed by the new ones."""
    monkeypatch.delenv("TURNLOG_HOME", raising=False)
    raw = DSH_FIXTURES / "fork-parent.jsonl"
    root = tmp_path / "dsh-root"
    (path,) = reference_root(root, [raw], "zstd")
    before = read_log(path)
    harness = DeepSeekHarness(
        provider="scripted",
        model="scripted",
        cwd=str(tmp_path),
        dsh_bin=_turnlog_script(),
        dsh_home=str(tmp_path / "dsh-home"),
        env={"DSH_SESSION_ROOT": str(root)},
    )
    with harness:
        result = harness.resume_session(before.header.id).run("hi")
        assert result.final_response == "You said: hi"
        assert result.finish_reason == "completed"
    after = _complete_log(root, before.header.id)
    assert SessionStore(root).path(before.header.id) == path
    new = after[len(before.events) :]
    assert [e["type"] for e in new if e["type"].startswith("turn/")] == ["turn/start", "turn/end"]
    appended = b"".join(event.to_json() + b"\n" for event in read_log(path).events[len(before.events) :])
    assert cli_decompress(zstd_program(), path.read_bytes()) == raw.read_bytes() + appended
