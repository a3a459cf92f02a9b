"""One CLI grammar: options before or after the subcommand and its action; the installed
``agent-kernel`` script is the same program as ``python -m agent_kernel``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent_kernel.__main__ import build_parser
from agent_kernel.cli.grammar import reorder


def parsed(*argv: str):
    parser = build_parser()
    return parser.parse_args(reorder(list(argv), parser))


@pytest.mark.parametrize("argv", [
    ["memory", "--workspace", "W", "search", "the", "server", "-n", "3"],
    ["memory", "search", "the", "server", "-n", "3", "--workspace", "W"],
    ["--workspace", "W", "memory", "search", "the", "server", "-n", "3"],
    ["memory", "search", "--workspace=W", "the", "server", "-n3"],
    ["-n", "3", "memory", "search", "the", "server", "--workspace", "W"],
])
def test_memory_options_anywhere(argv):
    args = parsed(*argv)
    assert (args.command, args.action, args.workspace, args.query, args.limit) == (
        "memory", "search", "W", ["the", "server"], 3)


def test_run_and_verify_options_anywhere():
    for argv in (["run", "hi", "--workspace", "W", "--model", "demo"],
                 ["--workspace", "W", "run", "--model", "demo", "hi"],
                 ["--model", "demo", "--workspace", "W", "run", "hi"]):
        args = parsed(*argv)
        assert (args.command, args.prompt, args.workspace, args.model) == ("run", "hi", "W",
                                                                          "demo")
    args = parsed("--repair", "verify", "--workspace", "W")
    assert (args.command, args.repair, args.workspace) == ("verify", True, "W")


def test_values_that_look_like_subcommands_stay_values():
    args = parsed("run", "memory", "--workspace", "verify")
    assert (args.command, args.prompt, args.workspace) == ("run", "memory", "verify")
    args = parsed("memory", "--agent", "search", "search", "list")
    assert (args.agent, args.action, args.query) == ("search", "search", ["list"])


def test_everything_after_a_double_dash_is_left_alone():
    parser = build_parser()
    assert reorder(["run", "--", "--not-an-option"], parser) == ["run", "--",
                                                                 "--not-an-option"]


def test_help_has_examples_for_each_subcommand(capsys):
    for command in ("run", "verify", "triggers", "memory"):
        with pytest.raises(SystemExit):
            build_parser().parse_args([command, "--help"])
        assert "examples:" in capsys.readouterr().out


@pytest.mark.timeout(120)
def test_the_script_is_the_same_program(tmp_path):
    script = Path(sys.executable).with_name("agent-kernel")
    if not script.exists():
        pytest.fail(f"the agent-kernel script is not installed beside {sys.executable}")
    module = subprocess.run([sys.executable, "-m", "agent_kernel", "verify", "--workspace",
                             str(tmp_path)], capture_output=True, text=True, timeout=60)
    named = subprocess.run([str(script), "--workspace", str(tmp_path), "verify"],
                           capture_output=True, text=True, timeout=60)
    assert (named.returncode, named.stdout) == (module.returncode, module.stdout)
    shown = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert shown.stdout.startswith("usage: agent-kernel ")
