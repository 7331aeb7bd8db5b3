"""The fence, the credentials and the response headers of ``turnlog web`` (web §3, web §4.2, web §4.3),
as pure functions over raw ASGI headers."""

from __future__ import annotations

import itertools
from http.cookies import SimpleCookie

import pytest
from hypothesis import given
from hypothesis import strategies as st

from host.web.fence import (
    AUTH_BODY_LIMIT,
    Binding,
    Refusal,
    allowed_authorities,
    auth_cookie,
    check_auth_post,
    check_credential,
    check_fence,
    cookie_name,
    has_credential,
    refusal_line,
    security_headers,
)

V4 = Binding("127.0.0.1", 8357)
V6 = Binding("::1", 8357)
KEY = "k" * 43
TOKEN = "t" * 43

HOST_403 = (403, "forbidden: unexpected Host header")
ORIGIN_403 = (403, "forbidden: cross-origin request")
SITE_403 = (403, "forbidden: cross-site request")
NO_CREDENTIAL = (401, "unauthorized: open the link printed by turnlog web")


def raw(*pairs: tuple[str, str]) -> list[tuple[bytes, bytes]]:
    """Headers as an ASGI scope carries them: lower-case names, byte values."""
    return [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in pairs]


def answer(refusal: Refusal | None) -> tuple[int, str] | None:
    return None if refusal is None else (refusal.status, refusal.body)


# --- rule 1: Host ----------------------------------------------------------------------------------


def test_allowed_authorities_per_bind_address() -> None:
    assert allowed_authorities(V4) == {"127.0.0.1:8357", "localhost:8357"}
    assert allowed_authorities(V6) == {"[::1]:8357", "localhost:8357"}
    # A browser leaves the default port out of Host.
    assert allowed_authorities(Binding("127.0.0.1", 80)) == {
        "127.0.0.1:80",
        "localhost:80",
        "127.0.0.1",
        "localhost",
    }


@pytest.mark.parametrize("address", ["localhost", "0.0.0.0", "::", "192.168.1.2", "[::1]"])
def test_binding_is_loopback_only(address: str) -> None:
    with pytest.raises(ValueError):
        Binding(address, 8357)


@pytest.mark.parametrize("port", [0, -1, 65536, True])
def test_binding_needs_the_real_port(port: int) -> None:
    with pytest.raises(ValueError):
        Binding("127.0.0.1", port)


@pytest.mark.parametrize(
    ("binding", "host"),
    [
        (V4, "127.0.0.1:8357"),
        (V4, "localhost:8357"),
        (V4, "LOCALHOST:8357"),
        (V4, "LocalHost:8357"),
        (V6, "[::1]:8357"),
        (V6, "localhost:8357"),
        (V6, "LOCALHOST:8357"),
    ],
)
def test_allowed_hosts(binding: Binding, host: str) -> None:
    assert check_fence(raw(("Host", host)), binding) is None


@pytest.mark.parametrize(
    ("binding", "host"),
    [
        (V4, "evil.example:8357"),
        (V4, "127.0.0.1:8358"),
        (V4, "localhost:1"),
        (V4, "127.0.0.1"),
        (V4, "localhost"),
        (V4, "127.0.0.1:08357"),
        (V4, "[::1]:8357"),
        (V4, "127.0.0.2:8357"),
        (V4, "localhost.:8357"),
        (V4, "sub.localhost:8357"),
        (V4, "localhost:8357 "),
        (V4, ""),
        (V4, "2130706433:8357"),
        (V6, "127.0.0.1:8357"),
        (V6, "[::1]:8358"),
        (V6, "[0:0:0:0:0:0:0:1]:8357"),
        (V6, "::1:8357"),
        (V6, "evil.example:8357"),
    ],
)
def test_refused_hosts(binding: Binding, host: str) -> None:
    assert answer(check_fence(raw(("Host", host)), binding)) == HOST_403


def test_host_must_be_present_once() -> None:
    assert answer(check_fence([], V4)) == HOST_403
    twice = raw(("Host", "127.0.0.1:8357"), ("Host", "127.0.0.1:8357"))
    assert answer(check_fence(twice, V4)) == HOST_403


def test_non_ascii_host_bytes_are_refused_not_folded() -> None:
    assert answer(check_fence([(b"host", b"l\xf6calhost:8357")], V4)) == HOST_403
    assert answer(check_fence([(b"host", b"LOCALHOST:8357\xa0")], V4)) == HOST_403


# --- rule 2: Origin and rule 3: Sec-Fetch-Site ------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("127.0.0.1:8357", "http://127.0.0.1:8357"),
        ("localhost:8357", "http://localhost:8357"),
        ("localhost:8357", "HTTP://LOCALHOST:8357"),
        ("LOCALHOST:8357", "http://localhost:8357"),
    ],
)
def test_matching_origin(host: str, origin: str) -> None:
    assert check_fence(raw(("Host", host), ("Origin", origin)), V4) is None


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("127.0.0.1:8357", "http://evil.example"),
        ("127.0.0.1:8357", "null"),
        ("127.0.0.1:8357", "NULL"),
        ("127.0.0.1:8357", ""),
        ("127.0.0.1:8357", "https://127.0.0.1:8357"),
        ("127.0.0.1:8357", "http://127.0.0.1:8358"),
        ("127.0.0.1:8357", "http://127.0.0.1"),
        ("127.0.0.1:8357", "http://localhost:8357"),  # the origin is http:// + this request's Host
        ("localhost:8357", "http://127.0.0.1:8357"),
        ("127.0.0.1:8357", "http://127.0.0.1:8357/"),
    ],
)
def test_mismatching_origin(host: str, origin: str) -> None:
    assert answer(check_fence(raw(("Host", host), ("Origin", origin)), V4)) == ORIGIN_403


def test_origin_on_ipv6() -> None:
    assert check_fence(raw(("Host", "[::1]:8357"), ("Origin", "http://[::1]:8357")), V6) is None
    refused = check_fence(raw(("Host", "[::1]:8357"), ("Origin", "http://127.0.0.1:8357")), V6)
    assert answer(refused) == ORIGIN_403


def test_repeated_origin_is_refused() -> None:
    headers = raw(("Host", "127.0.0.1:8357"), ("Origin", "http://127.0.0.1:8357"), ("Origin", "null"))
    assert answer(check_fence(headers, V4)) == ORIGIN_403


def test_auth_requires_an_origin() -> None:
    host = ("Host", "127.0.0.1:8357")
    assert answer(check_fence(raw(host), V4, require_origin=True)) == ORIGIN_403
    assert check_fence(raw(host, ("Origin", "http://127.0.0.1:8357")), V4, require_origin=True) is None
    assert check_fence(raw(host), V4) is None  # other routes do without one


@pytest.mark.parametrize("site", ["same-origin", "none"])
def test_safe_fetch_sites(site: str) -> None:
    assert check_fence(raw(("Host", "127.0.0.1:8357"), ("Sec-Fetch-Site", site)), V4) is None


@pytest.mark.parametrize("site", ["cross-site", "same-site", "", "Same-Origin", "same-origin, none"])
def test_unsafe_fetch_sites(site: str) -> None:
    headers = raw(("Host", "127.0.0.1:8357"), ("Sec-Fetch-Site", site))
    assert answer(check_fence(headers, V4)) == SITE_403


# Every combination, against the rules written out as literal sets for each binding.
HOSTS = [
    "127.0.0.1:8357",
    "localhost:8357",
    "Localhost:8357",
    "[::1]:8357",
    "evil.example:8357",
    "127.0.0.1:9",
]
ORIGINS = [
    None,
    "http://127.0.0.1:8357",
    "http://localhost:8357",
    "http://LOCALHOST:8357",
    "http://[::1]:8357",
    "null",
    "http://evil.example",
]
SITES = [None, "same-origin", "none", "same-site", "cross-site"]
ALLOWED = {
    V4: {"127.0.0.1:8357", "localhost:8357"},
    V6: {"[::1]:8357", "localhost:8357"},
}


@pytest.mark.parametrize("binding", [V4, V6], ids=["127.0.0.1", "::1"])
def test_every_combination_answers_with_the_first_failing_rule(binding: Binding) -> None:
    for host, origin, site in itertools.product(HOSTS, ORIGINS, SITES):
        headers = [("Host", host)]
        if origin is not None:
            headers.append(("Origin", origin))
        if site is not None:
            headers.append(("Sec-Fetch-Site", site))
        if host.lower() not in ALLOWED[binding]:
            expected: tuple[int, str] | None = HOST_403
        elif origin is not None and origin.lower() != f"http://{host.lower()}":
            expected = ORIGIN_403
        elif site is not None and site not in ("same-origin", "none"):
            expected = SITE_403
        else:
            expected = None
        assert answer(check_fence(raw(*headers), binding)) == expected, (host, origin, site)


@given(
    host=st.binary(max_size=40),
    origin=st.none() | st.binary(max_size=40),
    site=st.none() | st.binary(max_size=20),
)
def test_fence_never_admits_a_foreign_host(host: bytes, origin: bytes | None, site: bytes | None) -> None:
    headers = [(b"host", host)]
    if origin is not None:
        headers.append((b"origin", origin))
    if site is not None:
        headers.append((b"sec-fetch-site", site))
    refusal = check_fence(headers, V4)
    if refusal is None:
        assert host.lower() in (b"127.0.0.1:8357", b"localhost:8357")
        assert origin is None or origin.lower() == b"http://" + host.lower()
        assert site in (None, b"same-origin", b"none")
    else:
        assert refusal.status == 403


# --- rule 4: credentials ---------------------------------------------------------------------------


def credential(*pairs: tuple[str, str], port: int = 8357) -> tuple[int, str] | None:
    return answer(check_credential(raw(*pairs), port=port, browser_key=KEY, launch_token=TOKEN))


def test_cookie_name_carries_the_port() -> None:
    assert cookie_name(8357) == "turnlog-web-8357"


def test_the_browser_key_cookie_is_a_credential() -> None:
    assert credential(("Cookie", f"turnlog-web-8357={KEY}")) is None
    assert credential(("Cookie", f"other=1; turnlog-web-8357={KEY}; theme=dark")) is None
    # A cookie of the same name planted by a page on another local port does not hide the real one.
    assert credential(("Cookie", f"turnlog-web-8357=planted; turnlog-web-8357={KEY}")) is None
    assert credential(("Cookie", "a=1"), ("Cookie", f"turnlog-web-8357={KEY}")) is None


@pytest.mark.parametrize(
    "cookie",
    [
        "turnlog-web-8357=wrong",
        f"turnlog-web-8357={KEY}x",
        f"turnlog-web-8357={KEY[:-1]}",
        f"turnlog-web-8358={KEY}",
        f"turnlog-web={KEY}",
        f"TURNLOG-WEB-8357={KEY}",
        f"turnlog-web-8357={TOKEN}",  # the launch token is not a cookie value
        "turnlog-web-8357",
        "",
    ],
)
def test_wrong_cookies(cookie: str) -> None:
    assert credential(("Cookie", cookie)) == NO_CREDENTIAL


def test_the_launch_token_as_bearer_is_a_credential() -> None:
    assert credential(("Authorization", f"Bearer {TOKEN}")) is None
    assert credential(("Authorization", f"bearer {TOKEN}")) is None
    assert credential(("Cookie", "turnlog-web-8357=wrong"), ("Authorization", f"Bearer {TOKEN}")) is None


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer wrong",
        f"Bearer {KEY}",  # the browser key is not a bearer token
        f"Basic {TOKEN}",
        TOKEN,
        "Bearer",
        f"Bearer {TOKEN}{TOKEN}",
    ],
)
def test_wrong_bearers(authorization: str) -> None:
    assert credential(("Authorization", authorization)) == NO_CREDENTIAL


def test_no_credential_and_repeated_authorization() -> None:
    assert credential() == NO_CREDENTIAL
    twice = (("Authorization", f"Bearer {TOKEN}"), ("Authorization", f"Bearer {TOKEN}"))
    assert credential(*twice) == NO_CREDENTIAL


def test_non_ascii_credentials_are_refused_without_error() -> None:
    headers = [(b"cookie", b"turnlog-web-8357=\xff\xfe"), (b"authorization", b"Bearer \xe9")]
    assert not has_credential(headers, port=8357, browser_key=KEY, launch_token=TOKEN)


def test_the_cookie_of_another_port_is_not_a_credential_here() -> None:
    assert credential(("Cookie", f"turnlog-web-8357={KEY}"), port=9000) == NO_CREDENTIAL


# --- POST /auth ----------------------------------------------------------------------------------


def test_auth_post_answers() -> None:
    good = f'{{"token":"{TOKEN}"}}'.encode()
    assert check_auth_post("application/json", good, TOKEN).status == 204
    assert check_auth_post("application/json", good, TOKEN).signed_in
    assert check_auth_post("Application/JSON; charset=utf-8", good, TOKEN).status == 204
    wrong = check_auth_post("application/json", b'{"token":"nope"}', TOKEN)
    assert (wrong.status, wrong.body, wrong.signed_in) == (401, NO_CREDENTIAL[1], False)


@pytest.mark.parametrize(
    "content_type", [None, "", "text/plain", "application/x-www-form-urlencoded", "json"]
)
def test_auth_post_needs_json(content_type: str | None) -> None:
    assert check_auth_post(content_type, f'{{"token":"{TOKEN}"}}'.encode(), TOKEN).status == 415


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"[]",
        b'"token"',
        b'{"token":5}',
        b'{"token":null}',
        b"{}",
        b'{"token":"x","extra":1}',
        b'{"token":"\xff"}',
        b'{"token":"' + b"x" * AUTH_BODY_LIMIT + b'"}',
    ],
)
def test_auth_post_bad_bodies(body: bytes) -> None:
    assert check_auth_post("application/json", body, TOKEN).status == 400


def test_auth_body_limit_is_inclusive() -> None:
    body = b'{"token":"' + b"x" * (AUTH_BODY_LIMIT - 12) + b'"}'
    assert len(body) == AUTH_BODY_LIMIT
    assert check_auth_post("application/json", body, TOKEN).status == 401


# --- cookie and headers ----------------------------------------------------------------------------


def test_auth_cookie_is_a_strict_http_only_session_cookie() -> None:
    value = auth_cookie(8357, KEY)
    jar = SimpleCookie()
    jar.load(value)
    morsel = jar["turnlog-web-8357"]
    assert morsel.value == KEY
    assert morsel["path"] == "/"
    assert morsel["httponly"] is True
    assert morsel["samesite"] == "Strict"
    assert morsel["expires"] == "" and morsel["max-age"] == ""
    attributes = {part.strip().split("=")[0].lower() for part in value.split(";")[1:]}
    assert attributes == {"path", "httponly", "samesite"}


CSP_V4 = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self' ws://127.0.0.1:8357; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def test_security_headers() -> None:
    headers = dict(security_headers("127.0.0.1:8357", V4))
    assert headers == {
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
        "cross-origin-opener-policy": "same-origin",
        "cross-origin-resource-policy": "same-origin",
        "cache-control": "no-store",
        "content-security-policy": CSP_V4,
    }
    assert dict(security_headers("127.0.0.1:8357", V4, static=True))["cache-control"] == "no-cache"
    assert all(name == name.lower() for name, _ in security_headers("127.0.0.1:8357", V4))


def test_csp_names_the_request_host() -> None:
    csp = dict(security_headers("localhost:8357", V4))["content-security-policy"]
    assert "connect-src 'self' ws://localhost:8357;" in csp
    csp6 = dict(security_headers("[::1]:8357", V6))["content-security-policy"]
    assert "connect-src 'self' ws://[::1]:8357;" in csp6


@pytest.mark.parametrize("host", ["evil.example:8357", "127.0.0.1:8357; script-src *", ""])
def test_csp_never_copies_a_refused_host(host: str) -> None:
    assert dict(security_headers(host, V4))["content-security-policy"] == CSP_V4


def test_refusal_line() -> None:
    refusal = check_fence(raw(("Host", "evil.example:8357")), V4)
    assert refusal is not None
    assert refusal_line("GET", "/rpc", refusal) == "turnlog web: refused GET /rpc: unexpected Host header"
    line = refusal_line("GET", "/s/x\nturnlog web: forged", refusal)
    assert "\n" not in line and line.endswith(": unexpected Host header")
