"""The read path against oracles (issue 15): the same events, defects, counts, errors and repair.

``RecordDecoder.decode_region`` frames a run of complete lines in one of two ways (short
records: one ``decode_lines`` call after two counts; long records: split at LF, one decode per
line). Two oracles check it:

- the **old reader**: the region decoder as it was before the long-record path, copied here
  verbatim (``_old_decode_region``) as this test's reference, run by the same ``Scanner``;
- the **line-by-line reader**: the ``Scanner`` with no region decoding at all, each record
  decoded on its own — the rule both region paths must agree with.

On hypothesis-generated logs (short and long records, non-ASCII and astral text, escaped lone
surrogates, surface events with ``sourceEventSeqs``, then a cut tail, a corrupt line, a blank
line, CR LF, two records on one line, a record over two lines, a seq gap, bytes that are not
UTF-8, a later ``turn/end``), fed in chunks of any size, and on every fixture log read through
``read_log``, the readers give exactly the same result.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eventlog.format as format_module
from eventlog.errors import CorruptLog, EventLogError
from eventlog.format import SURFACE_TYPES, Event, RecordDecoder, build_event, is_event_type
from eventlog.reader import read_log
from eventlog.repair import plan_closers
from eventlog.scan import Scanner
from tests.fixture_paths import DSH_FIXTURES, FIXTURES

SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HEADER = b'{"type":"session","version":0,"id":"oracle","createdAt":1767261600000,"delegationDepth":0}\n'


class OldDecoder(RecordDecoder):
    """The old reader's region decoder (before the long-record path), this test's reference."""

    def decode_region(self, chunk: bytes, start: int, end: int, expected_seq: int) -> list[Event] | None:
        return _old_decode_region(self, chunk, start, end, expected_seq)


def _old_decode_region(
    self: RecordDecoder, chunk: bytes, start: int, end: int, expected_seq: int
) -> list[Event] | None:
    # Copied from eventlog/format.py as it was (the oracle): framing by counts only.
    count = chunk.count(b"\n", start, end)
    if (
        not count
        or chunk[start] != 0x7B
        or chunk[end - 2] != 0x7D
        or chunk.count(b'}\n{"type":"', start, end) != count - 1
    ):
        return None
    region = chunk if start == 0 and end == len(chunk) else memoryview(chunk)[start:end]
    try:
        wires = format_module._WIRE_EVENT.decode_lines(region)
    except (msgspec.DecodeError, RecursionError):
        return None
    if len(wires) != count:
        return None
    types = self._types
    events: list[Event] = []
    append = events.append
    seq = expected_seq
    for wire in wires:
        type_ = wire.type
        surface_op = wire.surfaceOp
        sources = wire.sourceEventSeqs
        try:
            type_, surface = types[type_]
        except KeyError:
            if not is_event_type(type_):
                return None
            type_, surface = types[type_] = (sys.intern(type_), type_ in SURFACE_TYPES)
        if wire.seq != seq:
            return None
        if surface:
            if surface_op != "append":
                return None
            if sources is msgspec.UNSET:
                append(Event(type_, seq, wire.time, wire.data, "append", None, wire.ignorable is True))
            elif format_module._sources_ok(sources, type_, seq):
                append(Event(type_, seq, wire.time, wire.data, "append", sources, wire.ignorable is True))
            else:
                return None
        elif surface_op is not msgspec.UNSET or sources is not msgspec.UNSET:
            return None
        else:
            append(Event(type_, seq, wire.time, wire.data, None, None, wire.ignorable is True))
        seq += 1
    return events


class LineDecoder(RecordDecoder):
    """No region decoding: every record goes through ``decode`` on its own."""

    def decode_region(self, chunk: bytes, start: int, end: int, expected_seq: int) -> list[Event] | None:
        return None


def outcome(data: bytes, sizes: list[int], decoder: RecordDecoder | None) -> tuple[Any, ...]:
    """Everything a reader reports about ``data`` fed in chunks of ``sizes`` (cycled): the
    events as canonical records, the counts and the defect, the closers repair would append, or
    the error (type and message)."""
    scanner = Scanner("oracle.jsonl")
    if decoder is not None:
        scanner._decoder = decoder
    events: list[Event] = []
    try:
        pos = 0
        index = 0
        while pos < len(data):
            size = sizes[index % len(sizes)]
            events += scanner.feed(data[pos : pos + size])
            pos += size
            index += 1
        scanner.finish()
        _, closers = plan_closers(events, "oracle.jsonl")
    except EventLogError as exc:
        return ("error", type(exc).__name__, str(exc), [e.to_json() for e in events])
    return (
        [e.to_json() for e in events],
        [(e.type, e.seq, e.time, bytes(e.data), e.surface_op, e.source_event_seqs, e.ignorable) for e in events],
        scanner.committed_bytes,
        scanner.file_bytes,
        scanner.dropped_records,
        scanner.defect,
        [c.to_json() for c in closers],
    )


# ------------------------------------------------------------------------------------ strategies

TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)) | st.sampled_from("é€😀\n\t\"\\{}"),
    max_size=40,
)


@st.composite
def records(draw: st.DrawFn) -> list[bytes]:
    """A valid log body: turns of messages, tool calls and results (with sourceEventSeqs); in
    one log of three its texts are long (KBs), so its regions take the long-record path."""
    lines: list[bytes] = []
    seq = 0
    scale = draw(st.sampled_from([1, 1, 400]))
    for turn in range(1, draw(st.integers(1, 4)) + 1):
        texts = [text * scale for text in draw(st.lists(TEXT, min_size=1, max_size=3))]
        batch: list[Event] = [build_event("turn/start", seq, seq, {"turn": turn})]
        batch.append(build_event("step/start", seq + 1, seq, {"turn": turn, "step": 1}))
        batch.append(build_event("user/message", seq + 2, seq, {
            "id": f"u{seq}", "role": "user", "source": {"kind": "user"},
            "content": [{"type": "text", "text": t} for t in texts]}, surface_op="append"))
        batch.append(build_event("tool/call", seq + 3, seq, {
            "turn": turn, "step": 1, "callId": f"c{seq}", "name": "t", "arguments": "{}"}))
        batch.append(build_event("tool/result", seq + 4, seq, {"turn": turn, "step": 1, "message": {
            "id": f"r{seq}", "role": "user", "source": {"kind": "tool", "callId": f"c{seq}"},
            "content": [{"type": "tool-result", "toolCallId": f"c{seq}", "content": [
                {"type": "text", "text": texts[0]}]}]}}, surface_op="append",
            source_event_seqs=[seq + 3]))
        batch.append(build_event("note/x", seq + 5, -seq, texts[-1], ignorable=draw(st.booleans())))
        if draw(st.booleans()):
            batch.append(build_event("step/end", seq + 6, seq, {"turn": turn, "step": 1}))
            batch.append(build_event("turn/end", seq + 7, seq, {"turn": turn, "reason": {"kind": "completed"}}))
        lines += [event.to_json() for event in batch]
        seq += len(batch)
        if len(batch) == 6:
            break  # an open turn ends the log: repair closes it
    if draw(st.booleans()):
        # an escaped lone surrogate, as the reference writes it (dsh-roots §5)
        lines.append(b'{"type":"note/lone","seq":%d,"time":1,"data":"a\\ud83d b"}' % len(lines))
    return lines


DAMAGE = [
    "none", "cut", "garbage", "blank", "crlf", "two-on-a-line", "over-two-lines", "seq-gap",
    "not-utf8", "bad-envelope", "null-op", "false-ignorable", "turn-end-after", "joined-and-split",
]


@st.composite
def logs(draw: st.DrawFn) -> bytes:
    lines = draw(records())
    damage = draw(st.sampled_from(DAMAGE))
    at = draw(st.integers(0, len(lines) - 1))
    line = lines[at]
    if damage == "garbage":
        lines[at] = line[: draw(st.integers(0, len(line) - 1))]
    elif damage == "blank":
        lines.insert(at, b"")
    elif damage == "crlf":
        lines = [item + b"\r" for item in lines]
    elif damage == "two-on-a-line" and at + 1 < len(lines):
        lines[at : at + 2] = [lines[at] + draw(st.sampled_from([b"", b" "])) + lines[at + 1]]
    elif damage == "over-two-lines":
        cut = line.find(b',"time"')
        lines[at] = line[:cut] + b",\n" + line[cut + 1 :]
    elif damage == "joined-and-split" and at + 2 < len(lines):
        # as many LFs as records, but not one record per line: only the boundary count sees it
        cut = line.find(b',"time"')
        lines[at : at + 3] = [line[:cut] + b",\n" + line[cut + 1 :], lines[at + 1] + lines[at + 2]]
    elif damage == "seq-gap":
        lines[at] = line.replace(b'"seq":%d' % at, b'"seq":%d' % (at + 1), 1)
    elif damage == "not-utf8":
        lines[at] = line[:-2] + b"\xff" + line[-2:]
    elif damage == "bad-envelope":
        lines[at] = line[:-1] + b',"extra":1}'
    elif damage == "null-op":
        lines[at] = line[:-1] + b',"surfaceOp":null}'
    elif damage == "false-ignorable":
        lines[at] = line[:-1] + b',"ignorable":false}'
    elif damage == "turn-end-after":
        lines[at] = line[:-3]
        lines.append(b'{"type":"turn/end","seq":999,"time":0,"data":{}}')
    data = HEADER + b"".join(item + b"\n" for item in lines)
    if damage == "cut":
        data = data[: draw(st.integers(len(HEADER), len(data)))]
    return data


CHUNKS = st.lists(st.sampled_from([1, 7, 64, 700, 4096, 65536, 1 << 20]) | st.integers(1, 20000),
                  min_size=1, max_size=4)


@SETTINGS
@given(data=logs(), sizes=CHUNKS)
def test_the_read_path_matches_the_old_reader_and_the_line_by_line_reader(data: bytes, sizes: list[int]) -> None:
    new = outcome(data, sizes, None)
    assert new == outcome(data, sizes, OldDecoder())
    assert new == outcome(data, sizes, LineDecoder())


def test_long_records_take_the_split_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # The property above covers both paths only if long records really take the other one.
    taken: list[str] = []
    for name in ("_split_lines", "_framed_lines"):
        real = getattr(RecordDecoder, name)
        monkeypatch.setattr(RecordDecoder, name, staticmethod(
            lambda *args, _real=real, _name=name: taken.append(_name) or _real(*args)))
    short = [build_event("note/x", seq, 0, "x" * 10).to_json() for seq in range(50)]
    long = [build_event("note/x", seq, 0, "é" * 3000).to_json() for seq in range(50)]
    for body in (short, long):
        data = HEADER + b"".join(line + b"\n" for line in body)
        assert outcome(data, [1 << 20], None) == outcome(data, [1 << 20], LineDecoder())
    assert taken == ["_framed_lines", "_split_lines"]


FIXTURE_LOGS = sorted(FIXTURES.glob("*.jsonl")) + sorted(DSH_FIXTURES.rglob("*.jsonl"))


@pytest.mark.parametrize("path", FIXTURE_LOGS, ids=lambda path: str(path.relative_to(FIXTURES)))
def test_every_fixture_reads_as_the_oracles_read_it(path: Path) -> None:
    data = path.read_bytes()
    new = outcome(data, [1 << 20], None)
    assert new == outcome(data, [1 << 20], OldDecoder())
    assert new == outcome(data, [1 << 20], LineDecoder())
    try:
        snapshot = read_log(path)
    except CorruptLog as exc:
        assert new[0] == "error" and str(exc).replace(str(path), "oracle.jsonl") == new[2]
    else:
        assert [e.to_json() for e in snapshot.events] == new[0]
        assert snapshot.committed_bytes == new[2] and snapshot.file_bytes == new[3]


def test_a_record_over_two_lines_beside_two_records_on_one_line() -> None:
    # As many LFs as records, yet not one record per line: the case only the boundary count of
    # the short-record path tells apart (the line-by-line reader sees an unparsable line).
    lines = [build_event("note/x", seq, 0, "x").to_json() for seq in range(6)]
    cut = lines[1].find(b',"time"')
    lines[1:4] = [lines[1][:cut] + b",\n" + lines[1][cut + 1 :], lines[2] + lines[3]]
    data = HEADER + b"".join(line + b"\n" for line in lines)
    new = outcome(data, [1 << 20], None)
    assert new == outcome(data, [1 << 20], OldDecoder()) == outcome(data, [1 << 20], LineDecoder())
    assert new[5] is not None and new[5].line == 3  # the defect: line 3, the record cut short
