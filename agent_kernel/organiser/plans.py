"""Plans: spec 003's ``plan_create`` JSON, checked before anyone sees it.

The shape (the reference implementation's)::

    {"plan": {"thought": "...", "summary": "...",
              "steps": [{"step": "...", "status": "in_progress"}, ...],
              "risks": [...], "questions": [...], "completion": "..."}}

What the model wrote is data: every field is made the type it must be, text is clipped,
steps beyond ``max_steps`` are dropped, a status that is not ``pending`` /
``in_progress`` / ``completed`` becomes ``pending`` (the first step, without one,
``in_progress``). A reply with neither a summary nor a step is no plan at all:
``invalid plan_create response``.
"""

from __future__ import annotations

from typing import Literal, TypedDict, cast

from agent_kernel.organiser.asking import OrganiserError

StepStatus = Literal["pending", "in_progress", "completed"]
STEP_STATUSES: tuple[StepStatus, ...] = ("pending", "in_progress", "completed")
MAX_TEXT = 1000
MAX_ITEMS = 20


class PlanStep(TypedDict):
    """One step and where it stands."""

    step: str
    status: StepStatus


class Plan(TypedDict):
    """A plan (``plan_create``'s ``plan``)."""

    thought: str
    summary: str
    steps: list[PlanStep]
    risks: list[str]
    questions: list[str]
    completion: str


class PlanResult(TypedDict):
    """``plan_create``'s result."""

    plan: Plan


def _text(value: object) -> str:
    return " ".join(value.split())[:MAX_TEXT] if isinstance(value, str) else ""


def _texts(value: object) -> list[str]:
    if not isinstance(value, list):
        return []
    return [t for t in (_text(v) for v in value) if t][:MAX_ITEMS]


def check_plan(answer: dict[str, object], max_steps: int) -> PlanResult:
    """The model's answer as a valid plan of at most ``max_steps`` steps."""
    body = answer.get("plan")
    raw = body if isinstance(body, dict) else answer  # the reference's legacy, unwrapped
    steps: list[PlanStep] = []
    raw_steps = raw.get("steps")
    for i, item in enumerate(raw_steps if isinstance(raw_steps, list) else []):
        if len(steps) >= max_steps:
            break
        if isinstance(item, str):
            item = {"step": item}
        if not isinstance(item, dict):
            continue
        status = str(item.get("status") or "").strip().lower()
        if status not in STEP_STATUSES:
            status = "in_progress" if not status and i == 0 else "pending"
        steps.append({"step": _text(item.get("step")) or f"step {i + 1}",
                      "status": cast(StepStatus, status)})
    plan: Plan = {"thought": _text(raw.get("thought")), "summary": _text(raw.get("summary")),
                  "steps": steps, "risks": _texts(raw.get("risks")),
                  "questions": _texts(raw.get("questions")),
                  "completion": _text(raw.get("completion"))}
    if not plan["summary"] and not steps:
        raise OrganiserError("invalid plan_create response: no summary and no steps")
    return {"plan": plan}
