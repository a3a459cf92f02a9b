"""The offline ``demo`` model: served in-process, no litellm, the same turns as any model."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

import agent_kernel
from agent_kernel import Agent, Settings
from agent_kernel.core.events import ModelCallStarted, TextDelta
from agent_kernel.engine.models import DemoModel, resolve
from agent_kernel.engine.user_tools import INTERPRETER_TOOLS


def calls(result: Any) -> list[tuple[str, Any]]:
    """The calls a run made, without the find_tools searches that brought a tool in."""
    return [(c.tool_name, c.arguments) for c in result.tool_calls if c.tool_name != "find_tools"]


def made(result: Any) -> list[Any]:
    """The records of :func:`calls`."""
    return [c for c in result.tool_calls if c.tool_name != "find_tools"]


def model_calls(agent: Agent) -> list[Any]:
    seen: list[Any] = []
    agent.bus.subscribe(lambda e: seen.append(e) if isinstance(e, ModelCallStarted) else None)
    return seen


def test_a_demo_run_never_imports_litellm(tmp_path):
    """The demo answers in-process: a fresh process runs a tool call and an answer
    without litellm (seconds and ~190 MiB) ever being imported."""
    code = ("import json, sys\nfrom agent_kernel import Agent\n"
            "result = Agent(workspace=sys.argv[1]).run('echo hello')\n"
            "print(json.dumps({'reply': result.reply, 'heavy': [m for m in "
            "('litellm', 'ipywidgets') if m in sys.modules]}))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                         text=True, timeout=120, check=True)
    seen = json.loads(out.stdout.splitlines()[-1])
    assert seen == {"reply": "(offline demo model) The echo tool returned: hello", "heavy": []}


async def test_demo_turn_has_ids_usage_and_no_cost():
    messages = [{"role": "user", "content": "echo one and echo two"}]
    tools = [{"type": "function", "function": {"name": "echo", "parameters": {}}}]
    streamed: list[str] = []
    model = resolve("demo")
    assert isinstance(model, DemoModel)
    turn = await model.complete(messages, tools, Settings(), on_text=streamed.append,
                                on_retry=lambda *_: None)
    assert [(c.name, json.loads(c.arguments)) for c in turn.tool_calls] == [
        ("echo", {"value": "one"}), ("echo", {"value": "two"})]
    ids = [c.id for c in turn.tool_calls]
    assert len(set(ids)) == 2 and all(i.startswith("call_demo_") for i in ids)
    assert turn.finish_reason == "tool_calls" and turn.cost == 0.0
    assert turn.usage == {"prompt_tokens": 5, "completion_tokens": 0, "total_tokens": 5}
    results = [{"role": "tool", "tool_call_id": i, "content": v}
               for i, v in zip(ids, ("one", "two"), strict=True)]
    answer = await model.complete([*messages, turn.as_message(), *results], tools,
                                  Settings(), on_text=streamed.append, on_retry=lambda *_: None)
    assert answer.finish_reason == "stop" and not answer.tool_calls
    assert len(streamed) > 3 and "".join(streamed) == answer.text  # word by word
    assert "one" in answer.text and "two" in answer.text
    assert answer.usage["completion_tokens"] == len(answer.text.split())


async def test_says_it_is_the_offline_demo_model(tmp_path):
    agent = Agent(workspace=tmp_path)
    deltas: list[str] = []
    agent.bus.subscribe(lambda e: deltas.append(e.text) if isinstance(e, TextDelta) else None)
    result = await agent.arun("what can you do?")
    assert result.ok and result.model == "demo" and result.tool_calls == []
    assert result.reply.startswith("(offline demo model) I am the offline demo model")
    for name in ("`echo`", "`find_tools`", "`recall`"):  # what it is offered
        assert name in result.reply
    assert len(deltas) > 3 and "".join(deltas) == result.reply  # it streamed
    assert result.usage["completion_tokens"] > 0 and result.cost == 0.0


async def test_unmatched_prompt_is_answered_plainly(tmp_path):
    result = await Agent(workspace=tmp_path).arun("compose a sonnet about tides")
    assert result.ok and result.tool_calls == []
    assert "offline demo model" in result.reply
    assert "compose a sonnet about tides" in result.reply


async def test_echo(tmp_path):
    agent = Agent(workspace=tmp_path)
    result = await agent.arun("echo hello world")
    assert calls(result) == [("echo", {"value": "hello world"})]
    assert result.tool_calls[0].result == "hello world"
    assert result.reply == "(offline demo model) The echo tool returned: hello world"


async def test_two_echos_in_one_response(tmp_path):
    agent = Agent(workspace=tmp_path)
    seen = model_calls(agent)
    result = await agent.arun("echo first and echo second")
    assert calls(result) == [("echo", {"value": "first"}), ("echo", {"value": "second"})]
    assert len(seen) == 2  # one response with both calls, one answer
    assert "first" in result.reply and "second" in result.reply


async def test_log_decision(tmp_path):
    agent = Agent(workspace=tmp_path)
    result = await agent.arun("log decision: wait for the report")
    assert calls(result) == [("log_decision", {"reasoning": "wait for the report",
                                               "decision_type": "other"})]
    assert made(result)[0].success
    assert "decision_id" in result.reply


@pytest.fixture
def weather_state():
    agent_kernel.state("weather")(lambda: {"sky": "clear"})
    yield
    INTERPRETER_TOOLS.remove_state("weather")


async def test_query_state(tmp_path, weather_state):
    agent = Agent(workspace=tmp_path)
    result = await agent.arun("check the weather state")
    assert calls(result) == [("query_state", {"state_name": "weather"})]
    assert made(result)[0].result == {"sky": "clear"}
    assert '"sky": "clear"' in result.reply
    missing = await agent.arun("query_state tides")
    assert made(missing)[0].error == ("Tool 'query_state' execution failed: "
                                           "No state provider registered for 'tides'")
    assert "did not go through" in missing.reply


async def test_only_offered_tools_are_called(tmp_path):
    agent = Agent(workspace=tmp_path)
    agent.registry.remove("echo")
    result = await agent.arun("echo hello")
    assert calls(result) == [] and "offline demo model" in result.reply


async def test_non_streaming_path(tmp_path):
    agent = Agent(workspace=tmp_path, settings=Settings(stream=False))
    result = await agent.arun("echo steady")
    assert calls(result) == [("echo", {"value": "steady"})] and "steady" in result.reply


async def test_deterministic(tmp_path):
    prompts = ["what can you do?", "echo a and echo b", "log decision: hold",
               "something else entirely"]

    async def transcript(folder: str) -> list[tuple[str, list[tuple[str, Any]]]]:
        agent = Agent(workspace=tmp_path / folder)
        out = []
        for prompt in prompts:
            result = await agent.arun(prompt)
            reply = result.reply
            for call in result.tool_calls:  # ids and timestamps differ by design
                if isinstance(call.result, dict):
                    for value in call.result.values():
                        reply = reply.replace(str(value), "<id>")
            out.append((reply, calls(result)))
        return out

    assert await transcript("one") == await transcript("two")


def test_the_demo_model_calls_the_persons_own_tools(tmp_path):
    from agent_kernel import Agent, tool

    @tool(register=False)
    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: The first number.
            b: The second number.
        """
        return a + b

    @tool(register=False)
    def greet(name: str, shout: bool = False) -> str:
        """Greet someone.

        Args:
            name: Who.
            shout: Loudly.
        """
        return f"Hello, {name}!".upper() if shout else f"Hello, {name}!"

    agent = Agent(model="demo", workspace=tmp_path, tools=[add, greet])
    result = agent.run("add 2 and 3")
    assert [(c.tool_name, c.arguments, c.result) for c in result.tool_calls] == [
        ("add", {"a": 2, "b": 3}, 5)]
    assert "`add` returned 5" in result.reply
    result = agent.run("please use greet for 'Ada Lovelace'")
    assert result.tool_calls[0].arguments == {"name": "Ada Lovelace"}
    assert "Hello, Ada Lovelace!" in result.reply
    assert agent.run("add 2").tool_calls == []  # b cannot be read: no call, the help instead
    assert "add 2 and 3" in agent.run("what can you do?").reply


def test_a_fired_reminder_says_what_to_do() -> None:
    """A saved reminder's prompt, when it fires, gets the reminder back, not a shrug."""
    from agent_kernel.engine.models import demo

    schedule = [{"type": "function", "function": {"name": "schedule", "parameters": {}}}]
    fired = demo.respond([{"role": "user", "content": "remind me to stretch"}], schedule)
    assert fired.text.endswith("Reminder: stretch.") and not fired.tool_calls
    made = demo.respond([{"role": "user", "content": "remind me every 2 minutes to stretch"}],
                        schedule)
    assert [name for name, _ in made.tool_calls] == ["schedule"]


# --- the hands: files, commands, the web, JavaScript ------------------------------------------

HANDS = {"bash", "run_command", "read_file", "write_file", "list_files", "get_workspace_info",
         "url_fetch", "http_request", "web_search", "run_javascript", "echo", "remember",
         "schedule"}


@pytest.mark.parametrize(("prompt", "planned"), [
    ("list files", ("list_files", {})),
    ("please list the files in notes", ("list_files", {"path": "notes"})),
    ("what files are there?", ("list_files", {})),
    ("workspace info", ("get_workspace_info", {})),
    ("how big is the workspace?", ("get_workspace_info", {})),
    ("read file notes.txt", ("read_file", {"path": "notes.txt"})),
    ("what's in file notes/today.md?", ("read_file", {"path": "notes/today.md"})),
    ("append more words to file notes.txt",
     ("write_file", {"path": "notes.txt", "content": "more words", "mode": "append"})),
    ("run command: ls -la", ("bash", {"cmd": "ls -la"})),
    ("run `ls -la`", ("bash", {"cmd": "ls -la"})),
    ("run command: ls; echo done", ("bash", {"cmd": "ls; echo done"})),  # one command, whole
    ("fetch http://127.0.0.1:8765/page.html",
     ("url_fetch", {"url": "http://127.0.0.1:8765/page.html"})),
    ("fetch the page at https://example.org/", ("url_fetch", {"url": "https://example.org/"})),
    ("download https://example.org/a.csv to data/a.csv",
     ("url_fetch", {"url": "https://example.org/a.csv", "download_path": "data/a.csv"})),
    ("search the web for bubblewrap", ("web_search", {"q": "bubblewrap"})),
    ("web search tide tables", ("web_search", {"q": "tide tables"})),
    ("http request to https://example.org/x",
     ("http_request", {"url": "https://example.org/x", "method": "GET"})),
    ('send a POST request to https://example.org/x with {"a": 1}',
     ("http_request", {"url": "https://example.org/x", "method": "POST", "body": {"a": 1}})),
    ("delete http://example.org/x", ("url_fetch", {"url": "http://example.org/x",
                                                   "method": "DELETE"})),
    ('run javascript: return input.a + input.b with {"a": 123, "b": 456}',
     ("run_javascript", {"code": "return input.a + input.b", "input": {"a": 123, "b": 456}})),
    ("javascript: 6 * 7", ("run_javascript", {"code": "return 6 * 7;"})),
    ("run js: while (true) {}", ("run_javascript", {"code": "while (true) {}"})),
    ("remember the workspace size is big", ("remember", {"content": "the workspace size is big"})),
])
def test_the_new_tools_from_plain_words(prompt: str, planned: tuple[str, Any]) -> None:
    from agent_kernel.engine.models import demo

    assert demo.plan_calls(prompt, HANDS) == [planned]


def test_commands_go_to_run_command_when_bash_is_not_offered() -> None:
    from agent_kernel.engine.models import demo

    assert demo.plan_calls("run command: ls -la", HANDS - {"bash"}) == [
        ("run_command", {"command": "ls -la"})]
    assert demo.plan_calls("fetch https://example.org/", HANDS - {"url_fetch"}) == [
        ("http_request", {"url": "https://example.org/", "method": "GET"})]
    assert demo.plan_calls("run javascript: 1", HANDS - {"run_javascript"}) == []


def answer(name: str, arguments: dict[str, Any], result: Any) -> str:
    """The demo model's answer to one call of ``name`` that returned ``result``."""
    from agent_kernel.engine.models import demo

    content = result if isinstance(result, str) else json.dumps(result)
    call = {"id": "c1", "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}
    turn = demo.respond([{"role": "user", "content": "go"},
                         {"role": "assistant", "content": None, "tool_calls": [call]},
                         {"role": "tool", "tool_call_id": "c1", "content": content}], [])
    assert turn.text.startswith("(offline demo model) ") and not turn.tool_calls
    return turn.text.removeprefix("(offline demo model) ")


def test_failures_are_said_as_failures() -> None:
    refused = answer("write_file", {"path": "../x"},
                     {"ok": False, "error": "path '../x' is outside the workspace"})
    assert refused == ("`write_file` refused to write `../x`: path '../x' is outside the "
                       "workspace. Nothing was written.")
    assert "wrote" not in refused.replace("refused to write", "")
    full = answer("write_file", {"path": "a.txt"},
                  {"ok": False, "error": "write_file failed: No space left on device"})
    assert full == "I could not write `a.txt`: No space left on device."  # maybe half-written
    assert answer("read_file", {"path": "gone.txt"}, {
        "ok": False, "error": "no such file: files/gone.txt"}) == (
        "I could not read `gone.txt`: no such file: files/gone.txt.")
    exited = answer("run_command", {"command": "make"}, {
        "ok": False, "stdout": "", "stderr": "no rule\n", "exitCode": 2,
        "error": "the command exited with code 2", "sandbox": "bubblewrap, no network"})
    assert exited.startswith("The command `make` failed (bubblewrap, no network): it exited "
                             "with code 2.") and "no rule" in exited
    timed = answer("bash", {"cmd": "sleep 99"}, {"exit_code": -9, "stdout": "", "stderr": "",
                                                  "timed_out": True, "sandbox": "bubblewrap"})
    assert "was killed: it ran past its timeout" in timed and "code 0" not in timed
    assert answer("url_fetch", {"url": "http://h/missing"}, {
        "url": "http://h/missing", "status": 404, "format": "text", "content": "no such page"}
    ) == "The server answered HTTP 404 for `http://h/missing`:\n\n```\nno such page\n```"
    assert answer("http_request", {"url": "http://h/"}, {
        "ok": False, "error": "only https:// URLs can be fetched, got http://"}) == (
        "The GET request to `http://h/` failed: only https:// URLs can be fetched, got http://.")
    server_error = answer("http_request", {"url": "https://h/", "method": "post"}, {
        "ok": False, "status": 500, "headers": {}, "body": "", "error": "HTTP 500 Internal"})
    assert server_error == ("The server answered my POST request to `https://h/` with an "
                            "error: HTTP 500 Internal, with an empty body.")
    syntax = answer("run_javascript", {"code": "return ("},  # spec 004: a failure is an error
                    "Error: Tool 'run_javascript' execution failed: SyntaxError: unexpected "
                    "end\n  1 | return (")
    assert syntax == ("The JavaScript failed:\n\n```\nSyntaxError: unexpected end\n"
                      "  1 | return (\n```")
    assert answer("some_tool", {}, {"ok": False, "error": "tool is disabled"}) == (
        "`some_tool` failed: tool is disabled.")
    refused_call = answer("bash", {"cmd": "sudo ls"}, "Error: Tool 'bash' was not run: `sudo ls` "
                          "runs commands as root.\n\nDo not retry it.")
    assert refused_call == "The `bash` call did not go through: `sudo ls` runs commands as root."


def test_long_outputs_are_cut_and_say_so() -> None:
    lines = "\n".join(f"line {n}" for n in range(500))
    said = answer("bash", {"cmd": "seq"}, {"exit_code": 0, "stdout": lines, "stderr": "",
                                           "sandbox": "bubblewrap, no network"})
    assert "line 11" in said and "line 12\n" not in said and "line 499" not in said
    assert "more characters not shown)" in said and len(said) < 1000
    page = answer("url_fetch", {"url": "http://h/"}, {
        "url": "http://h/", "status": 200, "format": "markdown", "title": "T",
        "content": "word " * 5000, "truncated": True})
    assert len(page) < 1200 and "longer than the tool's limit" in page
    fenced = answer("read_file", {"path": "a.md"}, {"ok": True, "content": "```\nx\n```"})
    assert fenced == "`a.md` says:\n\n````\n```\nx\n```\n````"  # its fence cannot be broken


def test_results_are_words_not_json() -> None:
    listed = answer("list_files", {}, {"ok": True, "path": "files", "truncated": False,
                                       "entries": [{"name": "data", "type": "directory"},
                                                   {"name": "a.txt", "type": "file"}]})
    assert listed == "`files` holds 2 entries: `data/`, `a.txt`."
    info = answer("get_workspace_info", {}, {"ok": True, "truncated": False, "info": {
        "fileCount": 3, "directoryCount": 1, "totalSize": 2048, "lastModified": None}})
    assert info == "The workspace's file folders hold 3 files in 1 folder, 2.0 KB in all."
    found = answer("web_search", {"q": "x"}, {"query": "x", "results": [
        {"title": "A [b]", "url": "https://a.example/", "snippet": "first"},
        {"title": "Odd", "url": "javascript:alert(1)", "snippet": ""}]})
    assert found == ("I found 2 results for “x”:\n\n1. [A \\[b\\]](https://a.example/): first\n"
                     "2. Odd (`javascript:alert(1)`)")  # only web addresses become links
    assert answer("run_javascript", {}, {"n": 579}) == (  # the code's value itself
        'The JavaScript returned `{"n": 579}`.')
    for said in (listed, info, found):
        assert "{" not in said and '"ok"' not in said


async def test_a_real_run_says_what_really_happened(tmp_path):
    agent = Agent(workspace=tmp_path, settings=Settings(headless_approval="allow"))
    wrote = await agent.arun("write file notes.txt with hello there")
    assert wrote.tool_calls[0].success
    assert wrote.reply.endswith("I wrote the file `notes.txt` (11 bytes, saved as "
                                "`files/notes.txt`).")
    outside = await agent.arun("write file ../../outside.txt with nope")
    assert not outside.tool_calls[0].success
    assert "I wrote" not in outside.reply and "did not go through" in outside.reply
    assert "Nothing was written" in outside.reply
    assert not (tmp_path.parent / "outside.txt").exists()
    listed = await agent.arun("list files")
    assert listed.reply.endswith("`files` holds 1 entry: `notes.txt`.")
    read = await agent.arun("read file notes.txt")
    assert read.reply.endswith("`notes.txt` says:\n\n```\nhello there\n```")
    missing = await agent.arun("read file nope.txt")
    assert missing.reply.endswith("I could not read `nope.txt`: no such file: files/nope.txt.")
    refused = await agent.arun("fetch http://169.254.169.254/latest/meta-data/")
    assert not made(refused)[0].success
    assert "did not go through: network guard refused 169.254.169.254" in refused.reply
    computed = await agent.arun('run javascript: return input.a + input.b with '
                                '{"a": 123, "b": 456}')
    assert made(computed)[0].result == 579  # spec 004: the value itself
    assert computed.reply.endswith("The JavaScript returned `579`.")
    broken = await agent.arun("javascript: return (")
    assert not made(broken)[0].success
    assert "The JavaScript failed" in broken.reply and "returned" not in broken.reply


def test_a_result_too_long_for_the_model_is_still_said_in_words() -> None:
    """The loop cuts a long result (max_tool_result_chars) mid-JSON; the demo reads what it
    got, as a model would, instead of quoting broken JSON."""
    from agent_kernel.engine.tool_calls import ToolCallRecord, tool_message

    result = {"exit_code": 0, "stdout": "\n".join(f"row {n} \"quoted\"" for n in range(9000)),
              "stderr": "", "sandboxed": True, "sandbox": "bubblewrap, no network"}
    record = ToolCallRecord("c1", "bash", {"cmd": "seq"}, result, True, None, 5)
    told = tool_message(record, 1000)["content"]
    with pytest.raises(ValueError):
        json.loads(told)
    said = answer("bash", {"cmd": "seq"}, told)
    assert said.startswith("The command `seq` ran and exited with code 0. It printed:\n\n```\n"
                           'row 0 "quoted"\nrow 1 "quoted"\n')
    assert said.endswith("I read the first 1,000.)") and '"stdout"' not in said
