"""Classification of an endpoint's HTTP failures (host §6.4 Failures). Pure."""

from __future__ import annotations

import datetime
import email.utils
import json
import re
from collections.abc import Mapping
from typing import Any

from eventlog.values import MAX_SAFE_INTEGER

from .._chunks import Failure, make_failure


def error_message(obj: Mapping[str, Any]) -> str | None:
    """The message of an error body or payload: ``error.message``, a string ``error``, or a
    top-level ``message``; ``None`` when it has none."""
    error = obj.get("error")
    if isinstance(error, Mapping) and isinstance(inner := error.get("message"), str) and inner:
        return inner
    if isinstance(error, str) and error:
        return error
    message = obj.get("message")
    return message if isinstance(message, str) and message else None


_CONTEXT_LENGTH = re.compile(r"context[ _-]?(length|window|size)", re.IGNORECASE)


def parse_retry_after(value: str | None, now_ms: int) -> int | None:
    """``Retry-After`` as milliseconds: delay seconds, or an HTTP date (a past date is 0).
    Anything else, or a value beyond a safe integer, is ``None``."""
    if value is None:
        return None
    value = value.strip()
    if re.fullmatch(r"[0-9]+(\.[0-9]+)?", value):
        ms = round(float(value) * 1000) if "." in value else int(value) * 1000
    else:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # a "-0000" zone: UTC without a claimed offset
            when = when.replace(tzinfo=datetime.UTC)
        ms = max(0, round(when.timestamp() * 1000) - now_ms)
    return ms if ms <= MAX_SAFE_INTEGER else None


def http_failure(status: int, headers: Mapping[str, str], body: bytes, url: str, now_ms: int) -> Failure:
    """Classify a non-success HTTP response (host §6.4 Failures). ``headers`` is case-insensitive."""
    try:
        parsed = json.loads(body.decode("utf-8", errors="replace"))
    except ValueError:
        parsed = None
    obj: Mapping[str, Any] = parsed if isinstance(parsed, Mapping) else {}
    error = obj.get("error")
    fields = error if isinstance(error, Mapping) else obj
    code_value, type_value = fields.get("code"), fields.get("type")
    message = error_message(obj)
    signals = [str(v) for v in (code_value, type_value, message) if v is not None]
    if status in (401, 403):
        code = "AUTH"
    elif any("insufficient_quota" in s for s in signals):
        code = "QUOTA"
    elif status == 429:
        code = "RATE_LIMIT"
    elif status == 400 and (
        code_value == "context_length_exceeded" or (message and _CONTEXT_LENGTH.search(message))
    ):
        code = "CONTEXT_WINDOW_EXCEEDED"
    elif status in (400, 413):
        code = "INVALID_REQUEST"
    elif status == 408:
        code = "TIMEOUT"
    elif 500 <= status <= 599:
        code = "SERVER"
    else:
        code = f"HTTP_{status}"
    if status == 404:
        message = f"model endpoint not found (HTTP 404) at {url}"
    return make_failure(
        message or f"model API error (HTTP {status})",
        code,
        status=status,
        provider_retry_after_ms=parse_retry_after(headers.get("retry-after"), now_ms),
        request_id=headers.get("x-request-id") or None,
    )
