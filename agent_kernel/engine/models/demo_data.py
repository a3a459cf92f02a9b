"""The offline demo model's data story: "what's in df", "plot the monthly totals", "fix the
error above".

Each story is a few tool calls chosen from the prompt and from what the earlier calls of
the same turn really returned, then an answer built only from those results: the columns
and null counts ``inspect_variable`` found, the totals ``run_python`` printed, the error
``last_error`` read (a misspelt name gets the closest real one, by :mod:`difflib`). When a
tool is not offered, or says it cannot work here (the cell tools without JupyterLab), the
story takes the other road or says why it stops. The tool names and result keys are the
agreed ones of issue 24 (docs/notebook.md). Pure text work, like
:mod:`agent_kernel.engine.models.demo_answers`; :mod:`agent_kernel.engine.models.demo` asks it
first and adds the offline label.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import NamedTuple

from agent_kernel.engine.models.base import ChatMessage
from agent_kernel.engine.models.demo_answers import block, code, refusal, short

Args = dict[str, object]


class Seen(NamedTuple):
    """One tool call of this turn as the model read it: its name, arguments and result
    (parsed JSON; None when it was refused or not JSON) and why it failed, if it did."""

    name: str
    args: Args
    result: object
    failed: str | None


class DataTurn(NamedTuple):
    """The story's next step: tool calls to make, or the answer text (no label)."""

    text: str = ""
    calls: list[tuple[str, Args]] = []


_INSPECT = re.compile(
    r"^(?:what(?:'s| is)\s+in|describe|summari[sz]e|inspect|look\s+at|tell\s+me\s+about|"
    r"show\s+me)\s+(?:the\s+)?(?:variable\s+|data\s*frame\s+)?`?([A-Za-z_]\w*)`?\s*[?.!]?$",
    re.I)
_NOT_NAMES = {"file", "files", "workspace", "it", "this", "that", "notebook", "memory"}
_VARIABLES = re.compile(r"\b(?:what\s+variables|list\s+(?:my\s+|the\s+)?variables|which\s+"
                        r"variables|what(?:'s| is)\s+in\s+(?:my|the)\s+(?:notebook|kernel|"
                        r"namespace))\b", re.I)
_PLOT = re.compile(r"\b(?:plot|chart|graph|draw)\b.*\bmonth(?:ly|s)?\b|\bmonthly\b.*\b(?:plot|"
                   r"chart|graph)\b", re.I)
_FIX = re.compile(r"\b(?:fix|explain|debug|solve)\b.*\b(?:error|exception|bug|traceback)\b|"
                  r"\bwhat\s+went\s+wrong\b", re.I)
_NAMED = re.compile(r"\b(?:of|in|for|from)\s+`?([A-Za-z_]\w*)`?", re.I)


def play(prompt: str, turn: list[ChatMessage], tools: set[str]) -> DataTurn | None:
    """The data story's next step for ``prompt``, or None when the prompt is not one of it."""
    text = re.sub(r"^(?:please|kindly|could you|can you)\s+", "", prompt.strip(), flags=re.I)
    seen = seen_calls(turn)
    if _FIX.search(text) and "last_error" in tools:
        return _fix(seen, tools)
    if _PLOT.search(text) and tools & {"run_python", "insert_cell"}:
        named = _NAMED.search(text.split("month", 1)[-1])
        return _plot(named.group(1) if named else None, seen, tools)
    m = _INSPECT.match(text)
    if m and m.group(1).lower() not in _NOT_NAMES and "list_variables" in tools:
        return _inspect(m.group(1), seen, tools)
    if _VARIABLES.search(text) and "list_variables" in tools:
        return _inspect(None, seen, tools)
    return None


def seen_calls(turn: list[ChatMessage]) -> list[Seen]:
    """Every tool call of ``turn`` with the result the model read."""
    results = {m.get("tool_call_id"): str(m.get("content") or "") for m in turn
               if m.get("role") == "tool"}
    out = []
    for message in turn:
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            fn = call.get("function", {})
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                args = {}
            content = results.get(call.get("id"), "")
            why = refusal(content)
            if why is not None:
                out.append(Seen(fn.get("name", "?"), args, None, why.rstrip(". ")))
                continue
            try:
                result: object = json.loads(content)
            except ValueError:
                result = content
            failed = None
            if isinstance(result, dict) and result.get("ok") is False:
                failed = str(result.get("error") or "it gave no reason")
            out.append(Seen(fn.get("name", "?"), args, result, failed))
    return out


def _last(seen: list[Seen], name: str) -> Seen | None:
    return next((s for s in reversed(seen) if s.name == name), None)


def _variables(listing: Seen) -> list[dict[str, object]]:
    found = listing.result.get("variables") if isinstance(listing.result, dict) else None
    return [v for v in found if isinstance(v, dict)] if isinstance(found, list) else []


def _columns(entry: dict[str, object]) -> list[tuple[str, str]]:
    """``(name, dtype)`` of a listed or inspected DataFrame's columns."""
    found = entry.get("columns")
    if isinstance(found, list):
        return [(str(c.get("name")), str(c.get("dtype", "?"))) if isinstance(c, dict)
                else (str(c), "?") for c in found]
    dtypes = entry.get("dtypes")
    if isinstance(dtypes, dict):
        return [(str(k), str(v)) for k, v in dtypes.items()]
    return []


def _stopped(what: str, step: Seen) -> DataTurn:
    return DataTurn(f"I could not {what}: `{step.name}` said {short(step.failed or '', 300)}")


# -- "what's in df" ---------------------------------------------------------------------

def _inspect(name: str | None, seen: list[Seen], tools: set[str]) -> DataTurn:
    listing = _last(seen, "list_variables")
    if listing is None:
        return DataTurn(calls=[("list_variables", {})])
    if listing.failed:
        return _stopped("look at the notebook's variables", listing)
    variables = _variables(listing)
    names = [str(v.get("name")) for v in variables]
    if name is None:
        shown = ", ".join(f"`{v.get('name')}` ({v.get('type')}, {v.get('size', '?')})"
                          for v in variables[:12]) or "nothing yet"
        return DataTurn(f"The notebook's variables, newest first: {shown}.")
    entry = next((v for v in variables if v.get("name") == name), None)
    if entry is None:
        close = difflib.get_close_matches(name, names, n=1)
        hint = f" Did you mean `{close[0]}`?" if close else ""
        listed = ", ".join(f"`{n}`" for n in names[:12]) or "none"
        return DataTurn(f"There is no variable called `{name}` in this notebook.{hint} "
                        f"The variables are: {listed}.")
    inspected = _last(seen, "inspect_variable")
    if inspected is None and "inspect_variable" in tools:
        return DataTurn(calls=[("inspect_variable", {"name": name})])
    detail = inspected.result if inspected is not None and isinstance(inspected.result, dict) \
        and not inspected.failed else {}
    return DataTurn(_summary(name, entry, detail))


def _summary(name: str, entry: dict[str, object], detail: dict[str, object]) -> str:
    """What a listed and inspected variable is, from those two results only."""
    kind = str(detail.get("type") or entry.get("type") or "object")
    columns = _columns(detail) or _columns(entry)
    shape = detail.get("shape") or entry.get("shape")
    rows = shape[0] if isinstance(shape, list) and shape else None
    said = [f"`{name}` is a {kind}"]
    if rows is not None and columns:
        said.append(f" with {rows:,} rows and {len(columns)} columns" if isinstance(rows, int)
                    else f" of shape {shape}")
    elif entry.get("size"):
        said.append(f" ({entry['size']})")
    text = "".join(said) + "."
    if columns:
        text += " Columns: " + ", ".join(f"{code(c, 40)} ({d})" for c, d in columns[:30]) + "."
    nulls = _nulls(detail.get("nulls"))
    if nulls is not None:
        missing = [(c, n) for c, n in nulls if n]
        text += (" Missing values: " + ", ".join(f"{code(c, 40)} has {n:,}" for c, n in missing)
                 + ("; the other columns have none." if len(missing) < len(nulls) else ".")
                 if missing else " No column has missing values.")
    elif columns:
        text += " (The inspection gave no null counts.)"
    preview = _head(detail.get("head")) or entry.get("preview")
    if isinstance(preview, str) and preview.strip():
        text += "\n\nThe first rows:\n\n" + block(preview)
    return text


def _head(found: object) -> str | None:
    """A table's head (``{"columns": [...], "rows": [[...], ...]}``) as aligned text."""
    if isinstance(found, str):
        return found
    if not (isinstance(found, dict) and isinstance(found.get("columns"), list)
            and isinstance(found.get("rows"), list)):
        return None
    table = [[str(c) for c in found["columns"]]]
    table += [[str(v) for v in row] for row in found["rows"] if isinstance(row, list)]
    widths = [max(len(row[i]) for row in table if i < len(row)) for i in range(len(table[0]))]
    return "\n".join("  ".join(cell.ljust(widths[i]) if i < len(widths) else cell
                               for i, cell in enumerate(row)).rstrip() for row in table)


def _nulls(found: object) -> list[tuple[str, int]] | None:
    if isinstance(found, dict):
        return [(str(k), int(v)) for k, v in found.items() if isinstance(v, (int, float))]
    if isinstance(found, list):
        pairs = []
        for item in found:
            if isinstance(item, dict):
                count = item.get("nulls", item.get("count", item.get("missing")))
                if isinstance(count, (int, float)):
                    pairs.append((str(item.get("name", item.get("column"))), int(count)))
        return pairs
    return None


# -- "plot the monthly totals" ----------------------------------------------------------

def _frame_for_plot(name: str | None, seen: list[Seen]
                    ) -> tuple[str, str, list[tuple[str, str]]] | str:
    """The DataFrame to plot, its date column and its columns; or why there is none."""
    listing = _last(seen, "list_variables")
    variables = _variables(listing) if listing is not None else []
    frames = [v for v in variables if _columns(v)]
    if name is not None:
        frames = [v for v in frames if v.get("name") == name] or frames
    for frame in frames:
        columns = _columns(frame)
        date = next((c for c, d in columns if "datetime" in d or c.lower() in
                     ("date", "day", "timestamp", "time")), None)
        if date is not None:
            return str(frame.get("name")), date, columns
    if listing is not None and not listing.failed:
        return ("I found no DataFrame with a date column in the notebook, so there is nothing "
                "to total by month.")
    return name or "df", "date", []


def plot_code(frame: str, date: str, columns: list[tuple[str, str]]) -> tuple[str, str]:
    """pandas and matplotlib code that totals ``frame`` by month and draws it; and what it
    totals, in words."""
    numeric = [c for c, d in columns if re.match(r"(?:u?int|float)", d)]
    names = {c for c, _d in columns}
    if {"units", "price"} <= names:
        value, what = f"{frame}['units'] * {frame}['price']", "sales (units × price)"
    elif numeric:
        value, what = f"{frame}[{numeric[0]!r}]", numeric[0]
    else:
        value, what = f"{frame}.select_dtypes('number').sum(axis=1)", "every numeric column"
    source = (
        "import matplotlib.pyplot as plt\nimport pandas as pd\n\n"
        f"months = pd.to_datetime({frame}[{date!r}]).dt.to_period('M')\n"
        f"monthly = ({value}).groupby(months).sum().round(2)\n"
        f"ax = monthly.plot(kind='bar', title='Monthly totals: {what}')\n"
        "ax.set_xlabel('month')\n"
        "ax.set_ylabel('total')\n"
        "plt.tight_layout()\n"
        "plt.show()\n"
        "monthly")
    return source, what


def _plot(name: str | None, seen: list[Seen], tools: set[str]) -> DataTurn:
    if "list_variables" in tools and _last(seen, "list_variables") is None:
        return DataTurn(calls=[("list_variables", {})])
    found = _frame_for_plot(name, seen)
    if isinstance(found, str):
        return DataTurn(found)
    frame, date, columns = found
    source, what = plot_code(frame, date, columns)
    inserted, ran_cell = _last(seen, "insert_cell"), _last(seen, "run_cell")
    ran = _last(seen, "run_python")
    if ran_cell is not None:
        return DataTurn(_ran(ran_cell, frame, what, "the new cell"))
    if ran is not None:
        note = ""
        if inserted is not None and inserted.failed:
            note = (f"I could not put the code in a new cell ({short(inserted.failed, 200)}), "
                    "so I asked to run it in the kernel with `run_python`. ")
        return DataTurn(note + _ran(ran, frame, what, "this run"))
    if inserted is not None and not inserted.failed and "run_cell" in tools:
        index = inserted.result.get("index") if isinstance(inserted.result, dict) else None
        if isinstance(index, int):
            return DataTurn(calls=[("run_cell", {"index": index})])
    if inserted is None and "insert_cell" in tools:
        return DataTurn(calls=[("insert_cell", {"source": source})])
    if "run_python" in tools:
        return DataTurn(calls=[("run_python", {"code": source})])
    if inserted is not None and inserted.failed:
        return _stopped("add the plotting cell", inserted)
    return DataTurn("I put the plotting code in a new cell below; run it to draw the chart.")


def _ran(step: Seen, frame: str, what: str, where: str) -> str:
    """What running the plotting code really gave: the totals, the chart, or the error."""
    if step.result is None:
        return (f"The plotting code was not run: {short(step.failed or '', 300)}. The code "
                "is on the call's card, to run yourself if you agree with it.")
    result = step.result if isinstance(step.result, dict) else {}
    error = result.get("error")
    if isinstance(error, dict) or result.get("status") not in (None, "done"):
        words = (f"{error.get('type')}: {short(str(error.get('message')), 200)}"
                 if isinstance(error, dict) else str(result.get("status")))
        return f"The plotting code ran but did not finish ({words})."
    outputs = result.get("outputs")
    drawn = any("image/png" in json.dumps(o) for o in outputs) if isinstance(outputs, list) \
        else False
    value = result.get("value")
    text = (f"I totalled `{frame}` by month ({what}) with pandas and drew it with "
            f"matplotlib in {where}.")
    text += " The bar chart is shown there." if drawn else " No image came back from it."
    if isinstance(value, str) and value.strip():
        text += "\n\nThe monthly totals:\n\n" + block(value)
    elif isinstance(value, dict) and isinstance(value.get("text/plain"), str):
        text += "\n\nThe monthly totals:\n\n" + block(str(value["text/plain"]))
    return text


# -- "fix the error above" --------------------------------------------------------------

_QUOTED_KEY = re.compile(r"""^['"](.*)['"]$""")
_NAME_ERROR = re.compile(r"name '([^']+)' is not defined")
_ATTRIBUTE = re.compile(r"has no attribute '([^']+)'")


def _fix(seen: list[Seen], tools: set[str]) -> DataTurn:
    read = _last(seen, "last_error")
    if read is None:
        return DataTurn(calls=[("last_error", {})])
    if read.failed:
        return DataTurn(f"There is nothing to fix: `last_error` says {short(read.failed, 200)}")
    result = read.result if isinstance(read.result, dict) else {}
    error = result.get("error") if isinstance(result.get("error"), dict) else {}
    cell = result.get("cell") if isinstance(result.get("cell"), dict) else {}
    assert isinstance(error, dict) and isinstance(cell, dict)
    kind, message = str(error.get("type", "error")), str(error.get("message", ""))
    wrong = _misspelt(kind, message)
    if wrong is not None and "list_variables" in tools and _last(seen, "list_variables") is None:
        return DataTurn(calls=[("list_variables", {})])
    return DataTurn(_explain(kind, message, error.get("line"), cell, wrong, seen))


def _misspelt(kind: str, message: str) -> str | None:
    """The name or key an error says is missing (a KeyError's key, a NameError's name)."""
    if kind == "KeyError":
        m = _QUOTED_KEY.match(message.strip())
        return m.group(1) if m else message.strip() or None
    m = _NAME_ERROR.search(message) if kind == "NameError" else _ATTRIBUTE.search(message) \
        if kind == "AttributeError" else None
    return m.group(1) if m else None


def _explain(kind: str, message: str, line: object, cell: dict[str, object],
             wrong: str | None, seen: list[Seen]) -> str:
    source = str(cell.get("source", ""))
    count = cell.get("execution_count")
    where = f"cell In[{count}]" if count is not None else "the cell"
    lines = source.splitlines()
    text_line = lines[line - 1] if isinstance(line, int) and 0 < line <= len(lines) else None
    at = f"line {line} of {where}" if text_line is not None else where
    said = f"The error above is a **{kind}** raised at {at}"
    said += f":\n\n{block(text_line)}\n\n" if text_line is not None else ". "
    said += f"The message: {code(f'{kind}: {message}', 200)}."
    if wrong is None:
        return said + (" I can only explain it from the error; a real model would read the "
                       "code around it and suggest a change.")
    listing = _last(seen, "list_variables")
    variables = _variables(listing) if listing is not None and not listing.failed else []
    if kind == "NameError":
        pool = {str(v.get("name")): "a variable" for v in variables}
        what = f"`{wrong}` is not a name defined in the notebook"
    else:
        pool = {c: f"a column of `{v.get('name')}`" for v in variables for c, _d in _columns(v)}
        what = (f"`{wrong}` is not a key of what the line looks up" if kind == "KeyError"
                else f"there is no attribute `{wrong}`")
    close = difflib.get_close_matches(wrong, list(pool), n=1, cutoff=0.6)
    if listing is None or listing.failed:
        why = f" ({short(listing.failed, 200)})" if listing is not None and listing.failed else ""
        return said + f" {what[0].upper() + what[1:]}. I could not look at the notebook's " \
            f"variables{why}, so I cannot say which name was meant."
    if not close:
        known = ", ".join(f"`{n}`" for n in list(pool)[:15]) or "none I could see"
        return said + f" {what.capitalize()}, and nothing in the notebook is spelt like it " \
            f"(I looked at: {known})."
    right = close[0]
    said += f" {what[0].upper() + what[1:]}: the closest name is `{right}` ({pool[right]})."
    if text_line is not None:
        fixed = _corrected(text_line, wrong, right, kind)
        if fixed != text_line:
            said += f" The corrected line:\n\n{block(fixed)}"
    return said


def _corrected(line: str, wrong: str, right: str, kind: str) -> str:
    if kind == "KeyError":
        return re.sub(rf"""(['"]){re.escape(wrong)}\1""", lambda m: f"{m.group(1)}{right}"
                      f"{m.group(1)}", line)
    return re.sub(rf"\b{re.escape(wrong)}\b", right, line)
