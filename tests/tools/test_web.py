"""url_fetch, http_request and web_search against a local site, through the real network guard."""

from __future__ import annotations

import json
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
from scripted_server import Call, Message, ScriptedServer
from tool_helpers import call_tool
from web_server import PNG, LocalSite

from agent_kernel import Agent, Settings
from agent_kernel.engine.registry import Tool, ToolArgumentError
from agent_kernel.guards.web import guard as guard_module
from agent_kernel.guards.web.client import Request, fetch
from agent_kernel.guards.web.guard import Guard, NetworkRefused, parse_allow_entry
from agent_kernel.tools import web


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def site() -> Iterator[LocalSite]:
    with LocalSite() as running:
        yield running


@pytest.fixture(scope="module")
def tls_site(ca: trustme.CA) -> Iterator[LocalSite]:
    with LocalSite(tls=ca) as running:
        yield running


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch, ca: trustme.CA, tmp_path: Path
           ) -> web.WebToolLimits:
    """Fresh limits trusting the test CA; the local site is not allowed until a test says so."""
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    fresh = web.WebToolLimits(verify=str(bundle))
    monkeypatch.setattr(web, "LIMITS", fresh)
    return fresh


@pytest.fixture
def allowed(limits: web.WebToolLimits) -> web.WebToolLimits:
    limits.allow_hosts = ["127.0.0.1", "localhost"]
    return limits


@pytest.fixture
def agent(tmp_path: Path) -> Agent:
    return Agent(workspace=tmp_path / "ws")


call = call_tool


# --- shapes -----------------------------------------------------------------------------------

def test_schemas_are_the_specs(agent: Agent) -> None:
    fetch_schema = agent.registry.get("url_fetch").parameters
    assert list(fetch_schema["properties"]) == [
        "url", "method", "auth_profile", "headers", "body", "download_path", "timeout_seconds",
        "max_bytes"]
    assert fetch_schema["required"] == ["url"]
    assert fetch_schema["properties"]["method"]["enum"] == ["GET", "POST", "PUT", "PATCH",
                                                            "DELETE"]
    search = agent.registry.get("web_search").parameters
    assert list(search["properties"]) == ["q", "max_results"] and search["required"] == ["q"]
    assert search["properties"]["max_results"]["maximum"] == 20
    request = agent.registry.get("http_request").parameters
    assert list(request["properties"]) == ["url", "method", "headers", "body", "timeoutMs"]
    assert request["properties"]["timeoutMs"]["default"] == 30000
    with pytest.raises(ToolArgumentError, match="max_results"):
        agent.registry.get("web_search").validate({"q": "x", "max_results": 21})


def test_gets_need_no_approval_other_methods_do(agent: Agent, limits: web.WebToolLimits) -> None:
    fetch_tool, request_tool = agent.registry.get("url_fetch"), agent.registry.get("http_request")
    assert fetch_tool.needs_approval({"url": "https://x.example/"}) is False
    assert fetch_tool.needs_approval({"url": "https://x.example/", "method": "POST"}) is True
    assert fetch_tool.needs_approval({"url": "https://x.example/", "method": "DELETE"}) is True
    assert fetch_tool.needs_approval({"url": "https://x.example/", "download_path": "a"}) is True
    assert request_tool.needs_approval({"url": "https://x.example/", "method": "head"}) is False
    assert request_tool.needs_approval({"url": "https://x.example/", "method": "PUT"}) is True
    limits.approval_free_methods = ()
    assert fetch_tool.needs_approval({"url": "https://x.example/"}) is True
    assert agent.registry.get("web_search").needs_approval({"q": "x"}) is False


def test_side_effects_callable_decides_per_call_and_a_broken_one_asks() -> None:
    def act(verb: str) -> str:
        """Do something."""
        return verb

    def broken(arguments: dict[str, Any]) -> bool:
        raise KeyError("oops")

    decided = Tool(act, side_effects=lambda args: args["verb"] != "look")
    assert decided.needs_approval({"verb": "look"}) is False
    assert decided.needs_approval({"verb": "delete"}) is True
    assert Tool(act, side_effects=broken).needs_approval({"verb": "look"}) is True
    assert Tool(act, side_effects=True).needs_approval({}) is True
    assert Tool(act).needs_approval({}) is False


# --- the guard --------------------------------------------------------------------------------

@pytest.mark.parametrize("host", [
    "127.0.0.1", "localhost", "127.1", "2130706433", "0x7f.1", "017700000001", "[::1]",
    "[::ffff:127.0.0.1]", "0.0.0.0", "10.1.2.3", "172.16.0.9", "192.168.1.1",
    "169.254.169.254", "[fd00:ec2::254]", "[fe80::1]", "[fc00::5]", "100.64.0.1",
    "224.0.0.1", "[::]", "[64:ff9b::7f00:1]", "[2002:7f00:1::]"])
async def test_guard_refuses_internal_addresses(agent: Agent, limits: web.WebToolLimits,
                                                site: LocalSite, host: str) -> None:
    before = len(site.requests)
    with pytest.raises(NetworkRefused, match="network guard refused"):
        await call(agent, "url_fetch", url=f"http://{host}:{site.port}/text")
    assert len(site.requests) == before


async def test_refusal_names_the_address_and_how_to_allow(agent: Agent,
                                                         limits: web.WebToolLimits) -> None:
    with pytest.raises(NetworkRefused) as caught:
        await call(agent, "url_fetch", url="http://169.254.169.254/latest/meta-data/")
    assert "cloud metadata" in str(caught.value) and "LIMITS.allow_hosts" in str(caught.value)
    with pytest.raises(NetworkRefused, match=r"localhost \(127\.0\.0\.1\).*loopback"):
        await call(agent, "url_fetch", url="http://localhost:9/")


async def test_allow_listed_local_server_is_reached(agent: Agent, limits: web.WebToolLimits,
                                                    site: LocalSite) -> None:
    limits.allow_hosts = [f"127.0.0.1:{site.port}"]
    result = await call(agent, "url_fetch", url=site.url("/text"))
    assert result["status"] == 200 and result["content"] == "Grüße from the text route"
    with pytest.raises(NetworkRefused):  # the entry names a port: others stay closed
        await call(agent, "url_fetch", url=f"http://127.0.0.1:{site.port + 1}/text")


async def test_a_redirect_to_an_internal_address_is_refused(
        agent: Agent, limits: web.WebToolLimits, site: LocalSite) -> None:
    limits.allow_hosts = [f"localhost:{site.port}"]
    for target in (site.url("/text"), "http://169.254.169.254/latest/", "http://10.0.0.1/"):
        before = len(site.requests)
        with pytest.raises(NetworkRefused):
            await call(agent, "url_fetch",
                       url=site.url(f"/redirect?to={target}", host="localhost"))
        assert [r["path"] for r in site.requests[before:]] == [f"/redirect?to={target}"]


async def test_a_name_resolving_inside_is_refused_and_connections_use_the_vetted_address(
        agent: Agent, limits: web.WebToolLimits, site: LocalSite,
        monkeypatch: pytest.MonkeyPatch) -> None:
    lookups: list[str] = []

    async def rebinding(host: str, port: int) -> list[str]:
        lookups.append(host)
        return {"rebind.test": ["127.0.0.1"], "mixed.test": ["10.9.9.9", "127.0.0.1"],
                "trusted.test": ["127.0.0.1"]}[host]

    monkeypatch.setattr(guard_module, "system_resolver", rebinding)
    for name in ("rebind.test", "mixed.test"):
        with pytest.raises(NetworkRefused, match=f"{name} \\("):
            await call(agent, "url_fetch", url=f"http://{name}:{site.port}/text")
    limits.allow_hosts = ["trusted.test"]
    result = await call(agent, "url_fetch", url=f"http://trusted.test:{site.port}/text")
    # the system resolver cannot resolve *.test: the socket went to the address the guard saw
    assert result["status"] == 200 and lookups == ["rebind.test", "mixed.test", "trusted.test"]
    assert site.requests[-1]["headers"]["Host"] == f"trusted.test:{site.port}"


async def test_client_connects_only_where_the_guard_said(site: LocalSite) -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    guard = Guard(["good.test"], resolver=resolver)
    fetched = await fetch(guard, Request("GET", f"http://good.test:{site.port}/json",
                                         lambda url: {}))
    assert fetched.status == 200 and fetched.addresses == ["127.0.0.1"]
    with pytest.raises(NetworkRefused):
        await fetch(Guard(resolver=resolver), Request(
            "GET", f"http://good.test:{site.port}/json", lambda url: {}))


@pytest.mark.parametrize("entry", ["", "http://x/", "a b", "host:99999", "user@host"])
def test_bad_allow_list_entries_are_refused(entry: str) -> None:
    with pytest.raises(ValueError, match="allow-list entry"):
        parse_allow_entry(entry)


def test_allow_list_forms() -> None:
    assert parse_allow_entry("10.0.0.0/8").network is not None
    assert parse_allow_entry("[::1]:8080").port == 8080
    assert parse_allow_entry("Intranet.Example.").host == "intranet.example"


@pytest.mark.parametrize("url,words", [
    ("file:///etc/passwd", "only http:// or https://"), ("ftp://example.com/x", "only http"),
    ("gopher://example.com/", "only http"), ("http://user:pw@127.0.0.1/", "password in the URL"),
    ("//example.com/", "only http")])
async def test_schemes_and_userinfo_are_refused(agent: Agent, allowed: web.WebToolLimits,
                                                url: str, words: str) -> None:
    with pytest.raises(RuntimeError, match=words):
        await call(agent, "url_fetch", url=url)


# --- url_fetch: what comes back -------------------------------------------------------------

async def test_html_becomes_markdown(agent: Agent, allowed: web.WebToolLimits,
                                     site: LocalSite) -> None:
    result = await call(agent, "url_fetch", url=site.url("/page"))
    assert result["format"] == "markdown" and result["title"] == "Tide tables of Brest"
    content = result["content"]
    assert content.startswith("# High water")
    assert "The **next** high water is at [14:02](/times)." in content
    assert "- Monday: 6.1 m" in content
    for hidden in ("secretScript", "color: red", "About us", "Go"):
        assert hidden not in content


async def test_json_text_binary_and_status(agent: Agent, allowed: web.WebToolLimits,
                                           site: LocalSite) -> None:
    got = await call(agent, "url_fetch", url=site.url("/json"))
    assert got["format"] == "json" and got["json"] == {"tide": [6.1, 5.8], "port": "Brest"}
    png = await call(agent, "url_fetch", url=site.url("/png"))
    assert png["format"] == "binary" and "content" not in png and png["bytes"] == len(PNG)
    assert "download_path" in png["note"]
    missing = await call(agent, "url_fetch", url=site.url("/missing"))
    assert missing["status"] == 404 and missing["content"] == "no such page"
    deflated = await call(agent, "url_fetch", url=site.url("/deflate"))
    assert deflated["content"] == "deflated words " * 100


async def test_max_bytes_truncates_and_says_so(agent: Agent, allowed: web.WebToolLimits,
                                               site: LocalSite) -> None:
    result = await call(agent, "url_fetch", url=site.url("/big"), max_bytes=1000)
    assert result["truncated"] is True and result["content"] == "x" * 1000
    assert "truncated: showed the first 1000 bytes" in result["note"]
    whole = await call(agent, "url_fetch", url=site.url("/big"))
    assert "truncated" not in whole and len(whole["content"]) == 300_000
    with pytest.raises(ValueError, match="max_bytes must be at most"):
        await call(agent, "url_fetch", url=site.url("/big"), max_bytes=10**9)


async def test_a_gzip_bomb_costs_max_bytes(agent: Agent, allowed: web.WebToolLimits,
                                           site: LocalSite) -> None:
    tracemalloc.start()
    try:
        result = await call(agent, "url_fetch", url=site.url("/bomb"), max_bytes=2000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result["truncated"] is True and result["bytes"] == 2000
    assert peak < 8_000_000  # 50 MB of zeros were never inflated
    with pytest.raises(RuntimeError, match="Content-Encoding 'gzip, gzip'"):
        await call(agent, "url_fetch", url=site.url("/stacked"))


async def test_redirects_are_followed_and_loops_end(agent: Agent, allowed: web.WebToolLimits,
                                                    site: LocalSite) -> None:
    result = await call(agent, "url_fetch", url=site.url(f"/redirect?to={site.url('/json')}"))
    assert result["json"]["port"] == "Brest" and result["redirects"] == [site.url("/json")]
    with pytest.raises(RuntimeError, match="too many redirects"):
        await call(agent, "url_fetch", url=site.url("/loop"))


async def test_a_slow_server_ends_at_the_deadline(agent: Agent, allowed: web.WebToolLimits,
                                                  site: LocalSite) -> None:
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="no complete answer within 1 s"):
        await call(agent, "url_fetch", url=site.url("/slow"), timeout_seconds=1)
    assert time.monotonic() - started < 5  # the server drips for 10 s
    with pytest.raises(ValueError, match="timeout_seconds must be"):
        await call(agent, "url_fetch", url=site.url("/slow"), timeout_seconds=301)


# --- url_fetch: what is sent -----------------------------------------------------------------

@pytest.mark.parametrize("name", ["Authorization", "cookie", "Proxy-Authorization", "Host",
                                  "X-Api-Key", "X-Auth-Token", "Transfer-Encoding",
                                  "X-Forwarded-For"])
async def test_denied_headers(agent: Agent, allowed: web.WebToolLimits, site: LocalSite,
                              name: str) -> None:
    before = len(site.requests)
    with pytest.raises(PermissionError, match="may not be set"):
        await call(agent, "url_fetch", url=site.url("/echo"), headers={name: "v4lue"})
    assert len(site.requests) == before


@pytest.mark.parametrize("headers", [{"X-Ok": "a\r\nX-Evil: 1"}, {"X-Ok": "a\nb"},
                                     {"X Bad": "v"}, {"X-Ok:": "v"}, {"X-Ok": "a\0b"}])
async def test_header_injection_is_refused(agent: Agent, allowed: web.WebToolLimits,
                                           site: LocalSite, headers: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="header"):
        await call(agent, "url_fetch", url=site.url("/echo"), headers=headers)


async def test_headers_and_json_body_reach_the_server(agent: Agent, allowed: web.WebToolLimits,
                                                      site: LocalSite) -> None:
    result = await call(agent, "url_fetch", url=site.url("/echo"), method="POST",
                        headers={"X-Trace": "t-1"}, body={"tide": 6.1})
    echoed = result["json"]
    assert echoed["method"] == "POST" and echoed["headers"]["X-Trace"] == "t-1"
    assert json.loads(echoed["body"]) == {"tide": 6.1}
    assert echoed["headers"]["Content-Type"] == "application/json"
    assert "set-cookie" not in {k.lower() for k in result.get("headers", {})}
    allowed.header_allowlist = ["accept"]
    with pytest.raises(PermissionError, match="not in the allowed headers"):
        await call(agent, "url_fetch", url=site.url("/echo"), headers={"X-Trace": "t"})
    with pytest.raises(ValueError, match="only with POST, PUT or PATCH"):
        await call(agent, "url_fetch", url=site.url("/echo"), body="text")


async def test_auth_profile_goes_only_to_its_hosts_and_never_comes_back(
        agent: Agent, allowed: web.WebToolLimits, tls_site: LocalSite,
        monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "tide-Secret-0123456789"
    monkeypatch.setenv("AGENT_KERNEL_AUTH_TIDES_TOKEN", secret)
    monkeypatch.setenv("AGENT_KERNEL_AUTH_TIDES_HOSTS", "localhost")
    url = tls_site.url("/echo", host="localhost")
    result = await call(agent, "url_fetch", url=url, auth_profile="tides")
    assert tls_site.requests[-1]["headers"]["Authorization"] == f"Bearer {secret}"
    assert secret not in json.dumps(result)
    assert result["json"]["headers"]["Authorization"] == "[REDACTED]"
    # a redirect to another host: the credential stays behind
    hop = tls_site.url(f"/redirect?to={tls_site.url('/echo')}", host="localhost")
    moved = await call(agent, "url_fetch", url=hop, auth_profile="tides")
    assert "Authorization" not in tls_site.requests[-1]["headers"]
    assert "was not sent to 127.0.0.1" in moved["auth_note"]
    with pytest.raises(PermissionError, match="only sent over https to localhost"):
        await call(agent, "url_fetch", url=tls_site.url("/echo"), auth_profile="tides")
    with pytest.raises(LookupError, match="no auth_profile named 'nope'; configured: tides"):
        await call(agent, "url_fetch", url=url, auth_profile="nope")
    allowed.auth_profiles["basic"] = web.AuthProfile(hosts=["localhost"], token="me:pw",
                                                     scheme="Basic")
    await call(agent, "url_fetch", url=url, auth_profile="basic")
    assert tls_site.requests[-1]["headers"]["Authorization"] == "Basic bWU6cHc="


# --- download_path ----------------------------------------------------------------------------

async def test_download_saves_into_the_file_cache(agent: Agent, allowed: web.WebToolLimits,
                                                  site: LocalSite) -> None:
    result = await call(agent, "url_fetch", url=site.url("/png"), download_path="img/tide.png")
    assert result["path"] == "files/img/tide.png" and result["bytes"] == len(PNG)
    assert result["content_type"] == "image/png" and "content" not in result
    saved = agent.workspace.root / "files" / "img" / "tide.png"
    assert saved.read_bytes() == PNG
    assert [p.name for p in saved.parent.iterdir()] == ["tide.png"]


async def test_a_failed_download_loses_nothing(agent: Agent, allowed: web.WebToolLimits,
                                               site: LocalSite) -> None:
    target = agent.workspace.root / "files" / "keep.txt"
    target.parent.mkdir(parents=True)
    target.write_text("precious")
    with pytest.raises(ValueError, match="larger than max_bytes"):
        await call(agent, "url_fetch", url=site.url("/big"), download_path="keep.txt",
                   max_bytes=100)
    missing = await call(agent, "url_fetch", url=site.url("/missing"), download_path="keep.txt")
    assert missing["note"].startswith("not saved: the server answered 404")
    with pytest.raises(RuntimeError, match="no complete answer"):
        await call(agent, "url_fetch", url=site.url("/slow"), download_path="keep.txt",
                   timeout_seconds=0.5)
    assert target.read_text() == "precious"
    assert [p.name for p in target.parent.iterdir()] == ["keep.txt"]


@pytest.mark.parametrize("path", ["file_state_dir/x.bin", "../ledger.jsonl", "/etc/x",
                                  "file_cache_dir"])
async def test_download_only_into_the_file_cache(agent: Agent, allowed: web.WebToolLimits,
                                                 site: LocalSite, path: str) -> None:
    with pytest.raises((PermissionError, ValueError)):
        await call(agent, "url_fetch", url=site.url("/png"), download_path=path)
    assert not (agent.workspace.root / "state" / "x.bin").exists()


# --- http_request -----------------------------------------------------------------------------

async def test_http_request_shapes(agent: Agent, allowed: web.WebToolLimits,
                                   tls_site: LocalSite) -> None:
    got = await call(agent, "http_request", url=tls_site.url("/json"))
    assert got["ok"] is True and got["status"] == 200
    assert json.loads(got["body"]) == {"tide": [6.1, 5.8], "port": "Brest"}
    assert got["headers"]["content-type"] == "application/json"
    posted = await call(agent, "http_request", url=tls_site.url("/echo"), method="post",
                        headers={"Content-Type": "application/json"}, body={"name": "test"})
    assert json.loads(json.loads(posted["body"])["body"]) == {"name": "test"}
    assert "set-cookie" not in posted["headers"]
    missing = await call(agent, "http_request", url=tls_site.url("/missing"))
    assert missing["ok"] is False and missing["status"] == 404
    assert missing["error"] == "HTTP 404 Not Found"


@pytest.mark.parametrize("arguments,words", [
    ({"url": "http://example.com/"}, "only https:// URLs"),
    ({"url": "https://127.0.0.1:1/", "allow": False}, "network guard refused"),
    ({"url": "https://localhost/", "headers": {"Cookie": "a=b"}}, "may not be set"),
    ({"url": "https://localhost/", "method": "TRACE"}, "method must be"),
    ({"url": "https://localhost/", "timeoutMs": 10**9}, "timeout_seconds must be"),
    ({"url": "https://no-such-host.invalid/"}, "cannot resolve host"),
])
async def test_http_request_failures_are_results(agent: Agent, limits: web.WebToolLimits,
                                                 arguments: dict[str, Any], words: str) -> None:
    if arguments.pop("allow", True):
        limits.allow_hosts = ["localhost", "no-such-host.invalid"]
    result = await call(agent, "http_request", **arguments)
    assert result["ok"] is False and words in result["error"] and set(result) == {"ok", "error"}


async def test_http_request_timeout(agent: Agent, allowed: web.WebToolLimits,
                                    tls_site: LocalSite) -> None:
    result = await call(agent, "http_request", url=tls_site.url("/slow"), timeoutMs=500)
    assert result == {"ok": False, "error": "no complete answer within 0.5 s (timeout_seconds)"}


async def test_http_request_checks_the_certificate(agent: Agent, allowed: web.WebToolLimits,
                                                   tls_site: LocalSite) -> None:
    allowed.verify = True  # the public roots do not know the test CA
    result = await call(agent, "http_request", url=tls_site.url("/json"))
    assert result["ok"] is False and "CERTIFICATE_VERIFY_FAILED" in result["error"]


# --- web_search -------------------------------------------------------------------------------

async def test_duckduckgo_results_page(agent: Agent, allowed: web.WebToolLimits,
                                       site: LocalSite) -> None:
    allowed.search_url = site.url("/ddg/")
    result = await call(agent, "web_search", q="brest tide times")
    assert site.requests[-1]["path"] == "/ddg/?q=brest+tide+times"
    assert result["query"] == "brest tide times"
    assert result["results"] == [
        {"title": "Brest Tide Times for the next 7 days",
         "url": "https://www.tide-forecast.example/locations/Brest/tides/latest",
         "snippet": "The predicted tide times today on Monday 24 November 2026 for Brest are: "
                    "first high tide at 2:02am, first low tide at 8:17am."},
        {"title": "Marées à Brest & horaires",
         "url": "https://maree.example/brest?lang=en&unit=m",
         "snippet": "Horaires des marées et coefficients pour Brest."},
        {"title": "SHOM official tide predictions", "url": "https://shom.example/en/tides",
         "snippet": ""}]
    two = await call(agent, "web_search", q="brest", max_results=2)
    assert len(two["results"]) == 2


async def test_searxng_and_brave_backends(agent: Agent, allowed: web.WebToolLimits,
                                          site: LocalSite,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    allowed.search_backend, allowed.search_url = "searxng", site.url("/searx")
    result = await call(agent, "web_search", q="tide")
    assert site.requests[-1]["path"] == "/searx/search?q=tide&format=json"
    assert result["results"] == [
        {"title": "Tide tables", "url": "https://tides.example/brest",
         "snippet": "High water at Brest"},
        {"title": "Harbour", "url": "https://harbour.example/", "snippet": "Moorings"}]
    allowed.search_backend, allowed.search_url = "brave", site.url("/brave")
    with pytest.raises(PermissionError, match="BRAVE_SEARCH_API_KEY"):
        await call(agent, "web_search", q="tide")
    monkeypatch.setenv("BRAVE_SEARCH_API_KEY", "brave-key-123456")
    result = await call(agent, "web_search", q="tide", max_results=3)
    assert site.requests[-1]["headers"]["X-Subscription-Token"] == "brave-key-123456"
    assert result["results"] == [{"title": "Brave result", "url": "https://brave.example/",
                                  "snippet": "tide times"}]


async def test_web_search_goes_through_the_guard(agent: Agent, limits: web.WebToolLimits,
                                                 site: LocalSite) -> None:
    limits.search_url = site.url("/ddg/")
    with pytest.raises(NetworkRefused):
        await call(agent, "web_search", q="x")


# --- a real run -------------------------------------------------------------------------------

async def test_a_run_fetches_with_get_and_is_refused_a_post(
        tmp_path: Path, allowed: web.WebToolLimits, site: LocalSite, tls_site: LocalSite,
        monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "plain-words-no-known-shape-42"
    monkeypatch.setenv("AGENT_KERNEL_AUTH_LOCAL_TOKEN", secret)
    monkeypatch.setenv("AGENT_KERNEL_AUTH_LOCAL_HOSTS", "localhost")
    before = len(site.requests)
    with ScriptedServer() as server:
        agent = Agent(model="openai/test-model", workspace=tmp_path / "ws",
                      settings=Settings(api_base=server.base_url, api_key="sk-x"))
        server.script(
            Message(calls=[
                Call("url_fetch", json.dumps({"url": site.url("/page")}), id="c1"),
                Call("url_fetch", json.dumps({"url": site.url("/echo"), "method": "POST",
                                              "body": "x"}), id="c2"),
                Call("url_fetch", json.dumps({"url": "http://169.254.169.254/"}), id="c3"),
                Call("url_fetch", json.dumps({"url": tls_site.url("/echo", host="localhost"),
                                              "auth_profile": "local"}), id="c4"),
            ]),
            Message(text="High water is at 14:02."))
        result = await agent.arun("When is high water?")
        messages = server.tool_messages(1)
    assert result.reply == "High water is at 14:02."
    by_id = {m["tool_call_id"]: m["content"] for m in messages}
    assert "# High water" in by_id["c1"]
    assert "was not run" in by_id["c2"] and "headless policy" in by_id["c2"]
    assert "network guard refused" in by_id["c3"] and "cloud metadata" in by_id["c3"]
    assert [r["method"] for r in site.requests[before:]] == ["GET"]
    assert tls_site.requests[-1]["headers"]["Authorization"] == f"Bearer {secret}"
    assert "[REDACTED]" in by_id["c4"] and secret not in json.dumps(messages)
    ledger = (agent.workspace.root / "ledger.jsonl").read_text()
    assert secret not in ledger and '"auth_profile":"local"' in ledger
    records = [json.loads(line) for line in ledger.splitlines()]
    approvals = [r for r in records if r.get("kind") == "approval"]
    assert [(a["tool_name"], a["decision"]) for a in approvals] == [("url_fetch", "denied")]


async def test_a_profile_secret_echoed_as_a_key_and_secret_named_values_never_reach_the_ledger(
        tmp_path: Path, allowed: web.WebToolLimits, tls_site: LocalSite) -> None:
    # A token with no known shape, set in the profile itself (no environment variable
    # redaction could know): only the call's own mask can find it, in keys as in values.
    secret = "plainwords" + "7" * 12
    allowed.auth_profiles["echo"] = web.AuthProfile(hosts=["localhost"], token=secret)
    with ScriptedServer() as server:
        agent = Agent(model="openai/test-model", workspace=tmp_path / "ws",
                      settings=Settings(api_base=server.base_url, api_key="sk-x"))
        server.script(
            Message(calls=[Call("url_fetch", json.dumps({
                "url": tls_site.url("/echo-keys", host="localhost"), "auth_profile": "echo"}),
                id="c1")]),
            Message(text="Echoed."))
        result = await agent.arun("What does the echo say?")
        messages = server.tool_messages(1)
    assert result.status == "ok"
    assert tls_site.requests[-1]["headers"]["Authorization"] == f"Bearer {secret}"
    ledger = (agent.workspace.root / "ledger.jsonl").read_text()
    [record] = [json.loads(line) for line in ledger.splitlines()
                if json.loads(line).get("kind") == "tool_call"]
    echoed = record["result"]["json"]
    assert echoed["[REDACTED]"] == 1 and echoed["user:[REDACTED]"] == 2
    assert echoed["password"] == echoed["token"] == echoed["api_key"] == "[REDACTED]"
    for leaked in (secret, "12345678", "t-one", "t-two", "n-three"):
        assert leaked not in ledger, leaked
    assert secret not in json.dumps(messages)
