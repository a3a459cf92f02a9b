"""What an agent carries for the features built on it: :class:`AgentServices`.

The engine knows no feature (memory, triggers, the team live on higher floors), yet an
agent has to carry each feature's per-agent object so its tools find it. Each field is
typed against a small Protocol here: what the code below the feature's own floor asks of
it. The feature's own floor narrows to its concrete class where it needs more
(``memory.service.store_of``, ``triggers.existing_scheduler``, ``team.queue.task_of``).
A field that does not exist is a mypy error, not a ``None`` from a misspelt key.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol, TypedDict

from agent_kernel.core.events import Event

if TYPE_CHECKING:
    from agent_kernel.engine.agent import Agent
    from agent_kernel.engine.registry import ToolContext


class Budget(Protocol):
    """Asked before each model call, told after each response (a team's budgets).

    ``before_call`` returns why the call may not be made (the run then ends with status
    ``limit`` and that message) or None; ``spent`` gets each response's usage and cost
    (None when the price is unknown).
    """

    async def before_call(self, agent: Agent, run_id: str) -> str | None: ...

    def spent(self, agent: Agent, run_id: str, usage: dict[str, int],
              cost: float | None) -> None: ...


class BudgetRefused(Exception):
    """Raised by a model whose call the budget refused as the call was asked for (a remote
    Worker's model: the kernel checks the budget when the request arrives, in the same
    round trip). The run ends as when ``Budget.before_call`` refuses: status ``limit``,
    the message as its error."""


class MemoryService(Protocol):
    """The workspace's memory store as the engine's floor sees it (``memory.service``)."""

    @property
    def notice(self) -> str | None:
        """Why search is keyword-only (no embedding model), or None."""
        ...


class HistoryService(Protocol):
    """The history writer: a bus subscriber whose queued records can be waited for."""

    def __call__(self, event: Event) -> None: ...

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Wait until every queued record is written; False on timeout."""
        ...

    def not_the_person(self, run_id: str) -> None:
        """The prompt of run ``run_id`` is not the person's words (a team's results handed
        to the Teller): its reply is history, its prompt is not."""
        ...


class SchedulerService(Protocol):
    """The agent's trigger scheduler (``triggers.scheduler``), as its owner's peers see it."""

    def cancel(self, trigger_id: str) -> bool:
        """Cancel a trigger; False when there is none by that id."""
        ...


class TeamTask(Protocol):
    """The team task an agent works on (``team.queue.Task``); the engine reads no more."""

    @property
    def id(self) -> str: ...


class TaskSummary(TypedDict):
    """One row of ``list_tasks`` (spec 000's TaskSummary): a queued or running run, or a
    trigger, from the team's board or an agent's scheduler."""

    id: str
    type: str
    prompt: str
    priority: int
    status: str
    createdAt: str  # noqa: N815 - the spec's key


class TeamService(Protocol):
    """The team an agent belongs to (``team.supervisor.Supervisor``), as the built-in tools
    below the team use it: the Teller's question, the task list and cancelling."""

    def hold_question(self, ctx: ToolContext, question: str, *, options: list[str] | None,
                      timeout: float, default: str | None) -> dict[str, str]:
        """Keep the Teller's question and end its run; the team asks the person."""
        ...

    def rows(self, scope: str = "all", role: str | None = None) -> list[TaskSummary]:
        """The team's queued, running and trigger tasks, as ``list_tasks`` shows them."""
        ...

    def cancel(self, task_id: str) -> bool:
        """Cancel a queued or held task, or a trigger; never a running one."""
        ...


class NamespaceService(Protocol):
    """The kernel's user namespace as ``list_variables`` and ``inspect_variable`` read it
    (``notebook.namespace``): looked at, never executed in."""

    def user_variables(self) -> list[tuple[str, object]]:
        """The person's variables, newest first: no IPython names, private names or modules."""
        ...

    def value_of(self, name: str) -> object:
        """One of those variables' value; LookupError, its message in words, for any other
        name (absent, private, IPython's, a module)."""
        ...


class PythonOutput(TypedDict, total=False):
    """One rich output of code run in the kernel: ``mime`` is ``text/plain``,
    ``text/html`` (``text``) or ``image/png`` (``data``: base64; ``width``, ``height``)."""

    mime: str
    text: str
    data: str
    width: int
    height: int


class PythonError(TypedDict):
    """An exception the code raised: its type, message and the traceback through the
    person's code only (bounded)."""

    type: str
    message: str
    traceback: str


class PythonNames(TypedDict):
    """Names of the user namespace the code created, rebound to another object, deleted."""

    created: list[str]
    changed: list[str]
    deleted: list[str]


PythonStatus = Literal["done", "error", "timeout", "stopped"]


class PythonRun(TypedDict):
    """What running code in the kernel gave: everything ``run_python`` reports, unbounded
    but for the capture limits (the tool cuts it for the model)."""

    status: PythonStatus
    stdout: str
    stderr: str
    value: str | None
    outputs: list[PythonOutput]
    error: PythonError | None
    names: PythonNames
    seconds: float


class PythonService(Protocol):
    """Runs approved code in the kernel's user namespace as a cell would
    (``notebook.python``); ``run_python`` asks for the approval before it calls this."""

    async def run(self, code: str, *, timeout: float, run_id: str) -> PythonRun:
        """Run ``code``; stdout, stderr, value, rich outputs, error, names changed."""
        ...

    def interrupt(self, run_id: str | None = None) -> bool:
        """Stop the code ``run_id`` (None: any run) is running now, from any thread; False
        when none runs."""
        ...


class CellOutput(TypedDict, total=False):
    """One output of a cell as the extension sends it: its type, its text (``text/plain``
    or a stream's), its MIME types, an error's parts."""

    output_type: str
    text: str
    mimes: list[str]
    ename: str
    evalue: str
    traceback: list[str]


class CellProvenance(TypedDict):
    """``metadata["agent_kernel"]`` of a cell the agent inserted or edited."""

    run_id: str
    ledger_record: str
    action: str
    """``inserted`` or ``edited``."""
    at: str


class NotebookCell(TypedDict, total=False):
    """One cell as the extension sends it (``read``)."""

    index: int
    id: str
    """JupyterLab's id for the cell (nbformat 4.5's ``id``): page data, shape unchecked."""
    kind: str
    source: str
    execution_count: int | None
    outputs: list[CellOutput]
    runs_agent: bool
    """Its output holds the run that asked."""
    agent_kernel: CellProvenance | None


class CellRequest(TypedDict, total=False):
    """What the kernel asks of the notebook, beside the op (``read``: start or cell_id,
    count, full; ``insert``: index or below_cell_id, kind, source, provenance; ``edit``:
    cell_id (else index), source, expected, provenance; ``run``: cell_id (else index),
    expected). ``run_id`` names the run that asks."""

    run_id: str
    start: int
    cell_id: str | None
    below_cell_id: str | None
    count: int
    full: bool
    index: int | None
    kind: str
    source: str
    expected: str
    provenance: CellProvenance


class CellReply(TypedDict, total=False):
    """The notebook's reply: ``ok`` and, when not, ``message`` in words (``timed_out``:
    no reply came); the rest depends on the op."""

    ok: bool
    message: str
    timed_out: bool
    total: int
    agent_cell: int | None
    cells: list[NotebookCell]
    index: int
    id: str
    """``insert``: the new cell's id (page data, shape unchecked)."""
    status: str
    execution_count: int | None
    outputs: list[CellOutput]


class CellService(Protocol):
    """The notebook's cells through the JupyterLab extension (``notebook.cells_channel``)."""

    def unavailable(self) -> str | None:
        """Why the cell tools cannot reach the notebook here, or None when they can."""
        ...

    async def request(self, op: str, payload: CellRequest, *, timeout: float) -> CellReply:
        """Ask the notebook to do ``op`` (read, insert, edit, run) and wait for its reply,
        at most ``timeout`` s."""
        ...

    def history(self) -> list[tuple[int, str]]:
        """The kernel's input history as (execution count, source), oldest first: what
        ``read_cells`` shows when there is no notebook to ask."""
        ...


class ErrorDetails(TypedDict):
    """An exception as ``last_error`` gives it: its type, its message, the traceback trimmed
    to the person's own frames, and the line of its cell it was raised at (None: unknown)."""

    type: str
    message: str
    traceback: str
    line: int | None


class ErrorCell(TypedDict):
    """The cell an error came from: its ``In[n]`` number and its source."""

    execution_count: int | None
    source: str


class NotebookError(TypedDict):
    """The notebook's last error and its cell (``notebook.errors``)."""

    error: ErrorDetails
    cell: ErrorCell


class ErrorService(Protocol):
    """The notebook's last exception as ``last_error`` and ``%agent_fix`` read it
    (``notebook.errors``): raised by one of the person's cells, never by the agent's tools."""

    def last(self) -> NotebookError | None:
        """The last error a cell of the person's raised, or None when there was none."""
        ...


@dataclass(slots=True)
class AgentServices:
    """Per-agent services, each made by its feature on first use (None until then).

    Slotted: a misspelt service is an AttributeError at run time, as it is a mypy error."""

    memory: MemoryService | None = None
    """The workspace's memory store (the memory tool set's ``attach``)."""
    memory_notices: set[str] = field(default_factory=set)
    """Memory notices this agent has already told the person."""
    history_writer: HistoryService | None = None
    """Writes the conversation this agent reads to history (the memory tool set): its own
    runs, or on a team's member the Teller's writer (a member's own runs are not recorded)."""
    memory_owner: str | None = None
    """Whose memories and conversation the memory tools read and write: None, the agent's
    own; on a team's members the Teller's id (spec 000: the Planner reads the person's
    conversation with the Teller and what the Teller remembered)."""
    triggers: SchedulerService | None = None
    """The agent's trigger scheduler (``triggers.scheduler_for``)."""
    budget: Budget | None = None
    """Asked before each model call and told each response's usage (a team's budgets)."""
    team: TeamService | None = None
    """The team this agent is a member of; None for a single agent."""
    team_task: TeamTask | None = None
    """The team task this agent works on now."""
    before_tools: Callable[[], Awaitable[None]] | None = None
    """Awaited before each response's tool calls run (a team task's: its ``running`` file
    is on disk before its first tool does anything, while its first model call went out
    beside the write)."""
    namespace: NamespaceService | None = None
    """The kernel's variables (set by ``%load_ext``; None outside a kernel)."""
    python: PythonService | None = None
    """Python run in the kernel (set by ``%load_ext``; None outside a kernel)."""
    cells: CellService | None = None
    """The notebook's cells (set by ``%load_ext``; None outside a kernel)."""
    errors: ErrorService | None = None
    """The notebook's last error (set by ``%load_ext``; None outside a kernel)."""


KERNEL_SERVICES = ("namespace", "python", "cells", "errors")
"""The services that reach into the kernel: a team's members share the session agent's."""


def share_kernel(source: AgentServices, target: AgentServices) -> None:
    """Give ``target`` the kernel services of ``source`` (a team member, the session agent's)."""
    for name in KERNEL_SERVICES:
        setattr(target, name, getattr(source, name))
