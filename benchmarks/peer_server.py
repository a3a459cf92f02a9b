"""The scripted server of ``benchmarks/peers.py``, in a process of its own.

One :class:`~scripted_server.ScriptedServer` (tests/scripted_server.py) answers every
framework. Runs go on concurrently, so a script consumed in order cannot serve them:
each answer is chosen from the request itself. The ``model`` field names who asks,
``family.role`` (``oa.solo``, ``pa-d.top``, ``ak-team.team``...), and what the request's
messages already hold says where that agent is: a worker that has not yet seen the
echo tool's result asks for it, one that has answers. The server keeps, per family, how
many requests came and the bytes of their ``tools`` field (compact JSON).

It runs in its own process (``multiprocessing``, spawn) so its threads never take the
interpreter lock from the frameworks being timed; the parent asks it for its counts
through a pipe.
"""

from __future__ import annotations

import json
import re
import sys
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from scripted_server import Call, Message, ScriptedServer  # noqa: E402

TOKEN = "bench-7f3a"
"""What the workers echo; seen outside an assistant message, the tool has answered."""
WORKER_DONE = "WORKER-DONE"
"""In every worker's answer; seen by a top agent, the delegated work has come back."""
TOP_DONE = "TOP-DONE"
FANOUT = re.compile(r"FANOUT=(\d+)")

DELEGATION_TOOL = {"oa-h": "transfer_to_worker", "oa-t": "worker", "sm-m": "worker",
                   "sm-m1": "worker", "pa-d": "delegate"}
"""The tool a top agent calls to hand work on, per family."""
FINAL_ANSWER_TOOL = {"sm", "sm-m", "sm-m1"}
"""smolagents' ToolCallingAgent ends a run by calling ``final_answer``, not with text."""


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else json.dumps(content)


def _seen(messages: list[dict[str, Any]], needle: str) -> bool:
    """Whether ``needle`` came back to the agent (in a tool or user message, not its own)."""
    return any(needle in _text(m) for m in messages
               if m.get("role") not in ("assistant", "system"))


def _answer(family: str, text: str, number: int) -> Message:
    if family in FINAL_ANSWER_TOOL:
        return Message(calls=[Call("final_answer", json.dumps({"answer": text}),
                                   id=f"call_{number}_final")])
    return Message(text=text)


def _delegations(family: str, count: int, number: int) -> Message:
    name = DELEGATION_TOOL[family]
    calls = []
    for i in range(count):
        task = f"job {i}: echo the token and say {WORKER_DONE}"
        arguments = {"oa-h": {}, "oa-t": {"input": task}, "sm-m": {"task": task},
                     "sm-m1": {"task": task}, "pa-d": {"task": task}}[family]
        calls.append(Call(name, json.dumps(arguments), id=f"call_{number}_{i}"))
    return Message(calls=calls)


def _worker(family: str, messages: list[dict[str, Any]], number: int) -> Message:
    if _seen(messages, TOKEN):
        return _answer(family, f"{WORKER_DONE}: the echo tool returned {TOKEN}", number)
    return Message(calls=[Call("echo", json.dumps({"value": TOKEN}), id=f"call_{number}_e")])


def _fanout(messages: list[dict[str, Any]]) -> int:
    for message in messages:
        found = FANOUT.search(_text(message)) if message.get("role") == "user" else None
        if found:
            return int(found.group(1))
    return 1


def _team(messages: list[dict[str, Any]], number: int) -> Message:
    """agent-kernel's Team: the role is in the system prompt (Teller, Planner, Worker)."""
    system = _text(messages[0]) if messages and messages[0].get("role") == "system" else ""
    last = messages[-1]
    if "Teller" in system:
        if last.get("role") == "user" and WORKER_DONE not in _text(last):
            count = _fanout(messages)
            prompt = f"FANOUT={count} " if count > 1 else ""
            return Message(calls=[Call("delegate", json.dumps(
                {"prompt": prompt + "get the job done"}), id=f"call_{number}_t")])
        return Message(text=f"{TOP_DONE}: the work came back")
    if "Planner" in system:
        if any(m.get("role") == "tool" for m in messages):
            return Message(text="planned")
        return Message(calls=[
            Call("delegate", json.dumps({"prompt": f"job {i}: echo the token"}),
                 id=f"call_{number}_{i}")
            for i in range(_fanout(messages))])
    return _worker("ak-team", messages, number)


def respond(model: str, messages: list[dict[str, Any]], number: int) -> Message:
    """The answer for one request, from who asks (``model``) and what it holds."""
    family, _, role = model.rpartition("/")[2].partition(".")
    if family.startswith("ak-team"):
        return _team(messages, number)
    if role == "top":
        if _seen(messages, WORKER_DONE):
            return _answer(family, f"{TOP_DONE}: the worker said {WORKER_DONE}", number)
        return _delegations(family, _fanout(messages), number)
    return _worker(family, messages, number)


class PeerServer(ScriptedServer):
    """Answers each request by :func:`respond`; counts requests and tool bytes per family."""

    def __init__(self) -> None:
        super().__init__()
        # http.server listens with a backlog of 5; 20 runs at once (and 50 fanned out)
        # connect together, and a full backlog would reset some of them.
        self._httpd.socket.listen(256)
        self.counts: dict[str, dict[str, int]] = {}
        self._made: dict[int, Message] = {}
        self._number = 0
        self.on_request = self._fill

    def _next(self) -> tuple[int, Message]:
        with self._lock:
            self._number += 1
            self._made[self._number] = Message()
            return self._number, self._made[self._number]

    def _fill(self, number: int, body: dict[str, Any]) -> None:
        model = str(body.get("model", "?"))
        made = respond(model, body.get("messages") or [], number)
        tools = body.get("tools") or []
        family = model.rpartition("/")[2].partition(".")[0]
        with self._lock:
            self._made.pop(number).__dict__.update(made.__dict__)
            row = self.counts.setdefault(family, {"requests": 0, "tool_bytes": 0,
                                                  "tools": 0, "streamed": 0})
            row["requests"] += 1
            row["tool_bytes"] += len(json.dumps(tools, separators=(",", ":")).encode())
            row["tools"] += len(tools)
            row["streamed"] += bool(body.get("stream"))
            self.requests.clear()  # the bodies are counted, not kept
            self.headers.clear()

    def take_counts(self) -> dict[str, dict[str, int]]:
        """The counts so far, and start again from zero."""
        with self._lock:
            counts, self.counts = self.counts, {}
        return counts


def serve(conn: Connection) -> None:
    """The server process: send the port, then answer ``counts`` until ``stop``."""
    with PeerServer() as server:
        conn.send(server.port)
        while True:
            command = conn.recv()
            if command == "counts":
                conn.send(server.take_counts())
            else:
                break
