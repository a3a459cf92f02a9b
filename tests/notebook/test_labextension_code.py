"""The extension's Python tokenizer (``labextension/src/code.ts``), run in node.

The approval card highlights ``run_python``'s code with it; these checks compile that
one module with the extension's own TypeScript and ask node how it classes a sample.
"""

from __future__ import annotations

import json
from pathlib import Path

from extension_node import compiled, in_node

SAMPLE = ("def f(x):\n    return x + 1  # one more\n%who\n"
          "s = 'a#b</pre><script>' + r\"\"\"x\ny\"\"\"\nprint(0x1F, 1.5e3)\n@dec\nclass A: pass")


def classes_of(text: str, tmp_path: Path) -> list[tuple[str | None, str]]:
    """The runs of one class node gives for ``text``: (class, text)."""
    module = compiled("code", tmp_path)
    classes = in_node(f"console.log(JSON.stringify(require({json.dumps(str(module))})"
                      f".pythonClasses({json.dumps(text)})))")
    assert len(classes) == len(text)
    runs: list[tuple[str | None, str]] = []
    for char, css in zip(text, classes, strict=True):
        name = css.removeprefix("akl-py-") if css else None
        if runs and runs[-1][0] == name:
            runs[-1] = (name, runs[-1][1] + char)
        else:
            runs.append((name, char))
    return runs


def test_the_tokenizer_classes_python(tmp_path: Path) -> None:
    runs = [(css, text) for css, text in classes_of(SAMPLE, tmp_path) if css]
    assert runs == [
        ("keyword", "def"), ("def", "f"), ("operator", ":"), ("keyword", "return"),
        ("operator", "+"), ("number", "1"), ("comment", "# one more"), ("meta", "%who"),
        ("operator", "="), ("string", "'a#b</pre><script>'"), ("operator", "+"),
        ("string", 'r"""x\ny"""'), ("builtin", "print"), ("number", "0x1F"),
        ("number", "1.5e3"), ("meta", "@dec"), ("keyword", "class"), ("def", "A"),
        ("operator", ":"), ("keyword", "pass")]
