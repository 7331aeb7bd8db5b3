"""Escaped lone surrogates through the whole package (dsh-roots §5): a record JavaScript wrote with
``"\\ud83d"`` is a valid record for every reader, a fork keeps its bytes, an append with an unpaired
surrogate writes the escape, and human output shows U+FFFD. (The fallback decoder itself is
tested in test_lone.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from eventlog import CorruptLog, SessionStore, iter_events, read_log, vocab
from eventlog.cli import main
from eventlog.scan import UNPARSABLE
from tests.eventlog.live_support import SetClock
from tests.eventlog.spec_examples import E1_LINES, log_bytes

# A user message as JavaScript writes one whose text ends inside an emoji: the high half alone.
LONE_MESSAGE = (
    b'{"type":"user/message","seq":6,"time":1767265200002,"data":{"id":"msg-3","role":"user",'
    b'"source":{"kind":"user"},"content":[{"type":"text","text":"cut \\ud83d"}]},"surfaceOp":"append"}'
)
TURN_2 = [
    b'{"type":"turn/start","seq":6,"time":1767265200000,"data":{"turn":2}}',
    b'{"type":"step/start","seq":7,"time":1767265200001,"data":{"turn":2,"step":1}}',
    LONE_MESSAGE.replace(b'"seq":6', b'"seq":8'),
    b'{"type":"step/end","seq":9,"time":1767265200003,"data":{"turn":2,"step":1}}',
    b'{"type":"turn/end","seq":10,"time":1767265200004,"data":{"turn":2,"reason":{"kind":"completed"}}}',
]
LOG = log_bytes(E1_LINES + TURN_2)


def put(root: Path, name: str, data: bytes) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / name
    path.write_bytes(data)
    return path


def test_a_record_with_an_escaped_lone_surrogate_is_a_valid_record(tmp_path: Path) -> None:
    snapshot = read_log(put(tmp_path, "x.jsonl", LOG))
    assert snapshot.repair is None
    assert len(snapshot.events) == 11
    message = snapshot.events[8]
    assert message.to_json() == TURN_2[2]  # byte for byte, the escape kept
    assert message.value()["content"][0]["text"] == "cut \ud83d"
    decoded = vocab.decode(message)
    assert isinstance(decoded, vocab.Message) and decoded.content[0] == vocab.TextBlock(text="cut \ud83d")
    assert [e.seq for e in iter_events(tmp_path / "x.jsonl")] == list(range(11))


def test_the_same_record_with_another_unparsable_defect_is_still_unparsable(tmp_path: Path) -> None:
    # Only the escape is forgiven: the same line cut short is a defect as before.
    broken = TURN_2[2][:-3]
    snapshot = read_log(put(tmp_path, "x.jsonl", log_bytes(E1_LINES + TURN_2[:2] + [broken])))
    assert snapshot.repair is not None and snapshot.repair.defect is not None
    assert snapshot.repair.defect.reason == UNPARSABLE
    assert len(snapshot.events) == 8


def test_a_turn_end_holding_an_escape_after_a_defect_makes_the_log_corrupt(tmp_path: Path) -> None:
    broken = b'{"type":"step/start","seq":7,"time":1,"data":'
    turn_end = b'{"type":"turn/end","seq":8,"time":2,"data":{"turn":2,"note":"\\udc00","reason":{"kind":"completed"}}}'
    with pytest.raises(CorruptLog, match="unparsable committed event at line 9"):
        read_log(put(tmp_path, "x.jsonl", log_bytes(E1_LINES + TURN_2[:1] + [broken, turn_end])))


def test_a_packed_row_with_an_escaped_lone_surrogate_expands(tmp_path: Path) -> None:
    row = (
        b'{"type":"text-chunks","seq0":6,"time0":1000,"data":{"turn":2,"step":1,"index":0,'
        b'"dt":[5],"texts":["a\\ud83d","\\ude00b"]}}'
    )
    snapshot = read_log(put(tmp_path, "x.jsonl", log_bytes(E1_LINES + [row])))
    assert [e.to_json() for e in snapshot.events[6:]] == [
        (
            b'{"type":"assistant/chunk","seq":6,"time":1000,"data":{"turn":2,"step":1,'
            b'"chunk":{"type":"text-delta","index":0,"text":"a\\ud83d"}}}'
        ),
        (
            b'{"type":"assistant/chunk","seq":7,"time":1005,"data":{"turn":2,"step":1,'
            b'"chunk":{"type":"text-delta","index":0,"text":"\\ude00b"}}}'
        ),
    ]


async def test_an_append_with_an_unpaired_surrogate_writes_the_escape(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, clock=SetClock(7))
    async with store.create(id="lone") as session:
        event = session.append("tool/run", {"text": "x\ud83d", "key\udc00": ["\ud800"]})
        await session.flush()
    assert bytes(event.data) == b'{"text":"x\\ud83d","key\\udc00":["\\ud800"]}'
    line = (tmp_path / "lone.jsonl").read_bytes().splitlines()[1]
    assert line == b'{"type":"tool/run","seq":0,"time":7,"data":{"text":"x\\ud83d","key\\udc00":["\\ud800"]}}'
    assert json.loads(line)["data"] == {"text": "x\ud83d", "key\udc00": ["\ud800"]}
    assert read_log(tmp_path / "lone.jsonl").events[0].value() == {"text": "x\ud83d", "key\udc00": ["\ud800"]}


async def test_a_fork_keeps_the_records_bytes(tmp_path: Path) -> None:
    parent = put(tmp_path, "x.jsonl", LOG)
    store = SessionStore(tmp_path, clock=SetClock(9))
    await store.fork(parent, id="child")
    lines = (tmp_path / "child.jsonl").read_bytes().splitlines()
    assert lines[1:12] == E1_LINES[1:] + TURN_2


def test_decode_refuses_what_does_not_match_even_through_the_fallback(tmp_path: Path) -> None:
    snapshot = read_log(put(tmp_path, "x.jsonl", LOG))

    class Wrong(msgspec.Struct):
        id: int

    with pytest.raises(msgspec.ValidationError):
        snapshot.events[8].decode(Wrong)


def test_human_output_shows_the_replacement_character_and_json_keeps_the_escape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = put(tmp_path, "x.jsonl", LOG)
    assert main(["inspect", str(path), "--from", "8", "--full"]) == 0
    out = capsys.readouterr().out
    assert '"text":"cut \ufffd"' in out and "\\ud83d" not in out
    assert main(["tail", str(path), "--json", "-n", "3"]) == 0
    assert capsys.readouterr().out.splitlines()[0].encode() == TURN_2[2]
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out.startswith("ok  ")


def test_a_header_cwd_with_a_lone_surrogate_prints_as_the_replacement_character(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header = b'{"type":"session","version":0,"id":"x","createdAt":1,"cwd":"/w/\\udc01","delegationDepth":0}'
    path = put(tmp_path, "x.jsonl", log_bytes([header]))
    assert main(["inspect", str(path)]) == 0
    assert "cwd      /w/\ufffd" in capsys.readouterr().out
    assert main(["ls", "--root", str(tmp_path)]) == 0
    assert "/w/\ufffd" in capsys.readouterr().out
