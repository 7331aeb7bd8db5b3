"""Hostile and mutated frames against one long-lived ``turnlog serve`` process (host §4, §8).

After every fuzzed line the test sends a ``session/list`` request as a fence and reads up to its
reply, so everything the fuzzed line caused lies before the fence. It asserts, for every line:

- a request (a string or number id and a string method, host §4) gets exactly one reply, well
  formed, echoing that id; any other line gets at most one reply, with id ``null``;
- a refusal changes no file in the root;
- the process stays up, and nothing on its stderr is ever a Python traceback.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.fuzz import strategies
from tests.host.process_support import clean_env

HANG_GUARD_S = 30.0  # only guards against a hang

METHODS = (
    "initialize",
    "session/prompt",
    "session/resume",
    "session/working-directory/get",
    "session/working-directory/set",
    "session/fork",
    "session/list",
    "session/history",
    "session/cancel",
    "session/inspect",
)
SESSION_IDS = ("main", "other", "", "../up", "a" * 300, "x/y", "\u0000", "séance")
KNOWN_KEYS = (
    "sessionId",
    "contentBlocks",
    "clientTimeZone",
    "mode",
    "cwd",
    "provider",
    "model",
    "maxTokens",
    "streamDeltas",
    "path",
    "atSeq",
    "beforeSeq",
    "limit",
    "newSessionId",
    "reasoningEffort",
)
# Providers that would reach the network are never chosen: the fuzzed host stays offline.
ONLINE_PROVIDERS = frozenset({"openai", "deepseek-official"})

EDGES = (-0.0, 2**53, 9007199254740993, 1e308)
json_scalars = strategies.json_scalars(EDGES)
json_values = strategies.json_values(EDGES)
blocks = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "image", "file", "tool-call", ""]) | st.text(max_size=6)},
    optional={"text": st.text(max_size=60) | json_values, "attachment": json_values, "mimeType": json_values},
)
params = st.dictionaries(
    st.sampled_from(KNOWN_KEYS) | st.text(max_size=8),
    st.sampled_from(SESSION_IDS) | json_values | st.lists(blocks, max_size=3),
    max_size=5,
).filter(lambda p: not (isinstance(p.get("provider"), str) and p["provider"] in ONLINE_PROVIDERS))


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    frame: dict[str, Any] = {"jsonrpc": draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0"]) | json_scalars)}
    frame["method"] = draw(st.sampled_from(METHODS) | st.text(max_size=20).filter(lambda m: m != "shutdown"))
    if draw(st.booleans()):
        frame["params"] = draw(params | json_values)
    for key in draw(st.lists(st.text(max_size=6), max_size=2)):
        frame.setdefault(key, draw(json_scalars))
    return frame


def nested(depth: int) -> str:
    return (
        '{"jsonrpc":"2.0","id":"ID","method":"session/list","params":'
        + '{"a":' * depth
        + "1"
        + "}" * depth
        + "}"
    )


# The reproductions of the outside campaign, as lines with the placeholder id ``ID``.
SEEDS = (
    (
        '{"jsonrpc":"2.0","id":"ID","method":"session/prompt","params":{"sessionId":"main","contentBlocks":'
        '[{"type":"image","attachment":{"n":-0.0}}]}}'
    ),
    (
        '{"jsonrpc":"2.0","id":"ID","method":"session/prompt","params":{"sessionId":"main","contentBlocks":'
        '[{"type":"image","attachment":{"n":9007199254740992}}]}}'
    ),
    (
        '{"jsonrpc":"2.0","id":"ID","method":"session/working-directory/set","params":{"sessionId":"main",'
        '"path":"/' + "d" * 300 + '"}}'
    ),
    (
        '{"jsonrpc":"2.0","id":"ID","method":"session/working-directory/set","params":{"sessionId":"main",'
        '"path":"LOOP"}}'
    ),
    '{"jsonrpc":"2.0","id":"ID","method":"initialize","params":{"cwd":"LOOP"}}',
    nested(980),
)
BAD_ID_SEEDS = (
    b'{"jsonrpc":"2.0","id":1e400,"method":"session/list"}',
    b'{"jsonrpc":"2.0","id":' + b"9" * 400 + b',"method":"session/list"}',
)


class Serve:
    """One ``turnlog serve`` process; frames are read by a thread into a queue-like list."""

    def __init__(self, root: Path, home: Path, loop: Path) -> None:
        self.root = root
        self.loop = str(loop)  # a symlink to itself
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "host", "serve", "--root", str(root), "--no-time-context"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=clean_env(TURNLOG_HOME=str(home)),
            cwd=str(home),
        )
        self.stderr: list[str] = []
        self._stderr = threading.Thread(target=self._drain, daemon=True)
        self._stderr.start()
        self._fences = itertools.count()
        self._frames: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._stdout = threading.Thread(target=self._read, daemon=True)
        self._stdout.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace").rstrip("\n"))

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self._frames.put(json.loads(raw))
        self._frames.put(None)

    def next_frame(self) -> dict[str, Any]:
        try:
            frame = self._frames.get(timeout=HANG_GUARD_S)
        except queue.Empty:
            raise AssertionError(f"no frame for {HANG_GUARD_S} s; stderr: {self.stderr[-5:]}") from None
        assert frame is not None, f"turnlog serve ended; stderr: {self.stderr[-5:]}"
        return frame

    def exchange(self, line: bytes, reply_to: object = None) -> list[dict[str, Any]]:
        """Send ``line`` and a fence request; return every frame up to the fence's reply and,
        when ``reply_to`` is an id, up to that id's reply too (replies may come in any order)."""
        fence = f"fence-{next(self._fences)}"
        assert self.proc.stdin is not None
        fence_line = json.dumps({"jsonrpc": "2.0", "id": fence, "method": "session/list"}).encode()
        self.proc.stdin.write(line + b"\n" + fence_line + b"\n")
        self.proc.stdin.flush()
        frames: list[dict[str, Any]] = []
        fenced = False
        while not fenced or (
            reply_to is not None and not any(is_reply(f, reply_to) or is_reply(f, None) for f in frames)
        ):
            frame = self.next_frame()
            if is_reply(frame, fence):
                fenced = True
            else:
                frames.append(frame)
        return frames

    def wait_idle(self, session_id: str) -> None:
        """Read (and drop) frames until ``session_id`` reports idle."""
        while True:
            frame = self.next_frame()
            status = frame.get("params", {}) if frame.get("method") == "session.status" else {}
            if status.get("status") == "idle" and status.get("sessionId") == session_id:
                return

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=HANG_GUARD_S)
        self._stderr.join(timeout=HANG_GUARD_S)
        return code


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    base = tmp_path_factory.mktemp("fuzz-serve")
    (base / "home").mkdir()
    loop = base / "loop"
    os.symlink(loop, loop)
    server = Serve(base / "root", base / "home", loop)
    yield server
    assert server.proc.poll() is None, "turnlog serve died during the fuzz run"
    assert server.close() == 0
    assert not [line for line in server.stderr if "Traceback" in line]


def snapshot(root: Path) -> dict[str, str]:
    if not root.exists():
        return {}
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def is_reply(frame: dict[str, Any], rid: object) -> bool:
    return "method" not in frame and frame.get("id") == rid


def well_formed(reply: dict[str, Any]) -> None:
    assert reply.get("jsonrpc") == "2.0" and "id" in reply, reply
    assert ("result" in reply) != ("error" in reply), reply
    if "error" in reply:
        error = reply["error"]
        assert isinstance(error.get("code"), int) and isinstance(error.get("message"), str), reply
        assert "Traceback" not in error["message"], reply


def check_line(serve: Serve, line: bytes, sent_id: object) -> None:
    """Send one fuzzed line and check what came back (see the module docstring)."""
    before = snapshot(serve.root)
    frames = serve.exchange(line, sent_id)
    replies = [f for f in frames if "method" not in f]
    for reply in replies:
        well_formed(reply)
    if sent_id is None:
        assert len(replies) <= 1 and all(r["id"] is None for r in replies), replies
    else:
        assert len(replies) == 1 and replies[0]["id"] == sent_id, replies
    if replies and "error" in replies[0]:
        assert snapshot(serve.root) == before, f"a refusal changed the root: {replies[0]}"
    else:
        # A prompt that was taken runs a turn: let it finish before the next line's snapshot.
        started = [f["params"]["sessionId"] for f in frames if f.get("method") == "session.status"]
        finished = [f["params"]["sessionId"] for f in frames if f.get("params", {}).get("status") == "idle"]
        for session_id in started:
            if started.count(session_id) > finished.count(session_id):
                serve.wait_idle(session_id)
                finished.append(session_id)
    assert not [entry for entry in serve.stderr if "Traceback" in entry], serve.stderr[-5:]


ids = itertools.count()


def run(fuzz_settings: settings, test: Any) -> None:
    fuzz_settings(test)()


def test_requests_with_an_id_get_exactly_one_reply(serve: Serve, fuzz_settings: settings) -> None:
    @given(frame=requests())
    def check(frame: dict[str, Any]) -> None:
        frame["id"] = f"f-{next(ids)}"
        check_line(serve, json.dumps(frame, allow_nan=False).encode(), frame["id"])

    run(fuzz_settings, check)


def test_the_campaign_reproductions_are_refused_under_their_id(serve: Serve) -> None:
    loop = serve.loop
    for seed in SEEDS:
        rid = f"f-{next(ids)}"
        line = seed.replace('"ID"', json.dumps(rid)).replace('"LOOP"', json.dumps(loop))
        before = len(serve.stderr)
        frames = serve.exchange(line.encode(), rid)
        replies = [f for f in frames if "method" not in f]
        assert len(replies) == 1 and replies[0]["id"] == rid, (line[:200], replies, serve.stderr[before:])
        well_formed(replies[0])
        assert "error" in replies[0] and replies[0]["error"]["data"]["code"] != "internal", replies[0]
        assert not [e for e in serve.stderr[before:] if "Traceback" in e]
    for line in BAD_ID_SEEDS:
        replies = [f for f in serve.exchange(line) if "method" not in f]
        assert len(replies) == 1 and replies[0]["id"] is None, replies
        assert replies[0]["error"]["data"]["code"] == "unsupported-json", replies[0]


def test_mutated_request_lines_never_break_the_server(serve: Serve, fuzz_settings: settings) -> None:
    @given(frame=requests(), data=st.data())
    def check(frame: dict[str, Any], data: st.DataObject) -> None:
        frame["id"] = f"f-{next(ids)}"
        line = bytearray(json.dumps(frame, allow_nan=False).encode())
        for _ in range(data.draw(st.integers(1, 4))):
            position = data.draw(st.integers(0, max(0, len(line) - 1)))
            action = data.draw(st.sampled_from(["flip", "cut", "dup", "insert"]))
            if action == "flip" and line:
                line[position] = data.draw(st.integers(0, 255))
            elif action == "cut":
                del line[position:]
            elif action == "dup":
                line[position:position] = line[position : position + data.draw(st.integers(1, 8))]
            else:
                line[position:position] = data.draw(st.binary(min_size=1, max_size=6))
        clean = bytes(line).replace(b"\n", b" ").replace(b"\r", b" ")
        try:
            parsed = json.loads(clean)
        except (ValueError, RecursionError):
            parsed = None
        # Whether the mutated line still carries a usable id decides what may come back.
        usable = (
            isinstance(parsed, dict)
            and isinstance(parsed.get("id"), str | int)
            and not isinstance(parsed.get("id"), bool)
        )
        if usable and isinstance(parsed["id"], int) and abs(parsed["id"]) > 2**53 - 1:
            usable = False
        sent = parsed["id"] if usable and "method" in parsed else None
        check_any(serve, clean, sent)

    run(fuzz_settings, check)


def check_any(serve: Serve, line: bytes, sent_id: object) -> None:
    """Like ``check_line``, for a line whose shape is unknown: with an id, one reply at most
    (a frame without a method may be taken for a response and dropped), else at most one."""
    before = snapshot(serve.root)
    frames = serve.exchange(line, sent_id)
    replies = [f for f in frames if "method" not in f]
    assert len(replies) <= 1, replies
    for reply in replies:
        well_formed(reply)
        assert reply["id"] in (sent_id, None), reply
        if "error" in reply:
            assert snapshot(serve.root) == before, f"a refusal changed the root: {reply}"
    for session_id in {f["params"]["sessionId"] for f in frames if f.get("method") == "session.status"}:
        statuses = [
            f["params"]["status"]
            for f in frames
            if f.get("method") == "session.status" and f["params"]["sessionId"] == session_id
        ]
        if statuses and statuses[-1] == "running":
            serve.wait_idle(session_id)
    assert not [entry for entry in serve.stderr if "Traceback" in entry], serve.stderr[-5:]


def test_garbage_lines_get_at_most_one_reply_with_a_null_id(serve: Serve, fuzz_settings: settings) -> None:
    @example(line=b"")
    @example(line=b"[]")
    @example(line=b'{"jsonrpc":"2.0","method":"session/list"}')
    @example(line=b"\xff\xfe")
    @example(line=b"NaN")
    @given(line=st.binary(max_size=200))
    def check(line: bytes) -> None:
        line = line.replace(b"\n", b" ").replace(b"\r", b" ")
        try:
            parsed = json.loads(line)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, dict) and "id" in parsed:
            return  # a line with an id is the request properties' case
        check_line(serve, line, None)

    run(fuzz_settings, check)
