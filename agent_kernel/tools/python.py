"""run_python: code the model writes, run in the person's kernel once the person approves it.

Unlike ``run_javascript`` (a sandboxed child), this code runs *in* the kernel, with the
person's variables: that is the point, and it is why every call is approved first, with
the exact code on the card and its sha256 ``digest`` in the ledger's approval record.
The kernel side (``notebook/python.py``, reached as ``ctx.agent.services.python``) runs
it as a cell would; outside a kernel the service is None and the tool says so.

Approval rules (docs/notebook.md, "Python in the kernel"):

- "Always allow" is a standing permission for this notebook (revocable with
  ``%agent_config --revoke run_python``, on record), but it never lets through a call
  from a run a trigger started, from a team member, or with nobody to click: those
  always ask, or are refused.
- With nobody to click, the headless policy never approves it, even set to ``allow``:
  the call is refused.

What the model reads is bounded: stdout, stderr and the value are each cut with a note,
and an image is a line of words (``[image: 640×480 PNG]``); the run's view draws the
image itself.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Literal, TypedDict

from agent_kernel.engine.approvals import ApprovalTerms
from agent_kernel.engine.registry import Field, Tool, ToolContext
from agent_kernel.engine.services import PythonError, PythonNames, PythonOutput, PythonRun

MAX_TIMEOUT_SECONDS = 600.0
TEXT_LIMIT = 10_000
"""Characters of stdout, stderr and the value each that the result keeps."""
OUTPUT_TEXT_LIMIT = 4_000
MAX_IMAGES = 10
NEVER_BY_POLICY = "code run in the kernel is approved only by a person, never by a policy"


class RunPythonResult(TypedDict, total=False):
    """What ``run_python`` returns (the agreed keys); ``ok`` is True when the code ran to
    its end; ``error`` is a string only when nothing ran (not in a kernel)."""

    ok: bool
    status: Literal["done", "error", "timeout", "stopped"]
    stdout: str
    stderr: str
    value: str | None
    outputs: list[PythonOutput]
    error: PythonError | str | None
    names: PythonNames


def code_digest(code: str) -> str:
    """The sha256 of exactly the code approved (hex), as the approval record carries it."""
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


def cut(text: str, limit: int = TEXT_LIMIT) -> str:
    """``text`` within ``limit`` characters: its start and its end, with a note between."""
    if len(text) <= limit:
        return text
    tail = limit // 5
    head = limit - tail
    return (f"{text[:head]}\n[... {len(text) - head - tail:,} characters left out of "
            f"{len(text):,} ...]\n{text[-tail:]}")


def code_terms(ctx: ToolContext, code: str) -> ApprovalTerms:
    """How code for the kernel is approved (``run_python``, and a cell's ``edit_cell`` and
    ``run_cell``): the code's digest; no standing permission for a trigger's run, a team
    member or nobody to click; never the headless policy."""
    trusted_asker = (ctx.trigger is None and ctx.agent.role is None
                     and ctx.agent.questions.interactive)
    return ApprovalTerms(digest=code_digest(code), standing=trusted_asker, policy=False,
                         why=NEVER_BY_POLICY)


def approval_terms(ctx: ToolContext, arguments: dict[str, object]) -> ApprovalTerms:
    """``run_python``'s terms: see :func:`code_terms`."""
    code = arguments.get("code")
    return code_terms(ctx, code if isinstance(code, str) else "")


def bounded(run: PythonRun) -> RunPythonResult:
    """The service's result as the tool returns it: texts cut, images at most
    :data:`MAX_IMAGES` (the view draws them)."""
    outputs: list[PythonOutput] = []
    images = 0
    for output in run["outputs"]:
        if output.get("mime") == "image/png":
            images += 1
            if images > MAX_IMAGES:
                continue
            outputs.append(output)
        else:
            outputs.append({"mime": output.get("mime", "text/plain"),
                            "text": cut(output.get("text", ""), OUTPUT_TEXT_LIMIT)})
    if images > MAX_IMAGES:
        outputs.append({"mime": "text/plain",
                        "text": f"[{images - MAX_IMAGES} more images were left out]"})
    status = run["status"]
    error = run["error"]
    if status == "timeout":
        error = {"type": "TimeoutError", "traceback": "",
                 "message": "the code ran past its time limit and was stopped"}
    elif status == "stopped":
        error = {"type": "Stopped", "traceback": "",
                 "message": "the code was stopped (Stop, or the kernel was interrupted)"}
    return {"ok": status == "done", "status": status, "stdout": cut(run["stdout"]),
            "stderr": cut(run["stderr"]),
            "value": None if run["value"] is None else cut(run["value"]),
            "outputs": outputs, "error": error, "names": run["names"]}


def for_model(result: object) -> object:
    """What the model reads: the result with each image as a line of words."""
    if not isinstance(result, dict) or not isinstance(result.get("outputs"), list):
        return result
    shown: list[object] = []
    for output in result["outputs"]:
        if isinstance(output, dict) and output.get("mime") == "image/png":
            shown.append({"mime": "image/png", "image": (
                f"[image: {output.get('width', 0)}×{output.get('height', 0)} PNG, drawn "
                f"for the person in the run]")})
        else:
            shown.append(output)
    return {**result, "outputs": shown}


def images(result: object) -> list[str]:
    """The PNGs the code drew, as base64, for a model that reads images."""
    if not isinstance(result, dict) or not isinstance(result.get("outputs"), list):
        return []
    return [output["data"] for output in result["outputs"]
            if isinstance(output, dict) and output.get("mime") == "image/png"
            and isinstance(output.get("data"), str)]


async def run_python(
    code: Annotated[str, Field(min_length=1, max_length=100_000)],
    ctx: ToolContext,
    timeout_seconds: Annotated[float, Field(gt=0, le=MAX_TIMEOUT_SECONDS)] = 30,
) -> RunPythonResult:
    """Run Python in the notebook's kernel, with the person's variables, as a cell would.

    Notes:
        The person approves the exact code first. Returns stdout, stderr, the last
        expression's value, rich outputs (images are drawn for the person), the error
        with its traceback, and the names the code created, changed or deleted.

    Args:
        code: Python source (IPython syntax works: %magics, !commands). Keep it short;
            print or end with an expression to see a result.
        timeout_seconds: Seconds the code may run before it is stopped.
    """
    service = ctx.agent.services.python
    if service is None:
        return {"ok": False, "error": "run_python needs a Jupyter kernel (load the "
                                      "extension with %load_ext agent_kernel); there is none "
                                      "here, so nothing was run."}
    result = bounded(await service.run(code, timeout=timeout_seconds, run_id=ctx.run_id))
    if result["status"] == "stopped":  # the kernel's interrupt stops the run too
        ctx.agent.stop(ctx.run_id)
    return result


TOOLS = [
    Tool(run_python, source="builtin", side_effects=True, approval_terms=approval_terms,
         for_model=for_model, images=images, timeout=MAX_TIMEOUT_SECONDS + 60.0),
]
