"""Code and diffs in the run's HTML fallback: what an approval will run, highlighted.

An approval card must show exactly what runs. For ``run_python`` that is Python, so the
fallback draws it with Pygments (installed with IPython) token by token: each token's
text goes through :func:`~agent_kernel.views.safe_html.esc` inside a ``<span>`` whose
class says its kind, coloured from JupyterLab's editor theme variables. If the lexer
would change a single character (Pygments normalises line ends), the code is shown
escaped and plain instead: highlighting never alters what the person reads.

A ``diff`` note (``edit_cell``'s unified diff) is drawn line by line, added and removed
lines marked by class and by their ``+``/``-``, escaped likewise. A ``run_python``
result's image is drawn only from base64 that decodes to a PNG.
"""

from __future__ import annotations

import base64
import binascii
import re

from agent_kernel.views.safe_html import esc

CODE_TOOLS = {"run_python": "code"}
"""Tools whose argument is code to highlight: tool -> argument name."""

_CLASSES = (  # (Pygments token type name prefix, our class), first match wins
    ("Comment", "ak-py-comment"), ("Literal.String", "ak-py-string"),
    ("Literal.Number", "ak-py-number"), ("Keyword", "ak-py-keyword"),
    ("Name.Builtin", "ak-py-builtin"), ("Name.Function", "ak-py-def"),
    ("Name.Class", "ak-py-def"), ("Name.Decorator", "ak-py-meta"),
    ("Operator.Word", "ak-py-keyword"), ("Operator", "ak-py-operator"),
    ("Error", "ak-py-meta"),
)
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")

CODE_CSS = (
    ".agent-kernel-run pre.ak-code .ak-py-keyword{color:var(--jp-mirror-editor-keyword-color,"
    "#008000);font-weight:bold}"
    ".agent-kernel-run pre.ak-code .ak-py-string{color:var(--jp-mirror-editor-string-color,"
    "#ba2121)}"
    ".agent-kernel-run pre.ak-code .ak-py-comment{font-style:italic}"  # the theme's own
    # comment colour falls under 4.5:1 on the block's background
    ".agent-kernel-run pre.ak-code .ak-py-number{color:var(--jp-mirror-editor-number-color,"
    "#080)}"
    ".agent-kernel-run pre.ak-code .ak-py-builtin{color:var(--jp-mirror-editor-builtin-color,"
    "#008000)}"
    ".agent-kernel-run pre.ak-code .ak-py-def{color:var(--jp-mirror-editor-def-color,#00f)}"
    ".agent-kernel-run pre.ak-code .ak-py-operator{color:var(--jp-mirror-editor-operator-color,"
    "#a2f)}"
    ".agent-kernel-run pre.ak-code .ak-py-meta{color:var(--jp-mirror-editor-meta-color,#a2f)}"
    ".agent-kernel-run pre.ak-diff .ak-diff-add{background:var(--jp-success-color3,#e8f5e9);"
    "color:var(--jp-content-font-color1,inherit)}"
    ".agent-kernel-run pre.ak-diff .ak-diff-del{background:var(--jp-error-color3,#ffebee);"
    "color:var(--jp-content-font-color1,inherit)}"
    ".agent-kernel-run pre.ak-diff .ak-diff-hunk{color:var(--jp-ui-font-color2,#616161)}"
    ".agent-kernel-run pre.ak-diff span{display:block}"
    ".agent-kernel-run img.ak-figure{max-width:100%;height:auto;display:block;margin:4px 0}"
)
"""The classes' colours, added to the run's stylesheet."""


def _class_of(token_type: object) -> str:
    name = str(token_type).removeprefix("Token.")
    for prefix, css in _CLASSES:
        if name == prefix or name.startswith(prefix + "."):
            return css
    return ""


def python_html(code: str) -> str:
    """``code`` as a highlighted ``<pre>``; every character as given, escaped."""
    try:
        from pygments.lexers.python import PythonLexer  # type: ignore[import-untyped]
    except ImportError:  # no Pygments: plain, escaped
        return f"<pre class='ak-code'>{esc(code)}</pre>"
    lexer = PythonLexer(stripnl=False, ensurenl=False, stripall=False, tabsize=0)
    tokens = list(lexer.get_tokens(code))
    if "".join(text for _, text in tokens) != code:
        return f"<pre class='ak-code'>{esc(code)}</pre>"
    parts = []
    for token_type, text in tokens:
        css = _class_of(token_type)
        parts.append(f"<span class='{css}'>{esc(text)}</span>" if css else esc(text))
    return f"<pre class='ak-code'>{''.join(parts)}</pre>"


def diff_html(diff: str) -> str:
    """A unified diff, each line escaped and marked: added, removed, a hunk's header."""
    lines = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            css = "ak-diff-file"
        elif line.startswith("+"):
            css = "ak-diff-add"
        elif line.startswith("-"):
            css = "ak-diff-del"
        elif line.startswith("@@"):
            css = "ak-diff-hunk"
        else:
            css = "ak-diff-same"
        lines.append(f"<span class='{css}'>{esc(line) or ' '}</span>")
    return f"<pre class='ak-diff'>{''.join(lines)}</pre>"


def argument_html(tool: str | None, name: str, value: object) -> str | None:
    """The argument drawn as code when the tool's argument is code, else None."""
    if tool is not None and CODE_TOOLS.get(tool) == name and isinstance(value, str):
        return python_html(value)
    return None


def png_data(value: object) -> str | None:
    """``value`` if it is base64 of a PNG (the only image a result may draw), else None."""
    if not isinstance(value, str) or not _BASE64.fullmatch(value):
        return None
    try:
        head = base64.b64decode(value[:24], validate=True)
    except (binascii.Error, ValueError):
        return None
    return value if head.startswith(b"\x89PNG\r\n\x1a\n") else None


def python_result_html(result: dict[str, object]) -> str:
    """What ``run_python`` gave besides its streams: value, outputs, error's traceback."""
    parts: list[str] = []
    if isinstance(result.get("value"), str):
        parts.append(f"<div class='ak-muted'>value</div><pre>{esc(result['value'])}</pre>")
    outputs = result.get("outputs")
    for output in outputs if isinstance(outputs, list) else []:
        if not isinstance(output, dict):
            continue
        if output.get("mime") == "image/png":
            data = png_data(output.get("data"))
            size = f"{esc(output.get('width'))}×{esc(output.get('height'))}"
            if data is not None:
                parts.append(f"<img class='ak-figure' alt='figure, {size} PNG' "
                             f"src='data:image/png;base64,{data}'>")
            else:
                parts.append(f"<div class='ak-muted'>[image: {size} PNG]</div>")
        elif isinstance(output.get("text"), str):
            parts.append(f"<div class='ak-muted'>{esc(output.get('mime'))}</div>"
                         f"<pre>{esc(output['text'])}</pre>")
    error = result.get("error")
    if isinstance(error, dict) and error.get("traceback"):
        parts.append(f"<pre class='ak-traceback'>{esc(error['traceback'])}</pre>")
    return "".join(parts)
