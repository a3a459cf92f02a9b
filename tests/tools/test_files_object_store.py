"""The file tools with ``files/`` on an object store: moto's S3 on 127.0.0.1 (one server here).

The same behaviour as the local folder where it applies (a parametrized subset of
test_files.py's cases runs on both backends), and the attacks an object store
invites: a model's path is data, so a URL, ``..``, an alias or a ``?versionId=``
never reaches another bucket, a sibling prefix or a protected name; the byte and
listing limits hold before anything large is asked for or sent; a missing bucket or
a dead endpoint is one sentence and the run returns; ``write_file`` asks as before
and the card says where the file goes; no credential is taken from a setting.
Tests that start the server carry the marker ``cluster``.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from s3_server import FAKE_ENV, S3Server, serving
from tool_helpers import call_tool, person, through_the_loop

from agent_kernel import Agent
from agent_kernel.core import object_store
from agent_kernel.core.config import Settings
from agent_kernel.tools import files, files_store

BUCKET, OTHER = "agent-files", "other-bucket"
_prefixes = itertools.count()
STORE = pytest.param("store", marks=pytest.mark.cluster)
BOTH = pytest.mark.parametrize("backend", ["local", STORE])


@pytest.fixture(scope="module")
def server() -> Iterator[S3Server]:
    with serving(BUCKET) as started:
        started.bucket(OTHER)
        yield started


def store_agent(server: S3Server, workspace: Path, prefix: str | None = None,
                **options: str) -> Agent:
    uri = f"s3://{BUCKET}/{prefix or f'team-{next(_prefixes)}'}"
    return Agent(workspace=workspace, settings=Settings(
        files_uri=uri, files_options={**server.options, **options}))


@pytest.fixture
def agent(request: pytest.FixtureRequest, tmp_path: Path) -> Agent:
    if request.getfixturevalue("backend") == "local":
        return Agent(workspace=tmp_path / "ws")
    return store_agent(request.getfixturevalue("server"), tmp_path / "ws")


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> files.FileToolLimits:
    fresh = files.FileToolLimits()
    monkeypatch.setattr(files, "LIMITS", fresh)
    return fresh


def prefix_of(agent: Agent) -> str | None:
    root = files_store.root_of(agent.settings)
    return None if root is None else root.prefix


def stored(agent: Agent, relative: str, server: S3Server | None = None) -> bytes | None:
    """The bytes of ``files/<relative>`` where the backend keeps it, None when absent."""
    prefix = prefix_of(agent)
    if prefix is None:
        path = agent.workspace.root / "files" / relative
        return path.read_bytes() if path.is_file() else None
    assert server is not None
    try:
        body = server.client().get_object(Bucket=BUCKET, Key=f"{prefix}/{relative}")["Body"]
    except server.client().exceptions.NoSuchKey:
        return None
    data: bytes = body.read()
    return data


def put(server: S3Server, agent: Agent, relative: str, data: bytes) -> None:
    server.client().put_object(Bucket=BUCKET, Key=f"{prefix_of(agent)}/{relative}", Body=data)


async def call(agent: Agent, name: str, **arguments: Any) -> Any:
    """The tool's answer without ``stored_at`` (the one key the store adds)."""
    result = await call_tool(agent, name, **arguments)
    if isinstance(result, dict):
        result.pop("stored_at", None)
    return result


def refused(result: Any, *fragments: str) -> bool:
    return (isinstance(result, dict) and set(result) == {"ok", "error"}
            and result["ok"] is False and all(f in result["error"] for f in fragments))


def server_or_none(request: pytest.FixtureRequest, backend: str) -> S3Server | None:
    return request.getfixturevalue("server") if backend == "store" else None


# -- the same behaviour on both backends (test_files.py's cases) ---------------------------

@BOTH
async def test_write_then_read_and_append(agent: Agent, backend: str,
                                          request: pytest.FixtureRequest) -> None:
    srv = server_or_none(request, backend)
    wrote = await call(agent, "write_file", path="notes/today.txt", content="hello")
    assert wrote == {"ok": True, "path": "files/notes/today.txt", "bytes": 5,
                     "mode": "overwrite"}
    appended = await call(agent, "write_file", path="notes/today.txt", content=" wörld",
                          mode="append")
    assert appended["ok"] is True and appended["bytes"] == 7
    assert await call(agent, "read_file", path="notes/today.txt") == {
        "ok": True, "content": "hello wörld"}
    assert await call(agent, "read_file", path="file_cache_dir/notes/today.txt") == {
        "ok": True, "content": "hello wörld"}
    await call(agent, "write_file", path="notes/today.txt", content="new")
    assert stored(agent, "notes/today.txt", srv) == b"new"
    assert (await call(agent, "write_file", path="empty.txt", content=""))["bytes"] == 0
    assert await call(agent, "read_file", path="empty.txt") == {"ok": True, "content": ""}
    assert (await call(agent, "write_file", path="empty.txt", content="a", mode="append"))["ok"]
    assert stored(agent, "empty.txt", srv) == b"a"
    assert (agent.workspace.root / "files/notes/today.txt").exists() is (backend == "local")


@BOTH
async def test_state_stays_in_the_local_workspace(agent: Agent, backend: str) -> None:
    wrote = await call(agent, "write_file", path="file_state_dir/plan.md", content="# plan")
    assert wrote == {"ok": True, "path": "state/plan.md", "bytes": 6, "mode": "overwrite"}
    assert (agent.workspace.root / "state" / "plan.md").read_text() == "# plan"
    assert (await call(agent, "read_file", path="file_state_dir/plan.md"))["content"] == "# plan"
    assert (await call(agent, "list_files", path="file_state_dir"))["entries"] == [
        {"name": "plan.md", "type": "file"}]


@BOTH
@pytest.mark.parametrize("path", ["../../escape.txt", "/etc/passwd", "file_state_dir/../../x",
                                  "~/x.txt", "/proc/self/root/etc/passwd",
                                  "file_cache_dir/../../x"])
async def test_paths_outside_the_workspace_are_refused(agent: Agent, backend: str,
                                                       path: str) -> None:
    for name, extra in (("read_file", {}), ("write_file", {"content": "x"}), ("list_files", {})):
        assert refused(await call(agent, name, path=path, **extra), "outside the workspace"), name
    assert not (agent.workspace.root.parent / "escape.txt").exists()


@BOTH
async def test_bad_input_and_aliases(agent: Agent, backend: str,
                                     request: pytest.FixtureRequest) -> None:
    assert refused(await call(agent, "read_file", path="a\x00b"), "NUL character")
    assert refused(await call(agent, "write_file", path="s.txt", content="bad \ud800"),
                   "lone surrogate", "nothing was written")
    assert refused(await call(agent, "read_file", path="file_cache_dir"),
                   "'file_cache_dir' needs a file path after it")
    assert refused(await call(agent, "write_file", path="file_state_dir/", content="x"),
                   "'file_state_dir' needs a file path after it")
    assert stored(agent, "s.txt", server_or_none(request, backend)) is None


@BOTH
async def test_deny_paths(agent: Agent, backend: str, request: pytest.FixtureRequest) -> None:
    srv = server_or_none(request, backend)
    for path in ("secrets/.env", "keys/server.pem", "id_rsa", "x/ledger.jsonl"):
        result = await call(agent, "write_file", path=path, content="KEY=1")
        assert refused(result, f"'{path}' is a protected file"), path
        assert stored(agent, path, srv) is None
        assert refused(await call(agent, "read_file", path=path), "is a protected file")
    assert refused(await call(agent, "list_files", path="x/.env"), "is a protected file")


@BOTH
async def test_missing_file_and_folder(agent: Agent, backend: str) -> None:
    assert await call(agent, "read_file", path="nope.txt") == {
        "ok": False, "error": "no such file: files/nope.txt"}
    await call(agent, "write_file", path="dir/a.txt", content="a")
    assert refused(await call(agent, "read_file", path="dir"), "files/dir is a folder")
    assert refused(await call(agent, "write_file", path="dir", content="x"), "is a folder")
    assert refused(await call(agent, "list_files", path="nope"), "no such folder: files/nope")
    assert refused(await call(agent, "list_files", path="dir/a.txt"), "not a folder")


@BOTH
async def test_byte_limits(agent: Agent, backend: str, limits: files.FileToolLimits,
                           request: pytest.FixtureRequest) -> None:
    srv = server_or_none(request, backend)
    await call(agent, "write_file", path="big.txt", content="keep me")
    limits.write_max_bytes = 10
    assert refused(await call(agent, "write_file", path="big.txt", content="x" * 11),
                   "content is 11 bytes; write_file allows at most 10")
    assert refused(await call(agent, "write_file", path="big.txt", content="é" * 6),
                   "content is 12 bytes")
    assert stored(agent, "big.txt", srv) == b"keep me"
    assert (await call(agent, "write_file", path="big.txt", content="x" * 10))["ok"] is True
    limits.read_max_bytes = 4
    await call(agent, "write_file", path="small.txt", content="abcdefgh")
    text = (await call(agent, "read_file", path="small.txt"))["content"]
    assert text.startswith("abcd\n") and "truncated: showed 4 of 8 bytes" in text


@BOTH
@pytest.mark.parametrize("name,arguments", [
    ("read_file", {"path": "a.txt"}), ("write_file", {"path": "b.txt", "content": "new"}),
    ("list_files", {}), ("get_workspace_info", {})])
async def test_disabled_tools_answer_in_spec_003s_words(
        agent: Agent, backend: str, limits: files.FileToolLimits, name: str,
        arguments: dict[str, Any], request: pytest.FixtureRequest) -> None:
    setattr(limits, f"{name}_enabled", False)
    result = await call(agent, name, **arguments)
    assert refused(result) and result["error"].startswith(f"{name} tool is disabled")
    assert stored(agent, "b.txt", server_or_none(request, backend)) is None


@BOTH
async def test_listings_and_counts(agent: Agent, backend: str) -> None:
    assert await call(agent, "list_files") == {
        "ok": True, "path": "files", "entries": [], "truncated": False}
    assert (await call(agent, "get_workspace_info"))["info"] == {
        "fileCount": 0, "directoryCount": 0, "totalSize": 0, "lastModified": None}
    written = {"src/index.js": "x", "package.json": "{}", "src/lib/a.js": "aa",
               "file_state_dir/TODO.WIP.md": "todo", "file_state_dir/notes/n.txt": "n"}
    for path, content in written.items():
        await call(agent, "write_file", path=path, content=content)
    assert await call(agent, "list_files") == {"ok": True, "path": "files", "truncated": False,
                                               "entries": [{"name": "src", "type": "directory"},
                                                           {"name": "package.json",
                                                            "type": "file"}]}
    assert [e["name"] for e in (await call(agent, "list_files", path="src"))["entries"]] == [
        "lib", "index.js"]
    assert (await call(agent, "list_files", path="src/lib/"))["path"] == "files/src/lib"
    info = await call(agent, "get_workspace_info")
    assert info["truncated"] is False and info["info"]["fileCount"] == 5
    assert info["info"]["directoryCount"] == 3  # src, src/lib, notes
    assert info["info"]["totalSize"] == sum(len(c) for c in written.values())
    assert info["info"]["lastModified"].endswith("Z")
    for path in ("..", "../triggers", str(agent.workspace.root), "file_state_dir/.."):
        assert refused(await call(agent, "list_files", path=path), "belongs to the runtime")


@BOTH
async def test_deny_listed_names_never_leak(agent: Agent, backend: str,
                                            request: pytest.FixtureRequest) -> None:
    names = (".env", "server.pem", "id_rsa.pub", "ledger.jsonl", "ok.txt")
    for folder in ("", "keys/"):
        for name in names:
            relative = f"{folder}{name}"
            if backend == "store":
                put(request.getfixturevalue("server"), agent, relative, b"SECRET=hunter2hunter2")
            else:
                (agent.workspace.root / "files" / folder).mkdir(parents=True, exist_ok=True)
                (agent.workspace.root / "files" / relative).write_text("SECRET=hunter2hunter2")
    for listed in (await call(agent, "list_files"), await call(agent, "list_files", path="keys")):
        shown = {e["name"] for e in listed["entries"]}
        assert "ok.txt" in shown and not {".env", "server.pem", "id_rsa.pub",
                                          "ledger.jsonl"} & shown
    info = (await call(agent, "get_workspace_info"))["info"]
    assert info["fileCount"] == 2 and info["totalSize"] == 2 * len("SECRET=hunter2hunter2")


@BOTH
@pytest.mark.timeout(120)
async def test_a_big_folder_is_capped(agent: Agent, backend: str, limits: files.FileToolLimits,
                                      request: pytest.FixtureRequest) -> None:
    for i in range(150):
        if backend == "store":
            put(request.getfixturevalue("server"), agent, f"many/f{i:03}.txt", b"x")
        else:
            (agent.workspace.root / "files/many").mkdir(parents=True, exist_ok=True)
            (agent.workspace.root / f"files/many/f{i:03}.txt").write_bytes(b"x")
    limits.list_max_entries, limits.info_max_entries = 40, 60
    listed = await call(agent, "list_files", path="many")
    assert len(listed["entries"]) == 40 and listed["truncated"] is True
    assert "first 40 entries" in listed["note"]
    info = await call(agent, "get_workspace_info")
    assert info["truncated"] is True and "totals are lower bounds" in info["note"]
    assert info["info"]["fileCount"] + info["info"]["directoryCount"] == 60
    limits.list_max_entries, limits.info_max_entries = 500, 500
    assert len((await call(agent, "list_files", path="many"))["entries"]) == 150
    assert (await call(agent, "get_workspace_info"))["info"]["fileCount"] == 150


# -- attacks: a model's path is data -------------------------------------------------------

@pytest.fixture
def store(server: S3Server, tmp_path: Path) -> Agent:
    return store_agent(server, tmp_path / "ws")


def every_key(server: S3Server) -> set[tuple[str, str]]:
    return {(b, k) for b in (BUCKET, OTHER) for k in server.keys(b)}


@pytest.mark.cluster
@pytest.mark.parametrize("path", [
    "s3://other-bucket/x", "S3://other-bucket/x", "file:///etc/passwd", "memory://x",
    "http://127.0.0.1:1/x", "https://example.com/x", "file_cache_dir/s3://other-bucket/x",
    "a/s3://other-bucket/x", "s3:/other-bucket/x", "file:/etc/passwd"])
async def test_a_url_is_never_handed_to_fsspec(store: Agent, server: S3Server,
                                               path: str) -> None:
    before = every_key(server)
    for name, extra in (("read_file", {}), ("write_file", {"content": "x"}), ("list_files", {})):
        assert refused(await call(store, name, path=path, **extra), "looks like a URL"), name
    assert every_key(server) == before


@pytest.mark.cluster
@pytest.mark.parametrize("path", [
    "../team-x-sibling/stolen.txt", "a/../../team-x-sibling/stolen.txt",
    "file_cache_dir/../team-x-sibling/stolen.txt", "../../other-bucket/stolen.txt",
    "./../stolen.txt", "a/./../../stolen.txt"])
async def test_dot_dot_never_leaves_the_prefix(store: Agent, server: S3Server,
                                               path: str) -> None:
    prefix = prefix_of(store)
    before = every_key(server)
    result = await call(store, "write_file", path=path, content="x")
    assert result["ok"] is False  # outside the workspace, or the runtime's own place
    new = every_key(server) - before
    assert all(key.startswith(f"{prefix}/") for _bucket, key in new) and not new


@pytest.mark.cluster
async def test_a_prefix_sibling_is_out_of_reach(server: S3Server, tmp_path: Path) -> None:
    team_a = store_agent(server, tmp_path / "a", prefix="team-a")
    server.client().put_object(Bucket=BUCKET, Key="team-ab/secret.txt", Body=b"ab's secret")
    server.client().put_object(Bucket=BUCKET, Key="team-a-old/x.txt", Body=b"old")
    assert (await call(team_a, "list_files"))["entries"] == []
    assert (await call(team_a, "get_workspace_info"))["info"]["fileCount"] == 0
    for path in ("../team-ab/secret.txt", "secret.txt", "b/secret.txt", "../secret.txt"):
        result = await call(team_a, "read_file", path=path)
        assert result["ok"] is False and "ab's secret" not in str(result), path
    await call(team_a, "write_file", path="mine.txt", content="a")
    assert server.keys(BUCKET, "team-a/") == ["team-a/mine.txt"]


@pytest.mark.cluster
@pytest.mark.parametrize("path", ["..\\..\\x.txt", "a\\b.txt", "line\nbreak.txt", "tab\t.txt"])
async def test_backslashes_and_control_characters_are_refused(store: Agent, server: S3Server,
                                                              path: str) -> None:
    before = every_key(server)
    assert refused(await call(store, "write_file", path=path, content="x"),
                   "backslash or a control character")
    assert every_key(server) == before


@pytest.mark.cluster
async def test_a_key_longer_than_s3_allows_is_refused(store: Agent, server: S3Server) -> None:
    before = every_key(server)
    assert refused(await call(store, "write_file", path="é" * 520, content="x"),
                   "at most 1024 bytes")
    assert every_key(server) == before


@pytest.mark.cluster
@pytest.mark.parametrize("path", [".env?versionId=1", "notes.txt?versionId=abc",
                                  "x/../notes.txt?versionId=2"])
async def test_a_version_query_cannot_reach_another_key(store: Agent, server: S3Server,
                                                        path: str) -> None:
    put(server, store, ".env", b"SECRET=1")
    put(server, store, "notes.txt", b"original")
    before = every_key(server)
    assert refused(await call(store, "write_file", path=path, content="pwned"),
                   "cannot be stored as one object key")
    assert refused(await call(store, "read_file", path=path), "cannot be stored")
    assert every_key(server) == before and stored(store, "notes.txt", server) == b"original"


@pytest.mark.cluster
async def test_absolute_paths_and_links_to_the_local_folder(store: Agent,
                                                            server: S3Server) -> None:
    root = store.workspace.root
    wrote = await call_tool(store, "write_file", path=str(root / "files" / "abs.txt"),
                            content="ok")
    assert wrote["ok"] is True and wrote["stored_at"].endswith(f"{prefix_of(store)}/abs.txt")
    assert stored(store, "abs.txt", server) == b"ok" and not (root / "files/abs.txt").exists()
    for path in ("file_state_dir/../files/via_state.txt", "./x/../via_dot.txt",
                 f"~/{os.path.relpath(root / 'files' / 'via_home.txt', Path.home())}"):
        result = await call_tool(store, "write_file", path=path, content="where?")
        assert result["ok"] is True and result["stored_at"].startswith(f"s3://{BUCKET}/"), path
    assert {k.rsplit("/", 1)[-1] for k in server.keys(BUCKET, f"{prefix_of(store)}/")} >= {
        "via_state.txt", "via_dot.txt", "via_home.txt"}
    assert not list((root / "files").rglob("via_*"))  # nothing in the local folder
    (root / "state").mkdir(parents=True, exist_ok=True)
    (root / "files").mkdir(exist_ok=True)
    (root / "files" / "local.txt").write_text("the commands' folder")
    (root / "state" / "link").symlink_to("../files")
    for name, extra in (("read_file", {"path": "file_state_dir/link/local.txt"}),
                        ("write_file", {"path": "file_state_dir/link/x.txt", "content": "x"}),
                        ("list_files", {"path": "file_state_dir/link"})):
        assert refused(await call(store, name, **extra), "leads to the local files/ folder"), name
    assert not (root / "files" / "x.txt").exists()


@pytest.mark.cluster
async def test_reads_ask_for_no_more_than_the_limit(store: Agent, server: S3Server,
                                                    limits: files.FileToolLimits,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    put(server, store, "huge.txt", b"y" * 2_000_000)
    asked: list[tuple[Any, ...]] = []
    fs = files_store._filesystem(files_store.root_of(store.settings))  # type: ignore[arg-type]
    real = fs.cat_file

    def counted(path: str, start: int | None = None, end: int | None = None, **kw: Any) -> Any:
        asked.append((path, start, end))
        return real(path, start=start, end=end, **kw)

    monkeypatch.setattr(fs, "cat_file", counted)
    limits.read_max_bytes = 100
    text = (await call(store, "read_file", path="huge.txt"))["content"]
    assert text.startswith("y" * 100) and "showed 100 of 2000000 bytes" in text
    assert asked == [(f"{BUCKET}/{prefix_of(store)}/huge.txt", 0, 101)]


@pytest.mark.cluster
async def test_a_write_over_the_limit_sends_nothing(store: Agent, server: S3Server,
                                                    limits: files.FileToolLimits,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    fs = files_store._filesystem(files_store.root_of(store.settings))  # type: ignore[arg-type]
    sent: list[str] = []
    monkeypatch.setattr(fs, "pipe_file", lambda path, *a, **k: sent.append(path))
    limits.write_max_bytes = 1000
    assert refused(await call(store, "write_file", path="big.txt", content="z" * 1001),
                   "content is 1001 bytes")
    record = await through_the_loop(store, "write_file", path="big.txt", content="z" * 1001)
    assert not record.success and "Refused without asking you" in str(record.summary)
    assert sent == []


@pytest.mark.cluster
async def test_an_append_too_large_to_rewrite_is_refused(store: Agent, server: S3Server,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files_store, "APPEND_MAX_BYTES", 20)
    await call(store, "write_file", path="log.txt", content="0123456789")
    assert refused(await call(store, "write_file", path="log.txt", content="x" * 11,
                              mode="append"), "would grow to 21 bytes", "write a new file")
    assert stored(store, "log.txt", server) == b"0123456789"


@pytest.mark.cluster
async def test_a_listing_of_protected_names_stops_scanning(store: Agent, server: S3Server,
                                                           limits: files.FileToolLimits) -> None:
    for i in range(60):
        put(server, store, f"keys/k{i:02}.pem", b"-----BEGIN-----")
    limits.list_max_entries = 5
    listed = await call(store, "list_files", path="keys")
    assert listed["entries"] == [] and listed["truncated"] is True
    assert "stopped after 50 keys" in listed["note"]


@pytest.mark.cluster
async def test_two_appenders_lose_nothing(server: S3Server, tmp_path: Path) -> None:
    first = store_agent(server, tmp_path / "one", prefix="shared-log")
    second = store_agent(server, tmp_path / "two", prefix="shared-log")

    def append_lines(agent: Agent, who: str) -> None:
        for i in range(15):
            result = asyncio.run(call(agent, "write_file", path="log.txt",
                                      content=f"{who}{i}\n", mode="append"))
            assert result["ok"] is True, result

    threads = [threading.Thread(target=append_lines, args=(a, w))
               for a, w in ((first, "a"), (second, "b"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = (stored(first, "log.txt", server) or b"").decode().splitlines()
    assert sorted(lines) == sorted([f"a{i}" for i in range(15)] + [f"b{i}" for i in range(15)])


@pytest.mark.cluster
async def test_two_machines_see_the_same_files(server: S3Server, tmp_path: Path) -> None:
    kernel = store_agent(server, tmp_path / "kernel", prefix="team-shared")
    worker = store_agent(server, tmp_path / "worker", prefix="team-shared")
    await call(kernel, "write_file", path="report/draft.md", content="# draft")
    assert (await call(worker, "read_file", path="report/draft.md"))["content"] == "# draft"
    await call(worker, "write_file", path="report/draft.md", content="!", mode="append")
    assert (await call(kernel, "read_file", path="report/draft.md"))["content"] == "# draft!"
    assert (await call(kernel, "list_files", path="report"))["entries"] == [
        {"name": "draft.md", "type": "file"}]


# -- failures of the store: one sentence, and the run returns ------------------------------

@pytest.mark.cluster
@pytest.mark.timeout(60)
async def test_a_missing_bucket_and_a_dead_endpoint_are_one_sentence(
        server: S3Server, tmp_path: Path) -> None:
    nobucket = Agent(workspace=tmp_path / "a", settings=Settings(
        files_uri="s3://no-such-bucket/x", files_options=server.options))
    dead = store_agent(server, tmp_path / "b", endpoint="http://127.0.0.1:9")
    for agent, words in ((nobucket, "the bucket 'no-such-bucket' of s3://no-such-bucket/x"),
                         (dead, "could not be reached")):
        for name, extra in (("read_file", {"path": "a.txt"}),
                            ("write_file", {"path": "a.txt", "content": "x"}),
                            ("list_files", {}), ("get_workspace_info", {})):
            result = await call(agent, name, **extra)
            assert refused(result, words), (name, result)
            assert "Traceback" not in result["error"] and "\n" not in result["error"]
    dead.settings.headless_approval = "allow"
    run = await dead.arun("write file notes.txt with hello")
    assert run.ok and "could not be reached" in str(run.tool_calls[0].result)


# -- approval: asked as before, the card says where ----------------------------------------

@pytest.mark.cluster
async def test_write_file_asks_and_the_card_says_where(store: Agent, server: S3Server) -> None:
    from agent_kernel.views.mime import Transcript
    from agent_kernel.views.run_html import html_of

    transcript = Transcript(run_id="run_t")
    store.bus.subscribe(transcript.feed)
    asked = person(store)
    record = await through_the_loop(store, "write_file", path="notes.txt", content="hi")
    assert record.success and stored(store, "notes.txt", server) == b"hi"
    [question] = asked
    where = (question.details or {})["where"]
    assert where == (f"files/notes.txt, stored at s3://{BUCKET}/{prefix_of(store)}/notes.txt "
                     f"(object store on {server.endpoint})")
    assert (question.details or {})["arguments"] == {"path": "notes.txt", "content": "hi",
                                                     "mode": "overwrite"}
    shown = html_of(transcript.state())  # the saved card, as a notebook shows it
    assert f"stored at s3://{BUCKET}/{prefix_of(store)}/notes.txt" in shown


@pytest.mark.cluster
async def test_a_denied_write_sends_nothing(store: Agent, server: S3Server) -> None:
    from agent_kernel.engine.approvals import DENY

    asked = person(store, DENY)
    record = await through_the_loop(store, "write_file", path="no.txt", content="x")
    assert not record.success and len(asked) == 1
    assert stored(store, "no.txt", server) is None


@pytest.mark.cluster
async def test_commands_say_where_the_files_are(store: Agent, server: S3Server) -> None:
    from agent_kernel.engine.registry import ToolContext
    from agent_kernel.tools import commands

    def context(agent: Agent) -> ToolContext:
        return ToolContext(agent=agent, run_id="r", agent_id=agent.agent_id,
                           workspace=agent.workspace)

    note = commands.files_note(context(store))
    assert note is not None and f"s3://{BUCKET}/{prefix_of(store)}" in note
    assert str(store.workspace.root / "files") in note
    assert commands.files_note(context(Agent(workspace=store.workspace.root.parent / "l"))) is None


# -- settings: no credential, the environment variable, the remote Worker's spec ----------

@pytest.mark.parametrize("uri", ["s3://AKIAFAKE:hunter2secret@bucket/p",
                                 "s3://bucket/p?aws_secret_access_key=hunter2secret"])
def test_a_files_uri_with_a_credential_is_refused(uri: str) -> None:
    with pytest.raises(ValueError) as caught:
        Settings(files_uri=uri)
    assert "hunter2secret" not in str(caught.value) and "files URI" in str(caught.value)


@pytest.mark.parametrize("key", ["aws_secret_access_key", "AWS_ACCESS_KEY_ID", "session_token",
                                 "aws_session_token", "profile"])
def test_a_credential_as_a_files_option_is_refused_by_name(key: str) -> None:
    with pytest.raises(object_store.StoreConfigError) as caught:
        Settings(files_uri="s3://bucket/p", files_options={key: "hunter2secret"})
    assert "hunter2secret" not in str(caught.value) and key.lower() in str(caught.value)


@pytest.mark.parametrize("uri", ["/tmp/folder", "memory://x", "gs://b/p", "file:///etc",
                                 "s3://b/p", "s3://bucket/a/../b", "s3://bucket//b",
                                 "s3://Bucket_Name/p", "s3://bucket/p#x"])
def test_a_files_uri_must_be_one_plain_s3_place(uri: str) -> None:
    with pytest.raises(object_store.StoreConfigError):
        object_store.check_files_uri(uri)
    assert object_store.check_files_uri("s3://bucket") == "s3://bucket"
    assert object_store.check_files_uri("s3://my.bucket-1/a/b/") == "s3://my.bucket-1/a/b/"


def test_an_http_endpoint_needs_allow_http() -> None:
    with pytest.raises(object_store.StoreConfigError, match="allow_http=true"):
        Settings(files_uri="s3://bucket/p", files_options={"endpoint": "http://127.0.0.1:9"})
    assert Settings(files_uri="s3://bucket/p", files_options={
        "endpoint": "http://127.0.0.1:9", "allow_http": "true"}).files_uri == "s3://bucket/p"


def test_the_environment_variable_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(object_store.FILES_ENV_VAR, "s3://shared-files/team")
    assert Settings().files_uri == "s3://shared-files/team"
    assert Settings(files_uri="s3://mine/x").files_uri == "s3://mine/x"
    monkeypatch.setenv(object_store.FILES_ENV_VAR, "s3://k:hunter2secret@b/p")
    with pytest.raises(object_store.StoreConfigError) as caught:
        Settings()
    assert "hunter2secret" not in str(caught.value)
    monkeypatch.delenv(object_store.FILES_ENV_VAR)
    assert Settings().files_uri is None


def test_a_remote_worker_gets_the_same_files_and_no_secret() -> None:
    from agent_kernel.team.remote import public_settings

    settings = Settings(api_key="sk-hunter2secret", files_uri="s3://team-files/a",
                        files_options={"endpoint": "https://s3.example.test", "region": "eu-1"})
    sent = public_settings(settings)
    assert sent.files_uri == "s3://team-files/a"
    assert sent.files_options == {"endpoint": "https://s3.example.test", "region": "eu-1"}
    assert "hunter2secret" not in repr(sent)


def test_the_store_is_not_touched_without_the_setting(tmp_path: Path) -> None:
    agent = Agent(workspace=tmp_path / "ws")
    assert agent.settings.files_uri is None and files_store.root_of(agent.settings) is None
    assert os.environ.get(object_store.FILES_ENV_VAR) is None


def test_fake_credentials_stay_out_of_the_words() -> None:
    root = files_store.StoreRoot("b", "p", "http://127.0.0.1:9", "us-east-1")
    for exc in (RuntimeError("boom"), ConnectionError("x")):
        words = str(files_store.failure(exc, root, "files/a"))
        assert FAKE_ENV["AWS_SECRET_ACCESS_KEY"] not in words and "\n" not in words


def test_local_files_import_no_object_store_library(tmp_path: Path) -> None:
    """Without ``files_uri`` the file tools and commands never import fsspec, s3fs or boto."""
    import subprocess
    import sys

    code = (
        "import asyncio, sys\n"
        "from tool_helpers import call_tool\n"
        "from agent_kernel import Agent\n"
        f"agent = Agent(workspace={str(tmp_path / 'ws')!r})\n"
        "async def main():\n"
        "    assert (await call_tool(agent, 'write_file', path='a.txt', content='x'))['ok']\n"
        "    assert (await call_tool(agent, 'read_file', path='a.txt'))['content'] == 'x'\n"
        "    await call_tool(agent, 'list_files'); await call_tool(agent, 'get_workspace_info')\n"
        "asyncio.run(main())\n"
        "heavy = ('fsspec', 's3fs', 'botocore', 'boto3', 'aiobotocore')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n")
    env = {k: v for k, v in os.environ.items() if k != object_store.FILES_ENV_VAR}
    tests = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([tests, env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# -- the magics and the CLI ----------------------------------------------------------------

@pytest.mark.cluster
async def test_agent_config_files_moves_and_back(server: S3Server, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from tool_helpers import loaded_magics

    monkeypatch.setenv(object_store.FILES_ENV_VAR, "s3://agent-files/from-the-environment")
    with loaded_magics(tmp_path / "ws") as magics:
        magics.agent_config("")
        assert "files: s3://agent-files/from-the-environment\n" in capsys.readouterr().out
        magics.agent_config("--files s3://agent-files/magic --files-option "
                            f"endpoint={server.endpoint} --files-option allow_http=true "
                            "--files-option region=us-east-1")
        out = capsys.readouterr().out
        assert f"files: s3://agent-files/magic (allow_http=true, endpoint={server.endpoint}" in out
        agent = magics.agent
        assert agent.settings.files_uri == "s3://agent-files/magic"
        assert (await call(agent, "write_file", path="m.txt", content="from the magic"))["ok"]
        assert server.keys(BUCKET, "magic/") == ["magic/m.txt"]
        magics.agent_config("--files-option aws_secret_access_key=hunter2secret")
        said = capsys.readouterr()
        assert "refused" in said.err and "hunter2secret" not in said.err + said.out
        assert magics.agent is agent  # nothing changed
        magics.agent_config("--files s3://k:hunter2secret@agent-files/x")
        said = capsys.readouterr()
        assert "user or password" in said.err and "hunter2secret" not in said.err + said.out
        magics.agent_config("--files off")  # off even with $AGENT_KERNEL_FILES_URI set
        assert "files: the workspace folder (files/)" in capsys.readouterr().out
        assert magics.agent.settings.files_uri is None
        assert (await call(magics.agent, "write_file", path="m.txt", content="local"))["ok"]
        assert (tmp_path / "ws" / "files" / "m.txt").read_text() == "local"


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_the_cli_run_writes_to_the_store(server: S3Server, tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {**os.environ, **FAKE_ENV}
    env.pop(object_store.FILES_ENV_VAR, None)
    options = [a for k, v in server.options.items() for a in ("--files-option", f"{k}={v}")]
    done = subprocess.run(
        [sys.executable, "-m", "agent_kernel", "run", "write file cli.txt with from the cli",
         "--workspace", str(tmp_path / "ws"), "--headless-approval", "allow",
         "--files", "s3://agent-files/cli", *options],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert server.keys(BUCKET, "cli/") == ["cli/cli.txt"]
    assert not (tmp_path / "ws" / "files" / "cli.txt").exists()
    refused_run = subprocess.run(
        [sys.executable, "-m", "agent_kernel", "run", "hi", "--workspace", str(tmp_path / "ws"),
         "--files", "s3://agent-files/cli", "--files-option", "aws_secret_access_key=hunter2"],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert refused_run.returncode == 1 and "files option 'aws_secret_access_key' is refused" in (
        refused_run.stderr) and "hunter2" not in refused_run.stderr


# -- what else writes files/: a web download ----------------------------------------------

@pytest.mark.cluster
async def test_a_download_lands_on_the_store_only_when_whole(
        store: Agent, server: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    from web_server import PNG, LocalSite

    from agent_kernel.tools import web

    monkeypatch.setattr(web, "LIMITS", web.WebToolLimits(allow_hosts=["127.0.0.1"]))
    with LocalSite() as site:
        result = await call(store, "url_fetch", url=site.url("/png"),
                            download_path="img/tide.png")
        assert result["path"] == "files/img/tide.png" and result["bytes"] == len(PNG)
        assert stored(store, "img/tide.png", server) == PNG
        assert (await call(store, "list_files", path="img"))["entries"] == [
            {"name": "tide.png", "type": "file"}]
        put(server, store, "keep.txt", b"precious")
        with pytest.raises(ValueError, match="larger than max_bytes"):
            await call(store, "url_fetch", url=site.url("/big"), download_path="keep.txt",
                       max_bytes=100)
        missing = await call(store, "url_fetch", url=site.url("/missing"),
                             download_path="keep.txt")
        assert missing["note"].startswith("not saved: the server answered 404")
        assert stored(store, "keep.txt", server) == b"precious"
        for path in ("s3://other-bucket/x", "file_state_dir/x.bin", "../ledger.jsonl"):
            with pytest.raises((PermissionError, ValueError)):
                await call(store, "url_fetch", url=site.url("/png"), download_path=path)
    assert not (store.workspace.root / "files" / "img").exists()


def test_the_summary_says_where_a_file_was_stored() -> None:
    from agent_kernel.views.summaries import summarise

    assert summarise("write_file", {"path": "n.txt"}, {
        "ok": True, "path": "files/n.txt", "bytes": 2, "mode": "overwrite",
        "stored_at": "s3://b/p/n.txt"}, success=True, duration_ms=None) == (
        "saved files/n.txt (s3://b/p/n.txt) · 2 bytes")


@pytest.mark.cluster
async def test_no_credentials_is_one_sentence(server: S3Server, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    agent = store_agent(server, tmp_path / "ws", region="eu-west-3")  # a client of its own
    result = await call(agent, "write_file", path="a.txt", content="x")
    assert refused(result, "no credentials for s3://agent-files/", "set them in the environment")
