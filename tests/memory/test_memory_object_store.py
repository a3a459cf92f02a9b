"""Memory at an object-store URI: on a local S3-compatible server (moto on 127.0.0.1).

What one process remembers, another recalls; four writer processes of 250 memories
each lose and duplicate nothing; the storage options refuse credentials, and the
credentials in the environment reach no file, log or repr we write. The server is
``tests/s3_server.py`` (one per module); nothing here reaches the internet.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from s3_server import FAKE_ENV, S3Server, serving

from agent_kernel.core import object_store
from agent_kernel.core.config import Settings
from agent_kernel.memory.service import MemoryStore

SECRET = FAKE_ENV["AWS_SECRET_ACCESS_KEY"]


# -- the settings: no credential can be given, none is shown ------------------------------
@pytest.mark.parametrize("uri", ["s3://AKIAFAKE:hunter2secret@bucket/p",
                                 "s3://bucket/p?aws_secret_access_key=hunter2secret"])
def test_a_uri_with_a_credential_is_refused_without_echoing_it(uri: str) -> None:
    with pytest.raises(object_store.StoreConfigError) as caught:
        object_store.check_uri(uri)
    assert "hunter2secret" not in str(caught.value)
    with pytest.raises(ValueError) as again:
        Settings(memory_uri=uri)
    assert "hunter2secret" not in str(again.value)


@pytest.mark.parametrize("key", ["aws_secret_access_key", "AWS_ACCESS_KEY_ID", "session_token",
                                 "aws_session_token", "azure_storage_account_key",
                                 "google_service_account_key", "bearer_token"])
def test_a_credential_as_a_storage_option_is_refused_by_name(key: str) -> None:
    with pytest.raises(object_store.StoreConfigError) as caught:
        Settings(memory_uri="s3://bucket/p", memory_options={key: "hunter2secret"})
    assert "hunter2secret" not in str(caught.value)
    assert key.lower() in str(caught.value) and "environment" in str(caught.value)
    with pytest.raises(object_store.StoreConfigError):
        MemoryStore("/tmp/unused", uri="s3://bucket/p", storage_options={key: "x"})


def test_not_an_object_store_uri_is_refused() -> None:
    for uri in ("/tmp/folder", "http://example.com/x", "s3://"):
        with pytest.raises(object_store.StoreConfigError):
            object_store.check_uri(uri)
    assert object_store.check_uri("s3+ddb://b/p?ddbTableName=commits")


def test_the_environment_variable_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(object_store.ENV_VAR, "s3://shared/memory")
    assert Settings().memory_uri == "s3://shared/memory"
    assert Settings(memory_uri="s3://mine/m").memory_uri == "s3://mine/m"
    monkeypatch.delenv(object_store.ENV_VAR)
    assert Settings().memory_uri is None


# -- on the server -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with serving("memory") as server:
        yield server


@pytest.mark.cluster
def test_remember_on_the_store_recall_from_another_process(
        s3: S3Server, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    uri = "s3://memory/two-processes"
    store = MemoryStore(tmp_path / "one", uri=uri, storage_options=s3.options)
    saved = store.remember("The build server is orion-7", agent_id="agent", tags=["infra"])
    assert store.search("which machine builds?", agent_id="agent")[0]["content"] == (
        "The build server is orion-7")
    # The table is on the store, not in the workspace.
    assert any(k.startswith("two-processes/memories.lance/") for k in s3.keys("memory"))
    assert not (tmp_path / "one" / "lancedb").exists()
    script = ("import json, sys\nfrom agent_kernel.memory.service import MemoryStore\n"
              "s = MemoryStore(sys.argv[1], uri=sys.argv[2], storage_options=json.loads("
              "sys.argv[3]))\nprint(json.dumps(s.search('build machine', agent_id='agent')))")
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "two"), uri,
                          json.dumps(s3.options)], capture_output=True, text=True, timeout=180,
                         env={**os.environ, **FAKE_ENV}, check=True)
    found = json.loads(out.stdout)
    assert [m["memory_id"] for m in found] == [saved["memory_id"]]
    # Every commit was a conditional put (If-None-Match: *), none a blind one.
    assert s3.conditional_puts and not s3.plain_manifest_puts
    # The credentials never reach what we write or say.
    assert SECRET not in repr(store) and SECRET not in store.where
    assert "endpoint=" in store.where and uri in store.where
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written and not [p for p in written if SECRET.encode() in p.read_bytes()]
    assert SECRET not in caplog.text and SECRET not in out.stdout + out.stderr


WRITER = r"""
import json, sys
from agent_kernel.memory.service import MemoryStore
root, uri, options, name, count, batch = sys.argv[1:6] + [int(sys.argv[6])]
store = MemoryStore(root, uri=uri, storage_options=json.loads(options), embedding="none")
store.count()  # the table open before the start line
print("ready", flush=True)
sys.stdin.readline()  # every writer is ready: all begin at once
ids = []
for start in range(0, int(count), batch):  # one commit per batch, as a worker's bulk remember
    ids += [r["memory_id"] for r in store.remember_many(
        [{"content": f"{name} wrote note {i}"} for i in range(start, start + batch)],
        agent_id="shared")]
store.tables.housekeeping.wait(60)
print(json.dumps(ids))
"""


BATCH = int(os.environ.get("AGENT_KERNEL_TEST_S3_BATCH", "10"))
"""Memories per commit: 10 keeps the test to seconds on moto, whose every LIST walks the
whole bucket; ``AGENT_KERNEL_TEST_S3_BATCH=1`` makes it 1,000 commits (minutes)."""


@pytest.mark.cluster
@pytest.mark.timeout(1200)
def test_four_writers_of_250_memories_lose_and_duplicate_nothing(
        s3: S3Server, tmp_path: Path) -> None:
    uri = "s3://memory/four-writers"
    first = MemoryStore(tmp_path / "observer", uri=uri, storage_options=s3.options,
                        embedding="none")
    assert first.count() == 0  # the table made once, before the writers open it
    names = ("alpha", "beta", "gamma", "delta")
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / name), uri,
                               json.dumps(s3.options), name, "250", str(BATCH)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, **FAKE_ENV})
             for name in names]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    outputs = [p.communicate(timeout=900)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0]
    ids = [i for out in outputs for i in json.loads(out.strip().splitlines()[-1])]
    assert len(ids) == 1000 == len(set(ids))
    rows = first.tables.scan(first.tables.memories(), None, ["id", "content"]).to_pylist()
    assert len(rows) == 1000  # none lost, none twice
    assert sorted(r["id"] for r in rows) == sorted(ids)
    assert sorted(r["content"] for r in rows) == sorted(
        f"{n} wrote note {i}" for n in names for i in range(250))
    assert not s3.plain_manifest_puts


FORGETTER = r"""
import json, sys
from agent_kernel.memory.service import MemoryStore
root, uri, options, ids = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
store = MemoryStore(root, uri=uri, storage_options=options, embedding="none", mirror=False)
store.count()
print("ready", flush=True)
sys.stdin.readline()
print(json.dumps([store.forget(i) for i in ids]))
"""


@pytest.mark.cluster
@pytest.mark.timeout(600)
def test_deletes_from_two_processes_beside_a_writer_are_retried_and_all_land(
        s3: S3Server, tmp_path: Path) -> None:
    """Two deletes of the same fragment conflict in a way Lance does not resolve itself;
    each is retried from the newest version, and the appends beside them stay."""
    uri = "s3://memory/deletes"
    store = MemoryStore(tmp_path / "observer", uri=uri, storage_options=s3.options,
                        embedding="none", mirror=False)
    kept = store.remember_many([{"content": f"old note {i}"} for i in range(120)],
                               agent_id="shared")
    ids = [m["memory_id"] for m in kept]
    env = {**os.environ, **FAKE_ENV}
    forgetters = [subprocess.Popen([sys.executable, "-c", FORGETTER, str(tmp_path / f"f{k}"),
                                    uri, json.dumps(s3.options),
                                    json.dumps(ids[k * 25:(k + 1) * 25])],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                   env=env) for k in range(2)]
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / "w"), uri,
                               json.dumps(s3.options), "new", "50", "5"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    procs = [*forgetters, writer]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    outputs = [p.communicate(timeout=500)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0]
    assert [json.loads(o.strip().splitlines()[-1]) for o in outputs[:2]] == [[True] * 25] * 2
    added = json.loads(outputs[2].strip().splitlines()[-1])
    rows = store.tables.scan(store.tables.memories(), None, ["id"]).column("id").to_pylist()
    assert sorted(rows) == sorted(ids[50:] + added)


class _Flaky:
    """A real LanceDB table whose next commits fail as Lance does when it gives up on a
    conflict: ``landed`` says whether the failed commit had landed first (a lost reply)."""

    def __init__(self, table: object, failures: list[bool], message: str) -> None:
        self.table, self.failures, self.message, self.calls = table, failures, message, 0

    def add(self, rows: object) -> None:
        self.calls += 1
        if self.failures:
            landed = self.failures.pop(0)
            if landed:
                self.table.add(rows)  # type: ignore[attr-defined]
            raise RuntimeError(self.message)
        self.table.add(rows)  # type: ignore[attr-defined]

    def delete(self, where: str) -> None:
        self.calls += 1
        if self.failures:
            self.failures.pop(0)
            raise RuntimeError(self.message)
        self.table.delete(where)  # type: ignore[attr-defined]

    def search(self) -> object:
        return self.table.search()  # type: ignore[attr-defined]


GAVE_UP = ("lance error: Too many concurrent writers. Attempted 6 times, but failed on "
           "retry_timeout of 30.000 seconds.")


def _rows(names: list[str]) -> object:
    import pyarrow as pa

    return pa.table({"id": [f"mem_{n}" for n in names], "content": names})


def _table(tmp_path: Path) -> object:
    import lancedb
    import pyarrow as pa

    db = lancedb.connect(str(tmp_path / "db"))
    return db.create_table("t", schema=pa.schema([pa.field("id", pa.string()),
                                                  pa.field("content", pa.string())]))


def test_an_append_that_landed_before_its_conflict_is_not_sent_twice(tmp_path: Path) -> None:
    from agent_kernel.memory.store import append_retried

    table = _table(tmp_path)
    flaky = _Flaky(table, [True], GAVE_UP)
    append_retried(flaky, _rows(["a", "b"]))  # type: ignore[arg-type]
    assert sorted(table.to_arrow().column("id").to_pylist()) == ["mem_a", "mem_b"]  # type: ignore[attr-defined]
    assert flaky.calls == 1  # the retry found both ids: nothing sent again


def test_an_append_that_lost_is_sent_again_until_it_lands(tmp_path: Path) -> None:
    from agent_kernel.memory.store import append_retried

    table = _table(tmp_path)
    table.add(_rows(["a"]))  # type: ignore[attr-defined]
    flaky = _Flaky(table, [False, False], "Retryable commit conflict for version 7")
    append_retried(flaky, _rows(["b", "c"]))  # type: ignore[arg-type]
    assert sorted(table.to_arrow().column("id").to_pylist()) == [  # type: ignore[attr-defined]
        "mem_a", "mem_b", "mem_c"]
    assert flaky.calls == 3


def test_a_conflicting_delete_is_retried_and_other_errors_are_not(tmp_path: Path) -> None:
    from agent_kernel.memory.store import append_retried, commit_retried

    table = _table(tmp_path)
    table.add(_rows(["a", "b"]))  # type: ignore[attr-defined]
    flaky = _Flaky(table, [True], "Commit conflict for version 9: There was a concurrent "
                                  "commit that conflicts with this one")
    commit_retried(lambda: flaky.delete("id = 'mem_a'"), what="delete")
    assert table.to_arrow().column("id").to_pylist() == ["mem_b"]  # type: ignore[attr-defined]
    broken = _Flaky(table, [False], "Schema error: field content is not nullable")
    with pytest.raises(RuntimeError, match="Schema error"):
        append_retried(broken, _rows(["c"]))  # type: ignore[arg-type]
    assert broken.calls == 1


@pytest.mark.cluster
def test_the_cli_remembers_on_the_store_and_refuses_a_credential(
        s3: S3Server, tmp_path: Path) -> None:
    options = [a for k, v in s3.options.items() for a in ("--memory-option", f"{k}={v}")]
    base = [sys.executable, "-m", "agent_kernel", "memory", "--workspace", str(tmp_path / "ws"),
            "--memory", "s3://memory/cli", *options]
    env = {**os.environ, **FAKE_ENV, "AGENT_KERNEL_EMBEDDING": "none"}
    saved = subprocess.run([*base, "remember", "the", "deploy", "key", "rotates", "monthly"],
                           capture_output=True, text=True, env=env, timeout=180)
    assert saved.returncode == 0, saved.stderr
    found = subprocess.run([*base, "search", "deploy rotation"], capture_output=True,
                           text=True, env=env, timeout=180)
    assert "the deploy key rotates monthly" in found.stdout
    status = subprocess.run([*base, "status"], capture_output=True, text=True, env=env,
                            timeout=180)
    assert f"Memory in s3://memory/cli (allow_http=true, endpoint={s3.endpoint}" in status.stdout
    refused = subprocess.run([*base, "--memory-option", "aws_secret_access_key=hunter2cli",
                              "list"], capture_output=True, text=True, env=env, timeout=60)
    assert refused.returncode != 0 and "hunter2cli" not in refused.stdout + refused.stderr
    assert SECRET not in "".join(p.stdout + p.stderr for p in (saved, found, status, refused))


def test_an_options_value_with_a_credential_is_refused_and_never_repeated() -> None:
    from agent_kernel.core.object_store import StoreConfigError, check_options, parse_option

    for value in ("https://AKIAEXAMPLE:hunter2secret@minio:9000",
                  "http://user:hunter2secret@proxy:3128",
                  "https://minio:9000/?X-Amz-Credential=hunter2secret"):
        with pytest.raises(StoreConfigError) as refused:
            check_options({"endpoint": value})
        assert "hunter2secret" not in str(refused.value)
    assert check_options({"endpoint": "http://127.0.0.1:9000"}) == {
        "endpoint": "http://127.0.0.1:9000"}
    with pytest.raises(StoreConfigError) as refused:
        parse_option("aws_secret_access_key:hunter2secret")
    assert "hunter2secret" not in str(refused.value)


def test_local_memory_wins_over_the_environment_in_the_notebook_and_the_cli(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    from tool_helpers import loaded_magics

    monkeypatch.setenv(object_store.ENV_VAR, "s3://shared/memory")
    with loaded_magics(tmp_path / "ws") as magics:
        assert magics.agent.settings.memory_uri == "s3://shared/memory"
        magics.agent_config("--memory local")
        assert "memory: " in capsys.readouterr().out
        assert magics.agent.settings.memory_uri is None  # the workspace folder
        magics.agent_config("--memory s3://mine/m")
        assert magics.agent.settings.memory_uri == "s3://mine/m"
        magics.agent_config("--memory local")
        assert magics.agent.settings.memory_uri is None
    env = {**os.environ, "AGENT_KERNEL_EMBEDDING": "none"}
    status = subprocess.run([sys.executable, "-m", "agent_kernel", "memory", "--workspace",
                             str(tmp_path / "ws"), "--memory", "local", "status"],
                            capture_output=True, text=True, env=env, timeout=120)
    assert status.returncode == 0, status.stderr
    assert "s3://" not in status.stdout and str(tmp_path / "ws") in status.stdout


def test_the_words_for_the_workspace_folder_are_the_same_everywhere(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tool_helpers import loaded_magics

    from agent_kernel.cli.run import _files_uri

    assert object_store.means_local(" Local ") and not object_store.means_local("off")
    assert object_store.means_local("OFF", "files") and object_store.means_local("local", "files")
    assert _files_uri("local") is None and _files_uri("s3://b/p") == "s3://b/p"
    monkeypatch.setenv(object_store.FILES_ENV_VAR, "s3://agent-files/from-the-environment")
    with loaded_magics(tmp_path / "ws") as magics:
        magics.files_uri = "local"  # as `c.AgentMagics.files_uri = "local"` sets it
        assert magics.agent.settings.files_uri is None
        magics.files_uri = ""
        magics.agent_config("--files local")
        assert magics.agent.settings.files_uri is None


# -- a store that fails is one sentence, never the store client's report -------------------
def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.cluster
async def test_a_memory_store_that_fails_is_one_sentence_to_the_model_and_the_cli(
        s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tool_helpers import call_tool

    from agent_kernel import Agent
    from agent_kernel.engine.registry import ToolError

    for key, value in FAKE_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AGENT_KERNEL_EMBEDDING", "none")
    nobody = {"endpoint": f"http://127.0.0.1:{_closed_port()}", "allow_http": "true",
              "region": "us-east-1"}
    cases = [("s3://memory/nobody-answers", nobody, "could not be reached"),
             ("s3://no-such-bucket/p", dict(s3.options), "names a bucket that does not exist")]
    for uri, options, words in cases:
        agent = Agent(workspace=tmp_path / uri.split("/")[-1],
                      settings=Settings(memory_uri=uri, memory_options=options))
        with pytest.raises(ToolError) as failed:
            await call_tool(agent, "remember", content="the build server is orion-7")
        said = str(failed.value)
        assert said.startswith(f"Memory at {uri} (") and words in said, said
        assert failed.value.summary == said and "\n" not in said
        for report in ("RetryError", "Location", "lance", "reqwest", SECRET):
            assert report not in said
    flags = [a for k, v in nobody.items() for a in ("--memory-option", f"{k}={v}")]
    done = subprocess.run([sys.executable, "-m", "agent_kernel", "memory", "--workspace",
                           str(tmp_path / "cli"), "--memory", "s3://memory/nobody", *flags,
                           "remember", "hello"], capture_output=True, text=True,
                          env={**os.environ}, timeout=180)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "error: Memory at s3://memory/nobody (" in done.stderr
    assert "could not be reached" in done.stderr and "RetryError" not in done.stderr


def test_only_a_stores_failure_is_put_in_words() -> None:
    uri, options = "s3://b/p", {"endpoint": "http://127.0.0.1:9000"}
    assert object_store.store_failure(ValueError("limit must be between 1 and 20, got 0"),
                                      uri, options) is None
    assert object_store.store_failure(KeyError("memory_id"), uri, options) is None
    said = object_store.store_failure(OSError(
        'Generic { store: "S3", source: ListRequest { source: RetryError(... https://h/b?'
        'X-Amz-Signature=abc ...) inner: Http(HttpError { kind: Connect, source: '
        'ConnectError("tcp connect error", 127.0.0.1:9000, Os { code: 111 }) }) }'), uri, options)
    assert said == ("Memory at s3://b/p (endpoint=http://127.0.0.1:9000) could not be "
                    "reached: nothing answers at its endpoint.")
