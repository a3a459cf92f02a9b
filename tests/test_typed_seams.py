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
