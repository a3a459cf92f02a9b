"""run_javascript: model-written JavaScript in a limited child process, never in the kernel."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from tool_helpers import call_tool

from agent_kernel import Agent, Settings
from agent_kernel.engine.registry import ToolContext, ToolError
from agent_kernel.guards import sandbox
from agent_kernel.tools import javascript

SANDBOXED = sandbox.find_bubblewrap() is not None


@pytest.fixture
def agent(tmp_path: Path) -> Agent:
    return Agent(workspace=tmp_path / "ws")


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> javascript.JavaScriptLimits:
    fresh = javascript.JavaScriptLimits()
    monkeypatch.setattr(javascript, "LIMITS", fresh)
    return fresh


async def call(agent: Agent, **arguments: Any) -> Any:
    """The tool's answer, seen as ``{ok: true, result}`` / ``{ok: false, error}`` so each
    test reads both outcomes alike: the tool itself returns the code's value (spec 004's
    examples) and raises its failure (see the run tests below for the shapes as such)."""
    try:
        value = await call_tool(agent, "run_javascript", **arguments)
    except ToolError as exc:
        return {"ok": False, "error": str(exc)}
    if isinstance(value, str) and "\n...[truncated: " in value:
        text, _, note = value.partition("\n...[truncated: ")
        return {"ok": True, "result": text, "truncated": True, "note": note.removesuffix("]")}
    return {"ok": True, "result": value}


def _parent(pid: int) -> int:
    """The parent of ``pid`` (0 once it is gone)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _ours(pid: int) -> bool:
    """Whether ``pid`` descends from this test process (not from another one running
    tests beside it, as a second pytest-xdist worker does)."""
    while pid > 1:
        pid = _parent(pid)
        if pid == os.getpid():
            return True
    return False


def runner_processes() -> dict[int, str]:
    """Live js_runner processes started from this test process: pid -> state letter."""
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if (b"js_runner.py" in cmdline and b"bwrap" not in cmdline.split(b"\0")[0]
                and _ours(int(entry.name))):
            found[int(entry.name)] = stat.rsplit(")", 1)[1].split()[0]
    return found


async def settled_runners() -> list[int]:
    """The runner processes once the spare started after a call is up (and only it)."""
    found: list[int] = []
    for _ in range(100):
        found = list(runner_processes())
        if len(found) == 1:
            break
        await asyncio.sleep(0.05)
    return found


def test_schema_and_approval(agent: Agent) -> None:
    tool = agent.registry.get("run_javascript")
    assert tool.side_effects is True
    assert set(tool.parameters["properties"]) == {"code", "input"}
    assert tool.parameters["required"] == ["code"]


async def test_the_spec_examples(agent: Agent) -> None:
    assert await call(agent, code="return input.a + input.b", input={"a": 123, "b": 456}) == {
        "ok": True, "result": 579}
    dated = await call(agent, code="const date = new Date(input.timestamp);\n"
                                   "return date.toISOString();", input={"timestamp": 1704499200000})
    assert dated == {"ok": True, "result": "2024-01-06T00:00:00.000Z"}
    items = [{"name": "A", "active": True}, {"name": "B", "active": False},
             {"name": "C", "active": True}]
    picked = await call(agent, code="return input.items\n .filter(x => x.active)\n"
                                    " .map(x => x.name);", input={"items": items})
    assert picked == {"ok": True, "result": ["A", "C"]}
    assert await call(agent, code="return input") == {"ok": True, "result": None}


async def test_each_call_starts_clean(agent: Agent) -> None:
    await call(agent, code="globalThis.leftover = 41; Object.prototype.polluted = 1; return 1")
    seen = await call(agent, code="return [typeof leftover, typeof ({}).polluted]")
    assert seen == {"ok": True, "result": ["undefined", "undefined"]}


async def test_nothing_but_plain_ecmascript(agent: Agent) -> None:
    names = ["require", "process", "fetch", "console", "std", "os", "print", "scriptArgs",
             "setTimeout", "XMLHttpRequest", "WebAssembly", "Deno", "Bun", "module", "exports"]
    code = "return input.map(n => typeof globalThis[n])"
    assert await call(agent, code=code, input=names) == {"ok": True,
                                                         "result": ["undefined"] * len(names)}
    imported = await call(agent, code="return import('os')")
    assert imported["ok"] is False
    # A Function made from a string still sees only the same globals.
    escaped = await call(agent, code="return (0, eval)('typeof require') + "
                                     "Function('return typeof process')()")
    assert escaped == {"ok": True, "result": "undefinedundefined"}


async def test_an_endless_loop_stops_and_the_next_call_works(
        agent: Agent, limits: javascript.JavaScriptLimits) -> None:
    limits.timeout_seconds = 1.0
    started = time.monotonic()
    stopped = await call(agent, code="while (true) {}")
    assert stopped == {"ok": False,
                       "error": "stopped after 1 s (the CPU time limit of run_javascript)"}
    assert time.monotonic() - started < limits.wall_seconds
    caught = await call(agent, code="try { for (;;) {} } catch (e) { return 'caught' }")
    assert caught["ok"] is False and "stopped after 1 s" in caught["error"]
    chained = await call(agent, code="let n = 0; const spin = () => { n++; "
                                     "return Promise.resolve().then(spin) }; return spin()")
    assert chained["ok"] is False
    assert await call(agent, code="return 6 * 7") == {"ok": True, "result": 42}


async def test_a_memory_bomb_ends_at_the_memory_limit(
        agent: Agent, limits: javascript.JavaScriptLimits) -> None:
    limits.memory_mib = 16
    for code in ["const a = []; while (true) a.push(new Array(100000).fill(a.length));",
                 "const m = new Map(); for (let i = 0; ; i++) m.set(i, {i, s: 'v' + i});",
                 "return new ArrayBuffer(64 * 1024 * 1024).byteLength"]:
        result = await call(agent, code=code)
        assert result["ok"] is False and "ran out of memory (limit 16 MiB)" in result["error"]
    assert await call(agent, code="return new Array(1000).fill(1).length") == {
        "ok": True, "result": 1000}


async def test_syntax_errors_name_the_line(agent: Agent) -> None:
    result = await call(agent, code="const a = 1;\nreturn a +;\n")
    assert result["ok"] is False
    assert result["error"].startswith("SyntaxError: ")
    assert "at line 2, column 11" in result["error"] and "2 | return a +;" in result["error"]
    # A body that closes the function it is wrapped in gains nothing: same engine, same
    # limits, and the next call starts clean.
    broken_out = await call(agent, code="}); globalThis.x = 1; (function () {")
    assert broken_out["ok"] is False and "returned undefined" in broken_out["error"]
    assert await call(agent, code="return typeof x") == {"ok": True, "result": "undefined"}


async def test_thrown_errors_read_well(agent: Agent) -> None:
    thrown = await call(agent, code="const user = null;\n\nreturn user.name;")
    assert thrown == {"ok": False, "error": "TypeError: cannot read property 'name' of null at "
                                            "line 3, column 8\n  3 | return user.name;"}
    custom = await call(agent, code="throw new RangeError('amount must be positive')")
    assert custom["error"].startswith("RangeError: amount must be positive at line 1")
    assert await call(agent, code="throw 'boom'") == {"ok": False, "error": 'uncaught "boom"'}
    assert await call(agent, code="throw {code: 7}") == {"ok": False,
                                                         "error": "uncaught [object Object]"}
    rejected = await call(agent, code="return Promise.reject(new Error('later'))")
    assert rejected["error"].startswith("Error: later at line 1")
    deep = await call(agent, code="function f(n) { return f(n + 1) }\nreturn f(0)")
    assert "Maximum call stack size exceeded" in deep["error"] and "line 1" in deep["error"]
    # A thrown object whose every property throws still gives an answer.
    hostile = await call(agent, code="throw new Proxy({}, {get() { throw 1 }, "
                                     "getPrototypeOf() { throw 2 }})")
    assert hostile["ok"] is False and hostile["error"]


@pytest.mark.parametrize(("code", "said"), [
    ("let x = 1", "the code returned undefined: end it with an explicit `return <value>`"),
    ("return () => 1", "result is a function, which JSON cannot hold"),
    ("return {total: 10n ** 30n}", "result.total is a BigInt (1000000000000000000000000000000n)"),
    ("const a = {items: [1]}; a.items.push(a); return a",
     "the result is circular: result.items[1] refers back to an object that contains it"),
    ("return {'a b': [0, NaN]}", 'result["a b"][1] is NaN, which JSON cannot hold'),
    ("return [Infinity]", "result[0] is Infinity"),
    ("return {m: new Map([[1, 2]])}", "result.m is a Map"),
    ("return new Set([1])", "result is a Set"),
    ("return Symbol('s')", "result is a Symbol"),
    ("return new Promise(() => {})", "the returned Promise never settled"),
    ("return {toJSON() { throw new Error('no') }}",
     "the result could not be turned into JSON: Error: no at line 1"),
])
async def test_results_json_cannot_hold_get_a_clear_answer(
        agent: Agent, code: str, said: str) -> None:
    result = await call(agent, code=code)
    assert result["ok"] is False and said in result["error"], result


async def test_json_shaped_values_come_back_as_json(agent: Agent) -> None:
    result = await call(agent, code="return {when: new Date(0), gone: undefined, "
                                    "holes: [undefined, 1], neg: -0, big: 2 ** 53, "
                                    "later: await_free()}\nfunction await_free() { return 'ok' }")
    assert result == {"ok": True, "result": {"when": "1970-01-01T00:00:00.000Z",
                                             "holes": [None, 1], "neg": 0,
                                             "big": 9007199254740992, "later": "ok"}}
    assert await call(agent, code="return (async () => 'settled')()") == {
        "ok": True, "result": "settled"}


async def test_huge_output_is_truncated_and_says_so(
        agent: Agent, limits: javascript.JavaScriptLimits) -> None:
    limits.max_result_chars = 5000
    result = await call(agent, code="return Array.from({length: 3000}, (_, i) => i)")
    assert result["ok"] is True and result["truncated"] is True
    assert isinstance(result["result"], str) and len(result["result"]) == 5000
    assert result["result"].startswith("[0,1,2,3,")
    whole = len(json.dumps(list(range(3000)), separators=(",", ":")))
    assert f"{whole:,} characters of JSON; only the first 5,000 are shown" in result["note"]
    small = await call(agent, code="return 'x'.repeat(4998)")
    assert small == {"ok": True, "result": "x" * 4998}


async def test_results_nested_too_deeply_are_refused(agent: Agent) -> None:
    result = await call(agent, code="let d = []; for (let i = 0; i < 5000; i++) d = [d]; "
                                    "return d")
    assert result["ok"] is False and "nested too deeply" in result["error"]


HOSTILE = ["\"}); process.exit(1); ({\"", "\\", "\\u0000", "\x00\x01\x7f", "\u2028\u2029",
           "</script><script>alert(1)</script>", "${globalThis}", "`", "'\"",
           "\ud800", "\udfff tail", "😀 emoji, 中文, العربية, \u202e reversed",
           "a" * 10000, "\n\r\t", "__proto__", "return input"]


async def test_hostile_strings_round_trip(agent: Agent) -> None:
    back = await call(agent, code="return input", input=HOSTILE)
    assert back == {"ok": True, "result": HOSTILE}
    keys = {text[:50]: text for text in HOSTILE}
    assert await call(agent, code="return input", input=keys) == {"ok": True, "result": keys}
    lengths = await call(agent, code="return input.map(s => s.length)", input=HOSTILE)
    assert lengths["result"] == [len(text.encode("utf-16-le", "surrogatepass")) // 2
                                 for text in HOSTILE]
    # The same strings written into the code itself, as JSON literals.
    literal = await call(agent, code=f"return {json.dumps(HOSTILE)}")
    assert literal == {"ok": True, "result": HOSTILE}


async def test_bad_input_is_refused_before_running(
        agent: Agent, limits: javascript.JavaScriptLimits) -> None:
    with pytest.raises(ToolError, match="^input must be JSON data"):
        await javascript.run_javascript("return 1", ToolContext(
            agent=agent, run_id="r", agent_id="a", workspace=agent.workspace), float("nan"))
    limits.max_input_bytes = 1000
    big = await call(agent, code="return 1", input="x" * 2000)
    assert big == {"ok": False, "error": "input is 2,002 bytes of JSON; at most 1,000 are "
                                         "accepted"}
    limits.timeout_seconds = 600
    with pytest.raises(ValueError, match="timeout_seconds must be between 0 and 60"):
        await call(agent, code="return 1")


async def test_the_child_is_limited_by_the_kernel_too(
        agent: Agent, limits: javascript.JavaScriptLimits) -> None:
    limits.memory_mib = 32
    limits.timeout_seconds = 2.0
    await call(agent, code="return 1")  # leaves a spare for these limits
    [pid] = await settled_runners()
    rows: dict[str, list[str]] = {}
    for _ in range(100):  # the spare limits itself first thing after it starts
        text = Path(f"/proc/{pid}/limits").read_text()
        rows = {line[:26].strip(): line[26:].split() for line in text.splitlines()[1:]}
        if rows["Max processes"][0] == "0":
            break
        await asyncio.sleep(0.05)
    assert rows["Max cpu time"][:2] == ["4", "5"]
    assert rows["Max address space"][0] == str(256 * 2**20 + 3 * 32 * 2**20)
    assert rows["Max file size"][0] == "0" and rows["Max open files"][0] == "4"
    # Nothing of the kernel's environment (bubblewrap sets PWD only).
    assert set(Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")) <= {b"", b"PWD=/"}


def _run_boxed(argv: list[str]) -> tuple[int, str, str]:
    """Run ``argv`` the way the tool starts its child (the seccomp filter handed over)."""
    import subprocess

    from agent_kernel.guards import sandbox

    process = sandbox.start(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = process.communicate(timeout=30)
    return process.returncode, out.decode(), err.decode()


@pytest.mark.skipif(not SANDBOXED, reason="bubblewrap cannot start here")
def test_the_child_sees_no_workspace_and_no_network(agent: Agent) -> None:
    import socket
    import tempfile

    ledger = agent.workspace.path("ledger.jsonl")
    ledger.write_text('{"secret": "ledger line"}\n')
    argv, boxed = javascript.command(agent.workspace)
    assert boxed and "--unshare-net" in argv and "--bind" not in argv  # nothing writable
    box = list(argv[:argv.index("--") + 1])
    with socket.socket() as listener, tempfile.TemporaryDirectory(dir="/var/tmp") as folder, \
            socket.socket(socket.AF_UNIX) as local:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        local.bind(f"{folder}/service.sock")
        local.listen()
        probe = ("import socket, sys\n"
                 f"try: socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
                 "except OSError as e: print(f'no network: {e}')\n"
                 "s = socket.socket(socket.AF_UNIX)\n"
                 f"s.connect('{folder}/service.sock')\n")
        code, _out, err = _run_boxed([*box, javascript.sys.executable, "-I", "-c", probe])
    assert code != 0 and "no network" in _out
    assert "Address family not supported" in err  # no Unix socket to connect with
    code, out, _err = _run_boxed([*box, "cat", str(ledger)])
    assert code != 0 and "ledger line" not in out
    code, _out, _err = _run_boxed([*box, "touch", "/etc/js-runner-was-here"])
    assert code != 0 and not Path("/etc/js-runner-was-here").exists()


async def test_stop_kills_the_running_code(agent: Agent) -> None:
    task = asyncio.ensure_future(call(agent, code="while (true) {}"))
    busy: list[int] = []
    for _ in range(100):
        await asyncio.sleep(0.05)
        busy = [pid for pid, state in runner_processes().items() if state == "R"]
        if busy:
            break
    assert busy, "the code never started"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(100):
        if not set(busy) & set(runner_processes()):
            break
        await asyncio.sleep(0.05)
    assert not set(busy) & set(runner_processes())


async def test_the_spare_serves_one_call_only(agent: Agent) -> None:
    await call(agent, code="return 1")
    before = set(runner_processes())
    await call(agent, code="return 2")
    for _ in range(100):
        after = set(runner_processes())
        if after and not after & before:
            break
        await asyncio.sleep(0.05)
    assert after and not after & before
    javascript.drop_spare()
    for _ in range(100):
        if not runner_processes():
            break
        await asyncio.sleep(0.05)
    assert not runner_processes()


# Through a real run: approvals first, the model reads the envelope, the ledger keeps it.

def run_agent(tmp_path: Path, policy: str, code: str, data: Any,
              ask: bool = False) -> tuple[Any, Any, Agent]:
    from scripted_server import Call, Message, ScriptedServer

    with ScriptedServer() as server:
        agent = Agent(model="openai/test-model", workspace=tmp_path / "ws",
                      settings=Settings(api_base=server.base_url, api_key="sk-test-0123456789ab",
                                        headless_approval=policy,
                                        ask_before={"run_javascript": True} if ask else {}))
        server.script(Message(calls=[Call("run_javascript",
                                          json.dumps({"code": code, "input": data}))]),
                      Message(text="done"))
        result = asyncio.run(agent.arun("add them"))
        told = server.tool_messages(1)
    return result, told, agent


@pytest.mark.timeout(60)
def test_a_run_asks_first_then_the_model_reads_the_result(tmp_path: Path) -> None:
    # By default the sandbox protects, so nothing asks (issue 25: approvals by effect) ...
    result, told, agent = run_agent(tmp_path / "free", "deny", "return input.a + input.b",
                                    {"a": 123, "b": 456})
    assert json.loads(told[0]["content"]) == 579  # spec 004: "result = 579"
    assert "approval" not in [r.get("kind") for r in agent.ledger.records()]
    # ... and a person who chose to be asked is.
    result, told, agent = run_agent(tmp_path / "yes", "allow", "return input.a + input.b",
                                    {"a": 123, "b": 456}, ask=True)
    assert result.ok and result.reply == "done"
    assert json.loads(told[0]["content"]) == 579
    kinds = [r.get("kind") for r in agent.ledger.records()]
    assert "approval" in kinds
    [record] = [r for r in agent.ledger.records() if r.get("kind") == "tool_call"]
    assert record["tool_name"] == "run_javascript" and record["result"] == 579

    result, told, agent = run_agent(tmp_path / "no", "deny", "return 1", None, ask=True)
    assert result.ok and result.reply == "done"
    assert told[0]["content"].startswith("Error: ") and "579" not in told[0]["content"]
    [record] = [r for r in agent.ledger.records() if r.get("kind") == "tool_call"]
    assert record["success"] is False


@pytest.mark.timeout(60)
def test_a_failing_script_is_a_result_the_run_carries_on_from(tmp_path: Path) -> None:
    result, told, _ = run_agent(tmp_path, "allow", "return input.missing.field", {})
    assert result.ok and result.reply == "done"
    said = told[0]["content"]  # the failure is an error the model reads, never a value
    assert said.startswith("Error: Tool 'run_javascript' execution failed: TypeError: cannot "
                           "read property 'field' of undefined")


@pytest.mark.kernel
@pytest.mark.timeout(120)
def test_the_kernel_lives_on_after_an_endless_loop(run_notebook: Any, output_text: Any,
                                                   tmp_path: Path) -> None:
    cells = [
        "import asyncio, os\n"
        "from agent_kernel import Agent\n"
        "from agent_kernel.tools import javascript\n"
        "from agent_kernel.engine.registry import ToolContext\n"
        f"agent = Agent(workspace={str(tmp_path / 'ws')!r})\n"
        "ctx = ToolContext(agent=agent, run_id='r', agent_id='a', workspace=agent.workspace)\n"
        "javascript.LIMITS.timeout_seconds = 1.0\n"
        "print(await javascript.run_script('while (true) {}', ctx))",
        "print(await javascript.run_javascript('return input * 2', ctx, 21), os.getpid())",
    ]
    nb = run_notebook(cells)
    assert "stopped after 1 s" in output_text(nb.cells[0])
    assert output_text(nb.cells[1]).startswith("42 ")  # the value itself (spec 004)
    assert str(os.getpid()) not in output_text(nb.cells[1])
