"""Redaction: the one pass every string takes before it reaches disk or a saved output.

The ledger, the history and memory tables, the memory mirrors and their file
names, saved triggers, the pending question and every transcript format go
through :func:`scrub` (structured values) or :func:`redact_text` (text). The
rule that governs it: *convert first, then redact*. A value of any shape (an
object, a set, bytes, a circular or tuple-keyed structure, a 5,000-digit int,
a lone surrogate, nesting a thousand deep) is first turned into plain JSON
data without ever raising, and only then are its strings searched, so nothing
escapes redaction by arriving as something other than a string.

What is found becomes ``[REDACTED]``: provider key shapes, bearer tokens,
JWTs, PEM private keys, passwords in URLs, ``name=value`` / ``NAME: value``
pairs whose name holds password, secret, token or key, the values of
secret-named fields in structured data (of any type: a number under
``password``, a list under ``token``, a mapping under ``api_key``; counts such as
``total_tokens`` stay), mapping keys that are themselves secrets, and the exact
values of environment variables whose names say they hold a secret (``PWD`` and
``OLDPWD`` are the working directory, not a password, and a value that is the
path of an existing file names where a secret is: a path under the project
must read the same on disk as it did live). A person adds patterns with
:func:`add_pattern` or the ``AGENT_KERNEL_REDACT`` variable (one regular
expression per line).

Redaction is for what is *saved*. A live approval shows the exact arguments and
only marks what looks like a secret (:func:`secret_marks`).

The patterns and secrets are the process's, not a session's, on purpose: they only ever
grow, and a secret one session knows (its key, a pattern its person added with
``%config AgentMagics.redact_patterns``) must not reach the disk through another agent
of the same process. A second agent can only be masked more, never less.
"""

from __future__ import annotations

import functools
import math
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

if sys.version_info >= (3, 11):
    from re import _constants as sre_constants
    from re import _parser as sre_parse
else:  # pragma: no cover - Python 3.10
    import sre_constants
    import sre_parse

REDACTED = "[REDACTED]"
MAX_DEPTH = 100
ENV_PATTERNS = "AGENT_KERNEL_REDACT"
_MIN_ENV_SECRET = 8
_MAX_INT_DIGITS = 4000
_BREAK = re.compile(r"\s+")
_CLIP_MARGIN = 8192  # a secret shorter than this is never cut in half by a display clip

# Where a secret may start: not inside a word, or right after a ``\n``, ``\t`` or
# ``\r`` escape (a repr or JSON text of a multi-line string).
_START = r"(?:(?<![A-Za-z0-9_])|(?<=\\[nrt]))"
# Shapes that are secrets wherever they stand. Groups named ``keep`` survive.
_SHAPES = [
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
    r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    _START + r"sk-[A-Za-z0-9_\-]{16,}",                     # OpenAI, Anthropic, DeepSeek…
    _START + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",   # Stripe-style
    _START + r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",      # AWS access key ids
    _START + r"gh[pousr]_[A-Za-z0-9]{30,}",                 # GitHub tokens
    _START + r"github_pat_[A-Za-z0-9_]{22,}",
    _START + r"xox[abposre]-[A-Za-z0-9\-]{10,}",            # Slack tokens
    r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]+",
    _START + r"AIza[0-9A-Za-z_\-]{35}",                     # Google API keys
    _START + r"ya29\.[0-9A-Za-z_\-]{20,}",                  # Google OAuth tokens
    _START + r"hf_[A-Za-z0-9]{30,}",                        # Hugging Face
    _START + r"gsk_[A-Za-z0-9]{30,}",                       # Groq
    _START + r"xai-[A-Za-z0-9]{30,}",                       # xAI
    _START + r"r8_[A-Za-z0-9]{30,}",                        # Replicate
    _START + r"eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}",  # JWTs
    r"(?i)(?P<keep>" + _START + r"(?:bearer|token|basic)\s+)[A-Za-z0-9._~+/\-]{12,}=*",
    # user:password@ in a URL keeps the scheme and the user name.
    r"(?P<keep>(?<![a-zA-Z0-9+.\-])[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@'\"]+:)[^\s@/'\"]+(?=@)",
]

# A secret-named pair in text: ``DB_PASSWORD=hunter2``, ``api_key: abc``,
# ``"client_secret": "abc"``, ``aws_secret_access_key = wJal…``. Names are found
# first and a value is read only after a secret name, so ``config: DB_PASSWORD=x``
# finds the inner pair and no input makes the search quadratic (a name starts only
# where a word starts, and the search goes on after each value it masks).
_PAIR_NAME = re.compile(
    r"(?<![A-Za-z0-9_.\-])(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)"
    r"(?P<sep>[\"']?[ \t]*[:=][ \t]*[\"']?)")
_PAIR_VALUE = re.compile(r"[^\s\"',;&]{4,}")
_NAME_PARTS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_SECRET_PARTS = {"password", "passwd", "pwd", "passphrase", "secret", "secrets", "token",
                 "tokens", "credential", "credentials", "authorization", "apikey", "cookie"}
# Names that only sound secret (``max_tokens``, ``sort_key``): a number under them is a
# count or an index; text under them is masked all the same.
_WEAK_PARTS = {"tokens", "key", "keys"}
# Shell variables that hold the working directory, whatever their name sounds like.
_NOT_SECRET_ENV = frozenset({"PWD", "OLDPWD"})

_lock = threading.Lock()
_custom: list[re.Pattern[str]] = []
_secrets: tuple[re.Pattern[str], ...] = ()  # keys this process holds (add_secret)
_secret_values: set[bytes] = set()
_compiled: tuple[re.Pattern[str], ...] = tuple(re.compile(p) for p in _SHAPES)
_env_cache: tuple[tuple[tuple[str, str], ...], re.Pattern[str] | None] = ((), None)
_env_patterns_cache: tuple[str, list[re.Pattern[str]]] = ("", [])
# os.environ's data when _env_cache was last read, and the pattern that reading gave
_env_seen: tuple[dict[object, object], re.Pattern[str] | None] | None = None


@functools.lru_cache(maxsize=4096)
def secret_name(name: str) -> bool:
    """Whether a field or variable name says it holds a secret (``api_key``, ``DB_PASSWORD``,
    ``clientSecret``, ``Authorization``; not ``tokens_used`` when its value is a number)."""
    parts = [p.lower() for p in _NAME_PARTS.findall(name)]
    if any(p in _SECRET_PARTS for p in parts):
        return True
    # "key" alone is too common a word; api_key, secret_key, privateKey, ACCESS_KEY are not.
    return (len(parts) > 1 and parts[-1] in ("key", "keys")) or "apikey" in "".join(parts)


@functools.lru_cache(maxsize=4096)
def strong_secret_name(name: str) -> bool:
    """A secret name under which even a number is a secret (``password``, ``token``,
    ``api_key``; not ``max_tokens`` or ``sort_key``, whose numbers are counts)."""
    if not secret_name(name):
        return False
    parts = [p.lower() for p in _NAME_PARTS.findall(name)]
    return "apikey" in "".join(parts) or any(
        p in _SECRET_PARTS and p not in _WEAK_PARTS for p in parts)


def add_pattern(pattern: str | re.Pattern[str]) -> None:
    """Redact whatever ``pattern`` (a regular expression) matches, from now on, everywhere."""
    compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
    with _lock:
        if compiled.pattern not in {p.pattern for p in _custom}:
            _custom.append(compiled)


def _any_case(text: str) -> str:
    """``text`` (hex digits) matching either case, without a slow IGNORECASE search."""
    return "".join(f"[{c}{c.upper()}]" if c.isalpha() else c for c in text)


def _starts(token: str, not_after: str) -> str:
    """``token`` (plain digits) not preceded by a character of the class ``not_after``.

    The check follows the token, so the pattern still starts with plain characters, which
    the search finds fast (a leading look-behind makes it try every position)."""
    return f"{token}(?<!{not_after}{token})"


def _words(part: bytes, size: int) -> list[int]:
    """``part`` as words of ``size`` bytes in this machine's byte order, as od and hexdump
    read a file (xxd -e reads little-endian, which is this machine's on x86 and ARM)."""
    return [int.from_bytes(part[i:i + size], sys.byteorder)
            for i in range(0, len(part) - size + 1, size)]


def _dump_forms(value: bytes) -> list[str]:
    """Patterns for ``value`` as the dump tools print a file that holds just it, line by
    line at their default widths: ``od`` (default octal words, ``-b``, ``-d``,
    ``-tx2/-tx4/-tx8``), ``hexdump`` (default words), ``xxd -e`` (16 bytes a line) and
    ``xxd -b`` (6 bytes a line, and the whole key as one string of bits)."""
    forms: list[str] = []
    halves = [value[:len(value) // 2], value[len(value) // 2:]] if len(value) >= 16 else [value]
    for part in halves:
        for size in (2, 4, 8):  # od -tx2 and hexdump; od -tx4 and xxd -e; od -tx8
            words = _words(part, size)
            if len(words) >= 2:
                forms.append(r"\s+".join(f"{w:0{2 * size}x}" for w in words))  # lower case
        shorts = _words(part, 2)
        if len(shorts) >= 2:
            forms.append(r"\s+".join(f"{w:06o}" for w in shorts))  # od's default
            forms.append(_starts(str(shorts[0]), r"\d") + "".join(  # od -d
                rf"\s+{w}" for w in shorts[1:]) + r"(?!\d)")
        forms.append(r"[\s,\\]*".join(f"{b:03o}" for b in part))  # od -b, printf's \ooo
        forms.append(_starts(str(part[0]), r"\d") + "".join(  # od -tu1 (offsets between)
            rf"\s+{b}" for b in part[1:]) + r"(?!\d)")
    forms.append(r"\s*".join(f"{b:08b}" for b in value))  # the bits in one string
    lines = [value[i:i + 6] for i in range(0, len(value), 6)]  # xxd -b's lines
    for line in lines:
        bits = r"\s+".join(f"{b:08b}" for b in line)
        forms.append(bits if len(line) >= 4 else
                     _starts(f"{line[0]:08b}", "[01]") + bits[8:] + "(?![01])")
    return [*forms, *_gutter_forms(value)]


def _gutter_forms(value: bytes) -> list[str]:
    """Patterns for the text column ``xxd`` and ``hexdump -C`` print beside the bytes (16
    a line; ``xxd -b`` 6), printable bytes as themselves and the rest as dots, at the end
    of a line after a space or ``|``. A column that shows fewer than three of the key's
    bytes is left alone: it tells little and would match ordinary text."""
    forms: list[str] = []
    for width in (6, 16):
        for start in range(0, len(value), width):
            line = value[start:start + width]
            column = "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in line)
            if sum(c != "." for c in column) >= 3:
                literal = re.escape(column)
                forms.append(rf"{literal}(?<=[ |]{literal})(?=\|?[ \t]*(?:\n|\Z))")
    return forms


def _byte_forms(value: bytes) -> list[str]:
    """Patterns for ``value`` written out: hex (any case, ``0x``/``\\x`` prefixes, spaces,
    colons, commas, dots or dashes between bytes, as ``xxd``, ``od -tx1`` and
    ``hexdump -C`` print it), decimal byte lists, base64 and base64url (at each of the
    three alignments a longer blob puts it in, padding optional), base32 (each of its five
    alignments), %-encoding (URL), the key read as one big number (decimal, either byte
    order, and hex without leading zeros), every form broken by whitespace; each half of
    the key on its own in hex too (one ``xxd`` line), so a dump cut in lines is masked line
    by line; and the dump tools' other forms (:func:`_dump_forms`)."""
    import base64

    gap = r"[\s:,;.\-]*"
    spread = r"\s*"
    hexes = [value, *([value[:len(value) // 2], value[len(value) // 2:]]
                      if len(value) >= 16 else [])]
    forms = []
    for number in (int.from_bytes(value, "big"), int.from_bytes(value, "little")):
        forms.append(_starts(str(number), r"\d") + r"(?!\d)")  # the key as one number
    stripped = value.hex().lstrip("0")
    if stripped and stripped != value.hex():  # hex(int.from_bytes(key)) drops leading zeros
        forms.append(_starts(stripped, "[0-9a-fA-F]"))  # (before the halves mask its end)
    # The first byte has no optional prefix, so each pattern starts with a plain character.
    forms += [_any_case(f"{part[0]:02x}") + "".join(rf"{gap}(?:\\x|0[xX])?{_any_case(f'{b:02x}')}"
                                                     for b in part[1:]) for part in hexes]
    forms.append(_starts(str(value[0]), r"\d") + "".join(rf"[\s,;]+{b}" for b in value[1:])
                 + r"(?!\d)")
    forms.append("".join(  # %-encoding leaves letters, digits and some marks as they are
        rf"(?:%{_any_case(f'{b:02x}')}|{re.escape(chr(b))})" if 0x20 < b < 0x7F
        else rf"(?:%{_any_case(f'{b:02x}')}|\+)" if b == 0x20
        else f"%{_any_case(f'{b:02x}')}" for b in value))
    whole = base64.b64encode(value).decode("ascii").rstrip("=")
    bodies = [whole]
    for offset in range(3):  # only the characters no neighbouring byte changes
        text = base64.b64encode(bytes(offset) + value + bytes(2)).decode("ascii")
        bodies.append(text[(8 * offset + 5) // 6:8 * (offset + len(value)) // 6])
    for body in bodies:
        for alphabet in (body, body.replace("+", "-").replace("/", "_")):
            forms.append(spread.join(re.escape(c) for c in alphabet) + r"(?:\s*=){0,2}")
    thirty_two = [base64.b32encode(value).decode("ascii").rstrip("=")]
    for offset in range(1, 5):
        text = base64.b32encode(bytes(offset) + value + bytes(4)).decode("ascii")
        thirty_two.append(text[(8 * offset + 4) // 5:8 * (offset + len(value)) // 5])
    forms.extend(spread.join(thirty) + r"(?:\s*=){0,6}" for thirty in thirty_two)
    return [*forms, *_dump_forms(value)]


def add_secret(value: bytes) -> None:
    """Mask ``value`` (a key this process holds) from now on, everywhere, in every form it
    could be printed in: its raw bytes read as text (UTF-8 or Latin-1, also as a JSON
    string), a Python bytes literal, hex, decimal, base64 and base64url, with or without
    line breaks."""
    global _secrets
    value = bytes(value)
    if len(value) < _MIN_ENV_SECRET or value in _secret_values:
        return
    import json

    texts = {value.decode("utf-8", "replace"), value.decode("latin-1"),
             fix_text(value.decode("utf-8", "surrogateescape"))}
    raw = {*texts, *(json.dumps(text)[1:-1] for text in texts), repr(value)[2:-1]}
    # One pattern per form: each starts with a plain character, which the search finds fast.
    literals = [re.escape(text) for text in sorted(raw, key=len, reverse=True)]
    patterns = [re.compile(form) for form in [*literals, *_byte_forms(value)]]
    with _lock:
        _secret_values.add(value)
        _secrets = (*_secrets, *patterns)


def clear_patterns() -> None:
    """Forget the patterns added with :func:`add_pattern`."""
    with _lock:
        _custom.clear()


def _env_value_pattern() -> re.Pattern[str] | None:
    """One pattern for the exact values of secret-named environment variables.

    Reading every variable and its name's verdict cost ~30 µs a call (once per record);
    while ``os.environ``'s own data equals the copy taken before the last reading, the
    reading would be the same, so its pattern is returned as it is."""
    global _env_cache, _env_seen
    data = getattr(os.environ, "_data", None)
    seen = _env_seen
    if isinstance(data, dict) and seen is not None and data == seen[0]:
        return seen[1]
    snapshot = dict(data) if isinstance(data, dict) else None  # before the reading
    found = tuple(sorted((k, v) for k, v in os.environ.items()
                         if len(v) >= _MIN_ENV_SECRET and k not in _NOT_SECRET_ENV
                         and secret_name(k)))
    if found != _env_cache[0]:
        # A path to a file that exists (GOOGLE_APPLICATION_CREDENTIALS=/home/me/key.json)
        # names where a secret is, and masking it would change every path under it.
        values = sorted({v for _, v in found if not _existing_path(v)}, key=len, reverse=True)
        pattern = re.compile("|".join(re.escape(v) for v in values)) if values else None
        _env_cache = (found, pattern)
    made = _env_cache[1]
    _env_seen = (snapshot, made) if snapshot is not None else None
    return made


def _existing_path(value: str) -> bool:
    try:
        return os.path.isabs(value) and os.path.exists(value)
    except (OSError, ValueError):
        return False


def _env_patterns() -> list[re.Pattern[str]]:
    global _env_patterns_cache
    text = os.environ.get(ENV_PATTERNS, "")
    if text != _env_patterns_cache[0]:
        made = []
        for line in text.splitlines():
            if line.strip():
                try:
                    made.append(re.compile(line.strip()))
                except re.error:
                    continue  # a broken pattern must not break every write
        _env_patterns_cache = (text, made)
    return _env_patterns_cache[1]


def _sub_keep(match: re.Match[str]) -> str:
    keep = match.groupdict().get("keep")
    return (keep or "") + REDACTED


# Guards: why most strings skip most patterns. ``_redact`` runs its patterns one after
# another, each on the text the one before left. A pattern that cannot match the text it
# is given leaves it as it is, so skipping it changes nothing. A guard is a test that
# every text the pattern matches passes: literals one of which every match holds (read
# from the pattern's own parse tree: a run of fixed characters in its top-level sequence,
# look-arounds inside it skipped, small classes and alternatives of characters spelt
# out, ``\s*`` inside it read on the text with its whitespace taken out). A pattern whose
# guard fails on the text as it stands at that point is skipped; a pattern with no guard
# found always runs. The guard only ever proves a match impossible: it never chooses
# what is masked.
_MAX_GUARD = 12  # characters: long enough to be rare in ordinary text
_MAX_OPTIONS = 16  # spelt-out variants of a guard (``gh[pousr]_``: five)
_ZERO_WIDTH = (sre_constants.AT, sre_constants.ASSERT, sre_constants.ASSERT_NOT)


class _Step(NamedTuple):
    """One pattern of the sequence, what replaces its matches, and its guard."""

    pattern: re.Pattern[str]
    repl: str | Callable[[re.Match[str]], str]
    literals: tuple[str, ...] | None  # one of them is in every text it matches; None: no guard
    squeezed: bool  # the literals are looked for in the text without its whitespace
    folded: re.Pattern[str] | None  # for a case-blind pattern: its literals, case-blind too


def _flat(items: Iterable[tuple[object, object]]) -> Iterable[tuple[object, object]]:
    """The items of a parsed pattern with groups that change no flag opened up in place
    (a group only captures; which text matches stays the same)."""
    for op, av in items:
        if op is sre_constants.SUBPATTERN and isinstance(av, tuple) and av[1] == av[2] == 0:
            yield from _flat(av[3])
        else:
            yield op, av


def _zero_width(op: object, av: object) -> bool:
    """Whether an item consumes no character (``\\b``, a look-around, ``_START``)."""
    if op in _ZERO_WIDTH:
        return True
    if op is sre_constants.BRANCH and isinstance(av, tuple):
        return all(all(_zero_width(o, a) for o, a in _flat(alt)) for alt in av[1])
    return False


def _options(op: object, av: object) -> list[str] | None:
    """The strings one item matches, when it matches only a few fixed ones."""
    if op is sre_constants.LITERAL and isinstance(av, int):
        return [chr(av)]
    if op is sre_constants.IN and isinstance(av, list) and len(av) <= 8 and all(
            o is sre_constants.LITERAL for o, _ in av):
        return [chr(c) for _, c in av]
    if op is sre_constants.BRANCH and isinstance(av, tuple) and len(av[1]) <= 8:
        found = []
        for alt in av[1]:
            text = ""
            for o, a in _flat(alt):
                if o is not sre_constants.LITERAL or not isinstance(a, int):
                    return None
                text += chr(a)
            found.append(text)
        return found
    return None


def _any_space(texts: Iterable[str]) -> bool:
    return any(c.isspace() for text in texts for c in text)


def _guard(pattern: re.Pattern[str]) -> tuple[tuple[str, ...] | None, bool]:
    """(literals one of which every match of ``pattern`` holds, whether they are read on
    the text without whitespace); (None, False) when none could be read.

    Every run of fixed characters in the pattern's top-level sequence is in every match
    (look-arounds between them consume nothing; ``\\s*`` between them only whitespace):
    the longest run found is the guard."""
    try:
        return _read_guard(pattern)
    except Exception:  # an unknown construct: no guard, the pattern always runs
        return None, False


def _read_guard(pattern: re.Pattern[str]) -> tuple[tuple[str, ...] | None, bool]:
    items = list(_flat(sre_parse.parse(pattern.pattern, pattern.flags).data))
    best: tuple[tuple[str, ...] | None, bool] = (None, False)
    found, squeezed, full = [""], False, False

    def keep() -> None:
        nonlocal best
        if all(found) and (best[0] is None or min(map(len, found)) - squeezed / 2 >
                           min(map(len, best[0])) - best[1] / 2):
            # (the start of a literal is in every match too: a long one is cut)
            best = (tuple(sorted({text[:_MAX_GUARD] for text in found})), squeezed)

    for op, av in [*items, (None, None)]:  # the last item ends the last run
        if _zero_width(op, av):
            continue  # a match's characters stay next to each other without it
        options = _options(op, av)
        # ``\s*`` (or ``\s{0,n}``): what it takes is whitespace, gone from the squeezed text
        star = options is None and not pattern.flags & re.IGNORECASE and op in (
            sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT) and isinstance(
            av, tuple) and av[0] == 0 and list(av[2]) == [
            (sre_constants.IN, [(sre_constants.CATEGORY, sre_constants.CATEGORY_SPACE)])]
        if options is None and not star:  # anything else ends the run
            keep()
            found, squeezed, full = [""], False, False
        elif full:
            continue  # the run is long enough; the rest of it is not needed
        elif star and not _any_space(found):
            squeezed = True
        elif star or squeezed and _any_space(options or []):
            keep()  # whitespace the squeezed text would not hold
            found, squeezed, full = [""], False, False
        else:
            longer = [text + option for text in found for option in options or []]
            if len(longer) > _MAX_OPTIONS:
                full = True
            else:
                found = longer
                full = min(map(len, found)) >= _MAX_GUARD
                if full and not squeezed:
                    keep()
                    return best  # no later run can be longer (a long key's forms: fast)
    return best


_step_cache: dict[tuple[re.Pattern[str], bool], _Step] = {}


def _step(pattern: re.Pattern[str], keep: bool) -> _Step:
    """``pattern`` with its guard (made once per pattern)."""
    step = _step_cache.get((pattern, keep))
    if step is None:
        literals, squeezed = _guard(pattern)
        folded = None
        if literals is not None and pattern.flags & re.IGNORECASE:
            # the same characters under the same flags match the same way
            folded = re.compile("|".join(map(re.escape, literals)),
                                pattern.flags & (re.IGNORECASE | re.ASCII))
            literals = None
        step = _Step(pattern, _sub_keep if keep else REDACTED, literals, squeezed, folded)
        if len(_step_cache) > 20_000:  # a test session makes thousands of keys
            _step_cache.clear()
        _step_cache[(pattern, keep)] = step
    return step


_Tree = dict[str, "_Tree"]  # a letter and what may follow it ("" where a word ends)


def _trie(words: Iterable[str]) -> str:
    """A pattern that matches where one of ``words`` starts (each spelt once, as a tree:
    the search tries a few first characters at each place, not every word)."""
    tree: _Tree = {}
    for word in words:
        node = tree
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def branch(node: _Tree) -> str:
        if "" in node:
            return ""  # a word ends here: what longer words go on with is not needed
        parts = [re.escape(char) + branch(sub) for char, sub in sorted(node.items())]
        return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"

    return branch(tree)


_QUICK_CHARS = 512  # up to here one search for every guard's literals beats one per step


class _Plan(NamedTuple):
    """The steps in order, and what tells in one search that no guarded step can match."""

    steps: tuple[_Step, ...]
    bare: tuple[_Step, ...]  # the steps with no guard: they always run
    quick: re.Pattern[str] | None  # every plain literal of every guard
    quick_squeezed: re.Pattern[str] | None  # every literal read without whitespace
    folded: tuple[re.Pattern[str], ...]

    @classmethod
    def of(cls, steps: Iterable[_Step]) -> _Plan:
        made = tuple(steps)
        plain = {w for s in made if s.literals is not None and not s.squeezed
                 for w in s.literals}
        squeezed = {w for s in made if s.literals is not None and s.squeezed
                    for w in s.literals}
        return cls(made, tuple(s for s in made if s.literals is None and s.folded is None),
                   re.compile(_trie(plain)) if plain else None,
                   re.compile(_trie(squeezed)) if squeezed else None,
                   tuple(s.folded for s in made if s.folded is not None))


# (the _secrets tuple, the env pattern, the plan made for them): rebuilt when either is
# another object (add_secret makes a new tuple, so a key is masked from the next string
# on). None at first: the empty tuple is one object, so () would look already made.
_key_plan: tuple[tuple[re.Pattern[str], ...], _Plan] | None = None
_plan: tuple[tuple[re.Pattern[str], ...], re.Pattern[str] | None, _Plan] | None = None


def _key_steps() -> _Plan:
    """The guarded steps of the registered keys' forms."""
    global _key_plan
    secrets, plan = _secrets, _key_plan
    if plan is None or plan[0] is not secrets:
        plan = (secrets, _Plan.of(_step(p, False) for p in secrets))
        _key_plan = plan
    return plan[1]


def _steps(env: re.Pattern[str] | None) -> _Plan:
    """The guarded steps ``_redact`` runs before the pairs: keys, env values, shapes."""
    global _plan
    secrets, plan = _secrets, _plan
    if plan is None or plan[0] is not secrets or plan[1] is not env:
        plan = (secrets, env, _Plan.of((*(_step(p, False) for p in secrets),
                                        *([_step(env, False)] if env else []),
                                        *(_step(p, True) for p in _compiled))))
        _plan = plan
    return plan[2]


def _run(plan: _Plan, text: str) -> str:
    """``text`` after each step's pattern in turn, skipping those whose guard fails."""
    # When no guarded step can match the text, only the steps with no guard run; while
    # they leave it as it is, that stays so. If one of them changes it, all run again.
    if _none_can_match(plan, text) and _steps_run(plan.bare, text) is text:
        return text
    return _steps_run(plan.steps, text)


def _none_can_match(plan: _Plan, text: str) -> bool:
    """Whether one search each proves that no guarded step of ``plan`` matches ``text``."""
    return len(text) <= _QUICK_CHARS and (
        plan.quick is None or plan.quick.search(text) is None) and (
        plan.quick_squeezed is None
        or plan.quick_squeezed.search("".join(text.split())) is None) and all(
        folded.search(text) is None for folded in plan.folded)


def _steps_run(steps: tuple[_Step, ...], text: str) -> str:
    squeezed: str | None = None
    for pattern, repl, literals, squeeze, folded in steps:
        if literals is not None:
            if squeeze:
                if squeezed is None:
                    squeezed = "".join(text.split())  # str.split's whitespace is \s's
                hay = squeezed
            else:
                hay = text
            for literal in literals:
                if literal in hay:
                    break
            else:
                continue
        elif folded is not None and folded.search(text) is None:
            continue
        done = pattern.sub(repl, text)
        if done is not text:
            text, squeezed = done, None
    return text


def _pair_spans(text: str) -> list[tuple[int, int, int]]:
    """(name start, value start, value end) of each secret-named pair's value to mask."""
    found = []
    position = 0
    while (match := _PAIR_NAME.search(text, position)) is not None:
        position = match.end()
        if not secret_name(match.group("name")):
            continue
        found_value = _PAIR_VALUE.match(text, position)
        if found_value is None:
            continue
        value = found_value.group()
        if value.startswith("[REDACTED"):
            continue
        if value.isdigit() and len(value) < 12 and not strong_secret_name(match.group("name")):
            continue  # max_tokens=1000 is not a secret; password=12345678 is
        if value.lower() in ("bearer", "basic", "token"):  # the scheme stays; its token went
            continue
        found.append((match.start(), position, found_value.end()))
        position = found_value.end()
    return found


def _redact_pairs(text: str) -> str:
    spans = _pair_spans(text)
    if not spans:
        return text
    out, position = [], 0
    for _, start, end in spans:
        if start < position:
            continue
        out.append(text[position:start])
        out.append(REDACTED)
        position = end
    out.append(text[position:])
    return "".join(out)


def redact_text(text: str) -> str:
    """``text`` with every secret shape, secret-named pair and known secret value masked."""
    return _redact(text, _env_value_pattern(), [*_custom, *_env_patterns()])


# Short texts redaction left as they were, under the patterns they were searched with: a
# team's records repeat the same field names, ids and states thousands of times. Only a
# text that came out unchanged is kept (never one that held a secret), and the set is
# dropped as soon as the steps or the added patterns are other ones (a new key, a new
# variable, a new pattern), so a text is only skipped where searching it again would
# give the same text back.
_CLEAN_CHARS = 256
_CLEAN_MOST = 8192
_clean: tuple[tuple[_Plan, tuple[re.Pattern[str], ...]] | None, set[str]] = (
    None, set())


def _redact(text: str, env: re.Pattern[str] | None, extra: list[re.Pattern[str]]) -> str:
    global _clean
    if not text:
        return text
    steps = _steps(env)
    short = len(text) <= _CLEAN_CHARS
    if short:
        state = (steps, tuple(extra))
        known = _clean
        if known[0] != state:
            known = _clean = (state, set())
        if text in known[1]:
            return text
    done = _run(steps, fix_text(text))
    if "=" in done or ":" in done:
        done = _redact_pairs(done)
    for pattern in extra:
        done = pattern.sub(REDACTED, done)
    if short and done == text:
        if len(known[1]) >= _CLEAN_MOST:
            known[1].clear()
        known[1].add(text)
    return done


def fix_text(text: str) -> str:
    """Replace lone surrogates (which no file or provider accepts) with U+FFFD."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _int(value: int) -> int | str:
    if value.bit_length() < _MAX_INT_DIGITS * 3.3:
        return value
    digits = int(value.bit_length() * math.log10(2)) + 1
    return f"[integer of about {digits} digits]"


def _key(key: object) -> str:
    if isinstance(key, str):
        return fix_text(key)
    if key is None or isinstance(key, (bool, int, float)):
        return str(_int(key) if isinstance(key, int) and not isinstance(key, bool) else key)
    return _repr(key)


def _repr(value: object) -> str:
    try:
        return fix_text(repr(value))
    except Exception as exc:  # a broken __repr__ must not break a write
        return f"<{type(value).__name__} (repr failed: {type(exc).__name__})>"


def _filled(value: object) -> bool:
    """Whether a value under a secret name holds anything to mask (not None, a bool, '')."""
    if value is None or isinstance(value, bool):
        return False
    if isinstance(value, (str, bytes, bytearray, memoryview, dict, list, tuple, set,
                          frozenset)):
        return len(value) > 0
    return True


def _distinct(name: str, taken: dict[str, Any]) -> str:
    """``name``, numbered when another key already took it (two keys masked alike)."""
    if name not in taken:
        return name
    number = 2
    while f"{name} ({number})" in taken:
        number += 1
    return f"{name} ({number})"


def secret_spans(text: str) -> list[tuple[int, int]]:
    """Where in ``text`` the secrets are (start, end), for cutting a stream between them."""
    spans: list[tuple[int, int]] = []
    squeezed = "".join(text.split())
    for pattern in [*_matching(_steps(_env_value_pattern()).steps, text, squeezed), *_custom,
                    *_env_patterns()]:
        spans.extend(m.span() for m in pattern.finditer(text))
    spans.extend((a, c) for a, _, c in _pair_spans(text))
    return spans


def _matching(steps: Iterable[_Step], text: str, squeezed: str) -> list[re.Pattern[str]]:
    """The patterns of ``steps`` whose guard holds for ``text`` (the others find nothing
    in it), in order; ``squeezed`` is ``text`` without whitespace."""
    found = []
    for step in steps:
        if step.literals is not None:
            hay = squeezed if step.squeezed else text
            if not any(literal in hay for literal in step.literals):
                continue
        elif step.folded is not None and step.folded.search(text) is None:
            continue
        found.append(step.pattern)
    return found


def secret_marks(text: str) -> list[tuple[int, int]]:
    """The parts of ``text`` redaction would mask, merged and in order, for marking them.

    A live approval shows its arguments whole and marks these (never hides them); a
    pattern's kept prefix (``Bearer ``, ``https://user:``) is not part of a mark.
    """
    spans: list[tuple[int, int]] = []
    env = _env_value_pattern()
    steps = [*([_step(env, False)] if env is not None else []),
             *(_step(p, True) for p in _compiled)]
    for pattern in [*_matching(steps, text, "".join(text.split())), *_custom,
                    *_env_patterns()]:
        for match in pattern.finditer(text):
            start = match.end("keep") if "keep" in pattern.groupindex and \
                match.group("keep") is not None else match.start()
            if match.end() > start:
                spans.append((start, match.end()))
    spans.extend((b, c) for _, b, c in _pair_spans(text))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


class StreamRedactor:
    """Redacts text that arrives in pieces (a streamed answer) without splitting a secret.

    :meth:`feed` returns what can be shown now: the text up to a break that lies
    outside every secret found so far and at least ``HOLD`` characters before the
    end (so ``password:`` waits for its value); an unfinished PEM block is held
    until it ends, and a long run with no break is cut ``LONG_HOLD`` characters
    from its end. :meth:`flush` returns the rest, redacted.
    """

    HOLD = 96
    LONG = 4096  # past this, a run of text with no break is released up to LONG_HOLD
    LONG_HOLD = 1024

    def __init__(self) -> None:
        self._buffer = ""

    @property
    def holding(self) -> bool:
        """Text fed is held back (a secret may be starting): the line is not done."""
        return bool(self._buffer)

    def feed(self, text: str) -> str:
        """Take the next piece; return the redacted text that is safe to show now."""
        self._buffer += text
        buffer = self._buffer
        limit = len(buffer) - self.HOLD
        begin = buffer.rfind("-----BEGIN")
        if begin != -1 and "-----END" not in buffer[begin:]:
            limit = min(limit, begin)
        breaks = [m.end() for m in _BREAK.finditer(buffer, 0, max(0, limit))]
        if not breaks and len(buffer) <= self.LONG:
            return ""
        spans = secret_spans(buffer)

        def inside(index: int) -> tuple[int, int] | None:
            return next(((a, b) for a, b in spans if a < index < b), None)

        cut = next((i for i in reversed(breaks) if inside(i) is None), -1)
        if cut <= 0 and len(buffer) > self.LONG:
            # One long token (base64, a hash): cut it outside every secret found so far,
            # far enough from the end that a secret still arriving is not split.
            cut = len(buffer) - self.LONG_HOLD
            while cut > 0 and (span := inside(cut)) is not None:
                cut = span[0]
        if cut <= 0:
            return ""
        self._buffer = buffer[cut:]
        return redact_text(buffer[:cut])

    def flush(self) -> str:
        """Everything still held, redacted."""
        rest, self._buffer = self._buffer, ""
        return redact_text(rest)


def to_jsonable(value: object, *, redact: bool = False, max_chars: int | None = None) -> Any:
    """A JSON-safe copy of ``value`` that never raises; with ``redact``, secrets masked.

    Mappings keep their keys as text; lists, tuples and sets become lists; bytes are
    decoded (invalid UTF-8 replaced); non-finite floats, huge ints and foreign objects
    become text; cycles and nesting past ``MAX_DEPTH`` levels are cut with a marker.
    ``max_chars`` shortens long strings for display (redacted before the cut, so no
    half secret is left at the edge).
    """
    active: set[int] = set()
    env, extra = (_env_value_pattern(), [*_custom, *_env_patterns()]) if redact else (None, [])

    def clean(text: str) -> str:
        full = len(text)
        if max_chars is not None and full > max_chars:
            text = text[:max_chars + _CLIP_MARGIN]
        text = _redact(text, env, extra) if redact else fix_text(text)
        if max_chars is not None and full > max_chars:
            text = text[:max_chars] + f"\n…[{full - max_chars:,} more characters not shown]"
        return text

    def walk(item: object, depth: int, secret: bool = False) -> Any:
        # ``secret``: under a secret name (only when redacting): text and bytes are masked,
        # numbers pass (``max_tokens``), containers are searched with the name still on.
        if item is None or isinstance(item, bool):
            return item
        if isinstance(item, int):
            return _int(item)
        if isinstance(item, float):
            return item if math.isfinite(item) else str(item)
        if isinstance(item, (str, bytes, bytearray, memoryview)):
            if secret and len(item):
                return REDACTED
            if isinstance(item, str):
                return clean(item)
            return clean(bytes(item).decode("utf-8", errors="replace"))
        if depth >= MAX_DEPTH:
            return f"[nested deeper than {MAX_DEPTH} levels]"
        if isinstance(item, (dict, list, tuple, set, frozenset)):
            if id(item) in active:
                return "[circular reference]"
            active.add(id(item))
            try:
                if isinstance(item, dict):
                    out: dict[str, Any] = {}
                    for key, sub in item.items():
                        name = _key(key)
                        named = False
                        if redact:
                            name = _distinct(clean(name), out)
                            named = secret_name(name)
                            if named and _filled(sub) and (strong_secret_name(name) or not
                                                           isinstance(sub, (int, float, dict,
                                                                            list, tuple, set,
                                                                            frozenset))):
                                out[name] = REDACTED
                                continue
                        out[name] = walk(sub, depth + 1, secret or named)
                    return out
                items: Iterable[Any] = item
                if isinstance(item, (set, frozenset)):
                    items = sorted(item, key=_repr)
                made = [walk(sub, depth + 1, secret) for sub in items]
                return REDACTED if redact and holds_key(made) else made
            finally:
                active.discard(id(item))
        if secret:
            return REDACTED
        return clean(_repr(item))

    return walk(value, 0)


def scrub(value: object, *, max_chars: int | None = None) -> Any:
    """What may be written: ``value`` as JSON-safe data with every secret masked."""
    return to_jsonable(value, redact=True, max_chars=max_chars)


def mask_keys(text: str) -> str:
    """``text`` with the keys registered by :func:`add_secret` masked, and nothing else."""
    return _run(_key_steps(), text) if _secrets else text


def holds_key(items: list[Any]) -> bool:
    """Whether a list of byte values holds a registered key (``list(key)``, say)."""
    if not _secret_values or len(items) < _MIN_ENV_SECRET \
            or not all(type(i) is int and 0 <= i < 256 for i in items):
        return False
    data = bytes(items)
    return any(value in data for value in _secret_values)


def _keys_masked(item: object) -> Any:
    if isinstance(item, str):
        return mask_keys(item)
    if isinstance(item, list):
        return REDACTED if holds_key(item) else [_keys_masked(sub) for sub in item]
    if isinstance(item, dict):
        return {mask_keys(key): _keys_masked(sub) for key, sub in item.items()}
    return item


def to_text(value: object) -> str:
    """``value`` as text for a model or a person (never raises; not redacted, except that
    a registered key (:func:`add_secret`) is masked: a model has no use for it, and a
    model that saw it could send it anywhere with a GET)."""
    import json

    if isinstance(value, str):
        return mask_keys(fix_text(value))
    data = to_jsonable(value)
    return json.dumps(_keys_masked(data) if _secrets else data, ensure_ascii=False)
