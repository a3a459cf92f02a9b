"""An attacker's view of ``files/`` on an object store: the model's arguments, a web page
and a key someone else put in the bucket are all hostile here, and so is a setting the
person gets wrong (moto's S3 on 127.0.0.1, one server for the module; the tests that use
it carry the marker ``cluster``, the settings' own tests run in-process).

Each test names a way in, and says whether it was a hole (fixed with it) or held: a
protected name in other case; an invisible character that makes the approval card show
another place than the write goes to; a key the store cannot take that the person was
asked about anyway; an append that reads an object grown past what it may rewrite; a
download whose card did not say where it goes; a plain-HTTP endpoint let through by a
space or by ``$AWS_ENDPOINT_URL``; deep keys and endless pages that hold a core or the
network; files/ on the memory table's prefix; markup in names and contents shown in the
notebook; and the fake secret looked for in everything that is written.
"""

from __future__ import annotations

import itertools
import json
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

BUCKET, OTHER = "attack-files", "attack-other"
_prefixes = itertools.count()


@pytest.fixture(scope="module")
def server() -> Iterator[S3Server]:
    with serving(BUCKET) as started:
        started.bucket(OTHER)
        yield started


@pytest.fixture
def store(server: S3Server, tmp_path: Path) -> Agent:
    return Agent(workspace=tmp_path / "ws", settings=Settings(
        files_uri=f"s3://{BUCKET}/t{next(_prefixes)}", files_options=server.options))


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> files.FileToolLimits:
    fresh = files.FileToolLimits()
    monkeypatch.setattr(files, "LIMITS", fresh)
    return fresh


def prefix(agent: Agent) -> str:
    root = files_store.root_of(agent.settings)
    assert root is not None
    return root.prefix


def put(server: S3Server, agent: Agent, relative: str, data: bytes) -> None:
    server.client().put_object(Bucket=BUCKET, Key=f"{prefix(agent)}/{relative}", Body=data)


def every_key(server: S3Server) -> set[tuple[str, str]]:
    return {(b, k) for b in (BUCKET, OTHER) for k in server.keys(b)}


def refused(result: Any, *fragments: str) -> bool:
    return (isinstance(result, dict) and result.get("ok") is False
            and all(f in result["error"] for f in fragments))


# -- protected names in any case -----------------------------------------------------------

@pytest.mark.parametrize("name", [".ENV", "Server.PEM", "deploy.Key", "ID_RSA", "Ledger.JSONL",
                                  "sub/.Env", "PENDING_QUESTION.json"])
@pytest.mark.cluster
async def test_a_protected_name_in_other_case_is_still_protected(
        store: Agent, server: S3Server, name: str) -> None:
    """A key someone put in the bucket as ``Server.PEM`` is a key all the same (and on a
    case-insensitive disk ``.ENV`` is ``.env``): never read, listed, counted or written."""
    put(server, store, name, b"SECRET=hunter2hunter2")
    put(server, store, "sub/ok.txt", b"fine")
    read = await call_tool(store, "read_file", path=name)
    assert refused(read, "is a protected file") and "hunter2" not in str(read)
    folder = name.rsplit("/", 1)[0] if "/" in name else None
    listed = await call_tool(store, "list_files", **({"path": folder} if folder else {}))
    assert name.rsplit("/", 1)[-1] not in {e["name"] for e in listed["entries"]}
    info = (await call_tool(store, "get_workspace_info"))["info"]
    assert info["fileCount"] == 1 and info["totalSize"] == len(b"fine")
    before = every_key(server)
    assert refused(await call_tool(store, "write_file", path=name, content="x"),
                   "is a protected file")
    assert every_key(server) == before


# -- spellings that stay plain keys (held) ---------------------------------------------------

@pytest.mark.cluster
async def test_percent_encoding_and_lookalikes_are_plain_keys(store: Agent,
                                                             server: S3Server) -> None:
    """``%2e`` is three characters of a key, not a dot (botocore quotes ``%`` itself), and a
    fullwidth ``．ｅｎｖ`` is another key than ``.env``: neither reaches the protected file
    nor leaves the prefix."""
    put(server, store, ".env", b"SECRET=real")
    put(server, store, "%2eenv", b"the percent one")
    assert (await call_tool(store, "read_file", path="%2eenv"))["content"] == "the percent one"
    for path in ("%2Eenv", "．ｅｎｖ", ".env%00", "%2e%2e/.env"):
        result = await call_tool(store, "read_file", path=path)
        assert result["ok"] is False and "SECRET" not in str(result), path
    before = every_key(server)
    wrote = await call_tool(store, "write_file", path="%2e%2e/%2e%2e/attack-other/pw.txt",
                            content="x")
    assert wrote["ok"] is True
    assert every_key(server) - before == {
        (BUCKET, f"{prefix(store)}/%2e%2e/%2e%2e/attack-other/pw.txt")}


@pytest.mark.cluster
async def test_keys_with_dots_from_someone_else_are_unreachable(store: Agent,
                                                                server: S3Server) -> None:
    """Keys another writer made with ``..``, ``.`` or ``//`` segments are listed by the
    names S3 gives, but no path of the model's reaches them (its paths are normalised), and
    a protected name below them is still left out of the counts."""
    for key in ("../outside.txt", "./.env", "a//.env", "x/../ledger.jsonl", "a/../b.txt"):
        put(server, store, key, b"SECRET=hidden")
    info = (await call_tool(store, "get_workspace_info"))["info"]
    assert info["fileCount"] == 2  # ../outside.txt and a/../b.txt: no protected name
    for path in ("../outside.txt", "./.env", "a//.env", "a/../b.txt", ".."):
        result = await call_tool(store, "read_file", path=path)
        assert result["ok"] is False and "SECRET" not in str(result), path


# -- the approval card shows the place the write goes to ---------------------------------

@pytest.mark.parametrize("path", ["report\u202etxt.exe", "a\u200b/b.txt", "x\u2066y.txt",
                                  "line\u2028sep.txt", "bom\ufeff.txt", "c1\x85.txt",
                                  "hangul\u3164filler.txt", "braille\u2800.txt", "nb\u00a0sp.txt"])
@pytest.mark.cluster
async def test_an_invisible_character_is_refused_before_anyone_is_asked(
        store: Agent, server: S3Server, path: str) -> None:
    """A direction override (U+202E), a zero-width character or a blank letter makes the
    card's ``where`` read as another place than the key written (the card's arguments
    mark them, its ``where`` line would not): refused before the person is asked."""
    asked = person(store)
    before = every_key(server)
    record = await through_the_loop(store, "write_file", path=path, content="x")
    assert not record.success and asked == []
    assert "Refused without asking you" in str(record.summary)
    assert every_key(server) == before
    assert refused(await call_tool(store, "write_file", path=path, content="x"),
                   "control character")


@pytest.mark.cluster
async def test_a_key_with_an_invisible_character_is_still_read(store: Agent,
                                                               server: S3Server) -> None:
    """Reading asks nobody, so a file someone else named with a direction mark is read; only
    writes (which a person approves by their ``where``) refuse such names."""
    put(server, store, "report\u202etxt.exe", b"theirs")
    assert (await call_tool(store, "read_file", path="report\u202etxt.exe"))["content"] == "theirs"


@pytest.mark.cluster
@pytest.mark.parametrize("path", ["r\u0435port.txt", "notes/\u0440aypal.md"])
async def test_a_name_mixing_alphabets_is_refused_before_anyone_is_asked(
        store: Agent, server: S3Server, path: str) -> None:
    """``rеport.txt`` with a Cyrillic ``е`` reads as ``report.txt`` on the card's ``where``
    line (the arguments above it mark the word, that line would not): the person would
    approve replacing one file and the write would make another."""
    asked = person(store)
    before = every_key(server)
    record = await through_the_loop(store, "write_file", path=path, content="x")
    assert not record.success and asked == [] and "alphabets" in str(record.summary)
    assert every_key(server) == before


@pytest.mark.parametrize("path", ["a\\b.txt", "notes.txt?versionId=abc", "é" * 520])
@pytest.mark.cluster
async def test_a_key_the_store_cannot_take_is_refused_before_anyone_is_asked(
        store: Agent, server: S3Server, path: str) -> None:
    """The precheck says "no approval could allow this" only if the card's place is a key
    the write can send: a backslash, ``?versionId=`` or a key over 1024 bytes is refused
    before asking, not after the person said yes."""
    asked = person(store)
    before = every_key(server)
    record = await through_the_loop(store, "write_file", path=path, content="x")
    assert not record.success and asked == []
    assert "Refused without asking you" in str(record.summary)
    assert every_key(server) == before


@pytest.mark.parametrize("path", ["./a/../where.txt", "file_state_dir/../files/w/x.txt",
                                  "deep//er/./y.txt"])
@pytest.mark.cluster
async def test_the_card_names_the_key_that_is_written(store: Agent, server: S3Server,
                                                      path: str) -> None:
    asked = person(store)
    before = every_key(server)
    record = await through_the_loop(store, "write_file", path=path, content="x")
    assert record.success
    [(bucket, key)] = every_key(server) - before
    [question] = asked
    assert f"stored at s3://{bucket}/{key} " in (question.details or {})["where"]


@pytest.mark.cluster
async def test_a_download_card_says_where_the_file_goes(store: Agent, server: S3Server,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """``url_fetch`` with ``download_path`` writes to the store after the person approves:
    its card says the store's place as write_file's does, and a path no approval could
    allow is refused before asking."""
    from web_server import PNG, LocalSite

    from agent_kernel.tools import web

    monkeypatch.setattr(web, "LIMITS", web.WebToolLimits(allow_hosts=["127.0.0.1"]))
    asked = person(store)
    with LocalSite() as site:
        record = await through_the_loop(store, "url_fetch", url=site.url("/png"),
                                        download_path="img/../dl/tide.png")
        assert record.success, record
        key = f"{prefix(store)}/dl/tide.png"
        assert isinstance(record.result, dict)
        assert record.result["stored_at"] == f"s3://{BUCKET}/{key}"  # the record says where
        assert server.client().get_object(Bucket=BUCKET, Key=key)["Body"].read() == PNG
        [question] = asked
        assert (question.details or {})["where"] == (
            f"files/dl/tide.png, stored at s3://{BUCKET}/{key} (object store on "
            f"{server.endpoint})")
        before = every_key(server)
        for path in ("keys/server.pem", "s3://attack-other/x", "a\u202eb.png", "a\\b.png"):
            record = await through_the_loop(store, "url_fetch", url=site.url("/png"),
                                            download_path=path)
            assert not record.success and "Refused without asking you" in str(
                record.summary), path
        assert len(asked) == 1 and every_key(server) == before


# -- byte limits -----------------------------------------------------------------------------

@pytest.mark.cluster
async def test_an_append_never_reads_more_than_it_may_rewrite(
        store: Agent, server: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """Between the append's HEAD and its GET another writer puts a huge object: the GET
    asks for no more than the append may rewrite, and nothing is written."""
    monkeypatch.setattr(files_store, "APPEND_MAX_BYTES", 1000)
    put(server, store, "log.txt", b"small\n")
    real_head = files_store._Store.head
    grown = b"G" * 50_000
    heads: list[int] = []

    def head_then_grow(self: Any, parts: list[str]) -> Any:
        info = real_head(self, parts)
        heads.append(1)
        if len(heads) == 1:  # the other writer comes in right after our first HEAD
            put(server, store, "log.txt", grown)
        return info

    read_sizes: list[int] = []
    root = files_store.root_of(store.settings)
    assert root is not None
    fs = files_store._filesystem(root)
    real_cat = fs.cat_file

    def counted(path: str, *args: Any, **kwargs: Any) -> Any:
        data = real_cat(path, *args, **kwargs)
        read_sizes.append(len(data))
        return data

    monkeypatch.setattr(files_store._Store, "head", head_then_grow)
    monkeypatch.setattr(fs, "cat_file", counted)
    result = await call_tool(store, "write_file", path="log.txt", content="more\n",
                             mode="append")
    assert refused(result, "would grow to 50005 bytes")
    assert read_sizes and max(read_sizes) <= 1001
    assert server.client().get_object(Bucket=BUCKET, Key=f"{prefix(store)}/log.txt")[
        "Body"].read() == grown


@pytest.mark.cluster
async def test_get_workspace_info_stops_scanning_protected_keys(
        store: Agent, server: S3Server, limits: files.FileToolLimits) -> None:
    """Held: a prefix full of protected keys is scanned only so far (SCAN_FACTOR times the
    limit), then the count says it stopped."""
    for i in range(70):
        put(server, store, f"k/{i:02}.pem", b"-----BEGIN-----")
    limits.info_max_entries = 5
    info = await call_tool(store, "get_workspace_info")
    assert info["truncated"] is True and info["info"]["fileCount"] == 0


# -- settings a person may get wrong ---------------------------------------------------------

@pytest.mark.parametrize("endpoint", [" http://127.0.0.1:9", "\thttp://127.0.0.1:9",
                                      "HTTP://127.0.0.1:9"])
def test_a_plain_http_endpoint_needs_allow_http_however_spelled(endpoint: str) -> None:
    """botocore strips the space and speaks plain HTTP: so must the check."""
    with pytest.raises(object_store.StoreConfigError, match="allow_http=true"):
        Settings(files_uri="s3://bucket/p", files_options={"endpoint": endpoint})
    made = Settings(files_uri="s3://bucket/p", files_options={"endpoint": endpoint,
                                                             "allow_http": "true"})
    assert made.files_options["endpoint"] == endpoint.strip()


# -- markup in names and contents; the secret nowhere ---------------------------------------

@pytest.mark.cluster
async def test_markup_and_secrets_stay_out_of_what_is_shown_and_saved(
        store: Agent, server: S3Server) -> None:
    """Held: names and contents with markup (a key someone put, a path the model chose)
    are escaped in the saved card HTML, the ledger and the results; the fake secret of the
    environment is in none of them, nor in the settings a remote Worker gets."""
    from agent_kernel.team.remote import public_settings
    from agent_kernel.views.mime import Transcript
    from agent_kernel.views.run_html import html_of

    markup = "<img src=x onerror=alert(1)>"
    put(server, store, f"{markup}.txt", b"<script>alert(2)</script>")
    transcript = Transcript(run_id="run_t")
    store.bus.subscribe(transcript.feed)
    person(store)
    for name, arguments in (("list_files", {}), ("read_file", {"path": f"{markup}.txt"}),
                            ("write_file", {"path": f"<b>{markup}</b>.md", "content": markup}),
                            ("get_workspace_info", {})):
        record = await through_the_loop(store, name, **arguments)
        assert record.success, (name, record)
    nobucket = Agent(workspace=store.workspace.root, settings=Settings(
        files_uri="s3://no-such-attack-bucket/p", files_options=server.options))
    failed = await call_tool(nobucket, "read_file", path="a.txt")
    shown = html_of(transcript.state())
    assert "<img src=x" not in shown and "<script>alert" not in shown
    assert "&lt;img src=x onerror=alert(1)&gt;" in shown
    written = "".join(p.read_text(errors="replace") for p in store.workspace.root.rglob("*")
                      if p.is_file())
    assert "ledger" in " ".join(p.name for p in store.workspace.root.rglob("*"))
    everything = (shown + written + json.dumps(failed) + repr(public_settings(store.settings))
                  + repr(store.settings))
    for secret in (FAKE_ENV["AWS_SECRET_ACCESS_KEY"], FAKE_ENV["AWS_ACCESS_KEY_ID"]):
        assert secret not in everything


@pytest.mark.parametrize("endpoint", ["file:///etc", "s3.example.com", "s3://other-bucket",
                                      "https://", "ftp://127.0.0.1"])
def test_an_endpoint_that_is_no_servers_address_is_refused_in_words(endpoint: str) -> None:
    """Caught when it is set, in words, not as ``(ValueError)`` on the first file call."""
    with pytest.raises(object_store.StoreConfigError, match="not a server's address"):
        Settings(files_uri="s3://bucket/p", files_options={"endpoint": endpoint})


# -- a bucket of deep keys ------------------------------------------------------------------

@pytest.mark.cluster
async def test_deep_keys_cost_a_deny_check_per_new_folder_not_per_step(
        store: Agent, server: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys 60 folders deep, many of them: ``get_workspace_info`` checks each folder's name
    once, not every step of every key (a bucket of such keys would otherwise hold a core
    for minutes in a thread the tool's timeout leaves behind), and a key deeper than the
    local walk goes (64 folders) is left out and said, as locally."""
    chain = "/".join(f"d{i}" for i in range(60))
    for i in range(40):
        put(server, store, f"{chain}/f{i}.txt", b"x")
    for i in range(20):
        put(server, store, f"{chain}/k{i}.pem/inner.txt", b"SECRET")
    put(server, store, "/".join(["z"] * 70) + "/too-deep.txt", b"x")
    checks: list[str] = []
    real = files._denied

    def counted(relative: str) -> str | None:
        checks.append(relative)
        return real(relative)

    monkeypatch.setattr(files, "_denied", counted)
    info = await call_tool(store, "get_workspace_info")
    assert info["info"]["fileCount"] == 40 and info["info"]["directoryCount"] == 60
    assert info["truncated"] is True and "64 folders deep" in info["note"]
    assert len(checks) <= 40 + 60 + 2 * 20 + 70, len(checks)


@pytest.mark.cluster
async def test_a_server_that_pages_forever_is_asked_a_bounded_number_of_times(
        store: Agent, monkeypatch: pytest.MonkeyPatch, limits: files.FileToolLimits) -> None:
    """An endpoint (a proxy, a broken S3 clone) answering every listing page "empty, more to
    come": the listing asks at most its budget's worth of full pages and says it stopped."""
    limits.info_max_entries = 2000
    root = files_store.root_of(store.settings)
    assert root is not None
    fs = files_store._filesystem(root)
    asked: list[dict[str, Any]] = []

    def endless(method: str, **kwargs: Any) -> dict[str, Any]:
        asked.append(kwargs)
        if len(asked) > 100:
            raise RuntimeError("still paging")
        return {"IsTruncated": True, "NextContinuationToken": f"t{len(asked)}", "KeyCount": 0}

    monkeypatch.setattr(fs, "call_s3", endless)
    for name in ("list_files", "get_workspace_info"):
        asked.clear()
        result = await call_tool(store, name)
        assert result["ok"] is True and result["truncated"] is True, (name, result)
        assert len(asked) <= 1 + limits.info_max_entries * files_store.SCAN_FACTOR // 1000


@pytest.mark.timeout(120)
@pytest.mark.cluster
def test_a_cli_run_on_the_store_writes_no_credential_anywhere(server: S3Server,
                                                              tmp_path: Path) -> None:
    """Held: a CLI run that writes to the store (and one whose bucket is missing) prints and
    saves no part of the environment's credentials: stdout, stderr and every file of the
    workspace (ledger, state, run records) are searched."""
    import os
    import subprocess
    import sys

    env = {**os.environ, **FAKE_ENV}
    env.pop(object_store.FILES_ENV_VAR, None)
    options = [a for k, v in server.options.items() for a in ("--files-option", f"{k}={v}")]
    said = ""
    for bucket in (BUCKET, "no-such-attack-bucket"):
        done = subprocess.run(
            [sys.executable, "-m", "agent_kernel", "run", "write file cli.txt with hello",
             "--workspace", str(tmp_path / "ws"), "--headless-approval", "allow",
             "--files", f"s3://{bucket}/cli", *options],
            capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        said += done.stdout + done.stderr
    assert "does not exist" in said  # the second run's write failed in words
    saved = "".join(p.read_bytes().decode("utf-8", "replace")
                    for p in (tmp_path / "ws").rglob("*") if p.is_file())
    assert "cli.txt" in saved
    for secret in (FAKE_ENV["AWS_SECRET_ACCESS_KEY"], FAKE_ENV["AWS_ACCESS_KEY_ID"]):
        assert secret not in said and secret not in saved


# -- files/ and memory in one place ---------------------------------------------------------

@pytest.mark.parametrize("files_uri,memory_uri", [
    ("s3://shared", "s3://shared/memory"), ("s3://shared/memory", "s3://shared/memory/"),
    ("s3://shared/memory/files", "s3://shared/memory"), ("s3://shared/a", "s3+ddb://shared/a/m")])
def test_files_where_the_memory_table_lives_is_refused(files_uri: str, memory_uri: str) -> None:
    """With files/ at or above the memory table's prefix, read_file would hand the model the
    table's raw files (every memory, past the memory tools) and write_file could corrupt
    them: refused when set, naming both places."""
    with pytest.raises(object_store.StoreConfigError, match="memory table") as caught:
        Settings(files_uri=files_uri, memory_uri=memory_uri)
    assert files_uri.rstrip("/") in str(caught.value)


@pytest.mark.parametrize("files_uri,memory_uri", [
    ("s3://shared/files", "s3://shared/memory"), ("s3://shared/mem-files", "s3://shared/mem"),
    ("s3://one/p", "s3://two/p"), ("s3://shared/p", "memory://p")])
def test_files_beside_the_memory_table_is_fine(files_uri: str, memory_uri: str) -> None:
    made = Settings(files_uri=files_uri, memory_uri=memory_uri)
    assert made.files_uri == files_uri and made.memory_uri == memory_uri


def test_agent_config_refuses_files_on_the_memory_table(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from tool_helpers import loaded_magics

    monkeypatch.delenv(object_store.FILES_ENV_VAR, raising=False)
    monkeypatch.delenv(object_store.ENV_VAR, raising=False)
    with loaded_magics(tmp_path / "ws") as magics:
        magics.agent_config("--memory s3://shared/memory")
        capsys.readouterr()
        magics.agent_config("--files s3://shared")
        said = capsys.readouterr()
        assert "memory table" in said.err and magics.files_uri == ""
        magics.agent_config("--files s3://shared/files")
        magics.agent_config("--memory s3://shared/files/m")
        said = capsys.readouterr()
        assert "memory table" in said.err and magics.memory_uri == "s3://shared/memory"


# -- an endpoint from the environment -----------------------------------------------------

@pytest.mark.cluster
async def test_an_endpoint_from_the_environment_is_shown_and_checked(
        server: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore takes ``$AWS_ENDPOINT_URL`` when no endpoint is given: the card must name that
    server (not read as AWS's own), and a plain-HTTP one needs ``allow_http`` as an option's
    does."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", server.endpoint)
    uri = f"s3://{BUCKET}/from-env-{next(_prefixes)}"
    plain = Agent(workspace=tmp_path / "a", settings=Settings(files_uri=uri, files_options={
        "region": "us-east-1"}))
    asked = person(plain)
    before = every_key(server)
    record = await through_the_loop(plain, "write_file", path="x.txt", content="x")
    assert not record.success and asked == [] and "allow_http=true" in str(record.summary)
    assert every_key(server) == before
    from agent_kernel.engine.registry import ToolContext
    from agent_kernel.tools import commands

    note = commands.files_note(ToolContext(agent=plain, run_id="r", agent_id=plain.agent_id,
                                           workspace=plain.workspace))
    assert note is not None and server.endpoint in note  # commands still run, and say where
    allowed = Agent(workspace=tmp_path / "b", settings=Settings(files_uri=uri, files_options={
        "region": "us-east-1", "allow_http": "true"}))
    asked = person(allowed)
    record = await through_the_loop(allowed, "write_file", path="x.txt", content="x")
    assert record.success
    [question] = asked
    assert (question.details or {})["where"].endswith(f"(object store on {server.endpoint})")


def test_an_endpoint_from_the_shared_config_file_is_shown_and_checked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Was a hole: botocore also takes ``endpoint_url`` from ``~/.aws/config`` (a profile's,
    or its ``services`` section's), and the card said "object store" as if AWS's own. It
    now names that server, and a plain-HTTP one needs ``allow_http``; AWS's own servers,
    no file, or ``AWS_IGNORE_CONFIGURED_ENDPOINT_URLS`` name none."""
    from agent_kernel.core.object_store import StoreConfigError

    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE",
                 "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "aws-config"
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    settings = Settings(files_uri=f"s3://{BUCKET}/p", files_options={"region": "eu-west-1"})
    assert files_store.root_of(settings).endpoint is None  # no file at all
    config.write_text("[default]\nregion = eu-west-1\n")
    assert files_store.root_of(settings).endpoint is None  # AWS's own
    config.write_text("[default]\nendpoint_url = http://127.0.0.1:9/\n")
    root = files_store.root_of(settings, checked=False)
    assert root.endpoint is not None and root.endpoint.startswith("http://127.0.0.1:9")
    assert "(object store on http://127.0.0.1:9" in root.words()
    with pytest.raises(StoreConfigError, match="allow_http=true"):
        files_store.root_of(settings)
    allowed = Settings(files_uri=settings.files_uri,
                       files_options={**settings.files_options, "allow_http": "true"})
    assert files_store.root_of(allowed).endpoint == root.endpoint
    config.write_text("[default]\nservices = mine\n\n[services mine]\ns3 =\n"
                      "  endpoint_url = https://store.example.test\n")
    assert files_store.root_of(settings).endpoint == "https://store.example.test"
    monkeypatch.setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
    assert files_store.root_of(settings).endpoint is None


@pytest.mark.cluster
async def test_listings_follow_pages_and_stop_at_their_limits(
        store: Agent, server: S3Server, limits: files.FileToolLimits,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Held, with pages of 7 keys (as a bucket of 100k keys pages by 1000): every page is
    followed to the end when the limits allow, protected names spread over the pages are
    skipped, and each listing stops at its limit and says so."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(files_store, "PAGE_KEYS", 7)
    names = [f"many/f{i:03}.{'pem' if i % 5 == 0 else 'txt'}" for i in range(80)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: put(server, store, n, b"x"), names))
    shown = sorted(n.split("/")[1] for n in names if not n.endswith(".pem"))
    listed = await call_tool(store, "list_files", path="many")
    assert [e["name"] for e in listed["entries"]] == shown and listed["truncated"] is False
    info = await call_tool(store, "get_workspace_info")
    assert info["info"]["fileCount"] == 64 and info["truncated"] is False
    limits.list_max_entries, limits.info_max_entries = 20, 30
    listed = await call_tool(store, "list_files", path="many")
    assert [e["name"] for e in listed["entries"]] == shown[:20] and listed["truncated"] is True
    info = await call_tool(store, "get_workspace_info")
    assert info["truncated"] is True
    assert info["info"]["fileCount"] + info["info"]["directoryCount"] == 30


@pytest.mark.timeout(120)
async def test_an_endpoint_that_never_answers_is_asked_few_times(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An endpoint that accepts connections and never answers (a wrong port, a hung
    proxy): a call gives up after botocore's own attempts, not botocore's times s3fs's own
    retry loop (75 connections, minutes with the real read timeout, in a thread the tool's
    timeout leaves behind)."""
    import socket
    import threading

    from s3_server import fake_aws_env

    monkeypatch.setattr(files_store, "_READ_TIMEOUT", 1)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(100)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    try:
        with fake_aws_env():
            agent = Agent(workspace=tmp_path / "ws", settings=Settings(
                files_uri="s3://hung-files/p", files_options={
                    "endpoint": f"http://127.0.0.1:{listener.getsockname()[1]}",
                    "allow_http": "true", "region": "us-east-1"}))
            result = await call_tool(agent, "read_file", path="x.txt")
        assert refused(result, "could not be reached")
        assert len(accepted) <= 2 * files_store._ATTEMPTS, len(accepted)
    finally:
        listener.close()
        for made in accepted:
            made.close()
