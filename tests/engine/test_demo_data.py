"""The demo model's data story, played in-process against the agreed tool names and result
shapes of issue 24: which call comes next, and that the answer is built from the results
(the columns and nulls found, the totals printed, the error read), not from the prompt."""

from __future__ import annotations

import json
from typing import Any

from agent_kernel.engine.models import demo
from agent_kernel.engine.models.demo_data import plot_code

NOTEBOOK_TOOLS = ["list_variables", "inspect_variable", "run_python", "read_cells",
                  "insert_cell", "edit_cell", "run_cell", "last_error", "echo"]

SALES_COLUMNS = [{"name": "date", "dtype": "datetime64[us]"}, {"name": "region", "dtype": "str"},
                 {"name": "product", "dtype": "str"}, {"name": "units", "dtype": "float64"},
                 {"name": "price", "dtype": "float64"}]
LISTING = {"ok": True, "total": 2, "shown": 2, "variables": [
    {"name": "df", "type": "DataFrame", "size": "181 rows × 5 columns", "memory_bytes": 31000,
     "preview": "date region ...", "columns": SALES_COLUMNS, "shape": [181, 5]},
    {"name": "threshold", "type": "int", "size": "1 item", "memory_bytes": 28,
     "preview": "10"}]}


def schemas(names: list[str]) -> list[Any]:
    return [{"type": "function", "function": {"name": n, "parameters": {"type": "object",
                                                                        "properties": {}}}}
            for n in names]


class Conversation:
    """A prompt and the calls answered so far, as the loop hands them to the model."""

    def __init__(self, prompt: str, tools: list[str] = NOTEBOOK_TOOLS) -> None:
        self.messages: list[Any] = [{"role": "user", "content": prompt}]
        self.tools = schemas(tools)

    def next(self) -> demo.DemoTurn:
        return demo.respond(self.messages, self.tools)

    def answer(self, turn: demo.DemoTurn, *results: Any) -> None:
        calls = [{"id": f"c{len(self.messages)}_{i}", "type": "function",
                  "function": {"name": name, "arguments": json.dumps(args)}}
                 for i, (name, args) in enumerate(turn.tool_calls)]
        self.messages.append({"role": "assistant", "content": "", "tool_calls": calls})
        for call, result in zip(calls, results, strict=True):
            content = result if isinstance(result, str) else json.dumps(result)
            self.messages.append({"role": "tool", "tool_call_id": call["id"],
                                  "content": content})


def test_whats_in_df_lists_then_inspects_then_summarises_the_real_result() -> None:
    talk = Conversation("what's in df?")
    first = talk.next()
    assert first.tool_calls == [("list_variables", {})] and first.text == ""
    talk.answer(first, LISTING)
    second = talk.next()
    assert second.tool_calls == [("inspect_variable", {"name": "df"})]
    talk.answer(second, {"ok": True, "name": "df", "type": "DataFrame", "shape": [181, 5],
                         "columns": SALES_COLUMNS,
                         "nulls": {"date": 0, "region": 0, "product": 0, "units": 3,
                                   "price": 0},
                         "head": {"columns": ["date", "region", "product", "units", "price"],
                                  "rows": [["2025-01-01", "south", "tea", 15.0, 4.25]]}})
    answer = talk.next()
    assert answer.tool_calls == [] and answer.text.startswith(demo.LABEL)
    for column in ("date", "region", "product", "units", "price"):
        assert f"`{column}`" in answer.text
    assert "181 rows and 5 columns" in answer.text
    assert "`units` has 3; the other columns have none" in answer.text
    assert "date        region  product  units  price\n2025-01-01  south   tea      15.0   4.25" \
        in answer.text


def test_the_summary_follows_what_the_tools_said_not_the_prompt() -> None:
    talk = Conversation("what's in df?")
    talk.answer(talk.next(), {**LISTING, "variables": [{
        "name": "df", "type": "DataFrame", "size": "2 rows × 1 column",
        "columns": [{"name": "score", "dtype": "int64"}], "shape": [2, 1]}]})
    talk.answer(talk.next(), {"ok": True, "name": "df", "type": "DataFrame",
                              "nulls": [{"name": "score", "nulls": 0}]})
    text = talk.next().text
    assert "2 rows and 1 columns" in text and "`score` (int64)" in text
    assert "No column has missing values" in text and "region" not in text


def test_a_missing_variable_is_said_with_the_closest_name() -> None:
    talk = Conversation("what's in dff?")
    talk.answer(talk.next(), LISTING)
    text = talk.next().text
    assert "no variable called `dff`" in text and "Did you mean `df`?" in text


def test_no_kernel_stops_the_story_with_the_tools_reason() -> None:
    talk = Conversation("what's in df?")
    talk.answer(talk.next(), {"ok": False, "error": "list_variables works only in a kernel"})
    text = talk.next().text
    assert "could not look at the notebook's variables" in text and "only in a kernel" in text


def test_plot_tries_a_cell_then_runs_python_when_there_is_no_frontend() -> None:
    talk = Conversation("plot the monthly totals")
    talk.answer(talk.next(), LISTING)
    insert = talk.next()
    [(name, args)] = insert.tool_calls
    assert name == "insert_cell"
    source = str(args["source"])
    assert "pd.to_datetime(df['date']).dt.to_period('M')" in source
    assert "df['units'] * df['price']" in source and "plt.show()" in source
    talk.answer(insert, {"ok": False, "error": "The cell tools need JupyterLab with the "
                                               "agent-kernel extension; nbclient has none."})
    run = talk.next()
    assert run.tool_calls == [("run_python", {"code": source})]
    talk.answer(run, {"ok": True, "status": "done", "stdout": "", "stderr": "",
                      "value": "date\n2025-01  2851.16\n2025-02  3012.50",
                      "outputs": [{"data": {"image/png": "iVBORw0KGgo="}}], "error": None,
                      "names": {"created": ["months", "monthly", "ax"], "changed": [],
                                "deleted": []}})
    text = talk.next().text
    assert "could not put the code in a new cell" in text and "nbclient has none" in text
    assert "2025-02  3012.50" in text and "bar chart is shown" in text


def test_plot_inserts_and_runs_a_cell_when_the_cell_tools_work() -> None:
    talk = Conversation("plot the monthly totals of df")
    talk.answer(talk.next(), LISTING)
    insert = talk.next()
    talk.answer(insert, {"ok": True, "index": 7})
    run = talk.next()
    assert run.tool_calls == [("run_cell", {"index": 7})]
    talk.answer(run, {"ok": True, "status": "done", "execution_count": 9, "error": None,
                      "outputs": [{"output_type": "display_data",
                                   "data": {"image/png": "iVBOR"}}]})
    text = talk.next().text
    assert "in the new cell" in text and "bar chart" in text


def test_a_denied_run_is_said_as_such() -> None:
    talk = Conversation("plot the monthly totals", ["list_variables", "run_python"])
    talk.answer(talk.next(), LISTING)
    run = talk.next()
    assert run.tool_calls[0][0] == "run_python"
    talk.answer(run, "Error: Tool 'run_python' was not run: the user denied it.")
    assert "was not run" in talk.next().text


def test_plot_code_without_units_and_price_totals_the_first_number_column() -> None:
    source, what = plot_code("sales", "day", [("day", "datetime64[ns]"), ("amount", "int64")])
    assert "sales['amount']" in source and what == "amount"


ERROR = {"ok": True,
         "error": {"type": "KeyError", "message": "'reigon'", "line": 2,
                   "traceback": "Traceback ...\nKeyError: 'reigon'"},
         "cell": {"execution_count": 6,
                  "source": "# totals by region\nby_region = df.groupby('reigon')['units'].sum()"}}


def test_fix_reads_the_error_then_the_columns_then_names_the_closest() -> None:
    talk = Conversation("fix the error above")
    first = talk.next()
    assert first.tool_calls == [("last_error", {})]
    talk.answer(first, ERROR)
    second = talk.next()
    assert second.tool_calls == [("list_variables", {})]
    talk.answer(second, LISTING)
    text = talk.next().text
    assert "**KeyError**" in text and "line 2 of cell In[6]" in text
    assert "the closest name is `region` (a column of `df`)" in text
    assert "by_region = df.groupby('region')['units'].sum()" in text


def test_agent_fix_prompt_plays_the_same_story() -> None:
    from agent_kernel.notebook.errors import FIX_OPENING

    assert Conversation(FIX_OPENING + " Cell ...").next().tool_calls == [("last_error", {})]


def test_a_name_error_gets_the_closest_variable() -> None:
    talk = Conversation("explain the error")
    talk.answer(talk.next(), {**ERROR, "error": {"type": "NameError", "line": 1,
                                                 "message": "name 'thresold' is not defined",
                                                 "traceback": "..."},
                              "cell": {"execution_count": 3, "source": "print(thresold * 2)"}})
    talk.answer(talk.next(), LISTING)
    text = talk.next().text
    assert "closest name is `threshold`" in text and "print(threshold * 2)" in text


def test_no_error_yet_is_said() -> None:
    talk = Conversation("fix the error above")
    talk.answer(talk.next(), {"ok": False, "error": "No error in this notebook yet."})
    assert "nothing to fix" in talk.next().text


def test_an_error_with_no_name_to_correct_is_explained_only() -> None:
    talk = Conversation("fix the error above")
    talk.answer(talk.next(), {**ERROR, "error": {"type": "ZeroDivisionError", "line": 1,
                                                 "message": "division by zero",
                                                 "traceback": "..."},
                              "cell": {"execution_count": 2, "source": "1 / 0"}})
    turn = talk.next()
    assert turn.tool_calls == [] and "**ZeroDivisionError**" in turn.text


def test_the_old_rules_still_answer_other_prompts() -> None:
    talk = Conversation("what's in the file notes.txt", ["read_file", "list_variables"])
    assert talk.next().tool_calls == [("read_file", {"path": "notes.txt"})]
    assert Conversation("echo hello").next().tool_calls == [("echo", {"value": "hello"})]
