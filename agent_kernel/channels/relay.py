"""Questions and approvals that reach the person's phone: the engine's
:class:`~agent_kernel.engine.questions.RemoteAsker`, on Telegram or by mail.

``app.py`` gives every agent's question channel a :class:`PhoneRelay`; it stays inert
until :data:`~agent_kernel.channels.config.CONFIG` names a channel. Then a question nobody
can click goes out at once and one the notebook leaves unanswered goes out after
``CONFIG.ask_after`` seconds (:mod:`agent_kernel.engine.questions` decides when).

On Telegram the question is a message with one inline button per option (an approval:
Approve and Deny only; "Always allow" is never granted from a phone). A button press is
taken only from the configured person in the configured chat, only for a question still
open, and only for one of its options; anything else is ignored and recorded in the ledger
(``channel_answer_ignored``), and a press on a question already answered only stops the
button's spinner. By mail the question carries its options and a one-time answer code;
with the agent's mailbox configured (IMAP) a reply counts only from the person's address,
carrying the code of a question still open, and naming one of its options
(:class:`MailInbox`); without it the mail says to answer in the notebook.
Every message sent is recorded (``channel_sent``: which channel, what, to whom; never a
secret).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import secrets
import weakref
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from agent_kernel.channels.config import CONFIG, ChannelConfig, ChannelError, ChannelName
from agent_kernel.core.events import LedgerRecorded, Notice, Question
from agent_kernel.core.redaction import redact_text, secret_marks
from agent_kernel.core.statuses import AnswerSource
from agent_kernel.core.unseen import mixed_words, with_tokens

if TYPE_CHECKING:
    from email.message import EmailMessage

    from agent_kernel.channels.mail import Mailbox
    from agent_kernel.channels.telegram import Payload, TelegramBot
    from agent_kernel.core.events import EventBus
    from agent_kernel.core.ledger import Ledger
    from agent_kernel.engine.questions import Answerer

APPROVE, DENY, ALWAYS = "Approve", "Deny", "Always allow this tool"
MAX_ARGUMENTS = 2500
WHERE = {"user": "in the notebook", "telegram": "on Telegram", "email": "by e-mail"}
CODE_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O or 1/I to misread
CODE_LENGTH = 12
CODE_PATTERN = re.compile(r"answer code ([A-Za-z0-9]{10,})", re.IGNORECASE)
END_OF_REPLY = re.compile(r"^(-{2,}\s*original message|on .+ wrote:$|--$)", re.IGNORECASE)


@dataclass
class OpenQuestion:
    """A question out on a channel, waiting."""

    question: Question
    options: list[str]
    answer: Answerer
    channel: ChannelName
    message_id: int | None = None
    code: str | None = None
    """The one-time answer code a mail reply must carry."""


@dataclass(frozen=True)
class PhoneArguments:
    """An approval's arguments as a phone may show them, or why it may not approve them."""

    text: str
    refused: str | None = None
    """Why the phone offers only Deny: the person approves only what they see whole."""


def phone_arguments(question: Question) -> PhoneArguments:
    """The approval's exact arguments for a phone, with what draws nothing written as
    ``<U+202E>``; refused when they hold what looks like a secret (a phone is another
    company's server: nothing redaction would mask is sent there, and a masked argument
    is one the person cannot see) or are too long to show whole."""
    arguments = (question.details or {}).get("arguments", {})
    text = json.dumps(arguments, ensure_ascii=False, indent=2)
    if secret_marks(text) or "[REDACTED]" in text:
        return PhoneArguments("", "they hold something that looks like a secret, which is "
                                  "never sent to a phone")
    if len(text) > MAX_ARGUMENTS:
        return PhoneArguments("", f"they are {len(text):,} characters long, too long to "
                                  "show whole on a phone")
    shown = with_tokens(text)
    notes = [f"{text[start:end]} mixes alphabets: {names}"
             for start, end, names in mixed_words(text)]
    if shown != text:
        notes.insert(0, "characters that draw nothing are written as <U+…>")
    return PhoneArguments(shown + "".join(f"\n({note})" for note in notes))


def options_for(question: Question) -> list[str]:
    """The answers a phone may give: an approval's Approve and Deny (Deny alone when the
    phone cannot show the arguments whole), else the options."""
    if question.kind == "approval":
        return [DENY] if phone_arguments(question).refused else [APPROVE, DENY]
    return list(question.options or [])


def answer_code() -> str:
    """A fresh one-time code for a mail question (only the person's mail holds it)."""
    return "".join(secrets.choice(CODE_LETTERS) for _ in range(CODE_LENGTH))


def reply_lines(body: str) -> list[str]:
    """The lines the person wrote in a reply: not quoted (``>``), up to the quoted
    original ("On ... wrote:", "-----Original Message-----") or a signature (``--``)."""
    found = []
    for line in body.splitlines():
        text = line.strip()
        if text.startswith(">"):
            continue
        if END_OF_REPLY.match(text):
            break
        if text:
            found.append(text)
    return found


def answer_in(body: str, options: list[str]) -> str | None:
    """The answer a reply gives: the first of its own lines that is one of ``options``
    (case-insensitive), or with no options its first line; None when there is none."""
    lines = reply_lines(body)
    if not options:
        return lines[0][:4000] if lines else None
    for line in lines:
        said = line.rstrip(".!").strip().casefold()
        for option in options:
            if said == option.casefold():
                return option
    return None


def words(question: Question, channel: ChannelName, also: str,
          code: str | None = None) -> str:
    """The question as the person reads it on the phone (plain text)."""
    details = question.details or {}
    if question.kind == "approval":
        tool = str(details.get("tool", "a tool"))
        shown = phone_arguments(question)
        if shown.refused:
            head = (f"The agent asks to run {tool}. Its arguments are not shown here: "
                    f"{shown.refused}. To approve it, see it in the notebook; "
                    "here you can only deny it.")
        else:
            head = f"The agent asks to run {tool} with exactly these arguments:\n{shown.text}"
            where = details.get("where")  # files/ on an object store: what the card says
            if isinstance(where, str) and where:
                head += f"\nWhere: {with_tokens(where)}"
    else:
        head = f"The agent asks: {with_tokens(redact_text(question.question))}"
    lines = [head]
    options = options_for(question)
    if channel == "email":
        if options:
            lines.append("Options: " + " · ".join(options))
        if code is not None:
            how = ("write one of the options on the first line" if options
                   else "write your answer on the first line")
            lines.append(f"Answer by replying to this mail: {how}, and keep the answer "
                         f"code [answer code {code}] in the reply. Or answer in the "
                         f"notebook{also}.")
        else:
            lines.append(f"Answer in the notebook{also}. "
                         "This mail cannot carry your answer back.")
    elif not options:
        lines.append("Answer by replying to this message.")
    if question.default is not None:
        lines.append(f"With no answer in time: {question.default}.")
    return "\n\n".join(lines)


def part(body: Payload, key: str) -> Payload:
    """``body[key]`` when it is a JSON object, else an empty one."""
    value = body.get(key)
    return {str(k): v for k, v in value.items()} if isinstance(value, dict) else {}


class PhoneRelay:
    """Carries one agent's questions to the configured channel and answers back."""

    def __init__(self, ledger: Ledger, bus: EventBus, agent_id: str = "agent",
                 channels: ChannelConfig | None = None) -> None:
        self.ledger = ledger
        self.bus = bus
        self.agent_id = agent_id
        self.channels = channels or CONFIG
        self.open: dict[str, OpenQuestion] = {}
        self._bot: TelegramBot | None = None
        self._sending: set[str] = set()
        self._ended: dict[str, tuple[str, AnswerSource]] = {}

    @property
    def external_polling(self) -> bool:
        """True when someone else reads the bot's updates (the ``telegram`` CLI mode) and
        hands them to :meth:`handle_update`."""
        return INBOX.external_polling

    @external_polling.setter
    def external_polling(self, value: bool) -> None:
        INBOX.external_polling = value

    @property
    def offset(self) -> int | None:
        """The next update the bot's reader asks for (one reader in the process)."""
        return INBOX.offsets.get(bot_key(self.bot()))

    # --- the engine's seam ------------------------------------------------------------

    def ready(self) -> bool:
        """Whether a channel is configured for questions."""
        return self.channels.question_channel() is not None

    @property
    def after(self) -> float:
        """Seconds the notebook gets first."""
        return float(self.channels.ask_after)

    async def put(self, question: Question, answer: Answerer) -> str:
        """Send ``question`` on the configured channel; listen for its answer."""
        channel = self.channels.question_channel()
        if channel is None:
            raise ChannelError("no channel is configured for questions")
        entry = OpenQuestion(question, options_for(question), answer, channel)
        what = "approval" if question.kind == "approval" else "question"
        if channel == "telegram":
            bot = self.bot()
            buttons = [(label, f"{question.question_id}:{i}")
                       for i, label in enumerate(entry.options)]
            self.open[question.question_id] = entry
            INBOX.relays.add(self)  # a press may come back before the send returns
            self._sending.add(question.question_id)
            try:
                entry.message_id = await bot.send(words(question, channel, ""), buttons)
            except BaseException:
                self.open.pop(question.question_id, None)
                raise
            finally:
                self._sending.discard(question.question_id)
            ended = self._ended.pop(question.question_id, None)
            if ended is not None:  # answered in the notebook while the message was on its way
                self.open[question.question_id] = entry
                self.settled(question.question_id, *ended)
            await self._record("channel_sent", question.run_id, channel="telegram", what=what,
                               question_id=question.question_id,
                               to=f"Telegram chat {bot.config.chat_id}")
            self._listen()
        else:
            from agent_kernel.channels.mail import Mailer

            mailer = Mailer(channels=self.channels)
            also = " or on Telegram" if self.channels.telegram is not None else ""
            subject = ("Approval needed: " + str((question.details or {}).get("tool", ""))
                       if what == "approval" else "A question from your agent")
            if mailer.config.answers_back:
                entry.code = answer_code()
                subject = f"{subject} [answer code {entry.code}]"
                self.open[question.question_id] = entry
                self._sending.add(question.question_id)  # :meth:`settled` may come first
            try:
                if entry.code is not None:
                    await MAIL.mark(self)  # replies are what arrives from now on
                await mailer.send(subject, words(question, channel, also, entry.code))
            except BaseException:
                self.open.pop(question.question_id, None)
                raise
            finally:
                self._sending.discard(question.question_id)
            await self._record("channel_sent", question.run_id, channel="email", what=what,
                               question_id=question.question_id, to=mailer.config.to)
            if entry.code is not None and \
                    self._ended.pop(question.question_id, None) is None:
                MAIL.listen(self)  # unless it was answered while the mail was on its way
        return channel

    def settled(self, question_id: str, answer: str, source: AnswerSource) -> None:
        """The question ended: forget it; on Telegram, say how it ended."""
        entry = self.open.pop(question_id, None)
        INBOX.stop_if_idle()
        if entry is not None and entry.code is not None:
            MAIL.closed.add(entry.code)
            MAIL.stop_if_idle()
        if entry is not None and entry.message_id is None and question_id in self._sending:
            self._ended[question_id] = (answer, source)  # :meth:`put` finishes the job
            return
        if entry is None or entry.message_id is None or entry.channel != "telegram":
            return
        where = WHERE.get(source)
        ended = (f"Answered {where}: {answer}" if where else
                 f"Ended without an answer ({answer or 'none'}).")
        text = words(entry.question, "telegram", "") + "\n\n" + ended
        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().create_task(self._quietly(self.bot().edit(
                entry.message_id, text)))

    # --- Telegram updates ---------------------------------------------------------------

    def bot(self) -> TelegramBot:
        """The Telegram bot (made on first use)."""
        from agent_kernel.channels.telegram import TelegramBot

        if self._bot is None or self._bot.config is not self.channels.telegram:
            self._bot = TelegramBot(channels=self.channels)
        return self._bot

    def _listen(self) -> None:
        INBOX.listen(self)

    def mail_open(self) -> list[OpenQuestion]:
        """This relay's questions out by mail, waiting for a reply."""
        return [e for e in self.open.values() if e.channel == "email" and e.code]

    async def mail_reply(self, message: EmailMessage, entry: OpenQuestion | None,
                         codes: list[str]) -> None:
        """One mail in the agent's mailbox: ``entry`` is the open question whose code it
        carries (of this relay), or None."""
        from email.utils import parseaddr

        config = self.channels.email
        sender = parseaddr(str(message.get("From", "")))[1]
        why = None
        answer = None
        if config is None:
            why = "e-mail is not configured"
        elif sender.casefold() != parseaddr(config.to)[1].casefold():
            why = "the reply came from another address"
        elif entry is None:
            if any(code in MAIL.closed for code in codes):
                return  # a reply to a question already answered: nothing to do
            why = "the reply carries no answer code of an open question"
        else:
            answer = answer_in(mail_text(message), entry.options)
            if answer is None:
                why = "the answer is not one of the question's options"
        if why is not None or entry is None or answer is None:
            await self._record("channel_answer_ignored",
                               entry.question.run_id if entry is not None else "channels",
                               channel="email", reason=why, from_address=sender[:320],
                               question_id=entry.question.question_id if entry else None)
            return
        entry.answer(answer, "email")

    def telegram_open(self) -> list[OpenQuestion]:
        """This relay's questions out on Telegram, with their message sent."""
        return [e for e in self.open.values() if e.channel == "telegram"]

    async def handle_update(self, update: Payload) -> bool:
        """Take one update (for every relay in the process); True when it was a button press
        or the answer to an open question without options."""
        return await INBOX.handle_update(update, self)

    async def press(self, callback: Payload, entry: OpenQuestion | None) -> None:
        """One button press on the bot: ``entry`` is the open question it names (of this
        relay), or None (answered already, or never ours)."""
        config = self.channels.telegram
        callback_id = str(callback.get("id", ""))
        sender = part(callback, "from")
        message = part(callback, "message")
        chat = part(message, "chat")
        data = str(callback.get("data", ""))
        question_id, _, index_text = data.rpartition(":")
        run_id = entry.question.run_id if entry is not None else "channels"
        why = None
        if config is None:
            why = "Telegram is not configured"
        elif sender.get("id") != config.person or chat.get("id") != config.chat_id:
            why = "the press came from another person or chat"
        elif entry is None:
            await self._quietly(self.bot().answer_callback(callback_id,
                                                           "This question was already answered."))
            return
        elif not index_text.isdigit() or int(index_text) >= len(entry.options) or (
                entry.message_id is not None and message.get("message_id") != entry.message_id):
            why = "the answer is not one of the question's options"
        if why is not None:
            await self._record("channel_answer_ignored", run_id, channel="telegram", reason=why,
                               from_id=sender.get("id"), chat_id=chat.get("id"),
                               question_id=question_id or None)
            await self._quietly(self.bot().answer_callback(callback_id, "Not taken."))
            return
        assert entry is not None
        choice = entry.options[int(index_text)]
        taken = entry.answer(choice, "telegram")
        await self._quietly(self.bot().answer_callback(
            callback_id, f"Got it: {choice}" if taken else "This question was already answered."))

    # --- records --------------------------------------------------------------------------

    async def _record(self, kind: str, run_id: str, **fields: object) -> None:
        try:
            record = await asyncio.to_thread(self.ledger.record_event, kind,
                                             agent_id=self.agent_id, run_id=run_id, **fields)
        except Exception as exc:
            self.bus.emit(Notice(run_id, f"Could not write the ledger record: {exc}",
                                 level="error"))
            return
        self.bus.emit(LedgerRecorded(run_id, record))

    async def _quietly(self, call: Awaitable[object]) -> None:
        """Await a courtesy call (a spinner stopped, a message edited); a failure is a notice."""
        try:
            await call
        except ChannelError as exc:
            self.bus.emit(Notice("channels", str(exc), level="warning"))


def bot_key(bot: TelegramBot) -> str:
    """Which bot: its API address and the profile holding its token (update ids count per
    bot)."""
    return f"{bot.config.base_url.rstrip('/')}#{bot.config.auth_profile}"


W = TypeVar("W")
"""What an inbox's long wait gives back (updates for Telegram, nothing for mail)."""


class _Reader(Generic[W]):
    """What both inboxes share: the relays with a question out, one poller on the running
    loop, and the long wait (a poll, a pause) that ends early once nothing is open."""

    def __init__(self) -> None:
        self.relays: weakref.WeakSet[PhoneRelay] = weakref.WeakSet()
        self._poller: asyncio.Task[None] | None = None
        self._waiting: asyncio.Future[W] | None = None
        self._ended_wait: asyncio.Future[W] | None = None

    def open(self) -> list[tuple[PhoneRelay, OpenQuestion]]:
        raise NotImplementedError

    async def _poll(self) -> None:
        raise NotImplementedError

    def listen(self, relay: PhoneRelay) -> None:
        """``relay`` has a question out: make sure someone reads the answers."""
        self.relays.add(relay)
        loop = asyncio.get_running_loop()
        poller = self._poller
        if poller is not None and not poller.done() and poller.get_loop() is loop:
            return
        self._poller = loop.create_task(self._poll())

    def stop_if_idle(self) -> None:
        """Nothing left to wait for: end the current wait now."""
        waiting = self._waiting
        if not self.open() and waiting is not None and not waiting.done():
            self._ended_wait = waiting
            waiting.cancel()

    @staticmethod
    def _say_failed(relay: PhoneRelay, failures: int, where: str, exc: ChannelError) -> None:
        """A failed read is a notice on the first and the tenth failure in a row, not on
        every look."""
        if failures in (1, 10):
            relay.bus.emit(Notice("channels", f"Could not read answers {where}: {exc}",
                                  level="warning"))

    async def _wait(self, awaitable: Awaitable[W]) -> tuple[bool, W | None]:
        """Await one wait that :meth:`stop_if_idle` may end: (False, None) when it did."""
        self._waiting = waiting = asyncio.ensure_future(awaitable)
        try:
            return True, await waiting
        except asyncio.CancelledError:
            if self._ended_wait is waiting:
                return False, None
            raise


class Inbox(_Reader[list["Payload"]]):
    """The one reader of the bot's updates in this process, for every agent's relay.

    Telegram gives a bot's updates to one reader at a time, and an update confirmed by the
    next offset is gone: two relays polling on their own would take each other's button
    presses. So the relays share this reader: it polls while any of them has a question
    out on Telegram (or leaves the reading to the ``telegram`` CLI mode, which hands every
    update to :meth:`handle_update`), and gives each press to the relay whose question it
    names.
    """

    def __init__(self) -> None:
        super().__init__()
        self.offsets: dict[str, int] = {}
        """The next update to ask each bot for (:func:`bot_key`)."""
        self.external_polling = False

    def open(self) -> list[tuple[PhoneRelay, OpenQuestion]]:
        """Every question out on Telegram, with the relay it belongs to."""
        return [(relay, entry) for relay in list(self.relays)
                for entry in relay.telegram_open()]

    def listen(self, relay: PhoneRelay) -> None:
        """As the base, but the ``telegram`` CLI mode may be the reader instead. (Ending the
        long poll early loses nothing: Telegram keeps any update no offset confirmed.)"""
        if self.external_polling:
            self.relays.add(relay)
            return
        super().listen(relay)

    async def _poll(self) -> None:
        """Read updates while a Telegram question is open (long polling)."""
        failures = 0
        while (found_open := self.open()):
            relay = found_open[0][0]
            bot = relay.bot()
            try:
                read, found = await self._wait(bot.updates(self.offsets.get(bot_key(bot))))
                failures = 0
            except ChannelError as exc:
                failures += 1
                self._say_failed(relay, failures, "from Telegram", exc)
                await asyncio.sleep(min(30.0, 0.5 * 2 ** min(failures, 6)))
                continue
            if not read or found is None:
                continue  # the poll was ended because nothing is open any more
            for update in found:
                await self.handle_update(update, relay)

    async def handle_update(self, update: Payload, fallback: PhoneRelay) -> bool:
        """Take one update; True when it was a button press or the answer to an open
        question without options (a reply to its message, or the only one open).
        ``fallback`` answers a press that names no open question."""
        update_id = update.get("update_id")
        if isinstance(update_id, int):
            key = bot_key(fallback.bot())
            self.offsets[key] = max(self.offsets.get(key, 0), update_id + 1)
        callback = update.get("callback_query")
        if isinstance(callback, dict):
            question_id = str(callback.get("data", "")).rpartition(":")[0]
            owner = next(((r, e) for r, e in self.open()
                          if e.question.question_id == question_id), None)
            if owner is None:
                await fallback.press(callback, None)
            else:
                await owner[0].press(callback, owner[1])
            return True
        message = part(update, "message")
        return bool(message) and await self._reply(message, fallback)

    async def _reply(self, message: Payload, fallback: PhoneRelay) -> bool:
        """A text from the person answering an open free-text question."""
        config = fallback.channels.telegram
        sender, chat = part(message, "from"), part(message, "chat")
        text = message.get("text")
        if config is None or sender.get("id") != config.person or \
                chat.get("id") != config.chat_id or not isinstance(text, str) or \
                not text.strip():
            return False
        free = [e for _, e in self.open() if not e.options and e.message_id is not None]
        replied = part(message, "reply_to_message").get("message_id")
        chosen = [e for e in free if e.message_id == replied] or (free if len(free) == 1 else [])
        if not chosen:
            return False
        return bool(chosen[0].answer(text.strip()[:4000], "telegram"))


INBOX = Inbox()
"""The process's reader of the bot's updates."""


def mail_text(message: EmailMessage) -> str:
    """The plain-text body of a mail ("" when it has none)."""
    body = message.get_body(preferencelist=("plain",))
    if body is None:
        return ""
    try:
        content = body.get_content()
    except (LookupError, ValueError):
        return ""
    return content if isinstance(content, str) else ""


class MailInbox(_Reader[None]):
    """The one reader of each mailbox in this process, for every agent's relay: it looks
    at the mailbox every ``EmailConfig.poll_every`` seconds while any relay has a
    question out by mail (the IMAP work off the event loop), and gives each new mail to
    the relay whose open question's code it carries."""

    def __init__(self) -> None:
        super().__init__()
        self.boxes: dict[str, Mailbox] = {}
        self.closed: set[str] = set()
        """Codes of questions already answered: a late reply changes nothing."""

    @property
    def polling(self) -> bool:
        """Whether the mailbox is being watched now."""
        return self._poller is not None and not self._poller.done()

    def open(self) -> list[tuple[PhoneRelay, OpenQuestion]]:
        """Every question out by mail, with the relay it belongs to."""
        return [(relay, entry) for relay in list(self.relays) for entry in relay.mail_open()]

    def box(self, relay: PhoneRelay) -> Mailbox:
        """``relay``'s mailbox, the same object for every relay reading it."""
        from agent_kernel.channels.mail import Mailbox

        fresh = Mailbox(channels=relay.channels)
        key = f"{fresh.key}#{id(fresh.config)}"
        return self.boxes.setdefault(key, fresh)

    async def mark(self, relay: PhoneRelay) -> None:
        """Before a question mail goes: note where the mailbox ends (unless it is being
        watched already), so its reply is the news. A failure is a notice: the first look
        marks it instead."""
        box = self.box(relay)
        if not self.polling:
            box.next_uid = None
        try:
            await box.mark()
        except ChannelError as exc:
            relay.bus.emit(Notice("channels", f"Could not read the mailbox: {exc}",
                                  level="warning"))

    async def _poll(self) -> None:
        failures = 0
        while (found_open := self.open()):
            relays = {id(self.box(relay)): relay for relay, _ in found_open}
            every = 5.0
            for relay in relays.values():
                config = relay.channels.email
                every = min(every, config.poll_every) if config is not None else every
                try:
                    found = await self.box(relay).new_mail()
                    failures = 0
                except ChannelError as exc:
                    failures += 1
                    self._say_failed(relay, failures, "by e-mail", exc)
                    found = []
                for message in found:
                    await self.handle(message, relay)
            if not self.open():
                break
            # ended early when nothing is open: the loop looks again either way
            await self._wait(asyncio.sleep(
                max(0.2, every) * (1 if failures == 0 else min(8, 2 ** min(failures, 3)))))

    async def handle(self, message: EmailMessage, fallback: PhoneRelay) -> None:
        """Give one new mail to the relay whose open question's code it carries."""
        text = f"{message.get('Subject', '')}\n{mail_text(message)}"
        codes = [code.upper() for code in CODE_PATTERN.findall(text)]
        owner = next(((r, e) for r, e in self.open() if e.code in codes), None)
        if owner is None:
            await fallback.mail_reply(message, None, codes)
        else:
            await owner[0].mail_reply(message, owner[1], codes)


MAIL = MailInbox()
"""The process's reader of the agent's mailbox."""
