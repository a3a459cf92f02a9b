"""A real SMTP server on 127.0.0.1 for the channel tests: aiosmtpd with STARTTLS required
(a ``trustme`` certificate) and a login checked, keeping every mail it accepts."""

from __future__ import annotations

import socket
from email import message_from_bytes
from email.message import Message
from pathlib import Path
from typing import Any

USER, PASSWORD = "agent", "smtp-password-that-is-secret"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class MailServer:
    """``with MailServer(tmp_path) as mail:`` serves; ``mail.messages`` are what came in,
    ``mail.ca`` the CA bundle a client must trust, ``mail.logins`` who logged in."""

    def __init__(self, folder: Path) -> None:
        import ssl

        import trustme
        from aiosmtpd.controller import Controller
        from aiosmtpd.smtp import AuthResult

        ca = trustme.CA()
        cert = ca.issue_cert("127.0.0.1", "localhost")
        self.ca = str(folder / "mail-ca.pem")
        ca.cert_pem.write_to_path(self.ca)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        cert.configure_cert(context)
        self.messages: list[Message] = []
        self.logins: list[str] = []
        self.port = free_port()
        server = self

        class Handler:
            async def handle_DATA(self, _server: Any, _session: Any,  # noqa: N802
                                  envelope: Any) -> str:
                server.messages.append(message_from_bytes(envelope.content))
                return "250 OK"

        def authenticator(_server: Any, _session: Any, _envelope: Any, mechanism: str,
                          data: Any) -> Any:
            ok = data.login.decode() == USER and data.password.decode() == PASSWORD
            if ok:
                self.logins.append(data.login.decode())
            return AuthResult(success=ok)

        self.controller = Controller(Handler(), hostname="127.0.0.1", port=self.port,
                                     tls_context=context, require_starttls=True,
                                     authenticator=authenticator, auth_require_tls=True)

    def __enter__(self) -> MailServer:
        self.controller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.controller.stop()
