"""Memory: LanceDB tables in the workspace, searched by meaning and keywords together.

``service.MemoryStore`` is the API (remember, search, recent, forget, history);
``store`` is the only module that imports lancedb, ``embeddings`` the only one
that imports onnxruntime and tokenizers, ``filters`` turns model input into
safe ``where`` clauses, ``markdown`` keeps the readable mirrors, ``history``
records each run's prompt and reply in the ``journal`` (read into LanceDB
when needed), and ``magics`` adds ``%agent_memory``.
Importing this package loads none of the heavy libraries.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MemoryStore"]


def __getattr__(name: str) -> Any:
    if name == "MemoryStore":
        from agent_kernel.memory.service import MemoryStore

        return MemoryStore
    raise AttributeError(name)
