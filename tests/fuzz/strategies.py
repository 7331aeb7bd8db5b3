"""The JSON values the fuzz properties draw: every JSON type, nested a few levels, with the edge
numbers and strings each property cares about mixed in."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st


def json_scalars(edges: Sequence[Any]) -> st.SearchStrategy[Any]:
    """null, booleans, integers beyond the safe range, finite floats, text, and ``edges``."""
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from(list(edges)),
        st.text(max_size=40),
    )


def json_values(edges: Sequence[Any], max_leaves: int = 12) -> st.SearchStrategy[Any]:
    """Scalars as above inside lists and objects."""
    return st.recursive(
        json_scalars(edges),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
        max_leaves=max_leaves,
    )
