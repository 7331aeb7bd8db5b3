"""eventlog.surface.fold: the model-visible history (log-format §3.3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog.errors import SurfaceError
from eventlog.format import Event, ReplaceOp, build_event
from eventlog.reader import read_log
from eventlog.surface import History, fold
from tests.eventlog.spec_examples import E1_LINES, E5_CLOSERS, E5_LINES, log_bytes


def ev(seq: int, type_: str = "user/message", op: object = "append", sources: list[int] | None = None) -> Event:
    if type_ not in ("user/message", "assistant/message", "tool/result"):
        return build_event(type_, seq, 0, {})
    return build_event(type_, seq, 0, {}, surface_op=op, source_event_seqs=sources)  # type: ignore[arg-type]


def test_e1_and_e5_history(tmp_path: Path) -> None:
    path = tmp_path / "demo-1.jsonl"
    path.write_bytes(log_bytes([*E1_LINES, *E5_LINES, *E5_CLOSERS]))
    assert fold(read_log(path).events) == [2, 3, 8, 9, 11, 12]


def test_appends_and_other_types() -> None:
    events = [ev(0, "turn/start"), ev(1), ev(2, "assistant/message"), ev(3, "step/end"), ev(4, "tool/result")]
    assert fold(events) == [1, 2, 4]
    assert fold([]) == []


def test_replace_substitutes_a_range_at_its_start() -> None:
    events = [ev(0), ev(1), ev(2), ev(3), ev(4, op=ReplaceOp(start=1, end=2), sources=[1, 2])]
    assert fold(events) == [0, 4, 3]
    # A later replace addresses positions in the current history, whatever the seqs.
    events.append(ev(5, op=ReplaceOp(start=4, end=3), sources=[4, 3, 0]))
    assert fold(events) == [0, 5]
    events.append(ev(6, "assistant/message", op=ReplaceOp(start=0, end=0), sources=[0]))
    assert fold(events) == [6, 5]


@pytest.mark.parametrize(
    ("replace", "sources", "message"),
    [
        (ReplaceOp(start=5, end=1), [1, 5], "start seq 5 not found in surface"),
        (ReplaceOp(start=1, end=5), [1, 5], "end seq 5 not found in surface"),
        (ReplaceOp(start=2, end=1), [1, 2], "start seq 2 is after end seq 1"),
        (ReplaceOp(start=0, end=2), [0, 2], "sourceEventSeqs must include every shadowed surface node; missing 1"),
    ],
)
def test_replace_errors(replace: ReplaceOp, sources: list[int], message: str) -> None:
    events = [ev(0), ev(1), ev(2), ev(3, "turn/start"), ev(4, "step/start"), ev(5, "turn/end")]
    with pytest.raises(SurfaceError) as info:
        fold([*events, ev(6, op=replace, sources=sources)])
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)


def test_a_shadowed_node_is_gone() -> None:
    events = [ev(0), ev(1), ev(2, op=ReplaceOp(start=0, end=1), sources=[0, 1])]
    with pytest.raises(SurfaceError, match="start seq 1 not found in surface"):
        fold([*events, ev(3, op=ReplaceOp(start=1, end=2), sources=[1, 2])])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 50), st.integers(0, 50)), max_size=25))
def test_fold_matches_a_model(ops: list[tuple[bool, int, int]]) -> None:
    # Model: history as a list; valid replaces only (positions chosen inside the history).
    events: list[Event] = []
    model: list[int] = []
    for seq, (replace, a, b) in enumerate(ops):
        if replace and model:
            i, j = sorted((a % len(model), b % len(model)))
            shadowed = model[i : j + 1]
            events.append(ev(seq, op=ReplaceOp(start=model[i], end=model[j]), sources=shadowed))
            model[i : j + 1] = [seq]
        else:
            events.append(ev(seq))
            model.append(seq)
    assert fold(events) == model


def test_history_adds_one_event_at_a_time_and_a_refused_event_changes_nothing() -> None:
    history = History()
    for event in [ev(0), ev(1), ev(2, "turn/start"), ev(3)]:
        history.add(event)
    assert history.nodes == [0, 1, 3]
    with pytest.raises(SurfaceError, match="missing 1"):
        history.add(ev(4, op=ReplaceOp(start=0, end=3), sources=[0, 3]))
    assert history.nodes == [0, 1, 3]
    history.add(ev(5, op=ReplaceOp(start=0, end=1), sources=[0, 1]))
    assert history.nodes == [5, 3]
