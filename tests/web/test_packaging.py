"""The page as shipped (web §1, web §4.5, web §8): every file that index.html and the modules load
is package data, no static file refers to another origin, and the code keeps to what the CSP and
the page hardening allow."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.web.conftest import STATIC

REPO = Path(__file__).resolve().parents[2]
MODULES = ["app.js", "rpc.js", "chat.js", "log.js", "render.js", "format.js"]
EXPECTED = {"index.html", "app.css", "favicon.svg", *MODULES}

# What a static file may name as a URL: its own origin's paths only. The one absolute URL allowed is
# the SVG namespace, which names a vocabulary and is never fetched.
SVG_NAMESPACE = 'xmlns="http://www.w3.org/2000/svg"'


def static_files() -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in STATIC.iterdir()}


def without_comments(name: str, text: str) -> str:
    if name.endswith((".html", ".svg")):
        return re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL)
    if name.endswith(".js"):
        # Line comments start at a line's beginning or after whitespace; `ws://` and `\/\/` are code.
        text = re.sub(r"(^|\s)//[^\n]*", r"\1", text)
    return text


def html_references(text: str) -> list[str]:
    return re.findall(r"""<(?:script|link|img)\b[^>]*?\b(?:src|href)="([^"]+)\"""", text)


def module_imports(text: str) -> list[str]:
    static = re.findall(r"""^\s*import\b[^'";]*?(?:from\s*)?['"]([^'"]+)['"]""", text, flags=re.MULTILINE)
    static += re.findall(r"""^\s*export\s[^'";]*?from\s*['"]([^'"]+)['"]""", text, flags=re.MULTILINE)
    dynamic = re.findall(r"""\bimport\(\s*['"]([^'"]+)['"]\s*\)""", text)
    return static + dynamic


def test_the_static_directory_holds_the_page_and_nothing_nested() -> None:
    assert {path.name for path in STATIC.iterdir()} == EXPECTED
    assert all(path.is_file() for path in STATIC.iterdir())  # "static/*" package data covers them all
    assert (STATIC.parent / "__init__.py").is_file()


def test_everything_index_html_and_the_modules_load_exists() -> None:
    files = static_files()
    references = html_references(files["index.html"])
    assert sorted(references) == ["/favicon.svg", "/static/app.css", "/static/app.js"]
    for reference in references:
        name = reference.removeprefix("/static/").removeprefix("/")
        assert name in files, reference
    seen: set[str] = set()
    todo = ["app.js"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for specifier in module_imports(files[name]):
            assert specifier.startswith("./") and specifier.endswith(".js"), (name, specifier)
            target = specifier.removeprefix("./")
            assert target in files, (name, specifier)
            todo.append(target)
    assert seen == set(MODULES)


def test_no_static_file_refers_to_another_origin() -> None:
    for name, text in static_files().items():
        code = without_comments(name, text).replace(SVG_NAMESPACE, "")
        assert not re.search(r"https?://", code, flags=re.IGNORECASE), name
        assert not re.search(r"""(?:src|href|action)\s*=\s*["']?\s*//""", code, flags=re.IGNORECASE), name
        assert not re.search(r"""url\(\s*["']?\s*(?:[a-z]+:)?//""", code, flags=re.IGNORECASE), name
        assert not re.search(r"@import", code), name
        assert not re.search(r"""(?:from\s*|import\(\s*)['"](?!\./)""", code), name


def test_the_html_has_no_inline_script_style_or_handler() -> None:
    html = static_files()["index.html"]
    assert re.findall(r"<script\b[^>]*>(.*?)</script>", html, flags=re.DOTALL) == [""]
    assert "<style" not in html
    assert not re.search(r"\sstyle\s*=", html, flags=re.IGNORECASE)
    assert not re.search(r"\son[a-z]+\s*=", html, flags=re.IGNORECASE)


@pytest.mark.parametrize("name", MODULES)
def test_untrusted_text_never_becomes_markup(name: str) -> None:
    code = without_comments(name, (STATIC / name).read_text(encoding="utf-8"))
    for banned in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
        "DOMParser",
        "createContextualFragment",
        "cssText",
        "setAttribute('style'",
        'setAttribute("style"',
        "javascript:",
    ):
        assert banned not in code, (name, banned)


def test_the_favicon_adapts_to_dark_mode() -> None:
    svg = static_files()["favicon.svg"]
    assert "@media (prefers-color-scheme: dark)" in svg
    css = static_files()["app.css"]
    assert "@media (prefers-color-scheme: dark)" in css
    assert "@media (prefers-reduced-motion: reduce)" in css
    assert ":focus-visible" in css


@pytest.mark.slow
def test_the_built_wheel_ships_the_page(tmp_path: Path) -> None:
    # Built from a copy so that the build writes nothing into the working tree.
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, source / name)
    (source / "fixtures" / "deepseek-harness").mkdir(parents=True)
    shutil.copy2(
        REPO / "fixtures" / "deepseek-harness" / "LICENSE",
        source / "fixtures" / "deepseek-harness" / "LICENSE",
    )
    for package in ("eventlog", "schedule", "timecontext", "host"):
        shutil.copytree(REPO / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"), str(source)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = (tmp_path / "dist").glob("turnlog-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in EXPECTED:
        assert f"host/web/static/{name}" in names
