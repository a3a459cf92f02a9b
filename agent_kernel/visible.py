"""Characters that draw nothing or reorder text, and text with each shown as a token.

What a person is asked to approve must read as what runs: a right-to-left override
(U+202E) reorders the text after it, a zero-width space hides a word break, ESC or a
carriage return redraws a terminal line. :func:`invisible` says which characters do
that and :func:`with_tokens` writes each as a visible ``<U+202E>``. It is the runtime's
(the team's questions use it); the live approval card (``views/exact.py``) marks the
same characters its own way.
"""

from __future__ import annotations

import unicodedata

_VISIBLE_CONTROLS = {"\n", "\t"}


def invisible(char: str) -> bool:
    """A control, format (bidi override, zero-width), private-use, unassigned or
    surrogate character, a line or paragraph separator, or a space other than the ASCII
    one; never newline or tab."""
    if char in _VISIBLE_CONTROLS:
        return False
    category = unicodedata.category(char)
    return category in ("Cc", "Cf", "Co", "Cn", "Zl", "Zp", "Cs") or (
        category == "Zs" and char != " ")


def token(char: str) -> str:
    """The visible stand-in for one character: ``U+202E``."""
    return f"U+{ord(char):04X}"


def with_tokens(text: str) -> str:
    """``text`` with every :func:`invisible` character written as ``<U+XXXX>``."""
    return "".join(f"<{token(c)}>" if invisible(c) else c for c in text)
