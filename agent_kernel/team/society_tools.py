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

Spec 004's agents and messages (``spawn_agent``, ``terminate_agent``,
``send_message``, ``wait_for_message``) are the team's
(:mod:`agent_kernel.team.members`): outside a team they refuse, saying so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from agent_kernel.engine.registry import Field, Tool, ToolContext, ToolError, error_only
from agent_kernel.team.tools import team_member

if TYPE_CHECKING:
    from agent_kernel.engine.agent import Agent
    from agent_kernel.team.members import Society

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
    from agent_kernel.team.society import RoleStore, SocietyError

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
    from agent_kernel.team.society import RoleStore, SocietyError

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
    from agent_kernel.team.society import ArtifactStore, SocietyError

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
    from agent_kernel.team.society import ArtifactStore, SocietyError

    try:
        return ArtifactStore(ctx.workspace).get(ref)
    except SocietyError as exc:
        raise _refused(exc, "Use a reference exactly as put_artifact returned it.") from None


TOOLS = [Tool(find_role_by_name, source="builtin"), Tool(create_role, source="builtin"),
         Tool(put_artifact, source="builtin"), Tool(get_artifact, source="builtin")]


# -- spec 004's agents and messages ---------------------------------------------------------


def _society(ctx: ToolContext, name: str) -> tuple[Society, Agent]:
    """The team's society and the calling agent, or a ToolError saying the tool needs a
    team."""
    team, agent = team_member(ctx, ToolError(
        f"{name} works only inside a team (agent_kernel.Team): a single agent has no other "
        "agents to spawn, end or message",
        guidance="Do the work yourself, or run the request with a team (%agent --team)."))
    return team.society, agent


async def spawn_agent(
    roleId: Annotated[str, Field(min_length=1, max_length=200)],  # noqa: N803 - spec 004's name
    taskBrief: dict[str, Any],  # noqa: N803
    ctx: ToolContext,
) -> dict[str, str]:
    """Create an agent in a role you created (create_role) and give it its task brief; it
    starts at once. Returns {id, roleId, roleName}.

    Args:
        roleId: The id create_role returned.
        taskBrief: {objective, constraints (list of strings), inputs, outputs,
            completion_criteria} required; collaborators (list), references (list of
            strings) and priority (text) optional.
    """
    society, agent = _society(ctx, "spawn_agent")
    result: dict[str, str] = society.spawn(agent, roleId, taskBrief)
    return result


async def terminate_agent(
    agentId: Annotated[str, Field(min_length=1, max_length=200)],  # noqa: N803
    ctx: ToolContext,
    reason: Annotated[str | None, Field(max_length=2000)] = None,
) -> dict[str, bool]:
    """End an agent you spawned, and every agent under it. Returns {ok: true}.

    Args:
        agentId: The id spawn_agent returned.
        reason: Why, for the record (optional).
    """
    society, agent = _society(ctx, "terminate_agent")
    result: dict[str, bool] = await society.terminate(agent, agentId, reason)
    return result


async def send_message(
    to: Annotated[str, Field(min_length=1, max_length=200)],
    payload: dict[str, object],
    ctx: ToolContext,
) -> dict[str, Any]:
    """Send a message to another agent of the team, or to the person with to="user". An agent
    waiting with wait_for_message starts again with it.

    Args:
        to: An agent id (the agent that spawned you, one you spawned) or "user".
        payload: The message, a JSON object: {"text": "..."} for words, or structured data
            such as {"type": "task_result", "status": "success", "artifactRef": "artifact:..."}.
    """
    society, agent = _society(ctx, "send_message")
    result: dict[str, Any] = await society.send(agent, ctx.run_id, to, payload)
    return result


async def wait_for_message(ctx: ToolContext) -> dict[str, str]:
    """End your current run and wait: the next message for you starts you again with it as
    your input. Call it last, after send_message."""
    society, _ = _society(ctx, "wait_for_message")
    if ctx.agent.agent_id not in society.members:
        raise ToolError("wait_for_message works for an agent working on a team task")
    ctx.end_run("wait_for_message")
    return {"status": "waiting",
            "note": "Your run ends now; the next message for you starts it again."}


TOOLS += [Tool(spawn_agent, source="builtin", failure=error_only),
          Tool(terminate_agent, source="builtin", failure=error_only),
          Tool(send_message, source="builtin"), Tool(wait_for_message, source="builtin")]
