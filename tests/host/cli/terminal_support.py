"""``turnlog chat`` on a real pseudo-terminal (pexpect), read through :class:`~.screen.Screen`, so a
test types keys and checks what a person would see."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pexpect

from tests.host.process_support import TURNLOG, clean_env, with_default_sigint

HANG_GUARD_S = 20.0  # guards against a hang only; never an assertion about speed

UP = "\x1b[A"
LEFT = "\x1b[D"
CTRL_C = "\x03"
CTRL_D = "\x04"
ESC_ENTER = "\x1b\r"
ENTER = "\r"


def paste(text: str) -> str:
    """``text`` as a terminal sends a paste in bracketed-paste mode."""
    return f"\x1b[200~{text}\x1b[201~"


class Terminal:
    """A chat on a 200×30 pseudo-terminal (wide enough that temporary paths do not wrap), with ``TZ`` and its own history file."""

    def __init__(self, args: list[str], tmp: Path, *, tz: str = "Asia/Shanghai", rows: int = 30, cols: int = 200,
                 env: dict[str, str] | None = None) -> None:
        from tests.host.cli.screen import Screen

        self.screen = Screen(rows, cols)
        full_env = clean_env(TZ=tz, TERM="xterm", TURNLOG_HISTORY=str(tmp / "history"), **(env or {}))
        full_env.pop("NO_COLOR", None)
        # SIGINT at its default even when the test run itself ignores it (started in the background)
        program, *argv = with_default_sigint([str(TURNLOG), "chat", *args])
        self.child = pexpect.spawn(program, argv, env=full_env, dimensions=(rows, cols), encoding=None)
        self.exit_code: int | None = None

    def _pump(self, timeout: float) -> bool:
        """Read what is there (waiting up to ``timeout``); False at end of output."""
        try:
            data = self.child.read_nonblocking(65536, timeout=timeout)
        except pexpect.TIMEOUT:
            return True
        except pexpect.EOF:
            return False
        replies = self.screen.feed(data.decode("utf-8", "replace"))
        if replies:
            self.child.send(replies)
        return True

    def text(self) -> str:
        return "\n".join(self.screen.transcript())

    def wait_for(self, what: str | Callable[[Terminal], bool], *, timeout: float = HANG_GUARD_S) -> None:
        """Pump output until ``what`` is on the screen (or scrolled past), or the predicate holds."""
        deadline = time.monotonic() + timeout
        check: Callable[[Terminal], bool] = what if callable(what) else (lambda t: what in t.text())
        while not check(self):
            left = deadline - time.monotonic()
            assert left > 0, f"timed out waiting for {what!r}; screen:\n{self.text()}"
            if not self._pump(min(left, 0.2)):
                assert check(self), f"chat ended while waiting for {what!r}; screen:\n{self.text()}"
                return

    def settle(self, quiet: float = 0.3) -> None:
        """Pump until nothing arrived for ``quiet`` seconds."""
        deadline = time.monotonic() + HANG_GUARD_S
        while time.monotonic() < deadline:
            before = self.text(), self.screen.row, self.screen.col
            if not self._pump(quiet):
                return
            if (self.text(), self.screen.row, self.screen.col) == before:
                return

    def type(self, keys: str) -> None:
        self.child.send(keys.encode())

    def prompt_line(self) -> str:
        """The line the cursor is on: the input line."""
        return self.screen.cursor_line()

    def close(self) -> int:
        """Wait for chat to exit and return its status."""
        deadline = time.monotonic() + HANG_GUARD_S
        while self._pump(0.2):
            assert time.monotonic() < deadline, f"chat did not exit; screen:\n{self.text()}"
        self.child.close()
        self.exit_code = self.child.exitstatus if self.child.exitstatus is not None else -(self.child.signalstatus or 0)
        return self.exit_code

    def kill(self) -> None:
        if self.child.isalive():
            self.child.kill(signal.SIGKILL)
        self.child.close(force=True)


def history_file(tmp: Path) -> Path:
    return tmp / "history"


def file_mode(path: Path) -> int:
    return os.stat(path).st_mode & 0o777
