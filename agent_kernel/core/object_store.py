"""Where memory may live beyond the workspace folder: an object-store URI and its options.

The one rule here is that nothing we hold or write carries a credential. A
URI with ``user:password@`` or a query string, and a storage option whose name
is a credential's, are refused with words that name the key and never its
value; credentials come from the environment or the cloud's own chain (for S3:
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, a profile, an instance role),
which LanceDB reads itself. What is left (the URI, an endpoint, a region,
``allow_http``) may be shown, logged and saved. Only the standard library is
imported: settings, magics and the CLI check a URI without loading LanceDB.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

ENV_VAR = "AGENT_KERNEL_MEMORY_URI"
"""The memory's object-store URI for kernels, the CLI and Dask workers that are given no
setting (``Settings.memory_uri`` and ``%agent_config --memory`` win over it)."""

SCHEMES = ("s3", "s3+ddb", "gs", "az", "abfs", "memory")
"""Object stores LanceDB opens (``memory://`` is its in-process store, for tests)."""

OPTIONS = frozenset({
    "endpoint", "region", "allow_http", "allow_invalid_certificates", "connect_timeout",
    "timeout", "user_agent", "proxy_url", "proxy_ca_certificate", "proxy_excludes",
    "virtual_hosted_style_request", "aws_endpoint", "aws_region", "aws_allow_http",
    "aws_virtual_hosted_style_request", "aws_s3_express", "dynamodb_endpoint",
    "aws_server_side_encryption", "google_project_id", "azure_storage_account_name",
    "account_name", "use_emulator", "azure_storage_use_emulator",
})
"""Storage options that may be set: none of them is a credential."""


class StoreConfigError(ValueError):
    """A memory URI or storage option was refused (the words never include a secret)."""


def check_uri(uri: str) -> str:
    """``uri`` if it is an object-store URI we may keep, else :class:`StoreConfigError`."""
    text = uri.strip()
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise StoreConfigError(
            f"memory URI must start with one of {', '.join(s + '://' for s in SCHEMES)} "
            f"(a folder is chosen with the workspace), got scheme {scheme or 'none'!r}")
    if "@" in parts.netloc:
        raise StoreConfigError(
            "memory URI may not carry user or password (user:secret@...): credentials come "
            "from the environment or the cloud's credential chain, never from settings")
    if parts.query and not (scheme == "s3+ddb" and _only_table_name(parts.query)):
        raise StoreConfigError(
            "memory URI may not carry a query string (s3+ddb:// takes ?ddbTableName=NAME "
            "only): storage options go in memory_options, credentials in the environment")
    if scheme != "memory" and not parts.netloc:
        raise StoreConfigError(f"memory URI needs a bucket: {scheme}://BUCKET/PREFIX")
    return text


def _only_table_name(query: str) -> bool:
    pairs = [p.split("=", 1)[0] for p in query.split("&") if p]
    return pairs == ["ddbTableName"]


def check_options(options: dict[str, str] | None) -> dict[str, str]:
    """Storage options with lower-case names, refusing any that is not in :data:`OPTIONS`
    (every credential among them): the refusal names the key, never the value."""
    checked: dict[str, str] = {}
    for key, value in (options or {}).items():
        name = str(key).strip().lower()
        if name not in OPTIONS:
            secretish = any(w in name for w in ("secret", "key", "token", "password",
                                                "credential", "sas", "session"))
            why = ("credentials come from the environment or the cloud's credential chain, "
                   "never from settings (nothing agent-kernel writes may hold them)"
                   if secretish else
                   f"the options that may be set are {', '.join(sorted(OPTIONS))}")
            raise StoreConfigError(f"memory option {name!r} is refused: {why}")
        text = str(value)
        if "://" in text or "@" in text:  # an endpoint or proxy: no user, password or query
            parts = urlsplit(text.strip())
            if "@" in parts.netloc or "@" in text or parts.query:
                raise StoreConfigError(
                    f"memory option {name!r} may not carry a user, password or query "
                    "(user:secret@..., ?key=...): credentials come from the environment or "
                    "the cloud's credential chain, never from settings")
        checked[name] = text
    return checked


def parse_option(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` from a command line (``--memory-option endpoint=http://...``)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise StoreConfigError("a memory option is KEY=VALUE (with an = between them); what "
                               "was given is not repeated here, in case it held a secret")
    name = check_options({key: value})
    return next(iter(name.items()))


def default_uri() -> str | None:
    """``$AGENT_KERNEL_MEMORY_URI`` when set (checked), else None: the workspace folder."""
    value = os.environ.get(ENV_VAR, "").strip()
    return check_uri(value) if value else None


def describe(uri: str | None, options: dict[str, str] | None) -> str:
    """The memory's place in words, safe to show and log (it holds no secret)."""
    if not uri:
        return "the workspace folder (lancedb/)"
    shown = ", ".join(f"{k}={v}" for k, v in sorted((options or {}).items()))
    return f"{uri} ({shown})" if shown else uri
