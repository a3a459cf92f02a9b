"""A real IMAP server on 127.0.0.1 for the mail-answer tests: Debian's Dovecot, run as a
child process with its whole configuration in a temporary folder (IMAPS and STARTTLS with a
``trustme`` certificate, plaintext logins refused, one passwd-file user, a Maildir).
``.ci/run`` installs it (README's apt-get line); a test that needs it is skipped without
it."""

from __future__ import annotations

import imaplib
import os
import pwd
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
from email.message import EmailMessage
from pathlib import Path

from mail_server import free_port

DOVECOT = shutil.which("dovecot") or ("/usr/sbin/dovecot"
                                      if os.path.exists("/usr/sbin/dovecot") else None)
USER, PASSWORD = "agent", "imap-password-that-is-secret"


class ImapServer:
    """``with ImapServer() as imap:`` serves; ``imap.port`` is IMAPS, ``imap.starttls_port``
    plain IMAP that must upgrade, ``imap.ca`` the CA bundle; :meth:`deliver` puts a mail in
    the agent's inbox (IMAP APPEND, as a mail server delivering it would)."""

    def __init__(self) -> None:
        import trustme

        if DOVECOT is None:
            raise RuntimeError("dovecot is not installed (apt-get install dovecot-imapd)")
        # Dovecot's login and mail processes run as other users: the folder must be
        # reachable by them (pytest's tmp_path is not), so it is a folder of our own.
        self.folder = Path(tempfile.mkdtemp(prefix="imap-test-"))
        self.folder.chmod(0o755)
        ca = trustme.CA()
        cert = ca.issue_cert("127.0.0.1", "localhost")
        self.ca = str(self.folder / "ca.pem")
        ca.cert_pem.write_to_path(self.ca)
        cert.private_key_pem.write_to_path(str(self.folder / "key.pem"))
        cert.cert_chain_pems[0].write_to_path(str(self.folder / "cert.pem"))
        (self.folder / "run").mkdir()
        mail = self.folder / "mail"
        mail.mkdir()
        if os.getuid() == 0:  # Dovecot never reads mail as root
            owner = "nobody"
            group = "nogroup"
            entry = pwd.getpwnam(owner)
            os.chown(mail, entry.pw_uid, entry.pw_gid)
            extra = ""
        else:
            owner = pwd.getpwuid(os.getuid()).pw_name
            group = str(os.getgid())
            extra = (f"default_internal_user = {owner}\ndefault_login_user = {owner}\n"
                     f"default_internal_group = {group}\n")
        (self.folder / "passwd").write_text(f"{USER}:{{PLAIN}}{PASSWORD}\n")
        self.port = free_port()
        self.starttls_port = free_port()
        self.log = self.folder / "dovecot.log"
        (self.folder / "dovecot.conf").write_text(f"""{extra}
base_dir = {self.folder}/run
state_dir = {self.folder}/run
instance_name = agent-kernel-test-{self.port}
protocols = imap
listen = 127.0.0.1
ssl = required
ssl_cert = <{self.folder}/cert.pem
ssl_key = <{self.folder}/key.pem
disable_plaintext_auth = yes
auth_mechanisms = plain
log_path = {self.log}
mail_location = maildir:{mail}/%u
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {self.folder}/passwd
}}
userdb {{
  driver = static
  args = uid={owner} gid={group} home={mail}/%u
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {self.starttls_port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {self.port}
    ssl = yes
  }}
}}
""")
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> ImapServer:
        assert DOVECOT is not None
        self.process = subprocess.Popen([DOVECOT, "-F", "-c", str(self.folder / "dovecot.conf")],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    log = self.log.read_text() if self.log.exists() else ""
                    self.__exit__()
                    raise RuntimeError(f"dovecot did not start: {log}") from None
                time.sleep(0.1)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        if self.process is not None and self.process.stderr is not None:
            self.process.stderr.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def deliver(self, sender: str, subject: str, body: str) -> None:
        """A mail from ``sender`` arrives in the agent's inbox."""
        message = EmailMessage()
        message["From"] = sender
        message["To"] = "agent@example.org"
        message["Subject"] = subject
        message.set_content(body)
        context = ssl.create_default_context(cafile=self.ca)
        with imaplib.IMAP4_SSL("127.0.0.1", self.port, ssl_context=context) as imap:
            imap.login(USER, PASSWORD)
            imap.append("INBOX", None, None, message.as_bytes())
