"""The IPython magics: ``%agent``, ``%%agent``, ``%agent_config``, ``%agent_fix`` (the
notebook's last error, :mod:`agent_kernel.notebook.errors`), ``%agent_wait``, ``%agent_stop``,
``%agent_team`` (the team board, :mod:`agent_kernel.notebook.board`, imported on first use).

One :class:`AgentMagics` per IPython session holds one :class:`Agent` (made
on first use), so the conversation goes on across cells. By default a run is
a task on the kernel's running loop: the cell returns at once and the live
widget keeps streaming, leaving the kernel free for button clicks and
triggers. ``--wait`` blocks the cell until the run ends (``blocking.py``).

Loading must stay fast (well under 300 ms): this module imports no litellm,
lancedb or ipywidgets on the calling thread. Once the model is one that needs
litellm (at ``%load_ext`` or when ``model`` changes; never for ``demo``) its
import starts in a background thread; another imports the loop, the tools and,
in a kernel, the widget view ahead of the first ``%agent``. ``%load_ext`` also
sends the frontend probe (see :mod:`agent_kernel.notebook.frontend`) that decides whether
anyone can click answers, and whether our extension draws the controls.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib
import importlib.util
import re
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from traitlets import Bool, Dict, Enum, Float, Int, List, Unicode
from traitlets.config import Configurable
from traitlets.utils.bunch import Bunch

from agent_kernel.notebook import namespace as kernel_namespace
from agent_kernel.notebook.cells_channel import CellChannel
from agent_kernel.notebook.errors import NotebookErrors
from agent_kernel.notebook.frontend import FrontendProbe

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from agent_kernel.app import Agent
    from agent_kernel.notebook.widgets import WidgetView

# IPython 9 types its magic markers as "the function or a decorator"; given a name,
# the marker is the decorator (the method cannot be called ``agent``: that is a property).
_AGENT_MAGIC = cast(Callable[[Callable[..., None]], Callable[..., None]],
                    line_cell_magic("agent"))

# Feature modules that add their own magics: each defines load(ipython, agent_magics).
MAGIC_MODULES = ("agent_kernel.notebook.memory_magics", "agent_kernel.notebook.trigger_magics")

# Traits that are the session agent's Settings (trait name -> Settings field).
_SETTINGS = {"tool_timeout": "tool_timeout", "max_tool_calls": "max_tool_calls",
             "headless_approval": "headless_approval", "api_base": "api_base",
             "ask_before": "ask_before", "tools_enabled": "tools_enabled"}
_NAME = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_LEADING_OPTIONS = re.compile(
    r"^\s*((?:--(?:wait|new|team|single)(?![\w=-])\s*|--model(?:=|\s+)(?!-)\S+\s*)*)(.*)$",
    re.S)
_FLAG_LIKE = re.compile(r"^(--?[A-Za-z][\w-]*)(=?)")
AGENT_USAGE = ("Usage: %agent [--model MODEL] [--wait] [--new] [--team | --single] PROMPT "
               "(put -- before a prompt that starts with a dash)")


def usage_error(prompt: str) -> str | None:
    """Why a line's leading options cannot be read (an unknown flag, ``--model`` without
    its model), so it never reaches the model as the prompt; None when they can."""
    flag = _FLAG_LIKE.match(prompt)
    if flag is None:
        return None
    name = flag.group(1)
    if name == "--model":
        return f"--model needs a model, as in %agent --model ollama/llama3.2 PROMPT. {AGENT_USAGE}"
    if name in ("--wait", "--new", "--team", "--single"):
        return f"{name} takes no value. {AGENT_USAGE}"
    return f"unknown option {name}. {AGENT_USAGE}"
_QUESTION_LINE = re.compile(r"^([ \t]*)%agent[ \t]+(.*\?)[ \t]*(\r?\n)?$")


def protect_help_syntax(lines: list[str]) -> list[str]:
    """Input transformer: ``%agent what can you do?`` is a prompt, not IPython's ``?`` help."""
    out = []
    for line in lines:
        match = _QUESTION_LINE.match(line)
        if match:
            indent, prompt, end = match.group(1), match.group(2), match.group(3) or ""
            line = f"{indent}get_ipython().run_line_magic('agent', {prompt!r}){end}"
        out.append(line)
    return out


def interpolate(prompt: str, namespace: dict[str, Any]) -> str:
    """Replace ``{name}`` with the user's variable, as jupyter-ai does; unknown names stay."""
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        return str(namespace[name]) if name in namespace else match.group(0)

    return _NAME.sub(value, prompt)


@magics_class
class AgentMagics(Magics, Configurable):
    """``%agent`` and friends; configure with ``c.AgentMagics.<trait>`` in ipython_config.py."""

    model = Unicode("demo", help="Model for %agent: 'demo' or any litellm model string."
                    ).tag(config=True)
    workspace = Unicode("", help="Workspace folder ('' = $AGENT_KERNEL_WORKSPACE or .agent/)."
                        ).tag(config=True)
    tool_timeout = Float(30.0, help="Seconds a tool call may take.").tag(config=True)
    max_tool_calls = Int(50, help="Tool calls allowed per run.").tag(config=True)
    headless_approval = Enum(["deny", "allow"], "deny",
                             help="What approvals do when no one can click.").tag(config=True)
    api_base = Unicode(None, allow_none=True, help="Provider base URL (api_base).").tag(config=True)
    interactive = Bool(None, allow_none=True,
                       help="Can a person answer questions? None = detect the frontend."
                       ).tag(config=True)
    probe_wait = Float(1.0, help="Seconds to wait for the frontend probe's answer."
                       ).tag(config=True)
    warm_memory = Bool(False, help="Load the memory index (LanceDB and the embedding "
                       "model: seconds, ~300 MiB) in a background thread once the first run "
                       "has ended, so the first memory call does not wait. Off: it loads "
                       "on first use, announced.").tag(config=True)
    memory_uri = Unicode("", help="Memory at an object-store URI (s3://bucket/prefix) that "
                         "other kernels and Dask workers share ('' = $AGENT_KERNEL_MEMORY_URI, "
                         "else the workspace folder; 'local': the workspace folder); "
                         "%agent_config --memory URI|local. Credentials "
                         "come from the environment, never from here.").tag(config=True)
    memory_options = Dict(value_trait=Unicode(), help="Storage options for memory_uri "
                          "(endpoint, region, allow_http, ...; no credential is accepted)."
                          ).tag(config=True)
    files_uri = Unicode("", help="The workspace's files/ at an object-store URI "
                        "(s3://bucket/prefix) that other kernels and Dask workers share ('' = "
                        "$AGENT_KERNEL_FILES_URI, else the local folder; 'off': the local "
                        "folder); %agent_config --files URI|off. Credentials come from the "
                        "environment, never from here."
                        ).tag(config=True)
    files_options = Dict(value_trait=Unicode(), help="Storage options for files_uri (endpoint, "
                         "region, allow_http; no credential is accepted).").tag(config=True)
    team = Bool(False, help="Send %agent prompts to the team (Teller, Planner, Workers); "
                "%agent_config --team on|off.").tag(config=True)
    cluster = Unicode(None, allow_none=True, help="The Dask scheduler the team's Workers run "
                      "on (tcp://HOST:PORT; None: in this kernel); %agent_config --cluster "
                      "ADDRESS|off. See docs/scale.md.").tag(config=True)
    ask_before = Dict(value_trait=Bool(), help="Your changes to which tools ask before they "
                      "run (tool name -> True/False), e.g. {'run_javascript': True}; code "
                      "for the kernel, writes and commands always ask "
                      "(%agent_config --asking).").tag(config=True)
    tools_enabled = Dict(value_trait=Bool(), help="Tools switched off or on (tool name -> "
                         "True/False), e.g. {'bash': False}: a call of a switched-off tool is "
                         "refused with '<name> tool is disabled'.").tag(config=True)
    redact_patterns = List(Unicode(), help="More regular expressions whose matches are "
                           "redacted from the ledger, memory and saved outputs.").tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: object) -> None:
        super().__init__(shell=shell, **kwargs)
        self._add_redact_patterns(Bunch(new=self.redact_patterns))
        self.observe(self._add_redact_patterns, names=["redact_patterns"])
        self.observe(self._warm_up_for, names=["model"])
        self.observe(self._settings_changed, names=list(_SETTINGS))
        from agent_kernel.engine.user_tools import user_tools

        self.user_tools = user_tools()
        """The ``@tool`` functions of this session (the interpreter's, in a kernel)."""
        self.tasks: set[asyncio.Task[Any]] = set()
        """This session's background ``%agent`` runs (what ``%agent_wait`` waits for)."""
        self.loaded = False
        """True from ``%load_ext`` until ``%unload_ext``: :func:`current` is this session."""
        self._agent: Agent | None = None
        self._team: Any = None
        self.probe = FrontendProbe()
        self._memory_warmed = False
        self.last_result: Any = None
        self.views: list[Any] = []
        self.errors = NotebookErrors(shell)
        """The last error a cell of the person's raised (``last_error``, ``%agent_fix``)."""

    def _settings_changed(self, change: Bunch) -> None:
        """``%config AgentMagics.tool_timeout = 60`` and the like: the agent follows at once."""
        if self._agent is None:
            return
        import dataclasses

        name = _SETTINGS[change["name"]]
        changed: dict[str, Any] = {name: change["new"] if change["name"] != "api_base"
                                   else (change["new"] or None)}
        if name in ("ask_before", "tools_enabled"):
            changed[name] = dict(change["new"])
        if name == "ask_before":
            old = change["old"] or {}
            for tool, asks in change["new"].items():
                if old.get(tool) != asks:
                    self._agent.approvals.record_asking(tool, asks)
        self._agent.settings = dataclasses.replace(self._agent.settings, **changed)

    @staticmethod
    def _warm_up_for(change: Bunch) -> None:
        """A model that needs litellm was chosen: start its import in the background."""
        from agent_kernel.core.config import DEMO_MODEL

        if change["new"] != DEMO_MODEL:  # the loader only: the litellm seam (llm.py) waits
            from agent_kernel.engine.models.litellm_loader import warm_up  # for the first run

            warm_up(change["new"])

    @staticmethod
    def _add_redact_patterns(change: Bunch) -> None:
        """Mask the person's patterns in everything the process saves: redaction is
        process-wide on purpose (see :mod:`agent_kernel.core.redaction`). With none, its
        import (its built-in shapes' regexes, ~3 ms) waits for the first thing it masks."""
        if not change["new"]:
            return
        from agent_kernel.core.redaction import add_pattern

        for pattern in change["new"]:
            try:
                add_pattern(pattern)
            except re.error as exc:
                print(f"agent-kernel: redact_patterns: {pattern!r} is not a regular "
                      f"expression ({exc}); it is ignored", file=sys.stderr)

    # -- the agent ------------------------------------------------------------
    @property
    def agent(self) -> Agent:
        """This session's Agent, made on first use."""
        if self._agent is None:
            from agent_kernel.app import Agent
            from agent_kernel.core.config import Settings
            from agent_kernel.core.object_store import default_files_uri
            from agent_kernel.core.object_store import default_uri as default_memory_uri
            from agent_kernel.notebook.python import KernelPython

            settings = Settings(tool_timeout=self.tool_timeout, max_tool_calls=self.max_tool_calls,
                                headless_approval=self.headless_approval,
                                api_base=self.api_base or None,
                                ask_before=dict(self.ask_before),
                                tools_enabled=dict(self.tools_enabled),
                                memory_uri=self._memory_uri(default_memory_uri),
                                memory_options=dict(self.memory_options),
                                files_uri=self._files_uri(default_files_uri),
                                files_options=dict(self.files_options))
            self._agent = Agent(model=self.model, workspace=self.workspace or None,
                                settings=settings, user_tools=self.user_tools)
            for tool, asks in self.ask_before.items():  # from ipython_config.py or %config
                self._agent.approvals.record_asking(tool, asks, by="configuration")
            self._agent.services.namespace = kernel_namespace.namespace_of(self.shell)
            self._agent.services.errors = self.errors
            self._agent.services.cells = CellChannel(self.probe, self.shell)
            self._agent.services.python = (KernelPython(self.shell, lambda: self.views)
                                           if self.shell else None)
        return self._agent

    def frontend_live(self) -> bool:
        """Can a person click answers here? (the ``interactive`` trait, else the probe).

        An unanswered probe younger than ``probe_wait`` is waited for (blocking) first, but
        only when the cell came from a client that takes input: one that sent it with
        ``allow_stdin: false`` (nbclient, papermill) has nobody to answer the probe either.
        """
        if self.interactive is not None:
            return bool(self.interactive)
        kernel = getattr(self.shell, "kernel", None)
        if kernel is None or self.probe.sent_at is None:
            return False
        if not self.probe.answered.is_set() and _client_takes_input(kernel) and (
                time.monotonic() - self.probe.sent_at < self.probe_wait):
            from agent_kernel.notebook.blocking import wait_blocking

            wait_blocking(self.probe.result(self.probe_wait))
        return self.probe.answered.is_set()

    # -- magics ---------------------------------------------------------------
    @magic_arguments()
    @argument("--model", default=None, help="Model for this run only.")
    @argument("--wait", action="store_true", help="Block the cell until the run ends.")
    @argument("--new", action="store_true", help="Start a fresh conversation.")
    @argument("--team", action="store_true", help="Run the prompt through the team.")
    @argument("--single", action="store_true", help="Run the single agent (team mode on).")
    @argument("prompt", nargs="*", help="The prompt (the cell body for %%agent).")
    @_AGENT_MAGIC
    @no_var_expand
    def agent_magic(self, line: str, cell: str | None = None) -> None:
        """Run the agent: ``%agent PROMPT`` or ``%%agent [--model M] [--wait] [--new]``;
        ``--team`` runs it through the team (``agent_kernel.notebook.team_magics``)."""
        if cell is None:
            match = _LEADING_OPTIONS.match(line)
            options, prompt = (match.group(1), match.group(2)) if match else ("", line)
            if (problem := usage_error(prompt)) is not None:
                print(f"agent-kernel: {problem}", file=sys.stderr)
                return
            if prompt.startswith("--") and prompt[2:3].isspace() or prompt == "--":
                prompt = prompt[2:]  # "--": what follows is the prompt, dashes and all
        else:
            options, prompt = line, cell
        args = parse_argstring(self.agent_magic, options)
        if cell is not None and args.prompt:
            prompt = " ".join(args.prompt) + "\n" + prompt
        prompt = interpolate(prompt.strip(), self.shell.user_ns if self.shell else {})
        if not prompt:
            print("agent-kernel: nothing to ask. Usage: %agent PROMPT", file=sys.stderr)
            return
        if args.team or (self.team and not args.single):
            if args.model is not None:
                print("agent-kernel: --model is for a single-agent run; the team uses "
                      "%agent_config --model.", file=sys.stderr)
                return
            from agent_kernel.notebook.team_magics import start_team

            start_team(self, prompt, new=args.new, wait=args.wait, tasks=self.tasks)
            return
        self.start(prompt, model=args.model, new=args.new, wait=args.wait)

    def track(self, task: asyncio.Task[Any]) -> None:
        """Count ``task`` among this session's background runs until it ends."""
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def wait_all(self, timeout: float | None = None) -> list[Any]:
        """Await every background run this session started; their results, in order done."""
        results: list[Any] = []
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            tasks = [t for t in self.tasks if t is not asyncio.current_task()]
            if not tasks:
                return results
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            done, _pending = await asyncio.wait(tasks, timeout=left)
            results.extend(t.result() for t in done if not t.cancelled())
            if deadline is not None and time.monotonic() >= deadline:
                return results

    def start(self, prompt: str, *, model: str | None = None, new: bool = False,
              wait: bool = False) -> asyncio.Task[Any] | None:
        """Start a run shown in this cell; returns its task (None when it ran synchronously)."""
        from agent_kernel.core.ledger import new_id

        if model is not None and not _model_ok(model):
            return None
        try:
            agent = self.agent
        except Exception as exc:  # a bad workspace or setting: say so, no traceback
            print(f"agent-kernel: could not create the agent: {exc}", file=sys.stderr)
            return None
        for user_tool in self.user_tools.tools():  # @tool functions defined since the agent
            if user_tool.name not in agent.registry:  # was made
                agent.registry.add(user_tool)
        run_id = new_id("run")
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None or getattr(self.shell, "kernel", None) is None:
            self._run_in_terminal(agent, prompt, model, new, run_id)
            return None
        from agent_kernel.notebook.widgets import WidgetView

        live = self.frontend_live()
        view = WidgetView(agent, run_id, stop=lambda: agent.stop(run_id))
        view.interactive = live
        if live and self.probe.extension:  # the extension draws the controls in the run
            view.channel = self.probe
        view.transcript.prompt, view.transcript.model = prompt, model or agent.model
        # One conversation runs one prompt at a time: say so while this one waits.
        view.transcript.queued = any(not earlier.done for earlier in self.views)
        self.views = [*self.views[-20:], view]
        view.show()
        task = loop.create_task(self._guarded(agent, view, prompt, model, new, run_id))
        self.track(task)
        if wait or not live:  # headless clients record only the running cell's output
            from agent_kernel.notebook.blocking import wait_blocking

            wait_blocking(task)
        return task

    async def _guarded(self, agent: Agent, view: WidgetView, prompt: str, model: str | None,
                       new: bool, run_id: str) -> Any:
        """Run one prompt; any failure ends in the view as a message, never a traceback."""
        attached = False
        try:
            if view.interactive:
                agent.questions.attach_answerer()
                attached = True
            result = await agent.arun(prompt, new=new, model=model, run_id=run_id)
            self.last_result = result
            return result
        except asyncio.CancelledError:
            view.fail("The run was stopped.", status="stopped")
            return None
        except Exception as exc:
            view.fail(f"{type(exc).__name__}: {exc}")
            return None
        finally:
            if attached:
                agent.questions.detach_answerer()
            view.finish()
            self._warm_memory_after(agent)

    def _warm_memory_after(self, agent: Agent) -> None:
        """``warm_memory``: the first run has ended; load memory in the background now."""
        if not self.warm_memory or self._memory_warmed:
            return
        self._memory_warmed = True
        try:
            from agent_kernel.memory.service import store_of
            from agent_kernel.memory.warming import warm_in_background

            warm_in_background(store_of(agent))
        except Exception as exc:  # a memory the person replaced: the first call says why
            print(f"agent-kernel: memory was not warmed: {exc}", file=sys.stderr)

    def _run_in_terminal(self, agent: Agent, prompt: str, model: str | None, new: bool,
                         run_id: str) -> None:
        """Run with the text view; in terminal IPython questions are asked on stdin."""
        from agent_kernel.notebook.blocking import wait_blocking
        from agent_kernel.notebook.terminal_loop import run_on, terminal_loop
        from agent_kernel.views.terminal import TerminalAnswerer
        from agent_kernel.views.text import TextView

        view = TextView(agent.bus, run_id=run_id)
        answerer = TerminalAnswerer(agent, view).attach() if self.terminal_live() else None
        # In terminal IPython the run goes on the loop that also runs between prompts, so
        # a trigger it makes keeps firing after it (terminal_loop.py).
        loop = terminal_loop(self.shell)
        try:
            running = agent.arun(prompt, new=new, model=model, run_id=run_id)
            self.last_result = (run_on(loop, running) if loop is not None
                                else wait_blocking(running))
        except Exception as exc:
            print(f"agent-kernel: the run failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        finally:
            if answerer is not None:
                answerer.close()
            view.close()
        return None

    def terminal_live(self) -> bool:
        """Can a person type answers here? Terminal IPython (no kernel) with a tty on stdin,
        unless the ``interactive`` trait says no one can answer."""
        from agent_kernel.views.terminal import can_answer_on

        if self.interactive is False or getattr(self.shell, "kernel", None) is not None:
            return False
        return can_answer_on(sys.stdin)

    @magic_arguments()
    @argument("--model", default=None, help="Set the model (demo or a litellm model string).")
    @argument("--workspace", default=None, help="Set the workspace folder (a fresh agent).")
    @argument("--memory", default=None, metavar="URI",
              help="Memory at an object-store URI, e.g. s3://bucket/prefix ('local': back to "
                   "the default, the workspace folder); credentials come from the "
                   "environment (a fresh agent).")
    @argument("--memory-option", action="append", default=None, metavar="KEY=VALUE",
              dest="memory_option",
              help="A storage option for --memory: endpoint, region, allow_http, ...")
    @argument("--files", default=None, metavar="URI",
              help="The workspace's files/ at an object-store URI, e.g. s3://bucket/prefix "
                   "('off': back to the local folder); commands keep the local folder; "
                   "credentials come from the environment (a fresh agent).")
    @argument("--files-option", action="append", default=None, metavar="KEY=VALUE",
              dest="files_option", help="A storage option for --files: endpoint, region, "
                                        "allow_http.")
    @argument("--permissions", action="store_true",
              help='List the standing permissions ("Always allow this tool").')
    @argument("--team", choices=("on", "off"), default=None,
              help="Team mode: %agent prompts go to the team (off: the single agent).")
    @argument("--cluster", default=None, metavar="ADDRESS|off",
              help="Run the team's Workers on the Dask scheduler at ADDRESS (off: here).")
    @argument("--revoke", default=None, metavar="TOOL",
              help="Revoke the standing permission of TOOL (or all of them: --revoke all).")
    @argument("--asking", action="store_true",
              help="List which tools ask before they run, and why.")
    @argument("--ask", default=None, metavar="TOOL", help="Make TOOL ask before it runs.")
    @argument("--no-ask", default=None, metavar="TOOL", dest="no_ask",
              help="Let TOOL run without asking (only tools whose effect stays in a sandbox).")
    @line_magic
    def agent_config(self, line: str) -> None:
        """Show the configuration, set ``--model`` / ``--workspace``, or list (``--permissions``)
        and revoke (``--revoke TOOL``) standing permissions."""
        from agent_kernel.engine.approvals import describe_standing, revoke_words

        try:
            args = parse_argstring(self.agent_config, line)
        except Exception as exc:
            print(f"agent-kernel: {exc}", file=sys.stderr)
            return
        if args.ask or args.no_ask or args.asking:
            print(self.choose_asking(args.ask, args.no_ask))
            return
        if args.permissions or args.revoke:
            approvals = self._agent.approvals if self._agent is not None else None
            if args.revoke:
                print(revoke_words(approvals, args.revoke))
            if args.permissions:
                print(describe_standing(approvals))
            return
        if args.model and not _model_ok(args.model):
            return  # nothing changes: the old model and workspace stay
        if args.model:
            self.model = args.model
            if self._agent is not None:
                self._agent.model = args.model
        if args.workspace:
            if self._agent is not None and self._agent.running:
                print("agent-kernel: a run is in progress; wait for it before changing the "
                      "workspace.", file=sys.stderr)
                return
            self.workspace = args.workspace
            self._agent = None
        if (args.memory is not None or args.memory_option) and not self._choose_memory(
                args.memory, args.memory_option or []):
            return
        if (args.files is not None or args.files_option) and not self._choose_files(
                args.files, args.files_option or []):
            return
        if args.team:
            self.team = args.team == "on"
        if args.cluster:  # the team takes it up at its next prompt (team_magics.session_team)
            self.cluster = None if args.cluster == "off" else args.cluster
            team = getattr(getattr(self, "_team", None), "team", None)
            cluster = getattr(team, "cluster", None)
            if team is not None and cluster is not None and cluster.lost is not None:
                team.use_cluster(None)  # gone: named again, tried again at the next prompt
        print(self.describe())

    def _choose_memory(self, uri: str | None, options: list[str]) -> bool:
        """Apply ``--memory URI`` / ``--memory-option K=V``: checked (no credential may be
        given), then a fresh agent opens memory there. False (and why, printed) when refused."""
        from agent_kernel.core import object_store

        try:
            chosen = (None if uri is None
                      else "local" if not uri.strip() or object_store.means_local(uri)
                      else object_store.check_uri(uri))
            parsed = dict(object_store.parse_option(o) for o in options)
            if chosen and chosen != "local":  # not where files/ is: the file tools would
                object_store.check_apart(  # reach the table's own files
                    self._files_uri(object_store.default_files_uri), chosen)
        except object_store.StoreConfigError as exc:
            print(f"agent-kernel: {exc}", file=sys.stderr)
            return False
        if self._agent is not None and self._agent.running:
            print("agent-kernel: a run is in progress; wait for it before moving memory.",
                  file=sys.stderr)
            return False
        if chosen is not None:
            self.memory_uri = chosen
            if not options:
                self.memory_options = {}
        if parsed:
            self.memory_options = {**self.memory_options, **parsed}
        self._agent = None
        return True

    def _choose_files(self, uri: str | None, options: list[str]) -> bool:
        """Apply ``--files URI|off`` / ``--files-option K=V`` as ``--memory`` does: checked
        (no credential may be given), then a fresh agent keeps its files there."""
        from agent_kernel.core import object_store

        try:
            chosen = (None if uri is None else "off" if object_store.means_local(uri, "files")
                      else object_store.check_files_uri(uri))
            parsed = dict(object_store.parse_option(o, "files", object_store.FILES_OPTIONS)
                          for o in options)
            merged = parsed if chosen is not None else {**self.files_options, **parsed}
            object_store.check_files_options(merged)
            if chosen and chosen != "off":
                object_store.check_apart(chosen, self._memory_uri(object_store.default_uri))
        except object_store.StoreConfigError as exc:
            print(f"agent-kernel: {exc}", file=sys.stderr)
            return False
        if self._agent is not None and self._agent.running:
            print("agent-kernel: a run is in progress; wait for it before moving the files.",
                  file=sys.stderr)
            return False
        if chosen is not None:
            self.files_uri = chosen
        self.files_options = merged
        self._agent = None
        return True

    def choose_asking(self, ask: str | None, no_ask: str | None) -> str:
        """Apply ``--ask TOOL`` / ``--no-ask TOOL`` (recorded in the ledger) and say the table."""
        from agent_kernel.engine import ask_policy

        if no_ask and (refused := ask_policy.refusal_to_skip(no_ask)):
            return f"agent-kernel: nothing changed. {refused}"
        chosen = dict(self.ask_before)
        if ask:
            chosen[ask] = True
        if no_ask:
            chosen[no_ask] = False
        if chosen != self.ask_before:
            _ = self.agent  # made first, so the change below is recorded in its ledger
            self.ask_before = chosen
        return ask_policy.describe(self.ask_before)

    def describe(self) -> str:
        """The current configuration as text."""
        from agent_kernel.core.workspace import Workspace, WorkspaceError

        try:
            root: object = self._agent.workspace.root if self._agent else Workspace(
                self.workspace or None).root
        except WorkspaceError as exc:
            root = f"(refused) {exc}"
        interactive: Any = self.interactive
        if interactive is None:
            state = ("live frontend" if self.probe.answered.is_set() else
                     "no probe sent" if self.probe.sent_at is None else "no frontend answered")
            interactive = f"auto ({state})"
        standing = len(self._agent.approvals.standing()) if self._agent else 0
        return (f"model: {self.model}\nworkspace: {root}\ntool_timeout: {self.tool_timeout:g} s\n"
                f"max_tool_calls: {self.max_tool_calls}\nheadless_approval: "
                f"{self.headless_approval}\napi_base: {self.api_base or '(provider default)'}\n"
                f"memory: {self._memory_words()}\nfiles: {self._files_words()}\n"
                f"interactive: {interactive}\nteam mode: {'on' if self.team else 'off'}\n"
                f"cluster: {self.cluster or 'off (the team works in this kernel)'}\n"
                f"standing permissions: {standing}"
                f"{' (%agent_config --permissions)' if standing else ''}")

    def _memory_words(self) -> str:
        from agent_kernel.core import object_store

        if self._agent is not None:
            settings = self._agent.settings
            return object_store.describe(settings.memory_uri, settings.memory_options)
        try:
            uri = self._memory_uri(object_store.default_uri)
        except object_store.StoreConfigError as exc:
            return f"(refused) {exc}"
        return object_store.describe(uri, dict(self.memory_options))

    def _memory_uri(self, default: Callable[[], str | None]) -> str | None:
        """The ``memory_uri`` trait's URI: ``local`` is the workspace folder even when
        ``$AGENT_KERNEL_MEMORY_URI`` is set, empty is that variable's (``default``)."""
        from agent_kernel.core import object_store

        if object_store.means_local(self.memory_uri):
            return None
        return self.memory_uri or default()

    def _files_uri(self, default: Callable[[], str | None]) -> str | None:
        """The ``files_uri`` trait's URI: ``off`` is the local folder even when
        ``$AGENT_KERNEL_FILES_URI`` is set, empty is that variable's (``default``)."""
        from agent_kernel.core import object_store

        if object_store.means_local(self.files_uri, "files"):
            return None
        return self.files_uri or default()

    def _files_words(self) -> str:
        from agent_kernel.core import object_store

        local = "the workspace folder (files/)"
        if self._agent is not None:
            settings = self._agent.settings
            return object_store.describe(settings.files_uri, settings.files_options, local)
        try:
            uri = self._files_uri(object_store.default_files_uri)
        except object_store.StoreConfigError as exc:
            return f"(refused) {exc}"
        return object_store.describe(uri, dict(self.files_options), local)

    @line_magic
    @no_var_expand
    def agent_fix(self, line: str = "") -> None:
        """``%agent_fix [more words]``: ask the agent to explain and fix the notebook's last
        error; the error, its traceback and its cell go with the prompt, marked as data."""
        from agent_kernel.notebook.errors import fix_prompt

        found = self.errors.last()
        if found is None:
            print("No error to fix yet.")
            return
        self.start(fix_prompt(found, line.strip()))

    @line_magic
    def agent_stop(self, line: str = "") -> None:
        """Stop every live ``%agent`` run of this session (for a page that lost its Stop)."""
        live = [view for view in self.views if not view.done]
        for view in live:
            view.request_stop()
        if not live:
            print("No run of this session is live.")
        else:
            print(f"Stopping {len(live)} run{'s' if len(live) > 1 else ''}.")

    @line_magic
    def agent_wait(self, line: str = "") -> None:
        """Block until every background ``%agent`` run of this session has ended."""
        from agent_kernel.notebook.blocking import wait_blocking

        timeout = float(line) if line.strip() else None
        wait_blocking(self.wait_all(timeout))

    @line_magic
    def agent_team(self, line: str = "") -> None:
        """``%agent_team [--text] | cancel ID | stop ID``: a live board of the session's team
        (its agents, roles, queues, running tasks, triggers and artifacts), with Cancel/Stop."""
        if self._team is None:  # says how to start one, without importing the team
            print("No team in this session yet: start one with %agent --team PROMPT "
                  "(or %agent_config --team on).")
            return
        from agent_kernel.notebook.board import agent_team

        agent_team(self, line)


def _model_ok(model: str) -> bool:
    """Check a model string when it is given; a refusal is printed, with the closest names."""
    from agent_kernel.engine.models.names import check_model

    try:
        check_model(model)
    except ValueError as exc:
        print(f"agent-kernel: {exc}", file=sys.stderr)
        return False
    return True


async def wait_all(timeout: float | None = None) -> list[Any]:
    """Await every background run started by this kernel's magics (use ``await`` in a
    later cell); :meth:`AgentMagics.wait_all` for one session's."""
    return await current().wait_all(timeout)


def current(ipython: object = None) -> AgentMagics:
    """The AgentMagics loaded into ``ipython`` (the running shell when None) by
    ``%load_ext agent_kernel``; the shell owns it, so two shells have two."""
    if ipython is None:
        from IPython import get_ipython

        ipython = get_ipython()
    manager = getattr(ipython, "magics_manager", None)
    found = manager.registry.get("AgentMagics") if manager is not None else None
    if not isinstance(found, AgentMagics) or not found.loaded:
        raise RuntimeError("agent_kernel is not loaded: run %load_ext agent_kernel first")
    return found


def _client_takes_input(kernel: Any) -> bool:
    """False when the running cell's request said ``allow_stdin: false``: a headless client
    (nbclient, papermill) that answers neither ``input()`` nor the frontend probe.
    JupyterLab, Notebook 7 and VS Code send ``true``; unknown is taken as true."""
    try:
        content = kernel.get_parent().get("content") or {}
    except Exception:
        return True
    return content.get("allow_stdin", True) is not False


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """Register the magics, warm litellm up if the model needs it, probe the frontend."""
    magics = AgentMagics(shell=ipython, config=ipython.config)
    ipython.register_magics(magics)
    cleanup = ipython.input_transformers_cleanup
    if protect_help_syntax not in cleanup:
        cleanup.insert(0, protect_help_syntax)
    magics.loaded = True
    kernel_namespace.watch(ipython)
    magics.errors.watch()
    if getattr(ipython, "kernel", None) is not None and magics.interactive is None:
        magics.probe.send()
    for name in MAGIC_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            importlib.import_module(name).load(ipython, magics)
    magics._warm_up_for(Bunch(new=magics.model))  # demo needs no litellm: no warm-up
    ahead = threading.Thread(target=_import_ahead, args=(getattr(ipython, "kernel", None)
                                                         is not None,),
                             name="agent-kernel-warm-agent", daemon=True)
    ahead.start()
    atexit.register(ahead.join, 5.0)  # not torn down mid-import by a quick exit


def _import_ahead(widgets: bool) -> None:
    """Import what the first ``%agent`` needs (the loop, the models, the tools, in a kernel
    the widget view) off the cell, so its first output comes sooner; a failure is left to
    that run."""
    try:
        importlib.import_module("agent_kernel.app")
        # the models' own modules, which %load_ext leaves out: the demo's answers and the
        # litellm seam (not litellm itself), whichever the first run turns out to use
        importlib.import_module("agent_kernel.engine.models.demo_model")
        importlib.import_module("agent_kernel.engine.models.llm")
        importlib.import_module("agent_kernel.team.toolsets").default_toolsets()
        if widgets:
            importlib.import_module("agent_kernel.notebook.widgets")
    except Exception:
        pass


def unload_ipython_extension(ipython: InteractiveShell) -> None:
    """Stop listening; runs in progress are left to finish."""
    with contextlib.suppress(RuntimeError):
        magics = current(ipython)
        magics.loaded = False
        magics.errors.unwatch()
    kernel_namespace.unwatch(ipython)
    if protect_help_syntax in ipython.input_transformers_cleanup:
        ipython.input_transformers_cleanup.remove(protect_help_syntax)
