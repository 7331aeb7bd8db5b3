"""Typed errors of the timecontext package (spec timecontext.md §7.2, §8.3, §13).

Every error is a ``ValueError`` whose message is one line, exactly as the spec words it.
"""

from __future__ import annotations


class ClientZoneError(ValueError):
    """A ``clientTimeZone`` of the open turn is not a canonical, supported zone (§7.2)."""


class TimeContextConfigError(ValueError):
    """``TimeContext`` cannot be constructed: a bad setting or no system zone (§8.3)."""


class ReadingInvariantError(ValueError):
    """A time reading already in a log breaks one of the replay checks (§13)."""
