"""An approved ``bash`` command, played as an attacker: the runtime's files stay out of reach.

Every attack runs through the real ``bash`` tool in the real bubblewrap sandbox and
tries to change the ledger, a trigger, the memory mirror and tables, the pending
question, the workspace folder or the notebook folder around it. Afterwards every
one of those files must be byte-identical and nothing new may appear, while
``files/`` and ``state/`` stay writable. Every process a command starts (detached,
double-forked) is gone after it ends, times out or is stopped, for both faces
(``bash``, ``run_command``). Without bubblewrap commands are refused, unless the
person opted in to unsandboxed commands.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tool_helpers import call_tool

from agent_kernel import Agent, Settings
from agent_kernel.engine.registry import ToolError
from agent_kernel.guards import sandbox
from agent_kernel.tools import commands

RUNTIME_FILES = {
    "ledger.jsonl": b'{"seq": 1, "hash": "abc"}\n',
    "triggers/t1.json": b'{"condition": "True"}\n',
    "memory.md": b"# memory\n- likes tea\n",
    "memory/2026.md": b"mirror\n",
    "lancedb/memory.lance/data.bin": b"\x00table\x01",
    "pending_question.json": b'{"question": "ok?"}\n',
    "ledger.jsonl.lock": b"",
}
NOTEBOOK = b'{"cells": []}\n'


@pytest.fixture(autouse=True)
def needs_bubblewrap() -> None:
    if sandbox.find_bubblewrap() is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must test the sandbox: {sandbox.unavailable_reason()}")
        pytest.skip(sandbox.unavailable_reason())


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> commands.CommandLimits:
    fresh = commands.CommandLimits()
    monkeypatch.setattr(commands, "LIMITS", fresh)
    return fresh


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """A folder outside /tmp (which the sandbox replaces), so commands see the real one."""
    base = Path("/var/tmp")
    if not base.is_dir():
        yield tmp_path
        return
    made = Path(tempfile.mkdtemp(prefix="agent-kernel-sandbox-", dir=base))
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


@pytest.fixture
def agent(home: Path, limits: commands.CommandLimits) -> Agent:
    notebook_dir = home / "project"
    notebook_dir.mkdir()
    (notebook_dir / "analysis.ipynb").write_bytes(NOTEBOOK)
    made = Agent(workspace=notebook_dir / ".agent", settings=Settings(headless_approval="allow"))
    root = made.workspace.ensure()
    for relative, data in RUNTIME_FILES.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(data)
    return made


def snapshot(agent: Agent) -> dict[str, tuple[bytes, int]]:
    """Every file and folder outside files/ and state/, from the notebook folder's parent."""
    top = agent.workspace.root.parent.parent
    seen: dict[str, tuple[bytes, int]] = {}
    for path in sorted(top.rglob("*")):
        relative = path.relative_to(top).as_posix()
        if "/.agent/files" in relative or "/.agent/state" in relative:
            continue
        info = path.lstat()
        data = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
        seen[relative] = (data, info.st_mtime_ns if path.is_file() else 0)
    return seen


call = call_tool


ATTACKS = [
    'echo pwned >> "../led""ger.jsonl"',
    "echo pwned >> ../led*.jsonl",
    "for f in ../*; do echo pwned >> \"$f\"; done",
    "echo pwned >> \"../$(printf 'ledger.jsonl')\"",
    "L=../ledger; echo pwned >> \"$L.jsonl\"",
    "cd .. && echo pwned >> ledger.jsonl",
    "cd .. && echo '{}' > triggers/evil.json",
    "echo '{\"condition\": \"1\"}' > ../triggers/evil.json",
    "mkdir -p ../triggers && cp /etc/hostname ../triggers/evil.json",
    "echo pwned >> ../memory.md",
    "echo pwned > ../memory/2026.md",
    "echo pwned > ../lancedb/x",
    "echo pwned > ../lancedb/memory.lance/data.bin",
    "echo pwned > ../pending_question.json",
    "rm -f ../ledger.jsonl.lock ../pending_question.json",
    "echo pwned >> /proc/self/cwd/../ledger.jsonl",
    "echo pwned >> ROOT/ledger.jsonl",
    "echo pwned >> /proc/self/root/ROOT/ledger.jsonl",
    "echo pwned >> /proc/1/root/ROOT/ledger.jsonl",
    "for p in /proc/[0-9]*; do echo pwned >> $p/root/ROOT/ledger.jsonl; done",
    "for p in /proc/[0-9]*; do echo pwned >> $p/cwd/../memory.md; done",
    "ln -s ../ledger.jsonl x; echo pwned >> x",
    "ln -s ../triggers t; echo '{}' > t/evil.json",
    "ln ../ledger.jsonl hard; echo pwned >> hard",
    "ln ROOT/memory.md hard2; echo pwned >> hard2",
    "mv ROOT ROOT.moved",
    "mv ../triggers ../t2",
    "rm -rf ROOT/triggers ROOT/lancedb",
    "touch ../ledger.jsonl ../memory.md",
    "echo pwned > NOTEBOOK_DIR/analysis.ipynb",
    "echo pwned > NOTEBOOK_DIR/new.py",
    "mv NOTEBOOK_DIR NOTEBOOK_DIR.moved",
    "echo pwned > NOTEBOOK_DIR/../sibling.txt",
    "python3 -c \"open('ROOT/ledger.jsonl', 'a').write('pwned')\"",
    "python3 -c \"import os; os.rename('ROOT/memory.md', 'ROOT/files/m.md')\"",
    "mount -o remount,rw ROOT; umount ROOT; echo pwned >> ROOT/ledger.jsonl",
    "mount --bind ROOT ROOT/files/up && echo pwned >> ROOT/files/up/ledger.jsonl",
    "setsid bash -c 'sleep 0.3; echo pwned >> ROOT/ledger.jsonl' &",
]


@pytest.mark.parametrize("attack", ATTACKS)
async def test_an_approved_command_cannot_touch_the_runtime(agent: Agent, attack: str) -> None:
    root = agent.workspace.root
    before = snapshot(agent)
    cmd = attack.replace("NOTEBOOK_DIR", str(root.parent)).replace("ROOT", str(root))
    result = await call(agent, "bash", cmd=cmd)
    await asyncio.sleep(0.4)  # anything left running has had its chance
    assert result["sandboxed"] is True
    assert snapshot(agent) == before, result
    assert "pwned" not in result["stdout"]


async def test_files_and_state_are_writable(agent: Agent) -> None:
    result = await call(agent, "bash", cmd="echo one > a.txt && mkdir -p sub && "
                                           "echo two > ../state/plan.md && cat a.txt")
    assert result == {"exit_code": 0, "stdout": "one\n", "stderr": "", "sandboxed": True,
                      "sandbox": "bubblewrap, no network"}
    root = agent.workspace.root
    assert (root / "files" / "a.txt").read_text() == "one\n"
    assert (root / "state" / "plan.md").read_text() == "two\n"
    where = await call(agent, "bash", cmd="pwd && echo three > b.txt", cwd="file_state_dir/.")
    assert Path(where["stdout"].strip()) == root / "state"
    assert (root / "state" / "b.txt").read_text() == "three\n"


async def test_the_runtime_files_are_hidden_from_commands(agent: Agent) -> None:
    result = await call(agent, "bash", cmd="ls -A ..; cat ../ledger.jsonl ../memory.md")
    assert sorted(result["stdout"].split()) == ["files", "state"]
    assert "likes tea" not in result["stdout"] and result["exit_code"] != 0


async def test_the_persons_credentials_are_hidden_from_commands(
        agent: Agent, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The cloud's chain reads ~/.aws (files_uri and memory_uri take their keys from it):
    # an approved command must not print one for the model to read.
    person = home / "person"
    (person / ".aws").mkdir(parents=True)
    (person / ".aws" / "credentials").write_text("aws_secret_access_key = wJalrXUt-FAKE-KEY\n")
    (person / ".ssh").mkdir()
    (person / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY----- FAKE\n")
    (person / ".netrc").write_text("machine example.org password FAKE-NETRC\n")
    elsewhere = home / "gcloud.json"
    elsewhere.write_text('{"private_key": "FAKE-GCLOUD"}')
    (person / "notes.txt").write_text("not a secret\n")
    monkeypatch.setenv("HOME", str(person))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(elsewhere))
    result = await call(agent, "bash", cmd=(
        f"cat {person}/.aws/credentials {person}/.ssh/id_ed25519 {person}/.netrc {elsewhere}; "
        f"ls -A {person}/.aws {person}/.ssh; cat {person}/notes.txt"))
    seen = result["stdout"] + result["stderr"]
    assert "FAKE" not in seen and "not a secret" in result["stdout"]
    assert (person / ".aws" / "credentials").read_text().startswith("aws_secret")  # untouched
    assert {person / ".aws", person / ".ssh", person / ".netrc", elsewhere} <= set(
        sandbox.credential_paths())


async def test_a_command_sees_only_its_own_processes(agent: Agent) -> None:
    result = await call(agent, "bash", cmd="ls /proc | grep -c '^[0-9]'; cat /proc/1/cmdline")
    count = int(result["stdout"].split()[0])
    assert count < 6, result
    assert str(os.getpid()) not in result["stdout"].split()[0]


async def test_a_command_has_no_capabilities(agent: Agent) -> None:
    result = await call(agent, "bash", cmd="grep CapEff /proc/self/status; mknod dev c 1 3")
    assert "CapEff:\t0000000000000000" in result["stdout"]
    assert not (agent.workspace.root / "files" / "dev").exists()


async def test_the_demo_model_path_is_sandboxed_too(agent: Agent) -> None:
    before = snapshot(agent)
    result = await agent.arun("run command: echo pwned$((40+2)) >> ../memory.md")
    [record] = result.tool_calls
    assert record.tool_name == "bash" and record.result["sandboxed"] is True
    assert "Read-only file system" in record.result["stderr"]
    assert (agent.workspace.root / "memory.md").read_bytes() == RUNTIME_FILES["memory.md"]
    assert "pwned42" not in (agent.workspace.root / "ledger.jsonl").read_text()
    assert before["project/.agent/triggers/t1.json"] == snapshot(agent)[
        "project/.agent/triggers/t1.json"]
    assert agent.services.history_writer.flush(30)  # done before the folder goes


# The environment: an allow-list, the person's additions, never a secret.

async def test_the_environment_is_clean(
        agent: Agent, limits: commands.CommandLimits, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = {"OPENAI_API_KEY": "sk-proj-abcdefghijklmnop0123",
               "ANTHROPIC_API_KEY": "sk-ant-abcdefghijklmnop0123",
               "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
               "GITHUB_TOKEN": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}
    for name, value in {**secrets, "MY_SETTING": "visible-value",
                        "UNLISTED": "not-for-commands", "LANG": "C.UTF-8"}.items():
        monkeypatch.setenv(name, value)
    limits.env = ["MY_SETTING", "GITHUB_TOKEN"]
    result = await call(agent, "bash", cmd="env")
    seen = dict(line.split("=", 1) for line in result["stdout"].splitlines() if "=" in line)
    assert seen["MY_SETTING"] == "visible-value" and seen["LANG"] == "C.UTF-8"
    assert seen["TMPDIR"] == "/tmp" and seen["PATH"] == os.environ["PATH"]
    for name, value in {**secrets, "UNLISTED": "not-for-commands"}.items():
        assert name not in seen and value not in result["stdout"]
    assert result["env_dropped"] == ["GITHUB_TOKEN"]
    assert "hold secrets" in result["env_note"]


async def test_the_environment_is_clean_without_the_sandbox_too(
        agent: Agent, limits: commands.CommandLimits, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "find_bubblewrap", lambda: None)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-abcdefghijklmnop0123")
    monkeypatch.setenv("MY_SETTING", "visible-value")
    limits.env = ["MY_SETTING"]
    limits.allow_unsandboxed = True
    result = await call(agent, "bash", cmd="env")
    assert result["sandboxed"] is False
    assert "MY_SETTING=visible-value" in result["stdout"]
    assert "OPENAI_API_KEY" not in result["stdout"] and "sk-proj" not in result["stdout"]


# Timeouts and Stop end every process the command started.

def survivors(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


async def wait_for_none(marker: str, seconds: float = 3.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while survivors(marker) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return survivors(marker)


@pytest.mark.timeout(30)
async def test_a_timeout_kills_detached_children(agent: Agent) -> None:
    marker = f"{os.getpid()}{time.monotonic_ns() % 10**6}"  # sleep 100.<marker>: 100 s
    cmd = (f"setsid sleep 100.{marker} & nohup sleep 101.{marker} >/dev/null 2>&1 & "
           f"(sleep 102.{marker} &) ; echo started; sleep 30")
    result = await call(agent, "bash", cmd=cmd, timeout_seconds=1)
    assert result["timed_out"] is True and result["stdout"] == "started\n"
    assert await wait_for_none(marker) == []


@pytest.mark.timeout(30)
async def test_stop_kills_detached_children(agent: Agent) -> None:
    marker = f"{os.getpid()}{time.monotonic_ns() % 10**6}"  # sleep 100.<marker>: 100 s
    task = asyncio.ensure_future(call(agent, "bash", cmd=f"setsid sleep 200.{marker} & sleep 30"))
    deadline = time.monotonic() + 5
    while not survivors(marker) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert survivors(marker), "the command never started"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_for_none(marker) == []


@pytest.mark.timeout(30)
async def test_a_finished_command_leaves_nothing_behind(agent: Agent) -> None:
    marker = f"{os.getpid()}{time.monotonic_ns() % 10**6}"  # sleep 100.<marker>: 100 s
    started = time.perf_counter()
    result = await call(agent, "bash", cmd=f"setsid sleep 300.{marker} > /dev/null 2>&1 & echo ok")
    assert result["stdout"] == "ok\n" and time.perf_counter() - started < 10
    assert await wait_for_none(marker) == []


DAEMON = ("python3 -c \"import os; os.fork() and os._exit(0); os.setsid(); "
          "os.fork() and os._exit(0); os.execvp('sleep', ['sleep', '{seconds}.{marker}'])\"")


@pytest.mark.timeout(30)
@pytest.mark.parametrize("ending", ["exit", "timeout", "stop"])
@pytest.mark.parametrize("name,key,timeout", [("bash", "cmd", "timeout_seconds"),
                                              ("run_command", "command", "timeoutMs")])
async def test_a_double_forked_daemon_dies_with_the_command(
        agent: Agent, name: str, key: str, timeout: str, ending: str) -> None:
    marker = f"{os.getpid()}{time.monotonic_ns() % 10**6}"
    daemon = DAEMON.format(seconds=300, marker=marker)
    script = daemon + ("; echo ok" if ending == "exit" else "; sleep 30")
    arguments: dict[str, Any] = {key: script}
    if ending == "timeout":
        arguments[timeout] = 1 if name == "bash" else 1000
    task = asyncio.ensure_future(call(agent, name, **arguments))
    deadline = time.monotonic() + 5
    while not survivors(marker) and time.monotonic() < deadline and not task.done():
        await asyncio.sleep(0.05)
    if ending == "stop":
        assert survivors(marker), "the daemon never started"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    else:
        result = await task
        assert result["stdout"] == ("ok\n" if ending == "exit" else "")
    assert await wait_for_none(marker) == []


# No bubblewrap: refuse and say why, unless the person opted in.

async def test_without_bubblewrap_bash_refuses_and_says_how_to_fix(
        agent: Agent, limits: commands.CommandLimits, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "find_bubblewrap", lambda: None)
    monkeypatch.setattr(sandbox, "unavailable_reason",
                        lambda: "bubblewrap (bwrap) is not installed")
    with pytest.raises(ToolError) as caught:
        await call(agent, "bash", cmd="touch made.txt")
    message = str(caught.value)
    assert "bubblewrap (bwrap) is not installed" in message
    assert "apt-get install bubblewrap" in message and "allow_unsandboxed = True" in message
    assert not (agent.workspace.root / "files" / "made.txt").exists()
    limits.allow_unsandboxed = True
    result = await call(agent, "bash", cmd="touch made.txt")
    assert result["sandboxed"] is False and result["exit_code"] == 0
    assert (agent.workspace.root / "files" / "made.txt").exists()


def test_the_probe_reports_a_missing_or_broken_bwrap(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sandbox.forget()
    try:
        monkeypatch.setenv("PATH", str(tmp_path))
        assert sandbox.find_bubblewrap() is None
        assert sandbox.unavailable_reason() == "bubblewrap (bwrap) is not installed"
        fake = tmp_path / "bwrap"
        fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\n"
                        "exit 1\n")
        fake.chmod(0o755)
        sandbox.forget()
        assert sandbox.find_bubblewrap() is None
        assert "cannot start a sandbox here (bwrap: No permissions to create new namespace)" \
            in sandbox.unavailable_reason()
    finally:
        monkeypatch.undo()
        sandbox.forget()
    assert sandbox.find_bubblewrap() is not None


# The command line itself.

def test_the_argv_hides_the_workspace_and_rebinds_files_and_state(
        home: Path, tmp_path: Path) -> None:
    root = home / "ws"
    (home / "runtime").mkdir()
    box = sandbox.Sandbox(root=root, writable=(root / "files", root / "state"),
                          cwd=root / "files", env={"PATH": "/usr/bin"},
                          hidden=(home / "runtime", tmp_path))
    argv = box.argv("/usr/bin/bwrap", ["bash", "-c", "true"])
    assert argv[:5] == ["/usr/bin/bwrap", "--ro-bind", "/", "/", "--dev"]
    assert argv[-4:] == ["--", "bash", "-c", "true"]
    joined = " ".join(argv)
    assert (f"--tmpfs {root} --bind {root}/files {root}/files "
            f"--bind {root}/state {root}/state") in joined
    assert joined.index(f"--remount-ro {root}") > joined.index(f"--bind {root}/state")
    assert f"--tmpfs {home}/runtime" in joined
    assert f"--tmpfs {tmp_path} " not in joined  # under /tmp, already a fresh tmpfs
    for flag in ("--unshare-pid", "--proc /proc", "--tmpfs /tmp", "--new-session",
                 "--die-with-parent", "--cap-drop ALL", "--clearenv --setenv PATH /usr/bin"):
        assert flag in joined


def test_jupyter_connection_files_are_hidden(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = tmp_path / "jupyter-runtime"
    runtime.mkdir()
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    assert runtime.resolve() in sandbox.private_paths()


async def test_a_hidden_file_cannot_be_read(agent: Agent) -> None:
    # A kernel started with ``-f`` keeps its connection file where it was told to.
    connection = agent.workspace.root.parent / "kernel-9.json"
    connection.write_text('{"key": "hmac-secret"}')
    box = sandbox.Sandbox(root=agent.workspace.root, writable=(agent.workspace.root / "files",),
                          cwd=Path("/"), env={"PATH": os.environ["PATH"]},
                          hidden=(connection,))
    (agent.workspace.root / "files").mkdir(exist_ok=True)
    bwrap = sandbox.find_bubblewrap()
    assert bwrap is not None
    proc = await asyncio.create_subprocess_exec(
        *box.argv(bwrap, ["bash", "-c", f"cat {connection}; echo x > {connection}"]),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    assert out == b"" and err.count(b"Permission denied") == 2  # a /dev/null it cannot open
    assert connection.read_text() == '{"key": "hmac-secret"}'


@pytest.mark.parametrize("hide", ["tmp_path", "/tmp"])
async def test_a_hidden_folder_around_the_workspace_still_works(tmp_path: Path, hide: str) -> None:
    # The connection-file folder may hold the notebook folder (ipykernel writes it to /tmp
    # when started alone): the workspace is rebuilt inside, and /tmp stays writable.
    root = tmp_path / "nb" / ".agent"
    (root / "files").mkdir(parents=True)
    (root / "state").mkdir()
    (tmp_path / "kernel-1.json").write_text('{"key": "hmac"}')
    box = sandbox.Sandbox(root=root, writable=(root / "files", root / "state"),
                          cwd=root / "files", env={"PATH": os.environ["PATH"]},
                          hidden=(tmp_path if hide == "tmp_path" else Path(hide),))
    bwrap = sandbox.find_bubblewrap()
    assert bwrap is not None
    cmd = f"cat {tmp_path}/kernel-1.json; echo ok > out.txt; echo t > /tmp/t && cat /tmp/t"
    proc = await asyncio.create_subprocess_exec(
        *box.argv(bwrap, ["bash", "-c", cmd]),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    assert out == b"t\n" and b"No such file" in err
    assert (root / "files" / "out.txt").read_text() == "ok\n"


@pytest.mark.timeout(30)
async def test_unsandboxed_timeout_returns_even_if_a_detached_child_holds_the_output(
        agent: Agent, limits: commands.CommandLimits, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "find_bubblewrap", lambda: None)
    limits.allow_unsandboxed = True
    marker = f"{os.getpid()}{time.monotonic_ns() % 10**6}"
    started = time.perf_counter()
    try:
        result = await call(agent, "bash", cmd=f"setsid sleep 20.{marker} & sleep 30",
                            timeout_seconds=0.5)
        assert result["timed_out"] is True and result["sandboxed"] is False
        assert result["stderr"].startswith("[later output lost: a process the command detached")
        assert time.perf_counter() - started < 10
        # Without the sandbox a detached process survives: what docs/security.md warns of.
        assert survivors(f"sleep 20.{marker}")
    finally:
        for pid in survivors(f"sleep 20.{marker}"):
            os.kill(pid, 9)


def test_kept_paths_under_tmp_stay_visible_read_only(tmp_path: Path) -> None:
    """An interpreter in a virtual environment under /tmp must still run in the sandbox."""
    bwrap = sandbox.find_bubblewrap()
    if bwrap is None:
        pytest.skip(sandbox.unavailable_reason())
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    tool = venv / "tool"
    tool.write_text("#!/bin/sh\necho from the kept folder\n")
    tool.chmod(0o755)
    secret = tmp_path / "venv" / "bin" / "secret.txt"
    secret.write_text("hidden even inside a kept folder")
    other = tmp_path / "other.txt"
    other.write_text("not kept")

    def run(keep: tuple[Path, ...], command: str) -> tuple[int, str]:
        box = sandbox.Sandbox(root=None, writable=(), cwd=Path("/"), env={"PATH": "/usr/bin"},
                              hidden=(secret,), keep=keep)
        import subprocess

        done = subprocess.run(box.argv(bwrap, ["sh", "-c", command]), capture_output=True,
                              text=True, timeout=30)
        return done.returncode, done.stdout + done.stderr

    assert run((), str(tool))[0] != 0  # /tmp is a fresh tmpfs: nothing of it is there
    code, out = run((venv,), f"{tool}; cat {secret}; cat {other}; touch {venv}/new")
    assert "from the kept folder" in out
    assert "hidden even inside" not in out and "not kept" not in out
    assert not (venv / "new").exists() and "Read-only file system" in out
