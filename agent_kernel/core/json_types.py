"""The type of a JSON object no type of ours knows the keys of.

Most JSON in the package has a shape and a type for it (``ChatMessage``, ``ToolSchema``,
``TaskSummary``, the run record's pydantic models). :data:`JsonObject` is for the rest
only: a tool's arguments (each tool checks them against its own JSON Schema), a JSON
Schema itself, a ledger record's event-specific fields, a tool's result as the model
read it back. Its uses are counted beside ``dict[str, Any]``'s in docs/architecture.md.
"""

from __future__ import annotations

from typing import Any

__all__ = ["JsonObject"]

JsonObject = dict[str, Any]
"""A JSON object of free keys: see the module's docstring for where it is the right type."""
