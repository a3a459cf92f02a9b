"""``python -m agent_kernel memory ...``: the workspace's memory from a terminal.

The same :class:`~agent_kernel.memory.service.MemoryStore` the kernels use, on
the same LanceDB tables, so what a kernel remembers is here at once and what
this command writes a kernel recalls on its next search:

- ``memory list [-n 20] [--all]``: the newest memories of ``--agent``
  (``--all``: every agent's);
- ``memory search QUERY [-n 5] [--tag T] [--after ISO] [--before ISO]``;
- ``memory remember TEXT [--tag T] [--long-term]``;
- ``memory forget MEMORY_ID ...``;
- ``memory status``: the embedding model, counts and indices;
- ``memory maintain``: run housekeeping now (vector index when due,
  compaction, old versions removed).

Exit code 0 on success, 1 when the input is refused (the message says why)
or a memory to forget does not exist.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from agent_kernel.cli import EXAMPLES, examples, leave

if TYPE_CHECKING:
    from agent_kernel.cli.grammar import Subparsers


def add_parser(sub: Subparsers) -> argparse.ArgumentParser:
    """Add the ``memory`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "memory", help="list, search, add to and forget the workspace's memories",
        formatter_class=EXAMPLES,
        epilog=examples("memory list -n 10", 'memory search "the build server" --tag infra',
                        'memory remember "the build server is orion-7" --long-term',
                        "memory forget mem_20261123_140000_1a2b3c4d", "memory status"))
    parser.add_argument("--workspace", default=None,
                        help="workspace folder (default: $AGENT_KERNEL_WORKSPACE or .agent/)")
    parser.add_argument("--memory", default=None, metavar="URI",
                        help="memory at an object-store URI, e.g. s3://bucket/prefix (default: "
                             "$AGENT_KERNEL_MEMORY_URI, else the workspace folder; 'local': "
                             "the workspace folder); credentials come from the environment")
    parser.add_argument("--memory-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a storage option for --memory: endpoint, region, allow_http, ...")
    parser.add_argument("--agent", default="agent",
                        help="whose memories (default 'agent', the notebook's default agent)")
    actions = parser.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="the newest memories")
    listing.add_argument("-n", "--limit", type=int, default=20)
    listing.add_argument("--all", action="store_true", help="every agent's memories")
    search = actions.add_parser("search", help="hybrid search, best first")
    search.add_argument("query", nargs="+")
    search.add_argument("-n", "--limit", type=int, default=5)
    search.add_argument("--tag", action="append", help="only memories with this tag")
    search.add_argument("--after", help="only memories from this time on (ISO 8601)")
    search.add_argument("--before", help="only memories up to this time (ISO 8601)")
    remember = actions.add_parser("remember", help="store one memory")
    remember.add_argument("text", nargs="+")
    remember.add_argument("--tag", action="append")
    remember.add_argument("--long-term", action="store_true",
                          help="keep it when the per-agent limit cleans old memories")
    forget = actions.add_parser("forget", help="delete memories by id")
    forget.add_argument("ids", nargs="+")
    actions.add_parser("status", help="embedding model, counts, indices")
    actions.add_parser("maintain", help="run housekeeping now")
    return parser


def run(args: argparse.Namespace) -> int:
    """Do one memory action and print its result."""
    from agent_kernel.core import object_store
    from agent_kernel.core.workspace import Workspace
    from agent_kernel.memory.service import MemoryStore
    from agent_kernel.memory.warming import load_saying
    from agent_kernel.views.memory_table import MemoryTable

    try:
        uri, options = _place(args)
    except object_store.StoreConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    store = MemoryStore(Workspace(args.workspace).ensure(), uri=uri, storage_options=options)
    load_saying(store, lambda line: print(f"[info] {line}", file=sys.stderr, flush=True))
    if args.action == "list":
        owner = None if args.all else args.agent
        who = "every agent" if args.all else f"agent {args.agent!r}"
        print(MemoryTable(store.list(agent_id=owner, limit=args.limit),
                          f"Newest memories of {who} ({store.count(owner)} in all)"))
    elif args.action == "search":
        query = " ".join(args.query)
        rows = store.search(query, agent_id=args.agent, limit=args.limit, tags=args.tag,
                            after=args.after, before=args.before)
        print(MemoryTable(rows, f"Memories matching “{query}”"))
    elif args.action == "remember":
        saved = store.remember(" ".join(args.text), agent_id=args.agent, tags=args.tag,
                               long_term=args.long_term)
        print(f"Remembered {saved['memory_id']} at {saved['timestamp']} ({saved['path']}).")
    elif args.action == "forget":
        missing = [i for i in args.ids if not store.forget(i, agent_id=args.agent)]
        for memory_id in args.ids:
            print(f"No memory {memory_id!r} for agent {args.agent!r}." if memory_id in missing
                  else f"Forgot {memory_id}.")
        return 1 if missing else 0
    elif args.action == "status":
        print(f"Memory in {store.where}\n  embedding: {store.embedder_name}\n"
              f"  memories: {store.count(args.agent)} for {args.agent!r}, {store.count()} in all"
              f"\n  full-text index: {store.tables.has_fts}, "
              f"vector index: {store.tables.has_vector_index}")
        if store.notice:
            print(f"  note: {store.notice}")
    else:
        done = store.maintain()
        print("Housekeeping: " + (f"failed: {done['error']}" if "error" in done else
                                  f"vector index built: {done['vector_index']}, "
                                  f"optimized: {done['optimized']}"))
        return 1 if "error" in done else 0
    return 0


def main(args: argparse.Namespace) -> int:
    """Run the action; refused input prints the reason and exits 1, and so does a failure
    of memory's object store (in one sentence)."""
    try:
        code = run(args)
    except Exception as exc:
        said = _store_failure(args, exc)
        if said is None and not isinstance(exc, ValueError):
            raise
        print(f"error: {said or exc}", file=sys.stderr if said else sys.stdout)
        code = 1
    return leave(code)


def _place(args: argparse.Namespace) -> tuple[str | None, dict[str, str]]:
    """The memory's object-store URI (None: the workspace folder; ``local`` is that even
    with $AGENT_KERNEL_MEMORY_URI set) and its options; raises StoreConfigError."""
    from agent_kernel.core import object_store

    given = (args.memory or "").strip()
    uri = (None if object_store.means_local(given) else object_store.check_uri(given) if given
           else object_store.default_uri())
    return uri, dict(object_store.parse_option(o) for o in args.memory_option)


def _store_failure(args: argparse.Namespace, exc: BaseException) -> str | None:
    """The sentence for a failure of memory's object store, or None (not one)."""
    from agent_kernel.core import object_store

    try:
        uri, options = _place(args)
    except object_store.StoreConfigError:
        return None
    return object_store.store_failure(exc, uri, options) if uri else None
