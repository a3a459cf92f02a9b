"""A scripted OpenAI-compatible HTTP server on 127.0.0.1 for testing the loop end to end.

Tests reach it through litellm's real HTTP path (``api_base``), so what is
checked is what a real provider would see and send. Each test gives the server
a *script*: one entry per successive ``POST /v1/chat/completions`` request.
An entry is a :class:`Message` (rendered as SSE when the request asks for a
stream, as one JSON body otherwise), an :class:`HttpError` (429, 500, ...,
optionally repeated forever) or a :class:`CutStream` (a stream that breaks
off mid-answer). Every request body is kept in :attr:`ScriptedServer.requests`
so tests can assert what litellm sent (tool results, messages, tools).

The server runs in a daemon thread with stdlib ``http.server``, so it serves
both async tests and sync code (``Agent.run`` in a script) alike.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "test-model"


@dataclass
class Call:
    """One tool call the scripted model makes (``arguments`` is raw JSON text)."""

    name: str
    arguments: str
    id: str | None = None


@dataclass
class Message:
    """An assistant response: text and/or tool calls, with usage.

    Streamed, text is sent in ``pieces`` chunks; each tool call's name comes in
    its first chunk (with its id, the only chunk that carries it) and its
    arguments are spread over ``pieces`` more chunks; with ``interleave`` the
    chunks of several calls alternate by index.
    """

    text: str | None = None
    calls: list[Call] = field(default_factory=list)
    usage: dict[str, int] | None = None
    pieces: int = 3
    interleave: bool = True
    delay: float = 0.0


@dataclass
class HttpError:
    """An HTTP error response; ``forever`` keeps answering it for every later request."""

    status: int
    message: str = "scripted failure"
    retry_after: float | None = None
    forever: bool = False


@dataclass
class CutStream:
    """A stream that sends some text and stops, with no ``finish_reason`` and no ``[DONE]``.

    ``abrupt`` drops the connection mid-body (the chunked body never ends);
    otherwise the body ends properly, just too soon.
    """

    text: str = "partial answer that never"
    forever: bool = False
    abrupt: bool = True


@dataclass
class Hangup:
    """The server reads the request and closes the connection without a word of answer."""

    forever: bool = False


Entry = Message | HttpError | CutStream | Hangup


def usage(prompt: int, completion: int) -> dict[str, int]:
    """An OpenAI usage object."""
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


def _split(text: str, pieces: int) -> list[str]:
    if not text:
        return [""]
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i:i + size] for i in range(0, len(text), size)]


def _call_ids(message: Message, request_no: int) -> list[str]:
    return [c.id or f"call_{request_no}_{i}" for i, c in enumerate(message.calls)]


def stream_chunks(message: Message, request_no: int) -> list[dict[str, Any]]:
    """The SSE ``chat.completion.chunk`` payloads for ``message`` (without usage)."""
    base = {"id": f"chatcmpl-{request_no}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": MODEL}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""})]
    for piece in _split(message.text or "", message.pieces) if message.text else []:
        out.append(chunk({"content": piece}))
    ids = _call_ids(message, request_no)
    per_call: list[list[dict[str, Any]]] = []
    for index, (call, call_id) in enumerate(zip(message.calls, ids, strict=True)):
        first = {"index": index, "id": call_id, "type": "function",
                 "function": {"name": call.name, "arguments": ""}}
        rest = [{"index": index, "function": {"arguments": part}}
                for part in _split(call.arguments, message.pieces)]
        per_call.append([first, *rest])
    if message.interleave:
        longest = max((len(c) for c in per_call), default=0)
        order = [c[i] for i in range(longest) for c in per_call if i < len(c)]
    else:
        order = [d for c in per_call for d in c]
    for delta in order:
        out.append(chunk({"tool_calls": [delta]}))
    out.append(chunk({}, "tool_calls" if message.calls else "stop"))
    return out


def json_body(message: Message, request_no: int) -> dict[str, Any]:
    """The non-streaming ``chat.completion`` body for ``message``."""
    ids = _call_ids(message, request_no)
    msg: dict[str, Any] = {"role": "assistant", "content": message.text}
    if message.calls:
        msg["tool_calls"] = [
            {"id": call_id, "type": "function",
             "function": {"name": c.name, "arguments": c.arguments}}
            for c, call_id in zip(message.calls, ids, strict=True)
        ]
    return {"id": f"chatcmpl-{request_no}", "object": "chat.completion",
            "created": int(time.time()), "model": MODEL,
            "choices": [{"index": 0, "message": msg,
                         "finish_reason": "tool_calls" if message.calls else "stop"}],
            "usage": message.usage or usage(10, 5)}


class ScriptedServer:
    """An OpenAI-compatible server answering from a script; use as a context manager."""

    def __init__(self, script: list[Entry] | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.on_request: Callable[[int, dict[str, Any]], None] | None = None
        self.hook_errors: list[BaseException] = []
        self._script: list[Entry] = list(script or [])
        self._sticky: Entry | None = None
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._httpd.handle_error = _quiet_error  # type: ignore[method-assign]
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,),
                                        daemon=True, name="scripted-openai-server")

    @property
    def port(self) -> int:
        """The port the server listens on."""
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The ``api_base`` to give litellm."""
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *entries: Entry) -> ScriptedServer:
        """Replace the script with ``entries`` (and forget any ``forever`` entry)."""
        with self._lock:
            self._script = list(entries)
            self._sticky = None
        return self

    def tool_messages(self, request_index: int) -> list[dict[str, Any]]:
        """The ``role: tool`` messages of one received request."""
        return [m for m in self.requests[request_index]["messages"] if m.get("role") == "tool"]

    def _next(self) -> tuple[int, Entry | None]:
        with self._lock:
            number = len(self.requests)
            if self._sticky is not None:
                return number, self._sticky
            if not self._script:
                return number, None
            entry = self._script.pop(0)
            if getattr(entry, "forever", False):
                self._sticky = entry
            return number, entry

    def start(self) -> ScriptedServer:
        """Start serving in a daemon thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _quiet_error(request: Any, client_address: Any) -> None:
    """Clients dropping connections (retries, cut streams) are expected here."""
    import sys

    exc = sys.exc_info()[1]
    if not isinstance(exc, (ConnectionError, BrokenPipeError)):
        import traceback

        traceback.print_exc()


def _handler(server: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # small SSE writes must not wait for delayed ACKs (Nagle): send at once
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return

        def _send_json(self, status: int, body: dict[str, Any],
                       headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def _chunk(self, payload: str) -> None:
            data = payload.encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _start_stream(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                self._send_json(400, {"error": {"message": "body is not JSON"}})
                return
            number, entry = server._next()
            with server._lock:
                server.requests.append(body)
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
            if server.on_request is not None:
                try:
                    server.on_request(number, body)
                except BaseException as exc:  # kept for the test to re-raise
                    server.hook_errors.append(exc)
            if entry is None:
                self._send_json(500, {"error": {"message": "the test script is exhausted",
                                                "type": "script_exhausted"}})
                return
            if isinstance(entry, HttpError):
                headers = {}
                if entry.retry_after is not None:
                    headers["Retry-After"] = f"{entry.retry_after:g}"
                self._send_json(entry.status, {"error": {"message": entry.message,
                                                         "type": "scripted_error",
                                                         "code": entry.status}}, headers)
                return
            streaming = bool(body.get("stream"))
            if isinstance(entry, Hangup):
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if isinstance(entry, CutStream):
                if not streaming:
                    self._send_json(500, {"error": {"message": "CutStream needs stream=True"}})
                    return
                self._start_stream()
                for part in _split(entry.text, 3):
                    chunk = stream_chunks(Message(text=part, pieces=1), number)[1]
                    self._chunk(f"data: {json.dumps(chunk)}\n\n")
                self.close_connection = True
                if not entry.abrupt:
                    self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if entry.delay:
                time.sleep(entry.delay)
            if not streaming:
                self._send_json(200, json_body(entry, number))
                return
            self._start_stream()
            for chunk in stream_chunks(entry, number):
                self._chunk(f"data: {json.dumps(chunk)}\n\n")
            if (body.get("stream_options") or {}).get("include_usage"):
                final = {"id": f"chatcmpl-{number}", "object": "chat.completion.chunk",
                         "created": int(time.time()), "model": MODEL, "choices": [],
                         "usage": entry.usage or usage(10, 5)}
                self._chunk(f"data: {json.dumps(final)}\n\n")
            self._chunk("data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler
