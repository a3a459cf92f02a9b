"""Spec 004's role and artifact tools: ``find_role_by_name``, ``create_role``,
``put_artifact``, ``get_artifact``.

Roles and artifacts are kept in the workspace by :mod:`agent_kernel.team.society`;
these functions are the model's door to them, with spec 004's arguments and
results. ``find_role_by_name`` finds the built-in roles (Teller, Planner,
Worker) too. ``create_role`` returns the existing role for a name already
taken and fills in ``createdBy`` from the calling agent; its optional
``tools`` (an addition to spec 004) names the tools an agent of the role may
use, each one the creator may use itself, so a role never has more than
whoever made it. ``put_artifact`` returns ``"artifact:<uuid>"``, which
``get_artifact`` reads back, in this kernel or a later one. Refusals are
:class:`ToolError` s that say what to change.
"""

from __future__ import annotations

from typing import Annotated, Any

from .base import Field, Tool, ToolContext, ToolError

_HUGE = 2_000_000  # a bound on raw arguments; the society's own limits are tighter


def _refused(exc: Exception, guidance: str) -> ToolError:
    return ToolError(str(exc), guidance=guidance)


def creator_tools(ctx: ToolContext) -> set[str]:
    """The tools the calling agent may use: the most a role it creates may have."""
    registry = ctx.agent.registry
    return {t.name for t in registry if registry.allowed(ctx.agent.role, t)}


def find_role_by_name(
    name: Annotated[str, Field(min_length=1, max_length=10_000)], ctx: ToolContext,
) -> dict[str, Any] | None:
    """Find a role by its name (the built-in Teller, Planner and Worker, or one made with
    create_role); null when there is none.

    Args:
        name: The role's name; case and repeated spaces do not matter.
    """
    from ..team.society import RoleStore, SocietyError

    try:
        role = RoleStore(ctx.workspace).find(name)
    except SocietyError as exc:
        raise _refused(exc, "Pass the role's name as plain text, at most 100 characters.") \
            from None
    return None if role is None else role.to_result()


def create_role(
    name: Annotated[str, Field(min_length=1, max_length=10_000)],
    rolePrompt: Annotated[str, Field(min_length=1, max_length=_HUGE)],  # noqa: N803
    ctx: ToolContext,
    tools: Annotated[list[str] | None, Field(max_length=200)] = None,
) -> dict[str, Any]:
    """Create a role agents can be made in; if a role with this name exists, it is returned
    unchanged.

    Args:
        name: The role's name, e.g. "Programmer" (at most 100 characters).
        rolePrompt: The instructions every agent of this role starts with: duties and
            constraints.
        tools: Tool names an agent of the role may use, each one you may use yourself;
            default: all of yours.
    """
    from ..team.society import RoleStore, SocietyError

    mine = creator_tools(ctx)
    wanted = sorted(mine) if tools is None else [t.strip() for t in tools]
    beyond = sorted({t for t in wanted if t not in mine})
    if beyond:
        shown = ", ".join(repr(t[:60]) for t in beyond[:10])
        raise ToolError(
            f"A role cannot have tools its creator may not use: {shown}",
            summary=f"create_role refused: {len(beyond)} tool(s) beyond the creator's own",
            guidance="Name only tools you are offered: " + ", ".join(sorted(mine)) + ".")
    try:
        role, _made = RoleStore(ctx.workspace).create(name, rolePrompt, ctx.agent_id, wanted)
    except SocietyError as exc:
        raise _refused(exc, "Fix the argument named and call create_role again.") from None
    return role.to_result()


def put_artifact(
    type: Annotated[str, Field(min_length=1, max_length=10_000)],  # noqa: A002 - spec's name
    content: Any,
    ctx: ToolContext,
    meta: dict[str, Any] | None = None,
) -> str:
    """Store an artifact (a document, code, data) and get a reference other agents can read
    with get_artifact.

    Args:
        type: What it is: "document", "code", "data", "text/csv", ...
        content: The artifact itself: text, a number, a list or an object (at most 1 MB as
            JSON).
        meta: Optional facts about it, e.g. {"language": "python", "filename": "a.py"}.
    """
    from ..team.society import ArtifactStore, SocietyError

    try:
        return ArtifactStore(ctx.workspace).put(type, content, meta, ctx.agent_id)
    except SocietyError as exc:
        raise _refused(exc, "Fix the argument named and call put_artifact again.") from None


def get_artifact(
    ref: Annotated[str, Field(min_length=1, max_length=10_000)], ctx: ToolContext,
) -> dict[str, Any]:
    """Read an artifact by its reference: {id, type, content, meta, createdAt}.

    Args:
        ref: The reference put_artifact returned, "artifact:" and a uuid.
    """
    from ..team.society import ArtifactStore, SocietyError

    try:
        return ArtifactStore(ctx.workspace).get(ref)
    except SocietyError as exc:
        raise _refused(exc, "Use a reference exactly as put_artifact returned it.") from None


TOOLS = [Tool(find_role_by_name, source="builtin"), Tool(create_role, source="builtin"),
         Tool(put_artifact, source="builtin"), Tool(get_artifact, source="builtin")]
