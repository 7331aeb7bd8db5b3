"""The model-visible history fold (spec eventlog.md §3.3).

``fold(events)`` replays the ``surfaceOp`` of every surface event and returns the seqs of the
current history nodes, in order. It is run when history is derived and by ``turnlog validate``,
not on open.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import SurfaceError
from .format import SURFACE_TYPES, Event, ReplaceOp

__all__ = ["fold"]


def fold(events: Iterable[Event]) -> list[int]:
    """Seqs of the current history nodes, in history order.

    ``"append"`` adds the event at the end; a replace substitutes the nodes from ``start`` to
    ``end`` (positions in the current history, inclusive) with the event, at the position of
    ``start``, and its ``sourceEventSeqs`` must list every node it shadows. Non-surface events
    are ignored. Raises ``SurfaceError`` with the exact messages of §3.3.
    """
    history: list[int] = []
    for event in events:
        if event.type not in SURFACE_TYPES:
            continue
        op = event.surface_op
        if op == "append":
            history.append(event.seq)
            continue
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
        history[first : last + 1] = [event.seq]
    return history
