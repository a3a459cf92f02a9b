"""The offline ``demo`` model playing a team: the Teller, the Planner and the Workers.

A team run on ``model="demo"`` goes through the real supervisor, queues, tools and
ledger; only the decisions are rules. The model is told the asking agent's role
(``teller``, ``planner``, ``worker``: the names of :mod:`agent_kernel.team.roles`)
through the model seam and acts on it, the conversation and the tools it is offered:

- the **Teller** hands the person's ask to the Planner with one ``delegate`` and says so
  in the same response, which ends its run; when
  "The work you delegated has ended" comes back, it reads each Worker's artifact
  with ``get_artifact`` and answers with a comparison built from what came back;
- the **Planner** splits "research three cities ..." (or "compare Lisbon, Kyoto and
  Montreal ...") into one ``delegate`` per item, the first named highest, then says
  what it planned; any other ask goes to one Worker whole;
- a **Worker** asked to research an item looks it up in :data:`SAMPLE_NOTES`, the
  model's own small table of sample notes (what a real model would know or search
  for), saves them with ``put_artifact`` and answers with them and the reference.
  Those notes are fixed demo data and every answer says so. Other work follows the
  single demo model's rules (files, commands, ...).
"""

from __future__ import annotations

import json
import re

from agent_kernel.engine.models import demo
from agent_kernel.engine.models.base import (
    ChatMessage,
    JsonObject,
    Seen,
    ToolSchema,
    turn_calls,
)
from agent_kernel.engine.models.demo import LABEL, DemoTurn, plan_calls, plan_for_tool
from agent_kernel.engine.models.demo_answers import refusal

Facts = dict[str, str | int]
"""What the sample notes say of a place: ``known for``, ``best season``, a daily budget."""

SOURCE = "sample notes built into the offline demo model (fixed and rough, not researched)"
BUDGET = "daily budget"
ASPECTS = "best season, what it is known for, a rough daily budget and getting around"

SAMPLE_NOTES: dict[str, Facts] = {
    "Lisbon": {"country": "Portugal", "best season": "March to May, September to October",
               "known for": "hills, trams, tiled facades and seafood", BUDGET: 90,
               "getting around": "metro, trams and walking (steep streets)"},
    "Kyoto": {"country": "Japan", "best season": "late March to May, October to November",
              "known for": "temples, gardens and old wooden streets", BUDGET: 110,
              "getting around": "buses, the subway and bicycles"},
    "Montreal": {"country": "Canada", "best season": "June to September",
                 "known for": "the old port, summer festivals and bagels", BUDGET: 120,
                 "getting around": "the metro and bike share"},
    "Mexico City": {"country": "Mexico", "best season": "March to May",
                    "known for": "museums, murals and street food", BUDGET: 70,
                    "getting around": "the metro, Metrobús and taxis by app"},
    "Reykjavik": {"country": "Iceland", "best season": "June to August (or winter for "
                  "northern lights)", "known for": "hot pools, a small old town and day "
                  "trips to waterfalls", BUDGET: 180, "getting around": "walking in town, "
                  "a hire car or tours beyond"},
    "Cape Town": {"country": "South Africa", "best season": "November to March",
                  "known for": "Table Mountain, beaches and nearby vineyards", BUDGET: 80,
                  "getting around": "taxis by app and the MyCiTi buses"},
}
"""The demo model's own sample notes: what a real model would know or find on the web."""

PLACES = {"city", "town", "place", "destination"}
_COUNTS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_VERB = r"(?:research|compare|look\s+into|find\s+out\s+about|explore)"
RESULTS_OPENING = "The work you delegated has ended"
_REF = re.compile(r"artifact:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _notes_for(subject: str) -> tuple[str, Facts] | None:
    key = re.sub(r"\s+", " ", subject).strip(" .").casefold()
    return next(((k, v) for k, v in SAMPLE_NOTES.items() if k.casefold() == key), None)


def _purpose(prompt: str) -> str:
    m = re.search(r"\bfor\s+((?:a|an|my|our)\s+[a-z][a-z ]*?)(?=\s+and\b|[,.;:?!]|$)", prompt,
                  re.I)
    return f" for {m.group(1)}" if m else ""


def items_of(prompt: str) -> list[str] | None:
    """The things to research a prompt names ("compare Lisbon, Kyoto and Montreal"), or the
    sample cities for "research three cities"; None when it asks for something else."""
    m = re.search(rf"\b{_VERB}\s+(?:the\s+)?(.+?)(?:\s+for\s+(?:a|an|my|our|the)\b.*|\s+and\s+"
                  r"compare\b.*|[.?!])?$", prompt.strip(), re.I)
    if not m:
        return None
    parts = [p.strip(" '\"") for p in re.split(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|vs\.?|"
                                               r"versus)\s+", m.group(1)) if p.strip(" '\"")]
    if len(parts) >= 2 and all(p[0].isupper() and len(p.split()) <= 4 for p in parts):
        return parts[:8]
    count = re.match(r"^(two|three|four|five|six|[2-6])\s+([a-z]+)\b", m.group(1), re.I)
    if count:
        noun = count.group(2).lower()
        kind = noun[:-3] + "y" if noun.endswith("ies") else noun.rstrip("s")
        number = _COUNTS.get(count.group(1).lower()) or int(count.group(1))
        if kind in PLACES:
            return list(SAMPLE_NOTES)[:number]
    return None


def _last_turn(messages: list[ChatMessage]) -> tuple[str, list[ChatMessage]]:
    """The latest user message's text and the messages after it."""
    last = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    text = str(messages[last].get("content") or "").strip() if last >= 0 else ""
    return text, messages[last + 1:]


def _failed(result: str) -> str | None:
    """The reason a call failed, or None when it went through."""
    return refusal(result)


TEAM_ROLES = ("teller", "planner", "worker")
"""The roles the demo model plays by rules of their own (``team.roles``' names)."""


def respond(messages: list[ChatMessage], tools: list[ToolSchema],
            role: str | None = None) -> DemoTurn:
    """The demo model's next response as ``role``: a team role's, else the single demo
    model's (an agent outside a team, or of a role made at run time)."""
    if role in TEAM_ROLES:
        names = {t.get("function", {}).get("name") for t in tools or []} - {None}
        schemas = {t["function"]["name"]: t["function"].get("parameters") or {}
                   for t in tools or [] if t.get("function", {}).get("name")}
        played = play(role, messages, names, schemas)
        if played is not None:
            return played
    return demo.respond(messages, tools)


def play(role: str, messages: list[ChatMessage], names: set[str],
         schemas: dict[str, JsonObject]) -> DemoTurn | None:
    """The demo model's turn as ``role``; None leaves it to the single demo model's rules."""
    prompt, turn = _last_turn(messages)
    if role == "teller":
        return _teller(prompt, turn, names, schemas)
    if role == "planner" and "delegate" in names:
        return _planner(prompt, turn)
    if role == "worker":
        return _worker(prompt, turn, names)
    return None


# -- the Teller -----------------------------------------------------------------------

def _teller(prompt: str, turn: list[ChatMessage], names: set[str],
            schemas: dict[str, JsonObject]) -> DemoTurn | None:
    calls = turn_calls(turn)
    if prompt.startswith(RESULTS_OPENING):
        if calls:
            return DemoTurn(text=answer_from_results(prompt, calls))
        refs = list(dict.fromkeys(_REF.findall(prompt)))
        if refs and "get_artifact" in names:
            return DemoTurn(tool_calls=[("get_artifact", {"ref": ref}) for ref in refs])
        return DemoTurn(text=answer_from_results(prompt, []))
    if calls:
        delegated = [(args, result) for name, args, result in calls if name == "delegate"]
        if not delegated:
            return None
        args, result = delegated[0]
        why = _failed(result)
        if why:
            return DemoTurn(text=f"{LABEL} I could not hand this on: {why}")
        return DemoTurn(text=f"{LABEL} The Planner has your ask; I answer from its results.")
    if "delegate" not in names or not prompt or prompt.startswith("You asked the person"):
        return None
    if items_of(prompt) is None and re.search(
            r"\b(what can you do|help|who are you|capabilities)\b", prompt.lower()):
        return DemoTurn(text=(
            f"{LABEL} I am the offline demo model playing the Teller of a team: no API key, no "
            "network, fixed rules. Try `research three cities for a trip and compare them`: I "
            "hand it to the Planner, who gives each city to a Worker, and I compare what they "
            "saved. Any other work (`write file notes.txt with ...`, `run command: ls`) goes "
            "to one Worker, who follows the single demo model's rules."))
    if items_of(prompt) is None and (
            plan_calls(prompt, names - {"delegate"})
            or plan_for_tool(prompt, {n: s for n, s in schemas.items() if n != "delegate"})):
        return None  # the Teller's own tools (remember, ask_user, ...) or its help text
    # Said with the delegation: a response of delegations alone ends the Teller's run (the
    # text after it is read only when the delegation was refused).
    return DemoTurn(text=(f"{LABEL} I hand your ask to the Planner. It splits the work for "
                          "the Workers; when their results are back I answer from them."),
                    tool_calls=[("delegate", {"prompt": prompt})])


def _notes_of(calls: list[Seen]) -> dict[str, JsonObject]:
    """The research notes the Teller read with ``get_artifact``, by reference."""
    notes = {}
    for name, args, result in calls:
        if name != "get_artifact" or _failed(result):
            continue
        try:
            content = json.loads(result).get("content")
        except (ValueError, AttributeError):
            continue
        if isinstance(content, dict) and isinstance(content.get("facts"), dict):
            notes[str(args.get("ref"))] = content
    return notes


def _cell(value: object) -> str:
    text = f"about €{value} a day" if isinstance(value, int | float) else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def answer_from_results(results: str, calls: list[Seen]) -> str:
    """The Teller's answer: a comparison of the notes the Workers saved, and what each
    Worker that saved none said or why it failed."""
    read = _notes_of(calls)
    notes = list(read.values())
    workers = workers_of(results)
    lines: list[str] = []
    if notes:
        subjects = [str(n.get("subject", "?")) for n in notes]
        aspects = list(dict.fromkeys(k for n in notes for k in n["facts"] if k != "country"))
        lines.append(f"{LABEL} Here is how {_listed(subjects)} compare, from the notes the "
                     f"{'Worker' if len(notes) == 1 else 'Workers'} saved:")
        lines.append("")
        lines.append("| | " + " | ".join(subjects) + " |")
        lines.append("|---" * (len(subjects) + 1) + "|")
        for aspect in aspects:
            row = [_cell(n["facts"].get(aspect, "—")) for n in notes]
            lines.append(f"| {aspect} | " + " | ".join(row) + " |")
        budgets = [(n["facts"][BUDGET], str(n.get("subject"))) for n in notes
                   if isinstance(n["facts"].get(BUDGET), int | float)]
        if len(budgets) >= 2:
            low, high = min(budgets), max(budgets)
            lines += ["", f"Cheapest: **{low[1]}** (about €{low[0]} a day); dearest: "
                      f"**{high[1]}** (about €{high[0]} a day)."]
    else:
        ended = ("is done" if all(w[1] == "ok" for w in workers) else
                 "has ended, not all of it well")
        lines.append(f"{LABEL} The work {ended}. What the "
                     f"{'Worker' if len(workers) == 1 else 'Workers'} found:")
    for task_id, status, task, said in workers:
        refs = set(_REF.findall(said))
        if status == "ok" and refs and refs <= read.keys():
            continue  # in the table already
        said = said.removeprefix(LABEL).strip() or "(nothing)"
        if len(said) > 600:
            said = said[:597] + "..."
        if status == "ok":
            lines += ["", f"- {short_task(task)}: {said}"]
        else:
            lines += ["", f"- {short_task(task)}: this task ended `{status}` ({task_id}): {said}"]
    if not workers:
        lines += ["", "No Worker ran: the Planner delegated nothing."]
    if notes:
        lines += ["", f"Where this comes from: {notes[0].get('source', SOURCE)}. With a real "
                  "model (`%agent_config --model ...`) the Workers would search the web."]
    return "\n".join(lines)


def workers_of(results: str) -> list[tuple[str, str, str, str]]:
    """Each Worker task of the Teller's results message: ``(task id, status, prompt,
    result)``. The message has one line of JSON per task; a result is a quoted string in
    its line, so nothing it says can pass for another task."""
    workers = []
    for line in results.splitlines()[1:]:
        try:
            task = json.loads(line)
        except ValueError:
            continue
        if isinstance(task, dict) and task.get("role") == "worker":
            workers.append((str(task.get("taskId", "?")), str(task.get("status", "?")),
                            str(task.get("prompt", "")), str(task.get("result", "")).strip()))
    return workers


def _listed(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


# -- the Planner ----------------------------------------------------------------------

def _planner(prompt: str, turn: list[ChatMessage]) -> DemoTurn:
    calls = [(args, result) for name, args, result in turn_calls(turn) if name == "delegate"]
    if calls:
        planned, refused = [], []
        for args, result in calls:
            why = _failed(result)
            what = short_task(str(args.get("prompt", "?")))
            if why:
                refused.append(f"{what} ({why})")
            else:
                planned.append(f"{what} (priority {args.get('priority', 5)})")
        text = (f"{LABEL} Plan: {len(planned)} Worker "
                f"{'task' if len(planned) == 1 else 'tasks'}: {'; '.join(planned) or 'none'}.")
        if refused:
            text += f" Refused: {'; '.join(refused)}."
        return DemoTurn(text=text + " They start when this run ends, highest priority first.")
    items = items_of(prompt)
    purpose = _purpose(prompt)
    turn_out = DemoTurn(tool_calls=[("delegate", {"prompt": prompt, "priority": 5})]
                        if not items else [
        ("delegate", {"prompt": f"Research {item}{purpose}: {ASPECTS}. Save your notes with "
                                "put_artifact and answer with them and the reference.",
                      "priority": max(0, 9 - number)})
        for number, item in enumerate(items)])
    # The plan is said with the delegations: a response of delegations alone ends the
    # Planner's run (the text after them is read only when one was refused).
    planned = [f"{short_task(str(args['prompt']))} (priority {args['priority']})"
               for _, args in turn_out.tool_calls]
    turn_out.text = (f"{LABEL} Plan: {len(planned)} Worker "
                     f"{'task' if len(planned) == 1 else 'tasks'}: {'; '.join(planned)}. "
                     "They start when this run ends, highest priority first.")
    return turn_out


def short_task(prompt: str) -> str:
    """A delegated prompt's first clause, for a one-line plan."""
    return re.split(r"[:.]\s", prompt, maxsplit=1)[0][:80]


# -- a Worker -------------------------------------------------------------------------

def _worker(prompt: str, turn: list[ChatMessage], names: set[str]) -> DemoTurn | None:
    m = re.match(r"^research\s+(.+?)(?:\s+for\s+(?:a|an|my|our|the)\s+[^:]+)?:", prompt, re.I)
    if not m:
        return None
    subject = m.group(1).strip()
    found = _notes_for(subject)
    if found is None:
        known = _listed(list(SAMPLE_NOTES))
        return DemoTurn(text=(f"{LABEL} I have no notes on {subject}: offline, I know only "
                              f"my sample notes on {known}. A real model would search the web."))
    name, facts = found
    saved = [(args, result) for tool, args, result in turn_calls(turn) if tool == "put_artifact"]
    said = f"{LABEL} {name} ({facts['country']}): " + "; ".join(
        f"{k}: {_cell(v)}" for k, v in facts.items() if k != "country") + f". Source: {SOURCE}."
    if saved:
        why = _failed(saved[-1][1])
        ref = _REF.search(saved[-1][1])
        if why or not ref:
            return DemoTurn(text=f"{said} I could not save them: {why or saved[-1][1][:200]}")
        return DemoTurn(text=f"{said} My notes are saved as {ref.group()}.")
    if "put_artifact" not in names:
        return DemoTurn(text=said)
    content = {"subject": name, "facts": facts, "source": SOURCE}
    return DemoTurn(tool_calls=[("put_artifact", {"type": "notes", "content": content,
                                                  "meta": {"task": prompt[:200]}})])
