"""``turnlog show``'s transcript (host §7.4 ``show``): a session log read as a conversation. Pure.

:func:`entries` folds a log's events into typed entries — prompts, the assistant's replies (with
reasoning and model), tool calls and results, reminders, time readings and other context, retries,
turn boundaries and how turns ended, the end of a fork's seed — skipping the bookkeeping a reader
does not need (splices, step bounds, request headers, packed chunk rows, schedule changes, which
the tool results and reminders already show). :func:`render` lays them out for a person: turns as
headings, Markdown replies, tool traffic and readings condensed to a line (``full`` shows them
whole), times in the user's zone. :func:`document` is the ``--json`` form.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from eventlog import Event, SessionHeader

from ._markdown import render as markdown
from ._style import Style
from ._when import Zone, annotate, clock

LINE_CHARS = 100  # a condensed tool call, result or context line


class Entry(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", rename="camel", omit_defaults=True):
    """One thing that happened, at the event ``seq`` and its ``time``, in ``turn`` (if any)."""

    seq: int
    time: int
    turn: int | None = None


class TurnStart(Entry, frozen=True, kw_only=True, tag="turn-start"):
    pass


class Prompt(Entry, frozen=True, kw_only=True, tag="user"):
    text: str
    client_time_zone: str | None = None


class Reply(Entry, frozen=True, kw_only=True, tag="assistant"):
    text: str
    reasoning: str = ""
    model: str | None = None


class ToolCall(Entry, frozen=True, kw_only=True, tag="tool-call"):
    name: str
    arguments: str


class ToolResult(Entry, frozen=True, kw_only=True, tag="tool-result"):
    text: str
    is_error: bool = False


class Reminder(Entry, frozen=True, kw_only=True, tag="reminder"):
    prompts: list[str]
    ids: list[str]


class Reading(Entry, frozen=True, kw_only=True, tag="time"):
    text: str


class Context(Entry, frozen=True, kw_only=True, tag="context"):
    source: str
    text: str


class Retry(Entry, frozen=True, kw_only=True, tag="retry"):
    retry: int
    max_retries: int
    delay_ms: int
    code: str
    message: str


class TurnEnd(Entry, frozen=True, kw_only=True, tag="turn-end"):
    reason: str
    code: str | None = None
    message: str | None = None


class SeedEnd(Entry, frozen=True, kw_only=True, tag="seed-end"):
    pass


class Title(Entry, frozen=True, kw_only=True, tag="title"):
    title: str


AnyEntry = (
    TurnStart
    | Prompt
    | Reply
    | ToolCall
    | ToolResult
    | Reminder
    | Reading
    | Context
    | Retry
    | TurnEnd
    | SeedEnd
    | Title
)


# --- folding events into entries -----------------------------------------------------------------


def _dict(value: object) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one (a foreign log may hold anything)."""
    return value if isinstance(value, dict) else {}


def _text(content: object) -> str:
    if not isinstance(content, list):
        return ""
    return "".join(
        b["text"]
        for b in content
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )


def _framed(text: str, key: str) -> Any:
    for line in text.split("\n"):
        if line.startswith(f"{key}: "):
            try:
                return json.loads(line[len(key) + 2 :])
            except ValueError:
                return None
    return None


def _reminder(text: str) -> tuple[list[str], list[str]]:
    """The prompts and ids of a reminder framing (schedule §11.4), one-shot or batch."""
    batch = _framed(text, "reminders_json")
    if isinstance(batch, list):
        items = [item for item in batch if isinstance(item, dict)]
        return [str(i.get("reminder_prompt", "")) for i in items], [
            str(i.get("schedule_id", "")) for i in items
        ]
    prompt, rid = _framed(text, "reminder_prompt_json"), _framed(text, "schedule_id_json")
    return [prompt if isinstance(prompt, str) else text], [rid] if isinstance(rid, str) else []


def _user_entry(event: Event, data: Mapping[str, Any], turn: int | None) -> AnyEntry:
    source = _dict(data.get("source"))
    text = _text(data.get("content"))
    seq, time = event.seq, event.time
    if source.get("kind") == "plugin" and source.get("plugin") == "schedule":
        prompts, ids = _reminder(text)
        return Reminder(prompts=prompts, ids=ids, seq=seq, time=time, turn=turn)
    if source.get("kind") == "plugin" and source.get("plugin") == "time-context":
        return Reading(text=text, seq=seq, time=time, turn=turn)
    if source.get("kind") == "user":
        zone = source.get("clientTimeZone")
        return Prompt(
            text=text, client_time_zone=zone if isinstance(zone, str) else None, seq=seq, time=time, turn=turn
        )
    label = str(source.get("plugin") or source.get("kind") or "message")
    return Context(source=label, text=text, seq=seq, time=time, turn=turn)


def entries(events: Iterable[Event]) -> list[AnyEntry]:
    """The entries of a log's events, in log order (see the module docstring)."""
    out: list[AnyEntry] = []
    turn: int | None = None
    for event in events:
        kind = event.type
        if kind not in _SHOWN:
            continue
        data = event.value()
        if not isinstance(data, dict):
            continue
        at = {"seq": event.seq, "time": event.time}
        if kind == "turn/start":
            turn = data.get("turn") if isinstance(data.get("turn"), int) else None
            out.append(TurnStart(turn=turn, **at))
        elif kind == "user/message":
            out.append(_user_entry(event, data, turn))
        elif kind == "assistant/message":
            message = _dict(data.get("message"))
            content = [b for b in message.get("content") or () if isinstance(b, dict)]
            reasoning = "".join(str(b.get("text", "")) for b in content if b.get("type") == "reasoning")
            source = _dict(message.get("source"))
            model = source.get("model") if isinstance(source.get("model"), str) else None
            text = _text(content)
            if text or reasoning:
                out.append(Reply(text=text, reasoning=reasoning, model=model, turn=turn, **at))
        elif kind == "tool/call":
            out.append(
                ToolCall(
                    name=str(data.get("name")), arguments=str(data.get("arguments", "")), turn=turn, **at
                )
            )
        elif kind == "tool/result":
            message = _dict(data.get("message"))
            blocks = [
                b
                for b in message.get("content") or ()
                if isinstance(b, dict) and b.get("type") == "tool-result"
            ]
            result = blocks[0] if blocks else {}
            out.append(
                ToolResult(
                    text=_text(result.get("content")), is_error=result.get("isError") is True, turn=turn, **at
                )
            )
        elif kind == "llm/retry":
            failure = _dict(data.get("failure"))
            out.append(
                Retry(
                    retry=int(data.get("retry", 0)),
                    max_retries=int(data.get("maxRetries", 0)),
                    delay_ms=int(data.get("delayMs", 0)),
                    code=str(failure.get("code", "")),
                    message=str(failure.get("message", "")),
                    turn=turn,
                    **at,
                )
            )
        elif kind == "turn/end":
            reason = _dict(data.get("reason"))
            error = _dict(reason.get("error"))
            out.append(
                TurnEnd(
                    reason=str(reason.get("kind", "?")),
                    code=error.get("code") if isinstance(error.get("code"), str) else None,
                    message=error.get("message") if isinstance(error.get("message"), str) else None,
                    turn=turn,
                    **at,
                )
            )
            turn = None
        elif kind == "session/end-seed":
            out.append(SeedEnd(**at))
        elif kind == "session/title" and isinstance(data.get("title"), str):
            out.append(Title(title=data["title"], **at))
    return out


_SHOWN = frozenset(
    {
        "turn/start",
        "user/message",
        "assistant/message",
        "tool/call",
        "tool/result",
        "llm/retry",
        "turn/end",
        "session/end-seed",
        "session/title",
    }
)


# --- rendering ---------------------------------------------------------------------------------


def _cut(text: str, width: int = LINE_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _result_summary(text: str, zone: Zone, now_ms: int) -> str | None:
    """A schedule tool result in words: ``schedule-1 "stretch" at 09:18``, ``deleted schedule-2``,
    ``2 active reminders: …``; ``None`` for anything else."""
    try:
        value = json.loads(text)
    except ValueError:
        return None

    def reminder(view: Mapping[str, Any]) -> str:
        at = annotate(str(view.get("scheduledAt")), zone, now_ms)
        return f'{view.get("id")} "{view.get("prompt")}" at {at}'

    if isinstance(value, dict) and {"id", "prompt", "scheduledAt"} <= value.keys():
        return reminder(value)
    if isinstance(value, dict) and value.get("deleted") is True:
        return f"deleted {value.get('id')}"
    if isinstance(value, list) and all(isinstance(v, dict) and "scheduledAt" in v for v in value):
        if not value:
            return "no active reminders"
        return f"{len(value)} active: " + "; ".join(reminder(v) for v in value)
    return None


def _block(lines: Sequence[str], indent: str = "  ") -> list[str]:
    return [indent + line if line else "" for line in lines]


def render(
    header: SessionHeader,
    shown: Sequence[AnyEntry],
    *,
    style: Style,
    zone: Zone,
    now_ms: int,
    full: bool = False,
    path: str | None = None,
    open_turn: int | None = None,
) -> list[str]:
    """The transcript's lines (without line ends) for a person. ``open_turn`` is the turn the
    log ends inside (the host stopped during it; the next open closes it, log-format §7.3)."""
    created = clock(header.created_at, zone, now_ms)
    top = [style.bold(f"session {header.id}") + style.dim(f" · created {created} ({zone.name})")]
    titles = [entry.title for entry in shown if isinstance(entry, Title)]
    if titles:
        top.append(style.bold(f"title {titles[-1]}"))
    if header.cwd:
        top.append(style.dim(f"cwd {header.cwd}"))
    if path:
        top.append(style.dim(f"log {path}"))
    if header.parent_session is not None:
        seed = header.seed_length or 0
        top.append(
            style.yellow(f"forked from {header.parent_session} at seq {seed - 1} (its first {seed} events)")
        )
    out = [*top, ""]
    for entry in shown:
        for line in _entry_lines(entry, style=style, zone=zone, now_ms=now_ms, full=full):
            if line or out[-1]:  # one blank line at most between blocks
                out.append(line)
    if open_turn is not None:
        out.append(
            style.red(f"! the log ends inside turn {open_turn}: the host stopped (the next open closes it)")
        )
    while out and not out[-1]:
        out.pop()
    return out


def _entry_lines(entry: AnyEntry, *, style: Style, zone: Zone, now_ms: int, full: bool) -> list[str]:
    """One entry's lines. Instants in a reply or result are noted relative to the entry's own
    time (``in 5 min`` from when it was said), the entry's clock relative to ``now_ms``."""
    when = clock(entry.time, zone, now_ms)
    if isinstance(entry, TurnStart):
        return ["", style.dim(f"── turn {entry.turn} · {when} " + "─" * 30)]
    if isinstance(entry, Prompt):
        return [
            style.apply("you", "bold", "green") + style.dim(f" · {when}"),
            *_block(entry.text.split("\n")),
        ]
    if isinstance(entry, Reply):
        lines = [
            style.apply("assistant", "bold", "blue") + style.dim(f" · {entry.model or 'model'} · {when}")
        ]
        if entry.reasoning:
            if full:
                lines.extend(_block([style.dim(line) for line in entry.reasoning.split("\n")]))
            else:
                count = entry.reasoning.count("\n") + 1
                lines.append(
                    style.dim(f"  (reasoning: {count} line{'s' if count != 1 else ''}; --full shows it)")
                )
        if entry.text:
            lines.extend(_block(markdown(annotate(entry.text, zone, entry.time), style)))
        return lines
    if isinstance(entry, ToolCall):
        arguments = entry.arguments if full else _cut(entry.arguments, LINE_CHARS - len(entry.name))
        return [style.dim(f"  ⚙ {entry.name} {arguments}")]
    if isinstance(entry, ToolResult):
        summary = None if full else _result_summary(entry.text, zone, entry.time)
        text = summary if summary is not None else (entry.text if full else _cut(entry.text))
        mark = "  ✗ " if entry.is_error else "  → "
        lines = text.split("\n") if full else [text]
        first = style.red(mark + lines[0]) if entry.is_error else style.dim(mark + lines[0])
        return [first, *_block([style.dim(line) for line in lines[1:]], "    ")]
    if isinstance(entry, Reminder):
        ids = f" ({', '.join(entry.ids)})" if entry.ids else ""
        label = (
            f"⏰ reminder: {entry.prompts[0]}"
            if len(entry.prompts) == 1
            else f"⏰ {len(entry.prompts)} reminders: "
        )
        label += "; ".join(entry.prompts) if len(entry.prompts) != 1 else ""
        return [style.apply(label + ids, "yellow", "bold") + style.dim(f" · {when}")]
    if isinstance(entry, Reading):
        first = entry.text.split("\n")[0].rpartition(": ")[2]
        return [style.dim(f"  · time reading {first}")] + (
            _block(entry.text.split("\n")[1:], "    ") if full else []
        )
    if isinstance(entry, Context):
        body = entry.text.split("\n") if full else [_cut(entry.text)]
        return [
            style.dim(f"  · {entry.source}: {body[0]}"),
            *_block([style.dim(line) for line in body[1:]], "    "),
        ]
    if isinstance(entry, Retry):
        delay = f"{entry.delay_ms / 1000:g} s"
        return [
            style.dim(
                f"  ↻ retry {entry.retry}/{entry.max_retries} after {delay}: {entry.code}: {entry.message}"
            )
        ]
    if isinstance(entry, TurnEnd):
        if entry.reason == "error":
            return [style.red(f"! {entry.code}: {entry.message}")]
        if entry.reason in ("aborted", "interrupted"):
            return [
                style.red("! cancelled" if entry.reason == "aborted" else "! interrupted (the host stopped)")
            ]
        return []
    if isinstance(entry, SeedEnd):
        return ["", style.yellow("── the fork's seed ends here; this session continues below " + "─" * 12)]
    return []  # a title: in the heading


def document(header_json: bytes, session_id: str, path: str, shown: Sequence[AnyEntry]) -> bytes:
    """``show --json``: ``{"id","path","header":<header object>,"entries":[…]}``, each entry
    ``{"kind",…}`` with its ``seq``, ``time`` and ``turn``."""
    head = msgspec.json.encode({"id": session_id, "path": path, "header": msgspec.Raw(header_json)})
    return head[:-1] + b',"entries":' + msgspec.json.encode(list(shown)) + b"}\n"
