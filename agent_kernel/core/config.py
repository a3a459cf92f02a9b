"""Run settings shared by the Python API, the magics and the CLI.

One dataclass holds every limit a run obeys (spec 001: a 30 s tool timeout,
at most 50 tool calls per run) and how provider errors are retried. The
magics map their traitlets onto it, so configuration has one meaning
everywhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from agent_kernel.core import object_store

DEMO_MODEL = "demo"
FAST_PATH_VARIABLE = "AGENT_KERNEL_OPENAI_FAST_PATH"
"""Set to ``0`` (or ``off``, ``false``, ``no``) to send every turn through litellm's call."""


def _switched_on(variable: str) -> bool:
    return os.environ.get(variable, "").strip().lower() not in ("0", "off", "false", "no")


@dataclass
class Settings:
    """Limits and provider options for a run."""

    tool_timeout: float = 30.0
    max_tool_calls: int = 50
    # What one tool result may put into the conversation (the ledger keeps up to ledger.LIMITS).
    max_tool_result_chars: int = 100_000
    max_retries: int = 3
    retry_base_delay: float = 0.5
    retry_max_delay: float = 8.0
    request_timeout: float = 120.0
    stream: bool = True
    temperature: float | None = None
    api_base: str | None = None
    api_key: str | None = None
    headless_approval: str = "deny"
    extra_completion_args: dict[str, Any] = field(default_factory=dict)
    # Send a turn to an OpenAI-API provider through the openai SDK rather than litellm's
    # call (same errors, retries, usage and cost; see engine/models/fast_path.py). On
    # unless set, or unless AGENT_KERNEL_OPENAI_FAST_PATH=0 (for a kernel or the CLI).
    openai_fast_path: bool = field(default_factory=lambda: _switched_on(FAST_PATH_VARIABLE))
    # The model's context window in tokens (None: litellm's model data, else 128,000).
    context_window: int | None = None
    # Compact the conversation before a model call that would fill the window.
    auto_compact: bool = True
    # Send the model the images tools made (run_python's figures, inspect_variable's):
    # None asks litellm whether the model reads images; True or False decides.
    model_images: bool | None = None
    # The person's changes to which tools ask before they run (tool name -> asks); the
    # table and its limits: agent_kernel.engine.ask_policy.
    ask_before: dict[str, bool] = field(default_factory=dict)
    # Spec 003's ``tools.<name>.enabled`` for every tool (tool name -> enabled; absent: on).
    # A disabled tool is still offered; a call is refused with "<name> tool is disabled".
    tools_enabled: dict[str, bool] = field(default_factory=dict)
    # Memory at an object-store URI (``s3://bucket/prefix``) instead of the workspace's
    # lancedb/ folder, so kernels and Dask workers share it; default $AGENT_KERNEL_MEMORY_URI.
    # Its options are non-secret storage options (endpoint, region, allow_http);
    # credentials come from the environment or the cloud's chain (core/object_store.py).
    memory_uri: str | None = field(default_factory=object_store.default_uri)
    memory_options: dict[str, str] = field(default_factory=dict)
    # The workspace's files/ (file_cache_dir) at an object-store URI (``s3://bucket/prefix``)
    # through fsspec, so kernels and Dask workers see the same files; default
    # $AGENT_KERNEL_FILES_URI, else the local folder. Options and credentials as for memory.
    files_uri: str | None = field(default_factory=object_store.default_files_uri)
    files_options: dict[str, str] = field(default_factory=dict)
    # The largest message a Dask worker may send the kernel, in bytes of its JSON (a team
    # on a cluster: docs/scale.md, "Limits"); a larger one is refused, never read.
    cluster_message_cap: int = 16 * 2**20

    def __post_init__(self) -> None:
        self.files_uri = object_store.check_files_uri(self.files_uri) if self.files_uri else None
        self.files_options = object_store.check_files_options(self.files_options)
        if self.memory_uri:
            self.memory_uri = object_store.check_uri(self.memory_uri)
        else:
            self.memory_uri = None
        self.memory_options = object_store.check_options(self.memory_options)
        object_store.check_apart(self.files_uri, self.memory_uri)
        if self.tool_timeout <= 0:
            raise ValueError(f"tool_timeout must be positive, got {self.tool_timeout}")
        if self.max_tool_calls < 1:
            raise ValueError(f"max_tool_calls must be at least 1, got {self.max_tool_calls}")
        if self.max_tool_result_chars < 1000:
            raise ValueError("max_tool_result_chars must be at least 1000, got "
                             f"{self.max_tool_result_chars}")
        if self.cluster_message_cap < 2**16:
            raise ValueError("cluster_message_cap must be at least 65536 bytes, got "
                             f"{self.cluster_message_cap}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, got {self.max_retries}")
        if self.context_window is not None and self.context_window < 256:
            raise ValueError(f"context_window must be at least 256 tokens, got "
                             f"{self.context_window}")
        if self.headless_approval not in ("deny", "allow"):
            raise ValueError(
                f"headless_approval must be 'deny' or 'allow', got {self.headless_approval!r}"
            )
