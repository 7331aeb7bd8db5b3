"""Helpers for the Zstandard tests: the records of the dsh-roots §4 vectors, frames built by hand
(raw and RLE blocks, no library involved), the ``zstd`` command-line program as an encoder and
decoder nobody here wrote, and reference-style roots built from raw logs (``reference_root``)."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import msgspec
import pytest

from eventlog import dsh_log_path
from eventlog._dsh import Compression
from tests.eventlog.spec_examples import E1_LINES

if sys.version_info >= (3, 14):
    from compression import zstd as _library
else:
    from backports import zstd as _library

MAGIC = bytes.fromhex("28B52FFD")

# dsh-roots §4 vectors: H, ONE (a complete six-event turn) and turn 2's TS/SS/TE records.
H = E1_LINES[0] + b"\n"
ONE = b"".join(line + b"\n" for line in E1_LINES[1:])
TS2 = b'{"type":"turn/start","seq":6,"time":1767265200000,"data":{"turn":2}}\n'
SS21 = b'{"type":"step/start","seq":7,"time":1767265200001,"data":{"turn":2,"step":1}}\n'
TE2 = b'{"type":"turn/end","seq":7,"time":1767265200001,"data":{"turn":2,"reason":{"kind":"completed"}}}\n'


def block(payload: bytes, *, last: bool, rle_size: int | None = None) -> bytes:
    """A raw block holding ``payload``, or (``rle_size``) an RLE block repeating its one byte."""
    kind, size = (0, len(payload)) if rle_size is None else (1, rle_size)
    return (int(last) | kind << 1 | size << 3).to_bytes(3, "little") + payload


def hand_frame(*blocks: bytes) -> bytes:
    """A frame of the given blocks: no content size, no checksum, a 1 KiB window (so each raw
    block holds at most 1024 bytes)."""
    return MAGIC + b"\x00\x00" + b"".join(blocks)


def zstd_program() -> str:
    """The ``zstd`` program's path. Missing, it fails the test under ``CI=true`` and skips it
    otherwise, saying why."""
    path = shutil.which("zstd")
    if path is None:
        why = "the zstd command-line program is not installed (apt-get install zstd)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{why}; CI=true requires it")
        pytest.skip(why)
    return path


def cli_compress(program: str, plaintext: bytes, *, check: bool = True) -> bytes:
    """One frame made by ``zstd -c`` from standard input (``--no-check``: no content checksum)."""
    args = [program, "-c", "-q", *([] if check else ["--no-check"])]
    return subprocess.run(args, input=plaintext, capture_output=True, check=True).stdout


def cli_decompress(program: str, data: bytes) -> bytes:
    """Everything ``zstd -dc`` decompresses from ``data`` (every concatenated frame)."""
    return subprocess.run([program, "-dc", "-q"], input=data, capture_output=True, check=True).stdout


def batches(raw: bytes, size: int) -> list[bytes]:
    """A raw log as the plaintexts of its frames: the header line alone, then ``size`` records
    per batch."""
    lines = raw.splitlines(keepends=True)
    return [lines[0], *(b"".join(lines[i : i + size]) for i in range(1, len(lines), size))]


def reference_root(root: Path, raw_logs: Iterable[Path], compression: Compression, *, seed: int = 0) -> list[Path]:
    """Put raw session logs into ``root`` as the reference lays them out (dsh-roots §2, §4):
    ``<projectKey(cwd)>/<encodeSegment(id)>/session.jsonl[.zstd]``. In Zstandard, frame 0 is the
    header line and each batch (1 to 16 records, cut by a seeded random generator as a writer's
    group commits would cut them) is one frame, made by the library's own defaults (no content
    checksum: another encoder's settings than turnlog's). Returns the log paths, in order."""
    rng = random.Random(seed)
    paths = []
    for raw in raw_logs:
        data = raw.read_bytes()
        header = msgspec.json.decode(data[: data.index(b"\n")])
        path = dsh_log_path(root, header.get("cwd"), header["id"], compression)
        path.parent.mkdir(parents=True, mode=0o700)
        if compression == "zstd":
            lines = data.splitlines(keepends=True)
            frames, pos = [lines[0]], 1
            while pos < len(lines):
                size = rng.randint(1, 16)
                frames.append(b"".join(lines[pos : pos + size]))
                pos += size
            data = b"".join(library_frame(plaintext) for plaintext in frames)
        path.write_bytes(data)
        paths.append(path)
    return paths


def library_frame(plaintext: bytes) -> bytes:
    """One frame as the Zstandard library makes it by default (level 3, no checksum)."""
    return _library.compress(plaintext)
