"""A Worker on a Dask worker process writes to ``files/`` on the object store, and the kernel
reads it: every machine sees the same files (docs/scale.md, "Files on an object store").

One LocalCluster of one worker process and one moto S3 server on 127.0.0.1 for the
module; the worker process gets the fake credentials from the environment it starts
with, never from the spec Dask carries.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from s3_server import FAKE_ENV, S3Server, serving
from test_team import RoleModel
from test_team_ask import worker_writes
from tool_helpers import call_tool

from agent_kernel import Agent
from agent_kernel.core.config import Settings
from agent_kernel.team import Team

pytestmark = pytest.mark.cluster
HERE = Path(__file__).resolve().parent
BUCKET = "team-files"


@pytest.fixture(scope="module")
def server() -> Iterator[S3Server]:
    with serving(BUCKET) as started:
        yield started


@pytest.fixture(scope="module")
def client(server: S3Server) -> Iterator[Any]:
    """One worker process, started while the fake credentials are in the environment."""
    from distributed import Client, LocalCluster

    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])])
    cluster = LocalCluster(processes=True, n_workers=1, threads_per_worker=1,
                           host="127.0.0.1", dashboard_address=":0")
    made = Client(cluster, set_as_default=False)
    yield made
    made.close()
    cluster.close()


def test_a_remote_workers_file_is_seen_by_the_kernel(client: Any, server: S3Server,
                                                     tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from agent_kernel.team import cluster as cluster_module

    specs: list[Any] = []
    made = cluster_module.RemoteRun.spec

    def seen(self: Any) -> Any:
        spec = made(self)
        specs.append(spec)
        return spec

    monkeypatch.setattr(cluster_module.RemoteRun, "spec", seen)
    uri = f"s3://{BUCKET}/team-a"
    settings = Settings(headless_approval="allow", retry_base_delay=0.01, files_uri=uri,
                        files_options=server.options)
    with RoleModel(worker_writes) as model:
        team = Team(model=model, workspace=tmp_path / "kernel", settings=settings, cluster=client)
        result = team.run("notes please")
    assert result.ok and result.reply == "The notes are written.", result
    assert server.keys(BUCKET) == ["team-a/notes.md"]
    assert not (tmp_path / "kernel" / "files" / "notes.md").exists()
    [write] = [r for r in team.ledger.records() if r.get("tool_name") == "write_file"
               and r["kind"] == "tool_call"]
    assert write["ran_on"] in set(client.scheduler_info()["workers"]) and write["success"]
    [spec] = specs
    assert spec["settings"].files_uri == uri
    assert spec["settings"].files_options == server.options
    carried = pickle.dumps(spec)  # what Dask carries through the scheduler: no credential
    assert FAKE_ENV["AWS_SECRET_ACCESS_KEY"].encode() not in carried
    assert FAKE_ENV["AWS_ACCESS_KEY_ID"].encode() not in carried
    # another machine (a second kernel, its own workspace) reads what the Worker wrote
    other = Agent(workspace=tmp_path / "other", settings=Settings(
        files_uri=uri, files_options=server.options))
    read = asyncio.run(call_tool(other, "read_file", path="notes.md"))
    assert read == {"ok": True, "content": "from the Worker"}
