"""Interoperability with an encoder and a decoder nobody here wrote: the ``zstd`` command-line
program (dsh-roots §7). Files it makes, one ``zstd -c`` per batch and concatenated, with and
without ``--no-check``, read correctly; frames turnlog writes decompress with ``zstd -dc`` to
exactly the plaintext. Without the program these tests skip, or fail under ``CI=true``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from eventlog._zstd import ZstdLogError, encode_frame, read_text, scan_frames
from eventlog.scan import scan_bytes
from tests.eventlog.zstd_support import (
    ONE,
    TE2,
    TS2,
    H,
    batches,
    cli_compress,
    cli_decompress,
    zstd_program,
)
from tests.fixture_paths import DSH_FIXTURES, FIXTURES

LOGS = [
    *sorted(DSH_FIXTURES.glob("*.jsonl")),
    FIXTURES / "demo-1.jsonl",
    FIXTURES / "packed-1.jsonl",
    FIXTURES / "reminders-1.jsonl",
]


@pytest.fixture(scope="module")
def zstd() -> str:
    return zstd_program()


@pytest.mark.parametrize("check", [True, False], ids=["checksummed", "--no-check"])
@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_frames_made_by_the_zstd_program_read_to_the_raw_log(zstd: str, log: Path, check: bool) -> None:
    raw = log.read_bytes()
    plaintexts = batches(raw, 3)
    data = b"".join(cli_compress(zstd, text, check=check) for text in plaintexts)
    text = read_text(data)
    assert text.committed == raw and text.torn_start is None
    assert [f.frame.checksum for f in text.frames] == [check] * len(plaintexts)
    assert [text.committed[f.text_start : f.text_end] for f in text.frames] == plaintexts
    scanned, events = scan_bytes(text.committed)
    raw_scan, raw_events = scan_bytes(raw)
    assert events == raw_events and scanned.header == raw_scan.header


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_frames_turnlog_writes_decompress_with_zstd_dc_to_exactly_the_raw_log(zstd: str, log: Path) -> None:
    raw = log.read_bytes()
    data = b"".join(encode_frame(text) for text in batches(raw, 4))
    assert cli_decompress(zstd, data) == raw


def test_zstd_dc_decompresses_an_empty_frame_and_each_batch_frame(zstd: str) -> None:
    frames = [encode_frame(H), encode_frame(ONE), encode_frame(b""), encode_frame(TS2 + TE2)]
    assert [cli_decompress(zstd, frame) for frame in frames] == [H, ONE, b"", TS2 + TE2]


def test_a_cut_file_of_the_zstd_program_recovers_what_its_decoder_yields(zstd: str) -> None:
    head, batch = cli_compress(zstd, H), cli_compress(zstd, TS2 + TE2)
    text = read_text(head + cli_compress(zstd, ONE) + batch[:-1])
    assert text.committed == H + ONE and text.torn_start == len(head) + len(cli_compress(zstd, ONE))
    assert text.recovered == TS2 + TE2


def test_a_frame_of_the_zstd_program_with_a_bad_checksum_fails_validation(zstd: str) -> None:
    head = cli_compress(zstd, H)
    damaged = bytearray(head + cli_compress(zstd, ONE))
    damaged[-1] ^= 0x40
    with pytest.raises(ZstdLogError) as caught:
        read_text(bytes(damaged))
    assert caught.value.reason == f"frame at byte {len(head)} failed validation"


def test_the_structural_scan_agrees_with_the_zstd_program_on_frame_sizes(zstd: str) -> None:
    sizes = [len(cli_compress(zstd, text, check=check)) for text in (H, ONE, b"") for check in (True, False)]
    data = b"".join(
        cli_compress(zstd, text, check=check) for text in (H, ONE, b"") for check in (True, False)
    )
    assert [f.end - f.start for f in scan_frames(data).frames] == sizes


def test_a_missing_program_skips_locally_and_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="zstd command-line program is not installed"):
        zstd_program()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true requires it"):
        zstd_program()
