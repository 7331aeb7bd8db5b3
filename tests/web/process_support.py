"""``turnlog web`` as a subprocess (web §8): started with ``--root <tmp> --port 0 --no-browser`` and
``TURNLOG_HOME=<tmp>``; the URL comes from its first stdout line. Its output is collected by
threads, so a test can wait for a line without blocking on a pipe."""

from __future__ import annotations

import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Self

from tests.host.process_support import TURNLOG, clean_env, with_default_sigint

START_GUARD_S = 30.0  # only guards against a hang
URL_LINE = re.compile(r"turnlog web: (http://(127\.0\.0\.1|\[::1\]):(\d+)/)#token=([A-Za-z0-9_-]{43})")


class WebProcess:
    """One ``turnlog web`` process on ``root`` with ``TURNLOG_HOME=home``."""

    def __init__(
        self,
        home: Path,
        root: Path,
        *args: str,
        port: int = 0,
        env: Mapping[str, str] | None = None,
        browser: bool = False,
    ) -> None:
        self.home = home
        self.root = root
        command = [str(TURNLOG), "web", "--root", str(root), "--port", str(port)]
        if not browser:
            command.append("--no-browser")
        self.argv: Sequence[str] = [*command, *args]
        self.proc = subprocess.Popen(
            with_default_sigint(list(self.argv)),  # a suite started in the background ignores SIGINT
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=clean_env(TURNLOG_HOME=str(home), **(env or {})),
            cwd=str(home),
        )
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._changed = threading.Condition()
        self._drains = []
        for stream, lines in ((self.proc.stdout, self.stdout), (self.proc.stderr, self.stderr)):
            assert stream is not None
            drain = threading.Thread(target=self._drain, args=(stream, lines), daemon=True)
            drain.start()
            self._drains.append(drain)
        self.url = ""
        self.origin = ""
        self.port = 0
        self.token = ""

    def _drain(self, stream: IO[bytes], lines: list[str]) -> None:
        for raw in stream:
            with self._changed:
                lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, done: Callable[[], bool], timeout: float = START_GUARD_S) -> None:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not done():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"timed out; stdout {self.stdout}, stderr {self.stderr}")
                self._changed.wait(min(remaining, 0.25))

    def started(self) -> Self:
        """Wait for the URL line (or the end of the process) and parse it."""
        self.wait_for(lambda: bool(self.stdout) or self.proc.poll() is not None)
        if not self.stdout:
            self.proc.wait(5)
            self.wait_for(lambda: True)
            raise AssertionError(f"turnlog web ended with {self.proc.returncode}: {self.stderr}")
        match = URL_LINE.fullmatch(self.stdout[0])
        assert match is not None, self.stdout[0]
        self.origin = match.group(1).rstrip("/")
        self.port = int(match.group(3))
        self.token = match.group(4)
        self.url = f"{match.group(1)}#token={self.token}"
        self.wait_for(lambda: len(self.stdout) >= 2)
        return self

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 20.0) -> int:
        """Signal the process and wait for it; its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        code = self.proc.wait(timeout)
        for drain in self._drains:  # every line the process wrote is in stdout/stderr now
            drain.join(timeout)
        return code

    def kill(self) -> None:
        """SIGKILL: nothing of turnlog runs any more."""
        self.stop(signal.SIGKILL)

    def key(self) -> str:
        return (self.home / "web-key").read_text().strip()

    def __enter__(self) -> Self:
        return self.started()

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def free_port() -> int:
    """A port that was free a moment ago (for the tests that restart on one port)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])

