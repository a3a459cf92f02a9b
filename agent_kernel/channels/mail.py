"""E-mail over SMTP with STARTTLS (the standard library's ``smtplib``).

The server's host is resolved through the network guard, whose one explicit allow is the
configured host and port, and the connection goes to the vetted address; TLS still checks
the certificate against the host name. A server that does not offer STARTTLS gets
nothing: no mail leaves in the clear. The password comes from an auth profile bound to
that host and is registered with redaction as it is read.

A mail carries a question one way: its options and a line saying to answer in the
notebook (or on Telegram when that is configured). Reading answers back (IMAP) is not
built: docs/organiser.md, "Channels".
"""

from __future__ import annotations

import asyncio
import smtplib
import ssl
from email.message import EmailMessage
from email.utils import formatdate, make_msgid

from agent_kernel.channels.config import CONFIG, ChannelConfig, ChannelError, EmailConfig
from agent_kernel.core.redaction import redact_text


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
        from agent_kernel.guards.web.guard import Guard, LookupFailed, NetworkRefused

        config = self.config
        guard = Guard([f"{config.host}:{config.port}" if ":" not in config.host
                       else f"[{config.host}]:{config.port}"])
        try:
            addresses = await guard.addresses(config.host, config.port)
        except (NetworkRefused, LookupFailed) as exc:
            raise ChannelError(f"the mail server cannot be reached: {exc}") from None
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
        if isinstance(config.verify, str):
            context = ssl.create_default_context(cafile=config.verify)
        elif config.verify:
            context = ssl.create_default_context()
        else:
            context = ssl._create_unverified_context()  # the person's explicit choice
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
