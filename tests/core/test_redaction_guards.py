"""Guarded redaction masks exactly what the plain sequence of patterns masked.

``redaction._redact`` skips a pattern when its guard (literals read from the pattern's
parse tree) proves it cannot match the text as it stands (docs/security.md, "What is
redacted"). These tests keep the plain sequence, as it was before the guards, as a
reference *here only*, and compare both, byte for byte, on a corpus an attacker would
try: every shape's examples and near misses, a key in each printed form (whole, wrapped,
cut, at the start and the end, repeated, next to another secret), unicode that folds
into ASCII, very long text. Then: each guard holds for every text its pattern matches;
a key or a variable set after the steps were made is masked at once, and one removed is
no longer masked.
"""

from __future__ import annotations

import base64
import os
import random
import re

import pytest
from test_redaction import SHAPES

from agent_kernel.core import redaction
from agent_kernel.core.redaction import REDACTED, mask_keys, redact_text, scrub


def reference_env_pattern() -> re.Pattern[str] | None:
    """The environment's secret values, read afresh each time (no cache at all)."""
    found = sorted({v for k, v in os.environ.items()
                    if len(v) >= redaction._MIN_ENV_SECRET
                    and k not in redaction._NOT_SECRET_ENV and redaction.secret_name(k)
                    and not redaction._existing_path(v)}, key=len, reverse=True)
    return re.compile("|".join(re.escape(v) for v in found)) if found else None


def reference_redact(text: str) -> str:
    """Redaction as it was before the guards: every pattern, one after another."""
    if not text:
        return text
    text = redaction.fix_text(text)
    for pattern in redaction._secrets:
        text = pattern.sub(REDACTED, text)
    env = reference_env_pattern()
    if env is not None:
        text = env.sub(REDACTED, text)
    for pattern in redaction._compiled:
        text = pattern.sub(redaction._sub_keep, text)
    if "=" in text or ":" in text:
        text = redaction._redact_pairs(text)
    for pattern in [*redaction._custom, *redaction._env_patterns()]:
        text = pattern.sub(REDACTED, text)
    return text


def reference_spans(text: str) -> list[tuple[int, int]]:
    """``secret_spans`` before the guards: every pattern's matches, in order."""
    spans: list[tuple[int, int]] = []
    env = reference_env_pattern()
    for pattern in [*redaction._secrets, *([env] if env is not None else []),
                    *redaction._compiled, *redaction._custom, *redaction._env_patterns()]:
        spans.extend(m.span() for m in pattern.finditer(text))
    spans.extend((a, c) for a, _, c in redaction._pair_spans(text))
    return spans


def reference_marks(text: str) -> list[tuple[int, int]]:
    """``secret_marks`` before the guards."""
    spans: list[tuple[int, int]] = []
    env = reference_env_pattern()
    for pattern in [*([env] if env is not None else []), *redaction._compiled,
                    *redaction._custom, *redaction._env_patterns()]:
        for match in pattern.finditer(text):
            start = match.end("keep") if "keep" in pattern.groupindex and \
                match.group("keep") is not None else match.start()
            if match.end() > start:
                spans.append((start, match.end()))
    spans.extend((b, c) for _, b, c in redaction._pair_spans(text))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def reference_mask(text: str) -> str:
    for pattern in redaction._secrets:
        text = pattern.sub(REDACTED, text)
    return text


def printed(key: bytes) -> list[str]:
    """``key`` as people and tools print it."""
    number = int.from_bytes(key, "big")
    b64 = base64.b64encode(key).decode()
    forms = [
        key.hex(), key.hex().upper(), key.hex(":"), key.hex(" "), key.hex("-", 2),
        ", ".join(f"0x{b:02x}" for b in key), "".join(f"\\x{b:02x}" for b in key),
        str(list(key)), " ".join(map(str, key)), str(number),
        str(int.from_bytes(key, "little")), hex(number), repr(key),
        key.decode("latin-1"), key.decode("utf-8", "replace"),
        b64, b64[:20] + "\n" + b64[20:], base64.urlsafe_b64encode(key).decode(),
        base64.b64encode(b"xy" + key + b"z").decode(),
        base64.b64encode(b"x" + key).decode(), base64.b32encode(key).decode(),
        base64.b32encode(b"abc" + key).decode(),
        "".join(f"%{b:02X}" for b in key), " ".join(f"{b:08b}" for b in key),
        "".join(f"{b:08b}" for b in key), " ".join(f"{b:03o}" for b in key),
        key[:16].hex(), key[16:].hex(" "),
    ]
    for size in (2, 4, 8):
        forms.append(" ".join(f"{int.from_bytes(key[i:i + size], 'little'):0{2 * size}x}"
                              for i in range(0, 16, size)))
    forms.append(" ".join(f"{int.from_bytes(key[i:i + 2], 'little'):06o}"
                          for i in range(0, 16, 2)))
    forms.append("  ".join(f"{int.from_bytes(key[i:i + 2], 'little')}"
                           for i in range(16, 32, 2)))
    text = "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in key[:16])
    forms.append(f"00000000: {key[:16].hex(' ')}  {text}\n")
    forms.append(f"00000010  {key[16:].hex(' ')}  |{text}|\n")
    return forms


def near_misses(text: str, rng: random.Random) -> list[str]:
    """``text`` cut, with a character changed, doubled, or split by a space."""
    if len(text) < 2:
        return [text]
    i = rng.randrange(1, len(text))
    changed = text[:i] + ("0" if text[i] != "0" else "1") + text[i + 1:]
    return [text[:i], text[i:], changed, text[:i] + " " + text[i:], text[:i] + "\n" + text[i:],
            text + text, text[::-1], text.lower(), text.upper()]


UNICODE = [
    "Bearer abcdefghijklmnop", "BEARER abcdefghijklmnop", "toKen abcdefghijklmnop",  # Kelvin
    "baſic abcdefghijklmnop", "BASİC abcdefghijklmnop", "ｓｋ-abcdefghijklmnopqrst",
    "sk-abcdefghijklmnopqrst\u200b", "x\ud800sk-abcdefghijklmnopqrst", "ключ sk-" + "я" * 20,
    "password：hunter2hunter2", "ＡＫＩＡ" + "A" * 16, "eyJ\u00e9abcde.fghij.klmno",
    "https://user:pässwörd@host/x", "\\nsk-abcdefghijklmnopqrst", "\\tghp_" + "a" * 30,
]

NEAR = [
    "sk-short", "ask-abcdefghijklmnopqrst", "sk_live_short", "AKIA123", "AKIAIOSFODNN7EXAMPL",
    "ghp_" + "a" * 29, "gh_" + "a" * 40, "github_pat_short", "xoxq-1234567890", "xox-1234567890",
    "AIza" + "b" * 34, "ya29." + "c" * 19, "hf_" + "d" * 29, "gsk_" + "e" * 29,
    "xai-" + "f" * 29, "r8_" + "g" * 29, "eyJabcd.efghi.jklmn", "Bearer short", "tokens of x",
    "-----BEGIN PUBLIC KEY-----\nabc\n-----END PUBLIC KEY-----", "http://host/x:y@z",
    "mailto:me@x", "x://:@", "[REDACTED]", "[REDACTED]sk-abcdefghijklmnopqrst",
    "sk-[REDACTED]abcdefghijklmnop", "https://hooks.slack.com/service/T0", "max_tokens=1000",
]


def corpus(keys: list[bytes], env_value: str) -> list[str]:
    rng = random.Random(27)
    base: list[str] = [text for text, _ in SHAPES] + [secret for _, secret in SHAPES]
    base += UNICODE + NEAR + [env_value, env_value.upper()]
    for key in keys:
        base += printed(key)
    found = list(base)
    for text in base:
        found += near_misses(text, rng)
        found += [f"{text} and then some words", f"some words, then {text}",
                  f"{text}{text}", f"{text}\n{text}", f'{{"k": "{text}"}}', f"x={text}",
                  f"Authorization: Bearer {text}", f"token {text}", f"{text}[REDACTED]"]
    # overlaps: two secrets fused, nested, or one inside the other's form
    for _ in range(400):
        a, b = rng.choice(base), rng.choice(base)
        cut = rng.randrange(0, len(a) + 1)
        found += [a[:cut] + b + a[cut:], a + b, a + rng.choice(" \n\t=:,;./-_") + b]
    found += ["", " ", "a", "é", "\n", "running", "task-0007", "2026-11-26T11:00:00Z"]
    long_text = "ordinary words and numbers 1234 5678 " * 500
    middle = len(long_text) // 2
    for text in base[:40:2] + printed(keys[0])[:8]:
        found += [text + long_text, long_text + text,
                  long_text[:middle] + text + long_text[middle:]]
    return found


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    monkeypatch.setenv("GUARD_TEST_API_KEY", "plain-looking-value-42")
    made = [os.urandom(32), bytes(range(200, 232)), b"AB\x01CDE\x02FGHIJ\x03 KLMNOPQRSTUVWXYZabc",
            b"0123456789abcdef0123456789abcdef"]
    for key in made:
        redaction.add_secret(key)
    return made


def test_guarded_redaction_masks_exactly_what_the_plain_sequence_masked(keys):
    texts = corpus(keys, "plain-looking-value-42")
    assert len(texts) > 5000
    masked = 0
    for text in texts + texts[::3]:  # again: a short text found clean is not searched twice
        want = reference_redact(text)
        assert redact_text(text) == want, text[:200]
        assert mask_keys(text) == reference_mask(text), text[:200]
        masked += want != redaction.fix_text(text)
    assert masked > len(texts) // 3  # the corpus holds secrets, not only near misses


def test_spans_and_marks_are_found_alike(keys):
    for text in corpus(keys, "plain-looking-value-42")[::3]:
        assert redaction.secret_spans(text) == reference_spans(text), text[:200]
        assert redaction.secret_marks(text) == reference_marks(text), text[:200]


def test_records_scrub_alike(keys):
    for text in corpus(keys, "plain-looking-value-42")[::7]:
        record = {"kind": "task", "prompt": text, "notes": [text, {"deep": text}], text: 1}
        clean = scrub(record)
        assert clean["prompt"] == reference_redact(text)
        assert clean["notes"] == [reference_redact(text), {"deep": reference_redact(text)}]


def test_each_guard_holds_for_every_text_its_pattern_matches(keys):
    steps = redaction._steps(redaction._env_value_pattern()).steps
    assert sum(step.literals is None and step.folded is None for step in steps) <= 1
    texts = corpus(keys, "plain-looking-value-42")
    for step in steps:
        for text in texts:
            if step.pattern.search(text) is None:
                continue
            if step.literals is not None:
                hay = "".join(text.split()) if step.squeezed else text
                assert any(literal in hay for literal in step.literals), (step, text[:200])
            elif step.folded is not None:
                assert step.folded.search(text) is not None, (step, text[:200])


ODD_PATTERNS = [
    r"(?i)api[-_ ]?key\s*=\s*\w+", r"a\s*b\s*c", r"a\s*\ \s*b", r"(?:ab|cd)ef",
    r"x(?=yz)yz", r"(?<=q)rst", r"[ab][cd][ef]", r"(?P<g>ab)(?P=g)", r"(?i:ab)cd",
    r"\bword\b", r"a|b", r"(?:)x", r"ab?c", r"(?s)a.b", r"(?m)^ab$", r"(ab)+c",
    r"(?x) a b  c", r"[^a]bc", r"(?a)(?i)k\s*s", r"(?i)ſt", r"(?i)k", r"a\s{0,2}b",
    r"a\s+b", r"(?:a\s*b|c\s*d)e", r"ab\s*(?=c)c",
]


@pytest.mark.parametrize("source", ODD_PATTERNS)
def test_guards_of_odd_patterns_hold(source):
    pattern = re.compile(source)
    literals, squeezed = redaction._guard(pattern)
    rng = random.Random(source)
    alphabet = "abcdefkqrstxyzABK \t\nſK_-=ſ"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))
             for _ in range(4000)]
    texts += ["abc", "a b c", "a  b", "abab", "ABCD", "word", "api key = x", "ſt", "K", "K s",
              "k s", "ab\nc", "a\u2003b\u3000c", "ab c", "cd e", "abcdef"]
    step = redaction._step(pattern, False)
    for text in texts:
        if pattern.search(text) is None:
            continue
        if literals is not None and step.literals is not None:
            hay = "".join(text.split()) if squeezed else text
            assert any(literal in hay for literal in literals), (source, text, literals)
        if step.folded is not None:
            assert step.folded.search(text) is not None, (source, text)
        assert redaction._run(redaction._Plan.of([step]), text) == pattern.sub(REDACTED, text)


def test_a_key_added_after_the_steps_were_made_is_masked_at_once():
    text = "the key: " + "0f1e2d3c4b5a69788796a5b4c3d2e1f0" * 2
    assert redact_text(text) == text  # steps made without it
    redaction.add_secret(bytes.fromhex("0f1e2d3c4b5a69788796a5b4c3d2e1f0" * 2))
    assert redact_text(text) == f"the key: {REDACTED}"
    assert mask_keys(text) == f"the key: {REDACTED}"


def test_a_key_forgotten_is_no_longer_masked():
    held = redaction._secrets
    key = bytes(range(64, 96))
    redaction.add_secret(key)
    assert redact_text(key.hex()) == REDACTED
    with redaction._lock:  # what tests/conftest.py does after each test
        redaction._secrets = held
        redaction._secret_values.discard(key)
    assert redact_text(key.hex()) == key.hex()


def test_a_variable_set_changed_or_removed_is_followed_at_once(monkeypatch):
    text = "values: first-secret-value and second-secret-value"
    assert redact_text(text) == text
    monkeypatch.setenv("LATE_SERVICE_TOKEN", "first-secret-value")
    assert redact_text(text) == f"values: {REDACTED} and second-secret-value"
    monkeypatch.setenv("LATE_SERVICE_TOKEN", "second-secret-value")  # same name, new value
    assert redact_text(text) == f"values: first-secret-value and {REDACTED}"
    assert scrub({"t": text}) == {"t": f"values: first-secret-value and {REDACTED}"}
    monkeypatch.delenv("LATE_SERVICE_TOKEN")
    assert redact_text(text) == text


def test_a_pattern_added_after_a_text_was_found_clean_is_applied(monkeypatch):
    text = "ticket ACME-12345678 and INTERNAL-orion"
    assert redact_text(text) == text
    assert redact_text(text) == text  # now known clean
    redaction.add_pattern(r"ACME-\d{8}")
    try:
        assert redact_text(text) == f"ticket {REDACTED} and INTERNAL-orion"
        monkeypatch.setenv("AGENT_KERNEL_REDACT", "INTERNAL-[a-z]+")
        assert redact_text(text) == f"ticket {REDACTED} and {REDACTED}"
    finally:
        redaction.clear_patterns()
    monkeypatch.delenv("AGENT_KERNEL_REDACT")
    assert redact_text(text) == text


def test_only_unchanged_short_texts_are_kept():
    secret = "sk-" + "k" * 30
    assert redact_text(secret) == REDACTED
    assert redact_text("plain words") == "plain words"
    kept = redaction._clean[1]
    assert "plain words" in kept and secret not in kept
    long_text = "plain words " * 100
    assert redact_text(long_text) == long_text and long_text not in kept


def test_one_search_finds_where_any_guard_literal_is():
    rng = random.Random(5)
    for _ in range(200):
        words = {"".join(rng.choice("abcAB_-") for _ in range(rng.randrange(1, 6)))
                 for _ in range(rng.randrange(1, 30))}
        tree = re.compile(redaction._trie(words))
        for _ in range(30):
            text = "".join(rng.choice("abcAB_- x") for _ in range(rng.randrange(0, 25)))
            assert (tree.search(text) is not None) == any(w in text for w in words), (
                words, text)


def test_a_step_with_no_guard_that_changes_the_text_lets_every_guard_look_again():
    digits = redaction._step(re.compile(r"\d+"), False)  # no literal: no guard
    tail = redaction._step(re.compile(r"ACTED\]"), False)  # only [REDACTED] makes it
    assert digits.literals is None and digits.folded is None and tail.literals == ("ACTED]",)
    plan = redaction._Plan.of([digits, tail])
    assert plan.bare == (digits,)
    assert redaction._run(plan, "abc 123") == f"abc [RED{REDACTED}"
    assert redaction._run(plan, "abc") == "abc"


def test_a_long_secret_variable_gets_a_short_guard(monkeypatch):
    value = "v" + "0123456789" * 600
    monkeypatch.setenv("HUGE_SERVICE_TOKEN", value)
    monkeypatch.setenv("OTHER_SERVICE_TOKEN", "w" + "9876543210" * 500)
    step = redaction._step(redaction._env_value_pattern(), False)
    assert step.literals is not None and max(map(len, step.literals)) <= 12
    assert redact_text(f"a {value} b") == f"a {REDACTED} b"
    assert redact_text(f"a {value[:-1]} b") == reference_redact(f"a {value[:-1]} b")
