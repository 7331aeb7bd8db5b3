"""Replay validator for readings already in a log (time-context §13). It never writes.

Each reading is checked against the events before it, in the order of time-context §13; the first failing
check wins. Every check looks back only to the start of the reading's own turn, so a reading
costs a walk through its turn so far, never a pass over the whole log.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from eventlog.values import MAX_SAFE_INTEGER

from ._errors import ClientZoneError, ReadingInvariantError, json_text
from ._hook import EventLike, ZoneCanonicalizer
from ._render import PLUGIN, STEP_ONE_BASELINE, format_timestamp, policy_line
from ._scan import USER_MESSAGE, is_reading, open_turn, position
from ._zones import client_zones

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_READING = re.compile(
    r"Time sampled while preparing turn ([0-9]+), step ([0-9]+): "
    r"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[+-][0-9]{2}:[0-9]{2}(?::[0-9]{2})?)"
    r"\[([^\]\n]+)\]\n"
    r"(Client time zone for this request: [^\n]+)\n"
    r"Elapsed since the preceding (model-visible message|step context): "
    r"(?:unavailable|(?:[0-9]+d )?(?:[0-9]+h )?(?:[0-9]+m )?[0-9]+s)\.",
    re.ASCII,
)
_FOREIGN_POLICY = "Browser time zone for this request: "

_ONE_TEXT_BLOCK = "time-context messages must contain exactly one text block"
_FORMAT = "time-context message does not match the durable reading format"
_SAFE_TURN_STEP = "time-context turn and step must be positive safe integers"
_OUTSIDE_TURN = "time-context reading must be appended inside an open turn"
_OUTSIDE_STEP = "time-context reading must follow step/start"
_AFTER_REQUEST = "time-context reading must precede request/header"
_SOURCE = "time-context source must carry only the exact snapshot text, not request authority"
_POLICY = "time-context client-zone text does not match current-turn user messages"
_TIMESTAMP = "time-context rendered timestamp must parse and not postdate its durable event"
_UNIQUE_ZONE = "time-context rendered timestamp does not match the unique client zone"


@dataclass(frozen=True, slots=True)
class ReadingViolation:
    """The first failing check of the reading logged at ``seq``."""

    seq: int
    message: str


@dataclass(frozen=True, slots=True)
class ReadingReport:
    """``checked`` readings (violations included), ``skipped_foreign`` ones, and the failures."""

    checked: int
    skipped_foreign: int
    violations: tuple[ReadingViolation, ...]


def _text_block(content: Any) -> str | None:
    """The text of a content made of exactly one ``{"type":"text","text":str}`` block."""
    if not isinstance(content, list) or len(content) != 1:
        return None
    block = content[0]
    if not isinstance(block, dict) or block.keys() != {"type", "text"}:
        return None
    if block["type"] != "text" or not isinstance(block["text"], str):
        return None
    return block["text"]


def _is_foreign(data: Mapping[str, Any]) -> bool:
    """A reading written by another implementation: one text block whose line 2 names a
    *browser* zone."""
    text = _text_block(data.get("content"))
    if text is None:
        return False
    lines = text.split("\n", 2)
    return len(lines) > 1 and lines[1].startswith(_FOREIGN_POLICY)


def _exact_source(source: Any, text: str) -> bool:
    if not isinstance(source, dict) or source.keys() != {"kind", "plugin", "form", "sections"}:
        return False
    if (source["kind"], source["plugin"], source["form"]) != ("plugin", PLUGIN, "snapshot"):
        return False
    sections = source["sections"]
    if not isinstance(sections, list) or len(sections) != 1:
        return False
    section = sections[0]
    return (
        isinstance(section, dict)
        and section.keys() == {"name", "text"}
        and section["name"] == PLUGIN
        and isinstance(section["text"], str)
        and section["text"] == text
    )


def _safe_positive(digits: str) -> int | None:
    """The value of a decimal digit string when it is in 1 … 2**53 - 1, else ``None``."""
    # Leading zeros go first and the length is checked before int(), which refuses very long
    # digit strings with a ValueError of its own.
    significant = digits.lstrip("0")
    if not 0 < len(significant) <= 16:
        return None
    value = int(significant)
    return value if value <= MAX_SAFE_INTEGER else None


def _check_position(events: Sequence[EventLike], end: int, turn: int, step: int) -> None:
    """Check 4: the reading lies inside the open step ``turn``/``step``, before its request."""
    at = position(events, end)
    if at.turn is None:
        raise ReadingInvariantError(_OUTSIDE_TURN)
    if at.step is None:
        raise ReadingInvariantError(_OUTSIDE_STEP)
    if at.requested:
        raise ReadingInvariantError(_AFTER_REQUEST)
    if not (type(at.turn) is int and at.turn == turn and type(at.step) is int and at.step == step):
        raise ReadingInvariantError(
            f"time-context reading names turn {turn}/step {step}, "
            f"expected turn {json_text(at.turn)}/step {json_text(at.step)}"
        )


def _durable_instant(stamp: str, time: object) -> int:
    """Check 8: the instant of the rendered ``stamp`` in ms, which the event's append ``time``
    (a safe integer) does not precede."""
    try:
        instant_ms = (datetime.fromisoformat(stamp) - _EPOCH) // timedelta(milliseconds=1)
    except (ValueError, OverflowError):
        raise ReadingInvariantError(_TIMESTAMP) from None
    if type(time) is not int or abs(time) > MAX_SAFE_INTEGER or time < instant_ms:
        raise ReadingInvariantError(_TIMESTAMP)
    return instant_ms


def _check_unique_zone(instant_ms: int, zone: str, rendered: str) -> None:
    """Check 9: with a unique client zone, the clock is shown in that zone."""
    try:
        expected = format_timestamp(instant_ms, zone)
    except Exception as exc:
        raise ReadingInvariantError(
            "time-context client zone cannot format its durable timestamp: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    if expected != rendered:
        raise ReadingInvariantError(_UNIQUE_ZONE)


def _check(
    events: Sequence[EventLike],
    end: int,
    event: EventLike,
    data: Any,
    canonicalize: ZoneCanonicalizer,
) -> None:
    """Checks 1-9 of time-context §13 in order, for a reading whose prefix is ``events[:end]``."""
    data = data if isinstance(data, Mapping) else {}
    text = _text_block(data.get("content"))
    if text is None:  # 1. one text block
        raise ReadingInvariantError(_ONE_TEXT_BLOCK)
    match = _READING.fullmatch(text)
    if match is None:  # 2. durable format
        raise ReadingInvariantError(_FORMAT)
    stamp, zone_label, policy, phrase = match[3], match[4], match[5], match[6]
    turn, step = _safe_positive(match[1]), _safe_positive(match[2])
    if turn is None or step is None:  # 3. safe turn and step
        raise ReadingInvariantError(_SAFE_TURN_STEP)
    _check_position(events, end, turn, step)  # 4.
    if not _exact_source(data.get("source"), text):  # 5. exact snapshot source
        raise ReadingInvariantError(_SOURCE)
    # 6. the client-zone line re-derived from the turn's user messages (ClientZoneError propagates)
    zones = client_zones(open_turn(events, end, turn).messages, canonicalize)
    if policy != policy_line(zones):
        raise ReadingInvariantError(_POLICY)
    if (phrase == STEP_ONE_BASELINE) != (step == 1):  # 7. baseline phrase
        raise ReadingInvariantError(
            f'time-context step {step} uses the wrong elapsed-time baseline "{phrase}"'
        )
    instant_ms = _durable_instant(stamp, event.time)  # 8.
    if len(zones) == 1:  # 9.
        _check_unique_zone(instant_ms, zones[0], f"{stamp}[{zone_label}]")


def check_reading(
    prefix: Sequence[EventLike], event: EventLike, canonicalize: ZoneCanonicalizer
) -> None:
    """Check one reading ``event`` against the events logged before it (time-context §13 checks 1-9).

    Raises ``ReadingInvariantError`` with the first failing check's message, or the
    ``ClientZoneError`` of check 6 when a ``clientTimeZone`` of the turn is invalid.
    """
    _check(prefix, len(prefix), event, event.value(), canonicalize)


def validate_readings(
    events: Sequence[EventLike], canonicalize: ZoneCanonicalizer
) -> ReadingReport:
    """Check every reading in ``events`` against the events before it (time-context §13).

    A reading is a ``user/message`` whose source is ``{"kind":"plugin","plugin":"time-context"}``.
    One whose line 2 starts ``Browser time zone for this request: `` came from another
    implementation: it is counted in ``skipped_foreign`` and not checked.
    """
    checked = 0
    foreign = 0
    violations: list[ReadingViolation] = []
    for index, event in enumerate(events):
        if event.type != USER_MESSAGE:
            continue
        data = event.value()
        if not is_reading(data):
            continue
        if _is_foreign(data):
            foreign += 1
            continue
        checked += 1
        try:
            _check(events, index, event, data, canonicalize)
        except (ReadingInvariantError, ClientZoneError) as exc:
            violations.append(ReadingViolation(event.seq, str(exc)))
    return ReadingReport(checked, foreign, tuple(violations))
