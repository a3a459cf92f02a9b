"""The offline ``demo`` model: deterministic rules that play a tool-calling LLM.

It exists so a first run needs no API key and so notebooks, Binder and the
browser tests have a model that behaves the same every time. It reads the
latest user prompt and the tools it was offered, picks tool calls by plain
word patterns (echo, ask, remember, recall, schedule, write, read and list
files, run a command, fetch a page, search the web, run JavaScript, and the notebook's
data story of :mod:`agent_kernel.engine.models.demo_data`: "what's in df", "plot the
monthly totals", "fix the error above"),
or, when a prompt starts with the name of any tool it was offered (the
person's own ``@tool`` functions included), calls that tool with arguments
read from the words that follow (``add 2 and 3``). After the results come
back it says what each one really was, failures included
(:mod:`agent_kernel.engine.models.demo_answers`). In a team it plays the Teller, the
Planner and the Workers (:mod:`agent_kernel.engine.models.demo_team`, whose ``respond`` comes
first and falls back on this one). Every answer says it comes from the offline
demo model. :class:`~agent_kernel.engine.models.demo_model.DemoModel` asks it
in-process, without litellm, and turns its answer into the same streamed turn a
real model gives, so the loop, tools and views cannot tell them apart.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from agent_kernel.engine.models import demo_data, demo_organiser
from agent_kernel.engine.models.base import ChatMessage, JsonObject, ToolSchema
from agent_kernel.engine.models.demo_answers import describe

LABEL = "(offline demo model)"


@dataclass
class DemoTurn:
    """What the demo model says in one response."""

    text: str = ""
    tool_calls: list[tuple[str, JsonObject]] = field(default_factory=list)


def _text_of(message: ChatMessage) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def _split_options(raw: str) -> list[str]:
    raw = raw.strip().rstrip("?.!")
    parts = re.split(r"\s*(?:,|/|\bor\b|\band\b)\s*", raw)
    return [p.strip(" '\"") for p in parts if p.strip(" '\"")]


_UNITS = {"second": 1, "sec": 1, "minute": 60, "min": 60, "hour": 3600, "day": 86400}


def _seconds(number: str, unit: str) -> int:
    unit = unit.lower().rstrip("s")
    return int(float(number) * _UNITS.get(unit, 1))


def _strip_polite(text: str) -> str:
    return re.sub(r"^(please|kindly|could you|can you)\s+", "", text.strip(), flags=re.I)


def _task_of(prompt: str, pattern: str) -> str:
    task = re.sub(pattern, "", prompt, flags=re.I).strip(" ,.:;")
    task = re.sub(r"^(to|and|,)\s+", "", task, flags=re.I)
    return re.sub(r"\s{2,}", " ", task) or prompt


Call = tuple[str, JsonObject]
_VERBATIM = {"bash", "run_command", "run_javascript", "http_request", "url_fetch"}
_METHODS = r"(get|head|post|put|patch|delete|options)"
_URL = r"<?`?(\S+://[^\s>`]+)`?>?"


def _json_or_text(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.strip().strip("`")


def _split_input(rest: str) -> tuple[str, Any]:
    """``CODE with {json}``: the code and the JSON after its last ``with`` that parses."""
    for m in reversed(list(re.finditer(r"\s+with\s+(?:(?:the\s+)?input\s+)?", rest, re.I))):
        try:
            return rest[: m.start()], json.loads(rest[m.end():])
        except ValueError:
            continue
    return rest, None


def _javascript(rest: str) -> Call:
    code, data = _split_input(rest.strip())
    code = code.strip().strip("`").strip()
    statement = re.match(r"(?:if|for|while|do|switch|try|throw|let|const|var|function|class)\b",
                         code)
    if not (statement or re.search(r"\breturn\b|[;\n]", code.rstrip(";"))):
        code = f"return {code.rstrip(';')};"  # a bare expression: the tool needs a return
    args: JsonObject = {"code": code}
    if data is not None:
        args["input"] = data
    return "run_javascript", args


def _request(method: str, url: str, body: str | None, tools: set[str], asked: bool) -> Call | None:
    """``http_request`` (asked for by name, or for https), else ``url_fetch``."""
    args: JsonObject = {"url": url, "method": method.upper()}
    if body:
        args["body"] = _json_or_text(body)
    if "http_request" in tools and (asked or url.lower().startswith("https:")
                                    or "url_fetch" not in tools):
        return "http_request", args
    if "url_fetch" in tools:
        return "url_fetch", args if args["method"] != "GET" or body else {"url": url}
    return None


def _plan_hands(text: str, tools: set[str]) -> Call | None:
    """Files, commands, the web and JavaScript, from plain words."""
    m = re.match(r"^(?:write|create|save)\s+(?:a\s+)?file\s+(\S+)\s+"
                 r"(?:with|containing|saying)\s+(.+)$", text, re.I | re.S)
    if m and "write_file" in tools:
        return "write_file", {"path": m.group(1), "content": m.group(2)}
    m = re.match(r"^append\s+(.+?)\s+to\s+(?:the\s+)?file\s+(\S+?)[.!]?$", text, re.I | re.S)
    if m and "write_file" in tools:
        return "write_file", {"path": m.group(2), "content": m.group(1), "mode": "append"}
    m = (re.match(r"^(?:run|execute)\s+(?:the\s+)?(?:shell\s+)?(?:command|shell)\s*:?\s+(.+)$",
                  text, re.I | re.S)
         or re.match(r"^(?:run|execute)\s+`([^`]+)`$", text, re.I))
    if m:
        for name, key in (("bash", "cmd"), ("run_command", "command")):
            if name in tools:
                return name, {key: m.group(1).strip("`")}
    m = re.match(r"^(?:run|execute|evaluate)?\s*(?:this\s+|the\s+|some\s+)?(?:javascript|js)"
                 r"(?:\s+code)?\s*:?\s+(.+)$", text, re.I | re.S)
    if m and "run_javascript" in tools:
        return _javascript(m.group(1))
    m = re.match(r"^(?:read|show|open|cat)\s+(?:me\s+)?(?:the\s+)?file\s+(\S+?)[.!?]?$", text,
                 re.I) or re.match(r"^what(?:'s| is) in (?:the )?file\s+(\S+?)\??$", text, re.I)
    if m and "read_file" in tools:
        return "read_file", {"path": m.group(1).strip("`'\"")}
    m = re.match(r"^(?:list|show)\s+(?:me\s+)?(?:the\s+|my\s+|all\s+)?files(?:\s+(?:in|under|"
                 r"inside)\s+(?:the\s+)?(?:folder\s+)?(\S+?))?[.!?]?$", text, re.I)
    if (m or re.match(r"^what files are there\b", text, re.I)) and "list_files" in tools:
        return "list_files", {"path": m.group(1).strip("`'\"")} if m and m.group(1) else {}
    if re.match(r"^(?:(?:show|get|what(?:'s| is))\s+)?(?:the\s+|my\s+)?workspace\s+(?:info|"
                r"information|size|summary|stats)\b|^how big is (?:the|my) workspace\b", text,
                re.I) and "get_workspace_info" in tools:
        return "get_workspace_info", {}
    m = re.match(rf"^(?:download|save)\s+(?:the\s+)?(?:page\s+|file\s+)?{_URL}\s+(?:to|into|as)"
                 r"\s+(\S+)$", text, re.I)
    if m and "url_fetch" in tools:
        return "url_fetch", {"url": m.group(1), "download_path": m.group(2)}
    m = re.match(rf"^(?:fetch|open|read|browse(?:\s+to)?)\s+(?:the\s+)?(?:page|url|site)?\s*"
                 rf"(?:at\s+)?{_URL}[.!]?$", text, re.I)
    if m and "url_fetch" in tools:
        return "url_fetch", {"url": m.group(1)}
    if m and "http_request" in tools:
        return "http_request", {"url": m.group(1), "method": "GET"}
    m = (re.match(rf"^(?:(?:make|send|do)\s+)?(?:an?\s+)?(?:{_METHODS}\s+)?(?:https?\s+)?request"
                  rf"\s+to\s+{_URL}(?:\s+with\s+(?:(?:the|a)\s+)?(?:body\s+)?(.+))?$", text,
                  re.I | re.S))
    if m:
        return _request(m.group(1) or "GET", m.group(2), m.group(3), tools, asked=True)
    m = re.match(rf"^{_METHODS}\s+{_URL}(?:\s+with\s+(?:(?:the|a)\s+)?(?:body\s+)?(.+))?$",
                 text, re.I | re.S)
    if m:
        return _request(m.group(1), m.group(2), m.group(3), tools, asked=False)
    m = (re.match(r"^(?:search|look\s+up|look)\s+(?:up\s+)?(?:on\s+)?(?:the\s+)?(?:web|internet|"
                  r"online)\s+(?:for\s+)?(.+)$", text, re.I)
         or re.match(r"^(?:web[\s_]search|search\s+online|google)\s+(?:for\s+)?(.+)$", text, re.I)
         or re.match(r"^search\s+for\s+(.+?)\s+(?:online|on\s+the\s+(?:web|internet))$", text,
                     re.I))
    if m and "web_search" in tools:
        return "web_search", {"q": m.group(1).strip(" ?.!\"'“”")}
    return None


def _plan_one(prompt: str, tools: set[str]) -> Call | None:
    """The one tool call a prompt asks for, if a rule and its tool both exist."""
    text = _strip_polite(prompt)
    low = text.lower()

    if "ask_user" in tools and re.search(r"\bplan my (week|day)\b", low):
        return "ask_user", {
            "question": "What should this plan put first?",
            "options": ["deep work", "meetings", "rest"],
        }
    if "ask_user" in tools and re.search(r"\bask (me|the user)\b", low):
        m = re.search(r"\b(?:between|options?:?|choose from|pick from)\s+(.+)$", text, re.I)
        m = m or re.search(r"\(([^)]+\bor\b[^)]+)\)", text)
        m = m or re.search(r":\s*([^:]+/[^:]+)$", text)
        if m and len(_split_options(m.group(1))) >= 2:
            options = _split_options(m.group(1))
            return "ask_user", {
                "question": f"Which do you choose: {', '.join(options)}?",
                "options": options,
            }
        about = re.sub(r"^.*?\bask (?:me|the user)\s*(?:for|about|what|which)?\s*", "", text,
                       flags=re.I).strip(" ?.")
        about = re.sub(r"\bmy\b", "your", about or "what you think", flags=re.I)
        return "ask_user", {"question": f"Please tell me {about}."}

    organised = demo_organiser.plan_call(text, tools)
    if organised:
        return organised

    hands = _plan_hands(text, tools)
    if hands:
        return hands

    if "schedule_cron" in tools:
        m = re.search(r"\bcron\s+['\"`]?([\d*/,\- ]+?)['\"`]?\s*(?:to|:)\s+(.+)$", text, re.I)
        if m:
            return "schedule_cron", {"cron_expression": m.group(1).strip(), "focus": m.group(2)}
    m = re.search(r"\bevery\s+(\d+(?:\.\d+)?)\s*(second|sec|minute|min|hour|day)s?\b", low)
    if m and "schedule" in tools:
        task = _task_of(text, r"\bevery\s+\d+(?:\.\d+)?\s*\w+")
        return "schedule", {"prompt": task, "type": "recurring",
                            "interval": _seconds(m.group(1), m.group(2))}
    m = re.search(r"\bin\s+(\d+(?:\.\d+)?)\s*(second|sec|minute|min|hour|day)s?\b", low)
    if m and ("schedule_once" in tools or "schedule" in tools):
        delay = _seconds(m.group(1), m.group(2))
        task = _task_of(text, r"\bin\s+\d+(?:\.\d+)?\s*\w+")
        if "schedule_once" in tools:
            return "schedule_once", {"delay_seconds": delay, "focus": task}
        run_at = datetime.now(timezone.utc) + timedelta(seconds=delay)
        return "schedule", {"prompt": task, "type": "scheduled", "runAt": run_at.isoformat()}
    m = re.search(r"\bat\s+(\d{1,2}):(\d{2})\b", low)
    if m and "schedule" in tools and re.search(r"\b(remind|schedule|at)\b", low):
        now = datetime.now().astimezone()
        run_at = now.replace(hour=int(m.group(1)), minute=int(m.group(2)), second=0,
                             microsecond=0)
        if run_at <= now:
            run_at += timedelta(days=1)
        task = _task_of(text, r"\bat\s+\d{1,2}:\d{2}")
        return "schedule", {"prompt": task, "type": "scheduled", "runAt": run_at.isoformat()}
    m = re.search(r"\bwhen\s+(.+?)\s*(?:,|\bthen\b)\s*(.+)$", text, re.I)
    if m and "schedule" in tools:
        return "schedule", {"prompt": m.group(2), "type": "conditional",
                            "condition": {"kind": "expression", "expression": m.group(1)}}

    if re.search(r"\b(list|show)\b.*\b(tasks|triggers|schedules)\b", low) and "list_tasks" in tools:
        return "list_tasks", {"scope": "all"}
    m = re.search(r"\bcancel\s+(?:task|trigger|schedule)\s+(\S+)", text, re.I)
    if m and "cancel_task" in tools:
        return "cancel_task", {"taskId": m.group(1)}

    m = re.match(r"^(?:please\s+)?remember\s+(?:that\s+)?(.+)$", text, re.I)
    if m and "remember" in tools:
        content = m.group(1).strip()
        args: JsonObject = {"content": content}
        tags = re.findall(r"#(\w+)", content)
        if tags:
            args["tags"] = tags
        if re.search(r"\b(always|long[- ]term|forever)\b", low):
            args["longTerm"] = True
        return "remember", args
    m = re.search(r"\b(?:recall|what do you (?:remember|know) about|do you remember)\s+(.+)$",
                  text, re.I)
    if m:
        query = m.group(1).strip(" ?.")
        if "recall" in tools:
            return "recall", {"query": query, "limit": 5}
        if "search_memory" in tools:
            return "search_memory", {"query": query}

    m = re.match(r"^(?:echo|repeat|say)\s+(.+)$", text, re.I)
    if m and "echo" in tools:
        return "echo", {"value": m.group(1).strip()}
    m = re.match(r"^print\s+(.+)$", text, re.I)
    if m and "console_print" in tools:
        return "console_print", {"text": m.group(1).strip()}
    m = re.match(r"^reply\s+(?:with\s+)?(.+)$", text, re.I)
    if m and "reply" in tools:
        return "reply", {"text": m.group(1).strip()}
    m = re.search(r"\blog (?:a |the )?decision:?\s+(.+)$", text, re.I)
    if m and "log_decision" in tools:
        return "log_decision", {"reasoning": m.group(1).strip(), "decision_type": "other"}
    m = re.search(r"\b(?:query|check|show)\s+(?:the\s+)?(?:state\s+(?:of\s+)?)?(\w+)\s+state\b",
                  text, re.I) or re.search(r"\bquery_state\s+(\w+)", text, re.I)
    if m and "query_state" in tools:
        return "query_state", {"state_name": m.group(1)}
    return None


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_QUOTED = re.compile(r"\"([^\"]*)\"|'([^']*)'|`([^`]*)`")
_BOOLEAN = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}
_LEAD = re.compile(r"^\s*(?:with|to|on|for|of|from|using|:|,)\s+", re.I)


def _fill(rest: str, parameters: JsonObject) -> JsonObject | None:
    """Arguments for a tool's schema read from plain words, in the schema's order, or None
    when a required one cannot be read: numbers for numbers, quoted text (or, for a tool
    with one text argument, the rest of the prompt) for text, yes/no for booleans."""
    properties: dict[str, JsonObject] = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    numbers = [m.group() for m in _NUMBER.finditer(rest)]
    quoted = [next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(rest)]
    texts = [name for name, spec in properties.items() if spec.get("type") == "string"]
    plain = _LEAD.sub("", _QUOTED.sub(" ", rest)).strip(" .?!")
    args: JsonObject = {}
    for name, spec in properties.items():
        kind = spec.get("type")
        value: Any = None
        if kind in ("integer", "number") and numbers:
            raw = numbers.pop(0)
            value = float(raw) if kind == "number" and "." in raw else int(float(raw))
        elif kind == "boolean":
            word = next((w for w in re.findall(r"\w+", rest.lower()) if w in _BOOLEAN), None)
            value = _BOOLEAN.get(word) if word else None
        elif kind == "string" and quoted:
            value = quoted.pop(0)
        elif kind == "string" and len(texts) == 1 and plain:
            value = plain
        if value is not None:
            args[name] = value
        elif name in required:
            return None
    return args


def plan_for_tool(prompt: str, schemas: dict[str, JsonObject]
                  ) -> tuple[str, JsonObject] | None:
    """A call of any offered tool the prompt names first (``add 2 and 3``, ``use greet for
    Ada``), with arguments read from the words that follow."""
    text = _strip_polite(prompt)
    text = re.sub(r"^(?:use|call|run)\s+(?:the\s+)?", "", text, flags=re.I)
    for name in sorted(schemas, key=len, reverse=True):
        for spelled in {name, name.replace("_", " ")}:
            m = re.match(rf"^{re.escape(spelled)}(?:\s+tool)?\b(.*)$", text, re.I | re.S)
            if m:
                args = _fill(m.group(1), schemas[name])
                if args is not None:
                    return name, args
    return None


def plan_calls(prompt: str, tools: set[str]) -> list[tuple[str, JsonObject]]:
    """Tool calls for a prompt; ``A and B`` gives two calls in one response.

    A command, code or a request is taken whole: ``run command: ls; echo done`` is one
    command, not a command and an ``echo``."""
    single = _plan_one(prompt, tools)
    if single and single[0] in _VERBATIM:
        return [single]
    parts = re.split(r"\s*(?:;|\band then\b|\bthen also\b|\balso\b|\band\b)\s+(?=(?:echo|print|"
                     r"remember|recall|say|log|query|check)\b)", prompt, flags=re.I)
    if len(parts) > 1:
        planned = [_plan_one(part, tools) for part in parts]
        if all(planned):
            return [p for p in planned if p]
    return [single] if single else []


def respond(messages: list[ChatMessage], tools: list[ToolSchema]) -> DemoTurn:
    """The demo model's next response to ``messages`` with ``tools`` on offer."""
    names = {t.get("function", {}).get("name") for t in tools or []} - {None}
    schemas = {t["function"]["name"]: t["function"].get("parameters") or {}
               for t in tools or [] if t.get("function", {}).get("name")}
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    prompt = _text_of(messages[last_user]).strip() if last_user >= 0 else ""
    turn = messages[last_user + 1 :]
    results = {m.get("tool_call_id"): _text_of(m) for m in turn if m.get("role") == "tool"}
    message = demo_organiser.message_story(prompt, turn, names) if prompt else None
    if message is not None:  # "send Ana a message: ...": look her up, then send (asks)
        return DemoTurn(text=f"{LABEL} {message[0]}" if message[0] else "",
                        tool_calls=list(message[1]))
    organised = demo_organiser.plan_call(prompt, names) if prompt else None
    story = None if organised else demo_data.play(prompt, turn, names)  # the notebook's data
    if story is not None:
        return DemoTurn(text=f"{LABEL} {story.text}" if story.text else "",
                        tool_calls=list(story.calls))
    if results:
        asked = [c for m in turn if m.get("role") == "assistant" for c in m.get("tool_calls") or []]
        lines = []
        for call in asked:
            fn = call.get("function", {})
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                args = {}
            lines.append(describe(fn.get("name", "?"), args, results.get(call.get("id"), "")))
        return DemoTurn(text=f"{LABEL} " + "\n\n".join(lines))

    asks_help = re.search(r"\b(what can you do|help|who are you|capabilities)\b", prompt.lower())
    if asks_help or not prompt:
        listed = ", ".join(f"`{n}`" for n in sorted(names)) or "no tools"
        return DemoTurn(
            text=(
                f"{LABEL} I am the offline demo model: no API key, no network, fixed rules. "
                f"I can use these tools: {listed}. Try `echo hello`, `ask me to choose "
                "between tea or coffee`, `remember that the demo works`, `list files`, "
                "`run command: ls -la`, `search the web for tides`, or name any tool "
                "followed by its arguments in order (`add 2 and 3` calls a tool `add(a, b)`; "
                "text in quotes). For a real model: "
                "`%agent_config --model openai/gpt-4o-mini`."
            )
        )
    calls = plan_calls(prompt, names)
    if calls:
        return DemoTurn(tool_calls=calls)
    named = plan_for_tool(prompt, schemas)
    if named:
        return DemoTurn(tool_calls=[named])
    reminder = re.match(r"(?i)^(?:please\s+)?remind me (?:to |about |that )?(.+?)[.!]?$", prompt)
    if reminder:  # what a saved reminder asks for when it fires: no schedule words left
        return DemoTurn(text=f"{LABEL} Reminder: {reminder.group(1)}.")
    return DemoTurn(
        text=(
            f"{LABEL} I am the offline demo model, so I only follow simple patterns. "
            f"You said: “{prompt}”. Ask `what can you do?` to see what I understand."
        )
    )
