"""Script in the page: no string from the model, a tool or a file becomes markup.

Every view is drawn twice, once with plain words in every field and once with every
hostile payload (tests/html_payloads.py) in every field. Parsed with an HTML parser,
the two drawings must hold the same elements with the same attributes, classes and
styles (the markup is ours, whatever the values), no handler, no image, no frame or
form; the payloads must be there as text (shown, not dropped). An answer's Markdown
is the one place where values become markup: there only the sanitizer's allow-list
may appear, with checked links and images held until clicked.
"""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import pytest
from html_payloads import BENIGN, HOSTILE, PAYLOADS, views, widget_html

from agent_kernel.views.safe_html import (
    HELD_IMAGE_CLASS,
    MARKDOWN_ATTRIBUTES,
    MARKDOWN_TAGS,
    esc,
    markdown,
    safe_url,
)

MARKDOWN_REGION = "agent-kernel-reply"
VOID = {"br", "wbr", "img", "hr", "input", "meta", "link", "col", "embed", "source"}


class Shape(HTMLParser):
    """The elements of a page: ours (tag, attribute names, class, style), the ones inside
    an answer's Markdown, and the text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ours: list[tuple[str, tuple[str, ...], str, str]] = []
        self.markdown: list[tuple[str, dict[str, str | None]]] = []
        self.every: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self._stack: list[bool] = []  # for each open element: inside an answer's Markdown?

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        inside = bool(self._stack and self._stack[-1])
        self.every.append((tag, found))
        if inside:
            self.markdown.append((tag, found))
        else:
            self.ours.append((tag, tuple(sorted(found)), found.get("class") or "",
                              found.get("style") or ""))
        if tag not in VOID:
            self._stack.append(inside or MARKDOWN_REGION in (found.get("class") or "").split())

    def handle_endtag(self, tag: str) -> None:
        if tag not in VOID and self._stack:
            self._stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def shape(page: str) -> Shape:
    parser = Shape()
    parser.feed(page)
    parser.close()
    return parser


def check_clean(name: str, page: str) -> None:
    """No handler, no element that loads or runs, no link a browser would follow to script."""
    for tag, attrs in shape(page).every:
        assert tag not in {"script", "img", "iframe", "frame", "object", "embed", "form",
                           "meta", "link", "svg", "video", "audio", "source", "input",
                           "button", "textarea", "base", "math"}, (name, tag, attrs)
        for attr, value in attrs.items():
            assert not attr.startswith("on"), (name, tag, attr, value)
            assert attr not in {"src", "srcset", "action", "formaction", "background",
                                "poster", "http-equiv"}, (name, tag, attr)
            if attr == "href":
                assert safe_url(value) == value, (name, tag, value)
            if attr == "style":
                assert "url(" not in (value or "") and "expression" not in (value or ""), \
                    (name, value)


def check_markdown(name: str, elements: list[tuple[str, dict[str, str | None]]]) -> None:
    """Inside an answer: the sanitizer's allow-list, nothing else."""
    for tag, attrs in elements:
        assert tag in MARKDOWN_TAGS, (name, tag, attrs)
        allowed = MARKDOWN_ATTRIBUTES.get(tag, set()) | (
            {"class"} if tag == "span" else {"rel", "target"} if tag == "a" else set())
        assert set(attrs) <= allowed, (name, tag, attrs)
        if tag == "a":
            assert attrs.get("target") == "_blank" and attrs.get("rel") == (
                "noopener noreferrer nofollow"), (name, attrs)
        if "class" in attrs:
            assert attrs["class"] == HELD_IMAGE_CLASS, (name, attrs)


@pytest.fixture(scope="module")
def drawn() -> tuple[dict[str, str], dict[str, str]]:
    benign = {**views(BENIGN), **widget_html(BENIGN)}
    hostile = {**views(HOSTILE), **widget_html(HOSTILE)}
    return benign, hostile


def test_every_view_is_drawn(drawn: tuple[dict[str, str], dict[str, str]]) -> None:
    benign, hostile = drawn
    assert set(benign) == {"run", "triggers panel", "team board", "task tree", "memory table",
                           "notices", "control outcome", "approval widget", "question widget",
                           "triggers panel controls", "board controls"}
    assert set(hostile) == set(benign)


@pytest.mark.parametrize("name", ["run", "triggers panel", "team board", "task tree",
                                  "memory table", "notices", "control outcome",
                                  "approval widget", "question widget",
                                  "triggers panel controls", "board controls"])
def test_hostile_strings_stay_text(name: str,
                                   drawn: tuple[dict[str, str], dict[str, str]]) -> None:
    """Same elements, attributes, classes and styles as with plain words; the payloads
    are in the text, whole."""
    benign, hostile = (shape(d[name]) for d in drawn)
    assert hostile.ours == benign.ours, name
    check_clean(name, drawn[1][name])
    text = "".join(hostile.text)
    assert "<script>window.akPwned=1</script>" in text, name
    assert "\"><b onmouseover=\"window.akPwned=1\">" in text, name
    assert PAYLOADS[0] in text or name == "run" and PAYLOADS[0][:40] in text, name


def test_the_run_shows_every_field(drawn: tuple[dict[str, str], dict[str, str]]) -> None:
    """Each field of the run fallback got the payload: many copies of it, as text."""
    text = "".join(shape(drawn[1]["run"]).text)
    assert text.count("<script>window.akPwned=1</script>") >= 40


def test_answers_markdown_keeps_only_the_allow_list(
        drawn: tuple[dict[str, str], dict[str, str]]) -> None:
    page = shape(drawn[1]["run"])
    assert page.markdown, "the answer's Markdown was drawn"
    check_markdown("run", page.markdown)
    held = [attrs for tag, attrs in page.markdown if attrs.get("class") == HELD_IMAGE_CLASS]
    assert len(held) >= 3  # ![tracker](...), the raw <img src=https://...>, <img src=x>
    links = [attrs["href"] for tag, attrs in page.markdown if tag == "a" and attrs.get("href")]
    assert "https://evil.example/pixel.png" in links  # shown only when the person clicks
    assert all(link.startswith("https://") for link in links)


@pytest.mark.parametrize("source, bad", [
    ("<img src=x onerror=alert(1)>", "onerror"),
    ("<script>alert(1)</script>", "<script"),
    ("[x](javascript:alert(1))", "javascript"),
    ("[x](jav&#x61;script:alert(1))", "script:"),
    ("<a href=\"  JaVaScRiPt:alert(1)\">x</a>", "script:"),
    ("<a href=\"java\tscript:alert(1)\">x</a>", "script:"),
    ("<a href=\"data:text/html,<script>alert(1)</script>\">x</a>", "data:"),
    ("<a href=\"vbscript:msgbox(1)\">x</a>", "vbscript"),
    ("<svg onload=alert(1)>", "<svg"),
    ("<p style=\"background:url(https://evil.example/x)\">x</p>", "style"),
    ("<iframe src=https://evil.example></iframe>", "iframe"),
    ("<form action=https://evil.example><input></form>", "<form"),
    ("<meta http-equiv=refresh content=\"0;url=https://evil.example\">", "meta"),
    ("![t](https://evil.example/t.png)", "<img"),
    ("<img src=https://evil.example/t.png>", "<img"),
    ("<img srcset=\"https://evil.example/t.png 1x\">", "srcset"),
    ("<details open ontoggle=alert(1)>x</details>", "ontoggle"),
    ("<a href=https://ok.example title='\" onmouseover=alert(1)'>x</a>", "onmouseover="),
])
def test_markdown_refuses(source: str, bad: str) -> None:
    out = markdown(source)
    for _tag, attrs in shape(out).every:
        for attr, value in attrs.items():
            assert bad not in attr and bad not in (value or "") or attr == "title", (
                source, out)
    assert bad not in "".join(f"<{t} {' '.join(a)}" for t, a in shape(out).every), (source, out)


def test_markdown_keeps_what_a_reader_needs() -> None:
    out = markdown("# Title\n\n**bold** `code` [site](https://ok.example/a?b=1&c=2)\n\n"
                   "| a | b |\n|---|---|\n| 1 | 2 |\n\n- one\n- two\n\n<details><summary>more"
                   "</summary>inside</details>")
    tags = [tag for tag, _ in shape(out).every]
    for tag in ("h1", "strong", "code", "a", "table", "td", "li", "details", "summary"):
        assert tag in tags, (tag, out)
    assert "href=\"https://ok.example/a?b=1&amp;c=2\"" in out


@pytest.mark.parametrize("url, kept", [
    ("https://example.org/x", True), ("http://example.org", True), ("mailto:a@b.example", True),
    ("HTTPS://EXAMPLE.ORG", True), ("javascript:alert(1)", False),
    ("  JaVaScRiPt:alert(1)", False), ("jav&#x61;script:alert(1)", False),
    ("java\nscript:alert(1)", False), ("\x01javascript:alert(1)", False),
    ("data:text/html,x", False), ("vbscript:x", False), ("//evil.example/x", False),
    ("/files/x", False), ("https:evil", False), ("https://a\x00.example", False), (None, False),
])
def test_safe_url(url: Any, kept: bool) -> None:
    assert (safe_url(url) is not None) is kept


def test_esc_closes_every_way_out() -> None:
    assert esc("<a href='x' title=\"y\">&") == (
        "&lt;a href=&#x27;x&#x27; title=&quot;y&quot;&gt;&amp;")


def test_one_helper_escapes_everything() -> None:
    """No view keeps an escaping copy of its own: html.escape is called in safe_html only."""
    from pathlib import Path

    package = Path(__file__).resolve().parents[2] / "agent_kernel"
    copies = [str(path.relative_to(package)) for path in package.rglob("*.py")
              if path.name != "safe_html.py" and ("html.escape(" in path.read_text()
                                                  or "import html\n" in path.read_text())]
    assert copies == []
