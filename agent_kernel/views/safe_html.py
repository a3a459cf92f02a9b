"""The one rule for every piece of HTML agent-kernel emits.

Our views (the run's HTML fallback, the triggers panel, the team board, the
memory table, notices and the ipywidgets that show HTML) write their own
literal markup; every value in it that is not that literal markup (a prompt,
a tool's arguments or result, a name, an id, a time, a model's answer) comes
from the model, a web page or a workspace file and goes through this module:

- :func:`esc` for text and for attribute values (always written in quotes:
  ``&``, ``<``, ``>``, ``"`` and ``'`` are escaped, so no value can close its
  element or its attribute);
- :func:`safe_url` for a URL: only absolute ``http:``, ``https:`` and
  ``mailto:`` are kept, judged the way a browser reads the value (entities
  decoded, whitespace and control characters dropped, case folded), so
  ``jav&#x61;script:`` or ``"  JaVaScRiPt:"`` are refused;
- :func:`markdown` for an answer's Markdown: rendered by mistune, then cleaned
  by nh3 (the Rust ``ammonia`` sanitizer) with an allow-list of tags and
  attributes like JupyterLab's sanitizer, URL schemes checked, no ``style``,
  no handler, no script, form or frame; an image does not load until the
  person asks for it: it becomes a link "image from host — show" that opens it.

Nothing here imports the rest of the package, so every view can use it.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlsplit

URL_SCHEMES = frozenset({"http", "https", "mailto"})
"""The only schemes a link we emit may carry."""

# Close to JupyterLab's sanitizer (@jupyterlab/apputils Sanitizer), without what a model's
# answer never needs and a page could abuse: forms and their inputs, media that loads by
# itself (audio, video, img: images are held, see below), style attributes, ids and classes.
MARKDOWN_TAGS = frozenset({
    "a", "abbr", "b", "bdi", "bdo", "blockquote", "br", "caption", "cite", "code", "col",
    "colgroup", "dd", "del", "details", "dfn", "div", "dl", "dt", "em", "figcaption", "figure",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "ins", "kbd", "li", "mark", "ol", "p",
    "pre", "q", "rp", "rt", "ruby", "s", "samp", "small", "span", "strike", "strong", "sub",
    "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "time", "tr", "tt", "u",
    "ul", "var", "wbr"})
MARKDOWN_ATTRIBUTES: dict[str, set[str]] = {
    "a": {"href", "title"}, "abbr": {"title"}, "ol": {"start"}, "td": {"align", "colspan",
                                                                         "rowspan"},
    "th": {"align", "colspan", "rowspan", "scope"}, "details": {"open"}, "time": {"datetime"},
}
# Tags whose content goes too: what is inside them is never meant as text.
DROPPED_WITH_CONTENT = frozenset({"script", "style", "iframe", "object", "embed", "template",
                                  "noscript", "textarea", "select", "title", "frameset",
                                  "noembed", "noframes", "xmp", "svg", "math"})
HELD_IMAGE_CLASS = "ak-held-image"

_CONTROL = re.compile(r"[\x00-\x20\x7f-\x9f]+")
_CONTROL_INSIDE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*):")


def esc(value: object) -> str:
    """``value`` as text inside an element or a quoted attribute value."""
    return html.escape(str(value), quote=True)


def safe_url(value: object) -> str | None:
    """``value`` when it is an absolute http, https or mailto URL (as a browser would read
    it: entities decoded, whitespace and control characters dropped), else None. The
    result is still to be escaped with :func:`esc` where it is written."""
    if not isinstance(value, str):
        return None
    text = html.unescape(value)
    folded = _CONTROL.sub("", text)
    found = _SCHEME.match(folded)
    if not found or found.group(1).lower() not in URL_SCHEMES:
        return None
    text = text.strip()
    if _CONTROL_INSIDE.search(text) or (
            found.group(1).lower() != "mailto" and not urlsplit(text).netloc):
        return None
    return text


def host_of(url: str) -> str:
    """Where a URL points, in a few words (``example.org`` or the mail address)."""
    parts = urlsplit(url)
    return parts.hostname or parts.path or url


def _cleaner() -> Any:
    import nh3

    return nh3.Cleaner(tags=set(MARKDOWN_TAGS) | {"img"},
                       clean_content_tags=set(DROPPED_WITH_CONTENT),
                       attributes={**MARKDOWN_ATTRIBUTES, "img": {"src", "alt", "title"}},
                       allowed_classes={"span": {HELD_IMAGE_CLASS}},
                       url_schemes=set(URL_SCHEMES), url_relative="deny",
                       link_rel="noopener noreferrer nofollow", strip_comments=True,
                       attribute_filter=_checked_attribute)


def _final_cleaner() -> Any:
    import nh3

    return nh3.Cleaner(tags=set(MARKDOWN_TAGS), clean_content_tags=set(DROPPED_WITH_CONTENT),
                       attributes=MARKDOWN_ATTRIBUTES,
                       set_tag_attribute_values={"a": {"target": "_blank"}},
                       allowed_classes={"span": {HELD_IMAGE_CLASS}},
                       url_schemes=set(URL_SCHEMES), url_relative="deny",
                       link_rel="noopener noreferrer nofollow", strip_comments=True,
                       attribute_filter=_checked_attribute)


def _checked_attribute(tag: str, name: str, value: str) -> str | None:
    """nh3 checks schemes already; this adds the browser-eyed reading of :func:`safe_url`."""
    if name in ("href", "src"):
        return safe_url(value)
    return value


class _HoldImages(HTMLParser):
    """Re-writes clean HTML with each ``<img>`` turned into a link that opens it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.out.append(held_image(dict(attrs)))
            return
        written = "".join(f' {name}="{esc(value or "")}"' for name, value in attrs)
        self.out.append(f"<{tag}{written}>")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag != "img":
            self.out.append(f"</{tag}>")

    def handle_data(self, data: str) -> None:
        self.out.append(esc(data))


def held_image(attrs: dict[str, str | None]) -> str:
    """An image that is not loaded: its alt text and a link to it ("show") when its URL is
    http(s), so the person's browser asks that host only when the person chooses to."""
    alt = (attrs.get("alt") or attrs.get("title") or "").strip()
    url = safe_url(attrs.get("src") or "")
    words = f"image: {alt}" if alt else "image"
    if url is None or urlsplit(url).scheme not in ("http", "https"):
        return f"<span class='{HELD_IMAGE_CLASS}'>[{esc(words)}, not shown]</span>"
    return (f"<span class='{HELD_IMAGE_CLASS}'>[{esc(words)} · from {esc(host_of(url))} · "
            f"<a href='{esc(url)}'>show</a>]</span>")


def markdown(text: str) -> str:
    """An answer's Markdown as clean HTML: allowed tags only, checked links, images held."""
    import mistune

    rendered = str(mistune.create_markdown(escape=False,
                                           plugins=["strikethrough", "table"])(text))
    holder = _HoldImages()
    holder.feed(_cleaner().clean(rendered))
    holder.close()
    return str(_final_cleaner().clean("".join(holder.out)))
