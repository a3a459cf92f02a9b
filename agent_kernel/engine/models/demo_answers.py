"""How the offline demo model words a tool's result: short, true, and for a person.

The demo model's answer is read by a person, so each result becomes a sentence
or two and never raw JSON: what a command printed (a few lines of it), the
page a fetch found, the files a listing holds. The rule that governs it: say
what really happened. A call that was refused or denied, an ``{ok: false}``
answer, a command's non-zero exit, an HTTP error status or a timeout is said
as such, with the tool's own reason; a long output is cut and says so. This
module is pure text work: it imports nothing from the rest of the package.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

from agent_kernel.engine.models import demo_organiser
from agent_kernel.engine.models.base import JsonObject

SHOWN_CHARS = 600
"""At most this much of an output, a page or a file is quoted in an answer."""
SHOWN_LINES = 12
_NOT_RUN = re.compile(r"^Tool '[^']*' (?:was not run|execution failed|failed): ")

Words = Callable[[JsonObject, Any], str | None]


def clip(text: str, limit: int = SHOWN_CHARS, lines: int = SHOWN_LINES) -> str:
    """``text`` cut to ``limit`` characters and ``lines`` lines, saying how much was left out."""
    text = str(text)
    kept = text.splitlines()[:lines]
    cut = "\n".join(kept)
    if len(cut) > limit:
        cut = cut[:limit].rstrip()
    if cut.strip() == text.strip():
        return text.rstrip("\n")
    return f"{cut}\n… ({len(text) - len(cut):,} more characters not shown)"


def short(text: str, limit: int = 80) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def code(text: str, limit: int = 80) -> str:
    """``text`` as inline code, one line, cut to ``limit`` characters."""
    text = short(text, limit)
    if "`" not in text:
        return f"`{text}`"
    ticks = "`" * (max(len(run) for run in re.findall(r"`+", text)) + 1)
    return f"{ticks} {text} {ticks}"


def block(text: str) -> str:
    """``text`` (clipped) as a fenced block no backticks inside can break."""
    shown = clip(text)
    longest = max((len(run) for run in re.findall(r"`+", shown)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{shown}\n{fence}"


def size(count: int) -> str:
    """A byte count in a person's words: ``1 byte``, ``512 bytes``, ``1.2 KB``."""
    if count < 1024:
        return "1 byte" if count == 1 else f"{count} bytes"
    amount = float(count)
    for unit in ("KB", "MB"):
        amount /= 1024
        if amount < 1024:
            return f"{amount:.1f} {unit}"
    return f"{amount / 1024:.1f} GB"


def _plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"


def _error_of(result: JsonObject) -> str:
    return str(result.get("error") or "no reason given").strip().rstrip(".")


def _because(result: JsonObject) -> str:
    """``: the reason.`` after a sentence; a reason of several lines (a syntax error with
    the line it points at) goes in a block, so its layout survives."""
    error = _error_of(result)
    return f":\n\n{block(error)}" if "\n" in error else f": {error}."


# Each tool's words, given its arguments and its result (parsed JSON, or text). None: the
# result is not the shape expected, and the generic words are used.

def _write_file(args: JsonObject, result: object) -> str | None:
    if not isinstance(result, dict):
        return None
    if result.get("ok") is False:  # a refusal, unless the system said no (disk full...)
        error = _error_of(result)
        failed = error.startswith("write_file failed:")
        path = code(args.get("path", "?"))
        if failed:  # it may have stopped half-way: say only what is known
            return f"I could not write {path}: {error.removeprefix('write_file failed: ')}."
        return f"`write_file` refused to write {path}: {error}. Nothing was written."
    where = result.get("path")
    saved = f", saved as {code(where)}" if where and where != args.get("path") else ""
    if result.get("mode") == "append":
        return (f"I appended {size(int(result.get('bytes', 0)))} to the file "
                f"{code(args.get('path', '?'))}{saved}.")
    return (f"I wrote the file {code(args.get('path', '?'))} "
            f"({size(int(result.get('bytes', 0)))}{saved}).")


def _read_file(args: JsonObject, result: object) -> str | None:
    if not isinstance(result, dict):
        return None
    path = code(args.get("path", "?"))
    if result.get("ok") is False:
        return f"I could not read {path}{_because(result)}"
    content = str(result.get("content", ""))
    if not content:
        return f"{path} is empty."
    return f"{path} says:\n\n{block(content)}"


def _list_files(args: JsonObject, result: object) -> str | None:
    if not isinstance(result, dict):
        return None
    asked = code(args.get("path") or "files")
    if result.get("ok") is False:
        return f"I could not list {asked}{_because(result)}"
    entries = [e for e in result.get("entries") or [] if isinstance(e, dict)]
    where = code(result.get("path") or args.get("path") or "files")
    if not entries:
        return f"{where} is empty."
    names = [code(e.get("name", "?") + ("/" if e.get("type") == "directory" else ""))
             for e in entries[:20]]
    more = f" and {len(entries) - 20} more" if len(entries) > 20 else ""
    said = f"{where} holds {_plural(len(entries), 'entry', 'entries')}: {', '.join(names)}{more}."
    if result.get("truncated"):
        said += " The listing stopped early: " + str(result.get("note") or "too many entries")
    return said


def _workspace_info(_args: JsonObject, result: Any) -> str | None:
    info = result.get("info") if isinstance(result, dict) else None
    if isinstance(result, dict) and result.get("ok") is False:
        return f"I could not look at the workspace{_because(result)}"
    if not isinstance(info, dict):
        return None
    lower = " at least" if result.get("truncated") else ""
    said = (f"The workspace's file folders hold{lower} {_plural(int(info['fileCount']), 'file')} "
            f"in {_plural(int(info['directoryCount']), 'folder')}, "
            f"{size(int(info['totalSize']))} in all")
    newest = info.get("lastModified")
    return said + (f"; the newest change was at {newest}." if newest else ".")


def _command(args: JsonObject, result: object) -> str | None:
    """bash (exit_code, stdout...) and run_command (ok, exitCode, error...)."""
    if not isinstance(result, dict):
        return None
    shown = code(args.get("cmd") or args.get("command") or "?")
    if result.get("ok") is False and "exitCode" not in result:
        return f"The command {shown} did not run{_because(result)}"
    exit_code = result.get("exit_code", result.get("exitCode"))
    where = f" ({result['sandbox']})" if result.get("sandbox") else ""
    if result.get("timed_out") or result.get("timedOut"):
        said = f"The command {shown} was killed: it ran past its timeout{where}."
    elif isinstance(result.get("limit"), str):
        said = f"The command {shown} met a limit of the sandbox{where}: {result['limit']}."
    elif exit_code == 0:
        said = f"The command {shown} ran{where} and exited with code 0."
    else:
        said = f"The command {shown} failed{where}: it exited with code {exit_code}."
    out, err = str(result.get("stdout") or ""), str(result.get("stderr") or "")
    if out.strip():
        said += f" It printed:\n\n{block(out)}"
    if err.strip():
        said += f"\n\nIts error output:\n\n{block(err)}"
    if not out.strip() and not err.strip():
        said += " It printed nothing."
    if result.get("truncated"):
        said += "\n\n(The output was longer than the tool keeps; the rest was dropped.)"
    return said


def _url_fetch(args: JsonObject, result: object) -> str | None:
    if not isinstance(result, dict) or "status" not in result:
        return None
    url, status = code(result.get("url") or args.get("url", "?"), 100), result["status"]
    if result.get("path"):
        return f"I saved {url} to {code(result['path'])} ({size(int(result.get('bytes', 0)))})."
    if not 200 <= int(status) < 300:
        said = f"The server answered HTTP {status} for {url}"
        body = result.get("content")
        return said + (f":\n\n{block(str(body))}" if body else ".")
    said = f"I fetched {url} (HTTP {status})"
    if result.get("title"):
        said += f", a page titled “{short(str(result['title']), 100)}”"
    if "json" in result:
        text = json.dumps(result["json"], ensure_ascii=False, indent=1)
        said += f". It holds JSON:\n\n{block(text)}"
    elif result.get("content"):
        said += f". It reads:\n\n{block(str(result['content']))}"
    else:
        said += f". {result.get('note') or 'It had nothing to show.'}"
    if result.get("truncated"):
        said += "\n\n(I read only the first part: the page is longer than the tool's limit.)"
    return said


def _http_request(args: JsonObject, result: object) -> str | None:
    if not isinstance(result, dict):
        return None
    method = str(args.get("method") or "GET").strip().upper()
    url = code(args.get("url", "?"), 100)
    if "status" not in result:
        return (f"The {method} request to {url} failed{_because(result)}"
                if result.get("ok") is False else None)
    status, body = result["status"], str(result.get("body") or "")
    kind = next((str(v) for k, v in (result.get("headers") or {}).items()
                 if k.lower() == "content-type"), "")
    said = f"The server answered my {method} request to {url} with HTTP {status}"
    if result.get("ok") is False:
        said = (f"The server answered my {method} request to {url} with an error: "
                f"{_error_of(result)}")
    said += f" ({kind.split(';')[0]})" if kind else ""
    return said + (f":\n\n{block(body)}" if body.strip() else ", with an empty body.")


def _web_search(args: JsonObject, result: object) -> str | None:
    if not isinstance(result, dict) or not isinstance(result.get("results"), list):
        return None
    query = short(str(result.get("query") or args.get("q", "")), 100)
    found = [r for r in result["results"] if isinstance(r, dict)]
    if not found:
        return f"I found nothing on the web for “{query}”."
    lines = []
    for number, item in enumerate(found[:5], 1):
        title = short(str(item.get("title") or item.get("url")), 100)
        title = title.replace("[", "\\[").replace("]", "\\]")
        snippet = short(str(item.get("snippet") or ""), 160)
        url = str(item.get("url") or "")
        # Only web addresses become links; anything else a search service sends stays text.
        link = f"[{title}]({url})" if re.match(r"https?://[^\s()<>]+$", url) else \
            f"{title} ({code(url, 100)})"
        lines.append(f"{number}. {link}" + (f": {snippet}" if snippet else ""))
    return (f"I found {_plural(len(found), 'result')} for “{query}”:\n\n" + "\n".join(lines))


def _javascript(_args: JsonObject, result: object) -> str | None:
    # spec 004: the code's value itself (a failure arrives as an error)
    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    text, cut, _ = text.partition("\n...[truncated: ")
    if "\n" in text or len(text) > 80:
        said = f"The JavaScript returned:\n\n{block(text)}"
    else:
        said = f"The JavaScript returned {code(text)}."
    if cut:
        said += "\n\n(The result was too long to pass back whole; this is its start.)"
    return said


def _ask_user(_args: JsonObject, result: object) -> str | None:
    if not isinstance(result, dict):
        return None
    answer, source = result.get("answer", ""), result.get("source", "")
    if source == "user":
        return f"You answered **{answer}**, so I will go with {answer}."
    if source == "default":
        return f"No one answered, so I used the default: **{answer}**."
    return "The question timed out with no answer, so I will not assume one."


def _remembered(args: JsonObject, result: object) -> str | None:
    if not isinstance(result, dict):
        return None
    return f"I will remember that (memory `{result.get('memory_id', '?')}`)."


def _recalled(args: JsonObject, result: object) -> str | None:
    if not isinstance(result, dict):
        return None
    items = result.get("memories") or result.get("hits") or []
    if not items:
        return f"I found nothing in memory about “{args.get('query', '')}”."
    lines = [f"- {m.get('content', m) if isinstance(m, dict) else m}" for m in items[:5]]
    return "Here is what I remember:\n" + "\n".join(lines)


def _scheduled(_args: JsonObject, result: object) -> str | None:
    if not isinstance(result, dict):
        return None
    ident = result.get("taskId") or result.get("schedule_id")
    if "ipykernel" in sys.modules:  # a notebook: this kernel's scheduler runs it
        return f"Scheduled it as `{ident}`: I will run it while this kernel is alive."
    ipython = sys.modules.get("IPython")
    if ipython is not None and ipython.get_ipython() is not None:  # terminal IPython
        return (f"Scheduled it as `{ident}`: I will run it while this IPython session is "
                "open (its runs print here).")
    return (f"Scheduled it as `{ident}` and saved it in the workspace: "
            "`python -m agent_kernel triggers`, or a notebook using this workspace, "
            "runs it when it is due.")


def _tasks(_args: dict[str, object], result: object) -> str | None:
    """list_tasks as lines: what each is and its state, not the rows' JSON."""
    if not isinstance(result, dict) or not isinstance(result.get("tasks"), list):
        return None
    own = [t for t in result["tasks"] if isinstance(t, dict)]
    others = [t for t in own if t.get("status") != "running" or t.get("type") != "run"]
    if not others:
        return "Nothing is scheduled or queued: only this run is going."
    states = {"trigger": "scheduled", "needs_approval": "waits for your approval"}
    lines = [f"- {t.get('prompt')} ({states.get(str(t.get('status')), t.get('status'))}, "
             f"{t.get('type')}, `{t.get('id')}`)" for t in others]
    return f"{len(others)} task{'s' if len(others) > 1 else ''} besides this run:\n" + \
        "\n".join(lines)


WORDS: dict[str, Words] = {
    "write_file": _write_file, "read_file": _read_file, "list_files": _list_files,
    "get_workspace_info": _workspace_info, "bash": _command, "run_command": _command,
    "url_fetch": _url_fetch, "http_request": _http_request, "web_search": _web_search,
    "run_javascript": _javascript, "ask_user": _ask_user, "remember": _remembered,
    "recall": _recalled, "search_memory": _recalled, "schedule": _scheduled,
    "schedule_once": _scheduled, "schedule_cron": _scheduled, "list_tasks": _tasks,
    "echo": lambda _a, result: f"The echo tool returned: {result}",
    "console_print": lambda _a, _r: "I printed that to the console.",
    "reply": lambda _a, _r: "I sent that reply.",
    **demo_organiser.WORDS,
}


_CUT = re.compile(r"\n\.\.\.\[truncated: the result has (\d+) characters; the first (\d+) "
                  r"are shown\]$")


def salvage(text: str) -> Any:
    """The JSON value a cut-off JSON text starts with, or None: an unfinished string value
    is kept as far as it goes, an unfinished key, number or word is dropped, and the open
    objects and arrays are closed."""
    closers: list[str] = []
    in_string = escape = False
    for char in text:
        if escape:
            escape = False
        elif in_string:
            escape = char == "\\"
            in_string = char != '"'
        elif char == '"':
            in_string = True
        elif char in "[{":
            closers.append("]" if char == "[" else "}")
        elif char in "]}" and closers:
            closers.pop()
    end = "".join(reversed(closers))
    if in_string:  # drop what may be half an escape (\ or \u12), then close the string
        bodies = [text[: len(text) - drop] + '"' for drop in range(6)]
    else:
        bodies = [re.sub(r"[\w.+-]+$", "", text.rstrip()).rstrip().rstrip(",")]
    for body in bodies:
        for filler in ("", "null", ": null"):
            try:
                return json.loads(body + filler + end)
            except ValueError:
                continue
    return None


def refusal(content: str) -> str | None:
    """Why a call did not go through, from what the model read of it, or None when it went
    through: ``Error: ...`` text, or a refusal in the tool's spec shape (``{ok: false,
    error}``, ``{error}``) with the loop's guidance after a blank line. What follows the
    blank line is guidance for the model: followed, not repeated."""
    head, _, rest = content.partition("\n\n")
    if content.startswith("Error"):
        return _NOT_RUN.sub("", head.removeprefix("Error: "))
    if not rest:
        return None
    try:
        shaped = json.loads(head)
    except ValueError:
        return None
    if isinstance(shaped, dict) and (shaped.get("ok") is False or set(shaped) == {"error"}):
        return _NOT_RUN.sub("", str(shaped.get("error") or "it gave no reason"))
    return None


def describe(name: str, args: JsonObject, content: str) -> str:
    """What the demo model says about one call of ``name`` whose result the model read."""
    ran = f"Error: Tool '{name}' execution failed: "
    if name == "run_javascript" and content.startswith(ran):  # the code ran and failed
        return f"The JavaScript failed:\n\n{block(content.removeprefix(ran).split(chr(10) * 2)[0])}"
    error = refusal(content)
    if error is not None:
        return f"The `{name}` call did not go through: {error}"
    cut = _CUT.search(content)
    try:
        result: Any = json.loads(content)
    except ValueError:
        result = content
        if cut and (salvaged := salvage(content[: cut.start()])) is not None:
            result = salvaged  # what a model would read of a result that was too long
    said = _words(name, args, result)
    if cut:
        said += (f"\n\n(The result was {int(cut.group(1)):,} characters, more than I read at "
                 f"once; I read the first {int(cut.group(2)):,}.)")
    return said


def _words(name: str, args: JsonObject, result: object) -> str:
    words = WORDS.get(name)
    try:
        said = words(args if isinstance(args, dict) else {}, result) if words else None
    except (KeyError, TypeError, ValueError, AttributeError):  # an odd result: plain words
        said = None
    if said is not None:
        return said
    if isinstance(result, dict) and result.get("ok") is False:
        return f"`{name}` failed{_because(result)}"
    shown = json.dumps(result, ensure_ascii=False) if not isinstance(result, str) else result
    if len(shown) > 300:
        shown = shown[:297] + "..."
    return f"`{name}` returned {shown}."
