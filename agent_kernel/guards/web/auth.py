"""Named credentials: a secret the model may ask for by name and never see.

Kept on the guards' floor because more than the web tools read them: the channels
(:mod:`agent_kernel.channels`) take a bot token and an SMTP password from a profile too.
A profile's secret is registered with :func:`agent_kernel.core.redaction.add_secret` the
moment it is read, so no record, output or view can hold it afterwards.
"""

from __future__ import annotations

import base64
import os
import re
from dataclasses import dataclass, field

from agent_kernel.core.redaction import add_secret

AUTH_ENV_PREFIX = "AGENT_KERNEL_AUTH_"


@dataclass
class AuthProfile:
    """A named credential the model may ask for by name (``auth_profile``), never see.

    ``hosts`` are where it may be sent (``api.github.com``, ``*.example.com``), over
    HTTPS only; the secret is ``token`` or the environment variable ``token_env``, sent as
    ``header: scheme secret`` (``Basic``: the secret is ``user:password``).
    """

    hosts: list[str]
    token_env: str | None = None
    token: str | None = field(default=None, repr=False)
    header: str = "Authorization"
    scheme: str = "Bearer"

    def secret(self, name: str) -> str:
        """The secret itself, or a clear error saying what to set."""
        value = self.token or (os.environ.get(self.token_env) if self.token_env else None)
        if not value:
            where = f"the environment variable {self.token_env}" if self.token_env else "token"
            raise PermissionError(f"auth_profile {name!r} has no secret: {where} is not set")
        add_secret(value.encode("utf-8"))
        return value

    def header_value(self, name: str) -> str:
        """What goes into ``header``."""
        value = self.secret(name)
        if self.scheme.lower() == "basic":
            value = base64.b64encode(value.encode()).decode()
        return f"{self.scheme} {value}" if self.scheme else value

    def sent_to(self, host: str) -> bool:
        """Whether ``host`` is one of the profile's hosts."""
        host = host.rstrip(".").lower()
        for pattern in (h.strip().rstrip(".").lower() for h in self.hosts):
            if host == pattern or (pattern.startswith("*.") and host.endswith(pattern[1:])):
                return True
        return False



def env_profile(name: str) -> AuthProfile | None:
    """The profile ``name`` from the environment (``AGENT_KERNEL_AUTH_<NAME>_TOKEN`` with
    ``AGENT_KERNEL_AUTH_<NAME>_HOSTS``, comma-separated; optional ``_HEADER`` and ``_SCHEME``),
    or None when either is missing."""
    key = AUTH_ENV_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", name).upper()
    hosts = [h for h in os.environ.get(key + "_HOSTS", "").split(",") if h.strip()]
    if os.environ.get(key + "_TOKEN") and hosts:
        return AuthProfile(hosts=hosts, token_env=key + "_TOKEN",
                           header=os.environ.get(key + "_HEADER", "Authorization"),
                           scheme=os.environ.get(key + "_SCHEME", "Bearer"))
    return None
