"""Spec 003's ``contacts_send``: one message to one contact, on a channel that reaches them.

The contact comes from the organiser's store (:class:`agent_kernel.organiser.contacts.
ContactStore`) and its reachable ids say where it may go: ``tg:<chat id>`` (and
``tg:@<name>``) on Telegram, ``email:<address>`` by mail (ours), tried in that order
among the channels the person configured (:data:`agent_kernel.channels.CONFIG`). Nowhere
else: ``source_chat_id`` is only a hint among the contact's own Telegram chats, so the
model cannot name a chat of its own. ``maep:<peer>`` ids are spec 003's agent-to-agent
network; here agents talk through the team's messages (``send_message``), so a
``maep:`` contact is refused with that said.

The arguments, defaults, constraints and error texts are 003's (the envelope JSON with
``message_id``, ``text``, ``sent_at`` in RFC 3339; ``content_type``
``application/json``; ``payload_base64`` base64url; ``session_id`` a UUIDv7, required for
the conversational topics). Every send asks the person first (engine/ask_policy.py): the
card names the recipient in words, the channel and the exact text. The result is 003's
``{outcome}`` with, ours, ``channel`` and ``recipient`` (the one-liner reads them); the
send is recorded (``message_sent``: channel, contact, address, message id; never a
secret). A message holding what redaction would mask (a key, a token, a password) is
refused before anyone is asked: secrets never leave for another company's server.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import secrets
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Literal, TypedDict

from agent_kernel.core.events import LedgerRecorded
from agent_kernel.core.redaction import secret_marks
from agent_kernel.engine.registry import Tool, ToolContext, ToolError
from agent_kernel.organiser.contacts import Contact, ContactError, ContactStore

Envelope = dict[str, object]
"""003's message envelope: ``message_id``, ``text``, ``sent_at``, maybe ``session_id`` and
``reply_to``, and whatever else a given ``payload_base64`` carries."""
Arguments = Mapping[str, object]
"""A call's validated arguments, as this module reads them."""

DEFAULT_TOPIC = "share.proactive.v1"
CONTENT_TYPE = "application/json"
DIALOGUE_TOPICS = frozenset({"share.proactive.v1", "dm.checkin.v1", "dm.reply.v1",
                             "chat.message"})
CHANNEL_WORDS = {"telegram": "Telegram", "email": "e-mail"}


@dataclass
class SendLimits:
    """Spec 003's ``tools.contacts_send.enabled``; change ``LIMITS``."""

    enabled: bool = True


LIMITS = SendLimits()


class Outcome(TypedDict, total=False):
    """Spec 003's ``ShareOutcome``."""

    contact_id: str
    peer_id: str
    item_id: str
    idempotency_key: str
    accepted: bool
    deduped: bool
    error: str
    sent_at: str


class SendResult(TypedDict):
    """What ``contacts_send`` returns: 003's ``outcome``, and where it went (ours)."""

    outcome: Outcome
    channel: str
    recipient: str


@dataclass
class Route:
    """Where one message goes: the channel, the address, and the text the person reads."""

    contact: Contact
    channel: Literal["telegram", "email"]
    address: str
    envelope: Envelope
    payload: str

    @property
    def text(self) -> str:
        return str(self.envelope.get("text", ""))

    def recipient(self) -> str:
        """The contact as a person reads it: the nickname, else the id."""
        return self.contact.contact_nickname.strip() or self.contact.contact_id

    def where(self) -> str:
        """``Telegram chat 4242`` / ``e-mail to ana@example.org``."""
        return (f"Telegram chat {self.address}" if self.channel == "telegram"
                else f"e-mail to {self.address}")


def _uuid7(text: str) -> bool:
    try:
        return uuid.UUID(text).version == 7
    except ValueError:
        return False


def _rfc3339(text: str) -> bool:
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    return "T" in text.upper() and parsed.tzinfo is not None


def _b64url(raw: str) -> bytes:
    """Decode base64url without padding (Go's RawURLEncoding), strictly."""
    if "=" in raw or any(c in raw for c in "+/ \n\r\t"):
        bad = next(i for i, c in enumerate(raw) if c in "=+/ \n\r\t")
        raise ValueError(f"illegal base64 data at input byte {bad}")
    try:
        return base64.b64decode(raw + "=" * (-len(raw) % 4), altchars=b"-_", validate=True)
    except binascii.Error as exc:
        raise ValueError(str(exc)) from None


def envelope_of(topic: str, content_type: str, message_text: str | None,
                payload_base64: str | None, session_id: str | None, reply_to: str | None,
                now: datetime | None = None) -> tuple[Envelope, str]:
    """The envelope and its base64url payload, checked as 003 says; ToolError in its words."""
    content_type = (content_type or "").strip() or CONTENT_TYPE
    if not content_type.lower().startswith(CONTENT_TYPE):
        raise ToolError("content_type must be application/json envelope")
    session = (session_id or "").strip()
    if session and not _uuid7(session):
        raise ToolError("session_id must be uuid_v7")
    reply = (reply_to or "").strip()
    text = (message_text or "").strip()
    if text:
        if topic in DIALOGUE_TOPICS and not session:
            raise ToolError("session_id is required for dialogue topics (must be uuid_v7)")
        moment = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
        envelope: Envelope = {"message_id": f"msg_{uuid.uuid4()}", "text": text,
                                "sent_at": moment.strftime("%Y-%m-%dT%H:%M:%SZ")}
        if session:
            envelope["session_id"] = session
        if reply:
            envelope["reply_to"] = reply
        raw = json.dumps(envelope, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        return envelope, base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
    payload = (payload_base64 or "").strip()
    if not payload:
        raise ToolError("message_text or payload_base64 is required")
    try:
        decoded = _b64url(payload)
    except ValueError as exc:
        raise ToolError(f"payload_base64 decode failed: {exc}") from None
    try:
        parsed = json.loads(decoded)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise ToolError("payload_base64 must be envelope json")
    envelope = parsed
    for key in ("message_id", "text"):
        if not isinstance(envelope.get(key), str):
            raise ToolError(f"payload envelope missing {key}")
    sent_at = envelope.get("sent_at")
    if not isinstance(sent_at, str) or not sent_at.strip():
        raise ToolError("payload envelope missing sent_at")
    if not _rfc3339(sent_at.strip()):
        raise ToolError("payload envelope sent_at must be RFC3339")
    if topic in DIALOGUE_TOPICS:
        inner = envelope.get("session_id")
        inner = inner.strip() if isinstance(inner, str) else ""
        if not inner:
            raise ToolError("payload envelope missing session_id for dialogue topic")
        if not _uuid7(inner):
            raise ToolError("payload envelope session_id must be uuid_v7")
    return envelope, payload


def route(ctx: ToolContext, arguments: Arguments) -> Route:
    """Check a call and find where it goes (before anyone is asked); ToolError in 003's words."""
    from agent_kernel.channels.config import CONFIG

    if not LIMITS.enabled:
        raise ToolError("contacts_send tool is disabled",
                        guidance="The person turned contacts_send off "
                                 "(agent_kernel.tools.messaging.LIMITS).")
    contact_id = str(arguments.get("contact_id") or "").strip()
    if not contact_id:
        raise ToolError("missing required param: contact_id")
    topic = str(arguments.get("topic") or "").strip() or DEFAULT_TOPIC
    envelope, payload = envelope_of(
        topic, str(arguments.get("content_type") or ""), _opt(arguments, "message_text"),
        _opt(arguments, "payload_base64"), _opt(arguments, "session_id"),
        _opt(arguments, "reply_to"))
    if secret_marks(json.dumps(envelope, ensure_ascii=False)):
        raise ToolError("the message holds something that looks like a secret (a key, a "
                        "token or a password); it is not sent",
                        guidance="Secrets never leave for another server; write the "
                                 "message without it.")
    try:
        contact = ContactStore(ctx.workspace).get(contact_id)
    except ContactError as exc:
        raise ToolError(str(exc)) from None
    if contact is None:
        raise ToolError(f"contact not found: {contact_id}")
    if contact.status != "active":
        raise ToolError(f"contact {contact_id} is inactive: nothing is sent to an inactive "
                        "contact")
    reachable = ContactStore.reachable_ids(contact)
    chats = [i[3:] for i in reachable if i.startswith("tg:")]
    hint = arguments.get("source_chat_id")
    if isinstance(hint, int) and hint and str(hint) in chats:
        chats.remove(str(hint))
        chats.insert(0, str(hint))  # the chat the conversation came from, when it is theirs
    mails = [i[len("email:"):] for i in reachable if i.startswith("email:")]
    if CONFIG.telegram is not None and chats:
        return Route(contact, "telegram", chats[0], envelope, payload)
    if CONFIG.email is not None and mails:
        return Route(contact, "email", mails[0], envelope, payload)
    if any(i.startswith("maep:") for i in reachable) and not chats and not mails:
        raise ToolError(f"contact {contact_id} is an agent peer (maep): agents here talk "
                        "through the team's messages (send_message), not contacts_send")
    have = ", ".join(reachable) or "no addresses"
    configured = ", ".join(n for n in ("telegram", "email") if getattr(CONFIG, n) is not None)
    raise ToolError(f"no configured channel reaches contact {contact_id} ({have}); "
                    f"configured channels: {configured or 'none'}")


def _opt(arguments: Arguments, key: str) -> str | None:
    value = arguments.get(key)
    return value if isinstance(value, str) else None


def _precheck(arguments: Arguments, ctx: ToolContext) -> dict[str, object]:
    """Refuse what can be refused before asking; tell the card who, where and what."""
    found = route(ctx, arguments)
    return {"recipient": found.recipient(), "channel": CHANNEL_WORDS[found.channel],
            "address": found.where(), "text": found.text}


async def contacts_send(
    ctx: ToolContext,
    contact_id: str,
    topic: str = DEFAULT_TOPIC,
    content_type: str = CONTENT_TYPE,
    message_text: str | None = None,
    payload_base64: str | None = None,
    session_id: str | None = None,
    reply_to: str | None = None,
    source_chat_id: int = 0,
    source_chat_type: str | None = None,
) -> SendResult:
    """Send one message to a contact, on the channel that reaches them (Telegram or e-mail).

    Args:
        contact_id: The contact to send to.
        topic: Message topic (default share.proactive.v1).
        content_type: Must be application/json (the envelope).
        message_text: Plain text; wrapped into the envelope for you. Give this or
            payload_base64.
        payload_base64: base64url envelope JSON with message_id, text and sent_at (RFC 3339).
        session_id: UUIDv7 session id; required for share.proactive.v1, dm.checkin.v1,
            dm.reply.v1 and chat.message.
        reply_to: The message_id this replies to.
        source_chat_id: Telegram routing hint: one of the contact's own chats.
        source_chat_type: Telegram routing hint: private, group or supergroup.
    """
    arguments: Arguments = {"contact_id": contact_id, "topic": topic,
                             "content_type": content_type, "message_text": message_text,
                             "payload_base64": payload_base64, "session_id": session_id,
                             "reply_to": reply_to, "source_chat_id": source_chat_id,
                             "source_chat_type": source_chat_type}
    found = route(ctx, arguments)
    from agent_kernel.channels.config import ChannelError

    item_id = f"manual_{uuid.uuid4()}"
    outcome: Outcome = {"contact_id": found.contact.contact_id, "item_id": item_id,
                        "idempotency_key": f"manual:{secrets.token_hex(16)}",
                        "accepted": False, "deduped": False}
    if found.contact.peer_id:
        outcome["peer_id"] = found.contact.peer_id
    sent_id: str | None = None
    try:
        if found.channel == "telegram":
            from agent_kernel.channels.telegram import TelegramBot

            chat: int | str = int(found.address) if found.address.lstrip("-").isdigit() \
                else found.address
            sent_id = str(await TelegramBot().send(found.text, chat_id=chat))
        else:
            from agent_kernel.channels.mail import Mailer

            sent_id = await Mailer().send("A message from your agent", found.text,
                                          to=found.address)
        outcome["accepted"] = True
    except ChannelError as exc:
        outcome["error"] = str(exc)
    outcome["sent_at"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    record = await asyncio.to_thread(
        ctx.agent.ledger.record_event, "message_sent" if outcome["accepted"] else
        "message_not_sent", agent_id=ctx.agent_id, run_id=ctx.run_id,
        channel=found.channel, contact_id=found.contact.contact_id, to=found.address,
        message_id=str(found.envelope.get("message_id")), channel_message_id=sent_id,
        topic=topic, error=outcome.get("error"))
    ctx.agent.bus.emit(LedgerRecorded(ctx.run_id, record))
    if outcome["accepted"]:
        with contextlib.suppress(ContactError):  # the message went; the note is a nicety
            await asyncio.to_thread(ContactStore(ctx.workspace).record_share,
                                    found.contact.contact_id, item_id)
    return {"outcome": outcome, "channel": found.channel, "recipient": found.recipient()}


TOOLS = [Tool(contacts_send, source="builtin", side_effects=True, precheck=_precheck)]
