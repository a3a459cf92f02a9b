"""The Telegram Bot API over HTTPS: ``sendMessage`` (with inline keyboards),
``getUpdates`` (long polling), ``answerCallbackQuery`` and ``editMessageText``.

Every call goes through the network guard's client (:mod:`agent_kernel.guards.web.client`)
with exactly one hole: the configured API host. The bot token is part of the URL, so it is
registered with redaction the moment it is read (:class:`~agent_kernel.guards.web.auth.AuthProfile`)
and every error is redacted before anyone sees it. Text goes out as plain text (no
``parse_mode``): nothing the model writes is read as markup.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from agent_kernel.channels.config import (
    CONFIG,
    ChannelConfig,
    ChannelError,
    TelegramConfig,
    endpoint,
)
from agent_kernel.core.redaction import redact_text

if TYPE_CHECKING:
    from agent_kernel.guards.web.guard import Guard

Payload = dict[str, object]
"""A Bot API request or update: JSON whose keys the API decides."""

MAX_TEXT = 4096
"""The Bot API's limit on one message's text."""


def clip(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` cut to ``limit`` characters, saying so."""
    return text if len(text) <= limit else text[:limit - 20] + "\n… (cut)"


class TelegramBot:
    """One bot, talking to the configured person's chat."""

    def __init__(self, config: TelegramConfig | None = None,
                 channels: ChannelConfig | None = None) -> None:
        channels = channels or CONFIG
        found = config or channels.telegram
        if found is None:
            raise ChannelError("Telegram is not configured: set "
                               "agent_kernel.channels.CONFIG.telegram")
        self.config = found
        self.scheme, self.host, self.port = endpoint(found.base_url)
        self.profile = channels.profile(found.auth_profile, self.host)
        self._guard: Guard | None = None

    def guard(self) -> Guard:
        """The network guard for this bot: the API host is its one explicit allow."""
        if self._guard is None:
            from agent_kernel.guards.web.guard import Guard

            self._guard = Guard([f"{self.host}:{self.port}" if ":" not in self.host
                                 else f"[{self.host}]:{self.port}"])
        return self._guard

    async def call(self, method: str, payload: Payload, timeout: float = 30.0) -> object:
        """Call ``method`` with ``payload``; the API's ``result``, or ChannelError in words."""
        from agent_kernel.guards.web.client import FetchError, Request, fetch
        from agent_kernel.guards.web.guard import LookupFailed, NetworkRefused

        token = self.profile.secret(self.config.auth_profile)
        url = f"{self.config.base_url.rstrip('/')}/bot{token}/{method}"
        request = Request("POST", url, lambda _url: {"Content-Type": "application/json"},
                          body=json.dumps(payload, ensure_ascii=False).encode("utf-8"),
                          schemes=(self.scheme,), timeout=timeout, max_redirects=0,
                          max_bytes=1024 * 1024, verify=self.config.verify)
        try:
            fetched = await fetch(self.guard(), request)
        except (FetchError, NetworkRefused, LookupFailed, OSError) as exc:
            raise ChannelError(redact_text(f"Telegram {method} failed: {exc}")) from None
        try:
            body = json.loads(fetched.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise ChannelError(f"Telegram {method} answered HTTP {fetched.status} with "
                               "something that is not JSON") from None
        if not isinstance(body, dict) or body.get("ok") is not True:
            why = body.get("description") if isinstance(body, dict) else None
            raise ChannelError(redact_text(f"Telegram {method} was refused (HTTP "
                                           f"{fetched.status}): {why or 'no reason given'}"))
        return body.get("result")

    async def send(self, text: str, buttons: list[tuple[str, str]] | None = None,
                   chat_id: int | str | None = None) -> int:
        """Send ``text`` (with one button per ``(label, data)`` row); the message id."""
        payload: Payload = {"chat_id": self.config.chat_id if chat_id is None else chat_id,
                               "text": clip(text)}
        if buttons:
            payload["reply_markup"] = {"inline_keyboard": [
                [{"text": label[:64], "callback_data": data}] for label, data in buttons]}
        result = await self.call("sendMessage", payload)
        message_id = result.get("message_id") if isinstance(result, dict) else None
        if not isinstance(message_id, int):
            raise ChannelError("Telegram sendMessage answered without a message id")
        return message_id

    async def updates(self, offset: int | None, wait: int | None = None) -> list[Payload]:
        """The updates after ``offset`` (long polling: waits up to ``wait`` seconds)."""
        wait = self.config.poll_seconds if wait is None else wait
        payload: Payload = {"timeout": wait,
                               "allowed_updates": ["message", "callback_query"]}
        if offset is not None:
            payload["offset"] = offset
        result = await self.call("getUpdates", payload, timeout=wait + 15.0)
        return [u for u in result if isinstance(u, dict)] if isinstance(result, list) else []

    async def answer_callback(self, callback_id: str, text: str) -> None:
        """Stop the button's spinner on the phone, with a short note."""
        await self.call("answerCallbackQuery", {"callback_query_id": callback_id,
                                                "text": text[:200]})

    async def edit(self, message_id: int, text: str) -> None:
        """Replace a sent message's text, and take its buttons away."""
        await self.call("editMessageText", {"chat_id": self.config.chat_id,
                                            "message_id": message_id, "text": clip(text)})
