"""The seams stay typed: bare ``Any`` is under 3 % of the package's annotations, and no
service is looked up by a string key (docs/architecture.md, "Typed seams")."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "agent_kernel"
MOST_ANY = 0.03


def annotations(tree: ast.AST) -> list[ast.expr]:
    """Every annotation the share counts: each parameter's (``*args`` and ``**kwargs``
    too, ``self`` has none), each return's, and each annotated assignment's."""
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg,
                        args.kwarg]:
                if arg is not None and arg.annotation is not None:
                    found.append(arg.annotation)
            if node.returns is not None:
                found.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
    return found


def is_bare_any(annotation: ast.expr) -> bool:
    """``Any`` on its own (``dict[str, Any]`` is a JSON object's type, not bare)."""
    return ast.unparse(annotation).strip("'\"") in ("Any", "typing.Any")


def any_share(package: Path) -> tuple[int, int]:
    """(bare ``Any`` annotations, all annotations) in the package's modules."""
    bare = total = 0
    for path in sorted(package.rglob("*.py")):
        found = annotations(ast.parse(path.read_text(encoding="utf-8")))
        total += len(found)
        bare += sum(is_bare_any(a) for a in found)
    return bare, total


def test_bare_any_is_under_three_percent_of_annotations() -> None:
    bare, total = any_share(PACKAGE)
    assert total > 3000  # the walk sees the package
    assert bare / total < MOST_ANY, (
        f"{bare} of {total} annotations are bare Any ({bare / total:.1%}); type the new ones "
        "(a Protocol, object, a TypedDict)")


def test_the_share_counts_what_it_says(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "from typing import Any\n"
        "def f(a: Any, b: int, *args: Any, **kw: dict[str, Any]) -> Any: ...\n"
        "x: Any = 1\ny: 'Any' = 2\nz: list[Any] = []\n")
    assert any_share(tmp_path) == (5, 8)


def test_no_service_is_looked_up_by_a_string_key() -> None:
    keyed = re.compile(r"services\s*(\[|\.get\(|\.pop\(|\.setdefault\()")
    found = [f"{path.relative_to(ROOT)}:{number}"
             for path in sorted(PACKAGE.rglob("*.py"))
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if keyed.search(line)]
    assert found == []


MOST_DICT_ANY = 173
"""Lines of the package that spell ``dict[str, Any]`` (359 before issue 23's typed
messages; docs/architecture.md, "Typed seams"): a new JSON shape gets a TypedDict or
a model, so the count may fall but not rise."""
MOST_JSON_OBJECT = 99
"""Lines that name ``JsonObject``, the alias for free JSON only: capped too, so the
count above cannot fall by renaming (99 since ``engine/tool_schema.py`` left the registry
with the schema code: its import is the one line more)."""


def lines_with(package: Path, text: str) -> list[str]:
    """``path:line`` of each line of the package's modules that contains ``text``."""
    return [f"{path.relative_to(package.parent)}:{number}"
            for path in sorted(package.rglob("*.py"))
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if text in line]


def test_dict_str_any_does_not_creep_back() -> None:
    found = lines_with(PACKAGE, "dict[str, Any]")
    assert len(found) > 50  # the walk sees the package
    assert len(found) <= MOST_DICT_ANY, (
        f"{len(found)} lines spell dict[str, Any] (at most {MOST_DICT_ANY}): give the new "
        "shape a TypedDict, a dataclass or a pydantic model")


def test_json_object_stays_for_free_json() -> None:
    found = [f for f in lines_with(PACKAGE, "JsonObject")
             if not f.startswith("agent_kernel/core/json_types.py")]
    assert len(found) <= MOST_JSON_OBJECT, (
        f"{len(found)} lines name JsonObject (at most {MOST_JSON_OBJECT}); it is for JSON "
        "whose keys no type knows, not a new name for dict[str, Any]")


def test_the_counts_count_lines(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "m.py").write_text(
        "x: dict[str, Any] = {}\ny: dict[str, int] = {}\ndef f(a: dict[str, Any]) -> None: ...\n")
    (package / "notes.txt").write_text("dict[str, Any]\n")
    assert lines_with(package, "dict[str, Any]") == ["pkg/m.py:1", "pkg/m.py:3"]
