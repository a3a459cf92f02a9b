"""Conditions: the ``Condition`` type the specs leave open, made for a notebook.

Spec 000's ``schedule(type="conditional", condition=...)`` never says what a
condition is. In a notebook three kinds make sense, each a small JSON object
a model can write and a person can read:

- ``{"kind": "expression", "expression": "len(df) > 1000"}``: a Python
  expression over the kernel's namespace (IPython's ``user_ns``; outside a
  kernel, the dict handed to the scheduler). A bare string is read as this.
- ``{"kind": "file", "path": "data/out.csv"}``: a file that appears or
  changes (its size or modification time). Relative paths are taken from the
  folder the kernel runs in, fixed when the condition is made.
- ``{"kind": "variable", "name": "df"}``: a variable that changes: it appears,
  is rebound, or its length, shape or (hashable) value changes.

A condition is saved exactly as written, since it is what the person approved
(the approval's digest covers those very characters), and secrets never reach
the disk; so a condition holding anything redaction would mask (a key, a
``token=...`` pair) is refused when it is made, and again when a saved one is
read, with the advice to read the secret from an environment variable; so is one
holding characters that draw nothing or reorder the text (a right-to-left override,
a zero-width space), which would let what the person reads differ from what runs.

A condition *fires on an edge*: when an expression turns true, when a file
appears or changes, when a variable changes. An expression that is already
true the first time it is checked fires once; it must turn false and true
again to fire again. Errors while checking (a name not defined yet) count as
"false" and are reported, never raised into the scheduler. Evaluating an
expression runs code, so the scheduler only ever checks a condition that a
person wrote or approved.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_kernel.core.unseen import draws_nothing, mixed_words

KINDS = ("expression", "file", "variable")
MAX_EXPRESSION = 500
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MISSING = object()


class ConditionError(ValueError):
    """A condition that cannot be used, with a message a model can act on."""


@dataclass
class Condition:
    """What a conditional trigger watches: an expression, a file or a variable."""

    kind: str
    expression: str | None = None
    path: str | None = None
    name: str | None = None

    @classmethod
    def parse(cls, value: object, base: str | os.PathLike[str] | None = None) -> Condition:
        """Build and validate a condition from its JSON shape (or a bare expression string)."""
        if isinstance(value, Condition):
            return value
        if isinstance(value, str):
            value = {"kind": "expression", "expression": value}
        if not isinstance(value, dict):
            raise ConditionError(
                "condition must be an object like {\"kind\": \"expression\", \"expression\": "
                f"\"len(df) > 1000\"}}, got {type(value).__name__}")
        kind = value.get("kind") or value.get("type")
        if kind is None:
            # Accept the obvious shorthand {"expression": ...}, {"path": ...}, {"name": ...}.
            kind = next((k for k, key in (("expression", "expression"), ("file", "path"),
                                          ("variable", "name")) if key in value), None)
        if kind not in KINDS:
            raise ConditionError(f"condition kind must be one of {', '.join(KINDS)}, got {kind!r}")
        unknown = set(value) - {"kind", "type", "expression", "path", "name"}
        if unknown:
            raise ConditionError(f"unknown condition field(s): {', '.join(sorted(unknown))}")
        if kind == "expression":
            return _verbatim(cls("expression",
                                 expression=_check_expression(value.get("expression"))))
        if kind == "file":
            raw = value.get("path")
            if not isinstance(raw, str) or not raw.strip():
                raise ConditionError("a file condition needs a non-empty 'path'")
            path = Path(raw).expanduser()
            if not path.is_absolute():
                path = Path(base or os.getcwd()) / path
            return _verbatim(cls("file", path=str(path.resolve())))
        name = value.get("name")
        if not isinstance(name, str) or not _IDENTIFIER.match(name):
            raise ConditionError(f"a variable condition needs a variable 'name', got {name!r}")
        return _verbatim(cls("variable", name=name))

    def to_dict(self) -> dict[str, str]:
        """The JSON shape, as stored and as shown for approval."""
        key = {"expression": "expression", "file": "path", "variable": "name"}[self.kind]
        return {"kind": self.kind, key: str(getattr(self, key))}

    def describe(self) -> str:
        """One line for people: ``when len(df) > 1000``."""
        if self.kind == "expression":
            return f"when {self.expression}"
        if self.kind == "file":
            return f"when file {self.path} appears or changes"
        return f"when variable {self.name} changes"

    @property
    def needs_namespace(self) -> bool:
        """True for kinds that read variables (they need a kernel or a namespace dict)."""
        return self.kind in ("expression", "variable")


def _verbatim(condition: Condition) -> Condition:
    """``condition`` when redaction leaves it as it is, else a refusal (never an altered copy)."""
    from agent_kernel.core.redaction import scrub

    shape = condition.to_dict()
    field_name = {"expression": "expression", "file": "path", "variable": "name"}[condition.kind]
    hidden = [c for c in shape[field_name] if draws_nothing(c)]
    if hidden:  # a person approves what they read: nothing may hide or reorder it
        raise ConditionError(
            f"the condition's {field_name} holds characters that draw nothing or reorder the "
            f"text around them ({', '.join(sorted({f'U+{ord(c):04X}' for c in hidden}))}); "
            "write it with plain characters")
    mixed = mixed_words(shape[field_name])
    if mixed:  # nor read one word as another: gооgle with Cyrillic о
        raise ConditionError(
            f"the condition's {field_name} holds a word that mixes alphabets "
            f"({shape[field_name][mixed[0][0]:mixed[0][1]]!r} has look-alike letters "
            f"{mixed[0][2]} among Latin ones); write each word in one alphabet")
    if scrub(shape) == shape:
        return condition
    advice = ("read the secret from an environment variable in the expression instead, e.g. "
              "os.environ['SERVICE_TOKEN'] == ..." if condition.kind == "expression" else
              "choose a name without it")
    raise ConditionError(
        f"the condition's {field_name} holds text that looks like a secret (a key, a token, "
        "a password=... pair). A condition is saved exactly as written, and secrets are "
        f"never written to disk: {advice}")


def _check_expression(expression: object) -> str:
    if not isinstance(expression, str) or not expression.strip():
        raise ConditionError("an expression condition needs a non-empty 'expression'")
    expression = expression.strip()
    if len(expression) > MAX_EXPRESSION:
        raise ConditionError(
            f"expression must be at most {MAX_EXPRESSION} characters, got {len(expression)}")
    try:
        ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise ConditionError(f"expression {expression!r} is not valid Python: {exc.msg}") from None
    return expression


def _fingerprint(value: object) -> tuple[Any, ...]:
    """A cheap summary that changes when a variable is rebound or visibly modified."""
    parts: list[Any] = [type(value).__qualname__, id(value)]
    for probe in (lambda v: len(v), lambda v: tuple(v.shape)):
        try:
            parts.append(probe(value))
        except Exception:
            parts.append(None)
    try:
        parts.append(hash(value))
    except Exception:
        parts.append(None)
    return tuple(parts)


def _file_state(path: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_size, stat.st_mtime_ns)


@dataclass
class ConditionWatch:
    """The state of one condition between checks: it says when an edge was crossed."""

    condition: Condition
    _previous: Any = field(default=_MISSING, repr=False)
    _code: Any = field(default=None, repr=False)
    last_error: str | None = None

    def check(self, namespace: dict[str, Any] | None) -> bool:
        """Check once; True when the condition fired (crossed its edge) since the last check."""
        self.last_error = None
        kind = self.condition.kind
        if kind == "file":
            return self._changed(_file_state(str(self.condition.path)), first_fires=False)
        if namespace is None:
            self.last_error = ("no namespace to read variables from (conditions over variables "
                               "need a kernel or a namespace dict)")
            return False
        if kind == "variable":
            value = namespace.get(str(self.condition.name), _MISSING)
            current = None if value is _MISSING else _fingerprint(value)
            return self._changed(current, first_fires=False)
        if self._code is None:
            self._code = compile(str(self.condition.expression), "<trigger condition>", "eval")
        try:
            # IPython's user_ns is a module namespace already; a plain dict is copied so
            # eval does not add __builtins__ to it.
            scope = namespace if "__builtins__" in namespace else dict(namespace)
            truth = bool(eval(self._code, scope))  # noqa: S307 - approved by a person first
        except Exception as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"
            truth = False
        was = self._previous if self._previous is not _MISSING else False
        self._previous = truth
        return truth and not was

    def _changed(self, current: object, *, first_fires: bool) -> bool:
        if self._previous is _MISSING:
            self._previous = current
            return first_fires and current is not None
        changed = current != self._previous
        self._previous = current
        return changed and current is not None
