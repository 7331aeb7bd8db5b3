"""chat's line editor on a terminal (host §7.2 "Input"): prompt_toolkit, run so that trio keeps
owning the host.

:meth:`LineEditor.read` blocks in a worker thread (``trio.to_thread.run_sync``) while
prompt_toolkit runs its own event loop there. Everything chat prints while a line is being typed —
reminders, streamed replies, tool calls — goes through :meth:`LineEditor.print_above`, which hands
the text to that loop: the input is erased, the text written, and the prompt redrawn with the
half-typed line intact. A reply still streaming its current line is shown in the prompt's own
message area (:meth:`LineEditor.set_live`), so it grows in place above the input.

Keys: the usual Emacs bindings and history (↑/↓, Ctrl-R), bracketed paste (a multi-line paste is
one prompt), Esc Enter / Alt+Enter for a newline, Enter to send. Ctrl-C clears a typed line; on an
empty line :meth:`read` raises ``KeyboardInterrupt`` and the caller decides (cancel the turn, or
explain how to quit). Ctrl-D on an empty line raises ``EOFError``. The history persists in one file
per session root (:func:`history_path`), created 0600.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TextIO

from prompt_toolkit import PromptSession
from prompt_toolkit.application import Application, run_in_terminal
from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
from prompt_toolkit.completion import WordCompleter
from prompt_toolkit.formatted_text import ANSI
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.patch_stdout import patch_stdout
from prompt_toolkit.shortcuts import confirm

PROMPT = "> "
CONTINUATION = ". "
HISTORY_ENV = "TURNLOG_HISTORY"
_CLOSE_WAIT_S = 5.0
_COMMAND_WORD = re.compile(r"^/\w*")  # completion applies to a slash command at the start


def history_path(root: Path, environ: Mapping[str, str]) -> Path | None:
    """Where chat keeps the input history of the store at ``root``: ``$TURNLOG_HISTORY`` if set
    (empty: no file), else beside the root and never inside it or a session directory —
    ``<parent>/chat-history`` for a root named ``sessions`` (the default layout:
    ``~/.local/share/turnlog/chat-history``), else ``<root>.chat-history``."""
    if HISTORY_ENV in environ:
        value = environ[HISTORY_ENV]
        return Path(value) if value else None
    if root.name == "sessions":
        return root.parent / "chat-history"
    return root.with_name(root.name + ".chat-history")


def _open_history(path: Path | None) -> History:
    """A file history at ``path`` (made 0600 before prompt_toolkit appends to it), or an in-memory
    one if there is no path or it cannot be created."""
    if path is None:
        return InMemoryHistory()
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
    except OSError:
        return InMemoryHistory()
    return FileHistory(str(path))


class LineEditor:
    """One terminal's input line. :meth:`read` runs in one worker thread at a time; every other
    method may be called from any thread."""

    def __init__(self, *, history: Path | None, commands: tuple[str, ...], out: TextIO | None = None) -> None:
        self._out = out if out is not None else sys.stdout
        self._live = ""
        # Output waits in _pending until it is written, in order, by whichever comes first: the
        # prompt's loop (above the input), or the editor thread when the prompt starts or ends,
        # or the caller while no prompt runs. _loop is the running prompt's loop, else None.
        self._lock = threading.Lock()
        self._pending: list[str] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._returned = threading.Event()
        self._returned.set()
        self._closed = False
        bindings = KeyBindings()
        bindings.add("c-c")(self._interrupt)
        bindings.add("escape", "enter")(self._newline)
        self._session: PromptSession[str] = PromptSession(
            history=_open_history(history),
            auto_suggest=AutoSuggestFromHistory(),
            completer=WordCompleter(list(commands), sentence=True, pattern=_COMMAND_WORD),
            complete_while_typing=False,
            key_bindings=bindings,
            prompt_continuation=CONTINUATION,
            enable_history_search=False,
        )

    # --- key bindings (in the editor's thread) -------------------------------------------------

    @staticmethod
    def _interrupt(event: KeyPressEvent) -> None:
        buffer = event.app.current_buffer
        if buffer.text:
            buffer.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt())

    @staticmethod
    def _newline(event: KeyPressEvent) -> None:
        event.app.current_buffer.insert_text("\n")

    # --- reading ----------------------------------------------------------------------------------

    def _message(self) -> ANSI:
        live = self._live
        return ANSI((live + "\n" if live else "") + PROMPT)

    def _started(self) -> None:
        """In the prompt's loop, before its first render: output queued so far goes first."""
        with self._lock:
            self._loop = asyncio.get_running_loop()
            self._flush_pending()

    def read(self) -> str:
        """Block until a line is sent (Enter) and return it. Raises ``EOFError`` on Ctrl-D at an
        empty line or after :meth:`close`, ``KeyboardInterrupt`` on Ctrl-C at an empty line."""
        with self._lock:
            if self._closed:
                raise EOFError
            self._returned.clear()
        try:
            return self._session.prompt(self._message, pre_run=self._started)
        finally:
            with self._lock:
                self._loop = None
                self._flush_pending()
            self._returned.set()

    def confirm(self, question: str) -> bool:
        """Ask a yes/no ``question`` (``y`` or ``n``); Ctrl-C and Ctrl-D answer no. Blocking."""
        try:
            return bool(confirm(question))
        except (KeyboardInterrupt, EOFError):
            return False

    def close(self) -> None:
        """End a running :meth:`read` (it raises ``EOFError``) and refuse later ones; returns once
        the terminal is restored. Blocking: call it from a worker thread."""
        with self._lock:
            self._closed = True
            loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: read() returned
                loop.call_soon_threadsafe(_exit_quietly, self._session.app)
        self._returned.wait(_CLOSE_WAIT_S)

    # --- output -----------------------------------------------------------------------------------

    def print_above(self, text: str, *, live: str | None = None) -> None:
        """Write ``text`` (ending with a newline) above the input line, which is then redrawn;
        ``live`` replaces the streaming line shown above the prompt at the same moment. Texts
        appear in the order of the calls."""
        with self._lock:
            self._pending.append(text)
            if live is not None:
                self._live = live
            loop = self._loop
            if loop is None:
                self._flush_pending()
                return
        try:
            loop.call_soon_threadsafe(self._flush_in_prompt)
        except RuntimeError:  # the prompt's loop just closed; read() writes what is pending
            pass

    def _flush_in_prompt(self) -> None:
        """In the prompt's loop: write what is pending above the input (run_in_terminal erases
        the prompt, runs this, and redraws it)."""

        def write() -> None:
            with self._lock:
                self._flush_pending()

        run_in_terminal(write, in_executor=False)

    def _flush_pending(self) -> None:
        """Write every pending text (the caller holds the lock)."""
        texts, self._pending = self._pending, []
        if texts:
            self._out.write("".join(texts))
            self._out.flush()

    def set_live(self, text: str) -> None:
        """Show ``text`` (one streaming line, possibly with SGR styles) above the prompt."""
        with self._lock:
            self._live = text
            running = self._loop is not None
        if running:
            with contextlib.suppress(RuntimeError):  # the prompt just ended
                self._session.app.invalidate()


def _exit_quietly(app: Application[str]) -> None:
    if app.is_running and not app.is_done:  # it may have just returned a line by itself
        app.exit(exception=EOFError())


@contextlib.contextmanager
def guarded_output() -> Iterator[TextIO]:
    """Route stray writes to ``sys.stdout``/``sys.stderr`` (a warning, a log record) above the
    prompt while chat runs; yields the real stdout for chat's own output."""
    real = sys.stdout
    with patch_stdout(raw=True):
        yield real
