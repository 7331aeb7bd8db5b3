"""A small terminal emulator for the chat tests: it keeps the screen a person would see from the
bytes a program writes to its pseudo-terminal (printable text with wide characters and
autowrap, CR, LF, backspace, cursor moves, erase in line and display, scrolling into a
scrollback), and answers cursor position requests as a terminal does. Colours and modes other
than autowrap are ignored. It is enough for what prompt_toolkit and chat write; it is not xterm.
"""

from __future__ import annotations

import re

from wcwidth import wcwidth

_CSI = re.compile(r"\x1b\[([?>=]?)([0-9;]*)([ -/]*)([@-~])")
_OSC = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


class Screen:
    """``rows`` × ``cols`` cells; :meth:`feed` returns the bytes the terminal answers."""

    def __init__(self, rows: int = 24, cols: int = 80) -> None:
        self.rows = rows
        self.cols = cols
        self.grid = [[" "] * cols for _ in range(rows)]
        self.wrapped = [False] * rows  # the row continues on the next one (autowrap)
        self.scrollback: list[tuple[str, bool]] = []
        self.row = 0
        self.col = 0
        self.autowrap = True
        self._wrap_pending = False
        self._rest = ""

    # --- reading the screen -------------------------------------------------------------------------

    def line(self, row: int) -> str:
        return "".join(cell for cell in self.grid[row] if cell != "").rstrip()

    def _logical(self, rows: list[tuple[str, bool]]) -> list[str]:
        """Rows joined where autowrap split a line, trailing blank lines dropped."""
        lines: list[str] = []
        joined = ""
        for text, wraps in rows:
            if wraps:
                joined += text.ljust(self.cols) if len(text) < self.cols else text
                continue
            lines.append((joined + text).rstrip())
            joined = ""
        if joined:
            lines.append(joined.rstrip())
        while lines and not lines[-1]:
            lines.pop()
        return lines

    def lines(self) -> list[str]:
        """The visible lines (a line wrapped over several rows is one), trailing blanks dropped."""
        return self._logical([(self.line(row), self.wrapped[row]) for row in range(self.rows)])

    def transcript(self) -> list[str]:
        """Everything that scrolled off the top, then the visible lines."""
        return self._logical([*self.scrollback, *[(self.line(row), self.wrapped[row]) for row in range(self.rows)]])

    def cursor_line(self) -> str:
        return self.line(self.row)

    # --- writing ------------------------------------------------------------------------------------

    def feed(self, data: str) -> bytes:
        text = self._rest + data
        self._rest = ""
        replies = b""
        i = 0
        while i < len(text):
            char = text[i]
            if char == "\x1b":
                m = _CSI.match(text, i)
                if m is None:
                    osc = _OSC.match(text, i)
                    if osc is not None:
                        i = osc.end()
                        continue
                    if len(text) - i < 16 and "\x1b" not in text[i + 1 :]:
                        self._rest = text[i:]  # an escape sequence cut by the read
                        break
                    i += 2  # a two-character escape (ESC =, ESC >, …): ignored
                    continue
                replies += self._csi(m[1], m[2], m[4])
                i = m.end()
                continue
            self._char(char)
            i += 1
        return replies

    def _char(self, char: str) -> None:
        if char == "\r":
            self.col, self._wrap_pending = 0, False
        elif char == "\n":
            self._linefeed()
        elif char == "\x08":
            self.col, self._wrap_pending = max(0, self.col - 1), False
        elif char == "\t":
            self.col = min(self.cols - 1, (self.col // 8 + 1) * 8)
        elif char >= " ":
            self._print(char)

    def _print(self, char: str) -> None:
        width = max(0, wcwidth(char))
        if width == 0:
            return
        if self._wrap_pending or self.col + width > self.cols:
            if not self.autowrap:
                self.col = self.cols - width
            else:
                self.wrapped[self.row] = True
                self.col = 0
                self._linefeed()
            self._wrap_pending = False
        self.grid[self.row][self.col] = char
        if width == 2:
            self.grid[self.row][self.col + 1] = ""
        self.col += width
        if self.col >= self.cols:
            self.col = self.cols - 1
            self._wrap_pending = self.autowrap

    def _linefeed(self) -> None:
        self._wrap_pending = False
        if self.row == self.rows - 1:
            self.scrollback.append((self.line(0), self.wrapped[0]))
            self.grid.pop(0)
            self.grid.append([" "] * self.cols)
            self.wrapped.pop(0)
            self.wrapped.append(False)
        else:
            self.row += 1

    def _csi(self, private: str, params: str, final: str) -> bytes:
        numbers = [int(p) if p else 0 for p in params.split(";")] if params else []
        n = numbers[0] if numbers and numbers[0] else 1
        self._wrap_pending = final in "m" and self._wrap_pending
        if private == "?":
            if final in "hl" and 7 in numbers:
                self.autowrap = final == "h"
            return b""
        if final == "A":
            self.row = max(0, self.row - n)
        elif final == "B":
            self.row = min(self.rows - 1, self.row + n)
        elif final == "C":
            self.col = min(self.cols - 1, self.col + n)
        elif final == "D":
            self.col = max(0, self.col - n)
        elif final == "G":
            self.col = min(self.cols - 1, n - 1)
        elif final in "Hf":
            row = numbers[0] if numbers and numbers[0] else 1
            col = numbers[1] if len(numbers) > 1 and numbers[1] else 1
            self.row, self.col = min(self.rows, row) - 1, min(self.cols, col) - 1
        elif final == "J":
            self._erase_display(numbers[0] if numbers else 0)
        elif final == "K":
            self._erase_line(numbers[0] if numbers else 0)
        elif final == "n" and numbers == [6]:
            return f"\x1b[{self.row + 1};{self.col + 1}R".encode()
        return b""

    def _erase_line(self, mode: int) -> None:
        cells = self.grid[self.row]
        if mode != 1:
            self.wrapped[self.row] = False
        span = range(self.col, self.cols) if mode == 0 else range(self.col + 1) if mode == 1 else range(self.cols)
        for col in span:
            cells[col] = " "

    def _erase_display(self, mode: int) -> None:
        if mode == 0:
            self._erase_line(0)
            rows = range(self.row + 1, self.rows)
        elif mode == 1:
            self._erase_line(1)
            rows = range(self.row)
        else:
            rows = range(self.rows)
        for row in rows:
            self.grid[row] = [" "] * self.cols
            self.wrapped[row] = False
