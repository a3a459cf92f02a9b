"""The ledger heals: verify never raises, torn tails are quarantined, failed writes undo themselves.

Also repair, the CLI's --repair and --anchor, and a fuzz test (random truncation,
random bytes, kill -9 in the middle of 1 MB appends) that checks the next append
succeeds and no complete record is ever lost.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from agent_kernel.__main__ import main as cli
from agent_kernel.core.ledger import GENESIS, LEDGER_FILE, REPAIRED, Ledger, LedgerError
from agent_kernel.core.ledger_lines import digest


def fill(ledger: Ledger, count: int, size: int = 10) -> list[dict[str, Any]]:
    return [ledger.record_event("note", n=i, text="t" * size) for i in range(count)]


def quarantined(ledger: Ledger) -> list[dict[str, Any]]:
    if not ledger.quarantine_path.exists():
        return []
    return [json.loads(line) for line in ledger.quarantine_path.read_text().splitlines()]


def complete_ids(data: bytes) -> set[str]:
    """Ids of the newline-terminated lines that are whole, correctly hashed records."""
    out = set()
    for raw in data.splitlines(keepends=True):
        if not raw.endswith(b"\n"):
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("hash") == digest(record):
            out.add(record["record_id"])
    return out


def assert_nothing_lost(ledger: Ledger, damaged: bytes) -> None:
    """The damaged file is the healed file's prefix plus exactly what was quarantined."""
    now = ledger.path.read_bytes()
    moved = b"".join(base64.b64decode(e["base64"]) for e in quarantined(ledger))
    kept = damaged[:len(damaged) - len(moved)]
    assert kept + moved == damaged
    if not moved and not damaged.endswith(b"\n") and damaged:
        kept += b"\n"  # a whole record that lacked only its newline
    assert now.startswith(kept)
    for entry in quarantined(ledger):
        chunk = base64.b64decode(entry["base64"])
        assert (entry["size"], entry["sha256"]) == (len(chunk), hashlib.sha256(chunk).hexdigest())
    assert complete_ids(damaged) <= {r["record_id"] for r in ledger.records()}


# --- verify never raises and names the line -------------------------------------------------

BAD_LINES = [
    (b"\xff\xfe{}", "not UTF-8 (byte 1"),
    (b"not json at all", "not valid JSON"),
    (b"[1, 2, 3]", "JSON that is not an object (an array)"),
    (b'"just text"', "JSON that is not an object (a string)"),
    (b"42", "JSON that is not an object (a number)"),
    (b'{"record_id": "rec_x", "hash": "a", "hash": "b"}', "duplicate key 'hash'"),
    (b'{"record_id": "rec_x", "agent_id": "a"}', "record has no hash"),
    (b"[" * 100_000, "not valid JSON"),
    (b'{"n": ' + b"9" * 5000 + b', "hash": "x"}', "not valid JSON"),
    (b'{"text": "\\ud800", "hash": "x", "prev_hash": "y"}', "prev_hash does not match"),
]


@pytest.mark.parametrize(("line", "reason"), BAD_LINES)
def test_verify_names_a_bad_middle_line_and_appending_goes_on(tmp_path, line, reason):
    ledger = Ledger(tmp_path / LEDGER_FILE)
    records = fill(ledger, 3)
    lines = ledger.path.read_bytes().splitlines(keepends=True)
    damaged = b"".join([lines[0], line + b"\n", *lines[1:]])
    ledger.path.write_bytes(damaged)
    verdict = ledger.verify()
    assert (verdict.ok, verdict.bad_index, verdict.line, verdict.count) == (False, 1, 2, 1)
    assert reason in verdict.reason and not verdict.repairable
    assert str(verdict).startswith("ledger broken at line 2 (")
    assert verdict.head == records[0]["hash"]
    # middle damage is not a torn tail: the next append chains on from the last record
    after = ledger.record_event("after")
    assert after["prev_hash"] == records[-1]["hash"]
    assert ledger.path.read_bytes().startswith(damaged)
    report = ledger.repair()
    assert report.moved is None and report.damage is not None and report.damage.line == 2
    assert "left in place" in str(report)
    assert ledger.path.read_bytes().startswith(damaged) and not quarantined(ledger)
    assert ledger.verify().bad_index == 1


def test_verify_and_records_never_raise_for_random_bytes(tmp_path):
    rng = random.Random(11)
    ledger = Ledger(tmp_path / LEDGER_FILE)
    good = b"".join(json.dumps(r).encode() + b"\n" for r in fill(ledger, 3))
    pieces = [b"{", b"}", b"[", b'"', b"\\u", b"\n", b":", b",", b"\xff", b"\xc3", b"null",
              b'"hash"', b"1e999", b"NaN", b" "]
    for _ in range(300):
        junk = b"".join(rng.choice(pieces) if rng.random() < 0.7 else rng.randbytes(3)
                        for _ in range(rng.randint(1, 40)))
        ledger.path.write_bytes(good[:rng.randint(0, len(good))] + junk)
        verdict = ledger.verify()
        assert isinstance(verdict.ok, bool) and isinstance(str(verdict), str)
        assert verdict.ok or verdict.reason
        assert isinstance(ledger.records(), list)


def test_records_skip_non_utf8_and_non_object_lines(tmp_path):
    ledger = Ledger(tmp_path / LEDGER_FILE)
    fill(ledger, 2)
    with open(ledger.path, "ab") as handle:
        handle.write(b"\xff\xfe\n[1]\n")
    ledger.record_event("later")
    assert [r["kind"] for r in ledger.records()] == ["note", "note", REPAIRED, "later"]


def test_a_torn_tail_is_reported_as_such(tmp_path):
    ledger = Ledger(tmp_path / LEDGER_FILE)
    records = fill(ledger, 3)
    data = ledger.path.read_bytes()
    ledger.path.write_bytes(data[:-20])
    verdict = ledger.verify()
    assert (verdict.ok, verdict.line, verdict.count, verdict.repairable) == (False, 3, 2, True)
    assert verdict.reason == ("the last line is incomplete (a torn write); "
                              "`python -m agent_kernel verify --repair` moves it aside")
    assert verdict.head == records[1]["hash"]


# --- the next writer heals a torn tail --------------------------------------------------------

def test_next_append_quarantines_a_torn_tail_and_records_it(tmp_path):
    ledger = Ledger(tmp_path / LEDGER_FILE)
    records = fill(ledger, 3)
    data = ledger.path.read_bytes()
    cut = len(data) - 25
    ledger.path.write_bytes(data[:cut])
    after = ledger.record_event("after")
    repaired, last = ledger.records()[-2:]
    assert last["record_id"] == after["record_id"]
    last_good_end = data.rstrip(b"\n").rfind(b"\n") + 1
    assert repaired["kind"] == REPAIRED and repaired["prev_hash"] == records[1]["hash"]
    assert (repaired["offset"], repaired["bytes"]) == (last_good_end, cut - last_good_end)
    assert repaired["sha256"] == hashlib.sha256(data[last_good_end:cut]).hexdigest()
    assert repaired["quarantine"] == "ledger.quarantine.jsonl" and repaired["lines"] == 1
    [entry] = quarantined(ledger)
    assert base64.b64decode(entry["base64"]) == data[last_good_end:cut]
    assert entry["offset"] == last_good_end and entry["ledger_record_id"] == repaired["record_id"]
    assert ledger.verify().ok and ledger.verify().count == 4
    assert_nothing_lost(ledger, data[:cut])


def test_a_whole_last_record_without_its_newline_is_kept(tmp_path):
    ledger = Ledger(tmp_path / LEDGER_FILE)
    records = fill(ledger, 3)
    ledger.path.write_bytes(ledger.path.read_bytes()[:-1])
    assert ledger.verify().ok
    after = ledger.record_event("after")
    assert after["prev_hash"] == records[-1]["hash"]
    assert not quarantined(ledger) and REPAIRED not in {r["kind"] for r in ledger.records()}
    assert ledger.verify().ok and ledger.verify().count == 4


def test_a_ledger_of_only_garbage_starts_a_new_chain(tmp_path):
    ledger = Ledger(tmp_path / LEDGER_FILE)
    garbage = b"\x00\x01 not a ledger\n\xff\nstill not"
    ledger.path.write_bytes(garbage)
    verdict = ledger.verify()
    assert (verdict.ok, verdict.line, verdict.repairable) == (False, 1, True)
    first = ledger.record_event("fresh")
    repaired, fresh = ledger.records()
    assert repaired["kind"] == REPAIRED and repaired["prev_hash"] == GENESIS
    assert (repaired["offset"], repaired["bytes"], repaired["lines"]) == (0, len(garbage), 3)
    assert fresh["record_id"] == first["record_id"]
    assert ledger.verify().ok
    assert_nothing_lost(ledger, garbage)


def test_blank_lines_are_not_damage(tmp_path):
    ledger = Ledger(tmp_path / LEDGER_FILE)
    fill(ledger, 2)
    with open(ledger.path, "ab") as handle:
        handle.write(b"\n  \n")
    assert ledger.verify().ok
    ledger.record_event("after")
    assert ledger.verify().ok and not quarantined(ledger)


HEALER = textwrap.dedent("""
    import sys
    from agent_kernel.core.ledger import Ledger
    ledger = Ledger(sys.argv[1])
    for i in range(int(sys.argv[3])):
        ledger.record_event("note", who=sys.argv[2], n=i)
""")


def test_every_process_heals_and_only_one_repair_is_recorded(tmp_path):
    ledger = Ledger(tmp_path / LEDGER_FILE)
    fill(ledger, 3)
    with open(ledger.path, "ab") as handle:
        handle.write(b'{"kind": "note", "record_id": "rec_torn", "te')
    procs = [subprocess.Popen([sys.executable, "-c", HEALER, str(ledger.path), name, "40"])
             for name in ("a", "b")]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    verdict = ledger.verify()
    assert verdict.ok and verdict.count == 3 + 1 + 80, str(verdict)
    kinds = [r["kind"] for r in ledger.records()]
    assert kinds.count(REPAIRED) == 1 and len(quarantined(ledger)) == 1


# --- a failed append removes its own partial write --------------------------------------------

FULL_DISK = textwrap.dedent("""
    import os, resource, signal, sys
    from agent_kernel.core.ledger import Ledger, LedgerError, LedgerLimits
    # 1 MB lines, as a ledger configured for long lines (or an old one) has them
    ledger = Ledger(sys.argv[1], limits=LedgerLimits(line_bytes=4 << 20))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    limit = os.path.getsize(sys.argv[1]) + 5000
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    try:
        ledger.record_event("big", payload="y" * 1_000_000)
    except LedgerError as exc:
        print(exc)
        sys.exit(3)
""")


def test_a_failed_append_leaves_the_file_byte_identical(tmp_path):
    ledger = Ledger(tmp_path / LEDGER_FILE)
    records = fill(ledger, 3)
    before = ledger.path.read_bytes()
    done = subprocess.run([sys.executable, "-c", FULL_DISK, str(ledger.path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stderr
    assert "File too large" in done.stdout and "partial write was removed" in done.stdout
    assert ledger.path.read_bytes() == before
    after = ledger.record_event("after")
    assert after["prev_hash"] == records[-1]["hash"]
    assert ledger.verify().ok and not quarantined(ledger)


DIES_MID_WRITE = textwrap.dedent("""
    import os, resource, signal, sys
    from agent_kernel.core.ledger import Ledger, LedgerLimits
    # 1 MB lines, as a ledger configured for long lines (or an old one) has them
    ledger = Ledger(sys.argv[1], limits=LedgerLimits(line_bytes=4 << 20))
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # Python ignores it; the default kills
    limit = os.path.getsize(sys.argv[1]) + 300_000
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    ledger.record_event("big", payload="y" * 1_000_000)
""")


def test_a_process_that_dies_mid_write_leaves_a_tail_the_next_heals(tmp_path):
    ledger = Ledger(tmp_path / LEDGER_FILE)
    records = fill(ledger, 3)
    before = ledger.path.read_bytes()
    done = subprocess.run([sys.executable, "-c", DIES_MID_WRITE, str(ledger.path)],
                          capture_output=True, timeout=60)
    assert done.returncode == -signal.SIGXFSZ, done.stderr
    damaged = ledger.path.read_bytes()
    assert damaged.startswith(before) and len(damaged) == len(before) + 300_000
    after = ledger.record_event("after")
    repaired = ledger.records()[-2]
    assert repaired["kind"] == REPAIRED and repaired["prev_hash"] == records[-1]["hash"]
    assert (repaired["offset"], repaired["bytes"]) == (len(before), 300_000)
    assert after["prev_hash"] == repaired["hash"]
    assert ledger.verify().ok and ledger.verify().count == 5
    assert_nothing_lost(ledger, damaged)


def test_an_append_that_cannot_open_the_ledger_raises_ledger_error(tmp_path):
    ledger = Ledger(tmp_path / LEDGER_FILE)
    ledger.path.mkdir()  # something that is not a file stands where the ledger should be
    with pytest.raises(LedgerError, match="cannot open the ledger"):
        ledger.record_event("after")
    assert not ledger.verify().ok and "cannot be read" in ledger.verify().reason


# --- repair and the CLI -----------------------------------------------------------------------

def test_repair_on_a_clean_or_missing_ledger_moves_nothing(tmp_path):
    assert str(Ledger(tmp_path / "none" / LEDGER_FILE).repair()) == "repair: nothing needed moving"
    ledger = Ledger(tmp_path / LEDGER_FILE)
    fill(ledger, 2)
    before = ledger.path.read_bytes()
    report = ledger.repair()
    assert report.moved is None and report.damage is None
    assert ledger.path.read_bytes() == before


def test_cli_repair_reports_what_it_moved(tmp_path, capsys):
    ledger = Ledger(tmp_path / LEDGER_FILE)
    fill(ledger, 3)
    with open(ledger.path, "ab") as handle:
        handle.write(b"\xde\xad\xbe\xef garbage\n")
    assert cli(["verify", "--workspace", str(tmp_path)]) == 1
    assert "line 4 (unreadable): not UTF-8" in capsys.readouterr().out
    assert cli(["verify", "--workspace", str(tmp_path), "--repair"]) == 0
    out = capsys.readouterr().out
    assert "repair: moved 13 bytes (1 line) from offset" in out
    assert "to ledger.quarantine.jsonl" in out and "ledger ok: 4 records verify" in out
    assert cli(["verify", "--workspace", str(tmp_path), "--repair"]) == 0
    assert "repair: nothing needed moving" in capsys.readouterr().out


def test_cli_anchor_catches_an_emptied_or_replaced_ledger(tmp_path, capsys):
    ledger = Ledger(tmp_path / LEDGER_FILE)
    records = fill(ledger, 3)
    assert cli(["verify", "--workspace", str(tmp_path)]) == 0
    head = records[-1]["hash"]
    assert f"head: {head} (record 3)" in capsys.readouterr().out
    fill(ledger, 2)
    assert cli(["verify", "--workspace", str(tmp_path), "--anchor", head]) == 0
    assert cli(["verify", "--workspace", str(tmp_path), "--anchor", records[0]["hash"]]) == 0
    capsys.readouterr()
    ledger.path.write_bytes(b"")  # emptied: the chain alone still verifies
    assert ledger.verify().ok
    assert cli(["verify", "--workspace", str(tmp_path), "--anchor", head]) == 1
    out = capsys.readouterr().out
    assert out.startswith("anchor not found: ") and "is not in the ledger's chain" in out
    assert "ledger broken" not in out  # the chain itself verifies (issue 25)
    fill(ledger, 5)  # replaced by a fresh, perfectly valid chain
    assert ledger.verify().ok and not ledger.verify(anchor=head).ok
    assert cli(["verify", "--workspace", str(tmp_path), "--anchor", "abc"]) == 1
    assert "not a record hash" in capsys.readouterr().out


def test_cli_verify_on_a_folder_without_a_workspace_says_so(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli(["verify", "--workspace", str(empty)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"no workspace to verify: {empty} holds no ledger (ledger.jsonl).")
    assert "ledger ok" not in out and not (empty / LEDGER_FILE).exists()
    assert cli(["verify", "--workspace", str(tmp_path / "nowhere"), "--repair"]) == 1
    assert "nowhere does not exist" in capsys.readouterr().out
    assert not (tmp_path / "nowhere").exists()


# --- fuzzing ----------------------------------------------------------------------------------

BIG_APPENDER = textwrap.dedent("""
    import sys
    from agent_kernel.core.ledger import Ledger, LedgerLimits
    # 1 MB lines, as a ledger configured for long lines (or an old one) has them
    ledger = Ledger(sys.argv[1], limits=LedgerLimits(line_bytes=4 << 20))
    payload = "x" * 1_000_000
    print("ready", flush=True)
    while True:
        ledger.record_event("big", payload=payload)
""")


def _kill_during_appends(path: Path, rng: random.Random, mid_write: bool) -> None:
    """Start a process appending 1 MB records and SIGKILL it at a random moment.

    With ``mid_write`` the kill follows the file's first growth after a random delay,
    so it often lands inside a write; up to three tries until one tears the file. Whether
    one does depends on the machine's timing, so the deterministic death in the middle
    of a write is ``test_a_process_that_dies_mid_write_leaves_a_tail_the_next_heals``.
    """
    for _ in range(3 if mid_write else 1):
        child = subprocess.Popen([sys.executable, "-c", BIG_APPENDER, str(path)],
                                 stdout=subprocess.PIPE, text=True)
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
            time.sleep(rng.uniform(0.0, 0.35))
            if mid_write:
                size = os.stat(path).st_size
                deadline = time.monotonic() + 2
                while os.stat(path).st_size == size and time.monotonic() < deadline:
                    pass
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.kill()
            child.wait(timeout=30)
            if child.stdout is not None:
                child.stdout.close()
        if not path.read_bytes().endswith(b"\n"):
            return


def _needs_repair(damaged: bytes) -> bool:
    """Whether a line is neither blank nor a whole record (a lost last newline is not damage)."""
    for raw in damaged.splitlines(keepends=True):
        terminated = raw.endswith(b"\n")
        if terminated and not raw.strip():
            continue
        if not complete_ids(raw if terminated else raw + b"\n"):
            return True
    return False


@pytest.mark.timeout(120)
def test_fuzz_damage_then_append_repair_and_verify(tmp_path):
    rng = random.Random(20261123)
    for round_ in range(20):
        ledger = Ledger(tmp_path / f"round{round_}" / LEDGER_FILE)
        before = fill(ledger, rng.randint(1, 6), size=rng.randint(0, 3000))
        data = ledger.path.read_bytes()
        mode = ("truncate", "bytes", "kill")[round_ % 3]
        if mode == "truncate":  # somewhere inside the last record, its newline included
            start = data.rstrip(b"\n").rfind(b"\n") + 1
            ledger.path.write_bytes(data[:rng.randint(start + 1, len(data) - 1)])
        elif mode == "bytes":
            junk = rng.randbytes(rng.randint(1, 5000))
            if rng.random() < 0.5:
                junk = junk.replace(b"\n", b"")
            elif rng.random() < 0.5:
                junk += b"\n"
            with open(ledger.path, "ab") as handle:
                handle.write(junk or b"x")
        else:
            _kill_during_appends(ledger.path, rng, mid_write=(round_ // 3) % 3 != 1)
        damaged = ledger.path.read_bytes()
        where = f"round {round_} ({mode}, {len(damaged)} bytes)"

        after = ledger.record_event("after_damage", round=round_)
        ledger.repair()
        verdict = ledger.verify()
        assert verdict.ok, f"{where}: {verdict}"
        ids = [r["record_id"] for r in ledger.records()]
        assert ids[-1] == after["record_id"], where
        assert {r["record_id"] for r in before[:-1]} <= set(ids), where
        if mode != "truncate":
            assert before[-1]["record_id"] in ids, where
        assert_nothing_lost(ledger, damaged)
        repairs = [r for r in ledger.records() if r["kind"] == REPAIRED]
        assert len(repairs) == (1 if _needs_repair(damaged) else 0), where
