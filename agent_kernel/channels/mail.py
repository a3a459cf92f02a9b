"""E-mail over SMTP with STARTTLS (the standard library's ``smtplib``).

The server's host is resolved through the network guard, whose one explicit allow is the
configured host and port, and the connection goes to the vetted address; TLS still checks
the certificate against the host name. A server that does not offer STARTTLS gets
nothing: no mail leaves in the clear. The password comes from an auth profile bound to
that host and is registered with redaction as it is read.

With an IMAP mailbox configured (``EmailConfig.imap_host``), :class:`Mailbox` reads the
person's replies (the standard library's ``imaplib``, IMAPS or STARTTLS, the certificate
checked, the host through its own guard as SMTP's); :mod:`.relay` decides which reply
answers what. Without one, a mail carries a question one way: docs/organiser.md,
"Channels".
"""

from __future__ import annotations

import asyncio
import imaplib
import smtplib
import socket
import ssl
from collections.abc import Callable
from email import message_from_bytes, policy
from email.message import EmailMessage
from email.utils import formatdate, make_msgid

from agent_kernel.channels.config import CONFIG, ChannelConfig, ChannelError, EmailConfig
from agent_kernel.core.redaction import redact_text


async def vetted(host: str, port: int) -> list[str]:
    """The addresses of a mail server through a network guard whose one explicit allow is
    that host and port."""
    from agent_kernel.guards.web.guard import Guard, LookupFailed, NetworkRefused

    guard = Guard([f"{host}:{port}" if ":" not in host else f"[{host}]:{port}"])
    try:
        return await guard.addresses(host, port)
    except (NetworkRefused, LookupFailed) as exc:
        raise ChannelError(f"the mail server cannot be reached: {exc}") from None


def tls_context(config: EmailConfig) -> ssl.SSLContext:
    """TLS that checks the server's certificate (against a named CA bundle if given)."""
    if isinstance(config.verify, str):
        return ssl.create_default_context(cafile=config.verify)
    if config.verify:
        return ssl.create_default_context()
    return ssl._create_unverified_context()  # the person's explicit choice


class Mailer:
    """Sends mail to the configured person (or another address) through one server."""

    def __init__(self, config: EmailConfig | None = None,
                 channels: ChannelConfig | None = None) -> None:
        channels = channels or CONFIG
        found = config or channels.email
        if found is None:
            raise ChannelError("e-mail is not configured: set agent_kernel.channels.CONFIG.email")
        self.config = found
        self.password: str | None = None
        if found.auth_profile is not None:
            profile = channels.profile(found.auth_profile, found.host)
            self.password = profile.secret(found.auth_profile)

    async def send(self, subject: str, body: str, to: str | None = None) -> str:
        """Send one plain-text mail; returns its Message-ID."""
        config = self.config
        addresses = await vetted(config.host, config.port)
        message = EmailMessage()
        message["From"] = config.sender
        message["To"] = to or config.to
        message["Subject"] = " ".join(subject.split())[:200]
        message["Date"] = formatdate(localtime=False, usegmt=True)
        message["Message-ID"] = make_msgid(domain=config.sender.rpartition("@")[2] or None)
        message.set_content(body)
        try:
            await asyncio.to_thread(self._deliver, addresses[0], message)
        except (smtplib.SMTPException, OSError, ssl.SSLError) as exc:
            raise ChannelError(redact_text(f"the mail was not sent: {exc}")) from None
        return str(message["Message-ID"])

    def _deliver(self, address: str, message: EmailMessage) -> None:
        config = self.config
        context = tls_context(config)
        smtp = smtplib.SMTP(timeout=config.timeout)
        smtp._host = config.host  # type: ignore[attr-defined]  # STARTTLS checks this name
        try:
            smtp.connect(address, config.port)
            smtp.ehlo()
            if not smtp.has_extn("starttls"):
                raise ChannelError(f"the mail server {config.host} does not offer STARTTLS; "
                                   "nothing was sent")
            smtp.starttls(context=context)
            smtp.ehlo()
            if config.username and self.password:
                smtp.login(config.username, self.password)
            smtp.send_message(message)
        finally:
            try:
                smtp.quit()
            except (smtplib.SMTPException, OSError):
                smtp.close()


class _Imap(imaplib.IMAP4):
    """IMAP to a vetted address; STARTTLS checks the certificate against ``host``."""

    def __init__(self, host: str, address: str, port: int, timeout: float) -> None:
        self._address = address
        super().__init__(host, port, timeout)

    def _create_socket(self, timeout: float | None) -> socket.socket:
        return socket.create_connection((self._address, self.port), timeout)


class _ImapTls(imaplib.IMAP4_SSL):
    """IMAPS to a vetted address; the certificate is checked against ``host``."""

    def __init__(self, host: str, address: str, port: int, timeout: float,
                 context: ssl.SSLContext) -> None:
        self._address = address
        super().__init__(host, port, ssl_context=context, timeout=timeout)

    def _create_socket(self, timeout: float | None) -> socket.socket:
        sock = socket.create_connection((self._address, self.port), timeout)
        return self.ssl_context.wrap_socket(sock, server_hostname=self.host)


class Mailbox:
    """The agent's IMAP mailbox, where the person's replies arrive.

    Only mail that arrived after :meth:`mark` is read (by UID), with ``BODY.PEEK`` so
    nothing is flagged as read; each poll is one short connection (login, select, search,
    fetch, logout), made off the event loop by the caller.
    """

    def __init__(self, config: EmailConfig | None = None,
                 channels: ChannelConfig | None = None) -> None:
        channels = channels or CONFIG
        found = config or channels.email
        if found is None or found.imap_host is None:
            raise ChannelError("no mailbox is configured: set EmailConfig.imap_host")
        self.config = found
        self.host: str = found.imap_host
        self.password: str | None = None
        profile_name = found.imap_auth_profile or found.auth_profile
        if profile_name is not None:
            profile = channels.profile(profile_name, self.host)
            self.password = profile.secret(profile_name)
        self.username = found.imap_username or found.username
        self.next_uid: int | None = None
        self.validity: str | None = None

    @property
    def key(self) -> str:
        """Which mailbox (one reader per mailbox in the process)."""
        return f"{self.username}@{self.host}:{self.config.imap_port}/{self.config.mailbox}"

    async def mark(self) -> None:
        """Remember where the mailbox ends now: replies are what comes after."""
        if self.next_uid is None:
            await self._run(self._mark)

    async def new_mail(self) -> list[EmailMessage]:
        """The mail that arrived since the last look."""
        return await self._run(self._fetch)

    async def _run(self, work: Callable[[str], list[EmailMessage] | None]
                   ) -> list[EmailMessage]:
        addresses = await vetted(self.host, self.config.imap_port)
        try:
            found = await asyncio.to_thread(work, addresses[0])
        except (imaplib.IMAP4.error, OSError, ssl.SSLError) as exc:
            raise ChannelError(redact_text(f"the mailbox could not be read: {exc}")) from None
        return list(found or [])

    def _open(self, address: str) -> imaplib.IMAP4:
        config = self.config
        context = tls_context(config)
        imap: imaplib.IMAP4
        if config.imap_starttls:
            imap = _Imap(self.host, address, config.imap_port, config.timeout)
            if "STARTTLS" not in imap.capabilities:
                imap.shutdown()
                raise ChannelError(f"the mail server {self.host} does not offer STARTTLS; "
                                   "the mailbox was not read")
            imap.starttls(ssl_context=context)
        else:
            imap = _ImapTls(self.host, address, config.imap_port, config.timeout, context)
        try:
            if self.username and self.password:
                imap.login(self.username, self.password)
            kind, data = imap.select(_quoted(config.mailbox), readonly=True)
            if kind != "OK":
                raise ChannelError(f"the mailbox {config.mailbox!r} could not be opened")
            validity = imap.response("UIDVALIDITY")[1]
            stamp = str(validity[0]) if validity and validity[0] else None
            if self.validity is not None and stamp != self.validity:
                self.next_uid = None  # the server renumbered the mailbox: start afresh
            self.validity = stamp
        except BaseException:
            imap.shutdown()
            raise
        return imap

    def _mark(self, address: str) -> None:
        imap = self._open(address)
        try:
            self.next_uid = self._last_uid(imap) + 1
        finally:
            _logout(imap)

    @staticmethod
    def _last_uid(imap: imaplib.IMAP4) -> int:
        kind, data = imap.uid("SEARCH", "ALL")
        uids = [int(u) for u in (data[0] or b"").split()] if kind == "OK" and data else []
        return max(uids, default=0)

    def _fetch(self, address: str) -> list[EmailMessage]:
        imap = self._open(address)
        try:
            if self.next_uid is None:
                self.next_uid = self._last_uid(imap) + 1
                return []
            kind, data = imap.uid("SEARCH", f"UID {self.next_uid}:*")
            uids = sorted(u for u in (int(x) for x in (data[0] or b"").split())
                          if u >= self.next_uid) if kind == "OK" and data else []
            found: list[EmailMessage] = []
            for uid in uids:
                kind, parts = imap.uid("FETCH", str(uid), "(BODY.PEEK[])")
                raw = next((p[1] for p in parts or [] if isinstance(p, tuple)), None)
                message = (message_from_bytes(raw, policy=policy.default)
                           if kind == "OK" and isinstance(raw, bytes) else None)
                if isinstance(message, EmailMessage):
                    found.append(message)
                self.next_uid = uid + 1
            return found
        finally:
            _logout(imap)


def _quoted(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _logout(imap: imaplib.IMAP4) -> None:
    try:
        imap.logout()
    except (imaplib.IMAP4.error, OSError):
        imap.shutdown()
