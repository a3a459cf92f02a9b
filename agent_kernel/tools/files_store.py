"""The file cache (``files/``) on an object store: the file tools' I/O when ``files_uri`` is set.

``Settings.files_uri`` (``s3://bucket/prefix``) puts ``file_cache_dir`` on an S3 store,
through fsspec's s3fs, so every kernel and Dask worker of a team sees the same files.
The one idea: a model's path is data. :mod:`agent_kernel.tools.files` turns it into
checked parts below ``files/`` (lexically: no ``..``, no URL, no alias left, deny
patterns applied), and this module joins them to the configured bucket and prefix
itself; before any request the key is checked to be exactly what s3fs would send
(its ``split_path`` gives back the same bucket and key), so no part of a model's
string is ever read as a protocol, a bucket, a version or a sibling prefix; a key a
person approves (a write's, a download's) may hold no character that draws nothing, so
the approval card's ``where`` is the place written (:func:`check_key`). Only
this module imports fsspec, and only when a store is configured; ``state/`` and the
rest of the workspace stay local. Credentials come from the environment or the
cloud's chain (s3fs reads them); none is held here (core/object_store.py refuses them).

Every answer is bounded before it is asked for: a read asks for at most the byte
limit plus one (a ranged GET), a write is refused over its limit before anything is
sent, a listing pages until its entry limit (and stops scanning past a bound). An
append rewrites the object (S3 has no append): read whole (bounded by
:data:`APPEND_MAX_BYTES`), then put only if the object is still the one read
(``If-Match``; ``If-None-Match: *`` for a new one), retried a few times. Every failure
of the store (a missing bucket, an endpoint that does not answer, access refused)
becomes one sentence in an ``OSError``; the file tools put it in ``{ok: false, error}``.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import accumulate
from typing import TYPE_CHECKING, Any, TypedDict
from urllib.parse import urlsplit

from agent_kernel.core import object_store
from agent_kernel.core.unseen import draws_nothing, mixed_words

if TYPE_CHECKING:
    from agent_kernel.core.config import Settings

APPEND_MAX_BYTES = 8 * 1024 * 1024
"""An append reads the whole object and writes it again: larger objects are refused."""
SCAN_FACTOR = 10
"""A listing reads at most this many times its entry limit of keys (deny-listed names
are skipped, not counted, so a folder of them must not page forever)."""
PAGE_KEYS = 1000
"""Keys asked for per listing page (S3's most)."""
_APPEND_TRIES = 8
_APPEND_PAUSE = 0.02
"""Seconds times the attempt (with jitter) an append waits after losing to another writer."""
_CONNECT_TIMEOUT, _READ_TIMEOUT, _ATTEMPTS = 5, 20, 2


class _Info(TypedDict, total=False):
    """What fsspec's ``info`` says of a path (the fields read here)."""

    type: str
    size: int
    ETag: str


class _Listed(TypedDict, total=False):
    """One page of S3's ``list_objects_v2`` (the fields read here)."""

    Contents: list[_Object]
    CommonPrefixes: list[_Prefix]
    IsTruncated: bool
    NextContinuationToken: str
    KeyCount: int
    budget_spent: bool
    """Ours: the listing stopped at its key budget."""


class _Object(TypedDict, total=False):
    Key: str
    Size: int
    LastModified: datetime


class _Prefix(TypedDict):
    Prefix: str


class Refused(OSError):
    """A refusal worded here (a folder, a missing file, a limit): shown as it is."""


@dataclass(frozen=True)
class StoreRoot:
    """Where ``files/`` lives: a bucket, a prefix (no slash at either end, may be empty),
    and the non-secret options to reach it."""

    bucket: str
    prefix: str
    endpoint: str | None
    region: str | None

    def key(self, parts: list[str]) -> str:
        """The object key of ``files/<parts>`` (``parts`` already checked by files.py)."""
        return "/".join([self.prefix, *parts] if self.prefix else parts)

    def folder_key(self, parts: list[str]) -> str:
        """The key prefix of the folder ``files/<parts>``: ends with ``/`` (so
        ``team-a`` never reaches ``team-ab``), or empty at a bucket's top."""
        key = self.key(parts)
        return f"{key}/" if key else ""

    def url(self, parts: list[str]) -> str:
        """``s3://bucket/key``: where a person reads it (approval cards, results)."""
        return f"s3://{self.bucket}/{self.key(parts)}".rstrip("/")

    def words(self, parts: list[str] | None = None) -> str:
        """The place in words: the URL and the server when it is not AWS's own."""
        at = f" on {self.endpoint}" if self.endpoint else ""
        return f"{self.url(parts or [])} (object store{at})"


def root_of(settings: Settings, checked: bool = True) -> StoreRoot | None:
    """The store ``settings.files_uri`` names, or None: ``files/`` is the local folder.

    With no endpoint among the options, botocore would take ``$AWS_ENDPOINT_URL_S3``,
    ``$AWS_ENDPOINT_URL`` or a shared config file's ``endpoint_url``: that one is used here
    by name, so the approval card shows the server the write goes to, and (``checked``:
    for a call that reaches the store) it is checked as an option's is (``allow_http``), a
    ``StoreConfigError`` otherwise."""
    if not settings.files_uri:
        return None
    parts = urlsplit(settings.files_uri)
    options = settings.files_options
    endpoint = options.get("endpoint") or options.get("aws_endpoint")
    region = options.get("region") or options.get("aws_region")
    if not endpoint and (endpoint := _configured_endpoint(region)) and checked:
        object_store.check_files_options({**options, "endpoint": endpoint})
    return StoreRoot(bucket=parts.netloc, prefix=parts.path.strip("/"), endpoint=endpoint,
                     region=region)


def _configured_endpoint(region: str | None) -> str | None:
    """The S3 endpoint botocore takes when none is given, if not AWS's own: the
    environment's, else the one a shared config file (``$AWS_CONFIG_FILE``, else
    ``~/.aws/config``: a profile's ``endpoint_url`` or its ``services`` section) gives it."""
    if os.environ.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "").strip().lower() == "true":
        return None
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
        if value := os.environ.get(name, "").strip():
            return value
    config = os.path.expanduser(os.environ.get("AWS_CONFIG_FILE") or "~/.aws/config")
    try:
        changed = os.stat(config).st_mtime_ns
    except OSError:
        return None  # no file: botocore has nothing more to read
    asked = (config, changed, os.environ.get("AWS_PROFILE"), region)
    with _LOCK:
        if asked not in _CONFIGURED:
            _CONFIGURED.clear()
            _CONFIGURED[asked] = _endpoint_botocore_resolves(region)
        return _CONFIGURED[asked]


_CONFIGURED: dict[tuple[str, int, str | None, str | None], str | None] = {}


def _endpoint_botocore_resolves(region: str | None) -> str | None:
    """Ask botocore itself (a client made, nothing sent) where S3 calls would go; None
    for AWS's own servers, or when botocore cannot say (it is not installed, the profile
    is broken: the store's own calls then fail with words)."""
    try:
        from botocore.session import Session

        client = Session().create_client("s3", region_name=region or "us-east-1",
                                         aws_access_key_id="none", aws_secret_access_key="none")
    except Exception:  # botocore missing or the config unreadable
        return None
    url = str(client.meta.endpoint_url)
    host = (urlsplit(url).hostname or "").lower()
    return None if host == "amazonaws.com" or host.endswith(".amazonaws.com") else url


_FILESYSTEMS: dict[tuple[str | None, str | None], Any] = {}
_LOCK = threading.Lock()


def _filesystem(root: StoreRoot) -> Any:
    """fsspec's S3 file system for ``root``'s server, made once: no listing cache (another
    machine's writes must show at once), short timeouts, few retries (a run must return)."""
    with _LOCK:
        made = _FILESYSTEMS.get((root.endpoint, root.region))
        if made is None:
            import fsspec

            client: dict[str, str] = {}
            if root.endpoint:
                client["endpoint_url"] = root.endpoint
            if root.region:
                client["region_name"] = root.region
            made = fsspec.filesystem(
                "s3", client_kwargs=client, use_listings_cache=False, skip_instance_cache=True,
                config_kwargs={"connect_timeout": _CONNECT_TIMEOUT, "read_timeout": _READ_TIMEOUT,
                               "retries": {"max_attempts": _ATTEMPTS}})
            made.retries = 1  # s3fs's own loop would retry botocore's attempts 5 times over
            _FILESYSTEMS[(root.endpoint, root.region)] = made
        return made


def check_key(root: StoreRoot, parts: list[str], approved: bool = False) -> str:
    """The object key of ``files/<parts>``, or :class:`Refused` when a store would read it
    as something else (a backslash, a control character, ``?versionId=``, over 1024 bytes).
    For a write a person approves (``approved``), also when it has a character that draws
    nothing or reorders the text (:func:`~agent_kernel.core.unseen.draws_nothing`) or a
    word mixing Latin with Cyrillic or Greek look-alikes: a direction override U+202E or
    a Cyrillic ``е`` would make the approval card's ``where`` read as another place than
    the key written. Checked without a request or s3fs, so the approval
    precheck refuses what the write would (:func:`_path` checks it again)."""
    key = root.key(parts)
    odd = next((c for c in key if c == "\\" or ord(c) < 32 or 127 <= ord(c) < 160
                or (approved and draws_nothing(c))), None)
    if odd is not None:
        raise Refused(f"the path has a backslash or a control character (U+{ord(odd):04X}: "
                      "read differently by some object stores, or invisible on the approval "
                      "card); use plain file names")
    if approved and (mixed := mixed_words(key)):
        start, end, names = mixed[0]
        raise Refused(f"the name {key[start:end]!r} mixes alphabets ({names} among Latin "
                      "letters), so the approval card would show it as another name; use "
                      "plain file names")
    if len(key.encode("utf-8")) > 1024:
        raise Refused("the path is too long for an object store (its key may have at most "
                      "1024 bytes)")
    if "?versionId=" in key:  # the one part of a key s3fs's split_path reads as an option
        raise Refused(f"the path cannot be stored as one object key under {root.url([])}; "
                      "use plain file names")
    return key


def _path(fs: Any, root: StoreRoot, parts: list[str], approved: bool = False) -> str:
    """``bucket/key`` for fsspec, once s3fs is seen to read it back as exactly that bucket
    and key (a ``?versionId=`` or an ARN-like start would be parsed away otherwise)."""
    key = check_key(root, parts, approved)
    path = f"{root.bucket}/{key}"
    if tuple(fs.split_path(path)) != (root.bucket, key, None):
        raise Refused(f"the path cannot be stored as one object key under {root.url([])}; "
                      "use plain file names")
    return path


def _code(exc: BaseException) -> str:
    """The S3 error code behind ``exc`` (s3fs keeps botocore's error as the cause)."""
    seen: BaseException | None = exc
    while seen is not None:
        response = getattr(seen, "response", None)
        if isinstance(response, dict):
            return str(response.get("Error", {}).get("Code", ""))
        seen = seen.__cause__ or seen.__context__
    return ""


def _unreachable(exc: BaseException) -> bool:
    names = {t.__name__ for t in type(exc).__mro__}
    return bool(names & {"EndpointConnectionError", "ConnectionError", "ConnectTimeoutError",
                         "ReadTimeoutError", "TimeoutError", "ClientConnectorError",
                         "ServerDisconnectedError", "ClientOSError"})


def failure(exc: BaseException, root: StoreRoot, shown: str) -> OSError:
    """One sentence for a failed request on ``shown`` (``files/...``): never a traceback."""
    code = _code(exc)
    where = root.words()
    if code == "NoSuchBucket":
        return FileNotFoundError(f"the bucket {root.bucket!r} of {where} does not exist; create "
                                 "it, or point files_uri at one that does")
    if code in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken",
                "AllAccessDisabled", "InvalidToken"):
        return PermissionError(f"the object store refused access to {shown} in {where} "
                               f"({code}): check the credentials in the environment "
                               "(AWS_ACCESS_KEY_ID and its secret, a profile or a role)")
    if isinstance(exc, ImportError):
        return OSError(f"{where} needs fsspec's s3fs, which is not installed here: "
                       "pip install 'agent-kernel[files]'")
    if type(exc).__name__ in ("NoCredentialsError", "PartialCredentialsError"):
        return PermissionError(f"no credentials for {where} were found: set them in the "
                               "environment (AWS_ACCESS_KEY_ID and its secret, a profile or a "
                               "role); settings never hold them")
    if _unreachable(exc):
        return ConnectionError(f"{where} could not be reached ({type(exc).__name__}); "
                               f"{shown} is out of reach until the store answers")
    detail = code or type(exc).__name__
    return OSError(f"the object store failed on {shown} in {where} ({detail})")


def _missing_key(exc: BaseException) -> bool:
    return isinstance(exc, FileNotFoundError) and _code(exc) not in ("NoSuchBucket",)


class _Store:
    """One tool call's view of the store: the file system, the root, the words."""

    def __init__(self, root: StoreRoot) -> None:
        self.root = root
        self.fs = _filesystem(root)

    def head(self, parts: list[str]) -> _Info | None:
        """The object at ``files/<parts>`` (size, ETag), ``{"type": "directory"}`` when
        keys lie below it, or None when neither."""
        path = _path(self.fs, self.root, parts)
        try:
            info: _Info = self.fs.info(path)
        except FileNotFoundError as exc:
            if _missing_key(exc):
                return None
            raise
        return info

    def is_folder(self, parts: list[str]) -> bool:
        found = self.fs.call_s3("list_objects_v2", Bucket=self.root.bucket,
                                Prefix=self.root.folder_key(parts), MaxKeys=1)
        return bool(found.get("KeyCount") or found.get("Contents"))

    def read(self, parts: list[str], limit: int) -> tuple[bytes, int]:
        """The first ``limit + 1`` bytes at most (one ranged GET) and the object's size (a
        HEAD only when there was more)."""
        shown = shown_of(parts)
        path = _path(self.fs, self.root, parts)
        try:
            data: bytes = self.fs.cat_file(path, start=0, end=limit + 1)
        except FileNotFoundError as exc:
            if not _missing_key(exc):
                raise
            if self.is_folder(parts):
                raise Refused(f"{shown} is a folder, not a file") from None
            raise Refused(f"no such file: {shown}") from None
        except OSError as exc:
            if _code(exc) != "InvalidRange":  # the range of an empty object
                raise
            return b"", 0
        if len(data) <= limit:
            return data, len(data)
        info = self.head(parts)
        return data, int(info.get("size") or len(data)) if info else len(data)

    def write(self, parts: list[str], data: bytes, append: bool) -> int:
        """Put ``data`` at ``files/<parts>`` (appended to what is there); the bytes sent."""
        shown = shown_of(parts)
        path = _path(self.fs, self.root, parts, approved=True)
        if not append:
            if self.is_folder(parts):
                raise Refused(f"{shown} is a folder, not a file")
            self.fs.pipe_file(path, data)
            return len(data)
        for _attempt in range(_APPEND_TRIES):
            info = self.head(parts)
            if info is not None and info.get("type") == "directory":
                raise Refused(f"{shown} is a folder, not a file")
            size = int(info.get("size") or 0) if info else 0
            if size + len(data) > APPEND_MAX_BYTES:
                raise Refused(
                    f"{shown} would grow to {size + len(data)} bytes; an append on the object "
                    f"store rewrites the whole file, which it does up to {APPEND_MAX_BYTES} "
                    "bytes (files_store.APPEND_MAX_BYTES): write a new file instead")
            # never more than may be rewritten, whatever another writer put meanwhile
            old: bytes = self.fs.cat_file(path, start=0, end=APPEND_MAX_BYTES + 1) if size else b""
            if len(old) != size:  # changed between the HEAD and the GET: look again
                continue
            condition = ({"IfMatch": info["ETag"]} if info and info.get("ETag")
                         else {"IfNoneMatch": "*"})
            try:
                self.fs.pipe_file(path, old + data, **condition)
            except OSError as exc:
                if _code(exc) in ("PreconditionFailed", "ConditionalRequestConflict") or (
                        isinstance(exc, FileExistsError)):
                    # another writer came between: wait a little, read again, append again
                    time.sleep(_APPEND_PAUSE * (_attempt + 1) * (0.5 + random.random()))
                    continue
                raise
            return len(data)
        raise Refused(f"{shown} kept changing while it was appended to ({_APPEND_TRIES} "
                      "tries); nothing was added: try again")

    def upload(self, parts: list[str], local: str) -> None:
        """Put the local file ``local`` at ``files/<parts>`` (a finished download)."""
        info = self.head(parts)
        if info is not None and info.get("type") == "directory":
            raise Refused(f"{shown_of(parts)} is a folder, not a file")
        self.fs.put_file(local, _path(self.fs, self.root, parts, approved=True))

    def _pages(self, prefix: str, delimiter: bool, budget: int) -> Iterator[_Listed]:
        """Pages of ``list_objects_v2`` under ``prefix`` while ``budget`` keys remain."""
        token: str | None = None
        while budget > 0:
            asked: dict[str, str | int] = {"Bucket": self.root.bucket, "Prefix": prefix,
                                           "MaxKeys": min(PAGE_KEYS, budget)}
            if delimiter:
                asked["Delimiter"] = "/"
            if token:
                asked["ContinuationToken"] = token
            page: _Listed = self.fs.call_s3("list_objects_v2", **asked)
            got = len(page.get("Contents") or []) + len(page.get("CommonPrefixes") or [])
            # a page that says "more" costs a full one: a server that pages forever with
            # few or no keys is asked a bounded number of times
            budget -= max(got, int(asked["MaxKeys"])) if page.get("IsTruncated") else got
            yield page
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return
        yield {"budget_spent": True}

    def list(self, parts: list[str], limit: int,
             denied: Callable[[str], bool]) -> tuple[list[dict[str, str]], str | None]:
        """Entries of the folder ``files/<parts>`` (at most ``limit``, deny-listed names
        left out) and why the list stopped early, if it did."""
        prefix = self.root.folder_key(parts)
        where = shown_of(parts)
        entries: list[dict[str, str]] = []
        seen_any = False
        for page in self._pages(prefix, True, limit * SCAN_FACTOR + 1):
            if page.get("budget_spent"):
                return entries, "scanned"
            found = [(p["Prefix"][len(prefix):].rstrip("/"), "directory")
                     for p in page.get("CommonPrefixes") or []]
            found += [(o["Key"][len(prefix):], "file") for o in page.get("Contents") or []]
            for name, kind in found:
                seen_any = True
                if not name or denied(f"{where}/{name}"):
                    continue  # the folder's own marker, or a protected name
                if len(entries) >= limit:
                    return entries, "limit"
                entries.append({"name": name, "type": kind})
        if parts and not seen_any:
            info = self.head(parts)
            if info is not None and info.get("type") != "directory":
                raise Refused(f"{where} is not a folder; read it with read_file")
            raise Refused(f"no such folder: {where}")
        return entries, None

    def count(self, limit: int, denied: Callable[[str], bool],
              depth: int) -> tuple[int, int, int, float, bool]:
        """Files, folders, bytes and the newest change below ``files/``, deny-listed names
        (and what lies below them) left out, and keys in ``depth`` folders or more too (as
        the local walk stops there); True when it stopped early or left a key out."""
        prefix = self.root.folder_key([])
        files = size = 0
        folders: set[str] = set()
        newest = 0.0
        deeper = False
        for page in self._pages(prefix, False, limit * SCAN_FACTOR + 1):
            if page.get("budget_spent"):
                return files, len(folders), size, newest, True
            for item in page.get("Contents") or []:
                names = item["Key"][len(prefix):].split("/")
                if not all(names):  # a folder marker ("a/") or an odd key: not a file
                    continue
                if len(names) > depth:
                    deeper = True
                    continue
                new = _new_folders(names, folders, denied)
                if new is None:
                    continue
                if files + len(folders) + len(new) + 1 > limit:
                    return files, len(folders), size, newest, True
                folders.update(new)
                files += 1
                size += int(item.get("Size") or 0)
                changed = item.get("LastModified")
                if isinstance(changed, datetime):
                    newest = max(newest, changed.timestamp())
        return files, len(folders), size, newest, deeper


def _new_folders(names: list[str], folders: set[str],
                 denied: Callable[[str], bool]) -> list[str] | None:
    """The folders of ``files/<names>`` not yet in ``folders``, or None when the file or one
    of its folders is deny-listed. Each folder's name is checked once, when first met (the
    folders already counted passed): a bucket of deep keys costs a check per new folder,
    not one per step of every key."""
    path = "/".join([CACHE, *names])
    ends = list(accumulate((len(n) + 1 for n in names[:-1]), initial=len(CACHE)))[1:]
    if ends and path[:ends[-1]] in folders:  # most keys: a folder already counted
        ends = []
    new: list[str] = []
    for end in ends:
        step = path[:end]
        if step in folders:
            continue
        if denied(step):
            return None
        new.append(step)
    return None if denied(path) else new

CACHE = "files"


def shown_of(parts: list[str]) -> str:
    """``files/<parts>``: the path results show, the same as for the local folder."""
    return "/".join([CACHE, *parts])


def call(root: StoreRoot, shown: str, work: Callable[[_Store], Any]) -> Any:
    """Run ``work`` on the store; any failure of the store becomes one sentence (our own
    refusals, already worded, pass as they are)."""
    try:
        return work(_Store(root))
    except Refused:
        raise
    except Exception as exc:  # botocore, aiohttp, s3fs: words, never a traceback
        raise failure(exc, root, shown) from None


__all__ = ["APPEND_MAX_BYTES", "Refused", "StoreRoot", "call", "check_key", "failure", "root_of",
           "shown_of"]
