"""What a provider's failure means for the person: retry or not, and what to do.

litellm raises one exception class per failure, each with a message that often
nests its own cause. :func:`classify` says whether a failure is worth retrying
(rate limits, 5xx, timeouts, cut streams) or not (a refused key, a missing
model, a bad request), and words it once, naming the variable to set when a
key is missing or refused (from litellm's own provider data, so no list of
ours goes stale).
"""

from __future__ import annotations

import asyncio
import os
import re
import ssl
from collections.abc import Iterator

from agent_kernel.engine.models.litellm_loader import load_litellm


class ProviderError(RuntimeError):
    """The model provider failed and retries did not help."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False):
        super().__init__(message)
        self.status = status
        self.retryable = retryable


class BrokenStream(RuntimeError):
    """The stream ended before the model said it had finished."""


# litellm 1.110 says so itself when a stream stops without a finish_reason; older
# releases end the stream quietly and llm.py raises BrokenStream.
_CUT_STREAM = re.compile(r"(?i)stream ended before a finish_reason")
CUT_STREAM_WORDS = "the stream ended before the model finished its answer"

_MISSING_KEY = re.compile(r"(?i)missing credentials|api_key client option must be set|"
                          r"no api key|api[_ ]key (?:is )?(?:not set|missing|required)")


_REFUSED = re.compile(r"(?i)connection refused|connect call failed|ECONNREFUSED|errno 111\b")
_HOST_PORT = re.compile(r"\bhost ([\w.\-]+:\d+)|\('([\d.:a-f]+)', (\d+)\)")
_OBJECT_AT = re.compile(r"\s*\bssl:<[^<>]*>|<([\w.]+) object at 0x[0-9a-fA-F]+>")
# Servers people run themselves: where each listens unless api_base says otherwise.
_LOCAL_SERVERS = {"ollama": ("Ollama", "http://localhost:11434"),
                  "ollama_chat": ("Ollama", "http://localhost:11434"),
                  "lm_studio": ("LM Studio", "http://localhost:1234/v1"),
                  "hosted_vllm": ("the vLLM server", None), "llamafile": ("llamafile", None)}


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it was raised from, or while, down to the first cause."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _refused(exc: BaseException) -> bool:
    """The connection was refused: nothing listens there, and retrying will not help."""
    return any(isinstance(current, ConnectionRefusedError) or _REFUSED.search(str(current))
               for current in _chain(exc))


def untrusted_certificate(exc: BaseException) -> str | None:
    """One sentence for a server whose TLS certificate could not be verified (the request,
    and the key in it, never left), or None when that is not the failure. Retrying will
    not help; both model paths raise it from the same ``ssl`` error."""
    failed = [e for e in _chain(exc) if isinstance(e, ssl.SSLCertVerificationError)]
    if failed:  # aiohttp's own error is one too, without ssl's reason: the deepest has it
        why = getattr(failed[-1], "verify_message", None) or "not trusted"
        return (f"the model server's certificate could not be verified ({why}), so "
                "nothing was sent: check api_base; a server whose certificate comes from an "
                "authority of its own needs that authority trusted (set SSL_CERT_FILE to its "
                "certificate file)")
    return None


def nothing_listening(exc: BaseException, model: str, api_base: str | None) -> str | None:
    """One sentence for a model server that is not running ("nothing is listening at
    http://localhost:11434 — is Ollama running?"), or None when that is not the failure."""
    if not _refused(exc):
        return None
    provider = model.split("/", 1)[0] if "/" in model else ""
    server, default = _LOCAL_SERVERS.get(provider, ("the model server", None))
    where = api_base or default
    if where is None:
        found = _HOST_PORT.search(str(exc))
        where = (found.group(1) or f"{found.group(2)}:{found.group(3)}") if found else None
    return (f"nothing is listening at {where} — is {server} running?" if where else
            f"the connection was refused — is {server} running?")


def classify(exc: BaseException, model: str = "", key_given: bool = False,
             api_base: str | None = None) -> tuple[bool, int | None, str]:
    """(retryable, status, short message) for an exception from litellm."""
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    if (refused := nothing_listening(exc, model, api_base)) is not None:
        return False, None, refused  # a refused connection is refused again at once
    if (untrusted := untrusted_certificate(exc)) is not None:
        return False, None, untrusted
    text = said_once(str(exc))
    if len(text) > 300:
        text = text[:297] + "..."
    if isinstance(exc, BrokenStream):
        return True, None, str(exc)
    if _CUT_STREAM.search(text):
        return True, status, CUT_STREAM_WORDS
    if status in (401, 403) or "Authentication" in name or "PermissionDenied" in name or \
            _MISSING_KEY.search(text):
        said = text.split(" - ", 1)[-1][:200]
        advice = key_advice(model, status, key_given)
        return False, status, f"{advice} (the provider said: {said})"
    if "MidStream" in name or "RemoteProtocol" in name or "ReadError" in name:
        return True, status, f"the stream broke: {text}"
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) or "Timeout" in name:
        return True, status, f"the request timed out ({text})"
    if status == 429 or "RateLimit" in name:
        return True, 429, f"rate limited (429): {text}"
    if isinstance(status, int) and status >= 500:
        return True, status, f"server error ({status}): {text}"
    if "APIConnectionError" in name or "ServiceUnavailable" in name or "InternalServer" in name:
        return True, status, f"connection problem: {text}"
    if isinstance(status, int):
        return False, status, f"request refused ({status}): {text}"
    return False, status, f"{name}: {text}"


_ERROR_NAME = r"[A-Z]\w*(?:Error|Exception|Timeout)"
_NAME_CHAIN = re.compile(rf"^(?:{_ERROR_NAME}: )+(?={_ERROR_NAME}: )")
_RESTATED = re.compile(r"\s+(?:Original exception|Error_str): ")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def said_once(text: str) -> str:
    """litellm's message, each part once.

    litellm nests an error's text in its wrappers' ("MidStreamFallbackError:
    APIConnectionError: APIConnectionError: … Original exception: …", "Request
    timed out. Error_str: Request timed out."): its ``litellm.`` prefixes go,
    a chain of class names keeps its last, and a restated tail or sentence goes.
    """
    text = re.sub(r"\blitellm\.(?=[A-Z])", "", text).strip()  # its URLs stay whole
    text = _OBJECT_AT.sub(lambda m: m.group(1) or "", text)  # no object addresses
    parts = _RESTATED.split(text)
    text = parts[0]
    for part in parts[1:]:
        core = _NAME_CHAIN.sub("", part).strip()
        core = re.sub(rf"^{_ERROR_NAME}: ", "", core)
        if core[:60] not in text:
            text += f" ({part})"
    text = _NAME_CHAIN.sub("", text)
    kept: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        if sentence not in kept:
            kept.append(sentence)
    return " ".join(kept)


def key_advice(model: str, status: int | None, key_given: bool = False) -> str:
    """Which variable to set for ``model``'s provider, from litellm's own provider data."""
    provider, missing, present = "the provider", [], []
    try:
        litellm = load_litellm()
        provider = str(litellm.get_llm_provider(model)[1])
        if not key_given:
            missing = list(litellm.validate_environment(model).get("missing_keys") or [])
    except Exception:  # an unknown model string: say what we can
        pass
    if not missing:
        from agent_kernel.core.redaction import secret_name

        prefix = provider.upper().replace("-", "_") + "_"
        present = sorted(k for k in os.environ if k.startswith(prefix) and secret_name(k))
    switch = ("or switch to the offline demo model (`%agent_config --model demo` in a "
              "notebook, `--model demo` on the command line)")
    if missing:
        return (f"no API key for {provider}: set {' and '.join(missing)} in the environment "
                f"(or pass api_key), {switch}")
    said = f" ({status})" if status else ""
    where = " given as api_key" if key_given else (
        f" in {', '.join(present)}" if present else "")
    return (f"{provider} refused the API key{said}: check the key{where} and that it may use "
            f"this model, {switch}")


def retry_after(exc: BaseException) -> float | None:
    """The server's ``Retry-After`` in seconds (litellm keeps the headers aside)."""
    for headers in (getattr(exc, "litellm_response_headers", None),
                    getattr(getattr(exc, "response", None), "headers", None),
                    getattr(exc, "headers", None)):
        get = getattr(headers, "get", None)
        value = get("retry-after") if callable(get) else None
        if value is not None:
            try:
                return max(0.0, float(value))
            except ValueError:
                return None
    return None
