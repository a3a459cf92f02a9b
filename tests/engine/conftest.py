"""The HTTP path's tests run on both model paths: litellm's call and the openai-SDK fast path.

``model_path`` (parametrized "litellm" / "fast path") switches the fast path by its
environment variable, which every ``Settings`` made in the test reads, and afterwards
checks which path the requests took (litellm's ``acompletion`` calls counted on one
side, the fast path's own counter on the other), so neither case can silently test the
other path.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from agent_kernel.core.config import FAST_PATH_VARIABLE


@dataclass
class ModelPath:
    """Which path a test's turns take, and what it saw them take."""

    name: str
    litellm_calls: int = 0
    fast_requests: int = 0
    falls_back: bool = False
    """Set by a test whose requests go through litellm even with the fast path on (no key)."""

    @property
    def fast(self) -> bool:
        return self.name == "fast path"


@pytest.fixture(params=["litellm", "fast path"])
def model_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
               ) -> Iterator[ModelPath]:
    from agent_kernel.engine.models import fast_path, llm

    path = ModelPath(request.param)
    monkeypatch.setenv(FAST_PATH_VARIABLE, "1" if path.fast else "0")
    litellm = llm.load_litellm()
    original = litellm.acompletion

    async def counted(*args: Any, **kwargs: Any) -> Any:
        path.litellm_calls += 1
        return await original(*args, **kwargs)

    monkeypatch.setattr(litellm, "acompletion", counted)
    before = fast_path.requests_sent
    yield path
    path.fast_requests = fast_path.requests_sent - before
    if path.fast and not path.falls_back:
        assert path.litellm_calls == 0, "a fast-path test called litellm.acompletion"
    if not path.fast:
        assert path.fast_requests == 0, "a litellm-path test used the fast path"
