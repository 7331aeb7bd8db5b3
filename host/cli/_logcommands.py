"""The log commands of ``turnlog`` (host §7.4): eventlog's ``ls``, ``inspect``, ``validate``,
``tail`` and ``fork`` (log-format §10), mounted with the host's root rules (host §5.1) and the
packages' ``validate`` checks.

Apart from ``_commands``, so a log command loads eventlog's command line but not the JSON-RPC
server, chat or the demo.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import eventlog.cli
import schedule
import timecontext
from eventlog import LogSnapshot
from host.runtime import resolve_root


def schedule_check(snapshot: LogSnapshot) -> list[str]:
    """schedule's fold of the session's own ``schedule/change`` events (from ``seedLength``)."""
    try:
        schedule.fold(snapshot.events, snapshot.header.seed_length or 0)
    except schedule.ScheduleLogError as exc:
        return [str(exc)]
    return []


def readings_check(snapshot: LogSnapshot) -> list[str]:
    """timecontext's replay validator over the log's time readings."""
    report = timecontext.validate_readings(snapshot.events, schedule.canonicalize_time_zone)
    return [violation.message for violation in report.violations]


CHECKS: tuple[eventlog.cli.Check, ...] = (schedule_check, readings_check)


def run_log_command(command: str, argv: Sequence[str], environ: Mapping[str, str]) -> int:
    """``turnlog <log command> ARGS``: eventlog's command with the host's default root (host §7.4)."""
    root = resolve_root(None, environ, cwd=os.getcwd())
    return eventlog.cli.main([command, *argv], checks=CHECKS, root=root, prog="turnlog")
