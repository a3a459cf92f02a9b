"""The project's embedders in LanceDB's embedding registry (by name, never by path).

A table built with the default model records ``agent-kernel-minilm`` in its
schema, one built through litellm records ``agent-kernel-litellm`` and the
model string, so the table carries no machine-specific path, URL or key and
any process that imports this module can embed queries for it.
"""

from __future__ import annotations

import threading
from typing import Any

from agent_kernel.memory.embeddings import Embedder, LiteLLMEmbedder

MINILM_FUNCTION = "agent-kernel-minilm"
LITELLM_FUNCTION = "agent-kernel-litellm"
_registered = False
_lock = threading.Lock()


def embedder_of(function: object) -> Embedder | None:
    """The embedder behind one of our registered LanceDB functions (None for another's)."""
    method = getattr(function, "embedder", None)
    made = method() if callable(method) else None
    return made if isinstance(made, Embedder) else None


def register_functions() -> None:
    """Register both embedders with LanceDB's registry (once per process)."""
    global _registered
    with _lock:
        if _registered:
            return
        from lancedb.embeddings import TextEmbeddingFunction, get_registry
        from pydantic import PrivateAttr

        class AgentKernelMiniLM(TextEmbeddingFunction):
            """all-MiniLM-L6-v2 int8 from the installed wheels (see memory/embeddings.py)."""

            _embedder: Any = PrivateAttr(default=None)

            def embedder(self) -> Embedder:
                if self._embedder is None:
                    from agent_kernel.memory.embeddings import MiniLMEmbedder

                    self._embedder = MiniLMEmbedder()
                return self._embedder  # type: ignore[no-any-return]

            def ndims(self) -> int:
                return 384

            def generate_embeddings(self, texts: Any, *args: object, **kwargs: object) -> list[Any]:
                return list(self.embedder().embed([str(t) for t in texts]))

        class AgentKernelLiteLLM(TextEmbeddingFunction):
            """An embedding model reached through litellm; keys stay in the environment."""

            model: str
            _embedder: Any = PrivateAttr(default=None)

            def embedder(self) -> Embedder:
                if self._embedder is None:
                    self._embedder = LiteLLMEmbedder(self.model)
                return self._embedder  # type: ignore[no-any-return]

            def ndims(self) -> int:
                return self.embedder().dim

            def generate_embeddings(self, texts: Any, *args: object, **kwargs: object) -> list[Any]:
                return list(self.embedder().embed([str(t) for t in texts]))

        registry = get_registry()
        registry.register(MINILM_FUNCTION)(AgentKernelMiniLM)
        registry.register(LITELLM_FUNCTION)(AgentKernelLiteLLM)
        _registered = True


def function_for(embedder: Embedder) -> Any:
    """The registered LanceDB embedding function for one of our embedders."""
    from lancedb.embeddings import get_registry

    register_functions()
    if isinstance(embedder, LiteLLMEmbedder):
        func = get_registry().get(LITELLM_FUNCTION).create(model=embedder.model)
    else:
        func = get_registry().get(MINILM_FUNCTION).create()
    func._embedder = embedder
    return func
