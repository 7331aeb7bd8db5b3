"""Starting ``turnlog web`` (web §2, web §4.3): the bind address, the URL line, the browser key file,
the launch file and the decision to open a browser."""

from __future__ import annotations

import os
import re
import stat
import threading
import webbrowser
from pathlib import Path

import pytest

from host.web.fence import Binding
from host.web.launch import (
    LaunchError,
    bind_address,
    key_path,
    launch_file_path,
    load_browser_key,
    new_secret,
    open_browser,
    remove_launch_file,
    should_open_browser,
    url_line,
    write_launch_file,
)

KEY_SHAPE = re.compile(r"[A-Za-z0-9_-]{43}")
AS_ROOT = os.geteuid() == 0


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# --- --host and the URL line -----------------------------------------------------------------------


def test_bind_address() -> None:
    assert bind_address("127.0.0.1") == "127.0.0.1"
    assert bind_address("localhost") == "127.0.0.1"
    assert bind_address("::1") == "::1"


@pytest.mark.parametrize("flag", ["0.0.0.0", "::", "[::1]", "LOCALHOST", "127.0.0.2", "example.com", ""])
def test_bind_address_refuses_anything_else(flag: str) -> None:
    with pytest.raises(LaunchError) as caught:
        bind_address(flag)
    assert caught.value.exit_code == 2
    assert caught.value.message == (
        "turnlog: web: --host must be a loopback address (127.0.0.1, ::1 or localhost); "
        "use SSH port forwarding for remote access"
    )


def test_url_line() -> None:
    token = new_secret()
    assert url_line(Binding("127.0.0.1", 8357), token) == f"turnlog web: http://127.0.0.1:8357/#token={token}"
    assert url_line(Binding("::1", 40123), token) == f"turnlog web: http://[::1]:40123/#token={token}"
    assert url_line(Binding(bind_address("localhost"), 8357), token).startswith(
        "turnlog web: http://127.0.0.1:8357/#token="
    )


def test_secrets_are_token_urlsafe_32() -> None:
    first, second = new_secret(), new_secret()
    assert KEY_SHAPE.fullmatch(first) and KEY_SHAPE.fullmatch(second)
    assert first != second


# --- where the key lives ---------------------------------------------------------------------------


def test_key_path_rules() -> None:
    cwd = "/work/here"
    assert key_path({"TURNLOG_HOME": "/t", "XDG_STATE_HOME": "/s", "HOME": "/h"}, cwd=cwd) == Path(
        "/t/web-key"
    )
    assert key_path({"TURNLOG_HOME": "rel"}, cwd=cwd) == Path("/work/here/rel/web-key")
    assert key_path({"TURNLOG_HOME": "", "XDG_STATE_HOME": "/s", "HOME": "/h"}, cwd=cwd) == Path(
        "/s/turnlog/web-key"
    )
    assert key_path({"XDG_STATE_HOME": "relative", "HOME": "/h"}, cwd=cwd) == Path(
        "/h/.local/state/turnlog/web-key"
    )
    assert key_path({"XDG_STATE_HOME": "", "HOME": "/h"}, cwd=cwd) == Path("/h/.local/state/turnlog/web-key")
    assert key_path({}, cwd=cwd, home="/elsewhere") == Path("/elsewhere/.local/state/turnlog/web-key")


# --- the key file ----------------------------------------------------------------------------------


def test_first_start_creates_a_private_key(tmp_path: Path) -> None:
    path = tmp_path / "state" / "turnlog" / "web-key"
    key = load_browser_key(path)
    assert KEY_SHAPE.fullmatch(key)
    assert path.read_text() == key + "\n"
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700
    assert path.stat().st_nlink == 1
    assert sorted(p.name for p in path.parent.iterdir()) == ["web-key"]  # no temporary file left


def test_the_key_outlives_restarts_and_new_key_replaces_it(tmp_path: Path) -> None:
    path = tmp_path / "web-key"
    key = load_browser_key(path)
    assert load_browser_key(path) == key
    replaced = load_browser_key(path, new_key=True)
    assert replaced != key and KEY_SHAPE.fullmatch(replaced)
    assert path.read_text() == replaced + "\n"
    assert mode(path) == 0o600
    assert load_browser_key(path) == replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["web-key"]


def test_a_wide_umask_does_not_widen_the_key(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        path = tmp_path / "d" / "web-key"
        load_browser_key(path)
    finally:
        os.umask(old)
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700


def test_racing_starts_agree_on_one_key(tmp_path: Path) -> None:
    path = tmp_path / "web-key"
    keys: list[str] = []
    barrier = threading.Barrier(8)

    def start() -> None:
        barrier.wait()
        keys.append(load_browser_key(path))

    threads = [threading.Thread(target=start) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(keys) == 8 and len(set(keys)) == 1
    assert path.read_text() == keys[0] + "\n"


@pytest.mark.parametrize("loose", [0o640, 0o604, 0o644, 0o660, 0o606, 0o620])
def test_a_key_others_may_read_is_refused(tmp_path: Path, loose: int) -> None:
    path = tmp_path / "web-key"
    load_browser_key(path)
    path.chmod(loose)
    with pytest.raises(LaunchError) as caught:
        load_browser_key(path)
    assert caught.value.exit_code == 1
    assert caught.value.message == f"turnlog: web: {path} must be readable only by you (chmod 600 {path})"


@pytest.mark.parametrize(
    "content", [b"", b"\n", b"short\n", b"\xff" * 43, b"k" * 44 + b"\n", b"k" * 42 + b"=\n"]
)
def test_a_key_file_without_a_key_names_new_key(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "web-key"
    path.write_bytes(content)
    path.chmod(0o600)
    with pytest.raises(LaunchError) as caught:
        load_browser_key(path)
    assert caught.value.exit_code == 1
    assert caught.value.message.startswith(f"turnlog: web: cannot read the browser key {path} (")
    assert "--new-key" in caught.value.message
    assert path.read_bytes() == content  # left for the user to look at
    assert KEY_SHAPE.fullmatch(load_browser_key(path, new_key=True))


def test_a_symlinked_key_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real-key"
    load_browser_key(real)
    link = tmp_path / "web-key"
    link.symlink_to(real)
    with pytest.raises(LaunchError) as caught:
        load_browser_key(link)
    assert "symbolic link" in caught.value.message and "--new-key" in caught.value.message


@pytest.mark.skipif(AS_ROOT, reason="root reads and writes whatever the modes say")
def test_unreadable_and_unwritable(tmp_path: Path) -> None:
    path = tmp_path / "web-key"
    load_browser_key(path)
    path.chmod(0o000)
    with pytest.raises(LaunchError) as caught:
        load_browser_key(path)
    assert "--new-key" in caught.value.message
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(LaunchError) as caught:
        load_browser_key(locked / "web-key")
    assert caught.value.message.startswith(
        f"turnlog: web: cannot write the browser key {locked / 'web-key'}: "
    )


def test_a_key_directory_that_cannot_exist(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(LaunchError) as caught:
        load_browser_key(blocker / "web-key")
    assert caught.value.message.startswith(f"turnlog: web: cannot create {blocker}: ")


# --- the launch file -------------------------------------------------------------------------------


def test_launch_file(tmp_path: Path) -> None:
    url = 'http://127.0.0.1:8357/#token=abc"<x>&y'
    path = write_launch_file(tmp_path, 8357, url)
    assert path == launch_file_path(tmp_path, 8357) == tmp_path / "web-open-8357.html"
    assert mode(path) == 0o600
    text = path.read_text()
    quoted = "http://127.0.0.1:8357/#token=abc&quot;&lt;x&gt;&amp;y"
    assert f'<meta http-equiv="refresh" content="0; url={quoted}">' in text
    assert f'<a href="{quoted}">' in text
    assert '<meta name="referrer" content="no-referrer">' in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["web-open-8357.html"]
    # A leftover from a killed run is replaced, and removal tolerates a file already gone.
    write_launch_file(tmp_path, 8357, "http://127.0.0.1:8357/#token=new")
    assert "token=new" in path.read_text()
    remove_launch_file(path)
    assert not path.exists()
    remove_launch_file(path)


# --- opening a browser -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("environ", "no_browser", "platform", "expected"),
    [
        ({"DISPLAY": ":0"}, False, "linux", True),
        ({"WAYLAND_DISPLAY": "wayland-0"}, False, "linux", True),
        ({"DISPLAY": ":0"}, True, "linux", False),
        ({}, False, "linux", False),
        ({"DISPLAY": "", "WAYLAND_DISPLAY": ""}, False, "linux", False),
        ({}, False, "freebsd14", False),
        ({"DISPLAY": ":0"}, False, "openbsd7", True),
        ({}, False, "darwin", True),
        ({}, False, "win32", True),
        ({}, True, "darwin", False),
        ({"DISPLAY": ":0", "SSH_CONNECTION": "10.0.0.1 5000 10.0.0.2 22"}, False, "linux", False),
        ({"DISPLAY": ":0", "SSH_TTY": "/dev/pts/3"}, False, "linux", False),
        ({"SSH_TTY": "/dev/pts/3"}, False, "darwin", False),
        ({"DISPLAY": ":0", "SSH_CONNECTION": "", "SSH_TTY": ""}, False, "linux", True),
    ],
)
def test_should_open_browser(
    environ: dict[str, str], no_browser: bool, platform: str, expected: bool
) -> None:
    assert should_open_browser(environ, no_browser=no_browser, platform=platform) is expected


async def test_open_browser_opens_the_launch_file_from_a_worker_thread(tmp_path: Path) -> None:
    token = new_secret()
    path = write_launch_file(tmp_path, 8357, f"http://127.0.0.1:8357/#token={token}")
    calls: list[tuple[str, bool]] = []

    def opener(url: str) -> bool:
        calls.append((url, threading.current_thread() is threading.main_thread()))
        return True

    assert await open_browser(path, opener=opener) is None
    assert calls == [(path.as_uri(), False)]
    assert token not in calls[0][0]


async def test_open_browser_failures_are_one_line(tmp_path: Path) -> None:
    path = tmp_path / "web-open-8357.html"

    def no_browser(url: str) -> bool:
        return False

    def broken(url: str) -> bool:
        raise webbrowser.Error("could not locate runnable browser")

    def crashing(url: str) -> bool:
        raise OSError("exec failed\nsecond line")

    suffix = "; open the URL above"
    assert (
        await open_browser(path, opener=no_browser)
        == f"turnlog web: could not open a browser (no browser found){suffix}"
    )
    assert await open_browser(path, opener=broken) == (
        f"turnlog web: could not open a browser (could not locate runnable browser){suffix}"
    )
    assert await open_browser(path, opener=crashing) == (
        f"turnlog web: could not open a browser (exec failed second line){suffix}"
    )
