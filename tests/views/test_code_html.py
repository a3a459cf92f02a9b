"""The HTML fallback draws run_python's code highlighted and an edit's diff marked, and the
hostile strings stay text: every character of the code is shown, nothing runs or loads."""

from __future__ import annotations

import base64
import io
from html.parser import HTMLParser
from typing import Any

from html_payloads import HOSTILE, PAYLOADS
from test_html_escaping import shape

from agent_kernel.core.events import (
    Question,
    QuestionAnswered,
    RunStarted,
    ToolCallFinished,
    ToolCallStarted,
    for_display,
)
from agent_kernel.views.code_html import diff_html, png_data, python_html
from agent_kernel.views.mime import Transcript
from agent_kernel.views.run_html import html_of
from agent_kernel.views.summaries import summarise

HOSTILE_CODE = "\n".join(f"x{n} = {p!r}  # {p}" for n, p in enumerate(PAYLOADS)) + \
    f"\nprint('''{HOSTILE}''')"


class Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def read(page: str) -> Text:
    parser = Text()
    parser.feed(page)
    parser.close()
    return parser


def test_python_is_highlighted_and_every_character_kept() -> None:
    code = "def f(x):\n    return x + 1  # add one\nprint(f(2), 'two')\n"
    page = python_html(code)
    parsed = read(page)
    assert "".join(parsed.parts) == code
    assert "<span class='ak-py-keyword'>def</span>" in page
    assert "<span class='ak-py-comment'># add one</span>" in page
    assert "<span class='ak-py-string'>" in page


def test_hostile_code_stays_text() -> None:
    page = python_html(HOSTILE_CODE)
    parsed = read(page)
    assert "".join(parsed.parts) == HOSTILE_CODE
    assert {tag for tag, _ in parsed.tags} <= {"pre", "span"}
    assert all(set(attrs) <= {"class"} for _, attrs in parsed.tags)


def test_code_the_lexer_would_change_is_shown_plain() -> None:
    code = "a = 1\r\nb = 2\r"  # Pygments would turn the carriage returns into newlines
    page = python_html(code)
    assert "".join(read(page).parts) == code and "<span" not in page


def test_a_diff_marks_added_and_removed_lines() -> None:
    diff = "--- cell 3\n+++ cell 3\n@@ -1,2 +1,2 @@\n-total = 0\n+total = sum(xs)\n print(total)"
    page = diff_html(diff)
    assert "<span class='ak-diff-del'>-total = 0</span>" in page
    assert "<span class='ak-diff-add'>+total = sum(xs)</span>" in page
    assert "<span class='ak-diff-hunk'>@@ -1,2 +1,2 @@</span>" in page
    hostile = diff_html(f"-{HOSTILE}\n+{HOSTILE}")
    assert "".join(read(hostile).parts) == f"-{HOSTILE}+{HOSTILE}"
    assert {tag for tag, _ in read(hostile).tags} <= {"pre", "span"}


def _png() -> str:
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(
            ">I", zlib.crc32(kind + data))

    raw = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)) \
        + chunk(b"IDAT", zlib.compress(b"\x00\x00")) + chunk(b"IEND", b"")
    return base64.b64encode(raw).decode()


def _run(text: str, code: str, result: Any, diff: str | None = None) -> str:
    run = "run_p"
    args = {"code": code, "timeout_seconds": 30}
    details: dict[str, Any] = {"tool": "run_python", "arguments": args}
    if diff is not None:
        details["diff"] = diff
    events = [RunStarted(run, prompt=text, model="m", agent_id="agent"),
              ToolCallStarted(run, call_id="c1", tool_name="run_python", arguments=args),
              Question(run, "q1", "Allow `run_python`?", ["Approve", "Deny"], 60.0, "Deny",
                       kind="approval", details=details),
              QuestionAnswered(run, "q1", "Approve", "user"),
              ToolCallFinished(run, call_id="c1", tool_name="run_python", arguments=args,
                               result=result, success=True, error=None, duration_ms=4)]
    transcript = Transcript(run_id=run)
    for event in events:
        transcript.feed(for_display(event))
    return html_of(transcript.state())


def test_the_run_fallback_shows_code_diff_and_a_figure() -> None:
    png = _png()
    result = {"ok": True, "status": "done", "stdout": "hi\n", "stderr": "", "value": "42",
              "outputs": [{"mime": "image/png", "data": png, "width": 1, "height": 1},
                          {"mime": "image/png", "data": "' onerror='alert(1)", "width": 2,
                           "height": 2},
                          {"mime": "text/html", "text": HOSTILE}],
              "error": None, "names": {"created": ["x"], "changed": [], "deleted": []}}
    page = _run("go", "def f():\n    return 42\nf()", result, diff="-a\n+b")
    assert "<span class='ak-py-keyword'>def</span>" in page
    assert "<span class='ak-diff-add'>+b</span>" in page
    images = [attrs for tag, attrs in shape(page).every if tag == "img"]
    assert images == [{"class": "ak-figure", "alt": "figure, 1×1 PNG",
                       "src": f"data:image/png;base64,{png}"}]
    assert "[image: 2×2 PNG]" in page and "onerror" not in "".join(
        str(attrs) for _, attrs in shape(page).every)
    assert "<script>window.akPwned=1</script>" in "".join(read(page).parts)
    assert "ran 3 lines of Python · made x" in page


def test_only_png_base64_is_drawn() -> None:
    assert png_data(_png()) == _png()
    assert png_data(base64.b64encode(b"GIF89a....").decode()) is None
    assert png_data("iVBORw0KGgo' onerror='x") is None
    assert png_data(None) is None


def test_the_summary_says_how_the_code_ended() -> None:
    args = {"code": "1/0"}
    failed = {"ok": False, "status": "error", "error": {"type": "ZeroDivisionError",
                                                       "message": "division by zero",
                                                       "traceback": "..."}}
    assert summarise("run_python", args, failed, success=False, duration_ms=3) == (
        "ran 1 line of Python · ZeroDivisionError: division by zero · 3 ms")
    timed = {"ok": False, "status": "timeout", "error": {"type": "TimeoutError"}}
    assert summarise("run_python", args, timed, success=False,
                     duration_ms=None) == "ran 1 line of Python · timed out"


def test_a_real_figure_round_trips() -> None:
    import matplotlib

    matplotlib.use("agg")
    from matplotlib.figure import Figure

    buffer = io.BytesIO()
    Figure(figsize=(2, 1), dpi=50).savefig(buffer, format="png")
    data = base64.b64encode(buffer.getvalue()).decode()
    assert png_data(data) == data
