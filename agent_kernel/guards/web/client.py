"""A guarded HTTP client: every connection goes to an address the guard just approved.

httpx makes the requests; its connection pool gets a network backend of ours
whose ``connect_tcp`` resolves the host through :class:`~.guard.Guard` and
connects to a vetted IP literal (TLS still checks the certificate against the
host name), so a DNS answer that changes between a check and the connection
cannot land anywhere else. Redirects are followed here, one hop at a time,
each a new connection through the same backend, each hop's scheme checked.

Bodies are read raw and decoded here with a bound: ``max_bytes`` counts
decoded bytes and decompression never produces more than that, so a gzip bomb
costs one small buffer. Only gzip and deflate are asked for; a stacked or
unknown ``Content-Encoding`` is refused. The whole exchange has one deadline,
so a server that drips a byte a second still ends on time.
"""

from __future__ import annotations

import asyncio
import ssl
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import httpcore
import httpx

from agent_kernel.guards.web.guard import Guard, NetworkRefused, refusal_text

REDIRECTS = {301, 302, 303, 307, 308}
ACCEPT_ENCODING = "gzip, deflate"
USER_AGENT = "Mozilla/5.0 (compatible; agent-kernel)"


class FetchError(RuntimeError):
    """The exchange failed in a way the model can read (timeout, refused, too many hops)."""


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, connecting only to addresses the guard approves."""

    def __init__(self, guard: Guard, inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self.guard = guard
        self.inner = inner or httpcore.AnyIOBackend()
        self.connected: list[str] = []
        """Every address connected to, in order (what the ledger and tests can check)."""

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None
                          ) -> httpcore.AsyncNetworkStream:
        """Resolve through the guard, then connect to the first vetted address that answers."""
        last: Exception | None = None
        for address in await self.guard.addresses(host, port):
            try:
                stream = await self.inner.connect_tcp(address, port, timeout, local_address,
                                                      socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
                continue
            peer = _peer(stream)
            why = self.guard.verdict(host, peer, port) if peer else None
            if why is not None:  # the socket reached somewhere else: never send to it
                await stream.aclose()
                raise NetworkRefused(refusal_text(host, peer or address, port, why))
            self.connected.append(peer or address)
            return stream
        raise last or httpcore.ConnectError(f"cannot connect to {host}")

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None
                                  ) -> httpcore.AsyncNetworkStream:
        """Never: a Unix socket is a local service."""
        raise NetworkRefused("network guard refused a Unix socket connection")

    async def sleep(self, seconds: float) -> None:
        """Delegate to the wrapped backend."""
        await self.inner.sleep(seconds)


def _peer(stream: httpcore.AsyncNetworkStream) -> str | None:
    sock = stream.get_extra_info("socket")
    if sock is None:
        return None
    try:
        return str(sock.getpeername()[0])
    except OSError:
        return None


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport with its connection pool built on :class:`GuardedBackend`."""

    def __init__(self, backend: GuardedBackend, ssl_context: ssl.SSLContext) -> None:
        super().__init__(verify=ssl_context, trust_env=False)
        # httpx has no public knob for the network backend; httpcore's pool has one.
        # The guard tests fail loudly if this stops taking effect.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context, network_backend=backend, http1=True, http2=False,
            max_connections=4, keepalive_expiry=5.0)


def ssl_context(verify: bool | str) -> ssl.SSLContext:
    """``True``: httpx's roots (certifi); a path: that CA bundle; ``False``: no checks."""
    if isinstance(verify, str):
        return ssl.create_default_context(cafile=verify)
    return httpx.create_ssl_context(verify=bool(verify))


@dataclass
class Fetched:
    """One finished exchange: the last response of the redirect chain, its body read."""

    url: str
    status: int
    reason: str
    headers: httpx.Headers
    body: bytes
    size: int
    """Decoded bytes read (at most ``max_bytes + 1``; more means truncated)."""
    truncated: bool
    redirects: list[str] = field(default_factory=list)
    addresses: list[str] = field(default_factory=list)
    elapsed_ms: int = 0

    @property
    def content_type(self) -> str:
        """The media type, lower case, without parameters."""
        return self.headers.get("content-type", "").split(";")[0].strip().lower()

    @property
    def charset(self) -> str | None:
        """The declared charset, if any."""
        for part in self.headers.get("content-type", "").split(";")[1:]:
            name, _, value = part.partition("=")
            if name.strip().lower() == "charset" and value.strip():
                return value.strip().strip('"')
        return None


@dataclass
class Request:
    """What to send: ``hop_headers(url)`` gives the headers for each hop (auth per host)."""

    method: str
    url: str
    hop_headers: Callable[[httpx.URL], dict[str, str]]
    body: bytes | None = None
    schemes: tuple[str, ...] = ("http", "https")
    timeout: float = 30.0
    max_bytes: int = 512 * 1024
    max_redirects: int = 5
    verify: bool | str = True
    sink: Callable[[bytes], None] | None = None
    """When set, body bytes go here as they arrive instead of into ``Fetched.body``."""


async def fetch(guard: Guard, request: Request) -> Fetched:
    """Send ``request`` through the guard, following redirects; FetchError on failure."""
    started = time.perf_counter()
    backend = GuardedBackend(guard)
    transport = GuardedTransport(backend, ssl_context(request.verify))
    client = httpx.AsyncClient(transport=transport, trust_env=False, follow_redirects=False,
                               timeout=httpx.Timeout(request.timeout))
    try:
        async with client:
            fetched = await asyncio.wait_for(_follow(client, request), request.timeout)
    except asyncio.TimeoutError:
        raise FetchError(f"no complete answer within {request.timeout:g} s "
                         "(timeout_seconds)") from None
    except httpx.TimeoutException:
        raise FetchError(f"timed out after {request.timeout:g} s") from None
    except NetworkRefused:
        raise
    except httpx.HTTPError as exc:
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, NetworkRefused):
            raise cause from None
        raise FetchError(f"request failed: {type(exc).__name__}: {exc}") from None
    fetched.addresses = backend.connected
    fetched.elapsed_ms = int((time.perf_counter() - started) * 1000)
    return fetched


def check_scheme(url: httpx.URL, schemes: tuple[str, ...]) -> None:
    """Refuse schemes other than ``schemes`` and credentials written into the URL."""
    if url.scheme not in schemes:
        allowed = " or ".join(f"{s}://" for s in schemes)
        raise FetchError(f"only {allowed} URLs can be fetched, got {url.scheme or 'no'}:// "
                         f"({url.copy_with(query=None, fragment=None)})")
    if url.userinfo:
        raise FetchError("a user name or password in the URL is not allowed; a person can "
                         "configure credentials as an auth_profile")
    if not url.host:
        raise FetchError("the URL has no host")


async def _follow(client: httpx.AsyncClient, request: Request) -> Fetched:
    url = httpx.URL(request.url)
    method, body = request.method, request.body
    redirects: list[str] = []
    while True:
        check_scheme(url, request.schemes)
        headers = {"User-Agent": USER_AGENT, "Accept-Encoding": ACCEPT_ENCODING,
                   **request.hop_headers(url)}
        if body is None:
            headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
        sent = client.build_request(method, url, headers=headers, content=body)
        response = await client.send(sent, stream=True)
        try:
            location = response.headers.get("location")
            if response.status_code in REDIRECTS and location:
                if len(redirects) >= request.max_redirects:
                    raise FetchError(f"too many redirects (more than {request.max_redirects}); "
                                     f"the last went to {location[:200]}")
                follow = response.next_request
                if follow is None:
                    raise FetchError(f"cannot follow the redirect to {location[:200]}")
                if follow.method != method:  # 301/302/303 turn into GET without a body
                    method, body = follow.method, None
                url = follow.url
                redirects.append(str(url))
                continue
            data, size, truncated = await read_body(response, request.max_bytes, request.sink)
            return Fetched(str(url), response.status_code, response.reason_phrase,
                           response.headers, data, size, truncated, redirects)
        finally:
            await response.aclose()


class _Inflater:
    """gzip / deflate, decompressed at most ``limit`` bytes at a time."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self.raw_deflate = False
        self.engine = zlib.decompressobj(zlib.MAX_WBITS | 16 if coding != "deflate"
                                         else zlib.MAX_WBITS)
        self.started = False

    def feed(self, data: bytes, limit: int) -> tuple[bytes, bytes]:
        """Decompress up to ``limit`` bytes of ``data``; returns (output, input left over)."""
        try:
            out = self.engine.decompress(data, limit)
        except zlib.error:
            if self.coding == "deflate" and not self.started:  # deflate sent without its header
                self.engine = zlib.decompressobj(-zlib.MAX_WBITS)
                self.started = True
                return self.feed(data, limit)
            raise FetchError(f"the {self.coding} response body is corrupt") from None
        self.started = True
        return out, self.engine.unconsumed_tail


def _decoder(headers: httpx.Headers) -> _Inflater | None:
    codings = [c.strip().lower() for c in headers.get("content-encoding", "").split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return None
    if len(codings) == 1 and codings[0] in ("gzip", "x-gzip", "deflate"):
        return _Inflater(codings[0])
    raise FetchError(f"the server sent Content-Encoding {', '.join(codings)!r}; only one of "
                     f"gzip or deflate is accepted")


async def read_body(response: httpx.Response, max_bytes: int,
                    sink: Callable[[bytes], None] | None = None) -> tuple[bytes, int, bool]:
    """Read at most ``max_bytes`` decoded bytes; returns (body, bytes read, truncated)."""
    decoder = _decoder(response.headers)
    kept: list[bytes] = []
    size = 0

    def take(chunk: bytes) -> None:
        nonlocal size
        size += len(chunk)
        room = max_bytes - (size - len(chunk))
        piece = chunk[:max(room, 0)]
        if piece:
            (sink or kept.append)(piece)

    async for raw in response.aiter_raw():
        if decoder is None:
            take(raw)
        else:
            pending = raw
            while True:
                limit = max_bytes - size + 1
                out, pending = decoder.feed(pending, limit)
                take(out)
                if size > max_bytes or (not pending and len(out) < limit):
                    break
        if size > max_bytes:
            break
    return b"".join(kept), size, size > max_bytes
