"""Channels that reach a person away from the notebook: Telegram and e-mail.

Floor 3: built on the guards (the network guard, auth profiles) and the engine's
question seam (:class:`agent_kernel.engine.questions.RemoteAsker`), used by the tools
(``contacts_send``), ``app.py`` (questions that go to the phone) and the CLI
(``python -m agent_kernel telegram``). What a person configures is :data:`CONFIG`
(:mod:`.config`). Nothing heavy is imported here: httpx comes with the first send.
"""

from __future__ import annotations

from agent_kernel.channels.config import CONFIG, ChannelConfig, EmailConfig, TelegramConfig

__all__ = ["CONFIG", "ChannelConfig", "EmailConfig", "TelegramConfig"]
