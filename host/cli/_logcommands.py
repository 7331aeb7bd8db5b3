"""The log commands of ``turnlog`` (host §7.4): eventlog's ``inspect``, ``validate``, ``tail``,
``fork`` and ``ls --json`` (log-format §10), mounted with the host's root rules (host §5.1), the
packages' ``validate`` checks and the user's zone for human output; and host's own ``ls`` table
and ``show`` transcript.

Apart from ``_commands``, so a log command loads eventlog's command line but not the JSON-RPC
server, chat or the demo; schedule and timecontext load only when ``validate`` runs their checks.
"""

from __future__ import annotations

import os
import zoneinfo
from collections.abc import Mapping, Sequence

import eventlog.cli
from eventlog import LogSnapshot
from host._root import resolve_root, root_from_dsh_session_root

from ._when import user_zone


def schedule_check(snapshot: LogSnapshot) -> list[str]:
    """schedule's fold of the session's own ``schedule/change`` events (from ``seedLength``)."""
    import schedule  # deferred: only validate runs the checks

    try:
        schedule.fold(snapshot.events, snapshot.header.seed_length or 0)
    except schedule.ScheduleLogError as exc:
        return [str(exc)]
    return []


def readings_check(snapshot: LogSnapshot) -> list[str]:
    """timecontext's replay validator over the log's time readings."""
    import schedule  # deferred: only validate runs the checks
    import timecontext

    report = timecontext.validate_readings(snapshot.events, schedule.canonicalize_time_zone)
    return [violation.message for violation in report.violations]


CHECKS: tuple[eventlog.cli.Check, ...] = (schedule_check, readings_check)


def run_log_command(command: str, argv: Sequence[str], environ: Mapping[str, str]) -> int:
    """``turnlog <log command> ARGS`` with the host's default root (host §7.4): ``ls`` and ``show``
    are host's, the others eventlog's, showing times in the user's zone (UTC as log-format §10
    writes them when that zone is UTC)."""
    # Every zone comes from tzdata, the same on every machine, as for the host's commands.
    zoneinfo.reset_tzpath(to=())
    root = resolve_root(None, environ, cwd=os.getcwd())
    zone = user_zone(environ)
    shown_in = None if zone.name == "UTC" else zone.info

    def eventlog_command(args: list[str]) -> int:
        return eventlog.cli.main(
            args,
            checks=CHECKS,
            root=root,
            prog="turnlog",
            zone=shown_in,
            dsh_default=root_from_dsh_session_root(None, environ),
        )

    # Deferred: host's table and transcript load what eventlog's commands do not (schedule, trio).
    if command == "ls":
        from ._listing import run_ls

        return run_ls(argv, environ, root, delegate=eventlog_command)
    if command == "show":
        from ._show import run_show

        return run_show(argv, environ, root)
    return eventlog_command([command, *argv])
