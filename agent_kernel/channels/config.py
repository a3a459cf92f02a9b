"""What a person configures for the channels: where the person is, and how to reach them.

Secrets are never written here: a channel names an auth profile (``auth_profile``), whose
secret comes from the environment (``AGENT_KERNEL_AUTH_<NAME>_TOKEN`` with
``AGENT_KERNEL_AUTH_<NAME>_HOSTS``) or from :attr:`ChannelConfig.profiles`, and is sent only
to the hosts the profile names (:mod:`agent_kernel.guards.web.auth`). Each channel's host
is the one explicit hole its own network guard opens; plain ``http://`` is accepted only
for this machine (a test server).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

from agent_kernel.guards.web.auth import AuthProfile, env_profile

ChannelName = Literal["telegram", "email"]
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


class ChannelError(RuntimeError):
    """A channel could not do what was asked; the message says why in words."""


@dataclass
class TelegramConfig:
    """The Bot API and the one person it talks to.

    ``chat_id`` is the person's chat with the bot (a private chat's id is the person's
    user id); ``user_id`` is who may press the buttons (default: ``chat_id``). Any other
    chat or user is ignored and recorded.
    """

    chat_id: int
    user_id: int | None = None
    auth_profile: str = "telegram"
    base_url: str = "https://api.telegram.org"
    # True: the certifi roots; a path: a CA bundle (a test's own certificate).
    verify: bool | str = True
    # How long one getUpdates call waits for news on the server (long polling).
    poll_seconds: int = 25

    @property
    def person(self) -> int:
        """The user id whose button presses count."""
        return self.user_id if self.user_id is not None else self.chat_id


@dataclass
class EmailConfig:
    """An SMTP server with STARTTLS, the person's address, and (optionally) the agent's
    IMAP mailbox where the person's replies arrive."""

    host: str
    to: str
    sender: str
    port: int = 587
    username: str | None = None
    # The profile holding the SMTP password (None: the server needs no login).
    auth_profile: str | None = "smtp"
    # True: the system's roots; a path: a CA bundle (a test's own certificate).
    verify: bool | str = True
    timeout: float = 30.0
    # The agent's mailbox, read over IMAP for the person's replies to a question (None:
    # mail carries questions one way). Port 993 is IMAPS; with ``imap_starttls`` the
    # connection starts plain and must upgrade (usually port 143). The login is
    # ``imap_username`` (default: ``username``) with the secret of ``imap_auth_profile``
    # (default: ``auth_profile``), which must name the IMAP host among its hosts.
    imap_host: str | None = None
    imap_port: int = 993
    imap_starttls: bool = False
    imap_username: str | None = None
    imap_auth_profile: str | None = None
    mailbox: str = "INBOX"
    # Seconds between two looks at the mailbox while a mail question is open.
    poll_every: float = 5.0

    @property
    def answers_back(self) -> bool:
        """Whether the person's replies are read (an IMAP mailbox is configured)."""
        return self.imap_host is not None


@dataclass
class ChannelConfig:
    """Every channel, and where questions and approvals go when no notebook answers."""

    telegram: TelegramConfig | None = None
    email: EmailConfig | None = None
    # Where a run's questions go when nobody answers in the notebook (None: Telegram when
    # it is configured, else e-mail, else nowhere; "notebook": nowhere, the channels only
    # send what contacts_send sends; with nowhere, questions end by the usual rules).
    ask_on: ChannelName | Literal["notebook"] | None = None
    # Seconds a question the notebook could answer waits before it goes out too; one
    # nobody can click (a trigger's run with no notebook open, a CLI with no terminal)
    # goes at once.
    ask_after: float = 300.0
    # Auth profiles by name, besides those in the environment.
    profiles: dict[str, AuthProfile] = field(default_factory=dict)

    def question_channel(self) -> ChannelName | None:
        """The channel questions go to now, or None."""
        if self.ask_on == "notebook":
            return None
        if self.ask_on is not None:
            return self.ask_on if getattr(self, self.ask_on) is not None else None
        if self.telegram is not None:
            return "telegram"
        return "email" if self.email is not None else None

    def profile(self, name: str, host: str) -> AuthProfile:
        """The auth profile ``name``, checked to be meant for ``host``."""
        found = self.profiles.get(name) or env_profile(name)
        if found is None:
            raise ChannelError(f"no auth profile named {name!r}: set "
                               f"AGENT_KERNEL_AUTH_{name.upper()}_TOKEN and "
                               f"AGENT_KERNEL_AUTH_{name.upper()}_HOSTS, or add it to "
                               "agent_kernel.channels.CONFIG.profiles")
        if not found.sent_to(host):
            raise ChannelError(f"auth profile {name!r} may not be sent to {host}: its hosts "
                               f"are {', '.join(found.hosts) or 'none'}")
        return found


def endpoint(base_url: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of a channel's base URL; plain HTTP only to this machine."""
    parts = urlsplit(base_url)
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("https", "http") or not host:
        raise ChannelError(f"the channel's address must be an https:// URL, got {base_url!r}")
    if parts.scheme == "http" and host not in LOCAL_HOSTS:
        raise ChannelError(f"the channel's address must use https:// (plain http:// only to "
                           f"this machine), got {base_url!r}")
    return parts.scheme, host, parts.port or (443 if parts.scheme == "https" else 80)


CONFIG = ChannelConfig()
"""The process's channels (change it in place, as ``tools.web.LIMITS``)."""
