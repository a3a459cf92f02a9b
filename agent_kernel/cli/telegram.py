"""``python -m agent_kernel telegram``: the agent answers the person's Telegram messages
(spec 003's telegram mode), by long polling the Bot API.

Each message from the configured person is one run; its reply is sent back to the chat.
Messages from anyone else are ignored and recorded (``channel_message_ignored``). While a
run waits for an approval or a question, the buttons go to the same chat and the press
comes back through this same poll (one reader of the bot's updates: the relay is told so).
Runs take messages in order, one at a time; polling goes on meanwhile. Ctrl-C stops
cleanly: the run in progress is stopped and recorded, and the command exits 0.

Nothing heavy is imported to start: the demo model needs no litellm, and another model
imports it on its first turn.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

from agent_kernel.cli import EXAMPLES, examples, leave

if TYPE_CHECKING:
    from agent_kernel.app import Agent
    from agent_kernel.channels.relay import PhoneRelay
    from agent_kernel.channels.telegram import Payload, TelegramBot
    from agent_kernel.cli.grammar import Subparsers


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    """The ``telegram`` subcommand."""
    parser = subparsers.add_parser(
        "telegram", help="answer your Telegram messages with the agent (long polling)",
        formatter_class=EXAMPLES,
        epilog=examples("telegram --chat-id 123456789  "
                        "# the token in AGENT_KERNEL_AUTH_TELEGRAM_TOKEN, "
                        "AGENT_KERNEL_AUTH_TELEGRAM_HOSTS=api.telegram.org",
                        "telegram --chat-id 123456789 --model openai/gpt-4o-mini"))
    parser.add_argument("--chat-id", type=int, required=True,
                        help="your chat with the bot (a private chat's id is your user id)")
    parser.add_argument("--user-id", type=int, default=None,
                        help="who may talk to the agent (default: the chat id)")
    parser.add_argument("--model", default="demo",
                        help="'demo' (offline) or a litellm model string (default: demo)")
    parser.add_argument("--workspace", default=None,
                        help="workspace folder (default: $AGENT_KERNEL_WORKSPACE or .agent/)")
    parser.add_argument("--auth-profile", default="telegram",
                        help="the auth profile holding the bot token (default: telegram)")
    parser.add_argument("--base-url", default="https://api.telegram.org",
                        help="the Bot API's address (default: https://api.telegram.org)")
    parser.add_argument("--ca", default=None, help="a CA bundle to trust for the Bot API")
    parser.add_argument("--poll-seconds", type=int, default=25,
                        help="how long one long poll waits (default 25)")
    parser.add_argument("--max-messages", type=int, default=None,
                        help="stop after answering this many messages (default: never)")
    return parser


def main(args: argparse.Namespace) -> int:
    """Serve until Ctrl-C (or ``--max-messages``)."""
    from agent_kernel.channels.config import CONFIG, ChannelError, TelegramConfig

    CONFIG.telegram = TelegramConfig(chat_id=args.chat_id, user_id=args.user_id,
                                     auth_profile=args.auth_profile, base_url=args.base_url,
                                     verify=args.ca or True, poll_seconds=args.poll_seconds)
    CONFIG.ask_on = "telegram"
    try:
        asyncio.run(serve(args.model, args.workspace, args.max_messages))
    except KeyboardInterrupt:
        print("agent-kernel telegram: stopped.", flush=True)
    except ChannelError as exc:
        print(f"agent-kernel telegram: {exc}", file=sys.stderr, flush=True)
        return leave(1)
    return leave(0)


async def serve(model: str, workspace: str | None, max_messages: int | None = None) -> None:
    """Poll the bot; answer each of the person's messages with one run."""
    from agent_kernel.app import Agent
    from agent_kernel.channels.relay import PhoneRelay

    agent = Agent(model=model, workspace=workspace)
    relay = agent.questions.remote
    assert isinstance(relay, PhoneRelay)
    relay.external_polling = True  # this loop reads the updates and hands presses over
    bot = relay.bot()
    inbox: asyncio.Queue[str] = asyncio.Queue()
    worker = asyncio.create_task(_answer(agent, bot, inbox, max_messages))
    print(f"agent-kernel telegram: listening for chat {bot.config.chat_id} "
          "(Ctrl-C stops).", flush=True)
    try:
        while not worker.done():
            poll = asyncio.create_task(bot.updates(relay.offset))
            done, _ = await asyncio.wait({poll, worker}, return_when=asyncio.FIRST_COMPLETED)
            if poll not in done:
                poll.cancel()
                break
            for update in poll.result():
                if not await relay.handle_update(update):
                    await _take(agent, relay, update, inbox)
    finally:
        relay.external_polling = False
        agent.stop()  # the run in progress ends as stopped, and is recorded so
        await asyncio.wait({worker}, timeout=10)
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)


async def _take(agent: Agent, relay: PhoneRelay, update: Payload,
                inbox: asyncio.Queue[str]) -> None:
    """Queue a message from the person; record and drop anyone else's."""
    from agent_kernel.channels.relay import part

    message = part(update, "message")
    if not message:
        return
    config = relay.channels.telegram
    sender, chat = part(message, "from"), part(message, "chat")
    text = message.get("text")
    if config is None or sender.get("id") != config.person or chat.get("id") != config.chat_id:
        await asyncio.to_thread(agent.ledger.record_event, "channel_message_ignored",
                                agent_id=agent.agent_id, run_id="channels",
                                channel="telegram", from_id=sender.get("id"),
                                chat_id=chat.get("id"),
                                reason="the message came from another person or chat")
        return
    if isinstance(text, str) and text.strip():
        inbox.put_nowait(text.strip())


async def _answer(agent: Agent, bot: TelegramBot, inbox: asyncio.Queue[str],
                  max_messages: int | None) -> None:
    """One run per message, in order; the reply goes back to the chat."""
    from agent_kernel.channels.config import ChannelError

    answered = 0
    while max_messages is None or answered < max_messages:
        prompt = await inbox.get()
        result = await agent.arun(prompt)
        reply = result.reply.strip() if result.reply else ""
        if not reply:
            reply = f"(The run ended {result.status}: {result.error or 'no reply'}.)"
        try:
            await bot.send(reply)
        except ChannelError as exc:
            print(f"agent-kernel telegram: the reply was not sent: {exc}", file=sys.stderr,
                  flush=True)
        answered += 1
