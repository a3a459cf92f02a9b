"""The package's imports as data, for the tests that hold its shape (tests/test_code_checks.py,
tests/team/test_task_board.py): one walk of the source, every import found, relative ones
resolved, each marked when it stands under ``if TYPE_CHECKING:``."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Import:
    """``module`` imports ``target`` (both modules of the package) at ``line``."""

    module: str
    line: int
    target: str
    typing_only: bool


def modules(package: Path) -> dict[str, Path]:
    """Each module of the package by dotted name (a package by its folder's name)."""
    names = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imports(package: Path) -> list[Import]:
    """Every import of one module of the package by another: at the top, inside a
    function, or under ``if TYPE_CHECKING:``."""
    names = modules(package)
    found = []
    for name, path in names.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
                       and "TYPE_CHECKING" in ast.unparse(block.test)
                       for node in ast.walk(block)}
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in names else base
                           for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            found += [Import(name, node.lineno, target, id(node) in typing_only)
                      for target in targets if target in names and target != name]
    return found


def graph(edges: list[Import]) -> dict[str, set[str]]:
    """Module -> the modules it imports."""
    result: dict[str, set[str]] = {}
    for edge in edges:
        result.setdefault(edge.module, set()).add(edge.target)
    return result


def on_a_loop(edges: list[Import]) -> list[str]:
    """The modules that import themselves back, directly or round a longer loop."""
    walk = graph(edges)
    loops = []
    for start in walk:
        seen, todo = set(), list(walk[start])
        while todo:
            module = todo.pop()
            if module == start:
                loops.append(start)
                break
            if module not in seen:
                seen.add(module)
                todo.extend(walk.get(module, ()))
    return sorted(loops)
