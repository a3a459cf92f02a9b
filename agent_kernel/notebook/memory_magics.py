"""``%agent_memory``: list, search and forget the session agent's memories, as a table.

- ``%agent_memory`` or ``%agent_memory list [-n 20] [--all]``: the newest memories
  (``--all``: every agent's in the workspace);
- ``%agent_memory search QUERY [-n 5] [--tag T] [--after ISO] [--before ISO]``;
- ``%agent_memory forget MEMORY_ID [MEMORY_ID ...]``;
- ``%agent_memory status``: the embedding model, row counts and indices.

The magic only parses words; the work is :class:`~agent_kernel.memory.service.MemoryStore`'s,
the same API a script uses. Bad input prints a usage line, never a traceback.
"""

from __future__ import annotations

import argparse
import shlex
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_kernel.notebook.magics import AgentMagics

USAGE = ("usage: %agent_memory [list [-n N] [--all]] | search QUERY [-n N] [--tag T] "
         "[--after ISO] [--before ISO] | forget MEMORY_ID ... | status")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="%agent_memory", add_help=False, exit_on_error=False)
    sub = parser.add_subparsers(dest="command")
    listing = sub.add_parser("list", add_help=False, exit_on_error=False)
    listing.add_argument("-n", "--limit", type=int, default=20)
    listing.add_argument("--all", action="store_true")
    search = sub.add_parser("search", add_help=False, exit_on_error=False)
    search.add_argument("query", nargs="+")
    search.add_argument("-n", "--limit", type=int, default=5)
    search.add_argument("--tag", action="append")
    search.add_argument("--after")
    search.add_argument("--before")
    forget = sub.add_parser("forget", add_help=False, exit_on_error=False)
    forget.add_argument("ids", nargs="+")
    sub.add_parser("status", add_help=False, exit_on_error=False)
    return parser


def agent_memory(agent: Any, line: str) -> Any:
    """Run one ``%agent_memory`` command for ``agent``; returns what the cell shows."""
    try:
        words = shlex.split(line) or ["list"]
        args = _parser().parse_args(words)
    except (ValueError, argparse.ArgumentError, SystemExit) as exc:
        print(f"{exc}\n{USAGE}" if str(exc) else USAGE)
        return None
    from agent_kernel.memory.service import MemoryStore
    from agent_kernel.memory.warming import load_saying
    from agent_kernel.views.memory_table import MemoryTable

    held = agent.services.memory
    store = held if isinstance(held, MemoryStore) else MemoryStore.for_workspace(
        agent.workspace.root, uri=agent.settings.memory_uri,
        storage_options=agent.settings.memory_options)
    try:
        load_saying(store, print)  # the first use takes seconds: say so, then how long
        if args.command == "search":
            rows = store.search(" ".join(args.query), agent_id=agent.agent_id,
                                limit=args.limit, tags=args.tag, after=args.after,
                                before=args.before)
            return MemoryTable(rows, f"Memories matching “{' '.join(args.query)}”")
        if args.command == "forget":
            for memory_id in args.ids:
                gone = store.forget(memory_id, agent_id=agent.agent_id)
                print(f"Forgot {memory_id}." if gone else f"No memory {memory_id!r} for "
                      f"agent {agent.agent_id!r}; %agent_memory lists them.")
            return None
        if args.command == "status":
            print(f"Memory in {store.where}\n  embedding: {store.embedder_name}\n"
                  f"  memories: {store.count(agent.agent_id)} for {agent.agent_id!r}, "
                  f"{store.count()} in all (limit {store.max_memories} per agent)\n"
                  f"  full-text index: {store.tables.has_fts}, "
                  f"vector index: {store.tables.has_vector_index}")
            if store.notice:
                print(f"  note: {store.notice}")
            return None
        owner = None if args.all else agent.agent_id
        rows = store.list(agent_id=owner, limit=args.limit)
        who = "every agent" if args.all else f"agent {agent.agent_id!r}"
        return MemoryTable(rows, f"Newest memories of {who} ({store.count(owner)} in all)")
    except ValueError as exc:
        print(f"{exc}\n{USAGE}")
        return None


def load(ipython: Any, agent_magics: AgentMagics) -> None:
    """Register ``%agent_memory`` (nothing is opened until it is used)."""
    def magic(line: str) -> Any:
        return agent_memory(agent_magics.agent, line)

    magic.__doc__ = __doc__
    ipython.register_magic_function(magic, "line", "agent_memory")
