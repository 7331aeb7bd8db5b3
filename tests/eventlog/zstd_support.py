"""Helpers for the Zstandard tests: the records of the dsh-roots §4 vectors, frames built by hand
(raw and RLE blocks, no library involved) and the ``zstd`` command-line program as an encoder and
decoder nobody here wrote."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.eventlog.spec_examples import E1_LINES

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
