"""The approval signing key stays home (issue 22, item 2), played as an attacker.

The key sits where Jupyter keeps it by default, ``$HOME/.local/share/jupyter/agent_kernel/``,
in a home folder under ``/var/tmp`` (not ``/tmp``, which every sandbox replaces with an
empty one of its own and so would hide it without any guard). From inside the real
``bash`` sandbox and the real ``run_javascript`` sandbox no path reaches it: the direct
path, ``$HOME``, ``/proc/self/root``, ``/proc/<pid>/root`` and ``/proc/<pid>/fd`` of a
process holding it open, a symbolic or hard link, ``find /``, a nested namespace that
tries to unmount what hides it, and a key made while a command already runs. After a run
that handled the key in every form (a tool result, a command output with the sandbox
off, tool arguments, the model's reply), no byte under the workspace nor in a notebook
saved from a real kernel holds any form of it. A key that is a link, readable by others,
in a folder others can change, or inside the workspace is refused. ``trust rotate``
makes a new key, says what will need approving again, records it in the ledger, and
after it an approved condition and a forgery signed with the old key both come back
"needs approval".
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scripted_server import Call, Message, ScriptedServer
from tool_helpers import call_tool

from agent_kernel import Agent, Settings, Tool
from agent_kernel.core import trust
from agent_kernel.core.ledger import Ledger
from agent_kernel.core.trust import (
    KEY_FOLDER,
    TrustError,
    condition_digest,
    key_folder,
    key_path,
    load_key,
    rotate_key,
)
from agent_kernel.guards import sandbox
from agent_kernel.tools import commands, javascript
from agent_kernel.triggers.clock import ManualClock
from agent_kernel.triggers.scheduler import TriggerScheduler

SANDBOXED = sandbox.find_bubblewrap() is not None
needs_bubblewrap = pytest.mark.skipif(not SANDBOXED and not os.environ.get("CI"),
                                      reason="bubblewrap cannot start a sandbox here")


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A home folder outside /tmp whose Jupyter data folder holds the key (the default
    place: no JUPYTER_DATA_DIR, no XDG_DATA_HOME)."""
    base = Path("/var/tmp") if Path("/var/tmp").is_dir() else Path.home()
    made = Path(tempfile.mkdtemp(prefix="agent-kernel-key-", dir=base))
    monkeypatch.setenv("HOME", str(made))
    monkeypatch.delenv("JUPYTER_DATA_DIR", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


@pytest.fixture
def key(home: Path) -> bytes:
    made = load_key(create=True)
    assert made is not None
    assert key_path() == home / ".local/share/jupyter/agent_kernel/approval.key"
    return made


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> commands.CommandLimits:
    fresh = commands.CommandLimits()
    monkeypatch.setattr(commands, "LIMITS", fresh)
    return fresh


def forms(key: bytes) -> dict[str, bytes]:
    """Every way the key could sit in a file, as bytes to search for."""
    latin = key.decode("latin-1")
    b64 = base64.b64encode(key)
    found = {"raw": key, "latin-1 as UTF-8": latin.encode("utf-8"),
             "JSON-escaped": json.dumps(latin).encode()[1:-1],
             "hex": key.hex().encode(), "HEX": key.hex().upper().encode(),
             "hex first half": key[:16].hex().encode(), "hex second half": key[16:].hex().encode(),
             "base64": b64.rstrip(b"="), "base64url": base64.urlsafe_b64encode(key).rstrip(b"="),
             "decimal": ", ".join(str(b) for b in key).encode(),
             "decimal JSON": ",".join(str(b) for b in key).encode()}
    return found


def leaks(folder: Path, key: bytes) -> dict[str, list[str]]:
    """``grep -ra`` for every form of the key in every file under ``folder``."""
    found: dict[str, list[str]] = {}
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            for name, needle in forms(key).items():
                if needle in data:
                    found.setdefault(name, []).append(str(path))
    return found


def grep_finds(folder: Path, text: str) -> bool:
    """The real ``grep -ra`` (for the forms that are plain text)."""
    done = subprocess.run(["grep", "-raF", "--", text, str(folder)], capture_output=True)
    return done.returncode == 0


# -- no sandbox reaches it -----------------------------------------------------------

def attack(key_file: Path, pid: int, fd: int) -> str:
    """A shell script that tries every way to the key and prints a sha256 for each read."""
    folder = key_file.parent
    return "\n".join([
        "export PATH=/usr/local/bin:/usr/bin:/bin",
        f"KEY='{key_file}'",
        "for p in \"$KEY\" \"$HOME/.local/share/jupyter/agent_kernel/approval.key\" "
        f"\"/proc/self/root$KEY\" \"/proc/1/root$KEY\" \"/proc/{pid}/root$KEY\" "
        f"\"/proc/{pid}/fd/{fd}\" /proc/*/fd/* /proc/*/root\"$KEY\"; do",
        "  [ -f \"$p\" ] && timeout 5 sha256sum \"$p\" 2>/dev/null", "done",
        "ls -la \"$(dirname \"$KEY\")\" 2>&1",
        "W=\"${WRITABLE:-/var/tmp}\"",
        "ln -s \"$KEY\" \"$W/link\" 2>/dev/null; sha256sum \"$W/link\" 2>/dev/null",
        "ln \"$KEY\" \"$W/hard\" 2>/dev/null; sha256sum \"$W/hard\" 2>/dev/null",
        f"timeout 10 unshare -Urm sh -c 'umount -l {folder} 2>/dev/null; "
        f"sha256sum \"{key_file}\"' </dev/null 2>/dev/null",
        "find / \\( -path /proc -o -path /sys \\) -prune -o -name approval.key -print "
        "2>/dev/null | while read -r f; do echo \"found $f\"; timeout 5 sha256sum \"$f\" "
        "2>/dev/null; done",
        "sha256sum \"$HOME/control.txt\"",
        "echo attack-done",
    ])


@needs_bubblewrap
@pytest.mark.timeout(400)
async def test_no_path_from_the_command_sandbox_reaches_the_key(
        home: Path, key: bytes, limits: commands.CommandLimits, tmp_path: Path) -> None:
    (home / "control.txt").write_text("the home folder is visible")
    control = hashlib.sha256(b"the home folder is visible").hexdigest()
    agent = Agent(workspace=home / "project" / ".agent",
                  settings=Settings(headless_approval="allow"))
    held = os.open(key_path(), os.O_RDONLY)  # as if the kernel held the key file open
    try:
        script = attack(key_path(), os.getpid(), held)
        writable = agent.workspace.root / "files"
        result = await call_tool(agent, "bash", timeout_seconds=300,
                                 cmd=f"export WRITABLE={writable}\n{script}")
    finally:
        os.close(held)
    out = result["stdout"] + result["stderr"]
    assert result["sandboxed"] and "attack-done" in out, out
    assert control in out  # the command does see the home folder around the key
    assert hashlib.sha256(key).hexdigest() not in out, out
    assert f"found {key_path()}" not in out, out  # other approval.key files are not ours
    for needle in forms(key).values():
        assert needle.decode("latin-1") not in out


@needs_bubblewrap
@pytest.mark.timeout(400)
def test_no_path_from_the_javascript_sandbox_reaches_the_key(
        home: Path, key: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    (home / "control.txt").write_text("the home folder is visible")
    control = hashlib.sha256(b"the home folder is visible").hexdigest()
    monkeypatch.setattr(javascript, "LIMITS", javascript.JavaScriptLimits())
    argv, boxed = javascript.command(Agent(workspace=home / "ws").workspace)
    assert boxed
    # The child's own sandbox, running a shell instead of the JavaScript runner.
    box = list(argv[:argv.index("--")])
    held = os.open(key_path(), os.O_RDONLY)
    try:
        script = attack(key_path(), os.getpid(), held)
        child = sandbox.start([*box, "--setenv", "HOME", str(home), "--", "/bin/sh", "-c",
                               script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        said, _ = child.communicate(timeout=300)
    finally:
        os.close(held)
    out = said.decode("utf-8", "replace")
    assert "attack-done" in out and control in out, out
    assert hashlib.sha256(key).hexdigest() not in out, out
    assert f"found {key_path()}" not in out, out  # other approval.key files are not ours


@needs_bubblewrap
async def test_a_key_made_while_a_command_runs_stays_out_of_its_sight(
        home: Path, limits: commands.CommandLimits) -> None:
    """The sandbox binds / live: a key folder it did not hide would show a later key."""
    agent = Agent(workspace=home / "ws", settings=Settings(headless_approval="allow"))
    path = key_path()
    assert not path.exists()
    running = asyncio.ensure_future(call_tool(
        agent, "bash", cmd=f"sleep 3; sha256sum '{path}' 2>&1; echo done"))
    await asyncio.sleep(1.0)
    made = load_key(create=True)
    assert made is not None
    result = await running
    assert "done" in result["stdout"]
    assert hashlib.sha256(made).hexdigest() not in result["stdout"], result["stdout"]
    assert stat.S_IMODE(key_folder().stat().st_mode) == 0o700


async def test_no_file_tool_reaches_the_key(home: Path, key: bytes) -> None:
    agent = Agent(workspace=home / "ws", settings=Settings(headless_approval="allow"))
    files = agent.workspace.root / "files"
    files.mkdir(parents=True)
    (files / "planted.key").symlink_to(key_path())  # a link someone planted in the workspace
    for path in (str(key_path()), "~/.local/share/jupyter/agent_kernel/approval.key",
                 "../../.local/share/jupyter/agent_kernel/approval.key",
                 f"/proc/self/root{key_path()}", "planted.key"):
        result = await call_tool_safely(agent, "read_file", path=path)
        assert "outside the workspace" in json.dumps(result), (path, result)
        assert key.hex() not in json.dumps(result)
    for folder in (str(key_folder()), "~/.local/share/jupyter/agent_kernel"):
        listed = await call_tool_safely(agent, "list_files", path=folder)
        assert "outside the workspace" in json.dumps(listed), (folder, listed)


async def test_read_file_refuses_a_hard_link_to_the_key(
        home: Path, key: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither a sandbox nor the model can make one, but a person or an unpacked tarball
    can: read_file refuses it, and the key with a second name is refused until rotated."""
    agent = Agent(workspace=home / "ws", settings=Settings(headless_approval="allow"))
    files = agent.workspace.root / "files"
    files.mkdir(parents=True)
    os.link(key_path(), files / "hard.txt")
    (files / "a.txt").write_text("plain words")
    os.link(files / "a.txt", files / "b.txt")  # any other file with two names still reads
    plain = os.stat(files / "a.txt")  # also when a deleted key had its inode number
    monkeypatch.setitem(trust._read, home / "gone", (plain.st_dev, plain.st_ino))
    assert (await call_tool(agent, "read_file", path="b.txt"))["content"] == "plain words"
    result = await call_tool_safely(agent, "read_file", path="hard.txt")
    assert not result.get("ok") and "hard link" in json.dumps(result), result
    with pytest.raises(TrustError, match="2 names"):
        load_key(create=False)
    status = trust_cli("status", "--workspace", str(agent.workspace.root))
    assert status.returncode == 1 and "hard links" in status.stdout, status.stdout
    assert trust_cli("rotate", "--workspace", str(agent.workspace.root)).returncode == 0
    again = trust_cli("status", "--workspace", str(agent.workspace.root))
    assert again.returncode == 0 and "mode 600" in again.stdout, again.stdout
    assert load_key(create=False) not in (None, key)


@needs_bubblewrap
async def test_a_relative_data_folder_keeps_the_key_hidden_after_a_cd(
        limits: commands.CommandLimits, monkeypatch: pytest.MonkeyPatch) -> None:
    """JUPYTER_DATA_DIR=jd names the folder under the working directory where this process
    first looked, for good; and a sandbox hides the folder of every key this process read,
    also when the data folder has changed since."""
    base = Path(tempfile.mkdtemp(prefix="agent-kernel-rel-", dir="/var/tmp"))
    monkeypatch.setattr(trust, "_pinned", {})
    monkeypatch.setattr(trust, "_read", {})
    try:
        (base / "sub").mkdir()
        monkeypatch.chdir(base)
        monkeypatch.setenv("JUPYTER_DATA_DIR", "jd")
        made = load_key(create=True)
        real = base / "jd" / "agent_kernel" / "approval.key"
        assert made is not None and real.is_file() and key_path() == real
        monkeypatch.chdir(base / "sub")  # the person's %cd
        assert key_path() == real and load_key(create=False) == made
        assert real.parent in sandbox.private_paths()
        monkeypatch.setenv("JUPYTER_DATA_DIR", str(base / "elsewhere"))  # changed later
        assert real.parent in sandbox.private_paths()
        agent = Agent(workspace=base / "ws" / ".agent",
                      settings=Settings(headless_approval="allow"))
        result = await call_tool(agent, "bash", cmd=f"ls '{base}'; xxd -p '{real}' | tr -d "
                                 "'\\n'; sha256sum 'jd/agent_kernel/approval.key' "
                                 f"'{real}' 2>&1; echo done")
        out = result["stdout"] + result["stderr"]
        assert result["sandboxed"] and "done" in out and "sub" in out, out
        assert hashlib.sha256(made).hexdigest() not in out and made.hex() not in out, out
    finally:
        shutil.rmtree(base, ignore_errors=True)


async def call_tool_safely(agent: Agent, name: str, **arguments: Any) -> Any:
    try:
        return await call_tool(agent, name, **arguments)
    except Exception as exc:  # a refusal is what we want to see
        return {"error": str(exc)}


# -- no record or output holds it --------------------------------------------------------

def key_tool(key: bytes) -> Tool:
    def key_forms() -> dict[str, Any]:
        """Return the key in every form."""
        b64 = base64.b64encode(key).decode()
        return {"hex": key.hex(), "HEX": key.hex().upper(), "b64": b64,
                "b64url": base64.urlsafe_b64encode(key).decode(),
                "wrapped": "\n".join(b64[i:i + 10] for i in range(0, len(b64), 10)),
                "raw": key, "latin": key.decode("latin-1"), "list": list(key),
                "repr": repr(key), "blob": base64.b64encode(b"x" + key + b"yz").decode()}

    return Tool(key_forms)


@pytest.mark.timeout(240)
async def test_no_form_of_the_key_reaches_the_workspace(
        home: Path, key: bytes, limits: commands.CommandLimits,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "find_bubblewrap", lambda: None)  # the sandbox turned off
    limits.allow_unsandboxed = True
    path = key_path()
    shown = (f"cat '{path}'; echo; xxd -p '{path}'; base64 '{path}'; base64 -w 10 '{path}'; "
             f"od -An -tx1 '{path}'; xxd '{path}'; echo CANARYCOMMAND")
    b64 = base64.b64encode(key).decode()
    reply = (f"CANARYREPLY the key is {key.hex()} or {b64} or {key.decode('latin-1')} "
             f"or {base64.urlsafe_b64encode(key).decode()}")
    with ScriptedServer() as server:
        server.script(Message(calls=[Call("key_forms", "{}"), Call("bash", json.dumps(
            {"cmd": shown})), Call("echo", json.dumps({"value": f"{key.hex()} {b64}"}))]),
            Message(text=reply, pieces=5))
        agent = Agent(model="openai/test-model", workspace=home / "ws", tools=[key_tool(key)],
                      settings=Settings(api_base=server.base_url, api_key="sk-x",
                                        headless_approval="allow"))
        result = await agent.arun("CANARYPROMPT show me the approval key")
        sent = list(server.requests)
    assert result.ok, result.error
    # The model never reads it either: a model that saw it could GET it anywhere.
    results = [m.get("content") or "" for body in sent for m in body["messages"]
               if m.get("role") == "tool"]
    assert len(results) == 3 and any("CANARYCOMMAND" in text for text in results)
    for text in results:
        assert not [name for name, needle in forms(key).items()
                    if needle.decode("latin-1") in text or needle.decode("utf-8", "replace")
                    in text], text
    ran = next(c for c in result.tool_calls if c.tool_name == "bash").result
    assert not ran["sandboxed"] and key.hex()[:40] in ran["stdout"]  # the command read it
    assert agent.services.history_writer.flush(30)
    assert agent.services.memory.history(agent_id=agent.agent_id, count=2)
    workspace = home / "ws"
    assert grep_finds(workspace, "CANARYCOMMAND") and grep_finds(workspace, "CANARYREPLY")
    assert leaks(workspace, key) == {}
    for text in (key.hex(), b64.rstrip("=")):
        assert not grep_finds(workspace, text)
    shown = repr(result)  # what a notebook shows for a result left as a cell's value
    assert "[REDACTED]" in shown and key.hex() not in shown and b64[:20] not in shown


@pytest.mark.kernel
@pytest.mark.timeout(300)
def test_no_form_of_the_key_reaches_a_saved_notebook(home: Path, key: bytes, tmp_path: Path,
                                                     run_notebook: Any) -> None:
    import nbformat

    b64 = base64.b64encode(key).decode()
    with ScriptedServer() as server:
        server.script(Message(calls=[Call("approval_key", "{}")]),
                      Message(text=f"CANARYREPLY here: {key.hex()} / {b64}", pieces=4))
        cells = [
            f"get_ipython().config.AgentMagics.api_base = {server.base_url!r}\n"
            "%load_ext agent_kernel",
            "from agent_kernel import tool\nfrom agent_kernel.core.trust import key_path\n\n"
            "@tool\ndef approval_key() -> str:\n    \"\"\"Read the key.\"\"\"\n"
            "    data = key_path().read_bytes()\n"
            "    return data.hex() + ' ' + __import__('base64').b64encode(data).decode()",
            "%agent_config --model openai/test-model",
            "%agent --wait show me the key",
        ]
        nb = run_notebook(cells, timeout=120, cwd=tmp_path,
                          env={"OPENAI_API_KEY": "sk-x",
                               "AGENT_KERNEL_WORKSPACE": str(tmp_path / "ws")})
    for cell in nb.cells:
        cell.source = ""
    saved = tmp_path / "saved.ipynb"
    nbformat.write(nb, str(saved))
    assert "CANARYREPLY" in saved.read_text(encoding="utf-8")
    assert leaks(tmp_path, key) == {}


def test_every_printed_form_of_a_read_key_is_masked(home: Path, key: bytes) -> None:
    from agent_kernel.core.redaction import redact_text, scrub

    b64 = base64.b64encode(key).decode()
    dumps = {tool: subprocess.run([tool, *flags], input=key, capture_output=True).stdout
             for tool, *flags in (["xxd"], ["xxd", "-p"], ["od", "-An", "-tx1"],
                                  ["hexdump", "-C"], ["base64", "-w", "16"])
             if shutil.which(tool)}
    printed = {
        "hex": key.hex(), "HEX": key.hex().upper(), "base64": b64,
        "base64url": base64.urlsafe_b64encode(key).decode(), "no padding": b64.rstrip("="),
        "wrapped": "\n".join(b64[i:i + 10] for i in range(0, len(b64), 10)),
        "latin-1": key.decode("latin-1"), "utf-8": key.decode("utf-8", "replace"),
        "repr": repr(key), "json": json.dumps(key.decode("latin-1")), "list": str(list(key)),
        "C array": ", ".join(f"0x{b:02X}" for b in key),
        "escapes": "".join(f"\\x{b:02x}" for b in key),
        "inside a blob": base64.b64encode(b"ab" + key + b"cde").decode(),
        **{name: out.decode("latin-1") for name, out in dumps.items()},
    }
    assert len(dumps) >= 3
    for name, text in printed.items():
        masked = redact_text(f"before {text} after")
        assert "[REDACTED]" in masked, name
        assert key.hex()[:16] not in masked.lower().replace(" ", "").replace(":", ""), name
        assert b64[4:24] not in masked.replace("\n", ""), name
        assert key.decode("latin-1")[:8] not in masked, name
    assert json.dumps(scrub({"raw": key, "k" + key.hex(): 1, "bytes": list(b"x" + key),
                             "ints": (1, 2)})).count("[REDACTED]") == 3
    assert redact_text("an ordinary line, 12 34 ab cd") == "an ordinary line, 12 34 ab cd"


DUMPS = (["od"], ["od", "-b"], ["od", "-An", "-d"], ["od", "-tu1"], ["od", "-An", "-tx2"],
         ["od", "-tx4"], ["od", "-An", "-tx8"], ["hexdump"], ["xxd", "-b"], ["xxd", "-e"],
         ["base32"])


def dump(tool: list[str], data: bytes) -> str:
    return subprocess.run(tool, input=data, capture_output=True, check=True).stdout.decode()


def test_the_text_column_of_a_dump_is_masked_when_it_shows_the_key(home: Path) -> None:
    """xxd, xxd -b and hexdump -C print the printable bytes beside the hex: a key whose
    bytes spell words there has those words masked too; a column of dots is left alone."""
    from agent_kernel.core.redaction import add_secret, redact_text

    key = b"HP1\x01\x02\x03Zq9\x04\x05\x06" + bytes(range(0x80, 0x88)) + b"tea time\xff\xfe\xfd\xfc"
    add_secret(key)
    tools = [tool for tool in (["xxd"], ["xxd", "-b"], ["hexdump", "-C"]) if shutil.which(tool[0])]
    assert tools
    for tool in tools:
        masked = redact_text(dump(tool, key))
        for word in ("HP1", "Zq9", "tea", "time"):
            assert word not in masked, (tool, masked)
    assert redact_text("a column of dots ......") == "a column of dots ......"
    assert redact_text("HP1...Zq9...") == "HP1...Zq9..."  # not after a space or |


def test_the_dump_tools_and_encoders_forms_of_the_key_are_masked(home: Path, key: bytes) -> None:
    """od (default octal words, -b, -d, -tu1, -tx2/4/8), hexdump (default), xxd -b and -e,
    base32, hex with - or . between bytes, %-encoding and the key as one big number: every
    token of the key that the tool printed is gone, and another key's dump is untouched."""
    import urllib.parse

    from agent_kernel.core.redaction import add_secret, redact_text, scrub, to_text

    other = os.urandom(32)
    tools = [tool for tool in DUMPS if shutil.which(tool[0])]
    assert len(tools) >= 8
    for tool in tools:
        printed, reference = dump(tool, key), dump(tool, other)
        # The tokens of the key's dump that another key's dump does not share: the key's
        # bytes as this tool writes them (offsets, '*' and the like are in both).
        def words(text: str) -> set[str]:
            return {t.rstrip("=") for t in text.replace("\\n", " ").replace('"', " ").split()}

        tokens = {t for t in words(printed) if t.isalnum() and len(t) >= 3} - words(reference)
        assert tokens, tool
        for masked in (redact_text(printed), to_text(printed), json.dumps(scrub(printed))):
            left = tokens & words(masked)
            assert "[REDACTED]" in masked and not left, (tool, left, masked)
        assert "[REDACTED]" not in redact_text(reference), (tool, reference)
    number = int.from_bytes(key, "big")
    printed = {"hex -": key.hex("-"), "hex .": key.hex("."), "HEX -": key.hex("-").upper(),
               "url": urllib.parse.quote(key), "url all": urllib.parse.quote(key, safe=""),
               "url form": urllib.parse.quote_plus(key),
               "big number": str(number), "little number": str(int.from_bytes(key, "little")),
               "number in hex": hex(number), "base32": base64.b32encode(key).decode(),
               "base32 in a blob": base64.b32encode(b"xyz" + key + b"w").decode()[5:56]}
    for name, text in printed.items():
        masked = redact_text(f"before {text} after")
        assert masked in ("before [REDACTED] after", "before 0x[REDACTED] after"), (name, masked)
    zero_led = bytes([other[0] & 0x0F]) + other[1:]  # hex(int) drops the leading zero
    add_secret(zero_led)
    assert redact_text(hex(int.from_bytes(zero_led, "big"))) == "0x[REDACTED]"


# -- a key that is not private is refused ------------------------------------------------

def test_a_key_that_is_not_private_is_refused(home: Path, key: bytes, tmp_path: Path) -> None:
    path = key_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    path.chmod(0o644)
    with pytest.raises(TrustError, match="other users .*mode 644.*trust rotate"):
        load_key(create=False)
    path.chmod(0o600)
    elsewhere = tmp_path / "chosen.key"
    elsewhere.write_bytes(os.urandom(32))
    elsewhere.chmod(0o600)
    path.unlink()
    path.symlink_to(elsewhere)
    with pytest.raises(TrustError, match="symbolic link"):
        load_key(create=True)
    assert rotate_key() == path and not path.is_symlink()  # rotation is the way out
    assert load_key(create=False) not in (key, elsewhere.read_bytes())
    path.parent.chmod(0o777)
    with pytest.raises(TrustError, match="changed by other users"):
        load_key(create=False)
    path.parent.chmod(0o755)  # readable but not writable by others: made private again
    assert load_key(create=False) is not None
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_a_key_inside_the_workspace_is_refused(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = tmp_path / "ws"
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(workspace / "files" / "jupyter"))
    with pytest.raises(TrustError, match="inside the workspace"):
        load_key(create=True, workspace=workspace)
    assert not key_path().exists()


# -- rotation ------------------------------------------------------------------------------

@pytest.fixture
def clock() -> Iterator[ManualClock]:
    made = ManualClock()
    with made.patch_schedule():
        yield made


def new_scheduler(workspace: Path, clock: ManualClock,
                  namespace: dict[str, Any] | None = None) -> TriggerScheduler:
    agent = Agent(workspace=workspace, settings=Settings(headless_approval="allow"))
    scheduler = TriggerScheduler(agent, clock=clock, namespace=namespace)
    agent.services.triggers = scheduler
    scheduler.start(pump=False)
    return scheduler


def trust_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent_kernel", "trust", *args],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))


async def test_rotating_the_key_asks_again_for_an_approved_condition(
        home: Path, key: bytes, clock: ManualClock) -> None:
    workspace = home / "ws"
    first = new_scheduler(workspace, clock)
    made = await call_tool(first.agent, "schedule", prompt="echo the rows are in",
                           type="conditional",
                           condition={"kind": "expression", "expression": "len(rows) > 2"})
    await first.drain(timeout=30)
    await first.close()
    trigger_id = str(made["taskId"])
    before = new_scheduler(workspace, clock, namespace={"rows": []})
    assert [t.id for t in before.restore_report.restored] == [trigger_id]
    assert not before.triggers[trigger_id].needs_approval
    await before.close()

    status = trust_cli("status", "--workspace", str(workspace))
    assert status.returncode == 0, status.stdout + status.stderr
    assert str(key_path()) in status.stdout and "mode 600" in status.stdout
    assert "1 approved with this key" in status.stdout

    done = trust_cli("rotate", "--workspace", str(workspace))
    assert done.returncode == 0, done.stdout + done.stderr
    words = done.stdout
    assert "A new approval key is in place" in words
    assert "1 trigger(s) made or approved with the old key will need approving again" in words
    assert trigger_id in words and "len(rows) > 2" in words and "echo the rows are in" in words
    assert "needs approval" in words and "none was signed again" in words
    assert load_key(create=False) != key

    after = new_scheduler(workspace, clock, namespace={"rows": [1, 2, 3]})
    assert after.triggers[trigger_id].needs_approval
    assert "does not match this user's key" in after.restore_report.text()
    clock.advance(1.0)
    after.run_due()
    await after.drain(timeout=60)
    assert after.triggers[trigger_id].runs == 0
    await after.close()
    ledger = Ledger(workspace / "ledger.jsonl")
    assert ledger.verify().ok
    [rotated] = [r for r in ledger.records() if r["kind"] == "approval_key_rotated"]
    assert rotated["needs_approval_again"] == [trigger_id]
    new_key = load_key(create=False)
    assert new_key is not None
    assert leaks(workspace, key) == {} and leaks(workspace, new_key) == {}


async def test_a_forgery_signed_with_a_leaked_key_fails_after_rotation(
        home: Path, key: bytes, clock: ManualClock) -> None:
    workspace, marker = home / "ws", home / "MARKER"
    condition = {"kind": "expression",
                 "expression": f"__import__('pathlib').Path({str(marker)!r}).touch() or True"}
    folder = workspace / "triggers"
    folder.mkdir(parents=True)
    (folder / "trg_planted.json").write_text(json.dumps({
        "id": "trg_planted", "kind": "conditional", "prompt": "echo planted",
        "agent_id": "agent", "created_at": "2026-01-01T00:00:00.000Z",
        "condition": condition, "status": "active"}))
    digest = condition_digest("agent", condition, "echo planted")
    Ledger(workspace / "ledger.jsonl").record_event(
        "approval", agent_id="agent", run_id="run_x", tool_name="condition", arguments={},
        decision="approved", answer="Approve", source="user", digest=digest,
        mac=hmac.new(key, digest.encode(), hashlib.sha256).hexdigest())  # the leaked key
    forged = new_scheduler(workspace, clock, namespace={})
    assert not forged.triggers["trg_planted"].needs_approval  # the leak is real: it works
    await forged.close()
    done = trust_cli("rotate", "--workspace", str(workspace))
    assert done.returncode == 0 and "trg_planted" in done.stdout, done.stdout + done.stderr
    after = new_scheduler(workspace, clock, namespace={})
    assert after.triggers["trg_planted"].needs_approval
    clock.advance(1.0)
    after.run_due()
    await after.drain(timeout=60)
    assert not marker.exists()
    await after.close()


def test_trust_status_says_where_the_key_is_and_when_it_is_refused(home: Path) -> None:
    workspace = home / "ws"
    none_yet = trust_cli("status", "--workspace", str(workspace))
    assert none_yet.returncode == 0 and "none yet" in none_yet.stdout, none_yet.stdout
    assert not workspace.exists()  # status makes no workspace
    load_key(create=True)
    key_path().chmod(0o640)
    loose = trust_cli("status", "--workspace", str(workspace))
    assert loose.returncode == 1
    assert "mode 640" in loose.stdout and "trust rotate" in loose.stdout, loose.stdout
    rotated = trust_cli("rotate", "--workspace", str(workspace))  # the way out
    assert rotated.returncode == 0, rotated.stdout + rotated.stderr
    assert "no approved trigger needs approving again" in rotated.stdout
    again = trust_cli("status", "--workspace", str(workspace))
    assert again.returncode == 0 and "mode 600" in again.stdout, again.stdout


def test_the_key_folder_follows_the_environment_jupyter_reads(home: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    """Worked out once per environment (every agent asks), and again when it changes."""
    assert key_folder() == home / ".local" / "share" / "jupyter" / KEY_FOLDER
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    assert key_folder() == home / "data" / "jupyter" / KEY_FOLDER
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(home / "jd"))
    assert key_folder() == home / "jd" / KEY_FOLDER
    monkeypatch.delenv("JUPYTER_DATA_DIR")
    monkeypatch.delenv("XDG_DATA_HOME")
    other = home / "other"
    other.mkdir()
    monkeypatch.setenv("HOME", str(other))
    assert key_folder() == other / ".local" / "share" / "jupyter" / KEY_FOLDER
