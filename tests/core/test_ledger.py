"""The ledger: spec 001's record fields, the hash chain, verify(), concurrency, redaction, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agent_kernel import Agent
from agent_kernel.core.ledger import GENESIS, LEDGER_FILE, Ledger
from agent_kernel.core.ledger_lines import digest
from agent_kernel.core.redaction import REDACTED, scrub

SPEC_FIELDS = {"record_id", "agent_id", "run_id", "tool_name", "arguments", "result", "success",
               "error", "timestamp", "duration_ms"}


def fill(ledger: Ledger, count: int) -> list[dict[str, Any]]:
    return [
        ledger.record_tool_call(agent_id="a", run_id="run_1", tool_name="echo",
                                arguments={"value": str(i)}, result=str(i), success=True,
                                error=None, duration_ms=i)
        for i in range(count)
    ]


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


def test_tool_call_records_carry_spec_fields(tmp_path):
    agent = Agent(model="demo", workspace=tmp_path, agent_id="spec-agent")
    result = agent.run("echo hello ledger")
    assert result.status == "ok"
    [record] = [r for r in agent.ledger.records() if r.get("kind") == "tool_call"]
    assert set(record) >= SPEC_FIELDS
    assert record["record_id"].startswith("rec_")
    assert (record["agent_id"], record["run_id"], record["tool_name"]) == (
        "spec-agent", result.run_id, "echo")
    assert record["arguments"] == {"value": "hello ledger"}
    assert (record["result"], record["success"], record["error"]) == ("hello ledger", True, None)
    assert isinstance(record["duration_ms"], int) and record["duration_ms"] >= 0
    assert record["timestamp"].endswith("Z") and "T" in record["timestamp"]
    assert record["prev_hash"] == GENESIS and len(record["hash"]) == 64


def test_failed_call_record_has_error_and_no_result(tmp_path):
    ledger = Ledger(tmp_path / LEDGER_FILE)
    record = ledger.record_tool_call(agent_id="a", run_id="r", tool_name="query_state",
                                     arguments={"state_name": "x"}, result=None, success=False,
                                     error="No state provider registered for 'x'", duration_ms=3)
    assert record["success"] is False and record["result"] is None
    assert ledger.records()[0]["error"] == "No state provider registered for 'x'"


def test_log_decision_records(tmp_path):
    agent = Agent(model="demo", workspace=tmp_path, agent_id="decider")
    result = agent.run("log decision: waiting for calmer markets")
    assert result.status == "ok"
    decision = next(r for r in agent.ledger.records() if r.get("kind") == "decision")
    assert {"decision_id", "agent_id", "run_id", "reasoning", "decision_type",
            "timestamp"} <= set(decision)
    assert decision["decision_id"].startswith("dec_")
    assert (decision["agent_id"], decision["run_id"]) == ("decider", result.run_id)
    assert decision["reasoning"] == "waiting for calmer markets"
    assert decision["decision_type"] == "other"
    call = next(c for c in result.tool_calls if c.tool_name == "log_decision")
    assert call.result["decision_id"] == decision["decision_id"]
    assert agent.ledger.verify().ok


def test_chain_links_each_record_to_the_one_before(tmp_path):
    ledger = Ledger(tmp_path / LEDGER_FILE)
    records = fill(ledger, 4)
    assert records[0]["prev_hash"] == GENESIS
    for before, after in zip(records, records[1:]):  # noqa: B905
        assert after["prev_hash"] == before["hash"]
    for record in records:
        assert digest(record) == record["hash"]
    verdict = ledger.verify()
    assert verdict.ok and verdict.count == 4 and str(verdict) == "ledger ok: 4 records verify"


def test_verify_names_a_tampered_record(tmp_path):
    ledger = Ledger(tmp_path / LEDGER_FILE)
    records = fill(ledger, 5)
    lines = lines_of(ledger.path)
    changed = json.loads(lines[2])
    changed["result"] = "something else"
    lines[2] = json.dumps(changed) + "\n"
    ledger.path.write_text("".join(lines), encoding="utf-8")
    verdict = ledger.verify()
    assert not verdict.ok
    assert (verdict.bad_index, verdict.bad_record_id) == (2, records[2]["record_id"])
    assert verdict.reason == "hash does not match the content"
    assert records[2]["record_id"] in str(verdict)


def test_verify_catches_a_tampered_record_whose_hash_was_recomputed(tmp_path):
    ledger = Ledger(tmp_path / LEDGER_FILE)
    records = fill(ledger, 5)
    lines = lines_of(ledger.path)
    changed = json.loads(lines[1])
    changed["success"] = False
    changed["hash"] = digest(changed)
    lines[1] = json.dumps(changed) + "\n"
    ledger.path.write_text("".join(lines), encoding="utf-8")
    verdict = ledger.verify()
    assert (verdict.ok, verdict.bad_index, verdict.bad_record_id) == (
        False, 2, records[2]["record_id"])
    assert "prev_hash" in verdict.reason


def test_verify_names_the_record_after_a_deleted_one(tmp_path):
    ledger = Ledger(tmp_path / LEDGER_FILE)
    records = fill(ledger, 5)
    lines = lines_of(ledger.path)
    del lines[2]
    ledger.path.write_text("".join(lines), encoding="utf-8")
    verdict = ledger.verify()
    assert (verdict.ok, verdict.bad_index, verdict.bad_record_id) == (
        False, 2, records[3]["record_id"])
    assert "removed, inserted or moved" in verdict.reason
    assert verdict.count == 2


def test_verify_names_the_first_of_two_reordered_records(tmp_path):
    ledger = Ledger(tmp_path / LEDGER_FILE)
    records = fill(ledger, 5)
    lines = lines_of(ledger.path)
    lines[1], lines[3] = lines[3], lines[1]
    ledger.path.write_text("".join(lines), encoding="utf-8")
    verdict = ledger.verify()
    assert (verdict.ok, verdict.bad_index, verdict.bad_record_id) == (
        False, 1, records[3]["record_id"])


def test_verify_reports_an_unreadable_line(tmp_path):
    ledger = Ledger(tmp_path / LEDGER_FILE)
    fill(ledger, 3)
    with open(ledger.path, "a", encoding="utf-8") as handle:
        handle.write('{"record_id": "rec_cut", "agent_id": \n')
    verdict = ledger.verify()
    assert (verdict.ok, verdict.bad_index, verdict.bad_record_id) == (False, 3, None)
    assert verdict.reason.startswith("not valid JSON")
    assert "unreadable" in str(verdict)


def test_empty_or_missing_ledger_verifies(tmp_path):
    verdict = Ledger(tmp_path / "nothing" / LEDGER_FILE).verify()
    assert verdict.ok and verdict.count == 0


APPENDER = textwrap.dedent("""
    import sys
    from agent_kernel.core.ledger import Ledger
    ledger = Ledger(sys.argv[1])
    for i in range(int(sys.argv[3])):
        ledger.record_tool_call(agent_id=sys.argv[2], run_id="run_" + sys.argv[2],
                                tool_name="echo", arguments={"value": i}, result=i,
                                success=True, error=None, duration_ms=0)
""")


def test_two_processes_appending_leave_a_chain_that_verifies(tmp_path):
    path = tmp_path / LEDGER_FILE
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, str(path), name, "1000"])
             for name in ("proc-a", "proc-b")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    ledger = Ledger(path)
    verdict = ledger.verify()
    assert verdict.ok, str(verdict)
    assert verdict.count == 2000
    records = ledger.records()
    for name in ("proc-a", "proc-b"):
        mine = [r["arguments"]["value"] for r in records if r["agent_id"] == name]
        assert mine == list(range(1000))
    assert len({r["record_id"] for r in records}) == 2000


def test_secrets_are_redacted_before_writing(tmp_path):
    ledger = Ledger(tmp_path / LEDGER_FILE)
    openai_key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2
    anthropic_key = "sk-ant-api03-" + "x" * 40
    token = "eyJhbGciOiJIUzI1NiJ9.abcdefghijklmnop.qrstuvwx"
    ledger.record_tool_call(
        agent_id="a", run_id="r", tool_name="http_request",
        arguments={"url": "https://api.example.com", "headers": {"Authorization": "x"},
                   "body": f"key={openai_key} and {anthropic_key}",
                   "note": f"sent with Bearer {token}", "api_key": "plain-secret-value",
                   "nested": [{"password": "hunter2"}, {"OPENAI_API_KEY": "abc123"}]},
        result={"echo": openai_key}, success=True, error=None, duration_ms=1)
    text = ledger.path.read_text(encoding="utf-8")
    for secret in (openai_key, anthropic_key, token, "plain-secret-value", "hunter2", "abc123"):
        assert secret not in text
    record = ledger.records()[0]
    args = record["arguments"]
    assert args["body"] == f"key={REDACTED} and {REDACTED}"
    assert args["note"] == f"sent with Bearer {REDACTED}"
    assert args["api_key"] == REDACTED and args["headers"]["Authorization"] == REDACTED
    assert args["nested"] == [{"password": REDACTED}, {"OPENAI_API_KEY": REDACTED}]
    assert args["url"] == "https://api.example.com"
    assert record["result"] == {"echo": REDACTED}
    assert ledger.verify().ok


def test_scrub_leaves_ordinary_text_alone():
    text = "task-1234 sk-short skills ask-me Bearer of good news"
    assert scrub(text) == text
    assert scrub({"tokens_used": 12, "secret_santa": ""}) == {"tokens_used": 12,
                                                              "secret_santa": ""}


def test_secret_in_a_tool_argument_never_reaches_the_ledger(tmp_path):
    agent = Agent(model="demo", workspace=tmp_path)
    key = "sk-" + "Zz9" * 12
    agent.run(f"echo my key is {key}")
    text = (tmp_path / LEDGER_FILE).read_text(encoding="utf-8")
    assert key not in text and REDACTED in text


def _cli(workspace: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent_kernel", "verify", "--workspace",
                           str(workspace)], capture_output=True, text=True, timeout=60)


@pytest.mark.timeout(120)
def test_cli_verify_exit_codes(tmp_path):
    ledger = Ledger(tmp_path / LEDGER_FILE)
    records = fill(ledger, 3)
    ok = _cli(tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert "ledger ok: 3 records verify" in ok.stdout
    lines = lines_of(ledger.path)
    lines[1] = lines[1].replace('"result":"1"', '"result":"forged"')
    ledger.path.write_text("".join(lines), encoding="utf-8")
    broken = _cli(tmp_path)
    assert broken.returncode == 1
    assert f"line 2 ({records[1]['record_id']})" in broken.stdout


def test_append_many_chains_a_batch_in_one_write(tmp_path, monkeypatch):
    """Several records in one lock and one write (the decision log's batches), chained in
    order after what was there; all or none."""
    from agent_kernel.core import ledger_lines

    ledger = Ledger(tmp_path / LEDGER_FILE)
    first = ledger.append({"kind": "event", "n": 0})
    writes: list[int] = []
    real = ledger_lines.append_all

    def counted(fd: int, data: bytes) -> None:
        writes.append(data.count(b"\n"))
        real(fd, data)

    monkeypatch.setattr("agent_kernel.core.ledger.append_all", counted)
    batch = ledger.append_many([{"kind": "event", "n": i} for i in (1, 2, 3)])
    assert writes == [3]
    assert [b["prev_hash"] for b in batch] == [first["hash"], batch[0]["hash"], batch[1]["hash"]]
    assert [r["n"] for r in ledger.records()] == [0, 1, 2, 3] and ledger.verify().ok

    def broken(fd: int, data: bytes) -> None:
        raise ledger_lines.AppendFailed(OSError("disk full"), None)

    monkeypatch.setattr("agent_kernel.core.ledger.append_all", broken)
    with pytest.raises(Exception, match="disk full"):
        ledger.append_many([{"kind": "event", "n": 4}, {"kind": "event", "n": 5}])
    assert [r["n"] for r in ledger.records()] == [0, 1, 2, 3] and ledger.verify().ok


def test_ids_are_unique_and_a_forked_child_does_not_repeat_its_parents():
    """Ids draw their random part from one buffered ``os.urandom``; a child of ``fork``
    starts a buffer of its own, so it never hands out the ids its parent will."""
    import os
    import re

    from agent_kernel.core.ledger import new_id

    made = [new_id("rec") for _ in range(1500)]  # more than one buffer's worth
    assert len(set(made)) == len(made)
    assert all(re.fullmatch(r"rec_\d{8}_\d{6}_[0-9a-f]{8}", i) for i in made)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's side
        os.write(write, " ".join(new_id("rec")[-8:] for _ in range(20)).encode())
        os._exit(0)
    os.waitpid(child, 0)
    theirs = set(os.read(read, 4096).decode().split())
    os.close(read)
    os.close(write)
    ours = {new_id("rec")[-8:] for _ in range(20)}
    assert len(theirs) == 20 and not theirs & ours
