"""What the scripted model understands beyond the fixed patterns of host §6.3 rule 3: the ways
people ask for, list and delete reminders (host §6.3, "Everyday phrases"). Pure and offline.

:func:`understand` is tried only after every pattern of rule 3 has failed to match, so those
rules keep their exact arguments and replies; it returns a schedule tool call, a short help text
for a request about reminders that cannot be carried out as written, or ``None`` for a text that
is not about reminders at all (which rule 3 then echoes as ``You said: <s>``).

Everything comes from the request: local wall times ("at 18:30", "tomorrow at 9am") are placed
in the prompt's ``clientTimeZone`` (or a zone named in the phrase) on the date of the step's time
reading, and sent as schedule's local ``at`` object ``{date, time, time_zone}`` (schedule §5.3),
which schedule resolves to an instant. Without a zone, or without a reading, the reply is help
that says what is missing; no default zone is ever assumed. Reminders are named by what the
conversation shows: create and list results, delete results and reminder framings.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import schedule

_FLAGS = re.IGNORECASE | re.ASCII

# --- durations ----------------------------------------------------------------------------------

_UNIT_SECONDS = {
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 604800, "week": 604800, "weeks": 604800,
}  # fmt: skip
_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20,
    "thirty": 30, "forty": 40, "forty-five": 45, "fifty": 50, "sixty": 60, "ninety": 90,
}  # fmt: skip
_UNIT = "(?:" + "|".join(sorted(_UNIT_SECONDS, key=len, reverse=True)) + r")(?![a-z])"
# digits may touch their unit (2h30m); a number word needs a space ("and" is not "an" + "d")
_NUMBER = r"(?:[0-9]+(?:\.[0-9]+)?\s*|(?:" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + r")\s+)"
_PART = rf"{_NUMBER}{_UNIT}"
_DURATION = rf"(?:half an hour|{_PART}(?:(?:\s*,\s*|\s+and\s+|\s*){_PART})*)"
_PART_RE = re.compile(rf"({_NUMBER})({_UNIT})", _FLAGS)


def duration_seconds(text: str) -> int | None:
    """Seconds of a spoken duration (``1 min``, ``an hour``, ``1h 30m``, ``half an hour``,
    ``1.5 hours``), rounded to whole seconds; ``None`` if it is not one."""
    text = text.strip()
    if text.lower() == "half an hour":
        return 1800
    if not re.fullmatch(_DURATION, text, _FLAGS):
        return None
    total = 0.0
    for number, unit in _PART_RE.findall(text):
        value = _NUMBER_WORDS.get(number.strip().lower())
        total += (float(number) if value is None else value) * _UNIT_SECONDS[unit.lower()]
    return round(total)


# --- local wall times ---------------------------------------------------------------------------

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_CLOCK = r"(?:[0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?(?:\s*[ap]\.?m\.?)?|[0-9]{1,2}\s*[ap]\.?m\.?|noon|midnight)"
_DATE = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
_DAY = rf"(?:today|tonight|tomorrow|(?:on\s+)?(?:{'|'.join(_WEEKDAYS)})|(?:on\s+)?{_DATE})"
_ZONE = r"(?:UTC|[A-Za-z][A-Za-z0-9_+.-]*(?:/[A-Za-z0-9_+.-]+)+)"
_OFFSET_INSTANT = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+(?:Z|[+-][0-9]{2}:[0-9]{2})"
_LOCAL = (
    rf"(?:(?P<day1>{_DAY})\s+)?(?:at\s+)?(?P<clock>{_CLOCK})(?:\s+(?P<zone>{_ZONE}))?(?:\s+(?P<day2>{_DAY}))?"
)


@dataclass(frozen=True, slots=True)
class _Local:
    """A wall time as said: the clock, the day words (if any) and a zone named in the phrase."""

    clock: str
    day: str | None
    zone: str | None


def _clock_fields(text: str) -> tuple[int, int, int] | None:
    """``(hour, minute, second)`` of ``18:30``, ``6:30 pm``, ``9am``, ``noon``, ``midnight``."""
    text = text.lower().replace(".", "").replace(" ", "")
    if text == "noon":
        return 12, 0, 0
    if text == "midnight":
        return 0, 0, 0
    m = re.fullmatch(r"([0-9]{1,2})(?::([0-9]{2}))?(?::([0-9]{2}))?(am|pm)?", text)
    if m is None:
        return None
    hour, minute, second = int(m[1]), int(m[2] or 0), int(m[3] or 0)
    if m[4] is not None:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if m[4] == "pm" else 0)
    elif m[2] is None:
        return None  # a bare number is not a time of day
    if hour > 23 or minute > 59 or second > 59:
        return None
    return hour, minute, second


def _local_date(day: str | None, fields: tuple[int, int, int], now: datetime) -> date | None:
    """The date a said wall time falls on, seen from ``now`` (the reading, in the target zone):
    without a day word, today if that time is still ahead, else tomorrow."""
    today = now.date()
    clock_now = (now.hour, now.minute, now.second)
    if day is None:
        return today if fields > clock_now else today + timedelta(days=1)
    word = day.lower().removeprefix("on").strip()
    if word in ("today", "tonight"):
        return today
    if word == "tomorrow":
        return today + timedelta(days=1)
    if word in _WEEKDAYS:
        ahead = (_WEEKDAYS.index(word) - today.weekday()) % 7
        if ahead == 0 and fields <= clock_now:
            ahead = 7
        return today + timedelta(days=ahead)
    try:
        return date.fromisoformat(word)
    except ValueError:
        return None


# --- what the conversation says about reminders --------------------------------------------------


@dataclass(frozen=True, slots=True)
class Known:
    """A reminder the conversation shows as active: its id, prompt and kind."""

    id: str
    prompt: str
    kind: str


def _text(content: object) -> str:
    if not isinstance(content, list):
        return ""
    return "".join(
        b["text"]
        for b in content
        if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _record(value: object) -> Known | None:
    if isinstance(value, Mapping) and all(isinstance(value.get(k), str) for k in ("id", "prompt", "kind")):
        return Known(value["id"], value["prompt"], value["kind"])
    return None


def known_reminders(messages: Sequence[Mapping[str, Any]]) -> list[Known]:
    """The reminders that are active as far as ``messages`` show, in creation order: created by
    ``schedule_create``, replaced wholesale by a ``schedule_list`` result, gone after a
    ``schedule_delete`` result, and, for one-shot kinds, gone once their reminder was framed."""
    return list(_follow(messages).active.values())


@dataclass(slots=True)
class _Followed:
    """What the conversation shows of its reminders: the active ones, and how the others ended
    (``"fired"`` or ``"deleted"``), by id."""

    active: dict[str, Known]
    ended: dict[str, tuple[Known, str]]

    def end(self, reminder_id: str, how: str) -> None:
        if (known := self.active.pop(reminder_id, None)) is not None:
            self.ended[reminder_id] = (known, how)


def _follow(messages: Sequence[Mapping[str, Any]]) -> _Followed:
    calls: dict[str, str] = {}  # tool call id -> tool name
    followed = _Followed({}, {})
    for message in messages:
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        source = message.get("source")
        plugin = source.get("plugin") if isinstance(source, Mapping) else None
        if plugin == "schedule":
            _forget_framed(_text(blocks), followed)
            continue
        for block in blocks:
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "tool-call" and isinstance(block.get("id"), str):
                calls[block["id"]] = str(block.get("name"))
            elif block.get("type") == "tool-result" and block.get("isError") is not True:
                name = calls.get(str(block.get("toolCallId")))
                _apply_result(name, _json(_text(block.get("content"))), followed)
    return followed


def _apply_result(name: str | None, value: Any, followed: _Followed) -> None:
    active = followed.active
    if name == "schedule_create" and (record := _record(value)) is not None:
        active[record.id] = record
    elif name == "schedule_list" and isinstance(value, list):
        active.clear()
        for item in value:
            if (record := _record(item)) is not None:
                active[record.id] = record
    elif name == "schedule_delete" and isinstance(value, Mapping) and isinstance(value.get("id"), str):
        followed.end(value["id"], "deleted")


def _forget_framed(text: str, followed: _Followed) -> None:
    """A framed one-shot reminder is finished once it was dispatched (schedule §11.4)."""
    ids: list[object] = []
    for line in text.split("\n"):
        if line.startswith("schedule_id_json: "):
            ids.append(_json(line.removeprefix("schedule_id_json: ")))
        elif line.startswith("reminders_json: "):
            items = _json(line.removeprefix("reminders_json: "))
            if isinstance(items, list):
                ids.extend(item.get("schedule_id") for item in items if isinstance(item, Mapping))
    for framed in ids:
        if isinstance(framed, str) and framed in followed.active and followed.active[framed].kind != "every":
            followed.end(framed, "fired")


# --- the clock and zone a request carries --------------------------------------------------------

_READING_TIME = re.compile(
    r"Time sampled while preparing turn [0-9]+, step [0-9]+: ([0-9T:+-]+)\[[^\]\n]+\]", re.ASCII
)


def reading_now(messages: Sequence[Mapping[str, Any]]) -> datetime | None:
    """The instant of the last time reading in ``messages`` (an aware datetime), if any."""
    for message in reversed(messages):
        source = message.get("source")
        if isinstance(source, Mapping) and source.get("plugin") == "time-context":
            m = _READING_TIME.match(_text(message.get("content")))
            if m is not None:
                try:
                    return datetime.fromisoformat(m[1])
                except ValueError:
                    return None
    return None


def _zone_of(name: str) -> str | None:
    try:
        return schedule.canonicalize_time_zone(name)
    except schedule.ScheduleInputError:
        return None


# --- replies ------------------------------------------------------------------------------------

Call = tuple[str, dict[str, Any]]
Reply = list[Call] | str

EXAMPLES = (
    '"remind me in 10 minutes to stretch", "remind me to call mom tomorrow at 9am", '
    '"remind me every 2 hours to drink water", "what reminders do I have?", '
    '"delete the stretch reminder"'
)
HELP = f"I can set, list and delete reminders. Try: {EXAMPLES}."
_NO_TIME = (
    'When should I remind you{what}? Say a delay or a time, e.g. "remind me in 30 minutes to {example}" '
    'or "remind me to {example} at 18:30".'
)
_NO_WHAT = 'What should I remind you about? Say it after "to", e.g. "remind me {when} to stretch".'
_NO_ZONE = (
    'I don\'t know your time zone, so I can\'t place "{said}". Name a zone ("at 18:30 Europe/Berlin" '
    'or "at 18:30 UTC") or use a delay ("in 30 minutes").'
)
_NO_CLOCK = (
    "I can't tell the date and time now (this request has no time reading), so I can't place \"{said}\". "
    'Use a delay ("in 30 minutes") or an exact instant such as 2026-12-02T18:30:00+08:00.'
)
_REPEAT_AT = (
    'A repeating reminder runs at a fixed interval from when it is set, e.g. "remind me every 24 hours '
    'to {what}"; a fixed time of day on every day is not supported.'
)
_WANT_REMINDER = 'Do you want a reminder? Say "remind me {when} to {what}".'
_BAD_CLOCK = 'I don\'t understand the time "{said}". Use 18:30, 6:30pm, 9am, noon or midnight.'
_BAD_ZONE = '"{zone}" is not a time zone I know. Use an IANA name such as Europe/Berlin, or UTC.'

_PREFIX = re.compile(r"(?:(?:please|hey|ok|okay)[, ]+|(?:can|could|would|will) you (?:please )?)+", _FLAGS)
_SUFFIX = re.compile(r"[ ,]*(?:please|thanks|thank you)$", _FLAGS)
_ASK = re.compile(r"(?:remind|remember to remind) me\b|set (?:a |an )?reminder(?: for me)?", _FLAGS)
_LEAD = re.compile(r"(?:to|that|about|of)\s+", _FLAGS)
_SPACES = re.compile(r"[^\S\n]+")
_ABOUT_REMINDERS = re.compile(r"\b(?:remind|reminders?|alarm|timer)\b", _FLAGS)


def _clean(text: str) -> str:
    """The phrase without politeness, trailing punctuation and extra spaces (newlines stay)."""
    text = _SPACES.sub(" ", text).strip()
    text = text.rstrip("?!. ")
    text = _PREFIX.sub("", text, count=1) if _PREFIX.match(text) else text
    return _SUFFIX.sub("", text).strip()


def _what(text: str) -> str:
    """``<X>`` as host §6.3 captures it: surrounding whitespace and one trailing ``.``/``!`` off,
    after the leading ``to``/``that``/``about``."""
    text = _LEAD.sub("", text.strip(), count=1) if _LEAD.match(text.strip()) else text.strip()
    if text.endswith((".", "!")):
        text = text[:-1].rstrip()
    return text


def understand(s: str, messages: Sequence[Mapping[str, Any]], client_zone: str | None) -> Reply | None:
    """The scripted model's answer to a user text ``s`` that none of rule 3's patterns matched:
    schedule tool calls ``[(name, arguments), …]``, a help text, or ``None`` (not about
    reminders: rule 3 echoes it). ``messages`` is the request's history, ``client_zone`` the
    prompt's ``clientTimeZone``."""
    text = _clean(s)
    for parse in (_list_request, _delete_request):
        reply = parse(text, messages)
        if reply is not None:
            return reply
    if (reply := _create_request(text, messages, client_zone)) is not None:
        return reply
    if m := _LEADING_WHEN.fullmatch(text):
        return _WANT_REMINDER.format(when=m["when"], what=_what(m["what"]))
    if _ABOUT_REMINDERS.search(s):
        return HELP
    return None


# "in 2 minutes drink water": a reminder without its "remind me"; only a delay, a repeat or an
# "at <clock>" counts (a bare day word leads too many ordinary sentences: "tomorrow is …").
_LEADING_WHEN = re.compile(
    rf"(?P<when>(?:in|after) {_DURATION}|every {_DURATION}|(?:{_DAY}\s+)?at {_CLOCK}(?:\s+{_DAY})?)"
    r"[ ,]+(?P<what>\S.*)",
    _FLAGS | re.DOTALL,
)


# One alternation, compiled once: every user text the exact patterns leave is tried against it
# (host §6.3), and fullmatch of A|B matches exactly the texts one of A, B matches whole.
_LIST_REQUEST = re.compile(
    "|".join(
        f"(?:{pattern})"
        for pattern in (
            (
                r"(?:what|which)(?: are)?(?: my| the)? reminders"
                r"(?: do i have| have i got| are (?:there|set|active|pending))?(?: now| left)?"
            ),
            (
                r"what(?: reminders)? (?:do i have|have i got|is scheduled|did i ask you to remind me)"
                r"(?: set)?(?: up)?"
            ),
            r"(?:do i have|are there|have i got) any(?: active| pending)? reminders",
            r"any reminders",
            r"(?:list|show)(?: me)?(?: all)?(?: of)?(?: my| the)?(?: active| pending)? reminders",
            r"(?:my )?reminders",
        )
    ),
    _FLAGS,
)


def _list_request(text: str, messages: Sequence[Mapping[str, Any]]) -> Reply | None:
    if _LIST_REQUEST.fullmatch(text):
        return [("schedule_list", {})]
    return None


_DELETE_VERB = r"(?:delete|cancel|remove|drop|clear|stop|forget)"
_DELETE_EVERY = re.compile(rf"{_DELETE_VERB}(?: all| every(?: one of)?)(?: of)?(?: my| the)? reminders", _FLAGS)
_DELETE_ALL = re.compile(rf"{_DELETE_VERB}(?: my| the)? reminders", _FLAGS)
_DELETE_ID = re.compile(rf"{_DELETE_VERB}(?: the)?(?: reminder)? (schedule-[0-9]+)", _FLAGS)
_DELETE_ONE = re.compile(rf"{_DELETE_VERB}(?: the| that| this| my)? reminder", _FLAGS)
_DELETE_NAMED = re.compile(rf"{_DELETE_VERB}(?: the| my)? (.+?) reminder", _FLAGS)
_DELETE_ABOUT = re.compile(rf"{_DELETE_VERB}(?: the| my)? reminder (?:about|to|for|of|that says) (.+)", _FLAGS)


def _delete_request(text: str, messages: Sequence[Mapping[str, Any]]) -> Reply | None:
    if _DELETE_EVERY.fullmatch(text) or _DELETE_ALL.fullmatch(text):
        known = known_reminders(messages)
        if not known:
            return 'I don\'t see any active reminders in this conversation. "list reminders" shows them.'
        return [("schedule_delete", {"id": k.id}) for k in known]
    if m := _DELETE_ID.fullmatch(text):
        return [("schedule_delete", {"id": m[1].lower()})]
    if _DELETE_ONE.fullmatch(text):
        known = known_reminders(messages)
        return [("schedule_delete", {"id": known[0].id})] if len(known) == 1 else _which(known)
    m = _DELETE_NAMED.fullmatch(text) or _DELETE_ABOUT.fullmatch(text)
    if m is None:
        return None
    about = _what(m[1])
    known = known_reminders(messages)
    if about.lower() in ("the", "that", "this", "my", "last", "latest", "new", "newest"):
        if about.lower() not in ("the", "that", "this", "my") and known:
            return [("schedule_delete", {"id": known[-1].id})]
        if len(known) == 1:
            return [("schedule_delete", {"id": known[0].id})]
        return _which(known)
    words = set(re.findall(r"\w+", about.lower()))
    matches = [k for k in known if _about(k, words)]
    if len(matches) == 1:
        return [("schedule_delete", {"id": matches[0].id})]
    if matches:
        listed = ", ".join(f'{k.id} ("{k.prompt}")' for k in matches)
        return f'More than one reminder matches "{about}": {listed}. Say "delete reminder <id>".'
    ended = [(k, how) for k, how in _follow(messages).ended.values() if _about(k, words)]
    if ended:  # the latest of them: the one the person most likely means
        k, how = ended[-1]
        return (
            f'{k.id} ("{k.prompt}") {_ENDED[how]}, so there is nothing to delete. '
            '"list reminders" shows the active ones.'
        )
    return f'I don\'t see an active reminder about "{about}". "list reminders" shows them with their ids.'


_ENDED = {"fired": "already went off", "deleted": "was already deleted"}


def _about(known: Known, words: set[str]) -> bool:
    """Whether every one of ``words`` is a word of the reminder's prompt."""
    return words <= set(re.findall(r"\w+", known.prompt.lower()))


def _which(known: Sequence[Known]) -> str:
    if not known:
        return 'I don\'t see any active reminders in this conversation. "list reminders" shows them.'
    listed = ", ".join(f'{k.id} ("{k.prompt}")' for k in known)
    return f'Which one? {listed}. Say "delete reminder <id>".'


def _create_request(
    text: str, messages: Sequence[Mapping[str, Any]], client_zone: str | None
) -> Reply | None:
    """``remind me …`` in any order: a delay, a repeat, a wall time or an exact instant, and what."""
    body = _split_request(text)
    if body is None:
        return None
    when, what = body
    if not what:
        return _NO_WHAT.format(when=when or "in 10 minutes")
    if repeat := _TRAILING_REPEAT.search(what):
        return _REPEAT_AT.format(what=what[: repeat.start()])
    if when is None:
        example = what if len(what) <= 40 else "stretch"
        return _NO_TIME.format(what=f" to {what}" if len(what) <= 40 else "", example=example)
    return _schedule(when, what, messages, client_zone)


_TRAILING_REPEAT = re.compile(
    r"\s+(?:every (?:day|morning|evening|night|week|weekday|\w+day)|each day|daily|hourly|weekly)$", _FLAGS
)
_WHEN = (
    rf"(?:in|after|for) {_DURATION}|{_DURATION} from now"
    rf"|every {_DURATION}|every (?:{_UNIT})|hourly|daily|weekly"
    rf"|(?:at|on) {_OFFSET_INSTANT}|(?:for )?(?:{_LOCAL})|{_DAY}"
)


def _split_request(text: str) -> tuple[str | None, str] | None:
    """``(when, what)`` of a reminder request, or ``None`` when the text asks for none."""
    ask = _ASK.search(text)
    if ask is None:
        return None
    before, after = text[: ask.start()].strip(" ,"), text[ask.end() :].strip(" ,")
    if before:  # "in 5 minutes remind me to stretch", "tomorrow at 9am, remind me to …"
        return (before, _what(after)) if re.fullmatch(_WHEN, before, _FLAGS) else (None, _what(after))
    for pattern in (
        rf"(?P<when>{_WHEN})[ ,]+(?:to|that|about) (?P<what>.+)",
        rf"(?P<what>.+?)[ ,]+(?P<when>{_WHEN})",
    ):
        if m := re.fullmatch(pattern, after, _FLAGS | re.DOTALL):
            return m["when"], _what(m["what"])
    if m := re.fullmatch(rf"(?P<when>{_WHEN})", after, _FLAGS):
        return m["when"], ""
    return None, _what(after)


def _schedule(when: str, what: str, messages: Sequence[Mapping[str, Any]], client_zone: str | None) -> Reply:
    low = when.lower()
    repeat = {"hourly": 3600, "daily": 86400, "weekly": 604800}.get(low)
    if repeat is None and low.startswith("every "):
        rest = when[len("every ") :]
        repeat = duration_seconds(rest) or duration_seconds(f"1 {rest}")
    if repeat is not None:
        return [("schedule_create", {"prompt": what, "every_seconds": repeat})]
    for lead in ("in ", "after ", "for "):
        if low.startswith(lead) and (delay := duration_seconds(when[len(lead) :])) is not None:
            return [("schedule_create", {"prompt": what, "after_seconds": delay})]
    if low.endswith(" from now") and (delay := duration_seconds(when[: -len(" from now")])) is not None:
        return [("schedule_create", {"prompt": what, "after_seconds": delay})]
    if m := re.fullmatch(rf"(?:at|on) ({_OFFSET_INSTANT})", when, _FLAGS):
        return [("schedule_create", {"prompt": what, "at": m[1]})]
    m = re.fullmatch(rf"(?:for )?(?:{_LOCAL})", when, _FLAGS)
    if m is None:  # a day without a time of day
        return f'At what time {when}? e.g. "remind me to {what} {when} at 9am".'
    return _at_local(_Local(m["clock"], m["day1"] or m["day2"], m["zone"]), when, what, messages, client_zone)


def _at_local(
    said: _Local, when: str, what: str, messages: Sequence[Mapping[str, Any]], client_zone: str | None
) -> Reply:
    fields = _clock_fields(said.clock)
    if fields is None:
        return _BAD_CLOCK.format(said=said.clock)
    zone = client_zone
    if said.zone is not None:
        zone = "UTC" if said.zone.upper() == "UTC" else _zone_of(said.zone)
        if zone is None:
            return _BAD_ZONE.format(zone=said.zone)
    if zone is None:
        return _NO_ZONE.format(said=when)
    now = reading_now(messages)
    if now is None:
        return _NO_CLOCK.format(said=when)
    local_now = now.astimezone(ZoneInfo(zone))
    day = said.day
    hour = fields[0]
    if (
        day is not None
        and day.lower() == "tonight"
        and hour < 12
        and not re.search(r"[ap]\.?m", said.clock, _FLAGS)
    ):
        hour += 12  # "tonight at 8:00" is the evening
    on = _local_date(day, (hour, fields[1], fields[2]), local_now)
    if on is None:
        return _BAD_CLOCK.format(said=when)
    at = {"date": on.isoformat(), "time": f"{hour:02d}:{fields[1]:02d}:{fields[2]:02d}", "time_zone": zone}
    return [("schedule_create", {"prompt": what, "at": at})]
