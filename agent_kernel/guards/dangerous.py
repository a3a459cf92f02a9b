"""Dangerous commands (spec 004: ``sudo``, ``rm -rf /`` and the like), refused before approval.

This list is a courtesy, not the protection. A command is text a model wrote, and
text can always be spelled past a list (``$(printf 'su%s' do)``, a script file,
Python's ``os.system``); what keeps the runtime's files, the network and the
machine safe is the sandbox of :mod:`agent_kernel.guards.sandbox`. The list exists so a
person is never asked to approve a command that is plainly wrong, and so the model
hears at once that it must not try: a refused command runs nothing and asks no one.

The command is read as the shell reads it: :mod:`shlex` undoes quoting and escapes
and splits at the shell's operators (``;`` ``&&`` ``|`` ``&`` ``(`` ``)`` backquotes,
newlines). In each simple command the program is found past ``NAME=value``
assignments and wrappers (``env``, ``nohup``, ``exec``, ``timeout``, ``xargs``...)
by its base name (``/usr/bin/sudo`` is ``sudo``), and the scripts of ``bash -c``,
``eval``, ``env -S``, ``watch`` and ``find -exec`` are read the same way.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass

_OPERATORS = "();<>|&`\n"
_MAX_DEPTH = 8

PRIVILEGE = {"sudo", "sudoedit", "su", "doas", "pkexec", "run0", "runuser"}
POWER = {"shutdown", "reboot", "halt", "poweroff", "kexec"}
POWER_VERBS = {"poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "hybrid-sleep",
               "suspend-then-hibernate", "rescue", "emergency"}
DISK_TOOLS = {"mkfs", "mke2fs", "mkswap", "mkdosfs", "mkntfs", "wipefs", "fdisk", "sfdisk",
              "cfdisk", "gdisk", "sgdisk", "parted", "blkdiscard"}
SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash"}
SYSTEM_DIRS = {"/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/opt",
               "/proc", "/root", "/sbin", "/srv", "/sys", "/usr", "/var"}
# A wrapper runs the rest of its words as a command; these options of it take a value.
WRAPPERS: dict[str, set[str]] = {
    "env": {"-u", "--unset", "-C", "--chdir"}, "command": set(), "builtin": set(),
    "exec": {"-a"}, "nohup": set(), "setsid": set(), "time": set(), "busybox": set(),
    "nice": {"-n", "--adjustment"}, "ionice": {"-c", "-n", "--class", "--classdata"},
    "timeout": {"-s", "--signal", "-k", "--kill-after"}, "stdbuf": {"-i", "-o", "-e"},
    "xargs": {"-I", "-n", "-P", "-d", "-E", "-L", "-s", "-a", "--delimiter",
              "--max-args", "--max-procs", "--arg-file"},
    "chrt": set(), "taskset": set(), "flock": {"-w", "-E"}, "unbuffer": set(),
    "strace": {"-o", "-e", "-p", "-s"}, "ltrace": {"-o", "-e", "-p", "-s"},
}
# ... and these take one plain value before the command (a duration, a priority, ...).
WRAPPER_VALUES = {"timeout": 1, "chrt": 1, "taskset": 1, "flock": 1}
_HARMLESS_DEVICES = re.compile(r"^/dev/(null|zero|full|stdout|stderr|stdin|tty|fd/.*|shm/.*)$")
_DISK = re.compile(r"^/dev/(sd|hd|vd|xvd|nvme|mmcblk|md|dm-|loop|sr|nbd|disk/|mapper/|"
                   r"mem$|kmem$|port$)")
# name() { name | name & }: a function that starts two copies of itself, in the background.
_FORK_BOMB = re.compile(r"(?:function\s+)?(?P<n>[^\s(){};|&<>]+)\s*(?:\(\s*\))?\s*\{"
                        r"[^}]*?(?P=n)\s*\|\s*(?P=n)\s*&")


@dataclass(frozen=True)
class Danger:
    """A command on the list: the simple command found, and why it is refused."""

    command: str
    why: str


def find_danger(script: str) -> Danger | None:
    """The first dangerous command in ``script`` (a bash command line), or None."""
    return _script(script, 0)


def _script(script: str, depth: int) -> Danger | None:
    if depth > _MAX_DEPTH:
        return Danger(script[:80], "nests shells too deeply to be checked")
    bomb = _FORK_BOMB.search(script)
    if bomb:
        return Danger(bomb.group(0), "is a fork bomb: it starts copies of itself without end")
    for words, targets in _simple_commands(_words(script)):
        found = _command(words, targets, depth)
        if found is not None:
            return found
    return None


def _words(script: str) -> list[str]:
    lexer = shlex.shlex(script, posix=True, punctuation_chars=_OPERATORS)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""  # '#' after a newline-joined line must not hide what follows
    try:
        return list(lexer)
    except ValueError:
        # Unbalanced quotes (a heredoc with "it's", say): read it with quotes as spaces,
        # which can only split words further, never join a program name to something.
        return re.findall(r"[^\s();<>|&`'\"\\]+|[();<>|&`\n]+", script)


def _simple_commands(words: list[str]) -> list[tuple[list[str], list[str]]]:
    """Split at operators into (words, targets written by ``>`` redirections)."""
    found: list[tuple[list[str], list[str]]] = []
    current: list[str] = []
    targets: list[str] = []
    redirect: str | None = None
    for word in words:
        if redirect is not None:
            if ">" in redirect:
                targets.append(word)
            redirect = None
        elif word and set(word) <= set(_OPERATORS):
            if "<" in word or ">" in word:
                redirect = word
                continue
            if current or targets:
                found.append((current, targets))
            current, targets = [], []
        else:
            current.append(word)
    if current or targets:
        found.append((current, targets))
    return found


def _command(words: list[str], targets: list[str], depth: int) -> Danger | None:
    shown = " ".join(words)[:120]
    for target in targets:
        if target.startswith("/dev/") and not _HARMLESS_DEVICES.match(target):
            return Danger(f"{shown} > {target}", "writes straight to a device")
    words = _program(words)
    if not words:
        return None
    name, args = posixpath.basename(words[0]), words[1:]
    if name in PRIVILEGE:
        return Danger(shown, "runs commands as root or as another user")
    if name in POWER or (name in ("init", "telinit") and args[:1] in (["0"], ["6"])) or (
            name in ("systemctl", "loginctl") and POWER_VERBS & set(args)):
        return Danger(shown, "shuts down or restarts the machine")
    if (name in DISK_TOOLS or name.startswith("mkfs.")) and not {"-l", "--list"} & set(args):
        return Danger(shown, "formats or repartitions a disk")
    if name == "dd" and any(a.startswith("of=/dev/") and not _HARMLESS_DEVICES.match(a[3:])
                            for a in args):
        return Danger(shown, "writes straight to a device")
    if name in ("tee", "cp", "mv", "shred", "truncate", "install") and any(
            _DISK.match(a) for a in args):
        return Danger(shown, "writes straight to a disk")
    if name == "rm" and ("--no-preserve-root" in args or (
            _has_flag(args, "rR", "--recursive") and any(map(_everything, _operands(args))))):
        return Danger(shown, "deletes the whole system or your home folder")
    if name in ("chmod", "chown", "chgrp") and _has_flag(args, "R", "--recursive") and any(
            map(_everything, _operands(args))):
        return Danger(shown, "changes the owner or permissions of every file in the system")
    if name == "mv" and any(map(_everything, _operands(args)[:-1])):
        return Danger(shown, "moves the whole system or your home folder away")
    if name == "find" and "-delete" in args and any(map(_everything, _operands(args)[:1])):
        return Danger(shown, "deletes the whole system or your home folder")
    if (name == "kill" and len(args) >= 2 and args[-1] == "-1") or name == "killall5":
        return Danger(shown, "kills every process you own, the notebook's kernel included")
    return _inner(name, args, depth)


def _inner(name: str, args: list[str], depth: int) -> Danger | None:
    """Commands that run other commands given as text: read that text too."""
    if name in SHELLS:
        script = _shell_script(args)
        return _script(script, depth + 1) if script is not None else None
    if name == "eval" or name == "watch":
        rest = args if name == "eval" else _after_options(args, {"-n", "--interval", "-x"})
        return _script(" ".join(rest), depth + 1)
    if name == "find":
        for marker in ("-exec", "-execdir", "-ok", "-okdir"):
            if marker in args:
                rest = args[args.index(marker) + 1:]
                found = _command([w for w in rest if w not in ("{}", "+")], [], depth + 1)
                if found is not None:
                    return found
    return None


def _program(words: list[str]) -> list[str]:
    """The words from the program on: past assignments, keywords and wrappers."""
    rest = list(words)
    while rest:
        head = rest[0]
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", head) or head in (
                "{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while",
                "until", "coproc", "()"):
            rest = rest[1:]
            continue
        name = posixpath.basename(head)
        if name not in WRAPPERS:
            return rest
        args = rest[1:]
        if name == "command" and {"-v", "-V"} & set(args):
            return []  # `command -v sudo` asks where sudo is; it runs nothing
        if name == "env":
            split = _env_split_string(args)
            if split is not None:
                return ["eval", split]
        rest = _after_options(args, WRAPPERS[name], WRAPPER_VALUES.get(name, 0))
    return rest


def _after_options(args: list[str], takes_value: set[str], values: int = 0) -> list[str]:
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            i += 1
            break
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word):
            i += 1
        elif word.startswith("-") and len(word) > 1:
            i += 2 if word in takes_value else 1
        else:
            break
    return args[i + values:]


def _env_split_string(args: list[str]) -> str | None:
    for i, word in enumerate(args):
        if word in ("-S", "--split-string") and i + 1 < len(args):
            return " ".join(args[i + 1:])
        if word.startswith("-S") and len(word) > 2:
            return " ".join([word[2:], *args[i + 1:]])
        if word.startswith("--split-string="):
            return " ".join([word.split("=", 1)[1], *args[i + 1:]])
        if not word.startswith("-"):
            return None
    return None


def _shell_script(args: list[str]) -> str | None:
    """The script of ``bash -c SCRIPT`` (``-lc``, ``-ec``, ``-o pipefail -c`` too)."""
    command = False
    i = 0
    while i < len(args):
        word = args[i]
        if word in ("-o", "+o", "-O", "+O"):
            i += 2
            continue
        if word == "--":
            i += 1
            break
        if word.startswith(("-", "+")) and len(word) > 1:
            command = command or (not word.startswith("--") and "c" in word[1:])
            i += 1
            continue
        break
    return args[i] if command and i < len(args) else None


def _has_flag(args: list[str], short: str, long: str) -> bool:
    return any(a == long or (a.startswith("-") and not a.startswith("--")
                             and any(c in a[1:] for c in short)) for a in args)


def _operands(args: list[str]) -> list[str]:
    if "--" in args:
        cut = args.index("--")
        return [a for a in args[:cut] if not a.startswith("-")] + args[cut + 1:]
    return [a for a in args if not a.startswith("-")]


def _everything(word: str) -> bool:
    """Whether ``word`` names ``/``, a top-level system folder or the home folder."""
    text = re.sub(r"^(~|\$HOME|\$\{HOME\})(?=/|$)", "/~home", word)
    if not text.startswith("/"):
        return False
    text = posixpath.normpath(text)
    if re.search(r"[*?\[]", posixpath.basename(text)):
        text = posixpath.dirname(text)  # a glob in the last part reaches its whole folder
    text = posixpath.normpath(text)
    return text in ("/", "//", "/~home") or text in SYSTEM_DIRS
