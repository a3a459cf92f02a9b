"""The fast path: one turn over the openai SDK when litellm says the provider speaks OpenAI's API.

litellm stays the model door: it names the provider (``get_llm_provider``), checks
names, counts tokens, gives the window and prices the cost. But its call itself costs
several times the HTTP exchange (a logging object, callbacks, cost and token
bookkeeping on every streamed chunk, its own chunk objects). Where litellm routes a
model to its plain OpenAI handler (the OpenAI API itself, or ``openai/...`` at an
``api_base``), that handler is the ``openai`` SDK that litellm depends on, so one turn
goes straight through the SDK instead (:func:`route` says when).

Only what litellm would send unchanged goes this way: a model whose litellm config is
the plain OpenAI one (not o-series, GPT-5 or a Responses-API model, whose parameters
litellm rewrites), ``extra_completion_args`` keys from :data:`PLAIN_ARGS` only (litellm
handles others itself: ``num_retries``, ``fallbacks``, ``metadata``, ``drop_params``,
...), a key found where litellm looks, and no litellm callbacks registered (the fast
path would skip them). Anything else, or ``Settings(openai_fast_path=False)``, goes
through ``litellm.acompletion``.

Failures are turned into the exceptions litellm would raise for the same response
(:func:`litellm_error`), so retries, ``Retry-After`` and the words a person reads
(``provider_errors.classify``) are the same on both paths. One SDK client (one
connection pool, on aiohttp's transport: :func:`_pool`) serves every run and agent per
base URL, key and event loop (:func:`client`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import hashlib
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_kernel.core.config import Settings
from agent_kernel.engine.models.base import ChatMessage, PerSchemaList, ToolSchema

if TYPE_CHECKING:
    import ssl

    import httpx2
    from openai import AsyncOpenAI

PLAIN_ARGS = frozenset({
    "frequency_penalty", "logit_bias", "logprobs", "max_completion_tokens", "max_tokens", "n",
    "parallel_tool_calls", "presence_penalty", "response_format", "seed", "stop",
    "temperature", "tool_choice", "top_logprobs", "top_p", "user",
})
"""``extra_completion_args`` keys litellm's plain OpenAI handler passes on as they are."""

OPENAI_API = "https://api.openai.com/v1"
POOL_CONNECTIONS = 64
"""Connections one shared client keeps open at most (20 concurrent runs need 20)."""
POOL_KEEPALIVE = 32

requests_sent = 0
"""Requests this process sent by the fast path (tests tell the two paths apart by it)."""
_stream_cls: Any = None
"""The SDK's ``AsyncStream[object]``, made once: its chunks come as the JSON the server
sent (dicts), not as ``ChatCompletionChunk`` models (building a model of each chunk was
about a tenth of a fan-out's time on the loop; the stream's errors, timeouts and
connection handling are the SDK's all the same)."""
_tls_context: ssl.SSLContext | None = None
_eligible: dict[tuple[str, str | None], str | None] = {}
_clients: dict[asyncio.AbstractEventLoop, dict[tuple[str, str, str | None], AsyncOpenAI]] = {}
"""The shared clients by event loop (a client's connections belong to one loop). Not weak:
a client refers to its loop through its connections, so the loop would never go; a
closed loop's clients are let go (:func:`_let_go`) when a new loop makes its first."""


@dataclass(frozen=True)
class Route:
    """Where a fast-path turn goes: the model name the server reads, its base URL, the key."""

    model: str
    base_url: str
    api_key: str
    organization: str | None

    def __repr__(self) -> str:  # the key never reaches a repr
        return f"Route(model={self.model!r}, base_url={self.base_url!r})"


def _openai_model(model: str, api_base: str | None, litellm: Any) -> str | None:
    """The name ``litellm`` sends for ``model`` when its plain OpenAI handler serves it, else
    None."""
    key = (model, api_base)
    if key in _eligible:
        return _eligible[key]
    name: str | None = None
    try:
        from litellm.llms.openai.chat.gpt_transformation import (
            OpenAIGPTConfig,
            OpenAIUnknownModelConfig,
        )
        from litellm.types.utils import LlmProviders
        from litellm.utils import ProviderConfigManager

        sent, provider, _, _ = litellm.get_llm_provider(model, api_base=api_base)
        config = ProviderConfigManager.get_provider_chat_config(sent, LlmProviders.OPENAI) \
            if provider == "openai" else None
        plain = type(config) in (OpenAIGPTConfig, OpenAIUnknownModelConfig)
        mode = (litellm.model_cost.get(sent) or {}).get("mode")
        if plain and mode in (None, "chat") and not sent.startswith("responses/"):
            name = sent
    except Exception:  # litellm's own path will say what is wrong with the name
        name = None
    _eligible[key] = name
    return name


def _callbacks(litellm: Any) -> bool:
    """Whether anyone registered litellm callbacks (logging, tracing) the fast path would skip."""
    return any(getattr(litellm, n, None) for n in (
        "callbacks", "success_callback", "failure_callback", "input_callback",
        "_async_success_callback", "_async_failure_callback", "_async_input_callback"))


def route(model: str, settings: Settings, litellm: Any) -> Route | None:
    """The fast path's route for ``model``, or None when the turn goes through ``litellm``
    (given by the caller, loaded: this module never imports the loader)."""
    if not settings.openai_fast_path or not PLAIN_ARGS.issuperset(settings.extra_completion_args):
        return None
    name = _openai_model(model, settings.api_base, litellm)
    if name is None:
        return None
    if _callbacks(litellm) or litellm.headers:
        return None
    # where litellm's OpenAI branch looks, in its order
    base = (settings.api_base or litellm.api_base or os.environ.get("OPENAI_BASE_URL")
            or os.environ.get("OPENAI_API_BASE") or OPENAI_API)
    key = (settings.api_key or litellm.api_key or litellm.openai_key
           or os.environ.get("OPENAI_API_KEY"))
    if not key:  # litellm words a missing key; let it
        return None
    organization = litellm.organization or os.environ.get("OPENAI_ORGANIZATION")
    return Route(name, base, key, organization)


def _tls() -> ssl.SSLContext:
    """The TLS context of every client, made once: making one reads the trusted certificates
    (about 45 ms), which a new event loop (``Agent.run`` outside a kernel) would pay again."""
    global _tls_context
    if _tls_context is None:
        import httpx2

        _tls_context = httpx2.create_ssl_context()
    return _tls_context


def prepare(litellm: Any) -> None:
    """Import what the fast path's first request would (the SDK's chat types, the HTTP
    transport: ~60 ms) and make the TLS context; ``litellm_loader`` calls it in its load."""
    import aiohttp.client  # noqa: F401
    import anyio._backends._asyncio  # noqa: F401
    import openai._base_client  # noqa: F401
    import openai.resources.chat  # noqa: F401
    import openai.types.chat  # noqa: F401
    from litellm.litellm_core_utils import exception_mapping_utils  # noqa: F401

    _openai_model("gpt-4o-mini", None, litellm)  # its provider configs, imported on first use
    _tls()
    with contextlib.suppress(ImportError, AttributeError):
        _map_errors()  # imports the SDK's aiohttp transport


def as_sent(messages: list[ChatMessage]) -> list[ChatMessage]:
    """The messages as litellm sends them: without keys whose value is None (an assistant
    turn of only tool calls has no ``content``); the others are passed as they are."""
    return [m if None not in m.values() else  # type: ignore[misc]
            {k: v for k, v in m.items() if v is not None} for m in messages]


def client(where: Route) -> AsyncOpenAI:
    """The one SDK client (one connection pool) of this base URL and key on this event loop.

    Made once and shared by every run and agent on the loop; a client cannot move between
    loops (its connections belong to one), so each loop has its own, dropped once the loop
    is closed.
    """
    loop = asyncio.get_running_loop()
    mine = _clients.get(loop)
    if mine is None:
        for ended in [other for other in _clients if other.is_closed()]:
            # asyncio.run's loops (Agent.run outside a kernel)
            _let_go(_clients.pop(ended).values())
        mine = _clients[loop] = {}
    # the dict holds a digest of the key, not the key (the client itself keeps it)
    slot = (where.base_url, hashlib.sha256(where.api_key.encode()).hexdigest(),
            where.organization)
    made = mine.get(slot)
    if made is None:
        from openai import AsyncOpenAI

        made = mine[slot] = AsyncOpenAI(api_key=where.api_key, base_url=where.base_url,
                                        organization=where.organization, max_retries=0,
                                        http_client=_pool())
    return made


def _pool() -> httpx2.AsyncClient:
    """The SDK's HTTP client on aiohttp's transport (``DefaultAioHttpClient``, the SDK's
    own option; aiohttp is litellm's dependency and its default transport too): the same
    requests, headers and timeouts as the httpx transport, for about a seventh less CPU a
    call (aiohttp parses HTTP in C; docs/performance.md, "The HTTP transport (eighth
    session)"). Its errors are mapped as the httpx transport raises them
    (:func:`_map_errors`)."""
    import httpx2  # the openai SDK's HTTP client
    from openai import DefaultAsyncHttpxClient

    limits = httpx2.Limits(max_connections=POOL_CONNECTIONS,
                           max_keepalive_connections=POOL_KEEPALIVE)
    try:
        from openai import DefaultAioHttpClient

        _map_errors()
    except (ImportError, AttributeError):  # an SDK without it: its httpx transport
        return DefaultAsyncHttpxClient(verify=_tls(), limits=limits)
    return DefaultAioHttpClient(verify=_tls(), limits=limits)


_mapped = False


def _map_errors() -> None:
    """Map aiohttp's failures to the httpx errors the httpx transport raises for them, so
    the SDK, litellm's mapping and our retries read them as before: a refused connection
    is a ``ConnectError`` and a connection the server drops a ``NetworkError`` (both the
    SDK's ``APIConnectionError``), not the timeouts the SDK's vendored map makes of every
    ``ClientConnectionError``; aiohttp's timeouts stay timeouts. The table is the vendored
    transport's own, read at each failure; only its entries change."""
    global _mapped
    if _mapped:
        return
    import aiohttp
    import httpx2
    from openai._vendor.httpx_aiohttp import transport

    table = transport.AIOHTTP_EXC_MAP
    table[aiohttp.ClientConnectionError] = httpx2.NetworkError
    table[aiohttp.ClientConnectorError] = httpx2.ConnectError
    table[aiohttp.ConnectionTimeoutError] = httpx2.ConnectTimeout
    _mapped = True


def _let_go(clients: Iterable[AsyncOpenAI]) -> None:
    """Close the connections of clients whose loop has ended (or is dropped): on a closed
    loop aiohttp only marks them closed, and the sockets go with the objects; unclosed,
    aiohttp would print a warning for each when they are collected."""
    for made in clients:
        transport = getattr(getattr(made, "_client", None), "_transport", None)
        session = getattr(transport, "client", None)
        connector = getattr(session, "connector", None)
        if connector is not None and not connector.closed:
            connector._close()  # the sync part of its (async) close: no loop to await on


@atexit.register
def _at_exit() -> None:
    """At the interpreter's exit every client whose loop no longer runs (an ended
    ``asyncio.run``'s, a kernel's stopped loop) is let go quietly."""
    for loop, mine in list(_clients.items()):
        if not loop.is_running():
            _let_go(mine.values())


def encoded(body: dict[str, object]) -> bytes:
    """``body`` as the JSON the SDK would send (its ``openapi_dumps``), with the tool
    schemas' part written once per schema list (:func:`_tools_json`): they are most of a
    request's bytes (19 tools, 9.9 of a Worker's 10 KB) and the same list every call."""
    from openai._utils._json import openapi_dumps

    tools = body.get("tools")
    if not isinstance(tools, list) or not tools:
        return openapi_dumps(body)
    head = openapi_dumps({k: v for k, v in body.items() if k != "tools"})
    return b"".join((head[:-1], b',"tools":' if len(head) > 2 else b'"tools":',
                     _tools_json(tools), b"}"))


def _openapi_json(tools: list[ToolSchema]) -> bytes:
    from openai._utils._json import openapi_dumps

    return openapi_dumps(tools)


_tools_json = PerSchemaList(_openapi_json)
"""A schema list's JSON as the SDK writes it, once per list (:class:`PerSchemaList`)."""


async def send(where: Route, body: dict[str, object], timeout: float) -> Any:
    """POST the chat request as the SDK's ``chat.completions.create`` does, minus its
    transform of the body (a walk over every message and tool schema, ~1 ms a call with
    the default tools, for a body that is already plain JSON); litellm posts the same way.
    The body goes as bytes (:func:`encoded`, as the SDK's ``content``). A stream
    (``body["stream"]``) comes back as the SDK's ``AsyncStream`` of chunks, each the dict
    the server sent (``llm._read_chunks`` reads them)."""
    global _stream_cls
    from openai._base_client import make_request_options
    from openai.types.chat import ChatCompletion

    if _stream_cls is None:
        from openai import AsyncStream

        _stream_cls = AsyncStream[object]
    _say_asyncio()
    return await client(where).post(
        "/chat/completions", content=encoded(body), cast_to=ChatCompletion,
        options=make_request_options(timeout=timeout, security={"bearer_auth": True}),
        stream=bool(body.get("stream")), stream_cls=_stream_cls)


def _say_asyncio() -> None:
    """Tell sniffio, in this run's context, that it runs on asyncio. anyio and httpcore ask
    it which loop they are on a dozen times a request, and each answer it works out (the
    running task, looked up) was ~4 % of a team's fan-out on the loop; set, the answer is
    one context variable read. The fast path runs on asyncio only (:func:`client`)."""
    with contextlib.suppress(ImportError):  # the openai SDK's dependency; optional here
        import sniffio

        if sniffio.current_async_library_cvar.get() is None:
            sniffio.current_async_library_cvar.set("asyncio")


def litellm_error(exc: BaseException, model: str, sent: str, timeout: float,
                  started: float, *, streamed: bool = True, mid_stream: bool = False,
                  generated: str = "") -> BaseException:
    """The exception litellm's OpenAI handler would raise for ``exc`` of the SDK.

    Before the stream (or of a whole ``streamed=False`` answer): wrapped in litellm's
    ``OpenAIError`` as its streaming or non-streaming handler does, then
    mapped by ``exception_type`` as ``acompletion`` does. Mid-stream: mapped, then a
    ``MidStreamFallbackError`` unless a 4xx other than 429, as its stream wrapper does.
    """
    try:
        import openai
        from litellm.exceptions import MidStreamFallbackError
        from litellm.litellm_core_utils.exception_mapping_utils import exception_type
        from litellm.llms.openai.common_utils import OpenAIError, upstream_error_response
    except ImportError:  # another litellm: the words may differ, the retries do not
        return exc
    if isinstance(exc, (asyncio.CancelledError, BrokenPipeError)) or not isinstance(exc, Exception):
        return exc
    if mid_stream:
        try:
            mapped: Exception = exception_type(model=sent, custom_llm_provider="openai",
                                               original_exception=exc)
        except Exception as mapping_error:
            mapped = mapping_error
        status = getattr(mapped, "status_code", None)
        timed_out = _transport_timeout(exc)
        if not timed_out and isinstance(status, int) and 400 <= status < 500 and status != 429:
            return mapped
        return MidStreamFallbackError(message=str(mapped), model=sent, llm_provider="openai",
                                      original_exception=mapped, generated_content=generated,
                                      is_pre_first_chunk=not generated)
    if isinstance(exc, openai.APITimeoutError):
        exc.message += (f" - timeout value={timeout}, time taken="
                        f"{round(time.time() - started, 2)} seconds")
    headers = getattr(exc, "headers", None)
    response = getattr(exc, "response", None)
    if headers is None and response is not None:
        headers = getattr(response, "headers", None)
    body = getattr(exc, "body", None)
    if not streamed:  # litellm's non-streaming handler wraps every failure one way
        wrapped = OpenAIError(status_code=getattr(exc, "status_code", 500),
                              message=getattr(exc, "message", str(exc)),
                              response=upstream_error_response(exc), headers=headers, body=body)
    elif type(exc).__name__ == "ReadTimeout":
        wrapped = OpenAIError(status_code=408, message="ReadTimeout", headers=headers, body=body)
    elif hasattr(exc, "status_code"):
        wrapped = OpenAIError(status_code=exc.status_code, message=str(exc),
                              response=upstream_error_response(exc), headers=headers, body=body)
    else:
        wrapped = OpenAIError(status_code=500, message=f"{exc}", headers=headers, body=body)
    try:
        return exception_type(model=model, custom_llm_provider="openai", original_exception=wrapped)
    except Exception as mapped_error:
        return mapped_error


def _transport_timeout(exc: BaseException) -> bool:
    """A read or connect timeout of the HTTP client (litellm's stream wrapper retries it)."""
    import httpx
    import httpx2

    return isinstance(exc, (httpx.TimeoutException, httpx2.TimeoutException))
