"""The layers of ``host`` import downwards only, read from the source with ``ast``.

``cli`` → ``web`` → ``rpc`` → ``runtime`` → ``models`` → the base module ``_process``; ``testing``
uses ``runtime`` and ``models``; nothing imports ``cli`` but ``__main__``, nothing imports
``testing``, and no module inside ``host`` imports the ``host`` package itself (its
``__init__`` imports nothing, so a command pays only for the layers it uses). Every import counts, deferred ones inside functions included, and
no two modules may import each other through any chain.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import host

ROOT = Path(host.__file__).parent

# What each layer may import (besides itself). The package's __init__ is "facade".
ALLOWED: dict[str, set[str]] = {
    "base": set(),
    "models": {"base"},
    "runtime": {"models", "base"},
    "rpc": {"runtime", "models", "base"},
    "web": {"rpc", "runtime", "models", "base"},
    "cli": {"web", "rpc", "runtime", "models", "base"},
    "testing": {"runtime", "models", "base"},
    "main": {"cli"},
    "facade": set(),
}
FOLDERS = ("models", "runtime", "rpc", "web", "cli")


def module_name(path: Path) -> str:
    parts = ["host", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "facade"
    if parts[1] in FOLDERS:
        return parts[1]
    return {"testing": "testing", "__main__": "main"}.get(parts[1], "base")


def imports(module: str) -> Iterator[tuple[str, int]]:
    """The host modules ``module`` imports, each with its line, resolved to the deepest module
    that exists (``from host.models import openai`` is ``host.models.openai``)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names
            ]
        else:
            continue
        for target in targets:
            if target == "host" or target.startswith("host."):
                while target not in MODULES:
                    target = target.rpartition(".")[0]
                yield target, node.lineno


def test_the_module_table_covers_every_layer() -> None:
    assert {layer(m) for m in MODULES} >= {
        "facade",
        "base",
        "models",
        "runtime",
        "rpc",
        "web",
        "cli",
        "testing",
        "main",
    }


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_flow_downwards(module: str) -> None:
    own = layer(module)
    for target, line in imports(module):
        other = layer(target)
        if target == module:
            continue
        assert other != "facade", (
            f"{module}:{line} imports the host package itself; import the layer's module"
        )
        assert other == own or other in ALLOWED[own], (
            f"{module}:{line} ({own}) imports {target} ({other}), upwards"
        )


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``edges`` as the nodes along it (first repeated last), or ``None``."""
    done: set[str] = set()

    def visit(node: str, trail: list[str]) -> list[str] | None:
        if node in trail:
            return [*trail[trail.index(node) :], node]
        if node in done:
            return None
        for target in sorted(edges.get(node, ())):
            cycle = visit(target, [*trail, node])
            if cycle is not None:
                return cycle
        done.add(node)
        return None

    for start in sorted(edges):
        cycle = visit(start, [])
        if cycle is not None:
            return cycle
    return None


def test_the_cycle_finder_finds_one() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_import_cycles() -> None:
    graph = {module: {target for target, _ in imports(module) if target != module} for module in MODULES}
    folders: dict[str, set[str]] = {}
    for module, targets in graph.items():
        folders.setdefault(layer(module), set()).update(layer(t) for t in targets if layer(t) != layer(module))
    assert find_cycle(folders) is None, f"layers import each other: {find_cycle(folders)}"
    assert find_cycle(graph) is None, f"modules import each other: {find_cycle(graph)}"
