"""Bounded commands, played as an attacker: processes, memory, files, /tmp, sockets, keys.

Every command runs for real through the ``bash`` or ``run_command`` tool in the real
bubblewrap sandbox, in a real cgroup where this machine lets us make one. A command
that forks 2,000 processes, allocates 4 GiB, writes 2 GB to ``files/`` or to ``/tmp``
ends within seconds with words that name the limit, while an asyncio ticker in this
process (the kernel's event loop) keeps ticking; one test does it in a real kernel
through nbclient. A Unix socket served by this process outside the workspace, stream
or datagram, cannot be reached from a command without the network (the seccomp filter;
``/run`` is hidden too), nor through a socketpair's end, and can with it. A key this
process puts in its session keyring cannot be read, with or without the network; nor
can a command open a vsock or packet socket. Each guard's test runs the same probe
without the guard too, and sees it get through. Ordinary commands still work.

To keep the tests cheap on two cores, the file, ``/tmp`` and memory tests lower those
limits to 64-256 MiB (the words then name the lowered figure); the process and
address-space tests use the defaults.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import struct
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from tool_helpers import call_tool

from agent_kernel import Agent, Settings
from agent_kernel.engine.registry import ToolError
from agent_kernel.guards import cgroups, command_limits, sandbox, seccomp
from agent_kernel.tools import commands
from agent_kernel.views import summaries

CGROUP = set(cgroups.controllers()) == {"pids", "memory"}


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
def outside() -> Iterator[Path]:
    """A folder outside /tmp (which the sandbox replaces) and outside the workspace."""
    base = Path("/var/tmp") if Path("/var/tmp").is_dir() else None
    made = Path(tempfile.mkdtemp(prefix="agent-kernel-limits-", dir=base))
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


@pytest.fixture
def agent(outside: Path, limits: commands.CommandLimits) -> Agent:
    return Agent(workspace=outside / "project" / ".agent",
                 settings=Settings(headless_approval="allow"))


class Ticker:
    """The kernel's event loop at work: the longest gap between 20 ms ticks."""

    def __init__(self) -> None:
        self.longest = 0.0
        self.ticks = 0

    async def run(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.02)
            now = time.perf_counter()
            self.longest = max(self.longest, now - last)
            self.ticks += 1
            last = now


@pytest.fixture
async def ticker() -> AsyncIterator[Ticker]:
    ticking = Ticker()
    task = asyncio.ensure_future(ticking.run())
    yield ticking
    task.cancel()


async def timed(agent: Agent, name: str, **arguments: Any) -> tuple[dict[str, Any], float]:
    started = time.perf_counter()
    result = await call_tool(agent, name, **arguments)
    return result, time.perf_counter() - started


def leftover_groups(seconds: float = 3.0) -> list[Path]:
    """This process's command groups still there after ``seconds`` (removal runs on)."""
    mine = f"agent-kernel-{os.getpid()}-"
    deadline = time.monotonic() + seconds
    while True:
        left = [entry for parent in cgroups.controllers().values() if parent.is_dir()
                for entry in parent.iterdir() if entry.name.startswith(mine)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


# Processes.

FORK_2000 = "for i in $(seq 2000); do sleep 60 & done; wait"


@pytest.mark.timeout(60)
async def test_a_command_that_forks_2000_processes_is_stopped(
        agent: Agent, ticker: Ticker) -> None:
    if "pids" not in cgroups.controllers():
        pytest.skip(f"no pids cgroup here: {cgroups.unavailable_reason()}")
    result, took = await timed(agent, "bash", cmd=FORK_2000)
    assert result["limit"] == "stopped: it tried to run more than 512 processes at once"
    assert result["stderr"].endswith(
        "[stopped: it tried to run more than 512 processes at once; to change it: "
        "agent_kernel.tools.commands.LIMITS.max_processes]")
    assert "timed_out" not in result and took < 10, took
    assert ticker.ticks > 0 and ticker.longest < 1.0, ticker.longest
    assert leftover_groups() == []
    face, _took = await timed(agent, "run_command", command=FORK_2000)
    assert face["ok"] is False and face["error"].startswith(
        "stopped: it tried to run more than 512 processes at once (exit code")
    assert face["limit"] == result["limit"]
    line = summaries.summarise("bash", {"cmd": FORK_2000}, result, success=True,
                               duration_ms=None)
    assert line.endswith("· stopped: it tried to run more than 512 processes at once"), line


async def test_a_pipe_and_a_few_hundred_processes_still_run(agent: Agent) -> None:
    result = await call_tool(agent, "bash", cmd="seq 1 1000 | sort -rn | head -3 | wc -l; "
                                                "for i in $(seq 400); do true & done; wait; "
                                                "echo done")
    assert result["stdout"] == "3\ndone\n" and result["exit_code"] == 0, result
    assert "limit" not in result


def test_the_process_limit_is_counted_inside_the_sandbox_not_across_the_machine(
        limits: commands.CommandLimits) -> None:
    """``ulimit -u`` runs inside bubblewrap (its own user namespace), never before it."""
    inner = command_limits.bash_argv("true", limits, count_processes=True)
    assert inner[:2] == ["bash", "-c"] and f"-u {limits.max_processes}" in inner[2]
    assert inner[-1] == "true" and inner[2].endswith('exec bash -c "$1"')
    assert "-u" not in command_limits.bash_argv("true", limits, False)[2].split()


# Memory.

@pytest.mark.timeout(60)
async def test_allocating_4_gib_at_once_fails_at_the_address_space_limit(
        agent: Agent, ticker: Ticker) -> None:
    result, took = await timed(agent, "bash",
                               cmd="python3 -c 'b = bytearray(4 << 30); print(len(b))'")
    assert result["stdout"] == "" and "MemoryError" in result["stderr"]
    assert result["limit"] == "it ran out of memory (limit 4 GiB of address space per process)"
    assert "LIMITS.address_space_mib]" in result["stderr"]
    assert took < 10 and ticker.longest < 1.0, (took, ticker.longest)


GROW = ("python3 -c 'import time\nchunks = []\n"
        "for i in range(64):\n    chunks.append(bytearray(64 << 20))\n    time.sleep(0.01)\n"
        "print(len(chunks))'")  # 4 GiB in 64 MiB steps, each under the address-space limit


@pytest.mark.timeout(60)
async def test_a_command_that_grows_to_4_gib_is_stopped_at_the_memory_limit(
        agent: Agent, limits: commands.CommandLimits, ticker: Ticker) -> None:
    if "memory" not in cgroups.controllers():
        pytest.skip(f"no memory cgroup here: {cgroups.unavailable_reason()}")
    limits.memory_mib = 256
    limits.address_space_mib = 8192  # so only the cgroup can stop it
    result, took = await timed(agent, "bash", cmd=GROW)
    assert result["stdout"] == "" and result["exit_code"] != 0
    assert result["limit"] == "stopped: it ran out of memory (limit 256 MiB)"
    assert "LIMITS.memory_mib]" in result["stderr"]
    assert took < 15 and ticker.longest < 1.0, (took, ticker.longest)
    assert leftover_groups() == []


async def test_tmp_counts_against_the_memory_limit(
        agent: Agent, limits: commands.CommandLimits) -> None:
    if "memory" not in cgroups.controllers():
        pytest.skip(f"no memory cgroup here: {cgroups.unavailable_reason()}")
    limits.memory_mib = 128
    limits.tmp_mib = 1024  # larger than the memory: the cgroup stops it first
    result = await call_tool(agent, "bash", cmd="head -c 600000000 /dev/zero > /tmp/big; "
                                                "sleep 5; echo after")
    assert result["limit"] == "stopped: it ran out of memory (limit 128 MiB)", result
    assert "after" not in result["stdout"]


# Files and /tmp.

@pytest.mark.timeout(60)
async def test_a_command_that_writes_2_gb_to_files_meets_the_file_size_limit(
        agent: Agent, limits: commands.CommandLimits, ticker: Ticker) -> None:
    limits.file_size_mib = 64
    result, took = await timed(agent, "bash", cmd="head -c 2000000000 /dev/zero > big.bin")
    big = agent.workspace.root / "files" / "big.bin"
    assert big.stat().st_size == 64 << 20
    assert result["exit_code"] == 153  # 128 + SIGXFSZ
    assert result["limit"] == "a file reached the size limit (64 MiB)"
    assert "LIMITS.file_size_mib]" in result["stderr"]
    assert took < 10 and ticker.longest < 1.0, (took, ticker.longest)
    python = await call_tool(agent, "run_command", command=(
        "python3 -c 'open(\"b2.bin\", \"wb\").write(bytes(100 << 20))'"))  # ignores SIGXFSZ
    assert python["ok"] is False and "File too large" in python["stderr"]
    assert python["error"].startswith("a file reached the size limit (64 MiB)")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("folder", ["/tmp", "/dev/shm"])
async def test_a_command_that_writes_2_gb_to_tmp_finds_it_full(
        agent: Agent, limits: commands.CommandLimits, ticker: Ticker, folder: str) -> None:
    limits.tmp_mib = 64
    result, took = await timed(agent, "bash", cmd=f"head -c 2000000000 /dev/zero > {folder}/x;"
                                                  f" stat -c %s {folder}/x; df -m {folder}")
    assert result["stdout"].splitlines()[0] == str(64 << 20)
    assert "No space left on device" in result["stderr"]
    assert result["limit"] == ("a write found no space: /tmp holds 64 MiB in the sandbox "
                               "(files/ and state/ have what the disk has)")
    assert took < 10 and ticker.longest < 1.0, (took, ticker.longest)


async def test_the_rest_of_dev_is_read_only(agent: Agent) -> None:
    result = await call_tool(agent, "bash", cmd="echo x > /dev/big; echo ok > /dev/null; "
                                                "echo $?")
    assert "Read-only file system" in result["stderr"] and result["stdout"] == "0\n"


async def test_too_many_open_files_says_so(agent: Agent) -> None:
    result = await call_tool(agent, "bash", cmd=(
        "python3 -c 'fs = [open(\"/dev/null\") for i in range(5000)]'"))
    assert "Too many open files" in result["stderr"]
    assert result["limit"] == "it reached the limit of 1024 open files per process"


async def test_the_limits_cannot_be_raised_from_inside(agent: Agent) -> None:
    result = await call_tool(agent, "bash", cmd=(
        "ulimit -v unlimited || echo refused-v; ulimit -f unlimited || echo refused-f; "
        "ulimit -n 100000 || echo refused-n; ulimit -c unlimited || echo refused-c; "
        "cat /proc/self/oom_score_adj; echo -1000 > /proc/self/oom_score_adj || echo kept"))
    for word in ("refused-v", "refused-f", "refused-n", "refused-c", "1000", "kept"):
        assert word in result["stdout"].split(), result


@pytest.mark.parametrize("name,value", [("tmp_mib", 0), ("max_processes", -1),
                                        ("memory_mib", 1.5), ("open_files", True)])
async def test_a_setting_that_would_lift_a_limit_is_refused(
        agent: Agent, limits: commands.CommandLimits, name: str, value: Any) -> None:
    setattr(limits, name, value)
    with pytest.raises(ToolError, match=f"LIMITS.{name} must be a whole number of at least"):
        commands.precheck("echo hi", "bash", None, "timeout_seconds")
    face = await call_tool(agent, "run_command", command="echo hi")
    assert face["ok"] is False and f"LIMITS.{name} must be" in face["error"]
    assert "stdout" not in face


# Without a cgroup: rlimits alone, and the state line says what that costs.

@pytest.mark.timeout(60)
async def test_without_a_cgroup_the_address_space_limit_still_holds_and_the_line_says_so(
        agent: Agent, limits: commands.CommandLimits) -> None:
    limits.use_cgroup = False
    result = await call_tool(agent, "bash", cmd="python3 -c 'b = bytearray(4 << 30)'; "
                                                "cat /proc/self/cgroup")
    assert result["limit"] == "it ran out of memory (limit 4 GiB of address space per process)"
    assert result["sandbox"].startswith("bubblewrap, no network (memory limited per process "
                                        "only, no cgroup: commands.LIMITS.use_cgroup is off; ")
    assert "agent-kernel-" not in result["stdout"]
    expected = ("process count not limited (root ignores RLIMIT_NPROC)" if os.geteuid() == 0
                else "process count limited per user namespace")
    assert expected in result["sandbox"]


NOBODY = 65534
AS_USER = """
import asyncio, json, sys
from pathlib import Path
from agent_kernel import Agent
from agent_kernel.engine.registry import ToolContext
async def main():
    agent = Agent(workspace=Path(sys.argv[1]))
    tool = agent.registry.get("bash")
    ctx = ToolContext(agent=agent, run_id="r", agent_id="a", workspace=agent.workspace)
    for cmd in sys.argv[2:]:
        print(json.dumps(await tool.invoke(tool.validate({"cmd": cmd}), ctx)), flush=True)
asyncio.run(main())
"""


def processes_of(uid: int) -> int:
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                count += entry.stat().st_uid == uid
            except OSError:
                continue
    return count


@pytest.mark.timeout(120)
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="runs the tool as an ordinary user, which needs root and setpriv")
def test_as_an_ordinary_user_without_a_cgroup_the_process_count_is_the_sandboxs_own(
        outside: Path) -> None:
    """No cgroup (an ordinary user may not make one here): RLIMIT_NPROC, set inside the
    sandbox's user namespace, counts the command's processes only; a fork bomb is stopped
    as soon as bash says its fork was refused, not at the timeout."""
    import json
    import signal
    import subprocess
    import sys

    outside.chmod(0o755)
    home = outside / "user"
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    (home / "run.py").write_text(AS_USER)
    become = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "PYTHONPATH": os.environ.get(
        "PYTHONPATH", str(Path(__file__).resolve().parents[2]))}
    crowd = subprocess.Popen([*become, "bash", "-c", "for i in $(seq 600); do sleep 90 & done;"
                              " wait"], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while processes_of(NOBODY) < 600 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert processes_of(NOBODY) >= 600  # more than the limit, outside any sandbox
        started = time.perf_counter()
        done = subprocess.run(
            [*become, sys.executable, str(home / "run.py"), str(home / "ws"),
             "for i in $(seq 100); do sleep 1 & done; wait; echo all-100-ran",
             "for i in $(seq 2000); do sleep 60 & done; wait"],
            env=env, capture_output=True, text=True, timeout=90, cwd=home)
        took = time.perf_counter() - started
    finally:
        os.killpg(crowd.pid, signal.SIGKILL)
        crowd.wait()
    few, bomb = (json.loads(line) for line in done.stdout.splitlines())
    assert few["stdout"] == "all-100-ran\n" and "limit" not in few, (few, done.stderr)
    assert few["sandbox"].startswith("bubblewrap, no network (memory limited per process only,"
                                     " no cgroup: cannot make a cgroup in ")
    assert few["sandbox"].endswith("; process count limited per user namespace)")
    assert bomb["limit"] == "stopped: it tried to run more than 512 processes at once", bomb
    assert "timed_out" not in bomb and took < 25, took


def test_where_a_commands_cgroup_goes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """v2: beside the kernel's group when that one holds processes; v1: under the kernel's
    group in each hierarchy, read through the mount's own root (a container's)."""
    unified = tmp_path / "unified"
    scope = unified / "user.slice" / "app.scope"
    scope.mkdir(parents=True)
    (unified / "user.slice" / "cgroup.subtree_control").write_text("cpu memory pids\n")
    (scope / "cgroup.subtree_control").write_text("\n")
    monkeypatch.setattr(cgroups, "_mounts", lambda: [("/", unified, "cgroup2", set())])
    monkeypatch.setattr(cgroups, "_own_paths", lambda: {"": "/user.slice/app.scope"})
    assert cgroups._parents() == ({"pids": scope.parent, "memory": scope.parent}, "")
    (unified / "user.slice" / "cgroup.subtree_control").write_text("cpu\n")
    assert cgroups._parents()[0] == {} and "nor its parent passes" in cgroups._parents()[1]
    pids, memory = tmp_path / "pids", tmp_path / "memory"
    monkeypatch.setattr(cgroups, "_mounts", lambda: [
        ("/docker/abc", pids, "cgroup", {"rw", "pids"}),
        ("/docker/abc", memory, "cgroup", {"rw", "memory"})])
    monkeypatch.setattr(cgroups, "_own_paths", lambda: {
        "pids": "/docker/abc/kernel", "memory": "/docker/abc", "": "/"})
    assert cgroups._parents() == ({"pids": pids / "kernel", "memory": memory}, "")


def test_the_state_line_is_plain_where_every_limit_holds(limits: commands.CommandLimits) -> None:
    if not (CGROUP and sandbox.sizes_tmpfs() and seccomp.program()):
        pytest.skip("this machine cannot hold every limit")
    assert commands.sandbox_state() == "bubblewrap, no network"


# Unix sockets.

class SocketServer:
    """A Unix socket served from this process: it answers ``hello`` to every caller."""

    def __init__(self, path: Path, kind: int = socket.SOCK_STREAM) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.listener = socket.socket(socket.AF_UNIX, kind)
        self.listener.bind(str(path))
        self.listener.listen()
        self.callers = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.callers += 1
            with conn:
                conn.sendall(b"hello")

    def close(self) -> None:
        self.listener.close()
        self.path.unlink(missing_ok=True)


CONNECT = ("python3 -c 'import socket, sys\ns = socket.socket(socket.AF_UNIX)\n"
           "s.connect(sys.argv[1])\nprint(s.recv(5).decode())' {path}")


@pytest.fixture
def servers(outside: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[SocketServer]]:
    home = outside / "home"
    monkeypatch.setenv("HOME", str(home))
    made = [SocketServer(outside / "sockets" / "service.sock"),
            SocketServer(home / ".docker" / "run" / "docker.sock")]
    yield made
    for server in made:
        server.close()


async def test_unix_sockets_outside_the_workspace_are_refused_without_the_network(
        agent: Agent, servers: list[SocketServer]) -> None:
    for server in servers:
        result = await call_tool(agent, "bash", cmd=CONNECT.format(path=server.path))
        assert "Address family not supported by protocol" in result["stderr"], result
        assert "hello" not in result["stdout"]
    assert [s.callers for s in servers] == [0, 0]


async def test_unix_sockets_are_reachable_when_the_person_opens_the_network(
        agent: Agent, limits: commands.CommandLimits, servers: list[SocketServer]) -> None:
    limits.network = True
    for server in servers:
        result = await call_tool(agent, "bash", cmd=CONNECT.format(path=server.path))
        assert result["stdout"] == "hello\n", result
    assert [s.callers for s in servers] == [1, 1]


async def test_socketpairs_asyncio_and_multiprocessing_still_work(agent: Agent) -> None:
    script = ("import asyncio, multiprocessing, socket\n"
              "a, b = socket.socketpair(); a.send(b'pair'); print(b.recv(4).decode())\n"
              "async def main():\n    await asyncio.sleep(0)\n    return 'loop'\n"
              "print(asyncio.run(main()))\n"
              "if __name__ == '__main__':\n"
              "    with multiprocessing.Pool(2) as pool: print(sum(pool.map(abs, [-1, -2])))\n")
    (agent.workspace.ensure() / "files").mkdir(exist_ok=True)
    (agent.workspace.root / "files" / "ipc.py").write_text(script)
    result = await call_tool(agent, "bash", cmd="python3 ipc.py")
    assert result["stdout"] == "pair\nloop\n3\n", result


def run_boxed(box: sandbox.Sandbox, script: str) -> tuple[int, str]:
    bwrap = sandbox.find_bubblewrap()
    assert bwrap is not None
    process = sandbox.start(box.argv(bwrap, ["bash", "-c", script]), stdout=-1, stderr=-2)
    out, _ = process.communicate(timeout=30)
    return process.returncode, out.decode()


@pytest.mark.parametrize("network", [False, True])
def test_the_filter_refuses_io_uring_and_ends_a_foreign_abi(outside: Path, network: bool) -> None:
    if seccomp.program() is None:
        pytest.skip("no seccomp filter for this architecture")
    box = sandbox.Sandbox(root=None, writable=(), cwd=Path("/"), network=network,
                          env={"PATH": os.environ["PATH"]}, syscall_filter=True)
    code, out = run_boxed(box, "python3 -c 'import ctypes, os\n"
                               "libc = ctypes.CDLL(None, use_errno=True)\n"
                               "said = libc.syscall(425, 1, None)\n"
                               "print(said, os.strerror(ctypes.get_errno()))'")
    assert out == "-1 Function not implemented\n", out
    if os.uname().machine == "x86_64":  # the x32 ABI's getpid: the process is ended
        code, out = run_boxed(box, "python3 -c 'import ctypes\n"
                                   "ctypes.CDLL(None).syscall(0x40000000 | 39)\nprint(1)'; "
                                   "echo $?")
        assert out.strip().splitlines()[-1] == "159", out  # 128 + SIGSYS


def unfiltered(network: bool = False) -> sandbox.Sandbox:
    """The sandbox a command gets, without the seccomp filter: a probe shows the guard."""
    return sandbox.Sandbox(root=None, writable=(), cwd=Path("/"), network=network,
                           env={"PATH": os.environ["PATH"]})


class DatagramServer:
    """A Unix datagram socket this process serves outside the workspace."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.socket.bind(str(path))
        self.socket.setblocking(False)

    def received(self) -> tuple[list[bytes], int]:
        """The datagrams that reached it so far, and how many descriptors came with them."""
        got, passed = [], 0
        while True:
            try:
                data, fds, _flags, _address = socket.recv_fds(self.socket, 100, 4)
            except BlockingIOError:
                return got, passed
            got.append(data)
            passed += len(fds)
            for fd in fds:
                os.close(fd)

    def close(self) -> None:
        self.socket.close()
        self.path.unlink(missing_ok=True)


@pytest.fixture
def datagram(outside: Path) -> Iterator[DatagramServer]:
    server = DatagramServer(outside / "sockets" / "service.dgram")
    yield server
    server.close()


PAIR_PROBE = """import array, os, socket, sys
kept = []
def attempt(name, how):
    try:
        how()
        print(name, "sent")
    except OSError as e:
        print(name, e.strerror)
def pair(kind=socket.SOCK_DGRAM):
    kept.extend(socket.socketpair(socket.AF_UNIX, kind))  # its peer stays open
    return kept[-2]
def connect():
    a = pair()
    a.connect(sys.argv[1])
    a.send(b"connect")
def rights():
    fds = array.array("i", [os.open("/etc/hostname", os.O_RDONLY)]).tobytes()
    pair().sendmsg([b"rights"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)], 0, sys.argv[1])
def out_of_a_stream_pair(kind, listener):
    a, b = socket.socketpair(socket.AF_UNIX, kind)
    b.close()  # its peer gone, the end is still connected: it cannot connect again
    a.connect(listener)
attempt("sendto", lambda: pair().sendto(b"sendto", sys.argv[1]))
attempt("connect", connect)
attempt("rights", rights)
attempt("stream", lambda: out_of_a_stream_pair(socket.SOCK_STREAM, sys.argv[2]))
attempt("seqpacket", lambda: out_of_a_stream_pair(socket.SOCK_SEQPACKET, sys.argv[3]))
"""


async def test_a_datagram_socket_on_the_machine_is_out_of_reach_of_a_socketpair(
        agent: Agent, datagram: DatagramServer, servers: list[SocketServer],
        outside: Path) -> None:
    """A datagram socketpair's end can sendto() or connect() any datagram socket and pass
    it descriptors; without the network only stream and seqpacket pairs are made."""
    (agent.workspace.ensure() / "files").mkdir(exist_ok=True)
    (agent.workspace.root / "files" / "pair.py").write_text(PAIR_PROBE)
    packets = SocketServer(outside / "sockets" / "service.seqpacket", socket.SOCK_SEQPACKET)
    servers.append(packets)  # closed with the others
    probe = f"python3 pair.py {datagram.path} {servers[0].path} {packets.path}"
    result = await call_tool(agent, "bash", cmd=probe)
    assert result["stdout"].splitlines() == [
        "sendto Socket type not supported", "connect Socket type not supported",
        "rights Socket type not supported", "stream Transport endpoint is already connected",
        "seqpacket Transport endpoint is already connected"], result
    assert datagram.received() == ([], 0) and servers[0].callers == packets.callers == 0
    # The same probe without the filter: the datagrams and a descriptor come out.
    code, out = run_boxed(unfiltered(), f"cd {agent.workspace.root / 'files'} && {probe}")
    assert out.splitlines()[:3] == ["sendto sent", "connect sent", "rights sent"], out
    assert datagram.received() == ([b"sendto", b"connect", b"rights"], 1)
    assert servers[0].callers == packets.callers == 0  # these ends hold by themselves


_KEYCTL = {"x86_64": (248, 250), "aarch64": (217, 219)}  # add_key, keyctl
_SESSION, _JOIN_SESSION, _SEARCH, _READ, _INVALIDATE = -3, 1, 10, 11, 21


@pytest.fixture
def session_key() -> Iterator[tuple[str, str]]:
    """A user key in this process's session keyring, as ``keyctl add user NAME S @s`` makes
    it; this process joins a new session keyring first, so no other process holds it."""
    import ctypes
    import uuid

    if os.uname().machine not in _KEYCTL:
        pytest.skip("the key system calls' numbers are known for x86-64 and AArch64 only")
    add_key, keyctl = _KEYCTL[os.uname().machine]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if libc.syscall(keyctl, _JOIN_SESSION, None) < 0:
        pytest.skip(f"no keyrings here: {os.strerror(ctypes.get_errno())}")
    name, secret = f"agent-kernel-test-{uuid.uuid4().hex}", f"keyring-secret-{uuid.uuid4().hex}"
    key = libc.syscall(add_key, b"user", name.encode(), secret.encode(), len(secret),
                       ctypes.c_long(_SESSION))
    assert key > 0, os.strerror(ctypes.get_errno())
    yield name, secret
    libc.syscall(keyctl, _INVALIDATE, ctypes.c_long(key))


KEY_PROBE = """import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
keyctl = {"x86_64": 250, "aarch64": 219}[os.uname().machine]
key = libc.syscall(keyctl, 10, ctypes.c_long(-3), b"user", sys.argv[1].encode(), 0)
print("search:", key if key > 0 else os.strerror(ctypes.get_errno()))
text = ctypes.create_string_buffer(200)
size = libc.syscall(keyctl, 11, ctypes.c_long(key), text, 200)
print("read:", text.raw[:size].decode() if size > 0 else os.strerror(ctypes.get_errno()))
"""


def key_probe(name: str) -> str:
    """Find and read the key by name as a command would: Python, keyutils' ``keyctl``
    where installed, and ``/proc/keys`` (which lists the keys one may see)."""
    keyutils = f"; keyctl print %user:{name} 2>&1" if shutil.which("keyctl") else ""
    return (f"python3 -c '{KEY_PROBE}' {name} 2>&1{keyutils}; "
            f"grep -c {name} /proc/keys 2>&1")


@pytest.mark.parametrize("network", [False, True])
async def test_a_key_in_the_session_keyring_cannot_be_read_from_a_command(
        agent: Agent, limits: commands.CommandLimits, session_key: tuple[str, str],
        network: bool) -> None:
    if seccomp.program() is None:
        pytest.skip("no seccomp filter for this architecture")
    name, secret = session_key
    limits.network = network
    result = await call_tool(agent, "bash", cmd=key_probe(name))
    said = result["stdout"] + result["stderr"]
    assert secret not in said, said
    assert said.startswith("search: Function not implemented\n"), said
    assert said.rstrip().endswith("Permission denied"), said  # /proc/keys
    # The same probe without the filter and with /proc/keys shown: the secret comes out.
    box = unfiltered(network).argv(sandbox.find_bubblewrap() or "bwrap",
                                   ["bash", "-c", key_probe(name)])
    at = box.index("/proc/keys")
    del box[at - 2:at + 1]  # --ro-bind /dev/null /proc/keys
    process = sandbox.start(box, stdout=-1, stderr=-2)
    out = process.communicate(timeout=30)[0].decode()
    assert f"read: {secret}" in out and out.rstrip().endswith("\n1"), out


FAMILIES = {"AF_UNIX": (1, 1), "AF_INET": (2, 1), "AF_INET6": (10, 1), "AF_NETLINK": (16, 3),
            "AF_PACKET": (17, 3), "AF_BLUETOOTH": (31, 1), "AF_RXRPC": (33, 2), "AF_ALG": (38, 5),
            "AF_VSOCK": (40, 1)}  # name: (family, type)
FAMILY_PROBE = ("python3 -c 'import socket\n"
                "for name, (family, kind) in {families}.items():\n"
                "    try: socket.socket(family, kind).close(); print(name, \"made\")\n"
                "    except OSError as e: print(name, e.strerror)'")


def families(said: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in said.splitlines())


@pytest.mark.parametrize("network", [False, True])
async def test_only_the_socket_families_a_command_needs_are_made(
        agent: Agent, limits: commands.CommandLimits, network: bool) -> None:
    """Without the network: its own namespace's (IPv4, IPv6, netlink); with it, all but
    vsock (the hypervisor's host), AF_ALG and AF_RXRPC (they use keys of the keyring)."""
    if seccomp.program() is None:
        pytest.skip("no seccomp filter for this architecture")
    limits.network = network
    probe = FAMILY_PROBE.format(families=json.dumps(FAMILIES))
    result = await call_tool(agent, "bash", cmd=probe)
    made = families(result["stdout"])
    refused = "Address family not supported by protocol"
    shut = {"AF_VSOCK", "AF_ALG", "AF_RXRPC"} if network else set(FAMILIES) - {
        "AF_INET", "AF_INET6", "AF_NETLINK"}
    assert {name for name, said in made.items() if said == refused} >= shut, made
    assert {"AF_INET", "AF_INET6", "AF_NETLINK"} | ({"AF_UNIX"} if network else set()) <= {
        name for name, said in made.items() if said == "made"}, made
    # Without the filter the kernel answers otherwise (AF_PACKET: no capability to open
    # it; vsock made wherever the machine has it, as this project's VM does).
    code, out = run_boxed(unfiltered(network), probe)
    bare = families(out)
    assert bare["AF_PACKET"] != refused and (network or bare["AF_UNIX"] == "made"), bare
    if os.path.exists("/dev/vsock"):
        assert bare["AF_VSOCK"] == "made", bare


ORDINARY_SOCKETS = """import asyncio, socket, subprocess, urllib.request
async def main():
    child = await asyncio.create_subprocess_exec("echo", "asyncio", stdout=subprocess.PIPE)
    return (await child.communicate())[0].decode().strip()
print(asyncio.run(main()))
print(subprocess.run(["tr", "a-z", "A-Z"], input=b"piped", capture_output=True).stdout.decode())
for kind in (socket.SOCK_STREAM | socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC,
             socket.SOCK_SEQPACKET):
    a, b = socket.socketpair(socket.AF_UNIX, kind)
    a.send(b"pair")
    print(b.recv(4).decode())
print(urllib.request.urlopen("http://127.0.0.1:8765/hello.txt", timeout=5).read().decode())
"""


async def test_ordinary_work_with_sockets_still_runs_without_the_network(agent: Agent) -> None:
    (agent.workspace.ensure() / "files").mkdir(exist_ok=True)
    (agent.workspace.root / "files" / "ordinary.py").write_text(ORDINARY_SOCKETS)
    (agent.workspace.root / "files" / "hello.txt").write_text("served\n")
    fetch = "curl -s" if shutil.which("curl") else "python3 -c 'import sys, urllib.request as u; " \
        "sys.stdout.write(u.urlopen(sys.argv[1]).read().decode())'"
    result = await call_tool(agent, "bash", cmd=(
        "python3 -m http.server --bind 127.0.0.1 8765 >/dev/null 2>&1 & server=$!; "
        f"for i in $(seq 100); do {fetch} http://127.0.0.1:8765/hello.txt 2>/dev/null && break; "
        "sleep 0.1; done; python3 ordinary.py; kill $server"
        + ("; ip -o link show lo | cut -d' ' -f2" if shutil.which("ip") else "")))
    assert result["stdout"] == "served\nasyncio\nPIPED\npair\npair\nserved\n\n" + (
        "lo:\n" if shutil.which("ip") else ""), result  # ip reads its links through netlink


def run_filter(code: bytes, arch: int, nr: int, *args: int) -> int:
    """What the filter answers to one system call: classic BPF, interpreted as the kernel
    does (the opcodes the filter uses), for the ABI this machine cannot run."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, *(*args, 0, 0, 0, 0, 0, 0)[:6])
    program = [struct.unpack_from("=HBBI", code, at) for at in range(0, len(code), 8)]
    a = at = 0
    while True:
        op, yes, no, k = program[at]
        at += 1
        if op == 0x20:
            a = struct.unpack_from("=I", data, k)[0]
        elif op == 0x54:
            a &= k
        elif op in (0x15, 0x35):
            at += yes if (a == k if op == 0x15 else a >= k) else no
        else:
            assert op == 0x06, op
            return k


@pytest.mark.parametrize("machine,arch,numbers", [
    ("x86_64", 0xC000003E, {"read": 0, "socket": 41, "socketpair": 53, "keyctl": 250,
                            "add_key": 248, "request_key": 249, "io_uring_setup": 425}),
    ("aarch64", 0xC00000B7, {"read": 63, "socket": 198, "socketpair": 199, "keyctl": 219,
                             "add_key": 217, "request_key": 218, "io_uring_setup": 425})])
def test_the_filter_answers_alike_on_both_abis(machine: str, arch: int,
                                               numbers: dict[str, int]) -> None:
    """AArch64's program, read as the kernel would; x86-64's too, which the kernel runs in
    the tests above. The numbers are checked against the kernel's headers where present."""
    header = Path("/usr/include/asm-generic/unistd.h" if machine == "aarch64" else
                  "/usr/include/x86_64-linux-gnu/asm/unistd_64.h")
    if header.exists():
        defined = dict(re.findall(r"#define __NR_(\w+)\s+(\d+)", header.read_text()))
        assert {name: int(defined[name]) for name in numbers} == numbers
    allow, kill, errno = 0x7FFF0000, 0x80000000, 0x00050000
    cloexec, nonblock = 0o2000000, 0o4000
    for network in (False, True):
        code = seccomp.program(machine, network=network)
        assert code is not None

        def answer(name: str, *args: int, code: bytes = code) -> int:
            return run_filter(code, arch, numbers[name], *args)

        assert answer("read", 3) == allow
        assert run_filter(code, 0x40000003, numbers["read"]) == kill  # 32-bit x86
        for name in ("keyctl", "add_key", "request_key", "io_uring_setup"):
            assert answer(name) == errno | 38, name
        assert answer("socket", 40, 1) == answer("socket", 38, 5) == errno | 97
        assert answer("socket", 33, 2) == errno | 97  # AF_RXRPC
        assert answer("socket", 2, 1) == answer("socket", 16, 3) == allow
        assert answer("socket", 1, 1) == (allow if network else errno | 97)
        assert answer("socketpair", 1, 1 | cloexec | nonblock) == allow
        assert answer("socketpair", 1, 5) == allow
        assert answer("socketpair", 1, 2 | cloexec) == (allow if network else errno | 94)
        assert answer("socketpair", 30, 1) == (allow if network else errno | 97)  # TIPC
    if machine == "x86_64":
        assert run_filter(code, arch, 0x40000000 | 41, 1, 1) == kill  # the x32 ABI


@pytest.mark.skipif(os.geteuid() != 0, reason="needs a socket in /run, which root may write")
def test_run_is_hidden_even_without_the_filter(outside: Path) -> None:
    """Defence in depth: the machine's socket folders are hidden when the network is off."""
    folder = Path(tempfile.mkdtemp(prefix="agent-kernel-test-", dir="/run"))
    server = SocketServer(folder / "service.sock")
    try:
        assert Path("/run") in sandbox.socket_folders()
        probe = CONNECT.format(path=server.path)
        hidden = sandbox.Sandbox(root=None, writable=(), cwd=Path("/"),
                                 env={"PATH": os.environ["PATH"]},
                                 hidden=tuple(sandbox.socket_folders()))
        code, out = run_boxed(hidden, probe)
        assert code != 0 and "No such file or directory" in out
        shown = sandbox.Sandbox(root=None, writable=(), cwd=Path("/"),
                                env={"PATH": os.environ["PATH"]})
        code, out = run_boxed(shown, probe)  # the same probe without the guard: it connects
        assert out == "hello\n" and server.callers == 1
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs a folder in /run, which root may write")
async def test_commands_run_when_jupyters_runtime_folder_is_under_run(
        agent: Agent, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a desktop Jupyter keeps its connection files in /run/user/<uid>/jupyter: hidden
    twice over (as Jupyter's, and inside /run), it must not stop bubblewrap starting."""
    folder = Path(tempfile.mkdtemp(prefix="agent-kernel-test-", dir="/run"))
    runtime = folder / "jupyter"
    runtime.mkdir()
    (runtime / "kernel-1.json").write_text('{"key": "hmac"}')
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    try:
        assert runtime in sandbox.private_paths() and folder in sandbox.socket_folders()
        result = await call_tool(agent, "bash", cmd=f"echo ran; cat {runtime}/kernel-1.json")
        assert result["stdout"] == "ran\n" and "No such file" in result["stderr"], result
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# Ordinary work still runs.

async def test_ordinary_commands_still_work(agent: Agent) -> None:
    result = await call_tool(agent, "bash", cmd=(
        "python3 -c 'print(6 * 7)' && python3 -m pip --version | cut -c1-4 && "
        "git init -q repo && cd repo && echo hi > a && git add a && "
        "git -c user.name=t -c user.email=t@t commit -qm one && git log --oneline | wc -l"))
    assert result["stdout"] == "42\npip \n1\n", result
    assert result["exit_code"] == 0 and "limit" not in result
    assert leftover_groups() == []


# A real kernel: the notebook stays responsive while its command is stopped.

@pytest.mark.kernel
@pytest.mark.timeout(180)
def test_a_kernel_stays_responsive_while_a_command_forks_and_allocates(
        run_notebook: Any, tmp_path: Path) -> None:
    if not CGROUP:
        pytest.skip(f"no cgroup here: {cgroups.unavailable_reason()}")
    cells = [
        "%load_ext agent_kernel",
        "%config AgentMagics.headless_approval = 'allow'",
        "import os, threading, time\nkernel_pid = os.getpid()\ngaps = []\n"
        "def tick():\n    last = time.perf_counter()\n    while len(gaps) < 100000:\n"
        "        time.sleep(0.02)\n        now = time.perf_counter()\n"
        "        gaps.append(now - last)\n        last = now\n"
        "threading.Thread(target=tick, daemon=True).start()",
        f"%agent run command: {FORK_2000}",
        "%agent run command: python3 -c 'b = bytearray(4 << 30)'",
        "started = time.perf_counter()\nprint('alive', os.getpid() == kernel_pid, "
        "max(gaps) < 1.0, round(max(gaps), 3))",
    ]
    nb = run_notebook(cells, cwd=tmp_path, timeout=60,
                      env={"AGENT_KERNEL_WORKSPACE": str(tmp_path / "ws")})
    shown = ["".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                     for o in cell.outputs) for cell in nb.cells]
    assert "stopped: it tried to run more than 512 processes at once" in shown[3]
    assert "it ran out of memory (limit 4 GiB of address space per process)" in shown[4]
    assert shown[5].startswith("alive True True"), shown[5]
