"""What came back, made readable: web pages as Markdown, search result pages as lists.

HTML is parsed with Beautiful Soup (Python's own ``html.parser``, nothing to
compile) and written as Markdown by markdownify, after the parts a reader never
sees are dropped (scripts, styles, forms, navigation, embedded frames). JSON
stays JSON. Anything else that is not text is described, never inlined.
Search result pages are parsed the same way: DuckDuckGo's HTML results page,
or the JSON of a SearXNG instance or the Brave Search API.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs, urlparse

_HIDDEN = ["script", "style", "noscript", "template", "svg", "canvas", "iframe", "object",
           "embed", "form", "button", "input", "select", "textarea", "nav", "head"]
_TEXT_TYPES = ("application/xml", "application/javascript", "application/x-www-form-urlencoded",
               "application/yaml", "application/x-yaml", "application/toml", "image/svg+xml")
_BLANK_LINES = re.compile(r"\n{3,}")


def kind_of(content_type: str, body: bytes) -> str:
    """``html``, ``json``, ``text`` or ``binary``, from the media type (or a sniff without one)."""
    media = content_type.lower()
    if media in ("text/html", "application/xhtml+xml"):
        return "html"
    if media == "application/json" or media.endswith("+json"):
        return "json"
    if media.startswith("text/") or media in _TEXT_TYPES or media.endswith("+xml"):
        return "text"
    if not media:
        head = body[:512].lstrip().lower()
        if head.startswith((b"<!doctype html", b"<html")):
            return "html"
        if b"\0" not in body[:4096]:
            try:
                body[:4096].decode("utf-8")
                return "text"
            except UnicodeDecodeError:
                pass
    return "binary"


def decode(body: bytes, charset: str | None) -> str:
    """Bytes as text in ``charset`` (UTF-8 when unknown), never raising."""
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


def html_to_markdown(html: str, base_url: str | None = None) -> tuple[str | None, str]:
    """The page's title and its readable content as Markdown."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    title_tag = soup.find("title")
    title = " ".join(title_tag.get_text().split()) if title_tag else None
    for tag in soup(_HIDDEN):
        tag.decompose()
    root = soup.find("main") or soup.find("article") or soup.find("body") or soup
    text = MarkdownConverter(heading_style="ATX", bullets="-", strip=["img"]).convert_soup(root)
    lines = [line.rstrip() for line in text.splitlines()]
    return title or None, _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def parse_json(text: str) -> tuple[bool, Any]:
    """``(True, value)`` when ``text`` is JSON, else ``(False, None)``."""
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):
        return False, None


def _ddg_target(href: str) -> str:
    """DuckDuckGo wraps result links as ``//duckduckgo.com/l/?uddg=<url>``; unwrap them."""
    parsed = urlparse(href if "//" in href else "https:" + href)
    if parsed.path.startswith("/l/"):
        target = parse_qs(parsed.query).get("uddg")
        if target:
            return target[0]
    if href.startswith("//"):
        return "https:" + href
    return href


def parse_duckduckgo(html: str, max_results: int) -> list[dict[str, str]]:
    """Results from a DuckDuckGo HTML results page: ``[{title, url, snippet}]``, ads left out."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    results: list[dict[str, str]] = []
    for block in soup.select("div.result"):
        classes: list[str] = list(block.get("class") or [])
        if "result--ad" in classes or "result--no-result" in classes:
            continue
        link = block.select_one("a.result__a")
        if link is None or not link.get("href"):
            continue
        url = _ddg_target(str(link["href"]))
        if not url.startswith(("http://", "https://")):
            continue
        snippet = block.select_one(".result__snippet")
        results.append({"title": " ".join(link.get_text().split()), "url": url,
                        "snippet": " ".join(snippet.get_text().split()) if snippet else ""})
        if len(results) >= max_results:
            break
    return results


def duckduckgo_blocked(html: str) -> bool:
    """Whether DuckDuckGo answered with its robot check instead of results."""
    return "anomaly-modal" in html or "challenge-form" in html


def parse_searxng(data: object, max_results: int) -> list[dict[str, str]]:
    """Results from SearXNG's ``format=json`` answer."""
    items = data.get("results") if isinstance(data, dict) else None
    return _items(items, "content", max_results)


def parse_brave(data: object, max_results: int) -> list[dict[str, str]]:
    """Results from the Brave Search API's web results."""
    web = data.get("web") if isinstance(data, dict) else None
    items = web.get("results") if isinstance(web, dict) else None
    return _items(items, "description", max_results)


def _items(items: object, snippet_field: str, max_results: int) -> list[dict[str, str]]:
    if not isinstance(items, list):
        raise ValueError("the search service's answer has no result list")
    results = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("url"), str):
            continue
        snippet = item.get(snippet_field)
        results.append({"title": str(item.get("title") or ""), "url": item["url"],
                        "snippet": _plain(str(snippet or ""))})
        if len(results) >= max_results:
            break
    return results


def _plain(text: str) -> str:
    """A snippet with its highlighting tags removed."""
    if "<" not in text:
        return " ".join(text.split())
    from bs4 import BeautifulSoup

    return " ".join(BeautifulSoup(text, "html.parser").get_text().split())
