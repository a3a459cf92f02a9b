"""The package's shape: its import graph is one way and every folder is a floor.

Lint and types (``ruff check .``, ``mypy``) are CI steps of their own (README, ``.ci/run``),
not tests every developer repeats.
"""

from __future__ import annotations

from pathlib import Path

from import_graph import graph, imports, on_a_loop

ROOT = Path(__file__).resolve().parent.parent


def test_the_import_graph_is_one_way() -> None:
    """No module imports another that imports it back, directly or round a longer loop
    (imports for types only are left out here; the floors below count them)."""
    edges = [edge for edge in imports(ROOT / "agent_kernel") if not edge.typing_only]
    assert on_a_loop(edges) == [], "modules on an import loop"
    # the walk sees imports
    assert "agent_kernel.engine.models.demo" in graph(edges)["agent_kernel.engine.models.demo_team"]


FLOORS = (("core",), ("guards",), ("engine",), ("memory", "triggers", "organiser", "channels"),
          ("tools",),
          ("team",), ("views",), ("app",), ("notebook", "cli"), ("__init__", "__main__"))
"""The package's folders from the bottom up (docs/architecture.md): a module imports only
from its own folder and the floors below; two rooms of one floor import neither."""


def upward_imports(package: Path) -> list[str]:
    """Every import (at the top, in a function or under TYPE_CHECKING) of a module in a
    higher floor, or in another room of the same floor, as ``module:line -> module``."""
    rank = {room: level for level, rooms in enumerate(FLOORS) for room in rooms}

    def room(module: str) -> str:
        return module.split(".")[1] if "." in module else "__init__"

    return sorted(f"{edge.module}:{edge.line} -> {edge.target}"
                  for edge in imports(package) if room(edge.target) != room(edge.module)
                  and rank[room(edge.target)] >= rank[room(edge.module)])


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
