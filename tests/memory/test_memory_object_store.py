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
from s3_server import FAKE_ENV, S3Server, fake_aws_env

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
    with fake_aws_env():
        server = S3Server()
        server.bucket("memory")
        try:
            yield server
        finally:
            server.stop()


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
