"""The model-visible history fold (log-format §3.3).

``fold(events)`` replays the ``surfaceOp`` of every surface event and returns the seqs of the
current history nodes, in order; ``History`` does the same one event at a time. It is run when history is derived and by ``turnlog validate``,
not on open.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable

from .errors import SurfaceError
from .format import SURFACE_TYPES, Event, ReplaceOp

__all__ = ["History", "fold"]


def fold(events: Iterable[Event]) -> list[int]:
    """Seqs of the current history nodes, in history order.

    ``"append"`` adds the event at the end; a replace substitutes the nodes from ``start`` to
    ``end`` (positions in the current history, inclusive) with the event, at the position of
    ``start``, and its ``sourceEventSeqs`` must list every node it shadows. Non-surface events
    are ignored. Raises ``SurfaceError`` with the exact messages of log-format §3.3.
    """
    history = History()
    for event in events:
        history.add(event)
    return history.nodes


class History:
    """``fold`` one event at a time, for a caller that streams a log once for several checks:
    ``add`` raises what ``fold`` would raise at that event, and ``nodes`` is the list of the
    seqs of the current history nodes after the events added so far.

    The seqs are kept in an ``array`` (8 bytes a node, where a list of ints costs about 40):
    a log's history can hold most of its surface events, and ``validate`` folds logs of any
    length (log-format §11)."""

    __slots__ = ("_nodes",)

    def __init__(self) -> None:
        self._nodes = array("q")

    @property
    def nodes(self) -> list[int]:
        """The seqs of the current history nodes, in history order (a new list)."""
        return self._nodes.tolist()

    def add(self, event: Event) -> None:
        """Apply one event's ``surfaceOp`` (non-surface events are ignored). Raises
        ``SurfaceError``; then the history is as it was before the call."""
        if event.type not in SURFACE_TYPES:
            return
        history = self._nodes
        op = event.surface_op
        if op == "append":
            history.append(event.seq)
            return
        if not isinstance(op, ReplaceOp):
            raise SurfaceError(f"{event.type} at seq {event.seq} needs a surfaceOp, got {op!r}")
        try:
            first = history.index(op.start)
        except ValueError:
            raise SurfaceError(f"start seq {op.start} not found in surface") from None
        try:
            last = history.index(op.end)
        except ValueError:
            raise SurfaceError(f"end seq {op.end} not found in surface") from None
        if first > last:
            raise SurfaceError(f"start seq {op.start} is after end seq {op.end}")
        shadowed = history[first : last + 1]
        listed = set(event.source_event_seqs or ())
        missing = [seq for seq in shadowed if seq not in listed]
        if missing:
            raise SurfaceError(
                f"sourceEventSeqs must include every shadowed surface node; "
                f"missing {', '.join(map(str, missing))}"
            )
        history[first : last + 1] = array("q", (event.seq,))
