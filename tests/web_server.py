"""A local web site on 127.0.0.1 for the web tool tests: pages, JSON, redirects, hostile answers.

Plain HTTP and, with a trustme certificate, HTTPS, served by stdlib ``http.server``
in a daemon thread. Every request is kept in ``requests`` (method, path, headers,
body) so tests can assert what actually reached the server.
"""

from __future__ import annotations

import functools
import gzip
import json
import ssl
import struct
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

FIXTURES = Path(__file__).parent / "fixtures"
PAGE = b"""<!doctype html><html><head><title>Tide tables  of Brest</title>
<style>body { color: red }</style><script>var secretScript = 1;</script></head>
<body><nav><a href="/">Home</a> | <a href="/about">About us</a></nav>
<main><h1>High water</h1><p>The <b>next</b> high water is at <a href="/times">14:02</a>.</p>
<ul><li>Monday: 6.1 m</li><li>Tuesday: 5.8 m</li></ul>
<form><input name="q"><button>Go</button></form></main></body></html>"""
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
BOMB = gzip.compress(b"\0" * 50_000_000, compresslevel=9)


@functools.cache
def gigabyte_bomb() -> bytes:
    """1 GiB of zeros as one valid gzip stream of about 1 MB, made in a second: after a full
    flush the compressor starts afresh, so each further MiB of zeros is the same block."""
    mib = b"\0" * (1 << 20)
    engine = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    block = engine.compress(mib) + engine.flush(zlib.Z_FULL_FLUSH)
    assert engine.compress(mib) + engine.flush(zlib.Z_FULL_FLUSH) == block
    crc = 0
    for _ in range(1024):
        crc = zlib.crc32(mib, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    last = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS).flush()  # an empty final block
    return header + block * 1024 + last + struct.pack("<II", crc, (1 << 30) & 0xFFFFFFFF)


@functools.cache
def json_bomb(n: int) -> bytes:
    """A JSON list of ``n`` zeros, gzip-compressed: a small body that parses into a big value."""
    return gzip.compress(b"[" + b"0," * (n - 1) + b"0]", compresslevel=6)


class Handler(BaseHTTPRequestHandler):
    server: LocalSite.Server

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, content_type: str | None = "text/plain",
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        url = urlparse(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        self.server.site.requests.append({"method": self.command, "path": self.path,
                                          "headers": dict(self.headers.items()), "body": body})
        route = url.path
        if route == "/page":
            self._send(200, PAGE, "text/html; charset=utf-8")
        elif route == "/json":
            self._send(200, json.dumps({"tide": [6.1, 5.8], "port": "Brest"}).encode(),
                       "application/json")
        elif route == "/text":
            self._send(200, "Grüße from the text route".encode(), "text/plain; charset=utf-8")
        elif route == "/png":
            self._send(200, PNG, "image/png")
        elif route == "/big":
            self._send(200, b"x" * 300_000, "text/plain")
        elif route == "/bomb":
            self._send(200, BOMB, "text/plain", {"Content-Encoding": "gzip"})
        elif route == "/json-bomb":  # [0,0,...,0] with n zeros, gzip-compressed
            self._send(200, json_bomb(int(query.get("n", "1000"))), "application/json",
                       {"Content-Encoding": "gzip"})
        elif route == "/gigabyte-bomb":
            self._send(200, gigabyte_bomb(), query.get("type", "text/plain"),
                       {"Content-Encoding": "gzip"})
        elif route == "/deflate":
            self._send(200, zlib.compress(b"deflated words " * 100), "text/plain",
                       {"Content-Encoding": "deflate"})
        elif route == "/stacked":
            self._send(200, gzip.compress(gzip.compress(b"hi")), "text/plain",
                       {"Content-Encoding": "gzip, gzip"})
        elif route == "/echo":
            self._send(200, json.dumps({"method": self.command, "headers": dict(
                self.headers.items()), "body": body.decode("utf-8", "replace")}).encode(),
                "application/json", {"Set-Cookie": "session=abc123"})
        elif route == "/echo-keys":  # a server that echoes what it was sent as JSON keys
            sent = self.headers.get("Authorization", "").split(" ", 1)[-1]
            self._send(200, json.dumps({sent: 1, f"user:{sent}": 2, "password": 12345678,
                                        "token": ["t-one", "t-two"],
                                        "api_key": {"nested": "n-three"}}).encode(),
                       "application/json")
        elif route == "/redirect":
            self._send(int(query.get("status", "302")), b"", None, {"Location": query["to"]})
        elif route == "/loop":
            self._send(302, b"", None, {"Location": "/loop"})
        elif route == "/missing":
            self._send(404, b"no such page", "text/plain")
        elif route == "/slow":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            for _ in range(100):  # a byte every 0.1 s: no single read ever times out
                try:
                    self.wfile.write(b".")
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(0.1)
        elif route == "/ddg/":
            self._send(200, (FIXTURES / "duckduckgo_results.html").read_bytes(),
                       "text/html; charset=UTF-8")
        elif route == "/searx/search":
            self._send(200, json.dumps({"query": query.get("q"), "results": [
                {"title": "Tide tables", "url": "https://tides.example/brest",
                 "content": "High <span class=\"highlight\">water</span> at Brest"},
                {"title": "No URL"},
                {"title": "Harbour", "url": "https://harbour.example/", "content": "Moorings"},
            ]}).encode(), "application/json")
        elif route == "/brave":
            self._send(200, json.dumps({"web": {"results": [
                {"title": "Brave result", "url": "https://brave.example/", "description":
                 "<strong>tide</strong> times"}]}}).encode(), "application/json")
        else:
            self._send(404, b"unknown route", "text/plain")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle


class LocalSite:
    """``with LocalSite() as site:`` serves on 127.0.0.1; ``tls=`` a trustme CA for HTTPS."""

    class Server(ThreadingHTTPServer):
        site: LocalSite
        daemon_threads = True

    def __init__(self, tls: Any = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.server = self.Server(("127.0.0.1", 0), Handler)
        self.server.site = self
        self.scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            tls.issue_cert("localhost", "127.0.0.1").configure_cert(context)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            self.scheme = "https"
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        """The address of ``path`` on this site."""
        return f"{self.scheme}://{host}:{self.port}{path}"

    def __enter__(self) -> LocalSite:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
