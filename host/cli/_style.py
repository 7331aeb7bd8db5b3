"""Colour for people on a terminal, off for pipes, files, ``TERM=dumb`` and ``NO_COLOR``
(https://no-color.org: any non-empty value). Pure apart from :func:`style_for`, which asks the
stream whether it is a terminal."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol


class _Stream(Protocol):
    def isatty(self) -> bool: ...


_CODES = {
    "bold": "1",
    "dim": "2",
    "italic": "3",
    "underline": "4",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
}


@dataclass(frozen=True, slots=True)
class Style:
    """SGR styling when ``enabled``; every method returns its text unchanged otherwise."""

    enabled: bool

    def apply(self, text: str, *names: str) -> str:
        """``text`` in the named styles (``bold``, ``dim``, ``italic``, ``underline``, colours)."""
        if not self.enabled or not names or not text:
            return text
        codes = ";".join(_CODES[name] for name in names)
        return f"\x1b[{codes}m{text}\x1b[0m"

    def bold(self, text: str) -> str:
        return self.apply(text, "bold")

    def dim(self, text: str) -> str:
        return self.apply(text, "dim")

    def red(self, text: str) -> str:
        return self.apply(text, "red")

    def yellow(self, text: str) -> str:
        return self.apply(text, "yellow")

    def cyan(self, text: str) -> str:
        return self.apply(text, "cyan")

    def green(self, text: str) -> str:
        return self.apply(text, "green")


PLAIN = Style(False)


def colour_wanted(environ: Mapping[str, str]) -> bool:
    """Whether the environment allows colour: no non-empty ``NO_COLOR`` and ``TERM`` not ``dumb``."""
    return not environ.get("NO_COLOR") and environ.get("TERM") != "dumb"


def style_for(stream: _Stream, environ: Mapping[str, str]) -> Style:
    """Colour when ``stream`` is a terminal and the environment allows it."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream
        tty = False
    return Style(tty and colour_wanted(environ))
