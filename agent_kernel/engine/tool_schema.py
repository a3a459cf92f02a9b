"""A tool's words and schema from its function: the docstring split into a description
and per-argument text, pydantic's JSON schema made flat (``$defs`` inlined, titles
dropped) and a validation error said in one line the model can act on."""

from __future__ import annotations

import copy
import inspect
import re
from typing import TYPE_CHECKING, Any

from agent_kernel.engine.models.base import JsonObject

if TYPE_CHECKING:
    from pydantic import ValidationError

_ARG_LINE = re.compile(r"^\s{0,8}(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into a description and per-argument text."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    args: dict[str, str] = {}
    section = "summary"
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        header = stripped.rstrip(":").lower()
        if stripped.endswith(":") and header in ("args", "arguments", "parameters", "params"):
            section, current = "args", None
            continue
        if stripped.endswith(":") and header in ("returns", "return", "raises", "yields", "example",
                                                  "examples", "note", "notes"):
            section, current = "other", None
            continue
        if section == "summary":
            summary.append(line)
        elif section == "args":
            match = _ARG_LINE.match(line)
            if match and not line.startswith("        "):
                current = match.group(1).lstrip("*")
                args[current] = match.group(2).strip()
            elif current and stripped:
                args[current] = f"{args[current]} {stripped}".strip()
    return "\n".join(summary).strip(), args


def inline_refs(schema: JsonObject) -> JsonObject:
    """Inline ``$defs`` (enums, nested models) and drop pydantic's titles."""
    defs = schema.pop("$defs", {})

    def walk(node: object) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                target = copy.deepcopy(defs[node["$ref"].split("/")[-1]])
                extra = {k: v for k, v in node.items() if k != "$ref"}
                return walk({**target, **extra})
            out = {k: walk(v) for k, v in node.items() if k != "title"}
            any_of = out.get("anyOf")
            if isinstance(any_of, list) and len(any_of) == 2 and {"type": "null"} in any_of:
                inner = next(item for item in any_of if item != {"type": "null"})
                out.pop("anyOf")
                out = {**inner, **out}
                if out.get("default", ...) is None:
                    out.pop("default")
            return out
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    result: JsonObject = walk(schema)
    return result


def format_validation_error(tool_name: str, error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"]) or "arguments"
        if item["type"] == "missing":
            parts.append(f"{where}: required argument is missing")
        elif item["type"] == "extra_forbidden":
            parts.append(f"{where}: unexpected argument")
        else:
            got = item.get("input")
            shown = repr(got)
            if len(shown) > 80:
                shown = shown[:77] + "..."
            parts.append(f"{where}: {item['msg']}, got {shown}")
    return f"Invalid arguments for tool '{tool_name}': " + "; ".join(parts)
