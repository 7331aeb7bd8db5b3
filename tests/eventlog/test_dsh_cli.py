"""The log commands on a dsh root in Zstandard (dsh-roots §6): ls from frame 0, inspect,
validate, tail and fork by id, --layout/--compression on fork, and the layout and encoding keys
of the --json outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import eventlog.cli
from eventlog import read_log
from eventlog._zstd import encode_frame, scan_frames
from tests.eventlog.spec_examples import E1_LINES
from tests.eventlog.zstd_support import ONE, H


def cli(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = eventlog.cli.main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "dsh" / "--home-ana--" / "demo-1" / "session.jsonl.zstd"
    path.parent.mkdir(parents=True)
    path.write_bytes(encode_frame(H) + encode_frame(ONE))
    return tmp_path / "dsh"


def test_ls_inspect_validate_and_tail_by_id(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "ls", "--root", root, "--json")
    assert (code, err) == (0, "")
    [row] = json.loads(out)
    assert (row["id"], row["layout"], row["encoding"], row["problem"]) == ("demo-1", "dsh", "zstd", None)
    assert row["header"] == json.loads(E1_LINES[0])
    code, out, err = cli(capsys, "inspect", "demo-1", "--root", root, "--json")
    doc = json.loads(out)
    assert (doc["layout"], doc["encoding"], doc["frames"], doc["repair"]) == ("dsh", "zstd", 2, None)
    assert doc["events"] == [json.loads(line) for line in E1_LINES[1:]]
    code, out, err = cli(capsys, "validate", "--root", root)
    assert code == 0, out + err
    code, out, err = cli(capsys, "tail", "demo-1", "--root", root, "--json", "--from", "0")
    assert (code, out.encode()) == (0, ONE)


def test_ls_lists_a_session_whose_event_frame_is_damaged(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = root / "--home-ana--" / "demo-1" / "session.jsonl.zstd"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF  # Z7: only the header frame is read by ls
    path.write_bytes(bytes(data))
    code, out, _ = cli(capsys, "ls", "--root", root, "--json")
    assert code == 0 and json.loads(out)[0]["problem"] is None
    code, out, err = cli(capsys, "validate", "--root", root)
    assert code != 0 and "failed validation" in out + err


@pytest.mark.parametrize(
    ("options", "name", "frames"),
    [((), "child.jsonl", None), (("--layout", "dsh", "--compression", "zstd"), "session.jsonl.zstd", 2),
     (("--layout", "dsh", "--compression", "none"), "session.jsonl", None)],
)
def test_fork_into_any_layout_and_encoding(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], options: tuple[str, ...], name: str,
    frames: int | None,
) -> None:
    source = root / "--home-ana--" / "demo-1" / "session.jsonl.zstd"
    target = tmp_path / "target"
    code, out, err = cli(capsys, "fork", f"{source}", "--id", "child", "--root", target, "--json", *options)
    assert code == 0, err
    doc = json.loads(out)
    assert Path(doc["path"]).name == name
    assert (doc["layout"], doc["encoding"]) == (
        "dsh" if options else "flat", "zstd" if name.endswith(".zstd") else "none"
    )
    child = read_log(doc["path"])
    assert [e.to_json() for e in child.events][:6] == E1_LINES[1:] and child.frames == frames
    if frames is not None:
        assert len(scan_frames(Path(doc["path"]).read_bytes()).frames) == 2


def test_fork_refuses_a_compression_the_root_contradicts(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "fork", "demo-1", "--id", "child", "--root", root, "--compression", "none")
    assert code != 0
    assert f'session root "{root}" holds dsh sessions in zstd, but compression "none" was asked' in err
