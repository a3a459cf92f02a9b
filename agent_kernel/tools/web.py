"""The web: spec 003's ``url_fetch`` and ``web_search``, spec 004's ``http_request``.

Every request goes through the network guard (:mod:`agent_kernel.guards.web`): it
may not reach this machine, private networks or cloud metadata services,
checked on the address actually connected, on every redirect hop, unless the
person allows a host in ``LIMITS.allow_hosts``. A GET (or HEAD) runs without
asking; any other method, and any download into the workspace, asks the person
first (``LIMITS.approval_free_methods``). The model never sends credentials
itself: ``Authorization``, ``Cookie`` and secret-named headers are refused, and
a URL may not carry a password. Credentials are the person's ``auth_profile``
entries, each bound to the hosts it may be sent to, kept out of every result.

Where 003 and 004 differ we keep each tool as its spec has it: ``url_fetch``
takes http and https and returns the page in readable form; ``http_request``
is HTTPS only and returns ``{ok, status, headers, body}``, failures included.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypedDict

from agent_kernel.core.redaction import redact_text, secret_name
from agent_kernel.engine.registry import Field, Tool, ToolContext, ToolError, ok_false
from agent_kernel.guards.web.auth import AUTH_ENV_PREFIX, AuthProfile, env_profile
from agent_kernel.tools import files, files_store

if TYPE_CHECKING:
    import httpx

    from agent_kernel.guards.web.client import Fetched
    from agent_kernel.guards.web.guard import Guard

_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$")
# Headers the model may never set: credentials, and what would let it forge the framing
# of the request or where it claims to come from.
DENIED_HEADERS = frozenset({
    "authorization", "proxy-authorization", "cookie", "cookie2", "set-cookie", "host",
    "content-length", "transfer-encoding", "connection", "keep-alive", "te", "trailer",
    "upgrade", "expect", "proxy-connection", "accept-encoding", "forwarded", "x-forwarded-for",
    "x-forwarded-host", "x-forwarded-proto", "x-real-ip", "x-http-method-override"})
_KEPT_HEADERS = ("content-type", "content-length", "content-language", "last-modified", "etag",
                 "cache-control", "retry-after", "www-authenticate", "link")


@dataclass
class WebToolLimits:
    """Spec 003's ``tools.url_fetch.*`` / ``tools.web_search.*`` settings; change ``LIMITS``."""

    timeout: float = 30.0
    max_timeout: float = 300.0
    max_bytes: int = 512 * 1024
    # A GET needs no approval: the model reads at most 100,000 characters of a result
    # (Settings.max_tool_result_chars) and the ledger keeps 2 MiB (ledger.LIMITS), so more
    # than 2 MiB would only cost time (redaction reads it all) and memory.
    max_bytes_limit: int = 2 * 1024 * 1024
    download_max_bytes: int = 100 * 1024 * 1024
    max_request_bytes: int = 1024 * 1024
    max_redirects: int = 5
    # Hosts, addresses or CIDR blocks the guard lets through ("localhost:8888", "10.0.0.0/8").
    allow_hosts: list[str] = field(default_factory=list)
    # Methods that run without asking the person; every other method asks first.
    approval_free_methods: tuple[str, ...] = ("GET", "HEAD")
    # None: any header not denied; a list: only these (lower case) may be set by the model.
    header_allowlist: list[str] | None = None
    auth_profiles: dict[str, AuthProfile] = field(default_factory=dict)
    # True: the certifi roots; a path: a CA bundle; False: no TLS checks.
    verify: bool | str = True
    search_backend: Literal["duckduckgo", "searxng", "brave"] = "duckduckgo"
    # None: the backend's public address; set it for a SearXNG instance or a proxy.
    search_url: str | None = None
    search_api_key_env: str = "BRAVE_SEARCH_API_KEY"
    search_max_results: int = 5


LIMITS = WebToolLimits()
SEARCH_URLS = {"duckduckgo": "https://html.duckduckgo.com/html/",
               "brave": "https://api.search.brave.com/res/v1/web/search"}


def profile(name: str) -> AuthProfile:
    """The auth profile ``name``: configured in ``LIMITS.auth_profiles`` or in the environment
    (``AGENT_KERNEL_AUTH_<NAME>_TOKEN`` with ``AGENT_KERNEL_AUTH_<NAME>_HOSTS``, comma-separated;
    optional ``_HEADER`` and ``_SCHEME``)."""
    if name in LIMITS.auth_profiles:
        return LIMITS.auth_profiles[name]
    found = env_profile(name)
    if found is not None:
        return found
    known = sorted(set(LIMITS.auth_profiles) | {
        k[len(AUTH_ENV_PREFIX):-len("_TOKEN")].lower() for k in os.environ
        if k.startswith(AUTH_ENV_PREFIX) and k.endswith("_TOKEN")})
    raise LookupError(f"no auth_profile named {name!r}; configured: {', '.join(known) or 'none'}")


def check_headers(headers: dict[str, str] | None) -> dict[str, str]:
    """The model's headers, or a clear error for one it may not set."""
    checked: dict[str, str] = {}
    for name, value in (headers or {}).items():
        if not _TOKEN.match(name):
            raise ValueError(f"header name {name[:60]!r} is not a valid HTTP header name")
        if not isinstance(value, str) or len(value) > 8192 or any(c in value for c in "\r\n\0"):
            raise ValueError(f"header {name!r}: the value must be one line of text (no CR, LF "
                             "or NUL) of at most 8192 characters")
        lower = name.lower()
        if lower in DENIED_HEADERS or lower.startswith("proxy-") or secret_name(name):
            raise PermissionError(f"header {name!r} may not be set by a tool call; credentials "
                                  "come from an auth_profile the person configured")
        if LIMITS.header_allowlist is not None and lower not in LIMITS.header_allowlist:
            raise PermissionError(f"header {name!r} is not in the allowed headers: "
                                  f"{', '.join(LIMITS.header_allowlist) or 'none'}")
        checked[name] = value
    if len(checked) > 50:
        raise ValueError(f"at most 50 headers, got {len(checked)}")
    return checked


def encode_body(method: str, body: object, headers: dict[str, str]) -> bytes | None:
    """The request body as bytes (text as is, anything else as JSON), or None for none."""
    if body is None:
        return None
    if method not in ("POST", "PUT", "PATCH"):
        raise ValueError(f"a body is sent only with POST, PUT or PATCH, not {method}")
    if isinstance(body, str):
        data = body.encode("utf-8")
    else:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        if not any(k.lower() == "content-type" for k in headers):
            headers["Content-Type"] = "application/json"
    if len(data) > LIMITS.max_request_bytes:
        raise ValueError(f"body is {len(data)} bytes; at most {LIMITS.max_request_bytes}")
    return data


def _timeout(seconds: float | None) -> float:
    value = LIMITS.timeout if seconds is None else seconds
    if not 0 < value <= LIMITS.max_timeout:
        raise ValueError(f"timeout_seconds must be more than 0 and at most "
                         f"{LIMITS.max_timeout:g}, got {value:g}")
    return value


def _guard() -> Guard:
    from agent_kernel.guards.web.guard import Guard

    return Guard(LIMITS.allow_hosts)


class _Call:
    """One request's headers per hop, and the secrets its results must never show."""

    def __init__(self, headers: dict[str, str], auth_profile: str | None) -> None:
        self.headers = headers
        self.name = auth_profile
        self.profile = profile(auth_profile) if auth_profile else None
        self.hidden: list[str] = []
        self.skipped: list[str] = []
        if self.profile is not None:
            value = self.profile.header_value(auth_profile or "")
            self.hidden = [value, self.profile.secret(auth_profile or "")]
            self.hidden.append(value.split(" ", 1)[-1])

    def first_hop(self, url: str) -> None:
        """Refuse a profile used for a URL outside its hosts, before anything is sent."""
        import httpx

        if self.profile is None:
            return
        parsed = httpx.URL(url)
        if parsed.scheme != "https" or not self.profile.sent_to(parsed.host):
            raise PermissionError(f"auth_profile {self.name!r} is only sent over https to "
                                  f"{', '.join(self.profile.hosts)}")

    def hop_headers(self, url: httpx.URL) -> dict[str, str]:
        """The headers for one hop: the profile's only on its own hosts, over https."""
        if self.profile is None:
            return dict(self.headers)
        if url.scheme == "https" and self.profile.sent_to(url.host):
            return {**self.headers, self.profile.header: self.hidden[0]}
        self.skipped.append(url.host)
        return dict(self.headers)

    def mask(self, value: object) -> Any:
        """``value`` with every secret of this call replaced (a server may echo it back)."""
        if isinstance(value, str):
            for secret in self.hidden:
                if len(secret) >= 4:
                    value = value.replace(secret, "[REDACTED]")
            return value
        if isinstance(value, dict):  # a server may echo the secret as a key, too
            masked: dict[Any, Any] = {}
            for key, item in value.items():
                name = self.mask(key)
                number = 2
                while name != key and name in masked:
                    name = f"{self.mask(key)} ({number})"
                    number += 1
                masked[name] = self.mask(item)
            return masked
        if isinstance(value, (list, tuple)):
            return [self.mask(v) for v in value]
        return value


def _shown_url(url: str) -> str:
    return redact_text(url)


@contextlib.contextmanager
def _download(ctx: ToolContext, path: str) -> Any:
    """A file in file_cache_dir written through a temporary name, renamed only when whole
    (with ``files/`` on an object store: kept in a private temporary file, then put)."""
    root = files.store_of(ctx)
    if root is not None and (parts := files.store_parts(ctx.workspace, path)) is not None:
        with _stored_download(root, parts, path) as made:
            yield made
        return
    target = files.resolve(ctx.workspace, path)
    if root is not None:
        files.not_local_cache(ctx.workspace, target, path)
    folder, parts = files._writable_parts(ctx.workspace, target, path)
    if folder != files.CACHE_DIR or not parts:
        raise PermissionError(f"download_path {path!r} must name a file in file_cache_dir "
                              f"({files.CACHE_DIR}/)")
    base = files._writable_root(ctx.workspace, folder)
    with files._folder_fd(base, parts[:-1], create=True) as parent:
        partial = f".{parts[-1][:200]}.part-{secrets.token_hex(4)}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(partial, flags, 0o644, dir_fd=parent)
        state = {"done": False}

        def sink(chunk: bytes) -> None:
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view):]

        try:
            yield sink, state
            os.close(fd)
            fd = -1
            if state["done"]:
                os.rename(partial, parts[-1], src_dir_fd=parent, dst_dir_fd=parent)
        finally:
            if fd >= 0:
                os.close(fd)
            if not state["done"]:
                with contextlib.suppress(OSError):
                    os.unlink(partial, dir_fd=parent)


@contextlib.contextmanager
def _stored_download(root: files_store.StoreRoot, parts: list[str], path: str) -> Any:
    """The body into a private temporary file; put on the store only when whole."""
    import tempfile

    if not parts:
        raise PermissionError(f"download_path {path!r} must name a file in file_cache_dir "
                              f"({files.CACHE_DIR}/)")
    state = {"done": False}
    with tempfile.NamedTemporaryFile(prefix="agent-download-") as spool:
        yield spool.write, state
        spool.flush()
        if state["done"]:
            shown = files_store.shown_of(parts)
            files_store.call(root, shown, lambda store: store.upload(parts, spool.name))


def _read_result(fetched: Fetched, max_bytes: int) -> dict[str, Any]:
    from agent_kernel.guards.web import pages

    result: dict[str, Any] = {"url": _shown_url(fetched.url), "status": fetched.status,
                              "content_type": fetched.content_type or None,
                              "bytes": min(fetched.size, max_bytes)}
    kind = pages.kind_of(fetched.content_type, fetched.body)
    text = pages.decode(fetched.body, fetched.charset) if kind != "binary" else ""
    if kind == "html":
        title, content = pages.html_to_markdown(text, fetched.url)
        result.update(format="markdown", title=title, content=content)
    elif kind == "json" and not fetched.truncated and (parsed := pages.parse_json(text))[0]:
        result.update(format="json", json=parsed[1])
    elif kind in ("json", "text"):
        result.update(format="text", content=text)
    else:
        result.update(format="binary", note=(
            f"binary content ({fetched.content_type or 'unknown type'}, "
            f"{fetched.size} bytes) is not shown; use download_path to save it"))
    if fetched.truncated:
        result["truncated"] = True
        result["note"] = (f"truncated: showed the first {max_bytes} bytes of a longer response; "
                          f"ask again with a larger max_bytes (at most {LIMITS.max_bytes_limit}) "
                          "or save it with download_path")
    return result


def _common(fetched: Fetched, call: _Call) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if fetched.redirects:
        extra["redirects"] = [_shown_url(u) for u in fetched.redirects]
    kept = {k: fetched.headers[k] for k in _KEPT_HEADERS if k in fetched.headers}
    if kept:
        extra["headers"] = kept
    if call.skipped:
        extra["auth_note"] = (f"auth_profile {call.name!r} was not sent to "
                              f"{', '.join(sorted(set(call.skipped)))} (not one of its hosts)")
    return extra


async def url_fetch(
    url: Annotated[str, Field(min_length=1, max_length=8192)],
    ctx: ToolContext,
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "GET",
    auth_profile: Annotated[str | None, Field(max_length=100)] = None,
    headers: dict[str, str] | None = None,
    body: Any = None,
    download_path: Annotated[str | None, Field(max_length=4096)] = None,
    timeout_seconds: Annotated[float | None, Field(gt=0)] = None,
    max_bytes: Annotated[int | None, Field(ge=1)] = None,
) -> dict[str, Any]:
    """Make an HTTP(S) request and return the response: pages as Markdown, JSON as JSON.

    Args:
        url: The address, http:// or https:// only.
        method: GET (default), POST, PUT, PATCH or DELETE; all but GET ask the person first.
        auth_profile: Name of a credential the person configured; it is sent only to its
            own hosts. Authorization and Cookie headers cannot be passed directly.
        headers: Extra request headers (not Authorization, Cookie or other credentials).
        body: Request body for POST, PUT or PATCH: text as is, anything else as JSON.
        download_path: Save the response body to this path in file_cache_dir and return
            only its metadata (asks the person first).
        timeout_seconds: Seconds for the whole exchange (default 30, at most 300).
        max_bytes: Most bytes to read, counted after decompression (default 524288, at
            most 2097152).
    """
    from agent_kernel.guards.web.client import Request, fetch

    timeout = _timeout(timeout_seconds)
    limit = max_bytes or (LIMITS.download_max_bytes if download_path else LIMITS.max_bytes)
    ceiling = LIMITS.download_max_bytes if download_path else LIMITS.max_bytes_limit
    if limit > ceiling:
        raise ValueError(f"max_bytes must be at most {ceiling}, got {limit}")
    model_headers = check_headers(headers)
    data = encode_body(method, body, model_headers)
    call = _Call(model_headers, auth_profile)
    call.first_hop(url)
    request = Request(method, url, call.hop_headers, data, timeout=timeout, max_bytes=limit,
                      max_redirects=LIMITS.max_redirects, verify=LIMITS.verify)
    if download_path is None:
        fetched = await fetch(_guard(), request)
        return call.mask({**_read_result(fetched, limit), **_common(fetched, call)})
    with _download(ctx, download_path) as (sink, state):
        request.sink = sink
        fetched = await fetch(_guard(), request)
        root = files.store_of(ctx)
        stored = files.store_parts(ctx.workspace, download_path) if root else None
        shown = (files_store.shown_of(stored) if stored is not None else
                 files._shown(ctx.workspace, files.resolve(ctx.workspace, download_path)))
        result: dict[str, Any] = {"url": _shown_url(fetched.url), "status": fetched.status,
                                  "content_type": fetched.content_type or None}
        if fetched.truncated:
            raise ValueError(f"the response is larger than max_bytes ({limit} bytes); nothing "
                             f"was saved to {shown}")
        if not 200 <= fetched.status < 300:
            result["note"] = f"not saved: the server answered {fetched.status} {fetched.reason}"
        else:
            state["done"] = True
            result.update(path=shown, bytes=fetched.size)
            if root is not None and stored is not None:  # the record says where, as the card
                result["stored_at"] = root.url(stored)
    return call.mask({**result, **_common(fetched, call)})


class HttpResult(TypedDict, total=False):
    """What ``http_request`` returns: ``{ok, status, headers, body}``, or ``{ok: false,
    error}`` when no answer came."""

    ok: bool
    status: int
    headers: dict[str, str]
    body: str
    truncated: bool
    note: str
    error: str


async def http_request(
    url: Annotated[str, Field(min_length=1, max_length=8192)],
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: Any = None,
    timeoutMs: Annotated[float, Field(gt=0)] = 30000,  # noqa: N803 - spec 004's name
) -> HttpResult:
    """Make an HTTPS request; returns {ok, status, headers, body}, or {ok: false, error}.

    Args:
        url: The address; it must be https://.
        method: HTTP method, default GET; all but GET and HEAD ask the person first.
        headers: Request headers (not Authorization, Cookie or other credentials).
        body: Request body: text as is, anything else as JSON.
        timeoutMs: Milliseconds for the whole exchange (default 30000).
    """
    from agent_kernel.guards.web.client import FetchError, Request, fetch
    from agent_kernel.guards.web.guard import LookupFailed, NetworkRefused
    from agent_kernel.guards.web.pages import decode, kind_of

    verb = method.strip().upper()
    try:
        if verb not in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
            raise ValueError(f"method must be GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS, "
                             f"got {method[:20]!r}")
        timeout = _timeout(timeoutMs / 1000)
        model_headers = check_headers(headers)
        data = encode_body(verb, body, model_headers)
        call = _Call(model_headers, None)
        fetched = await fetch(_guard(), Request(
            verb, url, call.hop_headers, data, schemes=("https",), timeout=timeout,
            max_bytes=LIMITS.max_bytes, max_redirects=LIMITS.max_redirects, verify=LIMITS.verify))
    except (ValueError, PermissionError, FetchError, NetworkRefused, LookupFailed) as exc:
        return {"ok": False, "error": str(exc)}
    if kind_of(fetched.content_type, fetched.body) == "binary":
        text = f"[binary content: {fetched.content_type or 'unknown type'}, {fetched.size} bytes]"
    else:
        text = decode(fetched.body, fetched.charset)
    result: HttpResult = {
        "ok": 200 <= fetched.status < 300, "status": fetched.status,
        "headers": {k: v for k, v in fetched.headers.items() if k.lower() != "set-cookie"},
        "body": text}
    if fetched.truncated:
        result["truncated"] = True
        result["note"] = f"body truncated to the first {LIMITS.max_bytes} bytes"
    if not result["ok"]:
        result["error"] = f"HTTP {fetched.status} {fetched.reason}".strip()
    return result


async def web_search(
    q: Annotated[str, Field(min_length=1, max_length=500)],
    max_results: Annotated[int | None, Field(ge=1, le=20)] = None,
) -> dict[str, Any]:
    """Search the web; returns {query, results: [{title, url, snippet}]}.

    Args:
        q: The search words.
        max_results: Most results to return (default 5, at most 20).
    """
    import httpx

    from agent_kernel.guards.web import pages
    from agent_kernel.guards.web.client import Request, fetch

    wanted = max_results or LIMITS.search_max_results
    backend = LIMITS.search_backend
    base = LIMITS.search_url or SEARCH_URLS.get(backend)
    if not base:
        raise ValueError(f"web_search backend {backend!r} needs LIMITS.search_url (the address "
                         "of the instance)")
    headers = {"Accept": "text/html" if backend == "duckduckgo" else "application/json"}
    params: dict[str, str | int] = {"q": q}
    if backend == "searxng":
        base = base.rstrip("/") + "/search"
        params["format"] = "json"
    elif backend == "brave":
        key = os.environ.get(LIMITS.search_api_key_env)
        if not key:
            raise PermissionError(f"web_search with Brave needs an API key in the environment "
                                  f"variable {LIMITS.search_api_key_env}")
        headers["X-Subscription-Token"] = key
        params["count"] = wanted
    first = httpx.URL(base, params=params)

    def hop_headers(hop: httpx.URL) -> dict[str, str]:  # the API key stays with its host
        same = hop.host == first.host and hop.scheme == first.scheme
        return headers if same else {"Accept": headers["Accept"]}

    fetched = await fetch(_guard(), Request("GET", str(first), hop_headers,
                                            timeout=LIMITS.timeout, max_bytes=2 * 1024 * 1024,
                                            verify=LIMITS.verify))
    if not 200 <= fetched.status < 300:
        raise RuntimeError(f"the search service answered {fetched.status} {fetched.reason}")
    text = pages.decode(fetched.body, fetched.charset)
    if backend == "duckduckgo":
        results = pages.parse_duckduckgo(text, wanted)
        if not results and pages.duckduckgo_blocked(text):
            raise RuntimeError("the search service asked for a robot check; try again later or "
                               "configure another backend (LIMITS.search_backend)")
    else:
        ok, data = pages.parse_json(text)
        if not ok:
            raise RuntimeError("the search service did not answer with JSON")
        results = (pages.parse_searxng if backend == "searxng" else pages.parse_brave)(
            data, wanted)
    return {"query": q, "results": results}


def _needs_approval(arguments: dict[str, Any]) -> bool:
    method = str(arguments.get("method") or "GET").strip().upper()
    return method not in LIMITS.approval_free_methods or bool(arguments.get("download_path"))


def _download_precheck(values: dict[str, object],
                       ctx: ToolContext) -> dict[str, object] | None:
    """With ``files/`` on an object store, a download's card says where the file will be
    (``where``, as write_file's), and a ``download_path`` no approval could allow (a URL, a
    protected name, a key the store cannot take) is refused before anyone is asked."""
    path = values.get("download_path")
    try:
        root = files.store_of(ctx) if path else None
        if root is None:
            return None
        parts = files.store_parts(ctx.workspace, str(path))
        if parts is None:
            raise PermissionError(f"download_path {path!r} must name a file in "
                                  f"file_cache_dir ({files.CACHE_DIR}/)")
        return {"where": files.store_where(root, parts)}
    except (ValueError, PermissionError, files_store.Refused) as exc:
        raise ToolError(f"{exc}. Nothing was downloaded.",
                        summary=f"Refused without asking you: {exc}.",
                        guidance=files.PATH_GUIDANCE) from None


TOOLS = [
    # Each enforces its own deadline (timeout_seconds, timeoutMs); the loop's must not cut it.
    Tool(url_fetch, source="builtin", side_effects=_needs_approval,
         precheck=_download_precheck, timeout=LIMITS.max_timeout + 10.0),
    Tool(web_search, source="builtin", side_effects=False, timeout=LIMITS.max_timeout + 10.0),
    Tool(http_request, source="builtin", side_effects=_needs_approval,
         timeout=LIMITS.max_timeout + 10.0, failure=ok_false),  # 004: {ok: false, error}
]
