"""The workspace: the one folder that holds everything an agent keeps.

Ledger, memory tables, history, triggers, pending questions and files all live
under one root (``.agent/`` beside the notebook by default). Every path a tool
receives from a model goes through :meth:`Workspace.resolve`, which refuses
anything that would land outside the root, so deleting the folder makes the
agent forget and copying it moves the agent.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_DIRNAME = ".agent"
ENV_VAR = "AGENT_KERNEL_WORKSPACE"


class WorkspaceError(ValueError):
    """A path was refused because it leaves the workspace."""


def default_root() -> Path:
    """``$AGENT_KERNEL_WORKSPACE`` if set, else ``.agent/`` in the current folder.

    The default ``.agent/`` may have come with a cloned repository; when it is a symbolic
    link the person never chose where it leads, so it is refused (WorkspaceError). A path
    set on purpose (the variable, ``%agent_config --workspace``, ``Agent(workspace=...)``)
    is honoured and resolved once.
    """
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    default = Path.cwd() / DEFAULT_DIRNAME
    if default.is_symlink():
        try:
            target = os.readlink(default)
        except OSError:
            target = "somewhere else"
        raise WorkspaceError(
            f"the default workspace {default} is a symbolic link (to {target}), which the "
            f"agent does not follow, since you never chose it: remove the link, or choose "
            f"a workspace on purpose with %agent_config --workspace PATH or the "
            f"{ENV_VAR} environment variable")
    return default


class Workspace:
    """A folder the agent owns; created on first use.

    Its root is resolved once, here; below the root the runtime opens its files through
    :mod:`agent_kernel.core.safe_open`, which follows no link.
    """

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root).expanduser().resolve() if root else default_root().resolve()

    def ensure(self) -> Path:
        """Create the root if needed and return it."""
        self.root.mkdir(parents=True, exist_ok=True)
        return self.root

    def path(self, *parts: str) -> Path:
        """A path inside the workspace for the runtime's own files (not model input)."""
        self.ensure()
        return self.root.joinpath(*parts)

    def resolve(self, user_path: str) -> Path:
        """Resolve a model- or user-given path, refusing anything outside the root."""
        if not isinstance(user_path, str) or not user_path.strip():
            raise WorkspaceError("path must be a non-empty string")
        candidate = Path(user_path).expanduser()
        if not candidate.is_absolute():
            candidate = self.root / candidate
        resolved = candidate.resolve()
        if resolved != self.root and self.root not in resolved.parents:
            raise WorkspaceError(
                f"path {user_path!r} is outside the workspace {str(self.root)!r}"
            )
        return resolved

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"
