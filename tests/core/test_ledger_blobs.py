"""A bounded ledger: large fields go to blobs the chain names, and verify checks every one.

Each test of a guard fails without it: a record that kept its result whole, a verify
that did not open the blobs, a blob written after its record, a repair that removed
a blob would each be caught here.
"""

from __future__ import annotations

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
from agent_kernel.core import ledger_blobs
from agent_kernel.core.ledger import LEDGER_FILE, LIMITS, Ledger, LedgerError, LedgerLimits
from agent_kernel.core.ledger_blobs import BLOB_DIR, PARTIAL_PREFIX
from agent_kernel.core.ledger_lines import GENESIS, canonical, digest
from agent_kernel.core.redaction import REDACTED, scrub
from agent_kernel.core.trust import ApprovalBook

SMALL = LedgerLimits(line_bytes=8 * 1024, preview_bytes=256, blob_bytes=64 * 1024)


def call(ledger: Ledger, result: Any, **extra: Any) -> dict[str, Any]:
    return ledger.record_tool_call(agent_id="a", run_id="r", tool_name="url_fetch",
                                   arguments={"url": "http://example.test/"}, result=result,
                                   success=True, error=None, duration_ms=1, **extra)


def blob_file(ledger: Ledger, record: dict[str, Any], name: str = "result") -> Path:
    return ledger.blob_folder / record["blobs"][name]["blob"]


def workspace_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def line_lengths(ledger: Ledger) -> list[int]:
    return [len(line) for line in ledger.path.read_bytes().splitlines()]


# --- what is written ----------------------------------------------------------------------------

def test_a_large_result_goes_to_a_blob_the_chain_names(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / LEDGER_FILE)
    small = call(ledger, "short answer")
    result = {"content": "tide tables " * 20_000, "status": 200}
    record = call(ledger, result)
    assert "blobs" not in small and small["result"] == "short answer"
    entry = record["blobs"]["result"]
    whole = canonical(result)
    assert (entry["sha256"], entry["bytes"]) == (hashlib.sha256(whole).hexdigest(), len(whole))
    assert (entry["blob"], entry["blob_bytes"]) == (entry["sha256"], entry["bytes"])  # not cut
    data = blob_file(ledger, record).read_bytes()
    assert data == whole and hashlib.sha256(data).hexdigest() == entry["blob"]
    # the line keeps a preview; the blob's name is inside the hashed record
    assert isinstance(record["result"], str) and record["result"].startswith('{"content":"tide')
    assert record["hash"] == digest(record) and max(line_lengths(ledger)) < LIMITS.line_bytes
    assert ledger.full_field(record, "result") == (result, True)
    assert ledger.full_field(small, "result") == ("short answer", True)
    assert ledger.verify().ok and ledger.verify().count == 2


def test_a_result_past_the_blob_limit_is_cut_and_its_whole_hash_kept(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / LEDGER_FILE, limits=SMALL)
    result = {"content": "\0" * 1_000_000}  # 6 MB as JSON: \u0000 per byte
    record = call(ledger, result)
    entry = record["blobs"]["result"]
    whole = canonical(result)
    assert entry["bytes"] == len(whole) > 6_000_000
    assert entry["sha256"] == hashlib.sha256(whole).hexdigest()
    assert entry["blob_bytes"] == SMALL.blob_bytes and entry["blob"] != entry["sha256"]
    assert blob_file(ledger, record).read_bytes() == whole[:SMALL.blob_bytes]
    value, whole_read = ledger.full_field(record, "result")
    assert whole_read is False and value.startswith('{"content":"\\u0000')
    assert workspace_bytes(tmp_path) <= SMALL.record_bound()
    assert ledger.verify().ok


def test_the_blob_limit_is_shared_by_a_records_fields(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / LEDGER_FILE, limits=SMALL)
    record = ledger.record_tool_call(
        agent_id="a", run_id="r", tool_name="t" * 50_000, arguments={"body": "b" * 300_000},
        result="r" * 500_000, success=False, error="e" * 40_000, duration_ms=1)
    assert set(record["blobs"]) == {"tool_name", "arguments", "result", "error"}
    assert sum(e["blob_bytes"] for e in record["blobs"].values()) <= SMALL.blob_bytes
    assert workspace_bytes(tmp_path) <= SMALL.record_bound()
    assert max(line_lengths(ledger)) <= SMALL.line_bytes
    assert ledger.verify().ok


def test_random_records_stay_within_the_bound(tmp_path: Path) -> None:
    rng = random.Random(20261125)
    pieces = ["\0", "é", "漢字", "\"", "\\", "word ", "\n", "\U0001f600", "x"]
    for round_ in range(30):
        folder = tmp_path / f"round{round_}"
        ledger = Ledger(folder / LEDGER_FILE, limits=SMALL)
        fields: dict[str, Any] = {}
        for n in range(rng.randint(1, 9)):
            size = rng.choice([0, 10, 300, 5000, 20_000, 200_000])
            text = "".join(rng.choice(pieces) for _ in range(size // 4 + 1))
            fields[f"field_{n}"] = text if rng.random() < 0.5 else {
                "nested": [text[: size // 8]] * 4, "n": size}
        record = ledger.record_event("fuzz", **fields)
        where = f"round {round_}"
        assert max(line_lengths(ledger)) <= SMALL.line_bytes, where
        assert workspace_bytes(folder) <= SMALL.record_bound(), where
        assert ledger.verify().ok, where
        for name in record.get("blobs", {}):
            value, whole = ledger.full_field(record, name)
            entry = record["blobs"][name]
            assert whole == (entry["blob_bytes"] == entry["bytes"]), where
            if whole:
                assert canonical(value) == canonical(scrub(fields[name])), where


def test_blobs_are_redacted_like_the_record(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / LEDGER_FILE, limits=SMALL)
    key = "sk-" + "A1b2C3d4" * 5
    record = call(ledger, {"content": ("page text " * 2000) + f"api_key={key} " + "x" * 50_000,
                           "password": "hunter2-hunter2"})
    data = blob_file(ledger, record).read_bytes()
    assert key.encode() not in data and b"hunter2" not in data and REDACTED.encode() in data
    assert key not in ledger.path.read_text()


def test_a_record_may_not_name_blobs_itself(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / LEDGER_FILE)
    with pytest.raises(LedgerError, match="'blobs' is the ledger's own field"):
        ledger.record_event("note", blobs={"result": {"blob": "0" * 64}})
    assert not ledger.path.exists() or ledger.path.read_bytes() == b""


def test_every_blob_is_whole_on_disk_before_its_record_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = Ledger(tmp_path / LEDGER_FILE, limits=SMALL)
    seen: list[str] = []
    make_lines = Ledger._lines  # where records are chained into lines, under the lock

    def checked(self: Ledger, bodies: list[dict[str, Any]], last: str
                ) -> tuple[list[str], str]:
        for body in bodies:
            for entry in body.get("blobs", {}).values():
                data = (self.blob_folder / entry["blob"]).read_bytes()
                assert hashlib.sha256(data).hexdigest() == entry["blob"]
                seen.append(entry["blob"])
        assert not [p for p in self.blob_folder.iterdir() if p.name.startswith(PARTIAL_PREFIX)]
        return make_lines(self, bodies, last)

    monkeypatch.setattr(Ledger, "_lines", checked)
    record = call(ledger, "x" * 100_000)
    assert seen == [record["blobs"]["result"]["blob"]]


# --- verify checks every blob ---------------------------------------------------------------------

@pytest.fixture
def two_blobs(tmp_path: Path) -> tuple[Ledger, list[dict[str, Any]]]:
    ledger = Ledger(tmp_path / LEDGER_FILE, limits=SMALL)
    records = [call(ledger, "first"), call(ledger, "a" * 20_000), call(ledger, "b" * 20_000),
               call(ledger, "last")]
    assert ledger.verify().ok
    return ledger, records


def _verdict(ledger: Ledger, capsys: pytest.CaptureFixture[str]) -> str:
    assert cli(["verify", "--workspace", str(ledger.path.parent)]) == 1
    return capsys.readouterr().out


def test_verify_catches_a_changed_blob(two_blobs: Any, capsys: pytest.CaptureFixture[str]
                                       ) -> None:
    ledger, records = two_blobs
    path = blob_file(ledger, records[2])
    data = bytearray(path.read_bytes())
    data[5000:5001] = b"c"  # same size, one byte changed
    path.write_bytes(bytes(data))
    verdict = ledger.verify()
    assert not verdict.ok and verdict.line == 3 and verdict.bad_record_id == records[2]["record_id"]
    assert "its result is kept in ledger-blobs/" in verdict.reason
    assert "was changed" in verdict.reason
    assert verdict.count == 2 and verdict.head == records[1]["hash"] and not verdict.repairable
    out = _verdict(ledger, capsys)
    assert f"line 3 ({records[2]['record_id']})" in out and "was changed" in out


def test_verify_catches_a_missing_blob(two_blobs: Any, capsys: pytest.CaptureFixture[str]
                                       ) -> None:
    ledger, records = two_blobs
    blob_file(ledger, records[1]).unlink()
    verdict = ledger.verify()
    assert not verdict.ok and verdict.line == 2 and "which is missing" in verdict.reason
    assert "restore it from a copy" in verdict.reason
    out = _verdict(ledger, capsys)
    assert f"line 2 ({records[1]['record_id']})" in out and "is missing" in out
    # repair cannot heal it, says so, and leaves everything in place
    before = ledger.path.read_bytes()
    assert cli(["verify", "--workspace", str(ledger.path.parent), "--repair"]) == 1
    assert "line 2 is damaged" in capsys.readouterr().out
    assert ledger.path.read_bytes() == before and blob_file(ledger, records[2]).exists()


def test_verify_catches_swapped_blobs(two_blobs: Any) -> None:
    ledger, records = two_blobs
    first, second = blob_file(ledger, records[1]), blob_file(ledger, records[2])
    a, b = first.read_bytes(), second.read_bytes()
    assert len(a) == len(b)
    first.write_bytes(b)
    second.write_bytes(a)
    verdict = ledger.verify()
    assert not verdict.ok and verdict.line == 2 and "was changed" in verdict.reason


def test_verify_catches_a_shortened_or_replaced_blob(two_blobs: Any) -> None:
    ledger, records = two_blobs
    path = blob_file(ledger, records[1])
    path.write_bytes(path.read_bytes()[:100])
    verdict = ledger.verify()
    assert not verdict.ok and "has 100 bytes, not the 20,002 on record" in verdict.reason
    path.unlink()
    os.symlink(blob_file(ledger, records[2]), path)  # a name that points at another blob
    assert "cannot be opened" in ledger.verify().reason


def test_a_forged_blob_entry_is_named_and_never_followed(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / LEDGER_FILE)
    call(ledger, "first")
    record = json.loads(ledger.path.read_text().splitlines()[0])
    record["blobs"] = {"result": {"sha256": "0" * 64, "bytes": 5, "blob": "../ledger.jsonl",
                                  "blob_bytes": 5}}
    record["hash"] = digest(record)  # a writer who rewrote the line and its hash
    ledger.path.write_text(json.dumps(record) + "\n")
    verdict = ledger.verify()
    assert not verdict.ok and "has no valid blob (64 hex digits)" in verdict.reason


# --- verify's cost is bounded by what the ledger could have written ------------------------------

def plant(folder: Path, entries: list[dict[str, Any]]) -> Path:
    """A ledger whose chain is valid (a planter recomputes it), each record naming ``blobs``."""
    (folder / BLOB_DIR).mkdir(parents=True, exist_ok=True)
    previous, lines = GENESIS, []
    for number, blobs in enumerate(entries):
        record = {"kind": "tool_call", "record_id": f"rec_{number}", "tool_name": "url_fetch",
                  "result": "(preview)", "blobs": blobs, "prev_hash": previous}
        record["hash"] = previous = digest(record)
        lines.append(json.dumps(record))
    path = folder / LEDGER_FILE
    path.write_text("\n".join(lines) + "\n")
    return path


class CountedHashes:
    """Counts the blob files verify opens and hashes (``ledger_blobs._hash_file``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, refuse: bool = False) -> None:
        self.names: list[str] = []
        real = ledger_blobs._hash_file

        def counted(path: Path, expected_size: int) -> tuple[int, str] | str:
            self.names.append(path.name)
            if refuse:
                raise AssertionError(f"verify read {path.name} ({expected_size:,} bytes)")
            return real(path, expected_size)

        monkeypatch.setattr(ledger_blobs, "_hash_file", counted)


def test_a_planted_blob_past_the_limit_is_refused_before_it_is_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # 4 GiB that cost nothing on disk: hashing it took 18.6 s, and the planter picks the size
    size, name = 4 << 30, "ab" * 32
    path = plant(tmp_path, [{"result": {"sha256": "cd" * 32, "bytes": size + 1, "blob": name,
                                        "blob_bytes": size}}])
    with open(tmp_path / BLOB_DIR / name, "wb") as handle:
        handle.truncate(size)
    reads = CountedHashes(monkeypatch, refuse=True)
    verdict = Ledger(path).verify()
    assert not verdict.ok and verdict.line == 1 and verdict.bad_record_id == "rec_0"
    assert "names a blob of 4,294,967,296 bytes, more than the 2,097,152 a record may keep" \
        in verdict.reason and "the ledger never writes one, so it was planted" in verdict.reason
    assert cli(["verify", "--workspace", str(tmp_path)]) == 1
    assert "more than the 2,097,152 a record may keep" in capsys.readouterr().out
    # the restore's check of approvals (one planted trigger makes it run) refuses it the same way
    book = ApprovalBook(Ledger(path))
    assert "more than the 2,097,152 a record may keep" in (book.reason("0" * 64) or "")
    assert reads.names == []


def test_blobs_past_the_limit_together_are_refused_before_they_are_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    each = LIMITS.blob_bytes * 3 // 4  # each within the limit, together past it
    blobs = {}
    for field in ("result", "arguments", "error"):
        data = os.urandom(each)
        name = hashlib.sha256(data).hexdigest()
        (tmp_path / BLOB_DIR).mkdir(exist_ok=True)
        (tmp_path / BLOB_DIR / name).write_bytes(data)
        blobs[field] = {"sha256": name, "bytes": each, "blob": name, "blob_bytes": each}
    reads = CountedHashes(monkeypatch, refuse=True)
    verdict = Ledger(plant(tmp_path, [blobs])).verify()
    assert not verdict.ok and "its blobs hold 4,718,592 bytes together, more than the " \
        "2,097,152 a record may keep" in verdict.reason
    assert reads.names == []


def test_a_blob_named_by_many_records_is_hashed_once(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # 2,000 planted records naming one 2 MiB blob took 8.1 s: 4 GiB hashed
    data = os.urandom(LIMITS.blob_bytes)
    name = hashlib.sha256(data).hexdigest()
    entry = {"result": {"sha256": name, "bytes": len(data), "blob": name,
                        "blob_bytes": len(data)}}
    path = plant(tmp_path, [entry] * 2000)
    (tmp_path / BLOB_DIR / name).write_bytes(data)
    reads = CountedHashes(monkeypatch)
    verdict = Ledger(path).verify()
    assert verdict.ok and verdict.count == 2000 and reads.names == [name]
    # a blob the same size with another name is its own blob, read once more
    other = os.urandom(len(data))
    other_name = hashlib.sha256(other).hexdigest()
    (tmp_path / BLOB_DIR / other_name).write_bytes(other)
    second = {"result": {**entry["result"], "sha256": other_name, "blob": other_name}}
    reads.names.clear()
    assert Ledger(plant(tmp_path, [entry, second] * 50)).verify().ok
    assert sorted(reads.names) == sorted([name, other_name])
    # once per verify: a changed blob is caught by the next one, at the first record naming it
    (tmp_path / BLOB_DIR / name).write_bytes(bytes(len(data)))
    verdict = Ledger(path).verify()
    assert not verdict.ok and verdict.line == 1 and "was changed" in verdict.reason


def test_records_the_ledger_wrote_with_one_result_share_one_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = Ledger(tmp_path / LEDGER_FILE, limits=SMALL)
    records = [call(ledger, "the same page " * 5_000) for _ in range(20)]
    assert len({r["blobs"]["result"]["blob"] for r in records}) == 1
    reads = CountedHashes(monkeypatch)
    assert ledger.verify().ok and ledger.verify().count == 20 and len(reads.names) == 2


def test_a_field_is_not_read_from_a_blob_past_the_limit(tmp_path: Path) -> None:
    data = canonical("x" * (SMALL.blob_bytes + 10))
    name = hashlib.sha256(data).hexdigest()
    path = plant(tmp_path, [{"result": {"sha256": name, "bytes": len(data), "blob": name,
                                        "blob_bytes": len(data)}}])
    (tmp_path / BLOB_DIR / name).write_bytes(data)
    record = json.loads(path.read_text())
    assert Ledger(path, limits=SMALL).full_field(record, "result") == ("(preview)", False)
    assert Ledger(path).full_field(record, "result") == ("x" * (SMALL.blob_bytes + 10), True)
    assert "a record may keep" in Ledger(path, limits=SMALL).verify().reason
    assert Ledger(path).verify().ok


def test_old_ledgers_without_blobs_still_verify(tmp_path: Path) -> None:
    # written as the ledger wrote before it was bounded: every field inline, 1 MB lines
    old = Ledger(tmp_path / LEDGER_FILE, limits=LedgerLimits(line_bytes=4 << 20))
    records = [call(old, "x" * 1_000_000), call(old, {"content": "y" * 300_000})]
    assert all("blobs" not in r for r in records) and min(line_lengths(old)) > 300_000
    assert not (tmp_path / BLOB_DIR).exists()
    ledger = Ledger(tmp_path / LEDGER_FILE)
    verdict = ledger.verify()
    assert verdict.ok and verdict.count == 2
    after = call(ledger, "z" * 100_000)  # and the chain goes on, bounded from here
    assert after["prev_hash"] == records[-1]["hash"] and "blobs" in after
    assert ledger.verify().ok and ledger.verify().count == 3


# --- torn blob writes and repair ------------------------------------------------------------------

DIES_WRITING_A_BLOB = textwrap.dedent("""
    import os, resource, signal, sys
    from agent_kernel.core.ledger import Ledger
    ledger = Ledger(sys.argv[1])
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # Python ignores it; the default kills
    resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, resource.RLIM_INFINITY))
    ledger.record_event("big", payload="y" * 1_000_000)
""")

DIES_BEFORE_THE_RECORD = textwrap.dedent("""
    import os, signal, sys
    from agent_kernel.core.ledger import Ledger
    def die(*args):
        os.kill(os.getpid(), signal.SIGKILL)
    Ledger._lines = die  # where the records become lines, after the blobs are written
    Ledger(sys.argv[1]).record_event("big", payload="y" * 1_000_000)
""")


def _run(script: str, ledger: Ledger) -> int:
    done = subprocess.run([sys.executable, "-c", script, str(ledger.path)],
                          capture_output=True, text=True, timeout=60)
    return done.returncode


def _named_blobs(ledger: Ledger) -> set[str]:
    return {e["blob"] for r in ledger.records() for e in r.get("blobs", {}).values()}


def test_a_process_killed_mid_blob_leaves_no_record_naming_it(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / LEDGER_FILE)
    kept = call(ledger, "k" * 100_000)
    before = ledger.path.read_bytes()
    assert _run(DIES_WRITING_A_BLOB, ledger) == -signal.SIGXFSZ
    partials = [p for p in ledger.blob_folder.iterdir() if p.name.startswith(PARTIAL_PREFIX)]
    assert len(partials) == 1 and partials[0].stat().st_size == 200_000
    assert ledger.path.read_bytes() == before  # the record was never written
    assert ledger.verify().ok and _named_blobs(ledger) == {kept["blobs"]["result"]["blob"]}
    after = ledger.record_event("after", payload="z" * 100_000)
    assert after["prev_hash"] == kept["hash"] and ledger.verify().ok
    # a fresh partial may belong to a write in progress: repair waits until it is stale
    assert ledger.repair().partials_removed == [] and partials[0].exists()
    stale = time.time() - 3600
    os.utime(partials[0], (stale, stale))
    for blob in ledger.blob_folder.iterdir():  # named blobs, however old, are never removed
        os.utime(blob, (stale, stale))
    report = ledger.repair()
    assert report.partials_removed == [partials[0].name] and "removed 1 partial blob" in str(
        report)
    assert sorted(p.name for p in ledger.blob_folder.iterdir()) == sorted(_named_blobs(ledger))
    assert ledger.verify().ok and ledger.verify().count == 2


def test_a_process_killed_between_blob_and_record_leaves_an_unnamed_blob(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / LEDGER_FILE)
    kept = call(ledger, "first")
    assert _run(DIES_BEFORE_THE_RECORD, ledger) == -signal.SIGKILL
    [orphan] = list(ledger.blob_folder.iterdir())
    assert hashlib.sha256(orphan.read_bytes()).hexdigest() == orphan.name  # whole, not partial
    assert ledger.verify().ok and ledger.records() == [kept]
    ledger.repair()
    assert orphan.exists()  # not a partial file: left in place
