"""Acceptance tests of ``turnlog serve`` as an outside client meets it (host §4, host §6.3–6.5,
host §7.3, host §8): the console script runs as a subprocess and the tests speak raw JSON lines over its
pipes. Every expectation comes from the spec text; each process covers several rules.

Every stdout line the tests read is checked to be one compact JSON frame (``jsonrpc`` ``"2.0"``,
never both ``id`` and ``method``), so each test also checks that stdout carries only frames.
"""

from __future__ import annotations

import http.server
import json
import os
import queue
import re
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.host.process_support import TURNLOG, UUID4, VERSION, clean_env
from tests.host.rpc_support import HANG_GUARD_S, events_of, prompt, request

EXIT_GUARD_S = 5.0  # "exit within about 0.5 s", with a wide margin for a loaded machine
DEFAULT_SYSTEM = (
    "You are a helpful assistant. You can create, list and delete reminders with the schedule tools. "
    "A message that starts with [SCHEDULE REMINDER] is a reminder you created earlier that is now due: "
    "tell the user about it."
)
SCHEDULE_TOOLS = ["schedule_create", "schedule_list", "schedule_delete"]
ID_RULE = "[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
SERVER_INFO = {"name": "deepseek-harness-sdk-runtime", "version": "0.0.1"}


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def result(rid: Any, value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": value}


def error(rid: Any, message: str, **data: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": message, "data": data}}


def status(session_id: str, value: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session.status", "params": {"sessionId": session_id, "status": value}}


def is_event(frame: dict[str, Any], session_id: str | None = None) -> bool:
    return frame.get("method") == "session.event" and session_id in (None, frame["params"]["sessionId"])


def read_or_empty(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b""


def wait_for(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` (a file appearing, say) until it holds, within the hang guard."""
    deadline = time.monotonic() + HANG_GUARD_S
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def log_lines(path: Path) -> list[bytes]:
    """The records of a log file, header first, without their LFs."""
    return path.read_bytes().split(b"\n")[:-1]


def log_events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log_lines(path)[1:]]



class Serve:
    """``turnlog serve`` as a subprocess: raw lines in, checked frames out."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
        self.proc = subprocess.Popen(
            [str(TURNLOG), "serve", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env if env is not None else clean_env(),
            cwd=cwd,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.raw: list[bytes] = []  # every stdout line, LF included
        self.stderr: list[str] = []
        self._reading = threading.Event()
        self._reading.set()
        self._stdout = threading.Thread(target=self._pump_stdout, daemon=True)
        self._stdout.start()
        self._stderr = threading.Thread(target=self._pump_stderr, daemon=True)
        self._stderr.start()

    def _pump_stdout(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        pending = b""
        while self._reading.is_set():
            if not select.select([fd], [], [], 0.05)[0]:
                continue
            data = os.read(fd, 65536)
            if not data:
                break
            *lines, pending = (pending + data).split(b"\n")
            for line in lines:
                self.lines.put(line + b"\n")
        if pending:
            self.lines.put(pending)
        self.lines.put(b"")

    def stop_reading(self) -> None:
        """Close the read end of stdout, as a client that goes away does."""
        assert self.proc.stdout is not None
        self._reading.clear()
        self._stdout.join(timeout=HANG_GUARD_S)
        self.proc.stdout.close()

    def _pump_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace").rstrip("\n"))

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, *frames: dict[str, Any] | bytes) -> None:
        """Frames in one write: a dict as compact JSON plus LF, bytes as they are."""
        self.write(b"".join(f if isinstance(f, bytes) else compact(f).encode() + b"\n" for f in frames))

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def line(self) -> bytes:
        """The next raw stdout line (``b""`` at the end of output)."""
        try:
            line = self.lines.get(timeout=HANG_GUARD_S)
        except queue.Empty:
            raise AssertionError(f"no output within {HANG_GUARD_S} s; stderr: {self.stderr}") from None
        if line:
            self.raw.append(line)
        else:
            self.lines.put(b"")  # stays at the end
        return line

    def frame(self) -> dict[str, Any] | None:
        """The next frame, checked to be one compact JSON-RPC line; ``None`` at the end."""
        line = self.line()
        if not line:
            return None
        assert line.endswith(b"\n")
        text = line[:-1].decode("utf-8")
        value = json.loads(text)
        assert compact(value) == text, f"not compact JSON with raw non-ASCII: {text!r}"
        assert isinstance(value, dict) and value["jsonrpc"] == "2.0"
        assert not ("id" in value and "method" in value), value
        return value

    def until(self, done: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        """Frames up to and including the first one for which ``done`` holds."""
        out = []
        while True:
            frame = self.frame()
            assert frame is not None, f"stdout ended early after {out}; stderr: {self.stderr}"
            out.append(frame)
            if done(frame):
                return out

    def reply(self, rid: Any) -> dict[str, Any]:
        """The next frame, which must be the response to ``rid``."""
        frame = self.frame()
        assert frame is not None and "method" not in frame and frame["id"] == rid, (rid, frame)
        return frame

    def idle(self, session_id: str) -> list[dict[str, Any]]:
        return self.until(lambda f: f == status(session_id, "idle"))

    def wait(self) -> int:
        code = self.proc.wait(timeout=HANG_GUARD_S)
        self._stderr.join(timeout=HANG_GUARD_S)
        return code

    def end(self) -> int:
        """The exit code once stdout has ended; no frame may follow."""
        assert self.frame() is None
        return self.wait()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@contextmanager
def serving(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> Iterator[Serve]:
    server = Serve(*args, env=env, cwd=cwd)
    try:
        yield server
    finally:
        server.kill()
    assert all(line.startswith("turnlog serve: ") for line in server.stderr), server.stderr


def check_plain_turn(events: list[dict[str, Any]], *, rpc_id: str, text: str, first_seq: int = 0) -> str:
    """The plain text turn of host §3.11 without time context; returns the message id."""
    assert [e["type"] for e in events] == [
        "agent/inbox/spliced", "turn/start", "agent/inbox/spliced", "step/start", "user/message",
        "request/header", "assistant/message", "step/end", "turn/end",
    ]
    assert [e["seq"] for e in events] == list(range(first_seq, first_seq + 9))
    assert all(type(e["time"]) is int for e in events)
    receipt = events[0]["data"]
    message = receipt["inserted"][0]
    assert re.fullmatch(UUID4, message["id"])
    user = {"id": message["id"], "role": "user", "source": {"kind": "user", "rpcId": rpc_id},
            "content": [{"type": "text", "text": text}]}
    assert compact(receipt) == compact({"target": "next-turn", "start": 0, "inserted": [user]})
    turn = events[1]["data"]["turn"]
    assert events[2]["data"] == {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}
    assert events[3]["data"] == {"turn": turn, "step": 1}
    assert compact(events[4]) == compact(
        {"type": "user/message", "seq": first_seq + 4, "time": events[4]["time"], "data": user, "surfaceOp": "append"}
    )
    assistant = events[6]
    reply = assistant["data"]["message"]
    assert re.fullmatch(UUID4, reply["id"])
    assert compact(assistant) == compact({
        "type": "assistant/message", "seq": first_seq + 6, "time": assistant["time"],
        "data": {"turn": turn, "step": 1, "message": {
            "id": reply["id"], "role": "assistant", "source": {"kind": "model", "provider": "scripted", "model": "scripted"},
            "content": [{"type": "text", "text": f"You said: {text}"}]}},
        "surfaceOp": "append",
    })
    assert events[7]["data"] == {"turn": turn, "step": 1}
    assert compact(events[8]["data"]) == compact({"turn": turn, "reason": {"kind": "completed"}})
    return message["id"]


# === host §3.11, host §4.3.1, host §4.3.2, host §4.3.5–4.3.7, host §4.3.9: one client's session =============


def test_plain_turn_fork_list_history_and_shutdown(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    work = tmp_path / "work"
    work.mkdir()
    with serving("--root", str(root), "--no-time-context") as s:
        s.send({"jsonrpc": "2.0", "id": "7c0e1f2a", "method": "initialize",
                "params": {"cwd": str(work / "sub" / ".."), "provider": "scripted", "model": "scripted",
                           "maxTokens": 4096}})
        line = s.line()
        instance = json.loads(line)["result"]["turnlog"]["instance"]  # host §4.3.1: fixed per process
        assert re.fullmatch(r"[0-9a-f]{32}", instance)
        assert line == (
            compact(result("7c0e1f2a", {"serverInfo": SERVER_INFO,
                                        "turnlog": {"version": VERSION, "root": str(root), "instance": instance}}))
            + "\n"
        ).encode()

        s.send(prompt("r-1", "main", "hi"))
        frames = s.idle("main")
        # host §4.3.2: the receipt, then running, then the reply; the turn's events; idle last.
        assert is_event(frames[0], "main") and frames[1] == status("main", "running")
        message_id = check_plain_turn(events_of(frames), rpc_id="r-1", text="hi")
        assert frames[2] == result("r-1", {"messageId": message_id})
        assert all(is_event(f, "main") for f in frames[3:-1]) and len(frames) == 12
        header = events_of(frames)[5]["data"]
        assert compact(header) == compact({
            "header": {"config": {"provider": "scripted", "model": "scripted", "maxTokens": 4096},
                       "system": DEFAULT_SYSTEM, "tools": header["header"]["tools"]},
            "reason": "initial",
        })
        assert [t["name"] for t in header["header"]["tools"]] == SCHEDULE_TOOLS
        assert all(list(t) == ["name", "description", "parameters"] for t in header["header"]["tools"])
        assert not any(f.get("method") == "session.delta" for f in frames)  # streamDeltas was not asked for

        # host §4.3.5: subagent.started after the child is durable and before the reply.
        s.send(request("f-1", "session/fork", {"sessionId": "main", "boundarySeq": 8, "childSessionId": "main-alt"}))
        assert s.frame() == {"jsonrpc": "2.0", "method": "subagent.started",
                             "params": {"parentSessionId": "main", "childSessionId": "main-alt"}}
        assert s.reply("f-1") == result("f-1", {"sessionId": "main-alt", "parentSessionId": "main", "seedLength": 9})
        child_lines = log_lines(root / "main-alt.jsonl")  # already durable at the reply
        child_header = json.loads(child_lines[0])
        assert child_header["parentSession"] == "main" and child_header["seedLength"] == 9

        # host §4.3.6: headers only, sorted by createdAt then sessionId, status only for live sessions,
        # a file whose header cannot be read goes to skipped.
        (root / "broken.jsonl").write_bytes(b"not a header\n")
        s.send(request("l-1", "session/list"))
        main_header = json.loads(log_lines(root / "main.jsonl")[0])
        listed = s.reply("l-1")["result"]
        assert compact(listed["sessions"]) == compact([
            {"sessionId": "main", "createdAt": main_header["createdAt"], "cwd": str(work), "live": True,
             "status": "idle"},
            {"sessionId": "main-alt", "createdAt": child_header["createdAt"], "cwd": str(work),
             "parentSessionId": "main", "seedLength": 9, "live": False},
        ])
        assert [entry["file"] for entry in listed["skipped"]] == ["broken.jsonl"]
        assert isinstance(listed["skipped"][0]["error"], str) and list(listed["skipped"][0]) == ["file", "error"]

        # host §4.3.7: a live session from memory, a cold one from disk, the page rules.
        s.send(request("h-1", "session/history", {"sessionId": "main", "fromSeq": 7, "limit": 2}))
        main_events = events_of(frames)
        assert compact(s.reply("h-1")) == compact(result("h-1", {
            "sessionId": "main", "header": main_header, "events": main_events[7:9], "nextSeq": 9, "done": True}))
        s.send(request("h-2", "session/history", {"sessionId": "main", "fromSeq": 2, "limit": 3}))
        page = s.reply("h-2")["result"]
        assert page["events"] == main_events[2:5] and page["nextSeq"] == 5 and page["done"] is False
        s.send(request("h-3", "session/history", {"sessionId": "main", "fromSeq": 40}))
        page = s.reply("h-3")["result"]
        assert page["events"] == [] and page["nextSeq"] == 40 and page["done"] is True
        s.send(request("h-4", "session/history", {"sessionId": "main-alt"}))
        cold = s.reply("h-4")["result"]
        assert cold["header"] == child_header and cold["nextSeq"] == len(child_lines) - 1 and cold["done"] is True
        assert [compact(e).encode() for e in cold["events"]] == child_lines[1:]

        # host §4.3.9: the reply {} once everything is flushed, then the process ends with 0.
        s.send(request("e2aa", "shutdown"))
        assert s.line() == b'{"jsonrpc":"2.0","id":"e2aa","result":{}}\n'
        started = time.monotonic()
        assert s.end() == 0
        assert time.monotonic() - started < EXIT_GUARD_S
        assert s.stderr == []

    # host §4.4: each session.event carries the envelope exactly as the log holds it.
    notified = [line for line in s.raw if line.startswith(b'{"jsonrpc":"2.0","method":"session.event"')]
    assert notified == [
        b'{"jsonrpc":"2.0","method":"session.event","params":{"sessionId":"main","event":' + line + b"}}\n"
        for line in log_lines(root / "main.jsonl")[1:]
    ]
    assert main_header == {"type": "session", "version": 0, "id": "main", "createdAt": main_header["createdAt"],
                           "cwd": str(work), "delegationDepth": 0}
    assert list(main_header) == ["type", "version", "id", "createdAt", "cwd", "delegationDepth"]


# === host §4.3.8, host §4.3.2, host §4.4, host §4.5 with time context on (serve's default) ==================


ACCEPTED_ZONES = [
    ("UTC", "UTC"), ("Etc/UTC", "UTC"), ("Etc/GMT", "UTC"), ("Etc/Zulu", "UTC"), ("asia/shanghai", "Asia/Shanghai"),
    ("Asia/Calcutta", "Asia/Kolkata"), ("US/Eastern", "America/New_York"), ("Europe/Kiev", "Europe/Kyiv"),
]
REFUSED_ZONES: list[Any] = [
    "utc", "GMT", "EST", "Z", "+08:00", "Asia//Shanghai", "Asia/Shanghai\n", "Mars/Olympus", "", None, 8,
]


def test_time_context_activity_zones_deltas_and_a_reminder(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    with serving("--root", str(root), env=clean_env(TZ="Europe/Berlin")) as s:
        s.send(request("i", "initialize", {"provider": "scripted", "model": "scripted", "streamDeltas": True}))
        s.reply("i")
        rid = "3f2a8f0e-5b1c-4d7e-9a6b-0c1d2e3f4a5b"
        s.send(prompt(rid, "main", "hi"))
        frames = s.idle("main")
        # host §4.3.8: receipt, running, reply, seq 1–9 with the reading at seq 5, idle.
        assert is_event(frames[0]) and frames[1] == status("main", "running") and frames[2]["id"] == rid
        events = events_of(frames)
        assert [e["type"] for e in events] == [
            "agent/inbox/spliced", "turn/start", "agent/inbox/spliced", "step/start", "user/message",
            "user/message", "request/header", "assistant/message", "step/end", "turn/end",
        ]
        assert [e["seq"] for e in events] == list(range(10))
        assert events[0]["data"]["inserted"][0]["source"] == {"kind": "user", "rpcId": rid}
        reading = events[5]["data"]
        assert list(reading) == ["id", "role", "source", "content"] and re.fullmatch(UUID4, reading["id"])
        assert reading["source"]["kind"] == "plugin" and reading["source"]["plugin"] == "time-context"
        assert reading["content"][0]["text"].startswith("Time sampled while preparing turn 1, step 1: ")
        assert "[Europe/Berlin]" in reading["content"][0]["text"]  # the process zone is the display fallback
        assert events[7]["data"]["message"]["content"] == [{"type": "text", "text": "You said: hi"}]
        assert events[9]["data"] == {"turn": 1, "reason": {"kind": "completed"}}
        # host §4.4: deltas only because streamDeltas was true; live only, never persisted.
        deltas = [f["params"] for f in frames if f.get("method") == "session.delta"]
        assert deltas and all(list(d) == ["sessionId", "turn", "step", "chunk"] for d in deltas)
        assert all(d["sessionId"] == "main" and d["turn"] == 1 and d["step"] == 1 for d in deltas)
        assert "".join(d["chunk"].get("text", "") for d in deltas if d["chunk"]["type"] == "text-delta") == "You said: hi"
        assert frames.index(next(f for f in frames if f.get("method") == "session.delta")) > frames.index(
            next(f for f in frames if is_event(f) and f["params"]["event"]["type"] == "request/header"))

        # The host §4.3.2 example: receipt, running, reply, in this order; the canonical zone is stored.
        s.send(request("i2", "initialize", {"provider": "scripted"}))
        s.reply("i2")
        s.send({"jsonrpc": "2.0", "id": "p-2", "method": "session/prompt",
                "params": {"sessionId": "main", "contentBlocks": [{"type": "text", "text": "what time is it?"}],
                           "clientTimeZone": "Asia/Calcutta"}})
        first = [s.frame(), s.frame(), s.frame()]
        receipt = first[0]["params"]["event"]
        message = receipt["data"]["inserted"][0]
        assert compact(first[0]) == compact({"jsonrpc": "2.0", "method": "session.event", "params": {
            "sessionId": "main", "event": {"type": "agent/inbox/spliced", "seq": 10, "time": receipt["time"], "data": {
                "target": "next-turn", "start": 0, "inserted": [{
                    "id": message["id"], "role": "user",
                    "source": {"kind": "user", "rpcId": "p-2", "clientTimeZone": "Asia/Kolkata"},
                    "content": [{"type": "text", "text": "what time is it?"}]}]}}}})
        assert first[1:] == [status("main", "running"), result("p-2", {"messageId": message["id"]})]
        frames = s.idle("main")
        assert not any(f.get("method") == "session.delta" for f in frames)  # a later initialize turned them off
        readings = [e for e in events_of(frames) if e["type"] == "user/message"
                    and e["data"]["source"].get("plugin") == "time-context"]
        assert "[Asia/Kolkata]" in readings[0]["data"]["content"][0]["text"]
        s.send({"jsonrpc": "2.0", "id": "p-3", "method": "session/prompt",
                "params": {"sessionId": "main", "contentBlocks": [{"type": "text", "text": "hi"}],
                           "clientTimeZone": "GMT"}})
        assert s.line() == (
            b'{"jsonrpc":"2.0","id":"p-3","error":{"code":-32603,"message":"clientTimeZone must be UTC or a valid '
            b'IANA Area/Location name","data":{"code":"invalid-time-zone","value":"GMT"}}}\n'
        )

        # The clientTimeZone table: refused values append nothing, accepted ones store the canonical name.
        for index, zone in enumerate(REFUSED_ZONES):
            s.send(prompt(f"z-{index}", "zones", "hi", clientTimeZone=zone))
            assert s.reply(f"z-{index}") == error(
                f"z-{index}", "clientTimeZone must be UTC or a valid IANA Area/Location name",
                code="invalid-time-zone", value=zone)
        assert not (root / "zones.jsonl").exists()
        s.send(*[prompt(f"a-{i}", "zones", "hi", clientTimeZone=zone) for i, (zone, _) in enumerate(ACCEPTED_ZONES)])
        frames = s.until(lambda f: f.get("id") == f"a-{len(ACCEPTED_ZONES) - 1}")
        receipts = [e["data"]["inserted"][0]["source"] for e in events_of(frames, "zones")
                    if e["type"] == "agent/inbox/spliced" and e["data"]["inserted"]]
        assert receipts == [{"kind": "user", "rpcId": f"a-{i}", "clientTimeZone": stored}
                            for i, (_, stored) in enumerate(ACCEPTED_ZONES)]
        s.idle("zones")

        # host §4.5 4: a reminder's follow-up is its own activity: receipt, dispatch, running, turn, idle.
        s.send(prompt("rem", "kitchen", "remind me in 1 second to stretch"))
        first_turn = s.idle("kitchen")
        turn_events = events_of(first_turn, "kitchen")
        call = next(e for e in turn_events if e["type"] == "tool/call")["data"]
        assert call == {"turn": 1, "step": 1, "callId": "call-1-1-0", "name": "schedule_create",
                        "arguments": '{"prompt":"stretch","after_seconds":1}'}
        later = s.idle("kitchen")
        assert is_event(later[0], "kitchen") and is_event(later[1], "kitchen")
        follow_up = later[0]["params"]["event"]["data"]["inserted"][0]
        assert follow_up["source"] == {"kind": "plugin", "plugin": "schedule"}
        assert list(follow_up) == ["id", "role", "source", "content"]
        assert later[1]["params"]["event"]["data"] == {"version": 1, "operation": "dispatch", "id": "schedule-1"}
        assert later[2] == status("kitchen", "running")
        assert events_of(later[3:])[0]["type"] == "turn/start"
        assert events_of(later)[-1]["type"] == "turn/end" and later[-1] == status("kitchen", "idle")
        replies = [e for e in events_of(later) if e["type"] == "assistant/message"]
        assert replies[-1]["data"]["message"]["content"] == [{"type": "text", "text": "Reminder: stretch"}]
        assert not any("id" in f for f in later)  # no request owns it

        s.close_stdin()  # EOF: shutdown without a reply, exit 0
        assert s.end() == 0


# === host §4.1 framing and classification, host §8 bad input ================================================


def test_bad_lines_framing_and_classification(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    valid = {"sessionId": "main", "contentBlocks": [{"type": "text", "text": "hi"}]}
    not_utf8 = b'{"jsonrpc":"2.0","id":"u8","method":"session/list","params":{"x":"\xff"}}'
    long_text = "x" * 700
    with serving("--root", str(root), "--no-time-context", "--max-line-bytes", "600") as s:
        s.send(
            b"not json\n",  # (1) invalid JSON
            not_utf8 + b"\n",  # (1) invalid UTF-8
            b"\n   \n\r\n",  # empty lines are skipped
            compact([request("b", "session/prompt", valid)]).encode() + b"\n",  # (2) a batch
            b'"session/prompt"\n', b"3\n", b"null\n", b"true\n",  # (2) scalars and null
            {"jsonrpc": "2.0", "method": "session/prompt", "params": valid},  # (4) a client notification
            {"jsonrpc": "2.0", "method": "shutdown"},  # (4) whatever its name
            {"jsonrpc": "2.0", "id": "r", "result": {}},  # (5) a response frame
            {"jsonrpc": "2.0", "id": "e", "error": {"code": 1, "message": "m"}},
            *[{"jsonrpc": "2.0", "id": rid, "method": "session/prompt", "params": valid}
              for rid in (True, False, {"a": 1}, [1], None)],  # ids that make a notification
            {"jsonrpc": "2.0", "id": "m", "method": 5},  # a method that is not a string
            b"\x00\n",
            {"id": "sentinel", "method": "session/list"},  # jsonrpc is not checked
        )
        assert s.reply("sentinel") == result("sentinel", {"sessions": [], "skipped": []})

        # Surrounding whitespace and CR are stripped; params that are absent or not an object are {};
        # unknown params members are ignored; ids keep their JSON type.
        s.send(
            b"  " + compact(request(7, "session/list", [1, 2])).encode() + b" \r\n",
            {"jsonrpc": "1.0", "id": 7.5, "method": "session/list", "params": {"unknown": 1}},
            {"jsonrpc": "2.0", "id": -3, "method": "session/list", "params": "x"},
        )
        assert sorted(s.line() for _ in range(3)) == [  # requests run concurrently: any order
            b'{"jsonrpc":"2.0","id":-3,"result":{"sessions":[],"skipped":[]}}\n',
            b'{"jsonrpc":"2.0","id":7,"result":{"sessions":[],"skipped":[]}}\n',
            b'{"jsonrpc":"2.0","id":7.5,"result":{"sessions":[],"skipped":[]}}\n',
        ]

        # Valid JSON that cannot be stored: -32603 unsupported-json for a request, dropped otherwise.
        unsupported = "request contains a lone surrogate or a number out of range"
        s.send(
            b'{"jsonrpc":"2.0","id":"s1","method":"session/prompt","params":{"sessionId":"main",'
            b'"contentBlocks":[{"type":"text","text":"\\ud800"}]}}\n',
            b'{"jsonrpc":"2.0","id":"s2","method":"session/prompt","params":{"sessionId":"main",'
            b'"contentBlocks":[{"type":"text","text":"x"}],"n":1e400}}\n',
            b'{"jsonrpc":"2.0","id":"s3","method":"session/list","params":{"n":-' + b"9" * 400 + b"}}\n",
            b'{"jsonrpc":"2.0","method":"session/list","params":{"x":"\\udc00"}}\n',
            b'{"jsonrpc":"2.0","id":"s4","method":"nope","params":{"x":"\\udfff"}}\n',
        )
        replies = sorted((s.frame() for _ in range(4)), key=lambda f: f["id"])
        assert replies == [error(rid, unsupported, code="unsupported-json") for rid in ("s1", "s2", "s3", "s4")]

        # Lines over --max-line-bytes: the id of the first 1024 bytes gets line-too-long; without
        # one there is no reply; the rest of the line is never parsed.
        too_long = "request line exceeds 600 bytes"
        s.send(
            compact(prompt("big", "main", long_text)).encode() + b"\n",
            b'{"id":12,"jsonrpc":"2.0","method":"session/list","params":{"x":"' + long_text.encode() + b'"}}\n',
            compact({"jsonrpc": "2.0", "method": "session/list", "params": {"x": long_text}}).encode() + b"\n",
            b'{"pad":"' + b"p" * 1100 + b'","id":"late","method":"session/list"}\n',
            b'{"id":true,"method":"session/list","params":{"x":"' + long_text.encode() + b'"}}\n',
            b'{"jsonrpc":"2.0","method":"x","params":{"y":"' + b"z" * 700 + b'\n',  # not JSON and too long
            compact(request("after", "session/list")).encode() + b"\n",
        )
        replies = [s.frame() for _ in range(3)]
        assert error("big", too_long, code="line-too-long", limit=600) in replies
        assert error(12, too_long, code="line-too-long", limit=600) in replies
        assert result("after", {"sessions": [], "skipped": []}) in replies

        # \\uXXXX escapes, surrogate pairs included, decode; stored and sent with raw non-ASCII.
        s.send(b'{"jsonrpc":"2.0","id":"esc","method":"session/prompt","params":{"sessionId":"ok",'
               b'"contentBlocks":[{"type":"text","text":"caf\\u00e9 \\ud83d\\ude00"}]}}\n')
        frames = s.idle("ok")
        assert events_of(frames)[0]["data"]["inserted"][0]["content"] == [{"type": "text", "text": "café 😀"}]
        assert "café 😀".encode() in s.raw[-len(frames)]  # the receipt

        s.send(request("bye", "shutdown"))
        assert s.reply("bye") == result("bye", {})
        assert s.end() == 0
    assert sorted(p.name for p in root.iterdir()) == ["ok.jsonl"]  # nothing else was ever admitted
    assert "café 😀".encode() in (root / "ok.jsonl").read_bytes()
    assert s.stderr[:3] == [
        "turnlog serve: ignored a line that is not valid JSON (8 bytes)",
        f"turnlog serve: ignored a line that is not valid JSON ({len(not_utf8)} bytes)",
        "turnlog serve: ignored a line that is not valid JSON (1 bytes)",
    ]
    overlong = [line for line in s.stderr if "600" in line]
    assert len(overlong) == 6 and len(s.stderr) == 9, s.stderr


# === host §4.2 errors and the parameter checks of host §4.3 =================================================


def test_errors_table_and_parameter_checks(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    (tmp_path / "a-file").write_text("x")
    blocks = [{"type": "text", "text": "hi"}]

    def id_message(method: str) -> str:
        return f"{method} sessionId must match {ID_RULE}"

    with serving("--root", str(root), "--no-time-context", cwd=tmp_path) as s:
        cases: list[tuple[dict[str, Any], str, dict[str, Any]]] = [
            (request("u", "session/delete", {}), "unknown DeepSeek Harness SDK runtime method: session/delete",
             {"code": "unknown-method", "method": "session/delete"}),
            # initialize: checked in the order cwd, provider, model, maxTokens, reasoningEffort, streamDeltas.
            *[(request(f"mt-{i}", "initialize", {"maxTokens": bad}), "initialize maxTokens must be a positive safe integer",
               {"code": "invalid-params", "field": "maxTokens"}) for i, bad in enumerate([True, 0, 1.5, 2**53, -1, "8"])],
            (request("c1", "initialize", {"cwd": 5, "provider": ""}), None, {"code": "invalid-params", "field": "cwd"}),
            (request("c2", "initialize", {"provider": "", "model": 5}), None,
             {"code": "invalid-params", "field": "provider"}),
            (request("c3", "initialize", {"model": "", "maxTokens": 0}), None, {"code": "invalid-params", "field": "model"}),
            (request("c4", "initialize", {"maxTokens": 0, "reasoningEffort": ""}), None,
             {"code": "invalid-params", "field": "maxTokens"}),
            (request("c5", "initialize", {"reasoningEffort": "", "streamDeltas": 1}), None,
             {"code": "invalid-params", "field": "reasoningEffort"}),
            (request("c6", "initialize", {"streamDeltas": "yes", "provider": "nope"}), None,
             {"code": "invalid-params", "field": "streamDeltas"}),
            (request("c7", "initialize", {"provider": "nope"}), 'no adapter registered for provider "nope"',
             {"code": "unknown-provider", "provider": "nope"}),
            # session/prompt: sessionId, contentBlocks, mode, then clientTimeZone.
            (request("p1", "session/prompt", {"sessionId": "-x", "contentBlocks": [], "clientTimeZone": "GMT"}),
             id_message("session/prompt"), {"code": "invalid-session-id", "value": "-x"}),
            (request("p2", "session/prompt", {"contentBlocks": blocks}), id_message("session/prompt"),
             {"code": "invalid-session-id", "value": None}),
            (request("p3", "session/prompt", {"sessionId": "x" * 129, "contentBlocks": blocks}),
             id_message("session/prompt"), {"code": "invalid-session-id", "value": "x" * 129}),
            (request("p4", "session/prompt", {"sessionId": 5, "contentBlocks": blocks}),
             id_message("session/prompt"), {"code": "invalid-session-id", "value": 5}),
            *[(request(f"cb-{i}", "session/prompt", {"sessionId": "main", "contentBlocks": bad, "mode": "x"}),
               "session/prompt contentBlocks must be a non-empty array of content blocks",
               {"code": "invalid-params", "field": "contentBlocks"}) for i, bad in enumerate([[], None, "hi", {}])],
            *[(request(f"cbi-{i}", "session/prompt", {"sessionId": "main", "contentBlocks": [*blocks, bad]}), None,
               {"code": "invalid-params", "field": "contentBlocks[1]"})
              for i, bad in enumerate([{"type": "text"}, {"type": "text", "text": 1}, {"type": "image"},
                                       {"type": "image", "attachment": "a"}, {"type": "reasoning", "text": "t"},
                                       "hi", None])],
            (request("m1", "session/prompt", {"sessionId": "main", "contentBlocks": blocks, "mode": "later",
                                              "clientTimeZone": "GMT"}), None,
             {"code": "invalid-params", "field": "mode"}),
            *[(request(f"id-{method}", method, {"sessionId": ".x"}), id_message(method),
               {"code": "invalid-session-id", "value": ".x"})
              for method in ("session/resume", "session/working-directory/get", "session/fork", "session/history")],
            (request("id-set", "session/working-directory/set", {"sessionId": "", "path": "."}),
             id_message("session/working-directory/set"), {"code": "invalid-session-id", "value": ""}),
            (request("fc", "session/fork", {"sessionId": "main", "childSessionId": "bad id"}),
             "session/fork childSessionId must match " + ID_RULE, {"code": "invalid-session-id", "value": "bad id"}),
            *[(request(f"hf-{i}", "session/history", {"sessionId": "main", "fromSeq": bad}), None,
               {"code": "invalid-params", "field": "fromSeq"}) for i, bad in enumerate([-1, 1.5, True, 2**53, "0"])],
            *[(request(f"hl-{i}", "session/history", {"sessionId": "main", "limit": bad}), None,
               {"code": "invalid-params", "field": "limit"}) for i, bad in enumerate([0, 10001, True, 2.0, None])],
            *[(request(f"fb-{i}", "session/fork", {"sessionId": "main", "boundarySeq": bad}), None,
               {"code": "invalid-params", "field": "boundarySeq"}) for i, bad in enumerate([-1, 1.5, True, "3"])],
            (request("wp", "session/working-directory/set", {"sessionId": "w"}), None,
             {"code": "invalid-params", "field": "path"}),
            (request("nf1", "session/resume", {"sessionId": "ghost"}), 'session "ghost" not found',
             {"code": "session-not-found"}),
            (request("nf2", "session/fork", {"sessionId": "ghost"}), 'session "ghost" not found',
             {"code": "session-not-found"}),
            (request("nf3", "session/history", {"sessionId": "ghost"}), 'session "ghost" not found',
             {"code": "session-not-found"}),
        ]
        # A request nested deeper than 256 levels is too-deep under its id (host §4.1), even when
        # it is too deep to parse; the server serves on.
        deep = b'{"jsonrpc":"2.0","id":"deep","method":"session/list","params":{"x":' + b"[" * 5000 + b"]" * 5000
        s.send(deep + b"}}\n", request("after-deep", "session/list"))
        assert s.reply("deep")["error"] == {
            "code": -32603,
            "message": "request nests deeper than 256 levels",
            "data": {"code": "too-deep", "limit": 256},
        }
        assert s.reply("after-deep")["result"] == {"sessions": [], "skipped": []}
        for frame, message, data in cases:
            s.send(frame)
            reply = s.reply(frame["id"])
            assert list(reply) == ["jsonrpc", "id", "error"] and list(reply["error"]) == ["code", "message", "data"]
            assert reply["error"]["code"] == -32603 and reply["error"]["data"] == data, (frame, reply)
            assert next(iter(reply["error"]["data"])) == "code"
            if message is not None:
                assert reply["error"]["message"] == message, (frame, reply)
            if data.get("field"):
                assert reply["error"]["message"].startswith(f'{frame["method"]} {data["field"]} '), reply
            assert "\n" not in reply["error"]["message"]
        assert not root.exists() or list(root.iterdir()) == []  # no refused request appended anything

        # A failed initialize leaves the route: prompts still use the scripted model.
        s.send(prompt("ok", "main", "hi"))
        turn = events_of(s.idle("main"))
        assert turn[6]["data"]["message"]["content"] == [{"type": "text", "text": "You said: hi"}]
        assert turn[5]["data"]["header"]["config"] == {"provider": "scripted", "model": "scripted"}

        # Working directories (host §4.3.4): lazily live, resolved, in memory only.
        s.send(request("g", "session/working-directory/get", {"sessionId": "w"}))
        assert s.reply("g") == result("g", {"cwd": str(tmp_path)})
        s.send(request("st", "session/working-directory/set", {"sessionId": "w", "path": "sessions"}))
        assert s.reply("st") == result("st", {"cwd": str(root)})
        s.send(request("st2", "session/working-directory/set", {"sessionId": "w", "path": "../a-file"}))
        assert s.reply("st2") == error(
            "st2", f"working directory does not exist or is not a directory: {tmp_path / 'a-file'}",
            code="not-a-directory", path=str(tmp_path / "a-file"))
        s.send(request("g2", "session/working-directory/get", {"sessionId": "w"}))
        assert s.reply("g2") == result("g2", {"cwd": str(root)})
        s.send(request("g3", "session/working-directory/get", {"sessionId": "main"}))
        assert s.reply("g3") == result("g3", {"cwd": str(tmp_path)})  # other sessions unaffected

        # Fork refusals and a child id that exists (host §4.3.5).
        s.send(request("fx", "session/fork", {"sessionId": "main", "childSessionId": "main"}))
        assert s.reply("fx") == error("fx", 'session "main" already exists', code="session-exists")
        s.send(request("fo", "session/fork", {"sessionId": "main", "boundarySeq": 5}))
        assert s.reply("fo") == error("fo", 'fork boundary 5 in session "main" ends inside open turn 1',
                                      code="open-turn")
        s.send(request("fi", "session/fork", {"sessionId": "main", "boundarySeq": 99}))
        refused = s.reply("fi")["error"]
        assert refused["data"] == {"code": "invalid-boundary"} and "99" in refused["message"]
        s.send(request("fd", "session/fork", {"sessionId": "main"}))  # defaults: last seq, session-<32 hex>
        forked = s.until(lambda f: f.get("id") == "fd")
        child = forked[-1]["result"]["sessionId"]
        assert re.fullmatch("session-[0-9a-f]{32}", child)
        assert forked[-1] == result("fd", {"sessionId": child, "parentSessionId": "main", "seedLength": 9})
        assert forked[0]["params"] == {"parentSessionId": "main", "childSessionId": child}

        # host §4.3.3 on a cold session, then on a live one; the child continues the numbering.
        s.send(request("rs", "session/resume", {"sessionId": child}))
        assert s.reply("rs") == result("rs", {"sessionId": child, "disposition": "resumed"})
        s.send(request("rs2", "session/resume", {"sessionId": child}))
        assert s.reply("rs2") == result("rs2", {"sessionId": child, "disposition": "already-live"})
        s.send(prompt("cp", child, "again"))
        child_turn = events_of(s.idle(child))
        assert child_turn[1]["data"] == {"turn": 2}
        assert [e["data"]["reason"] for e in child_turn if e["type"] == "request/header"] == ["resume"]

        # Requests after shutdown began are refused; every pending shutdown gets {}.
        s.send(request("x1", "shutdown"), request("x2", "session/list"), request("x3", "shutdown"))
        replies = [s.frame(), s.frame(), s.frame()]
        assert error("x2", "SDK server is shutting down", code="shutting-down") in replies
        assert result("x1", {}) in replies and result("x3", {}) in replies
        assert s.end() == 0
    assert sorted(p.name for p in root.iterdir()) == sorted(["main.jsonl", f"{child}.jsonl"])
    assert s.stderr == [f"turnlog serve: ignored a line nested deeper than 256 levels ({len(deep) + 2} bytes)"]


# === host §5.3, host §5.4, host §8: files that cannot be served, one writer per file ========================


def test_busy_corrupt_unsupported_and_unwritable(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    root.mkdir()
    corrupt = (b'{"type":"session","version":0,"id":"bad","createdAt":1}\n'
               b'{"type":"turn/start","seq":5,"time":1,"data":{"turn":1}}\n'
               b'{"type":"turn/end","seq":6,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}\n')
    (root / "bad.jsonl").write_bytes(corrupt)
    newer = b'{"type":"session","version":3,"id":"newer"}\n'
    (root / "newer.jsonl").write_bytes(newer)
    torn = (b'{"type":"session","version":0,"id":"torn","createdAt":1}\n'
            b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}\n{"type":"step/st')
    (root / "torn.jsonl").write_bytes(torn)
    with serving("--root", str(root), "--no-time-context") as first, \
            serving("--root", str(root), "--no-time-context") as second:
        first.send(prompt("p", "main", "hi"))
        first.idle("main")
        held = (root / "main.jsonl").read_bytes()
        second.send(prompt("busy", "main", "hi"))
        assert second.reply("busy") == error("busy", 'session "main" is already open for writing', code="session-busy")
        second.send(request("busy2", "session/resume", {"sessionId": "main"}))
        assert second.reply("busy2") == error("busy2", 'session "main" is already open for writing',
                                              code="session-busy")
        # Readers never lock: the other process lists and reads the held session.
        second.send(request("l", "session/list"), request("h", "session/history", {"sessionId": "main"}))
        replies = {f["id"]: f["result"] for f in (second.frame(), second.frame())}
        assert [(e["sessionId"], e["live"]) for e in replies["l"]["sessions"]] == [
            ("bad", False), ("torn", False), ("main", False)]  # createdAt, then sessionId; headers only
        assert [e["file"] for e in replies["l"]["skipped"]] == ["newer.jsonl"]
        assert len(replies["h"]["events"]) == 9
        assert (root / "main.jsonl").read_bytes() == held

        for rid, session_id, code in [("c1", "bad", "session-corrupt"), ("u1", "newer", "session-unsupported")]:
            second.send(prompt(rid, session_id, "hi"))
            reply = second.reply(rid)["error"]
            assert reply["data"] == {"code": code} and "\n" not in reply["message"]
            assert str(root / f"{session_id}.jsonl") in reply["message"]  # eventlog's message names the file
            second.send(request(rid + "r", "session/resume", {"sessionId": session_id}))
            assert second.reply(rid + "r")["error"] == reply
        assert (root / "bad.jsonl").read_bytes() == corrupt
        assert (root / "newer.jsonl").read_bytes() == newer
        second.send(request("u2", "session/history", {"sessionId": "newer"}))
        assert second.reply("u2")["error"]["message"] == (
            'session "newer" uses log format v3, but this turnlog reads only v0: the log was written by a newer '
            f"program — upgrade turnlog to open it (raw log: {root / 'newer.jsonl'})")

        # A torn tail is repaired on resume, and the open turn closed once as interrupted; those
        # events are not notified, history shows them.
        second.send(request("t", "session/resume", {"sessionId": "torn"}))
        assert second.reply("t") == result("t", {"sessionId": "torn", "disposition": "resumed"})
        second.send(request("th", "session/history", {"sessionId": "torn"}))
        repaired = second.reply("th")["result"]["events"]
        assert repaired[-1]["type"] == "turn/end" and repaired[-1]["data"] == {"turn": 1, "reason": {"kind": "interrupted"}}
        first.close_stdin()
        second.close_stdin()
        assert first.end() == 0 and second.end() == 0

    # The root cannot be created (it became a file after start-up): persistence-failed, nothing admitted.
    blocked = tmp_path / "blocked"
    with serving("--root", str(blocked), "--no-time-context") as s:
        s.send(request("i", "initialize"))
        s.reply("i")
        blocked.write_text("x")
        s.send(prompt("p", "main", "hi"))
        failed = s.reply("p")["error"]
        assert failed["data"] == {"code": "persistence-failed", "sessionId": "main"}
        assert ": " in failed["message"] and "\n" not in failed["message"]
        s.close_stdin()
        assert s.end() == 0
    assert blocked.read_text() == "x"


# === host §4.3.9 and host §3.9: shutdown while a turn runs ==================================================


@contextmanager
def hanging_turn(tmp_path: Path) -> Iterator[Serve]:
    """A server on ``tmp_path/sessions`` whose session ``main`` is in a turn whose model call
    never returns (its request/header has been notified)."""
    script = tmp_path / "script.jsonl"
    script.write_text('{"hang":true}\n')
    with serving("--root", str(tmp_path / "sessions"), "--no-time-context", "--script", str(script)) as s:
        s.send(prompt("p1", "main", "first"))
        s.until(lambda f: is_event(f) and f["params"]["event"]["type"] == "request/header")
        yield s


def test_shutdown_during_a_turn_keeps_queued_prompts(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    with hanging_turn(tmp_path) as s:
        s.send(prompt("p2", "main", "second"))
        queued = s.until(lambda f: f.get("id") == "p2")[-1]
        s.send(request("bye", "shutdown"))
        assert s.line() == b'{"jsonrpc":"2.0","id":"bye","result":{}}\n'  # no event or status frame
        assert s.end() == 0
    events = log_events(root / "main.jsonl")
    assert [e["type"] for e in events[-3:]] == ["agent/inbox/spliced", "step/end", "turn/end"]
    assert events[-3]["data"]["inserted"][0]["id"] == queued["result"]["messageId"]
    assert events[-2]["data"] == {"turn": 1, "step": 1}
    assert compact(events[-1]["data"]) == compact({"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "disposed"}}})
    assert not any(e["data"].get("outcome") == "canceled" for e in events if e["type"] == "agent/inbox/spliced")


@pytest.mark.parametrize(("trigger", "code"), [
    ("eof", 0), ("sigterm", 0), ("sigint", 130), ("broken-pipe", 0), ("sigint-then-sigterm", 130),
])
def test_ends_of_input_and_signals(tmp_path: Path, trigger: str, code: int) -> None:
    """stdin EOF, SIGTERM, SIGINT and a closed stdout: steps 1–4 and 6 without a reply."""
    root = tmp_path / "sessions"
    with hanging_turn(tmp_path) as s:
        if trigger == "eof":
            s.close_stdin()
        elif trigger == "broken-pipe":
            s.stop_reading()  # the next frame meets a broken pipe
            s.send(request("l", "session/list"))
        else:
            s.proc.send_signal(signal.SIGTERM if trigger == "sigterm" else signal.SIGINT)
            if trigger == "sigint-then-sigterm":
                s.proc.send_signal(signal.SIGTERM)
        if trigger != "broken-pipe":
            assert s.frame() is None  # nothing more, no reply
        assert s.wait() == code
    events = log_events(root / "main.jsonl")
    assert events[-1]["data"] == {"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "disposed"}}}


# === host §6.4, host §6.5, host §3.6, host §3.11: the openai adapter behind serve ===========================


class Endpoint:
    """A chat-completions endpoint on 127.0.0.1 answering queued responses in order."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.responses: queue.Queue[tuple[int, dict[str, str], bytes]] = queue.Queue()
        endpoint = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                endpoint.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                code, headers, payload = endpoint.responses.get(timeout=HANG_GUARD_S)
                self.send_response(code)
                for name, value in {**headers, "content-length": str(len(payload))}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, code: int, payload: bytes, **headers: str) -> None:
        self.responses.put((code, {k.replace("_", "-"): v for k, v in headers.items()}, payload))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def sse(*payloads: Any) -> bytes:
    return b"".join(b"data: " + (p if isinstance(p, bytes) else compact(p).encode()) + b"\n\n" for p in payloads)


def test_openai_routes_failures_and_retries(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    endpoint = Endpoint()
    env = clean_env(TURNLOG_BASE_URL=endpoint.url + "/tl/", DEEPSEEK_BASE_URL=endpoint.url + "/ds",
                    TURNLOG_API_KEY="")  # an empty variable counts as unset
    try:
        with serving("--root", str(root), "--no-time-context", env=env) as s:
            # The default provider is openai because TURNLOG_BASE_URL is set; there is no model.
            s.send(prompt("p1", "main", "hi"))
            turn = events_of(s.idle("main"))
            assert turn[-1]["data"] == {"turn": 1, "reason": {"kind": "error", "error": {
                "message": 'no model configured for provider "openai"', "code": "MISSING_CONFIG"}}}
            assert endpoint.requests == []

            # host §3.11 model failure: 401 → step/end, then turn/end error with status; no assistant message.
            s.send(request("i1", "initialize", {"model": "m-1"}))
            s.reply("i1")
            endpoint.answer(401, compact({"error": {"message": "Incorrect API key provided",
                                                    "type": "invalid_request_error", "code": "invalid_api_key"}}).encode(),
                            content_type="application/json")
            s.send(prompt("p2", "main", "hello"))
            turn = events_of(s.idle("main"))
            assert [e["type"] for e in turn[-2:]] == ["step/end", "turn/end"]
            assert not any(e["type"] == "assistant/message" for e in turn)
            assert compact(turn[-1]["data"]) == compact({"turn": 2, "reason": {"kind": "error", "error": {
                "message": "Incorrect API key provided", "code": "AUTH", "status": 401}}})
            path, headers, body = endpoint.requests[-1]
            assert path == "/tl/chat/completions"
            assert headers["content-type"] == "application/json" and headers["accept"] == "text/event-stream"
            assert headers["user-agent"] == f"turnlog/{VERSION}" and "authorization" not in headers
            sent = json.loads(body)
            assert list(sent) == ["model", "messages", "stream", "stream_options", "tools"]
            assert sent["model"] == "m-1" and sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
            assert sent["messages"] == [{"role": "system", "content": DEFAULT_SYSTEM}, {"role": "user", "content": "hi"},
                                        {"role": "user", "content": "hello"}]
            assert [t["function"]["name"] for t in sent["tools"]] == SCHEDULE_TOOLS
            assert all(list(t) == ["type", "function"] and list(t["function"]) == ["name", "description", "parameters"]
                       for t in sent["tools"])

            # deepseek-official prefers DEEPSEEK_BASE_URL; a 503 is retried in the same step.
            s.send(request("i2", "initialize", {"provider": "deepseek-official", "model": "ds-1", "maxTokens": 64,
                                                "reasoningEffort": "high"}))
            s.reply("i2")
            endpoint.answer(503, b'{"error":{"message":"upstream overloaded"}}', retry_after="0", x_request_id="req-9")
            endpoint.answer(200, sse(
                {"choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "thinking"}}]},
                {"choices": [{"index": 0, "delta": {"content": "Hel"}}]},
                {"choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": "stop"}]},
                {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 2,
                                          "prompt_tokens_details": {"cached_tokens": 4}}},
                b"[DONE]",
            ), content_type="text/event-stream")
            s.send(prompt("p3", "main", "again"))
            turn = events_of(s.idle("main"))
            assert [e["type"] for e in turn].count("turn/start") == 1
            types = [e["type"] for e in turn]
            retry = turn[types.index("llm/retry")]["data"]
            assert re.fullmatch(UUID4, retry["retryId"])
            assert compact(retry) == compact({
                "retryId": retry["retryId"], "turn": 3, "step": 1, "provider": "deepseek-official", "mode": "normal",
                "policyKey": "default", "retry": 1, "maxRetries": 5, "delayMs": 0,
                "failure": {"message": "upstream overloaded", "code": "SERVER", "status": 503,
                            "providerRetryAfterMs": 0, "requestId": "req-9"}})
            assert turn[types.index("llm/retry") + 1]["data"] == {"retryId": retry["retryId"], "turn": 3, "step": 1,
                                                                  "retry": 1}
            assert types[types.index("llm/retry") + 2:] == ["assistant/message", "step/end", "turn/end"]
            header = turn[types.index("request/header")]["data"]
            assert header["reason"] == "change" and header["header"]["config"] == {
                "provider": "deepseek-official", "model": "ds-1", "reasoningEffort": "high", "maxTokens": 64}
            assistant = turn[types.index("assistant/message")]["data"]
            assert assistant["message"]["source"] == {"kind": "model", "provider": "deepseek-official", "model": "ds-1"}
            assert assistant["message"]["content"] == [{"type": "reasoning", "text": "thinking"},
                                                       {"type": "text", "text": "Hello"}]
            assert compact(assistant["usage"]) == compact({"inputTokens": 6, "outputTokens": 2, "cacheReadTokens": 4})
            assert turn[-1]["data"] == {"turn": 3, "reason": {"kind": "completed"}}
            assert [r[0] for r in endpoint.requests[-2:]] == ["/ds/chat/completions"] * 2
            sent = json.loads(endpoint.requests[-1][2])
            assert list(sent)[-2:] == ["max_tokens", "reasoning_effort"]
            assert sent["max_tokens"] == 64 and sent["reasoning_effort"] == "high"
            assert sent["messages"][-1] == {"role": "user", "content": "again"}
            s.close_stdin()
            assert s.end() == 0
    finally:
        endpoint.close()


# === host §6.3 script mode behind serve ================================================================


def test_script_mode_cursor_tools_and_exhaustion(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    script = tmp_path / "script.jsonl"
    script.write_text(
        '{"toolCalls":[{"name":"nope","arguments":{"a":1}}]}\n'
        "\n"
        '{"text":"after the tool","usage":{"inputTokens":3,"outputTokens":4}}\n'
        '{"reasoning":"hmm","text":"second session","finish":"max-tokens"}\n'
    )
    with serving("--root", str(root), "--no-time-context", env=clean_env(TURNLOG_SCRIPT=str(script))) as s:
        s.send(prompt("a1", "a", "hi"))
        turn = events_of(s.idle("a"))
        result_event = next(e for e in turn if e["type"] == "tool/result")
        assert result_event["data"]["message"]["content"][0]["content"] == [
            {"type": "text", "text": 'Error: unknown tool "nope"'}]
        assert result_event["data"]["error"] == {"name": "ToolNotFoundError", "code": "UNKNOWN_TOOL"}
        assert next(e for e in turn if e["type"] == "tool/call")["data"]["callId"] == "call-1-1-0"
        final = [e for e in turn if e["type"] == "assistant/message"][-1]["data"]
        assert final["step"] == 2 and final["usage"] == {"inputTokens": 3, "outputTokens": 4}
        assert turn[-1]["data"] == {"turn": 1, "reason": {"kind": "completed"}}
        s.send(prompt("b1", "b", "hi"))  # one cursor for every session of the process
        turn = events_of(s.idle("b"))
        assert next(e for e in turn if e["type"] == "assistant/message")["data"]["message"]["content"] == [
            {"type": "reasoning", "text": "hmm"}, {"type": "text", "text": "second session"}]
        assert turn[-1]["data"] == {"turn": 1, "reason": {"kind": "max-tokens"}}
        s.send(prompt("a2", "a", "more"))
        turn = events_of(s.idle("a"))
        assert compact(turn[-1]["data"]) == compact({"turn": 2, "reason": {"kind": "error", "error": {
            "message": "scripted model: script exhausted", "code": "SCRIPT_EXHAUSTED"}}})
        s.close_stdin()
        assert s.end() == 0


def test_sigkill_then_resume_closes_the_turn_as_interrupted(tmp_path: Path) -> None:
    """host §8: after SIGKILL nothing runs; the next open repairs the log and the session serves on."""
    root = tmp_path / "sessions"
    with hanging_turn(tmp_path) as s:
        wait_for(lambda: b'"request/header"' in read_or_empty(root / "main.jsonl"))  # the checkpoint is durable
        s.proc.kill()
        assert s.wait() == -signal.SIGKILL
    with serving("--root", str(root), "--no-time-context") as s:
        s.send(request("r", "session/resume", {"sessionId": "main"}))
        assert s.reply("r") == result("r", {"sessionId": "main", "disposition": "resumed"})
        s.send(request("h", "session/history", {"sessionId": "main"}))
        events = s.reply("h")["result"]["events"]
        assert events[-1]["data"] == {"turn": 1, "reason": {"kind": "interrupted"}}
        assert [e["type"] for e in events[:6]] == ["agent/inbox/spliced", "turn/start", "agent/inbox/spliced",
                                                   "step/start", "user/message", "request/header"]
        s.send(prompt("p2", "main", "again"))
        turn = events_of(s.idle("main"))
        assert turn[1]["data"] == {"turn": 2}
        assert [e["data"]["reason"] for e in turn if e["type"] == "request/header"] == ["resume"]
        assert turn[-1]["data"] == {"turn": 2, "reason": {"kind": "completed"}}
        s.close_stdin()
        assert s.end() == 0


@pytest.mark.parametrize("late", [signal.SIGTERM, signal.SIGINT])
def test_signals_after_the_shutdown_reply_change_nothing(tmp_path: Path, late: signal.Signals) -> None:
    """host §4.3.9: the client may signal right after the reply; the first trigger decided the code."""
    with serving("--root", str(tmp_path / "sessions"), "--no-time-context") as s:
        s.send(request("bye", "shutdown"))
        assert s.reply("bye") == result("bye", {})
        deadline = time.monotonic() + HANG_GUARD_S
        while s.proc.poll() is None and time.monotonic() < deadline:  # signal until it is gone
            s.proc.send_signal(late)
            time.sleep(0.002)
        assert s.wait() == 0
