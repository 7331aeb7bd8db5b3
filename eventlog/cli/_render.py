"""What the log commands print: pure functions over the reader's values (log-format §10).

Human output shows times in a display zone chosen by the caller (the ``turnlog`` script passes
the user's zone): ``2026-12-02T09:18:14.448+08:00``; in UTC, and without a zone, exactly as
log-format §10 writes them, ``2026-12-02T01:18:14.448Z``. ``--json`` output never changes.

Times, data cutting, the event line shared by ``inspect`` and ``tail``, the ``inspect`` header
block, repair section and ``--json`` document, the ``ls`` table, and the ``fork`` lines and
hint. Nothing here reads a file or writes output; the commands (``_commands``) do.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta, tzinfo

import msgspec

from .._lone import display_json, displayable, encode_value
from ..format import Event, SessionHeader
from ..reader import LogSnapshot, Repair
from ..store import SessionInfo
from ..values import format_instant

DATA_WIDTH = 80  # characters of data shown per event line without --full


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def format_time(ms: int, zone: tzinfo | None = None) -> str:
    """Epoch milliseconds as UTC ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (``zone`` ``None`` or UTC), else as
    the wall time in ``zone`` with its offset, ``YYYY-MM-DDTHH:MM:SS.mmm±HH:MM``; the bare
    integer when the instant is outside years 0001–9999 (event times are any safe integer)."""
    try:
        text = format_instant(ms)
    except ValueError:
        return str(ms)
    if zone is None or zone is UTC or zone_name(zone) == "UTC":
        return text
    try:
        local = (_EPOCH + timedelta(milliseconds=ms)).astimezone(zone)
    except OverflowError:  # the wall time falls outside years 1-9999
        return text
    offset = local.strftime("%z")  # ±HHMM, or ±HHMMSS for a local mean time
    seconds = f":{offset[5:7]}" if len(offset) > 5 else ""
    return f"{local.year:04d}-{local:%m-%dT%H:%M:%S}.{ms % 1000:03d}{offset[:3]}:{offset[3:5]}{seconds}"


def zone_name(zone: tzinfo) -> str:
    """The zone's name (a ``ZoneInfo`` key, ``UTC``)."""
    return str(getattr(zone, "key", None) or zone)


def compact_data(raw: bytes) -> str:
    """``data`` as compact JSON text, as a human reads it (an escaped lone surrogate shows as
    U+FFFD, dsh-roots §5). turnlog and deepseek-harness write it compact already; a
    hand-edited record with whitespace is re-encoded (key order kept)."""
    if b" " in raw or b"\t" in raw or b"\n" in raw or b"\r" in raw:
        try:
            raw = msgspec.json.encode(msgspec.json.decode(raw))
        except (msgspec.DecodeError, msgspec.EncodeError, OverflowError):
            pass
    return display_json(raw)


def json_text(text: str) -> msgspec.Raw:
    """A string for a ``--json`` document. A path whose bytes are not UTF-8 reaches Python
    with lone surrogates (surrogateescape), which msgspec refuses to encode; those are written
    as ``\\uXXXX`` escapes (``_lone.encode_value``), so ``os.fsencode(json.loads(...))`` gives
    the path's bytes back."""
    return msgspec.Raw(encode_value(text))


def plural(n: int, word: str) -> str:
    """``1 event``, ``2 events``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def event_line(event: Event, *, full: bool = False, zone: tzinfo | None = None) -> str:
    """``seq  time  type  data``; data cut to 80 characters and marked with ``…`` unless ``full``."""
    data = compact_data(bytes(event.data))
    if not full and len(data) > DATA_WIDTH:
        data = data[:DATA_WIDTH] + "…"
    return f"{event.seq}  {format_time(event.time, zone)}  {event.type}  {data}"


def header_object(line: bytes | None, header: SessionHeader) -> msgspec.Raw:
    """The header object as on disk: ``line`` (line 1 without its line ending) verbatim when it
    is the JSON object ``header`` was read from (a deepseek-harness header may omit
    ``delegationDepth`` or carry extra keys), else the canonical encoding of ``header``."""
    if line is not None:
        try:
            value = msgspec.json.decode(line)
        except msgspec.DecodeError:
            value = None
        if isinstance(value, dict) and value.get("id") == header.id:
            return msgspec.Raw(line)
    return msgspec.Raw(header.to_json())


def inspect_json(
    snapshot: LogSnapshot, header: msgspec.Raw, events: Iterable[Event]
) -> Iterator[bytes]:
    """The ``inspect --json`` document (log-format §10.2) in pieces, the events one record at a
    time, so a large log is never encoded twice in memory. The pieces end with an LF."""
    head = msgspec.json.encode(
        {"path": json_text(str(snapshot.path)), "id": snapshot.header.id, "header": header}
    )
    yield head[:-1] + b',"events":['
    separator = b""
    for event in events:
        yield separator + event.to_json()
        separator = b","
    rest = msgspec.json.encode(
        {
            "fileBytes": snapshot.file_bytes,
            "committedBytes": snapshot.committed_bytes,
            "repair": snapshot.repair,  # Repair encodes with the log-format §10.2 keys, in order
            # dsh-roots §4, §6: the layout the file's name says, its encoding and complete frames
            "layout": "dsh" if snapshot.path.name in ("session.jsonl", "session.jsonl.zstd") else "flat",
            "encoding": snapshot.encoding,
            "frames": snapshot.frames,
        }
    )
    yield b"]," + rest[1:] + b"\n"


def repair_summary(repair: Repair) -> list[str]:
    """One sentence per repair action, as ``validate`` prints them."""
    lines = []
    if repair.truncate_to is not None:
        where = ""
        if repair.defect is not None:
            where = (
                f" from line {repair.defect.line}, byte {repair.defect.offset}"
                f" ({repair.defect.reason})"
            )
        lines.append(
            f"open will drop {plural(repair.dropped_bytes, 'byte')} and "
            f"{plural(repair.dropped_records, 'complete record')}{where}, "
            f"truncating to {repair.truncate_to} bytes"
        )
    if repair.closers:
        lines.append(
            f"turn {repair.open_turn} is open: open will append "
            f"{plural(len(repair.closers), 'closing event')}"
        )
    return lines


def repair_lines(repair: Repair | None, *, full: bool = False, zone: tzinfo | None = None) -> list[str]:
    """The repair section of human ``inspect`` output."""
    if repair is None:
        return ["repair: none needed"]
    lines = ["repair: opening this log for writing would"]
    if repair.truncate_to is not None:
        lines.append(
            f"  truncate it to {repair.truncate_to} bytes, dropping "
            f"{plural(repair.dropped_bytes, 'byte')} and "
            f"{plural(repair.dropped_records, 'complete record')}"
        )
        if repair.defect is not None:
            defect = repair.defect
            lines.append(
                f"    from line {defect.line}, byte {defect.offset}: {defect.reason}"
                + (f" ({defect.detail})" if defect.detail else "")
            )
    if repair.closers:
        lines.append(
            f"  close open turn {repair.open_turn} by appending "
            f"{plural(len(repair.closers), 'event')}:"
        )
        lines.extend("    " + event_line(event, full=full, zone=zone) for event in repair.closers)
    return lines


def header_lines(snapshot: LogSnapshot, zone: tzinfo | None = None) -> list[str]:
    """The header block of human ``inspect`` output."""
    header = snapshot.header
    parent = "-"
    if header.parent_session is not None:
        parent = f"{displayable(header.parent_session)} (seedLength {header.seed_length or 0})"
    elif header.seed_length is not None:
        parent = f"- (seedLength {header.seed_length})"
    rows = [
        ("session", displayable(header.id)),
        ("path", str(snapshot.path)),
        ("created", format_time(header.created_at, zone) + ("" if zone is None else f" ({zone_name(zone)})")),
        ("cwd", displayable(header.cwd or "-")),
        ("parent", parent),
    ]
    extra = []
    if header.origin is not None:
        extra.append(f"origin {header.origin}")
    if header.delegation_depth:
        extra.append(f"delegationDepth {header.delegation_depth}")
    if header.agent_preset is not None:
        extra.append(f"agentPreset {displayable(header.agent_preset)}")
    if header.owner is not None:
        extra.append(f"owner {displayable(header.owner)}")
    if extra:
        rows.append(("agent", ", ".join(extra)))
    rows.append(("events", str(len(snapshot.events))))
    rows.append(("bytes", f"{snapshot.committed_bytes} committed, {snapshot.file_bytes} in file"))
    return [f"{name:<8} {value}" for name, value in rows]


def ls_lines(infos: Sequence[SessionInfo], zone: tzinfo | None = None) -> list[str]:
    """The human ``ls`` table (log-format §10.1); nothing for an empty store. A file with a
    problem shows the problem in place of the header columns."""
    if not infos:
        return []
    rows: list[tuple[str, ...]] = [("ID", "CREATED", "BYTES", "PARENT", "CWD")]
    for info in infos:
        header = info.header
        if header is None or info.problem is not None:
            rows.append((info.id, f"problem: {info.problem}"))
            continue
        parent = "-"
        if header.parent_session is not None:
            parent = f"{displayable(header.parent_session)}@{header.seed_length or 0}"
        cwd = displayable(header.cwd or "-")
        rows.append((info.id, format_time(header.created_at, zone), str(info.size), parent, cwd))
    return table(rows)


def table(rows: Sequence[tuple[str, ...]]) -> list[str]:
    """Left-aligned columns separated by two spaces; the last cell of a row is not padded, so a
    short row (an id and its problem) spans the remaining columns."""
    widths: dict[int, int] = {}
    for row in rows:
        for i, cell in enumerate(row[:-1]):
            widths[i] = max(widths.get(i, 0), len(cell))
    return ["  ".join([cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])] + [row[-1]]) for row in rows]


def fork_lines(child: SessionHeader, child_path: str, events: int) -> list[str]:
    """The human ``fork`` output (log-format §10.5): what was forked, then the child's path."""
    seed_length = child.seed_length or 0
    at = f"at seq {seed_length - 1}" if seed_length else "with an empty seed"
    return [
        f"forked {child.parent_session} {at} -> {child.id} (seedLength {seed_length}, {events} events)",
        child_path,
    ]


def last_turn_end(events: Iterable[Event], boundary: int | None) -> int | None:
    """The seq of the last ``turn/end`` at or before ``boundary`` (``None``: the whole log)."""
    found = None
    for event in events:
        if boundary is not None and event.seq > boundary:
            break
        if event.type == "turn/end":
            found = event.seq
    return found


def open_turn_hint(last_end: int | None) -> str:
    """The hint added to an ``OPEN_TURN`` refusal (log-format §10.5)."""
    if last_end is None:
        return "no turn has ended before this boundary, so no earlier boundary closes a turn"
    return f"the last valid boundary is seq {last_end}, the last turn/end: try --at {last_end}"


def leftover_warning(temp: str) -> str:
    """``validate``'s warning about a leftover publish temp file (log-format §10.3)."""
    return f"leftover temp file {temp} from an interrupted publish: safe to delete"
