"""The package's shape: its import graph is one way and every folder is a floor.

Lint and types (``ruff check .``, ``mypy``) are CI steps of their own (README, ``.ci/run``),
not tests every developer repeats.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _imports(package: Path) -> dict[str, set[str]]:
    """Each module of the package -> the package's modules it imports at run time (at the
    top or inside a function; imports under ``if TYPE_CHECKING:`` are for types only)."""
    names = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
                       and "TYPE_CHECKING" in ast.unparse(block.test)
                       for node in ast.walk(block)}
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                for alias in node.names:
                    found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in names
                              else base)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
        graph[name] = {m for m in found if m in names and m != name}
    return graph


def test_the_import_graph_is_one_way() -> None:
    """No module imports another that imports it back, directly or round a longer loop."""
    graph = _imports(ROOT / "agent_kernel")
    loops = []
    for start in graph:
        seen, todo = set(), list(graph[start])
        while todo:
            module = todo.pop()
            if module == start:
                loops.append(start)
                break
            if module not in seen:
                seen.add(module)
                todo.extend(graph.get(module, ()))
    assert not loops, f"modules on an import loop: {sorted(loops)}"
    # the walk sees imports
    assert "agent_kernel.engine.models.demo" in graph["agent_kernel.engine.models.demo_team"]


FLOORS = (("core",), ("guards",), ("engine",), ("memory", "triggers"), ("tools",), ("team",),
          ("views",), ("app",), ("notebook", "cli"), ("__init__", "__main__"))
"""The package's folders from the bottom up (docs/architecture.md): a module imports only
from its own folder and the floors below; two rooms of one floor import neither."""


def upward_imports(package: Path) -> list[str]:
    """Every import (at the top, in a function or under TYPE_CHECKING) of a module in a
    higher floor, or in another room of the same floor, as ``module:line -> module``."""
    rank = {room: level for level, rooms in enumerate(FLOORS) for room in rooms}
    names = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def room(module: str) -> str:
        return module.split(".")[1] if "." in module else "__init__"

    found = []
    for name, path in names.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in names else base
                           for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            for target in targets:
                if target not in names or room(target) == room(name):
                    continue
                if rank[room(target)] >= rank[room(name)]:
                    found.append(f"{name}:{node.lineno} -> {target}")
    return sorted(found)


def test_every_folder_is_a_floor() -> None:
    package = ROOT / "agent_kernel"
    rooms = {p.name.removesuffix(".py") for p in package.iterdir()
             if p.suffix == ".py" or (p / "__init__.py").exists()}
    assert rooms == {room for floor in FLOORS for room in floor}, "a room no floor names"
    assert upward_imports(package) == []


def test_the_floor_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The same check on a small package whose core reaches into the notebook, lazily and
    for types only: both are found."""
    package = tmp_path / "agent_kernel"
    for folder in ("core", "notebook"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "notebook" / "magics.py").write_text("X = 1\n")
    (package / "core" / "events.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from agent_kernel.notebook.magics import X\n"
        "def later():\n    from ..notebook import magics\n")
    (package / "core" / "fine.py").write_text("from . import events\n")
    assert upward_imports(package) == ["agent_kernel.core.events:3 -> agent_kernel.notebook.magics",
                                       "agent_kernel.core.events:5 -> agent_kernel.notebook.magics"]
