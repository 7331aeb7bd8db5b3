"""Markdown as a terminal shows it (``turnlog show``): headings, emphasis, inline code, fenced code,
lists, quotes, links and rules become styled lines. Pure. Without colour the text is returned as
written — Markdown source is already the plain-text form — so pipes and files get it unchanged.
"""

from __future__ import annotations

import re

from ._style import Style

_HEADING = re.compile(r"(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"\s*(```|~~~)")
_BULLET = re.compile(r"(\s*)[-*+]\s+(.*)")
_NUMBERED = re.compile(r"(\s*)([0-9]+[.)])\s+(.*)")
_QUOTE = re.compile(r"\s*>\s?(.*)")
_RULE = re.compile(r"\s*(?:-{3,}|\*{3,}|_{3,})\s*$")
_CODE = re.compile(r"`([^`\n]+)`")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_ITALIC = re.compile(
    r"(?<![*\w])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![*\w])|(?<![_\w])_(?=\S)([^_\n]+?)(?<=\S)_(?![_\w])"
)
_LINK = re.compile(r"\[([^\]\n]+)\]\(([^)\s]+)\)")


def inline(text: str, style: Style) -> str:
    """Emphasis, inline code and links within one line. Code spans are styled first and kept
    out of the other rules."""
    pieces = _CODE.split(text)
    out = []
    for i, piece in enumerate(pieces):
        if i % 2:
            out.append(style.cyan(piece))
            continue
        piece = _LINK.sub(lambda m: f"{style.apply(m[1], 'underline')} ({style.dim(m[2])})", piece)
        piece = _BOLD.sub(lambda m: style.bold(m[1] or m[2]), piece)
        piece = _ITALIC.sub(lambda m: style.apply(m[1] or m[2], "italic"), piece)
        out.append(piece)
    return "".join(out)


def render(text: str, style: Style) -> list[str]:
    """The lines of Markdown ``text`` styled for a terminal (unchanged without colour)."""
    lines = text.split("\n")
    if not style.enabled:
        return lines
    out: list[str] = []
    fenced = False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            out.append(style.dim("│ ") + line)
        elif m := _HEADING.match(line):
            names = ("bold", "underline") if len(m[1]) == 1 else ("bold",)
            out.append(style.apply(inline(m[2], style), *names))
        elif _RULE.match(line):
            out.append(style.dim("─" * 40))
        elif m := _BULLET.match(line):
            out.append(f"{m[1]}• {inline(m[2], style)}")
        elif m := _NUMBERED.match(line):
            out.append(f"{m[1]}{m[2]} {inline(m[3], style)}")
        elif m := _QUOTE.match(line):
            out.append(style.dim("│ ") + style.apply(inline(m[1], style), "italic"))
        else:
            out.append(inline(line, style))
    return out
