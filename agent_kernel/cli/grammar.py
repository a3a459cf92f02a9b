"""One grammar for every subcommand: an option may stand before or after the subcommand
and its action.

argparse takes a subcommand's options only after the subcommand's name, and the options
of a command with actions (``memory``) only between the command and its action, so
``memory search X --workspace W`` was refused while ``run X --workspace W`` worked.
:func:`reorder` moves each option, with its values, to the level of the parser tree
that defines it before argparse sees the line: ``--workspace W memory search X`` and
``memory search X --workspace W`` both become ``memory --workspace W search X``.
Everything after ``--`` is left as it is.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]
    """What ``add_subparsers()`` returns: each subcommand's ``add_parser(sub)`` is given it."""


def _values_taken(action: argparse.Action) -> int | None:
    """How many tokens follow the option (None: a variable count, left where it is)."""
    if action.nargs == 0:
        return 0
    if action.nargs is None:
        return 1
    return action.nargs if isinstance(action.nargs, int) else None


def _own_options(parser: argparse.ArgumentParser) -> dict[str, int | None]:
    return {text: _values_taken(action) for action in parser._actions
            for text in action.option_strings}


def _choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _all_options(parser: argparse.ArgumentParser) -> dict[str, int | None]:
    found = _own_options(parser)
    for child in _choices(parser).values():
        for text, count in _all_options(child).items():
            found.setdefault(text, count)
    return found


def _option_name(token: str, known: dict[str, int | None]) -> str | None:
    """The option a token names (``--workspace``, ``--workspace=W``, ``-n5``), or None."""
    if not token.startswith("-") or token == "-":
        return None
    if token in known:
        return token
    if token.startswith("--") and "=" in token and token.split("=", 1)[0] in known:
        return token.split("=", 1)[0]
    if not token.startswith("--") and token[:2] in known:
        return token[:2]
    return None


def _groups(tokens: list[str], known: dict[str, int | None]) -> Iterator[tuple[str | None,
                                                                               list[str]]]:
    """``(option name or None, tokens)``: each option with its values, each other token alone."""
    index = 0
    while index < len(tokens):
        token = tokens[index]
        name = _option_name(token, known)
        count = known.get(name) if name else None
        if name is not None and token == name and count:
            yield name, tokens[index:index + 1 + count]
            index += 1 + count
        else:
            yield name, [token]
            index += 1


def reorder(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """``argv`` with every option moved to the parser level that defines it."""
    if "--" in argv:
        cut = argv.index("--")
        return _level(argv[:cut], parser) + argv[cut:]
    return _level(list(argv), parser)


def _level(tokens: list[str], parser: argparse.ArgumentParser) -> list[str]:
    choices = _choices(parser)
    if not choices:
        return tokens
    known = _all_options(parser)
    groups = list(_groups(tokens, known))
    at = next((i for i, (name, part) in enumerate(groups)
               if name is None and part[0] in choices), None)
    if at is None:
        return tokens
    chosen = groups[at][1][0]
    child = choices[chosen]
    mine = _own_options(parser)
    below = _all_options(child)
    stay: list[str] = []
    passed: list[str] = []
    for index, (name, part) in enumerate(groups):
        if index == at:
            continue
        # An option of this level stays here, wherever it was written, unless the level
        # below defines the same option (then it is the nearer one's).
        if name is not None and name in mine and name not in below:
            stay += part
        elif index < at and name is None:
            stay += part  # a stray word before the subcommand: let argparse name it
        else:
            passed += part
    return stay + [chosen] + _level(passed, child)
