"""JSON text, trimming and safe integers (spec schedule.md §2.1, §2.2, §11.5)."""

from __future__ import annotations

import json
import re
from typing import Any

MAX_SAFE = 2**53 - 1

JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)

_SURROGATE = re.compile("[\ud800-\udfff]")


def js_trim(s: str) -> str:
    """Strip exactly the ECMAScript whitespace set from both ends (not ``str.strip()``)."""
    return s.strip(JS_WHITESPACE)


def compact_json(value: Any) -> str:
    """Compact JSON text: no whitespace, raw non-ASCII, insertion order, lone surrogates escaped.

    Only ``"``, ``\\`` and U+0000–U+001F are escaped (lowercase ``\\u00xx``), plus each
    code point in U+D800–U+DFFF as a lowercase ``\\udxxx`` escape, so the text is always
    encodable as UTF-8.
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def safe_int(v: object) -> int | None:
    """``v`` as an ``int`` when it is a safe integer (§2.1), else ``None``.

    ``bool`` is never a safe integer; an integral float in range becomes its ``int``;
    NaN and infinities are not safe integers.
    """
    if type(v) is int:
        return v if -MAX_SAFE <= v <= MAX_SAFE else None
    if type(v) is float and v.is_integer() and -MAX_SAFE <= v <= MAX_SAFE:
        return int(v)
    return None
