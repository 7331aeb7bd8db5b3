"""Which model failures are retried, and after how long (host §3.6). Pure."""

from __future__ import annotations

import random
from collections.abc import Callable

from msgspec import UNSET

from ._chunks import Failure

RETRYABLE_CODES: frozenset[str] = frozenset(
    {"RATE_LIMIT", "SERVER", "TIMEOUT", "TRANSPORT", "EMPTY_RESPONSE"}
)
MAX_RETRY_DELAY_MS = 10_000
_FIRST_RETRY_DELAY_MS = 500


def is_retryable(failure: Failure) -> bool:
    """Retry classification is a pure function of the failure's ``code``."""
    return failure.code in RETRYABLE_CODES


def retry_delay_ms(
    retry: int,
    failure: Failure | None = None,
    *,
    uniform: Callable[[float, float], float] = random.uniform,
) -> int:
    """The delay before retry ``retry`` (1-based): ``round(min(10000, 500·2^(retry−1)) × u)`` with
    ``u = uniform(0.9, 1.1)``. A failure's ``providerRetryAfterMs`` of at most 10000 replaces it,
    without jitter. Raises ``ValueError`` for a retry number below 1."""
    if retry < 1:
        raise ValueError(f"retry numbers start at 1, got {retry}")
    after = failure.provider_retry_after_ms if failure is not None else UNSET
    if after is not UNSET and 0 <= after <= MAX_RETRY_DELAY_MS:
        return after
    base = min(MAX_RETRY_DELAY_MS, _FIRST_RETRY_DELAY_MS << (retry - 1))
    return round(base * uniform(0.9, 1.1))
