"""The parameter checks of the JSON-RPC methods (host §4.3), pure: each returns the checked value
or raises a :class:`~host.runtime.HostError` (``invalid-params`` or ``invalid-session-id``) naming
the method and the field."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from eventlog.values import MAX_SAFE_INTEGER, is_safe_int
from host.runtime import SESSION_ID_RULE, HostError, bad_at_seq, check_session_id

HISTORY_LIMIT_MAX = 10_000


def _invalid(method: str, field: str, requirement: str) -> HostError:
    return HostError("invalid-params", f"{method} {field} {requirement}", field=field)


def session_id_param(method: str, params: Mapping[str, Any], key: str = "sessionId") -> str:
    """``params[key]`` if it matches the id rule (:func:`~host.runtime.check_session_id`), else
    ``invalid-session-id`` naming the method and the field."""
    value = params.get(key)
    try:
        return check_session_id(value)
    except HostError:  # the same refusal, with the message naming the method and field
        raise HostError(
            "invalid-session-id", f"{method} {key} must match {SESSION_ID_RULE}", value=value
        ) from None


def _optional_string(method: str, params: Mapping[str, Any], key: str, *, non_empty: bool) -> str | None:
    if key not in params:
        return None
    value = params[key]
    if not isinstance(value, str) or (non_empty and not value):
        raise _invalid(method, key, "must be a non-empty string" if non_empty else "must be a string")
    return value


@dataclass(frozen=True, slots=True)
class InitializeParams:
    cwd: str | None
    provider: str | None
    model: str | None
    max_tokens: int | None
    reasoning_effort: str | None
    stream_deltas: bool | None


def initialize_params(params: Mapping[str, Any]) -> InitializeParams:
    """host §4.3.1, checked in order: cwd, provider, model, maxTokens, reasoningEffort, streamDeltas."""
    method = "initialize"
    cwd = _optional_string(method, params, "cwd", non_empty=False)
    if cwd is not None and "\x00" in cwd:
        raise _invalid(method, "cwd", "must not contain NUL characters")
    provider = _optional_string(method, params, "provider", non_empty=True)
    model = _optional_string(method, params, "model", non_empty=True)
    max_tokens = _optional_int(
        method, params, "maxTokens", None, 1, MAX_SAFE_INTEGER, "must be a positive safe integer"
    )
    effort = _optional_string(method, params, "reasoningEffort", non_empty=True)
    deltas = params.get("streamDeltas")
    if "streamDeltas" in params and not isinstance(deltas, bool):
        raise _invalid(method, "streamDeltas", "must be a boolean")
    return InitializeParams(cwd, provider, model, max_tokens, effort, deltas)


def _content_block_ok(block: object) -> bool:
    if not isinstance(block, dict):
        return False
    kind = block.get("type")
    if kind == "text":
        return block.keys() == {"type", "text"} and isinstance(block["text"], str)
    if kind == "image":
        return block.keys() == {"type", "attachment"} and isinstance(block["attachment"], dict)
    return False


def _inexact_number(value: object) -> tuple[str, float] | None:
    """The first number in ``value`` that the log cannot store exactly (host §4.3.2): ``-0.0``,
    which JSON writers turn into ``0``, or an integer beyond the safe range; with its path
    (``.key``, ``[i]``). Iterative: the wire admits values nested :data:`~host.rpc.MAX_NESTING`
    levels deep."""
    pending: list[tuple[str, object]] = [("", value)]
    while pending:
        path, item = pending.pop()
        if isinstance(item, dict):
            pending.extend((f"{path}.{key}", member) for key, member in reversed(item.items()))
        elif isinstance(item, list):
            pending.extend((f"{path}[{index}]", member) for index, member in reversed(list(enumerate(item))))
        elif isinstance(item, (int, float)) and not isinstance(item, bool) and not _exact(item):
            return path, item
    return None


def _exact(number: float) -> bool:
    if isinstance(number, int):
        return is_safe_int(number)
    return not (number == 0.0 and math.copysign(1.0, number) < 0)


def content_blocks_param(method: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A non-empty array of user blocks: ``{"type":"text","text":S}`` or
    ``{"type":"image","attachment":OBJ}``, nothing else, and no attachment holding a number the
    log cannot store exactly (``-0.0``, an integer beyond the safe range)."""
    blocks = params.get("contentBlocks")
    if not isinstance(blocks, list) or not blocks:
        raise _invalid(method, "contentBlocks", "must be a non-empty array of content blocks")
    for index, block in enumerate(blocks):
        field = f"contentBlocks[{index}]"
        if not _content_block_ok(block):
            raise _invalid(
                method,
                field,
                'must be {"type":"text","text":<string>} or {"type":"image","attachment":<object>}',
            )
        if block["type"] == "image" and (found := _inexact_number(block["attachment"])) is not None:
            path, number = found
            raise _invalid(
                method,
                field,
                f"holds {number!r} at attachment{path}, a number the log cannot store exactly "
                f"(no -0.0, integers within ±{MAX_SAFE_INTEGER})",
            )
    return blocks


def mode_param(method: str, params: Mapping[str, Any]) -> Literal["queue", "steer"]:
    """``"queue"`` (the default) or ``"steer"``."""
    mode = params.get("mode", "queue")
    if mode == "queue":
        return "queue"
    if mode == "steer":
        return "steer"
    raise _invalid(method, "mode", 'must be "queue" or "steer"')


def path_param(method: str, params: Mapping[str, Any]) -> str:
    """``working-directory/set``'s ``path``: a non-empty string (checked as a directory later)."""
    path = params.get("path")
    if not isinstance(path, str) or not path or "\x00" in path:
        raise _invalid(method, "path", "must be a non-empty string without NUL characters")
    return path


@dataclass(frozen=True, slots=True)
class ForkParams:
    parent: str
    boundary_seq: int | None
    child_id: str | None


def fork_params(params: Mapping[str, Any]) -> ForkParams:
    """host §4.3.5: ``sessionId``, optional ``boundarySeq`` (a safe integer ≥ 0) and ``childSessionId``."""
    method = "session/fork"
    parent = session_id_param(method, params)
    boundary = _optional_int(
        method, params, "boundarySeq", None, 0, MAX_SAFE_INTEGER, "must be a non-negative safe integer"
    )
    child = session_id_param(method, params, "childSessionId") if "childSessionId" in params else None
    return ForkParams(parent, boundary, child)


@dataclass(frozen=True, slots=True)
class HistoryParams:
    session_id: str
    from_seq: int
    before_seq: int | None
    limit: int


def history_params(params: Mapping[str, Any]) -> HistoryParams:
    """host §4.3.7: ``sessionId``, then ``fromSeq`` (default 0) or ``beforeSeq``, never both (each a
    safe integer ≥ 0), and ``limit`` (an integer from 1 to 10000, default 1000)."""
    method = "session/history"
    session_id = session_id_param(method, params)
    if "fromSeq" in params and "beforeSeq" in params:
        raise HostError(
            "invalid-params", f"{method} takes fromSeq or beforeSeq, not both", field="beforeSeq"
        )
    from_seq = _optional_int(
        method, params, "fromSeq", 0, 0, MAX_SAFE_INTEGER, "must be a non-negative safe integer"
    )
    before_seq = _optional_int(
        method, params, "beforeSeq", None, 0, MAX_SAFE_INTEGER, "must be a non-negative safe integer"
    )
    limit = _optional_int(
        method,
        params,
        "limit",
        1000,
        1,
        HISTORY_LIMIT_MAX,
        f"must be an integer from 1 to {HISTORY_LIMIT_MAX}",
    )
    assert from_seq is not None and limit is not None
    return HistoryParams(session_id, from_seq, before_seq, limit)


@dataclass(frozen=True, slots=True)
class InspectParams:
    session_id: str
    at_seq: int | None


def inspect_params(params: Mapping[str, Any]) -> InspectParams:
    """host §4.3.11: ``sessionId`` and an optional ``atSeq``, a non-negative integer (whether it
    is a seq of the session is the host's check, with the same message)."""
    session_id = session_id_param("session/inspect", params)
    if "atSeq" not in params:
        return InspectParams(session_id, None)
    at_seq = params["atSeq"]
    if not (type(at_seq) is int and at_seq >= 0):
        raise bad_at_seq()
    return InspectParams(session_id, at_seq)


def _optional_int(
    method: str,
    params: Mapping[str, Any],
    key: str,
    default: int | None,
    lowest: int,
    highest: int,
    requirement: str,
) -> int | None:
    if key not in params:
        return default
    value = params[key]
    if not (type(value) is int and lowest <= value <= highest):
        raise _invalid(method, key, requirement)
    return value
