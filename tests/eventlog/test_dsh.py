"""eventlog._dsh: segment encoding, project keys and log paths (dsh-roots §2, its vectors and
properties), root detection over listings and real directories, layout resolution and lookup by
id (dsh-roots §3)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog._dsh import (
    FLAT_FILE_PROBLEM,
    SYMLINK_PROBLEM,
    DshSession,
    Entry,
    RootConflict,
    RootContent,
    RootProblem,
    decode_segment,
    detect_root,
    dsh_log_path,
    encode_segment,
    find_session,
    list_root,
    project_key,
    resolve_layout,
)
from eventlog.errors import CorruptLog, EventLogError, InvalidSessionId

# ---------------------------------------------------------------- dsh-roots §2 test vectors


@pytest.mark.parametrize(
    ("segment", "encoded"),
    [
        ("..", "~002E~002E"),
        (".", "~002E"),
        ("a/b", "a~002Fb"),
        ("/etc/passwd", "~002Fetc~002Fpasswd"),
        ("a\0b", "a~0000b"),
        ("plain-ID_1.2", "plain-ID_1.2"),
        ("a~b", "a~007Eb"),
        ("😀", "~D83D~DE00"),
    ],
)
def test_encode_segment_vectors(segment: str, encoded: str) -> None:
    assert encode_segment(segment) == encoded
    assert decode_segment(encoded) == segment


def test_the_empty_segment_is_an_error() -> None:
    with pytest.raises(ValueError, match="^cannot encode an empty path segment$"):
        encode_segment("")


@pytest.mark.parametrize(
    ("cwd", "key"),
    [
        ("/Users/qyj/work/deepseek-harness", "--Users-qyj-work-deepseek-harness--"),
        ("C:\\work\\agent", "--C-work-agent--"),
        ("/开发/~agent", "--~5F00~53D1-~007Eagent--"),
        ("/", "--root--"),
    ],
)
def test_project_key_vectors(cwd: str, key: str) -> None:
    assert project_key(cwd) == key


def test_a_long_project_key_is_cut_to_255_characters() -> None:
    key = project_key("/" + "x" * 1000)
    assert len(key) == 255 and key == "--" + "x" * 251 + "--"


def test_project_key_is_lossy_on_purpose() -> None:
    assert project_key("/a/b-c") == project_key("/a-b/c") == "--a-b-c--"


def test_the_empty_project_path_is_an_error() -> None:
    with pytest.raises(ValueError, match="^cannot encode an empty project path$"):
        project_key("")


@pytest.mark.parametrize(
    ("cwd", "key"),
    [
        ("//a::b\\\\c", "--a-b-c--"),  # each run of separators is one "-"
        ("-lead/x", "--lead-x--"),  # leading "-" are stripped, literal ones too
        ("/a/", "--a---"),  # a trailing one is kept
        (":::", "--root--"),
        ("/😀", "--~D83D~DE00--"),
        ("/a b", "--a~0020b--"),
    ],
)
def test_project_key_rules(cwd: str, key: str) -> None:
    assert project_key(cwd) == key


def test_a_cut_may_split_an_escape() -> None:
    assert project_key("/" + "x" * 249 + "é") == "--" + "x" * 249 + "~0" + "--"


def test_dsh_log_path() -> None:
    assert dsh_log_path("/r", "/home/ana", "demo-1", "zstd") == Path("/r/--home-ana--/demo-1/session.jsonl.zstd")
    assert dsh_log_path(Path("/r"), None, "a/b", "none") == Path("/r/_no-cwd/a~002Fb/session.jsonl")
    with pytest.raises(ValueError, match="compression must be"):
        dsh_log_path("/r", None, "x", "gzip")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^cannot encode an empty project path$"):
        dsh_log_path("/r", "", "x", "none")
    with pytest.raises(ValueError, match="^cannot encode an empty path segment$"):
        dsh_log_path("/r", None, "", "none")


@pytest.mark.parametrize(
    "text",
    ["", "~", "a~", "~12", "~00e9", "~002e", "a~002E", "~002E.", "~0041", "~007A", "~002D", ".", "..", "a b", "é", "a/b", "~002E~002E~002E"],
)
def test_decode_segment_refuses_what_encode_segment_cannot_produce(text: str) -> None:
    with pytest.raises(ValueError, match="^invalid encoded path segment "):
        decode_segment(text)


def test_decode_segment_keeps_lone_surrogates() -> None:
    assert decode_segment("~D83D") == "\ud83d"
    assert decode_segment("~DE00~D83D") == "\ude00\ud83d"  # reversed halves pair with nothing
    assert encode_segment("\ud83d") == "~D83D"


# ------------------------------------------------------------------------------- properties

_ANY_UNIT = st.one_of(
    st.characters(),  # every code point but the surrogates
    st.integers(0xD800, 0xDFFF).map(chr),
    st.sampled_from("~.-_/\\:Aa0"),
)


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-le", "surrogatepass")


@settings(max_examples=200)
@given(st.text(_ANY_UNIT, min_size=1))
def test_segments_round_trip_as_utf16(text: str) -> None:
    encoded = encode_segment(text)
    assert re.fullmatch(r"[A-Za-z0-9._~-]+", encoded) and encoded not in (".", "..")
    decoded = decode_segment(encoded)
    assert _utf16(decoded) == _utf16(text)
    # A Python string differs from the decoded one only by a surrogate pair held as two points.
    if not re.search("[\ud800-\udbff][\udc00-\udfff]", text):
        assert decoded == text


@settings(max_examples=300)
@given(st.text(st.sampled_from("~0123456789ABCDEFabcdef.-_zZ /é"), max_size=14))
def test_decode_segment_refuses_everything_outside_the_image(text: str) -> None:
    try:
        decoded = decode_segment(text)
    except ValueError as exc:
        assert str(exc).startswith("invalid encoded path segment ")
    else:
        assert encode_segment(decoded) == text


@settings(max_examples=100)
@given(st.text(_ANY_UNIT, min_size=1))
def test_project_keys_are_short_safe_names(cwd: str) -> None:
    key = project_key(cwd)
    assert re.fullmatch(r"--[A-Za-z0-9._~-]{1,251}--", key)
    assert not key[2:-2].startswith("-")


# -------------------------------------------------------------------------- root detection

ROOT = "/data/sessions"


def file(name: str) -> Entry:
    return Entry(name, "file")


def session_dir(name: str, *logs: str) -> Entry:
    return Entry(name, "dir", tuple(file(log) for log in logs))


def project(name: str, *entries: Entry) -> Entry:
    return Entry(name, "dir", entries)


def test_an_empty_root_holds_nothing() -> None:
    assert detect_root(ROOT, []) == RootContent(None, None)
    unrelated = [file("notes.txt"), file("a.jsonl.0123456789ab.tmp"), Entry("sub", "dir"), file("x.jsonl.zstd")]
    assert detect_root(ROOT, unrelated) == RootContent(None, None)


def test_a_jsonl_file_in_the_root_is_flat() -> None:
    assert detect_root(ROOT, [file("demo-1.jsonl"), file("README")]) == RootContent("flat", "none")
    assert detect_root(ROOT, [Entry("demo-1.jsonl", "symlink")]) == RootContent(None, None)  # regular only


@pytest.mark.parametrize(("log", "encoding"), [("session.jsonl", "none"), ("session.jsonl.zstd", "zstd")])
def test_a_project_directory_holding_a_session_directory_is_dsh(log: str, encoding: str) -> None:
    listing = [
        project("--home-ana--", session_dir("demo-1", log, "notes.md"), session_dir("b", log)),
        project("_no-cwd", session_dir("c~002Fd", log)),
    ]
    content = detect_root(ROOT, listing)
    assert (content.layout, content.compression, content.problems) == ("dsh", encoding, ())
    assert content.sessions == (
        DshSession("--home-ana--", "b", "b", encoding),  # type: ignore[arg-type]
        DshSession("--home-ana--", "demo-1", "demo-1", encoding),  # type: ignore[arg-type]
        DshSession("_no-cwd", "c~002Fd", "c/d", encoding, 'id not supported by turnlog: "c/d"'),  # type: ignore[arg-type]
    )
    assert content.sessions[1].parts == ("--home-ana--", "demo-1", log)


def test_what_does_not_make_a_session_directory() -> None:
    listing = [
        project("--p--", session_dir("only-tmp", "session.jsonl.zstd.0123456789ab.tmp"), Entry("link", "symlink")),
        project("not-a-project", session_dir("a", "session.jsonl")),
        project("----", session_dir("a", "session.jsonl")),
        Entry("--q--", "symlink"),
    ]
    assert detect_root(ROOT, listing) == RootContent(None, None)


def test_flat_files_inside_a_project_directory_are_problems_not_sessions() -> None:
    listing = [project("--p--", file("demo-1.jsonl"), file("x.jsonl.zstd"), file("notes.txt"))]
    assert detect_root(ROOT, listing) == RootContent(
        None,
        None,
        problems=(
            RootProblem(("--p--", "demo-1.jsonl"), FLAT_FILE_PROBLEM),
            RootProblem(("--p--", "x.jsonl.zstd"), FLAT_FILE_PROBLEM),
        ),
    )
    assert FLAT_FILE_PROBLEM == "flat file inside a project directory; move it into a session directory"


def test_a_symlinked_log_and_an_undecodable_session_directory_are_problems() -> None:
    listing = [
        project(
            "--p--",
            Entry("s", "dir", (Entry("session.jsonl.zstd", "symlink"),)),
            session_dir("bad~", "session.jsonl.zstd"),
            session_dir("ok", "session.jsonl.zstd"),
        )
    ]
    content = detect_root(ROOT, listing)
    assert (content.layout, content.compression) == ("dsh", "zstd")
    assert content.sessions == (DshSession("--p--", "ok", "ok", "zstd"),)
    assert [p.parts for p in content.problems] == [("--p--", "bad~", "session.jsonl.zstd"), ("--p--", "s", "session.jsonl.zstd")]
    assert content.problems[0].problem.startswith('invalid encoded path segment "bad~": ')
    assert content.problems[1].problem == SYMLINK_PROBLEM


def test_an_id_outside_turnlogs_rule_is_listed_with_its_json_string() -> None:
    listing = [project("--p--", session_dir("~D83D", "session.jsonl"), session_dir("a~0022b", "session.jsonl"))]
    problems = [s.problem for s in detect_root(ROOT, listing).sessions]
    assert problems == ['id not supported by turnlog: "a\\"b"', 'id not supported by turnlog: "\\ud83d"']


@pytest.mark.parametrize(
    ("listing", "what"),
    [
        ([file("x.jsonl"), project("--p--", session_dir("a", "session.jsonl.zstd"))], "flat sessions and dsh sessions"),
        (
            [project("--p--", session_dir("a", "session.jsonl")), project("_no-cwd", session_dir("b", "session.jsonl.zstd"))],
            "dsh sessions in none and dsh sessions in zstd",
        ),
        ([project("--p--", session_dir("a", "session.jsonl", "session.jsonl.zstd"))], "dsh sessions in none and dsh sessions in zstd"),
    ],
    ids=["flat and dsh", "two encodings", "two encodings in one session directory"],
)
def test_a_mixed_root_is_refused(listing: list[Entry], what: str) -> None:
    with pytest.raises(RootConflict) as caught:
        detect_root(ROOT, listing)
    assert str(caught.value) == f'session root "{ROOT}" mixes {what}; use a separate root for each'
    assert caught.value.root == Path(ROOT) and isinstance(caught.value, EventLogError)


# ------------------------------------------------------------------------ real directories


def test_list_root_lists_three_levels_and_follows_no_link(tmp_path: Path) -> None:
    root = tmp_path / "root"
    log = dsh_log_path(root, "/home/ana", "demo-1", "zstd")
    log.parent.mkdir(parents=True)
    log.write_bytes(b"")
    (log.parent / "deeper").mkdir()
    (log.parent / "deeper" / "x").write_bytes(b"")
    (root / "--home-ana--" / "flat.jsonl").write_bytes(b"")
    (root / "other").mkdir()
    (root / "other" / "x.jsonl").write_bytes(b"")
    (root / "top.txt").write_bytes(b"")
    os.symlink(log.parent, root / "--home-ana--" / "link")
    os.symlink(root / "--home-ana--", root / "--linked--")
    assert list_root(root) == (
        Entry("--home-ana--", "dir", (
            Entry("demo-1", "dir", (Entry("deeper", "dir"), file("session.jsonl.zstd"))),
            file("flat.jsonl"),
            Entry("link", "symlink"),
        )),
        Entry("--linked--", "symlink"),
        Entry("other", "dir"),
        file("top.txt"),
    )  # fmt: skip
    content = detect_root(root, list_root(root))
    assert content.sessions == (DshSession("--home-ana--", "demo-1", "demo-1", "zstd"),)
    assert content.problems == (RootProblem(("--home-ana--", "flat.jsonl"), FLAT_FILE_PROBLEM),)


def test_list_root_of_a_missing_root_is_empty_and_of_a_file_an_error(tmp_path: Path) -> None:
    assert list_root(tmp_path / "missing") == ()
    (tmp_path / "f").write_bytes(b"")
    with pytest.raises(NotADirectoryError):
        list_root(tmp_path / "f")


def test_list_root_marks_fifos_as_other(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "x.jsonl")
    assert list_root(tmp_path) == (Entry("x.jsonl", "other"),)
    assert detect_root(tmp_path, list_root(tmp_path)) == RootContent(None, None)


# ---------------------------------------------------------------------- layout resolution

EMPTY = RootContent(None, None)
FLAT = RootContent("flat", "none")
DSH_ZSTD = RootContent("dsh", "zstd")
DSH_NONE = RootContent("dsh", "none")


@pytest.mark.parametrize(
    ("layout", "compression", "dsh_default", "expected"),
    [
        ("auto", None, False, ("flat", "none")),
        ("auto", None, True, ("dsh", "zstd")),
        ("dsh", None, False, ("dsh", "zstd")),
        ("dsh", "none", False, ("dsh", "none")),
        ("auto", "none", False, ("dsh", "none")),
        ("auto", "zstd", False, ("dsh", "zstd")),
        ("flat", None, True, ("flat", "none")),
        ("auto", "none", True, ("dsh", "none")),
    ],
)
def test_an_empty_root_takes_what_was_asked(layout: str, compression: str | None, dsh_default: bool, expected: tuple[str, str]) -> None:
    assert resolve_layout(ROOT, EMPTY, layout=layout, compression=compression, dsh_default=dsh_default) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("content", [FLAT, DSH_ZSTD, DSH_NONE], ids=["flat", "dsh zstd", "dsh none"])
@pytest.mark.parametrize("dsh_default", [False, True])
def test_a_non_empty_root_keeps_its_own(content: RootContent, dsh_default: bool) -> None:
    assert resolve_layout(ROOT, content, dsh_default=dsh_default) == (content.layout, content.compression)
    assert resolve_layout(ROOT, content, layout=content.layout) == (content.layout, content.compression)  # type: ignore[arg-type]
    if content.layout == "dsh":
        assert resolve_layout(ROOT, content, compression=content.compression) == ("dsh", content.compression)
        assert resolve_layout(ROOT, content, layout="dsh", compression=content.compression) == ("dsh", content.compression)


@pytest.mark.parametrize(
    ("content", "layout", "compression", "message"),
    [
        (DSH_ZSTD, "dsh", "none", 'holds dsh sessions in zstd, but compression "none" was asked'),
        (DSH_ZSTD, "auto", "none", 'holds dsh sessions in zstd, but compression "none" was asked'),
        (DSH_NONE, "auto", "zstd", 'holds dsh sessions in none, but compression "zstd" was asked'),
        (DSH_ZSTD, "flat", None, 'holds dsh sessions in zstd, but layout "flat" was asked'),
        (FLAT, "dsh", None, 'holds flat sessions, but layout "dsh" was asked'),
        (FLAT, "dsh", "zstd", 'holds flat sessions, but layout "dsh" was asked'),
        (FLAT, "auto", "none", 'holds flat sessions, but compression "none" was asked'),
    ],
)
def test_asking_for_what_a_root_does_not_hold_is_refused(
    content: RootContent, layout: str, compression: str | None, message: str
) -> None:
    with pytest.raises(RootConflict) as caught:
        resolve_layout(ROOT, content, layout=layout, compression=compression)  # type: ignore[arg-type]
    assert str(caught.value) == f'session root "{ROOT}" {message}'


@pytest.mark.parametrize("content", [EMPTY, FLAT, DSH_ZSTD])
def test_compression_with_the_flat_layout_and_unknown_values_are_value_errors(content: RootContent) -> None:
    with pytest.raises(ValueError, match='compression "zstd" applies only to the dsh layout'):
        resolve_layout(ROOT, content, layout="flat", compression="zstd")
    with pytest.raises(ValueError, match="layout must be"):
        resolve_layout(ROOT, content, layout="tree")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="compression must be"):
        resolve_layout(ROOT, content, compression="gzip")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- lookup by id


def test_find_session_by_id() -> None:
    listing = [project("--a--", session_dir("demo-1", "session.jsonl.zstd")), project("--b--", session_dir("x", "session.jsonl.zstd"))]
    content = detect_root(ROOT, listing)
    assert find_session(ROOT, content, "demo-1") == DshSession("--a--", "demo-1", "demo-1", "zstd")
    assert find_session(ROOT, content, "nope") is None
    assert find_session(ROOT, EMPTY, "demo-1") is None


def test_find_session_checks_the_id_rule_first() -> None:
    with pytest.raises(InvalidSessionId):
        find_session(ROOT, EMPTY, "../x")


def test_a_duplicate_id_is_a_corrupt_log() -> None:
    listing = [
        project("--b--", session_dir("demo-1", "session.jsonl")),
        project("--a--", session_dir("demo-1", "session.jsonl")),
        project("--c--", session_dir("demo-1", "session.jsonl")),
    ]
    with pytest.raises(CorruptLog) as caught:
        find_session(ROOT, detect_root(ROOT, listing), "demo-1")
    assert caught.value.detail == 'duplicate session id "demo-1" appears in project directories "--a--" and "--b--"'
    assert caught.value.path == Path(ROOT, "--a--", "demo-1", "session.jsonl")
