"""Mutated session logs against every reader a user meets (log-format §7–§10, host §5.3, §8):
``read_log``, ``turnlog validate``, ``turnlog inspect`` and a host resuming the session. Each
outcome is a result or a typed error — never another exception, never a traceback.

The mutations start from the project's fixture logs (turnlog's own and the vendored
deepseek-harness ones) and flip, cut, duplicate, drop, swap or insert bytes and lines.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog import EventLogError, read_log
from host.cli import main as turnlog
from host.runtime import HostError
from host.testing import open_harness
from tests.fixture_paths import DSH_FIXTURES, FIXTURES

LOGS = sorted(FIXTURES.glob("*.jsonl")) + sorted(DSH_FIXTURES.glob("*.jsonl"))


def header_id(data: bytes) -> str:
    return str(json.loads(data.split(b"\n", 1)[0])["id"])


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, bytes]:
    """A fixture's session id and its bytes after one to four mutations."""
    original = draw(st.sampled_from(LOGS)).read_bytes()
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 4))):
        lines = bytes(data).split(b"\n")
        action = draw(
            st.sampled_from(["flip", "cut", "dup-line", "drop-line", "swap-lines", "insert-line", "edit"])
        )
        if action == "flip" and data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        elif action == "cut":
            del data[draw(st.integers(0, len(data))) :]
        elif action in ("dup-line", "drop-line", "swap-lines", "insert-line") and len(lines) > 1:
            i = draw(st.integers(1, len(lines) - 1))
            j = draw(st.integers(1, len(lines) - 1))
            if action == "dup-line":
                lines.insert(i, lines[i])
            elif action == "drop-line":
                del lines[i]
            elif action == "swap-lines":
                lines[i], lines[j] = lines[j], lines[i]
            else:
                event = {
                    "type": draw(
                        st.sampled_from(["turn/start", "turn/end", "schedule/change", "agent/inbox/spliced"])
                    ),
                    "seq": draw(st.integers(-2, 60)),
                    "time": draw(st.integers(0, 2**53)),
                    "data": draw(
                        st.dictionaries(
                            st.sampled_from(["turn", "target", "operation", "id"]),
                            st.none()
                            | st.integers()
                            | st.text(max_size=5)
                            | st.lists(st.integers(), max_size=2),
                            max_size=3,
                        )
                    ),
                }
                lines.insert(i, json.dumps(event).encode())
            data = bytearray(b"\n".join(lines))
        elif action == "edit":
            # a value swapped for another type: strings for numbers, lists for strings ...
            text = bytes(data).decode("utf-8", "replace")
            old = draw(
                st.sampled_from(['"turn":', '"seq":', '"target":', '"callId":', '"operation":', '"time":'])
            )
            new = old + draw(st.sampled_from(["[],", "{},", '"x",', "-1,", "null,", "1e400,"]))
            data = bytearray(text.replace(old, new, 1).encode())
    return header_id(original), bytes(data)


def run_command(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = turnlog(list(argv))
    return code, err.getvalue()


def test_every_reader_gives_a_result_or_a_typed_error(tmp_path: Path, fuzz_settings: settings) -> None:
    examples = iter(range(10**9))

    @given(log=mutated())
    def check(log: tuple[str, bytes]) -> None:
        session_id, data = log
        root = tmp_path / f"r{next(examples)}"
        root.mkdir()
        path = root / f"{session_id}.jsonl"
        path.write_bytes(data)

        with contextlib.suppress(EventLogError):
            read_log(path)
        for command in ("validate", "inspect"):
            code, stderr = run_command(command, "--root", str(root), str(path))
            assert code in (0, 1), (command, code, stderr)
            assert "Traceback" not in stderr, stderr

        async def resume() -> None:
            async with open_harness(root) as h:
                await h.start()
                with contextlib.suppress(HostError, EventLogError):
                    await h.resume(session_id)

        trio.run(resume)

    fuzz_settings(check)()


@pytest.mark.parametrize("value", ["[]", "{}"])
def test_validate_reports_a_malformed_call_id_as_invalid(tmp_path: Path, value: str) -> None:
    """The campaign's reproduction: a tool result whose ``source.callId`` is not a string."""
    source = next(p for p in LOGS if b'"callId"' in p.read_bytes() and b"tool/result" in p.read_bytes())
    text = source.read_text()
    at = text.index('"callId":', text.index('"tool/result"'))
    end = text.index(",", at)
    path = tmp_path / source.name
    path.write_text(text[:at] + '"callId":' + value + text[end:])
    code, stderr = run_command("validate", "--root", str(tmp_path), str(path))
    assert code == 1 and "Traceback" not in stderr


def test_resume_of_a_turn_start_without_turn_and_a_splice_targeting_a_list(tmp_path: Path) -> None:
    """The campaign's reproduction: a resume sees a ``turn/start`` that lacks ``turn`` and an inbox
    splice whose ``target`` is ``[]``; every reader gives a typed error, never another exception."""
    source = FIXTURES / "reminders-1.jsonl"
    lines = [json.loads(line) for line in source.read_text().splitlines()]
    start = next(r for r in lines if r.get("type") == "turn/start")
    del start["data"]["turn"]
    next(r for r in lines if r.get("type") == "agent/inbox/spliced")["data"]["target"] = []
    text = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in lines)
    path = tmp_path / source.name
    path.write_text(text)

    read_log(path)  # the frame is well formed; what the records mean is validate's and the host's to judge
    for command, want in (("validate", 1), ("inspect", 0)):
        code, stderr = run_command(command, "--root", str(tmp_path), str(path))
        assert code == want and "Traceback" not in stderr, (command, code, stderr)

    async def resume() -> None:
        async with open_harness(tmp_path) as h:
            await h.start()
            with pytest.raises((HostError, EventLogError)):
                await h.resume(header_id(source.read_bytes()))

    trio.run(resume)
