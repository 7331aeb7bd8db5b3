"""Random arguments to the three schedule tools, called by a scripted model inside a real host
(schedule §10, host §3.7). Whatever the arguments, the turn completes, every call gets a tool
result, a refused call appends no ``schedule/change``, and the log still folds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

import schedule
from host.models import ScriptedAdapter, parse_script
from host.testing import open_harness
from tests.fuzz.strategies import json_values

values = json_values((0, 299, 300, 301, 2**53, -0.0, 1e308, "300", ""), max_leaves=8)
at_values = st.one_of(
    st.sampled_from(
        [
            "2030-01-01T00:00:00Z",
            "2030-01-01T00:00:00+08:00",
            "1999-01-01T00:00:00Z",
            "2030-13-01T00:00:00Z",
            "2030-03-30T02:30:00",
        ]
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "date": st.sampled_from(["2030-03-31", "2030-02-30", "x"]) | values,
            "time": st.sampled_from(["02:30:00", "09:00:00", "25:00:00"]) | values,
            "time_zone": st.sampled_from(["Europe/Berlin", "UTC", "utc", "Mars/Base", ""]) | values,
        },
    ),
    values,
)
create_args = (
    st.fixed_dictionaries(
        {},
        optional={
            "prompt": st.text(max_size=40) | values,
            "after_seconds": st.integers(-5, 10**12) | values,
            "every_seconds": st.integers(-5, 10**12) | values,
            "at": at_values,
        },
    )
    | values
)
delete_args = (
    st.fixed_dictionaries({}, optional={"id": st.sampled_from(["schedule-1", "schedule-2", ""]) | values})
    | values
)
calls = st.lists(
    st.one_of(
        st.tuples(st.just("schedule_create"), create_args),
        st.tuples(st.just("schedule_delete"), delete_args),
        st.tuples(st.just("schedule_list"), values),
        st.tuples(st.sampled_from(["schedule_create", "schedule_delete"]), st.text(max_size=20)),  # not JSON
    ),
    min_size=1,
    max_size=3,
)


def script_for(batch: list[tuple[str, Any]]) -> bytes:
    # A model sends arguments as a JSON string; anything but an object goes out that way (or as
    # the raw text drawn, which need not be JSON).
    tool_calls = [
        {"name": name, "arguments": args if isinstance(args, dict | str) else json.dumps(args)}
        for name, args in batch
    ]
    return (json.dumps({"toolCalls": tool_calls}) + "\n" + json.dumps({"text": "done"}) + "\n").encode()


def test_any_arguments_leave_a_consistent_log(tmp_path: Path, fuzz_settings: settings) -> None:
    examples = iter(range(10**9))

    @given(batch=calls)
    def check(batch: list[tuple[str, Any]]) -> None:
        root = tmp_path / f"r{next(examples)}"
        adapter = ScriptedAdapter(parse_script(script_for(batch)))

        async def run() -> None:
            async with open_harness(root, adapters=lambda: {"scripted": adapter}) as h:
                await h.start()
                await h.prompt("main", "go")
                await h.settle()
                results = h.events("main", "tool/result")
                assert len(results) == len(batch)
                ends = h.events("main", "turn/end")
                assert len(ends) == 1 and ends[0]["data"]["reason"]["kind"] == "completed", ends
                refused = 0
                for result in results:
                    (block,) = result["data"]["message"]["content"]
                    text = block["content"][0]["text"]
                    try:
                        value = json.loads(text)
                    except ValueError:
                        value = None
                    if block["isError"] or (isinstance(value, dict) and "code" in value):
                        refused += 1
                assert len(h.events("main", "schedule/change")) <= 2 * (len(batch) - refused)
                schedule.fold(h.read("main").events, 0)

        trio.run(run)

    fuzz_settings(check)()
