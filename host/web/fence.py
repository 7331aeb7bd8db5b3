"""The fence and the credentials of ``turnlog web``, as pure functions over request headers
(web §3, web §4.2, web §4.3).

Every HTTP request and every WebSocket handshake passes :func:`check_fence` before anything else;
routes that need a credential then pass :func:`check_credential`. Both return ``None`` to let the
request through, or the :class:`Refusal` to answer. Nothing here does I/O or reads a clock: the
headers come in as the ASGI scope's raw ``(name, value)`` byte pairs, so a repeated header is seen
as repeated instead of being silently merged.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterable, Sequence
from typing import Final

import msgspec

__all__ = [
    "AUTH_BODY_LIMIT",
    "BIND_ADDRESSES",
    "AuthAnswer",
    "Binding",
    "Refusal",
    "allowed_authorities",
    "auth_cookie",
    "check_auth_post",
    "check_credential",
    "check_fence",
    "cookie_name",
    "has_credential",
    "refusal_line",
    "security_headers",
]

RawHeaders = Iterable[tuple[bytes, bytes]]

BIND_ADDRESSES: Final = ("127.0.0.1", "::1")
"""The addresses ``turnlog web`` binds (``--host localhost`` binds ``127.0.0.1``), web §2."""

AUTH_BODY_LIMIT: Final = 1024
"""The largest ``POST /auth`` body accepted, in bytes (web §3)."""

_SAFE_FETCH_SITES: Final = frozenset({"same-origin", "none"})


class Refusal(msgspec.Struct, frozen=True):
    """A request the fence turns away: the HTTP ``status``, the ``text/plain`` ``body`` and the
    ``rule`` that the stderr line names (:func:`refusal_line`)."""

    status: int
    body: str
    rule: str


UNEXPECTED_HOST: Final = Refusal(403, "forbidden: unexpected Host header", "unexpected Host header")
CROSS_ORIGIN: Final = Refusal(403, "forbidden: cross-origin request", "cross-origin request")
CROSS_SITE: Final = Refusal(403, "forbidden: cross-site request", "cross-site request")
UNAUTHORIZED: Final = Refusal(
    401, "unauthorized: open the link printed by turnlog web", "no valid credential"
)


class Binding(msgspec.Struct, frozen=True):
    """The bound address (one of :data:`BIND_ADDRESSES`) and the real bound port.

    Raises ``ValueError`` for any other address or a port outside 1..65535 (port 0 must already
    have been resolved to the port the server got).
    """

    address: str
    port: int

    def __post_init__(self) -> None:
        if self.address not in BIND_ADDRESSES:
            raise ValueError(f"turnlog web binds 127.0.0.1 or ::1, not {self.address!r}")
        if type(self.port) is not int or not 1 <= self.port <= 65535:
            raise ValueError(f"bound port must be 1..65535, not {self.port!r}")

    @property
    def address_literal(self) -> str:
        """The address as a URL writes it: ``127.0.0.1``, or ``[::1]`` in brackets."""
        return "[::1]" if self.address == "::1" else self.address

    @property
    def authority(self) -> str:
        """``<address literal>:<port>``, the ``Host`` value of the page's own URL."""
        return f"{self.address_literal}:{self.port}"


def allowed_authorities(binding: Binding) -> frozenset[str]:
    """The ``Host`` values a request may carry, lower-case (web §4.2 rule 1):
    ``127.0.0.1:<port>`` and ``localhost:<port>`` when bound to ``127.0.0.1``, ``[::1]:<port>`` and
    ``localhost:<port>`` when bound to ``::1``. On port 80 the bare names count too, because a
    browser leaves the default port out of ``Host``."""
    names = (binding.address_literal, "localhost")
    with_port = {f"{name}:{binding.port}" for name in names}
    return frozenset(with_port | set(names) if binding.port == 80 else with_port)


def _values(headers: RawHeaders, name: bytes) -> list[str]:
    # ASGI servers pass header names lower-cased; values are bytes, read as latin-1 so that any
    # byte sequence decodes and compares as sent.
    return [value.decode("latin-1") for key, value in headers if key.lower() == name]


def _single(values: Sequence[str]) -> str | None:
    """The value of a header that must appear at most once; a repeated one counts as invalid."""
    return values[0] if len(values) == 1 else None


_ASCII_LOWER: Final = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}


def _ascii_lower(text: str) -> str:
    # Hostnames compare ASCII-case-insensitively (web §4.2): only A-Z fold, never another letter.
    return text.translate(_ASCII_LOWER)


def check_fence(headers: RawHeaders, binding: Binding, *, require_origin: bool = False) -> Refusal | None:
    """Rules 1-3 of web §4.2, in order; the first that fails answers.

    1. ``Host`` must be one of :func:`allowed_authorities` (exactly one ``Host`` header).
    2. ``Origin``, when present, must equal ``http://`` + the ``Host`` value, ASCII-case-insensitively;
       ``null`` never matches. ``require_origin`` (``POST /auth``) makes a missing one fail too.
    3. ``Sec-Fetch-Site``, when present, must be ``same-origin`` or ``none``.
    """
    headers = list(headers)
    host = _single(_values(headers, b"host"))
    if host is None or _ascii_lower(host) not in allowed_authorities(binding):
        return UNEXPECTED_HOST
    origins = _values(headers, b"origin")
    if origins or require_origin:
        origin = _single(origins)
        if origin is None or _ascii_lower(origin) != "http://" + _ascii_lower(host):
            return CROSS_ORIGIN
    sites = _values(headers, b"sec-fetch-site")
    if sites and (_single(sites) not in _SAFE_FETCH_SITES):
        return CROSS_SITE
    return None


def cookie_name(port: int) -> str:
    """``turnlog-web-<port>``: the port keeps instances apart, since cookies ignore ports (web §4.3)."""
    return f"turnlog-web-{port}"


def auth_cookie(port: int, browser_key: str) -> str:
    """The ``set-cookie`` value that ``POST /auth`` answers with the right token (web §4.3): the
    browser key under :func:`cookie_name`, ``Path=/``, ``HttpOnly``, ``SameSite=Strict``, and no
    ``Expires``/``Max-Age``, so it lasts for the browser session."""
    return f"{cookie_name(port)}={browser_key}; Path=/; HttpOnly; SameSite=Strict"


def _equal(given: str, secret: str) -> bool:
    # compare_digest refuses non-ASCII str; header values may hold any byte, so compare bytes.
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), secret.encode("utf-8"))


def has_credential(headers: RawHeaders, *, port: int, browser_key: str, launch_token: str) -> bool:
    """True iff a ``turnlog-web-<port>`` cookie equals the browser key or the bearer of a single
    ``Authorization: Bearer <token>`` header equals the launch token (web §4.3), each compared
    with ``hmac.compare_digest``.

    Every cookie of that name is tried: a page on another local port can plant a cookie of the same
    name (cookies are not kept apart by port), which must not hide the real one.
    """
    headers = list(headers)
    name = cookie_name(port)
    for header in _values(headers, b"cookie"):
        for pair in header.split(";"):
            key, sep, value = pair.strip().partition("=")
            if sep and key == name and _equal(value.strip(), browser_key):
                return True
    authorization = _single(_values(headers, b"authorization"))
    if authorization is not None:
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() == "bearer" and _equal(token.strip(), launch_token):
            return True
    return False


def check_credential(
    headers: RawHeaders, *, port: int, browser_key: str, launch_token: str
) -> Refusal | None:
    """Rule 4 of web §4.2: ``None`` with a valid credential, else the 401 refusal."""
    if has_credential(headers, port=port, browser_key=browser_key, launch_token=launch_token):
        return None
    return UNAUTHORIZED


class AuthAnswer(msgspec.Struct, frozen=True):
    """What ``POST /auth`` answers: ``status`` 204 (sign in: set the cookie) or a refusal with a
    ``text/plain`` ``body``."""

    status: int
    body: str = ""

    @property
    def signed_in(self) -> bool:
        return self.status == 204


def check_auth_post(content_type: str | None, body: bytes, launch_token: str) -> AuthAnswer:
    """The ``POST /auth`` decision after the fence (web §3): a media type other than
    ``application/json`` is 415; a body over :data:`AUTH_BODY_LIMIT` bytes, or one that is not
    exactly ``{"token":<string>}``, is 400; a wrong token is 401; the launch token is 204."""
    media_type = (content_type or "").partition(";")[0].strip().lower()
    if media_type != "application/json":
        return AuthAnswer(415, "unsupported media type: send application/json")
    bad_body = AuthAnswer(400, 'bad request: send {"token":<string>}')
    if len(body) > AUTH_BODY_LIMIT:
        return bad_body
    try:
        value = json.loads(body.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError and JSONDecodeError are both ValueErrors
        return bad_body
    if not isinstance(value, dict) or set(value) != {"token"} or not isinstance(value["token"], str):
        return bad_body
    if not _equal(value["token"], launch_token):
        return AuthAnswer(401, UNAUTHORIZED.body)
    return AuthAnswer(204)


def security_headers(host: str, binding: Binding, *, static: bool = False) -> list[tuple[str, str]]:
    """The headers every response carries (web §3), names lower-case, in a fixed order.

    The CSP's ``connect-src`` names ``ws://<Host>``. ``host`` is the request's ``Host`` value; one
    that the fence would refuse is replaced by the bound address, so no header value ever comes
    from an unchecked request. ``static`` selects ``cache-control: no-cache`` (static files) over
    ``no-store``. No ``server`` header is produced (the server must not add one either).
    """
    authority = host if _ascii_lower(host) in allowed_authorities(binding) else binding.authority
    csp = (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src 'self' ws://{authority}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    return [
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
        ("cross-origin-opener-policy", "same-origin"),
        ("cross-origin-resource-policy", "same-origin"),
        ("cache-control", "no-cache" if static else "no-store"),
        ("content-security-policy", csp),
    ]


def refusal_line(method: str, path: str, refusal: Refusal) -> str:
    """The stderr line of a refusal (web §4.2): ``turnlog web: refused <METHOD> <path>: <rule>``.

    ``path`` is the request path without its query; control characters and non-ASCII in it are
    escaped so that a hostile path cannot forge or split log lines.
    """
    return f"turnlog web: refused {_printable(method)} {_printable(path)}: {refusal.rule}"


def _printable(text: str) -> str:
    if text.isascii() and text.isprintable():
        return text
    return "".join(c if c.isascii() and c.isprintable() else ascii(c)[1:-1] for c in text)
