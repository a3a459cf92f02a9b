"""Text a person may misread: characters that draw nothing, and words that mix alphabets.

One predicate for every place a person approves what they read: the approval card's
exact arguments (``views/exact.py``) marks these, and a trigger's condition
(``triggers/conditions.py``) refuses them. Imports nothing of ours.

- :func:`draws_nothing`: control, format (bidi overrides and isolates, zero-width),
  private, surrogate or unassigned characters; line and paragraph separators; spaces
  other than the ASCII one; every ``Default_Ignorable_Code_Point`` (variation selectors,
  tag characters, the combining grapheme joiner, Hangul fillers, Khmer inherent
  vowels...); the braille blank U+2800; combining marks that overlay the character
  before them (canonical combining class 1, such as U+0338). Tab and newline draw.
- :func:`mixed_words`: a word holding both ASCII letters and Cyrillic or Greek ones,
  whose letters look alike (``gооgle.com`` with two Cyrillic ``о``).
- :func:`with_tokens`: plain text with each character that draws nothing written as
  ``<U+202E>``, for the team's questions about work an earlier session left.
"""

from __future__ import annotations

import bisect
import re
import unicodedata

# Default_Ignorable_Code_Point, from DerivedCoreProperties.txt of Unicode 14.0.0 (the
# version of Python 3.11's unicodedata, which has no property for it). Inclusive ranges.
DEFAULT_IGNORABLE_VERSION = "14.0.0"
DEFAULT_IGNORABLE: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),    # SOFT HYPHEN
    (0x034F, 0x034F),    # COMBINING GRAPHEME JOINER
    (0x061C, 0x061C),    # ARABIC LETTER MARK
    (0x115F, 0x1160),    # HANGUL CHOSEONG FILLER..HANGUL JUNGSEONG FILLER
    (0x17B4, 0x17B5),    # KHMER VOWEL INHERENT AQ..KHMER VOWEL INHERENT AA
    (0x180B, 0x180F),    # MONGOLIAN FREE VARIATION SELECTORS, VOWEL SEPARATOR
    (0x200B, 0x200F),    # ZERO WIDTH SPACE..RIGHT-TO-LEFT MARK
    (0x202A, 0x202E),    # LEFT-TO-RIGHT EMBEDDING..RIGHT-TO-LEFT OVERRIDE
    (0x2060, 0x206F),    # WORD JOINER..NOMINAL DIGIT SHAPES (isolates included)
    (0x3164, 0x3164),    # HANGUL FILLER
    (0xFE00, 0xFE0F),    # VARIATION SELECTOR-1..VARIATION SELECTOR-16
    (0xFEFF, 0xFEFF),    # ZERO WIDTH NO-BREAK SPACE
    (0xFFA0, 0xFFA0),    # HALFWIDTH HANGUL FILLER
    (0xFFF0, 0xFFF8),    # reserved
    (0x1BCA0, 0x1BCA3),  # SHORTHAND FORMAT LETTER OVERLAP..SHORTHAND FORMAT UP STEP
    (0x1D173, 0x1D17A),  # MUSICAL SYMBOL BEGIN BEAM..MUSICAL SYMBOL END PHRASE
    (0xE0000, 0xE0FFF),  # tag characters, VARIATION SELECTOR-17..256, reserved
)
_STARTS = [start for start, _ in DEFAULT_IGNORABLE]
# Not default-ignorable, yet drawn as nothing by most fonts.
BLANK_LETTERS = frozenset({"\u2800"})  # BRAILLE PATTERN BLANK
# Bidirectional controls (all default-ignorable too; named for the tests and the docs).
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                          "\u2066\u2067\u2068\u2069")
_DRAWN = frozenset("\t\n")
_SUSPECT = re.compile(r"[^\t\n\x20-\x7e]")  # all that may draw nothing
_WORD = re.compile(r"[^\W_]+")  # letters and digits
_ASCII_LETTER = re.compile(r"[A-Za-z]")
_LOOKALIKE_PREFIXES = ("CYRILLIC ", "GREEK ")


def default_ignorable(char: str) -> bool:
    """Whether ``char`` is a Default_Ignorable_Code_Point (drawn as nothing when unsupported)."""
    code = ord(char)
    at = bisect.bisect_right(_STARTS, code) - 1
    return at >= 0 and code <= DEFAULT_IGNORABLE[at][1]


def draws_nothing(char: str) -> bool:
    """Whether ``char`` draws nothing or changes how the text around it reads (see the module)."""
    if char in _DRAWN:
        return False
    category = unicodedata.category(char)
    return (category[0] == "C" or category in ("Zl", "Zp")
            or (category == "Zs" and char != " ") or default_ignorable(char)
            or char in BLANK_LETTERS or unicodedata.combining(char) == 1)


def _lookalike(char: str) -> bool:
    return char.isalpha() and unicodedata.name(char, "").startswith(_LOOKALIKE_PREFIXES)


def hidden_at(text: str) -> list[int]:
    """Where in ``text`` the characters that draw nothing are (quick for mostly-ASCII text)."""
    return [m.start() for m in _SUSPECT.finditer(text) if draws_nothing(m.group())]


def mixed_words(text: str) -> list[tuple[int, int, str]]:
    """Each word of ``text`` (a run of letters and digits) mixing ASCII letters with Cyrillic
    or Greek ones: (start, end, its Cyrillic and Greek letters as ``U+043E`` names, each
    once, in order). A character that draws nothing ends a word."""
    found: list[tuple[int, int, str]] = []
    if text.isascii():
        return found
    for match in _WORD.finditer(text):
        if match.group().isascii() or not _ASCII_LETTER.search(match.group()):
            continue
        start = None
        end = match.end()
        for at in range(match.start(), end + 1):  # a Hangul filler is a letter: it ends a word
            if at < end and not draws_nothing(text[at]):
                start = at if start is None else start
                continue
            if start is not None:
                word = text[start:at]
                names = dict.fromkeys(f"U+{ord(c):04X}" for c in word if _lookalike(c))
                if names and _ASCII_LETTER.search(word):
                    found.append((start, at, " ".join(names)))
                start = None
    return found


def token(char: str) -> str:
    """The visible stand-in for one character: ``U+202E``."""
    return f"U+{ord(char):04X}"


def with_tokens(text: str) -> str:
    """``text`` with every character that :func:`draws_nothing` written as ``<U+XXXX>``
    (for plain-text questions: the team's restored tasks and earlier question)."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(f"<{token(c)}>" if draws_nothing(c) else c for c in text)


__all__ = ["BIDI_CONTROLS", "BLANK_LETTERS", "DEFAULT_IGNORABLE", "DEFAULT_IGNORABLE_VERSION",
           "default_ignorable", "draws_nothing", "hidden_at", "mixed_words", "token",
           "with_tokens"]
