"""Where memory and ``files/`` may live beyond the workspace folder: object-store URIs and options.

The one rule here is that nothing we hold or write carries a credential. A
URI with ``user:password@`` or a query string, and a storage option whose name
is a credential's, are refused with words that name the key and never its
value; credentials come from the environment or the cloud's own chain (for S3:
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, a profile, an instance role),
which LanceDB (memory) and s3fs (``files/``) read themselves. What is left (the
URI, an endpoint, a region, ``allow_http``) may be shown, logged and saved. Only the
standard library is imported: settings, magics and the CLI check a URI without loading
LanceDB or s3fs.
"""

from __future__ import annotations

import os
import re
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


FILES_ENV_VAR = "AGENT_KERNEL_FILES_URI"
"""The object-store URI of the workspace's ``files/`` for kernels, the CLI and Dask workers
that are given no setting (``Settings.files_uri`` and ``%agent_config --files`` win)."""

FILES_SCHEMES = ("s3",)
"""Object stores ``files/`` may live on: S3 and S3-compatible servers (through fsspec's
s3fs, the one backend installed and tested)."""

FILES_OPTIONS = frozenset({"endpoint", "aws_endpoint", "region", "aws_region", "allow_http",
                           "aws_allow_http"})
"""Storage options ``files/`` takes: the same names as memory's, the ones s3fs uses."""


class StoreConfigError(ValueError):
    """A memory or files URI or storage option was refused (the words never include a secret)."""


def check_uri(uri: str, what: str = "memory", schemes: tuple[str, ...] = SCHEMES) -> str:
    """``uri`` if it is an object-store URI we may keep, else :class:`StoreConfigError`.

    ``what`` names the setting in the refusal (``memory``, ``files``), ``schemes`` the
    stores it may name."""
    text = uri.strip()
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in schemes:
        raise StoreConfigError(
            f"{what} URI must start with one of {', '.join(s + '://' for s in schemes)} "
            f"(a folder is chosen with the workspace), got scheme {scheme or 'none'!r}")
    if "@" in parts.netloc:
        raise StoreConfigError(
            f"{what} URI may not carry user or password (user:secret@...): credentials come "
            "from the environment or the cloud's credential chain, never from settings")
    if parts.query and not (scheme == "s3+ddb" and _only_table_name(parts.query)):
        raise StoreConfigError(
            f"{what} URI may not carry a query string (s3+ddb:// takes ?ddbTableName=NAME "
            f"only): storage options go in {what}_options, credentials in the environment")
    if scheme != "memory" and not parts.netloc:
        raise StoreConfigError(f"{what} URI needs a bucket: {scheme}://BUCKET/PREFIX")
    return text


def _only_table_name(query: str) -> bool:
    pairs = [p.split("=", 1)[0] for p in query.split("&") if p]
    return pairs == ["ddbTableName"]


def check_options(options: dict[str, str] | None, what: str = "memory",
                  allowed: frozenset[str] = OPTIONS) -> dict[str, str]:
    """Storage options with lower-case names, refusing any that is not in ``allowed``
    (:data:`OPTIONS`; every credential is left out of it): the refusal names the key,
    never the value."""
    checked: dict[str, str] = {}
    for key, value in (options or {}).items():
        name = str(key).strip().lower()
        if name not in allowed:
            secretish = any(w in name for w in ("secret", "key", "token", "password",
                                                "credential", "sas", "session"))
            why = ("credentials come from the environment or the cloud's credential chain, "
                   "never from settings (nothing agent-kernel writes may hold them)"
                   if secretish else
                   f"the options that may be set are {', '.join(sorted(allowed))}")
            raise StoreConfigError(f"{what} option {name!r} is refused: {why}")
        text = str(value).strip()  # botocore strips " http://..." too: checked as used
        if "://" in text or "@" in text:  # an endpoint or proxy: no user, password or query
            parts = urlsplit(text.strip())
            if "@" in parts.netloc or "@" in text or parts.query:
                raise StoreConfigError(
                    f"{what} option {name!r} may not carry a user, password or query "
                    "(user:secret@..., ?key=...): credentials come from the environment or "
                    "the cloud's credential chain, never from settings")
        checked[name] = text
    return checked


def parse_option(text: str, what: str = "memory",
                 allowed: frozenset[str] = OPTIONS) -> tuple[str, str]:
    """``KEY=VALUE`` from a command line (``--memory-option endpoint=http://...``)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise StoreConfigError(f"a {what} option is KEY=VALUE (with an = between them); what "
                               "was given is not repeated here, in case it held a secret")
    name = check_options({key: value}, what, allowed)
    return next(iter(name.items()))


LOCAL_WORDS = {"memory": ("local",), "files": ("off", "local")}
"""The words that mean "not on a store, the workspace folder", for ``--memory`` and
``--files`` alike (magics and CLI): ``off`` is not offered for memory, where it would
read as "no memory"."""


def means_local(given: str, what: str = "memory") -> bool:
    """Does ``given`` (a ``--memory``/``--files`` value) name the workspace folder even
    when the environment names a store?"""
    return given.strip().lower() in LOCAL_WORDS[what]


def default_uri() -> str | None:
    """``$AGENT_KERNEL_MEMORY_URI`` when set (checked), else None: the workspace folder."""
    value = os.environ.get(ENV_VAR, "").strip()
    return check_uri(value) if value else None


def default_files_uri() -> str | None:
    """``$AGENT_KERNEL_FILES_URI`` when set (checked), else None: the workspace's files/."""
    value = os.environ.get(FILES_ENV_VAR, "").strip()
    return check_files_uri(value) if value else None


_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


def check_files_uri(uri: str) -> str:
    """``uri`` if ``files/`` may live there (``s3://BUCKET[/PREFIX]``), else refused: one
    plain place, so the keys below it are exactly the prefix and the file's path."""
    text = check_uri(uri, "files", FILES_SCHEMES)
    parts = urlsplit(text)
    body = parts.path.removeprefix("/")
    body = body.removesuffix("/")
    segments = body.split("/") if body else []
    if not _BUCKET.fullmatch(parts.netloc):
        raise StoreConfigError(f"files URI names the bucket {parts.netloc!r}, which is not an "
                               "S3 bucket name (3-63 of a-z, 0-9, '.', '-')")
    if parts.fragment or any(s in ("", ".", "..") for s in segments):
        raise StoreConfigError("files URI must name one place, s3://BUCKET/PREFIX: no empty, "
                               "'.' or '..' segment and no '#' in its prefix")
    return text


def check_apart(files_uri: str | None, memory_uri: str | None) -> None:
    """Refuse ``files/`` at, above or below the memory table's place: the file tools would
    hand the model the table's raw files (every memory, past the memory tools) and let a
    write corrupt them. Both are checked URIs (or None)."""
    if not files_uri or not memory_uri:
        return
    files, memory = urlsplit(files_uri), urlsplit(memory_uri)
    if memory.scheme.lower() not in ("s3", "s3+ddb") or files.netloc != memory.netloc:
        return
    inside = files.path.strip("/"), memory.path.strip("/")
    if any(not outer or inner == outer or inner.startswith(outer + "/")
           for outer, inner in (inside, inside[::-1])):
        raise StoreConfigError(
            f"files URI {files_uri.rstrip('/')} shares its place with the memory table at "
            f"{memory_uri.rstrip('/')}: the file tools would reach the table's own files; "
            "give files/ a prefix of its own (s3://BUCKET/files beside s3://BUCKET/memory)")


def check_files_options(options: dict[str, str] | None) -> dict[str, str]:
    """The storage options of ``files_uri``: :data:`FILES_OPTIONS` only, no credential, and
    an ``http://`` endpoint only with ``allow_http=true`` (as LanceDB asks for memory)."""
    checked = check_options(options, "files", FILES_OPTIONS)
    endpoint = checked.get("endpoint") or checked.get("aws_endpoint") or ""
    allowed = (checked.get("allow_http") or checked.get("aws_allow_http") or "").lower()
    if endpoint and not (urlsplit(endpoint).scheme.lower() in ("http", "https")
                         and urlsplit(endpoint).netloc):
        raise StoreConfigError(f"files endpoint {endpoint!r} is not a server's address: give "
                               "it as https://HOST[:PORT] (http:// with allow_http=true)")
    if endpoint.lower().startswith("http://") and allowed not in ("true", "1", "yes"):
        raise StoreConfigError("files endpoint is http:// (not encrypted): set the option "
                               "allow_http=true to use it anyway")
    return checked


def describe(uri: str | None, options: dict[str, str] | None,
             local: str = "the workspace folder (lancedb/)") -> str:
    """The memory's (or files') place in words, safe to show and log (it holds no secret)."""
    if not uri:
        return local
    shown = ", ".join(f"{k}={v}" for k, v in sorted((options or {}).items()))
    return f"{uri} ({shown})" if shown else uri


_STORE_FAILURES = (
    (("ConnectionRefused", "tcp connect error", "Connection refused"),
     "could not be reached: nothing answers at its endpoint"),
    (("dns error", "failed to lookup address", "Name or service not known"),
     "could not be reached: its endpoint's name does not resolve"),
    (("timed out", "operation timed out", "TimedOut"),
     "did not answer in time"),
    (("NoSuchBucket", "bucket does not exist", "The specified bucket does not exist"),
     "names a bucket that does not exist: create it, or point the setting at one that does"),
    (("InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "ExpiredToken",
      "Access Denied", "Forbidden"),
     "refused the credentials: check them in the environment (AWS_ACCESS_KEY_ID and its "
     "secret, a profile or a role)"),
    (("Missing region", "missing region", "no region"),
     "needs a region: --memory-option region=..."),
    (("NoCredentials", "no credentials", "No credentials"),
     "found no credentials: set them in the environment (AWS_ACCESS_KEY_ID and its "
     "secret, a profile or a role); settings never hold them"),
)


def store_failure(exc: BaseException, uri: str, options: dict[str, str] | None = None,
                  what: str = "memory") -> str | None:
    """One sentence for an object store's failure behind ``exc`` (LanceDB's errors carry
    the Rust client's whole report), or None when it does not look like one. The words
    name the store by :func:`describe` and never repeat the report (it may hold a URL
    with a signature)."""
    text = f"{type(exc).__name__}: {exc}"
    for marks, words in _STORE_FAILURES:
        if any(mark in text for mark in marks):
            return f"{what.capitalize()} at {describe(uri, options or {})} {words}."
    if "object_store" in text or "ObjectStore" in text or 'store: "S3"' in text:
        return (f"{what.capitalize()} at {describe(uri, options or {})} failed in the object "
                f"store ({type(exc).__name__}); try again when it answers.")
    return None
