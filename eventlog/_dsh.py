"""The deepseek-harness directory layout (dsh-roots §2, §3): path names and root detection.

A ``dsh`` root keeps each session at ``<root>/<project dir>/<encode_segment(id)>/session.jsonl``
(raw) or ``…/session.jsonl.zstd`` (Zstandard frames). The project directory is
``project_key(header.cwd)``, or ``_no-cwd`` for a header without ``cwd``.

Pure, except ``list_root``, which only lists directories:

- ``encode_segment`` / ``decode_segment``: the injective escape of a session id into one path
  segment, over UTF-16 code units, and its exact inverse.
- ``project_key``: the lossy slug of a working directory; ``dsh_log_path``: a session's log path.
- ``list_root`` lists a root three levels deep (names and kinds only); ``detect_root`` reads
  that listing: the root's layout and encoding, its dsh sessions and the problems that hide
  entries; ``resolve_layout`` applies a store's requested layout and compression to it;
  ``find_session`` is the lookup by id.

UTF-16 code units: a character outside the BMP counts as its two surrogates, so a Python string
holding a surrogate pair as two separate code points is the same UTF-16 string as the astral
character they form; it encodes the same way, and decodes to the joined character.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Final, Literal

import msgspec

from .errors import CorruptLog, EventLogError
from .format import check_session_id
from .values import compact_json

__all__ = [
    "FLAT_FILE_PROBLEM",
    "LOG_NAMES",
    "NO_CWD",
    "SYMLINK_PROBLEM",
    "Compression",
    "DshSession",
    "Entry",
    "Layout",
    "RootConflict",
    "RootContent",
    "RootProblem",
    "decode_segment",
    "detect_root",
    "dsh_log_path",
    "encode_segment",
    "find_session",
    "list_root",
    "project_key",
    "resolve_layout",
]

Compression = Literal["none", "zstd"]
Layout = Literal["flat", "dsh"]

NO_CWD: Final = "_no-cwd"
"""The project directory of sessions whose header has no ``cwd``."""

LOG_NAMES: Final[dict[Compression, str]] = {"none": "session.jsonl", "zstd": "session.jsonl.zstd"}
"""The log file's name inside a session directory, by encoding."""

FLAT_FILE_PROBLEM: Final = "flat file inside a project directory; move it into a session directory"
SYMLINK_PROBLEM: Final = "symbolic link (session files are never followed)"

_OTHER = re.compile(r"[^A-Za-z0-9._-]")  # the units encode_segment and project_key escape
_SEPARATORS = re.compile(r"[/\\:]+")
_ENCODED = re.compile(r"(?:[A-Za-z0-9._-]|~[0-9A-F]{4})+")
_ESCAPE = re.compile(r"~([0-9A-F]{4})")
_DOT_SEGMENTS: Final = {".": "~002E", "..": "~002E~002E"}
_SLUG_MAX = 251  # so that "--" + slug + "--" is at most 255 characters


def _escape_units(match: re.Match[str]) -> str:
    # "~XXXX" for each UTF-16 code unit of one character (two for a non-BMP character).
    point = ord(match.group())
    if point > 0xFFFF:
        point -= 0x10000
        return f"~{0xD800 | point >> 10:04X}~{0xDC00 | point & 0x3FF:04X}"
    return f"~{point:04X}"


def encode_segment(s: str) -> str:
    """``s`` as one path segment (dsh-roots §2): ``[A-Za-z0-9._-]`` kept, every other UTF-16 code
    unit (``~`` included) written ``~`` + 4 uppercase hex digits, then the whole segments ``.``
    and ``..`` written ``~002E`` and ``~002E~002E``. Injective, no length limit. Raises
    ``ValueError`` (``cannot encode an empty path segment``) for ``""``."""
    if not s:
        raise ValueError("cannot encode an empty path segment")
    encoded = _OTHER.sub(_escape_units, s)
    return _DOT_SEGMENTS.get(encoded, encoded)


def _not_encoded(s: str, why: str) -> ValueError:
    return ValueError(f"invalid encoded path segment {compact_json(s)}: {why}")


def decode_segment(s: str) -> str:
    """The string ``encode_segment`` encoded as ``s``; exactly its inverse.

    Raises ``ValueError`` for every string ``encode_segment`` cannot produce: the empty string, a
    character outside ``[A-Za-z0-9._~-]``, a ``~`` not followed by 4 uppercase hex digits (a bare
    ``~``, lowercase hex), the segments ``.`` and ``..``, and an escape of a unit that is written as
    itself (``~0041``; ``~002E`` only as the whole ``~002E`` or ``~002E~002E``). Lone surrogates
    decode to lone surrogate code points; an escaped surrogate pair to its character.
    """
    if s in _DOT_SEGMENTS.values():
        return s.replace("~002E", ".")
    if not s:
        raise _not_encoded(s, "it is empty")
    if _ENCODED.fullmatch(s) is None:
        raise _not_encoded(s, "use [A-Za-z0-9._-], or ~ and 4 uppercase hex digits for any other UTF-16 unit")
    if s in _DOT_SEGMENTS:
        raise _not_encoded(s, "the segments . and .. are written ~002E and ~002E~002E")
    units: list[int] = []
    pos = 0
    for match in _ESCAPE.finditer(s):
        units.extend(map(ord, s[pos : match.start()]))
        unit = int(match.group(1), 16)
        if unit < 0x80 and _OTHER.match(chr(unit)) is None:
            raise _not_encoded(s, f"{match.group()} escapes {chr(unit)!r}, which is written as itself")
        units.append(unit)
        pos = match.end()
    units.extend(map(ord, s[pos:]))
    return struct.pack(f"<{len(units)}H", *units).decode("utf-16-le", "surrogatepass")


def project_key(cwd: str) -> str:
    """The project directory name for a working directory (dsh-roots §2; lossy on purpose).

    Every run of ``/``, ``\\`` or ``:`` becomes one ``-``; ``[A-Za-z0-9._-]`` are kept; every other
    UTF-16 unit becomes ``~XXXX``; leading ``-`` are stripped; an empty result is ``root``; the
    slug is cut to 251 characters and wrapped as ``--<slug>--`` (at most 255). Raises
    ``ValueError`` (``cannot encode an empty project path``) for ``""``.
    """
    if not cwd:
        raise ValueError("cannot encode an empty project path")
    slug = _OTHER.sub(_escape_units, _SEPARATORS.sub("-", cwd)).lstrip("-") or "root"
    return f"--{slug[:_SLUG_MAX]}--"


def dsh_log_path(root: str | os.PathLike[str], cwd: str | None, id: str, compression: Compression) -> Path:
    """``<root>/<project_key(cwd) or _no-cwd>/<encode_segment(id)>/session.jsonl[.zstd]``. No I/O.

    Any id encodes safely (callers check turnlog's id rule where it applies). Raises
    ``ValueError`` for an empty ``cwd`` or ``id`` and for a compression other than ``"none"`` or
    ``"zstd"``.
    """
    name = LOG_NAMES.get(compression)
    if name is None:
        raise ValueError(f'compression must be "none" or "zstd", got {compression!r}')
    project = NO_CWD if cwd is None else project_key(cwd)
    return Path(root) / project / encode_segment(id) / name


# ------------------------------------------------------------------------------- root detection


class Entry(msgspec.Struct, frozen=True):
    """One directory entry: its name, its own kind (symbolic links are never followed) and, for a
    directory that was listed, its entries."""

    name: str
    kind: Literal["file", "dir", "symlink", "other"]
    entries: tuple[Entry, ...] = ()


class DshSession(msgspec.Struct, frozen=True):
    """A session directory holding a log: ``<project>/<segment>/<log>`` below the root.

    ``id`` is ``decode_segment(segment)``. ``problem`` is ``id not supported by turnlog: <id as
    JSON string>`` when that id breaks turnlog's id rule (log-format §4.2): such a session is
    listed and can be read by path, never opened by id.
    """

    project: str
    segment: str
    id: str
    encoding: Compression
    problem: str | None = None

    @property
    def parts(self) -> tuple[str, str, str]:
        """The log's path below the root, as path segments."""
        return (self.project, self.segment, LOG_NAMES[self.encoding])


class RootProblem(msgspec.Struct, frozen=True):
    """An entry below the root that is not a usable session: its path below the root, as path
    segments, and why (``FLAT_FILE_PROBLEM``, ``SYMLINK_PROBLEM``, an undecodable session
    directory name)."""

    parts: tuple[str, ...]
    problem: str


class RootContent(msgspec.Struct, frozen=True):
    """What a root holds (``detect_root``).

    ``layout``/``compression``: ``flat``/``none``, ``dsh`` with the encoding of its session files,
    or ``None``/``None`` for a root with no sessions (the store then uses its configured default).
    ``sessions``: the dsh sessions, sorted by ``(project, segment)``. ``problems``: entries that
    look like sessions but are not usable, sorted by path.
    """

    layout: Layout | None
    compression: Compression | None
    sessions: tuple[DshSession, ...] = ()
    problems: tuple[RootProblem, ...] = ()


class RootConflict(EventLogError):
    """A root holding more than one layout or encoding, or not the one a store asked for.
    ``str(exc)`` is the whole one-line message; ``root`` is the root it names."""

    def __init__(self, root: str | os.PathLike[str], message: str) -> None:
        super().__init__(message)
        self.root = Path(root)


def _is_project_dir(name: str) -> bool:
    return name == NO_CWD or (len(name) > 4 and name.startswith("--") and name.endswith("--"))


def _describe(layout: Layout, compression: Compression) -> str:
    return "flat sessions" if layout == "flat" else f"dsh sessions in {compression}"


def _mixes(root: str | os.PathLike[str], first: str, second: str) -> RootConflict:
    return RootConflict(
        root, f'session root "{root}" mixes {first} and {second}; use a separate root for each'
    )


def detect_root(root: str | os.PathLike[str], listing: Sequence[Entry]) -> RootContent:
    """What the root ``root`` holds, from its ``listing`` (dsh-roots §3; ``root`` only names it in
    messages). No I/O.

    - a regular ``*.jsonl`` file directly in the root: ``flat``;
    - a directory named ``--…--`` or ``_no-cwd`` holding a session directory (a directory with a
      regular ``session.jsonl`` or ``session.jsonl.zstd``): ``dsh``, with that file's encoding;
    - a regular ``*.jsonl`` or ``*.jsonl.zstd`` file directly in a project directory: a problem
      (``FLAT_FILE_PROBLEM``), not a session; a symbolic link named like a log inside a session
      directory: a problem (``SYMLINK_PROBLEM``); a session directory whose name ``decode_segment``
      refuses: a problem, and still evidence of its layout and encoding;
    - nothing of the above: ``None``/``None`` (empty).

    Raises ``RootConflict``
    (``session root "<root>" mixes <what> and <what>; use a separate root for each``) for a root
    with both layouts, or both encodings, even within one session directory.
    """
    flat = False
    encodings: set[Compression] = set()
    sessions: list[DshSession] = []
    problems: list[RootProblem] = []
    for top in listing:
        if top.kind == "file" and top.name.endswith(".jsonl"):
            flat = True
        if top.kind != "dir" or not _is_project_dir(top.name):
            continue
        for entry in top.entries:
            if entry.kind == "file" and entry.name.endswith((".jsonl", ".jsonl.zstd")):
                problems.append(RootProblem((top.name, entry.name), FLAT_FILE_PROBLEM))
            elif entry.kind == "dir":
                _session_dir(top.name, entry, encodings, sessions, problems)
    if flat and encodings:
        raise _mixes(root, _describe("flat", "none"), "dsh sessions")
    if len(encodings) > 1:
        raise _mixes(root, _describe("dsh", "none"), _describe("dsh", "zstd"))
    sessions.sort(key=lambda s: (s.project, s.segment))
    problems.sort(key=lambda p: p.parts)
    if flat:
        return RootContent("flat", "none", problems=tuple(problems))
    if encodings:
        return RootContent("dsh", encodings.pop(), tuple(sessions), tuple(problems))
    return RootContent(None, None, problems=tuple(problems))


def _session_dir(
    project: str,
    entry: Entry,
    encodings: set[Compression],
    sessions: list[DshSession],
    problems: list[RootProblem],
) -> None:
    # One directory inside a project directory: a session directory when it holds a log.
    for encoding, name in LOG_NAMES.items():
        for item in entry.entries:
            if item.name != name:
                continue
            if item.kind == "symlink":
                problems.append(RootProblem((project, entry.name, name), SYMLINK_PROBLEM))
            elif item.kind == "file":
                encodings.add(encoding)
                try:
                    id = decode_segment(entry.name)
                except ValueError as exc:
                    problems.append(RootProblem((project, entry.name, name), str(exc)))
                    continue
                problem = None
                try:
                    check_session_id(id)
                except ValueError:
                    problem = f"id not supported by turnlog: {compact_json(id)}"
                sessions.append(DshSession(project, entry.name, id, encoding, problem))


def list_root(root: str | os.PathLike[str]) -> tuple[Entry, ...]:
    """List ``root`` as ``detect_root`` reads it: the root's entries, each project directory's
    entries, and each directory's entries inside a project directory. Reads no file and follows
    no symbolic link. A missing root lists as ``()``, and so does a directory that vanishes while
    being listed. Raises ``OSError`` for anything else (a root that is not a directory, no
    permission)."""
    return _listing(root, depth=2)


def _listing(path: str | os.PathLike[str], depth: int) -> tuple[Entry, ...]:
    try:
        scan = os.scandir(path)
    except (FileNotFoundError, NotADirectoryError) as exc:
        if depth == 2 and isinstance(exc, NotADirectoryError):
            raise
        return ()
    entries: list[Entry] = []
    with scan:
        for item in scan:
            try:
                if item.is_symlink():
                    entries.append(Entry(item.name, "symlink"))
                elif item.is_dir(follow_symlinks=False):
                    inside = depth > 0 and (depth < 2 or _is_project_dir(item.name))
                    entries.append(Entry(item.name, "dir", _listing(item.path, depth - 1) if inside else ()))
                else:
                    entries.append(Entry(item.name, "file" if item.is_file(follow_symlinks=False) else "other"))
            except FileNotFoundError:
                continue
    entries.sort(key=lambda e: e.name)
    return tuple(entries)


def resolve_layout(
    root: str | os.PathLike[str],
    content: RootContent,
    *,
    layout: Literal["auto", "flat", "dsh"] = "auto",
    compression: Compression | None = None,
    dsh_default: bool = False,
) -> tuple[Layout, Compression]:
    """The layout and encoding a store uses on ``root`` (dsh-roots §3), given what it holds.

    An empty root takes what was asked: ``flat``/``none`` by default, ``dsh``/``zstd`` when
    ``dsh_default`` (a root from ``$DSH_SESSION_ROOT``) or for ``layout="dsh"`` without a
    compression; a compression alone means ``dsh`` with it. A non-empty root keeps its own, and
    anything explicitly asked must match it (a compression, even ``"none"``, asks for ``dsh``). Raises ``ValueError`` for a compression with
    ``layout="flat"`` and for a layout or compression that does not exist; ``RootConflict``
    (``session root "<root>" holds <what>, but <asked> was asked``) for a mismatch.
    """
    if layout not in ("auto", "flat", "dsh"):
        raise ValueError(f'layout must be "auto", "flat" or "dsh", got {layout!r}')
    if compression is not None and compression not in LOG_NAMES:
        raise ValueError(f'compression must be "none" or "zstd", got {compression!r}')
    if layout == "flat" and compression is not None:
        raise ValueError(f'compression "{compression}" applies only to the dsh layout, not to layout "flat"')
    if content.layout is None or content.compression is None:
        if layout == "flat" or (layout == "auto" and compression is None and not dsh_default):
            return "flat", "none"
        return "dsh", compression or "zstd"
    holds = _describe(content.layout, content.compression)
    if layout != "auto" and layout != content.layout:
        raise RootConflict(root, f'session root "{root}" holds {holds}, but layout "{layout}" was asked')
    if compression is not None and (content.layout == "flat" or compression != content.compression):
        raise RootConflict(root, f'session root "{root}" holds {holds}, but compression "{compression}" was asked')
    return content.layout, content.compression


def find_session(root: str | os.PathLike[str], content: RootContent, id: str) -> DshSession | None:
    """The dsh session ``id`` of ``root``, whose listing gave ``content``: the session directory
    named ``encode_segment(id)`` in any project directory, or ``None``. No I/O.

    Raises ``InvalidSessionId`` for an id outside turnlog's rule (log-format §4.2), and
    ``CorruptLog`` (``duplicate session id "<id>" appears in project directories "<a>" and
    "<b>"``, naming the first match's log) when more than one project directory holds it.
    """
    segment = encode_segment(check_session_id(id))
    matches = [session for session in content.sessions if session.segment == segment]
    if len(matches) > 1:
        first, second = matches[0], matches[1]
        raise CorruptLog(
            Path(root).joinpath(*first.parts),
            f'duplicate session id "{id}" appears in project directories "{first.project}" and "{second.project}"',
        )
    return matches[0] if matches else None
