"""The model-facing tools ``schedule_create``, ``schedule_list``, ``schedule_delete`` (schedule §10).

Each call is one transaction: schema stage, owner check, input checks that need no log, then —
holding the agent's queue — a preflight barrier, a fold of the session suffix, at most one append
and its barrier. Results are JSON values (the host renders them with ``compact_json``); every
Schedule error is such a value, never an exception, except schema violations
(``InvalidToolArguments``) and cancellation before the append (``trio.Cancelled``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from eventlog.values import Clock, safe_int

from ._create import allocate_id, check_create_arguments, create_after, create_at, create_every
from ._diagnostics import Failure, describe, failing_as, schedule_logger
from ._errors import InvalidToolArguments, ScheduleInputError, ScheduleLogError
from ._fold import Fold, IncrementalFold
from ._protocols import AgentPort, SessionHandle
from ._queue import ScheduleQueue
from ._records import CHANGE_TYPE, Create, Delete, Record, change_to_dict, view
from ._trim import js_trim

# trio is imported inside the functions that use it, not with the module: importing schedule (its
# pure functions, which the read-only log commands use) never loads it.

Handler = Callable[..., Awaitable[Any]]

_CREATE_DESCRIPTION = (
    "Create one reminder in the current session. Supply a non-empty prompt and exactly one "
    "selector: a positive safe-integer after_seconds delay, at as a strict offset date-time or "
    "local date/time object, or safe-integer every_seconds of at least 300. Fixed-rate reminders "
    "stay creation-aligned, skip missed occurrences, and batch one latest occurrence per overdue "
    "rule. Delivery is session-local: the reminder runs on time only while this session is live "
    "and otherwise becomes overdue until the session is resumed."
)
_LIST_DESCRIPTION = (
    "List every active reminder in the current session in creation order, including its exact "
    "id, UTC target, scheduled or overdue state, and session-local delivery mode."
)
_DELETE_DESCRIPTION = (
    "Delete one active reminder in the current session by the exact id returned by "
    "schedule_create or schedule_list. Unknown or already-finished ids return deleted false."
)

_CORRUPT = {"code": "corrupt_schedule_log", "message": "The session schedule log is corrupt."}
_INTERNAL = {"code": "internal_error", "message": "The schedule operation failed."}
_UNCERTAIN = (
    "Schedule persistence is uncertain; retry with schedule_list before relying on this result."
)
_BAD_DELETE_ID = "schedule_delete id must be non-empty without surrounding whitespace."
_BAD_SELECTOR = "schedule_create accepts exactly one of after_seconds, at, or every_seconds."
_CREATE_KEYS = frozenset({"prompt", "after_seconds", "at", "every_seconds"})
_SELECTORS = ("after_seconds", "at", "every_seconds")
_LOCAL_AT_KEYS = ("date", "time", "time_zone")


def _create_parameters() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "prompt": {
                "type": "string",
                "description": "Reminder content to present when the target becomes due.",
            },
            "after_seconds": {
                "type": "number",
                "description": "Positive safe-integer delay in seconds.",
            },
            "every_seconds": {
                "type": "number",
                "description": "Fixed-rate safe-integer interval in seconds, at least 300.",
            },
            "at": {
                "oneOf": [
                    {"type": "string"},
                    {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "date": {"type": "string"},
                            "time": {"type": "string"},
                            "time_zone": {"type": "string"},
                        },
                        "required": ["date", "time", "time_zone"],
                    },
                ],
                "description": "Absolute target as strict offset RFC 3339 or local date/time "
                "with an explicit IANA zone.",
            },
        },
        "required": ["prompt"],
    }


def _list_parameters() -> dict[str, Any]:
    return {"type": "object", "properties": {}}


def _delete_parameters() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "Exact session-local schedule id."}
        },
        "required": ["id"],
    }


def _raw_argument(key: str) -> Callable[[object], object]:
    def raw(args: object) -> object:
        return args.get(key) if isinstance(args, dict) else None

    return raw


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolSpec:
    """One tool as schedule offers it to a host (schedule cannot import host's own type).

    ``handler(args, *, caller)`` returns a JSON value. ``exclusive``: never run concurrently with
    sibling tool calls. ``title``, ``kind`` and ``raw_input`` (arguments → the raw text worth
    showing, or ``None``) are presentation hints.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    exclusive: bool = True
    title: str
    kind: str
    raw_input: Callable[[object], object] | None = None
    handler: Handler


class _Answer(Exception):
    """Ends a transaction early with a tool value (never escapes a handler)."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value


def _uncertain(operation: str, id: str | None = None) -> dict[str, str]:
    value = {"code": "persistence_uncertain", "message": _UNCERTAIN, "operation": operation}
    if id is not None:
        value["id"] = id
    return value


def _is_number(v: object) -> bool:
    return type(v) is int or type(v) is float


def _check_create_schema(args: object) -> dict[str, Any]:
    if not isinstance(args, dict):
        raise InvalidToolArguments("$: expected object")
    if "prompt" not in args:
        raise InvalidToolArguments('$: missing required property "prompt"')
    if not isinstance(args["prompt"], str):
        raise InvalidToolArguments("$.prompt: expected string")
    for key in ("after_seconds", "every_seconds"):
        if key in args and not _is_number(args[key]):
            raise InvalidToolArguments(f"$.{key}: expected number")
    if "at" in args:
        at = args["at"]
        if isinstance(at, dict):
            _check_local_at_schema(at)
        elif not isinstance(at, str):
            raise InvalidToolArguments("$.at: must match exactly one of 2 schemas")
    return args


def _check_local_at_schema(at: Mapping[str, Any]) -> None:
    """The object branch of ``at``: exactly ``date``, ``time``, ``time_zone``, all strings."""
    for key in _LOCAL_AT_KEYS:
        if key not in at:
            raise InvalidToolArguments(f'$.at: missing required property "{key}"')
    for key, value in at.items():
        if key not in _LOCAL_AT_KEYS:
            raise InvalidToolArguments(f'$.at: unexpected property "{key}"')
        if not isinstance(value, str):
            raise InvalidToolArguments(f"$.at.{key}: expected string")


def _precheck_create(args: Mapping[str, Any]) -> None:
    """The create checks that need no log or clock (schedule §10.5 step 3), in order; a bad ``at`` is
    left to the constructor (it costs one flush)."""
    if args.keys() - _CREATE_KEYS or sum(key in args for key in _SELECTORS) != 1:
        raise ScheduleInputError("invalid_selector", _BAD_SELECTOR)
    check_create_arguments(args)


def _check_delete_schema(args: object) -> str:
    if not isinstance(args, dict):
        raise InvalidToolArguments("$: expected object")
    if "id" not in args:
        raise InvalidToolArguments('$: missing required property "id"')
    if not isinstance(args["id"], str):
        raise InvalidToolArguments("$.id: expected string")
    return args["id"]


class ScheduleTools:
    """The three schedule tools of one live root agent (schedule §10).

    ``session`` is its log, ``owner`` its agent port (any other ``caller`` gets
    ``internal_error``), ``queue`` the agent's FIFO shared with its runtime, and
    ``on_durable_change`` is called after every successful barrier (the host passes
    ``runtime.request_drive``). Barrier counts per call: create 2, list 1, delete 2 (1 when the
    id is not active), any failure before the queue 0; notifications match successful barriers.
    """

    def __init__(
        self,
        *,
        session: SessionHandle,
        owner: AgentPort,
        clock: Clock,
        queue: ScheduleQueue,
        on_durable_change: Callable[[], None],
        logger: logging.Logger | None = None,
    ) -> None:
        self._session = session
        self._owner = owner
        self._clock = clock
        self._queue = queue
        self._on_durable_change = on_durable_change
        self._log = schedule_logger(logger)
        self._folded = IncrementalFold()  # the suffix fold, decoding each event once

    def specs(self) -> tuple[ToolSpec, ToolSpec, ToolSpec]:
        """``schedule_create``, ``schedule_list``, ``schedule_delete``, in that order."""
        return (
            ToolSpec(
                name="schedule_create",
                description=_CREATE_DESCRIPTION,
                parameters=_create_parameters(),
                title="Create reminder",
                kind="other",
                raw_input=_raw_argument("prompt"),
                handler=self.schedule_create,
            ),
            ToolSpec(
                name="schedule_list",
                description=_LIST_DESCRIPTION,
                parameters=_list_parameters(),
                title="List reminders",
                kind="read",
                handler=self.schedule_list,
            ),
            ToolSpec(
                name="schedule_delete",
                description=_DELETE_DESCRIPTION,
                parameters=_delete_parameters(),
                title="Delete reminder",
                kind="other",
                raw_input=_raw_argument("id"),
                handler=self.schedule_delete,
            ),
        )

    async def schedule_create(self, args: object, *, caller: object) -> Any:
        """Create one reminder; return its view (schedule §10.5) or a Schedule error value."""
        checked = _check_create_schema(args)
        if caller is not self._owner:
            return dict(_INTERNAL)
        try:
            _precheck_create(checked)
        except ScheduleInputError as exc:
            return exc.to_value()
        async with self._queue:
            try:
                await self._preflight("create", None)
                folded = self._fold("schedule_create")
                id = allocate_id(folded.seen_ids)
                record = self._build(id, checked)
                data = change_to_dict(Create(version=1, schedule=record))
                return await self._commit(
                    "create", id, data, lambda: view(record, self._sample("schedule_create"))
                )
            except _Answer as answer:
                return answer.value

    async def schedule_list(self, args: object, *, caller: object) -> Any:
        """Every active reminder's view in create order (schedule §10.6), or a Schedule error value."""
        if not isinstance(args, dict):
            raise InvalidToolArguments("$: expected object")
        if caller is not self._owner:
            return dict(_INTERNAL)
        async with self._queue:
            try:
                await self._preflight("list", None)
                folded = self._fold("schedule_list")
                now = self._sample("schedule_list")
                return [view(record, now) for record in folded.active]
            except _Answer as answer:
                return answer.value

    async def schedule_delete(self, args: object, *, caller: object) -> Any:
        """Delete one active reminder (schedule §10.7): ``{"id","deleted"[,"code"]}`` or an error value."""
        id = _check_delete_schema(args)
        if id == "" or id != js_trim(id):
            return ScheduleInputError("invalid_rule", _BAD_DELETE_ID).to_value()
        if caller is not self._owner:
            return dict(_INTERNAL)
        async with self._queue:
            try:
                await self._preflight("delete", id)
                folded = self._fold("schedule_delete")
                if all(record.id != id for record in folded.active):
                    return {"id": id, "deleted": False, "code": "schedule_not_found"}
                data = change_to_dict(Delete(version=1, id=id))
                return await self._commit("delete", id, data, lambda: {"id": id, "deleted": True})
            except _Answer as answer:
                return answer.value

    # -- transaction steps (all run while holding the queue) ------------------------------

    async def _preflight(self, operation: str, id: str | None) -> None:
        """The barrier before any read; notify on success."""
        try:
            await self._session.flush()
        except Exception as exc:
            self._log.warning("schedule: schedule_%s preflight failed: %s", operation, describe(exc))
            raise _Answer(_uncertain(operation, id)) from exc
        self._notify()

    def _fold(self, tool: str) -> Fold:
        """The suffix fold; ``corrupt_schedule_log`` for a ``ScheduleLogError``, else
        ``internal_error`` (e.g. unreadable events)."""
        try:
            return self._folded(self._session.events, self._session.seed_length)
        except ScheduleLogError as exc:
            self._log.warning("schedule: %s found a corrupt schedule log: %s", tool, exc.message)
            raise _Answer(dict(_CORRUPT)) from exc
        except Exception as exc:
            self._log.warning("schedule: %s could not read the session log: %s", tool, describe(exc))
            raise _Answer(dict(_INTERNAL)) from exc

    def _sample(self, tool: str) -> int:
        """One wall-clock sample for a view; a clock that raises or returns garbage is internal."""
        try:
            now = self._clock.now_ms()
        except Exception as exc:
            self._log.warning("schedule: %s could not read the clock: %s", tool, describe(exc))
            raise _Answer(dict(_INTERNAL)) from exc
        sample = safe_int(now)
        if sample is None:
            self._log.warning("schedule: %s got an unusable clock sample: %r", tool, now)
            raise _Answer(dict(_INTERNAL))
        return sample

    def _build(self, id: str, args: Mapping[str, Any]) -> Record:
        """The record from one clock sample; input errors become their value, nothing stored."""
        try:
            now = self._clock.now_ms()
            if "at" in args:
                return create_at(id, args["prompt"], args["at"], now)
            if "after_seconds" in args:
                return create_after(id, args["prompt"], args["after_seconds"], now)
            return create_every(id, args["prompt"], args["every_seconds"], now)
        except ScheduleInputError as exc:
            raise _Answer(exc.to_value()) from exc
        except Exception as exc:
            self._log.warning("schedule: schedule_create failed: %s", describe(exc))
            raise _Answer(dict(_INTERNAL)) from exc

    async def _commit(
        self, operation: str, id: str, data: dict[str, Any], result: Callable[[], Any]
    ) -> Any:
        """Append ``data``, wait for its barrier, notify and return ``result()``.

        A cancellation that arrived earlier is delivered right before the append; from the
        append to the return everything is shielded, so an appended transaction always reaches
        its barrier and notification before the queue is released.
        """
        import trio
        await trio.lowlevel.checkpoint_if_cancelled()
        with trio.CancelScope(shield=True):
            try:
                self._session.append(CHANGE_TYPE, data)
            except Exception as exc:
                self._log.warning("schedule: schedule_%s append failed: %s", operation, describe(exc))
                raise _Answer(dict(_INTERNAL)) from exc
            try:
                await self._session.flush()
            except Exception as exc:
                self._log.warning("schedule: schedule_%s barrier failed: %s", operation, describe(exc))
                raise _Answer(_uncertain(operation, id)) from exc
            self._notify()
            return result()

    def _notify(self) -> None:
        """Tell the observer a barrier succeeded; its failures are logged, never returned."""
        try:
            with failing_as("durable-change observer failed"):
                self._on_durable_change()
        except Failure as failure:
            self._log.warning("schedule: %s: %s", failure.what, describe(failure.cause))
