"""The organiser: spec 003's todos, contacts and plans, as plain files in the state folder.

``todos`` keeps ``TODO.WIP.md`` / ``TODO.DONE.md`` (the person can read and edit them),
``contacts`` keeps the people and agents the agent may reach (``contacts.json``),
``ranking`` decides whom a proactive share could go to (decisions only, it sends nothing),
``plans`` checks a plan's JSON, and ``asking`` holds the strict JSON contracts of the
model-assisted steps (reference insertion, semantic match, dedup, plan writing). Every
file is written through :mod:`agent_kernel.core.safe_open` (no link is followed) and
redacted first. Nothing here imports a model library: the tools (floor 4) hand in the
run's own model.
"""

from __future__ import annotations

STATE_DIR = "state"
"""The workspace's state folder (``file_state_dir``), where the organiser's files live."""
