"""A scripted Telegram Bot API on 127.0.0.1, for the channel tests (and the kernel test).

A real HTTP server in a thread (``http.server``; TLS with a ``trustme`` certificate when
asked). It answers ``/bot<TOKEN>/<method>`` for the one token it was given (any other:
401, as Telegram does), records every request, serves ``getUpdates`` from the updates a
test pushes (long polling: an empty answer after at most ``poll_cap`` seconds), and
answers ``sendMessage``, ``answerCallbackQuery`` and ``editMessageText`` as Telegram would.
``press`` plays the person tapping an inline button of a message the bot sent.

Run as a script (``python bot_api_server.py TOKEN PORTFILE``) it serves until killed and
takes updates to push as JSON lines POSTed to ``/push``: how the kernel test drives it
from outside the kernel.
"""

from __future__ import annotations

import json
import ssl
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

PERSON = 4242
"""The configured person's user id (their private chat's id too)."""


class BotApi:
    """The scripted server; ``url`` is its base URL (``http://127.0.0.1:PORT``)."""

    def __init__(self, token: str, tls: Any = None, poll_cap: float = 1.0) -> None:
        self.token = token
        self.poll_cap = poll_cap
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.paths: list[str] = []
        self.updates: list[dict[str, Any]] = []
        self.sent: list[dict[str, Any]] = []
        self.next_update = 100
        self.cond = threading.Condition()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if self.path == "/push":
                    api.push(json.loads(raw))
                    return self._json(200, {"ok": True})
                if self.path == "/state":
                    with api.cond:
                        return self._json(200, {"requests": api.requests, "sent": api.sent})
                prefix = f"/bot{api.token}/"
                api.paths.append(self.path)
                if not self.path.startswith(prefix):
                    return self._json(401, {"ok": False, "error_code": 401,
                                            "description": "Unauthorized"})
                method = self.path[len(prefix):]
                payload = json.loads(raw or b"{}")
                with api.cond:
                    api.requests.append((method, payload))
                self._json(200, {"ok": True, "result": api.answer(method, payload)})

            def _json(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        scheme = "http"
        if tls is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            tls.configure_cert(context)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> BotApi:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- the API -----------------------------------------------------------------------

    def answer(self, method: str, payload: dict[str, Any]) -> Any:
        if method == "sendMessage":
            with self.cond:
                message = {"message_id": 500 + len(self.sent), "date": int(time.time()),
                           "chat": {"id": payload["chat_id"], "type": "private"},
                           "text": payload.get("text", ""),
                           "reply_markup": payload.get("reply_markup")}
                self.sent.append(message)
                self.cond.notify_all()
            return message
        if method == "getUpdates":
            offset = payload.get("offset") or 0
            deadline = time.monotonic() + min(float(payload.get("timeout", 0)), self.poll_cap)
            with self.cond:
                while True:
                    ready = [u for u in self.updates if u["update_id"] >= offset]
                    left = deadline - time.monotonic()
                    if ready or left <= 0:
                        return ready
                    self.cond.wait(left)
        if method == "editMessageText":
            return {"message_id": payload.get("message_id"), "text": payload.get("text")}
        return True

    # --- what a test does ----------------------------------------------------------------

    def push(self, update: dict[str, Any]) -> None:
        """Queue one update (its ``update_id`` is given here)."""
        with self.cond:
            update = {"update_id": self.next_update, **update}
            self.next_update += 1
            self.updates.append(update)
            self.cond.notify_all()

    def wait_sent(self, count: int = 1, timeout: float = 20.0) -> list[dict[str, Any]]:
        """Wait until the bot has sent ``count`` messages; returns them."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while len(self.sent) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"the bot sent {len(self.sent)} messages, not {count}")
                self.cond.wait(left)
            return list(self.sent)

    def calls(self, method: str) -> list[dict[str, Any]]:
        """The payloads of every call of ``method``."""
        with self.cond:
            return [p for m, p in self.requests if m == method]

    def press(self, message: dict[str, Any], label: str, *, user: int = PERSON,
              chat: int | None = None, data: str | None = None) -> None:
        """The person taps the button ``label`` of ``message`` (or sends ``data``)."""
        self.push(press_update(message, label, user=user, chat=chat, data=data))

    def say(self, text: str, *, user: int = PERSON, chat: int | None = None) -> None:
        """The person writes ``text`` to the bot."""
        self.push({"message": {"message_id": 900 + self.next_update, "text": text,
                               "date": int(time.time()),
                               "from": {"id": user, "is_bot": False, "first_name": "Ana"},
                               "chat": {"id": user if chat is None else chat,
                                        "type": "private"}}})


def press_update(message: dict[str, Any], label: str, *, user: int = PERSON,
                 chat: int | None = None, data: str | None = None) -> dict[str, Any]:
    """The update Telegram sends when ``user`` taps the button ``label`` of ``message``."""
    if data is None:
        rows = (message.get("reply_markup") or {}).get("inline_keyboard", [])
        found = [b["callback_data"] for row in rows for b in row if b["text"] == label]
        assert found, f"no button {label!r} on the message"
        data = found[0]
    return {"callback_query": {
        "id": f"cb{time.monotonic_ns()}", "data": data,
        "from": {"id": user, "is_bot": False, "first_name": "Ana"},
        "message": {"message_id": message["message_id"],
                    "chat": {"id": message["chat"]["id"] if chat is None else chat,
                             "type": "private"}}}}


@contextmanager
def phone_bot(monkeypatch: pytest.MonkeyPatch, token: str,
              poll_seconds: int = 25) -> Iterator[BotApi]:
    """A scripted Bot API, and the channels configured to reach it as the person's phone:
    their chat, the API's URL, and ``token`` for 127.0.0.1 only (as the person sets it)."""
    from agent_kernel.channels import CONFIG, TelegramConfig
    from agent_kernel.guards.web.auth import AuthProfile

    with BotApi(token) as api:
        monkeypatch.setattr(CONFIG, "telegram", TelegramConfig(
            chat_id=PERSON, base_url=api.url, poll_seconds=poll_seconds))
        monkeypatch.setattr(CONFIG, "profiles", {"telegram": AuthProfile(
            hosts=["127.0.0.1"], token=token)})
        yield api


if __name__ == "__main__":
    with BotApi(sys.argv[1]) as served:
        with open(sys.argv[2], "w", encoding="utf-8") as handle:
            handle.write(served.url)
        while True:
            time.sleep(3600)
