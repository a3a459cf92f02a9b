"""The organiser's tool cards in a person's words, and a plan drawn as a checklist."""

from __future__ import annotations

from agent_kernel.views.run_html import plan_html
from agent_kernel.views.summaries import plan_steps, summarise


def line(tool: str, result: object, arguments: object = None) -> str:
    return summarise(tool, arguments or {}, result, success=True, duration_ms=None)


def test_todo_cards_say_what_changed_without_ids() -> None:
    added = {"ok": True, "action": "add", "entry": {"content": "Send Alice (tg:@alice) the "
                                                               "report"},
             "updated_counts": {"open_count": 2, "done_count": 0}}
    assert line("todo_update", added) == "added “Send Alice the report” to the todo list · 2 open"
    added["warnings"] = ["reference_unresolved_write_raw"]
    assert "(people written as given)" in line("todo_update", added)
    done = {"ok": True, "action": "complete", "entry": {"content": "Pay the rent", "done": True},
            "updated_counts": {"open_count": 0, "done_count": 1}}
    assert line("todo_update", done) == "ticked off “Pay the rent” · 0 open"
    listed = {"scope": "wip", "open_count": 1, "done_count": 3,
              "wip_items": [{"content": "Call Bob (tg:1001)"}]}
    assert line("todo_list", listed) == "1 open, 3 done: “Call Bob”"


def test_contact_cards() -> None:
    assert line("contacts_upsert", {"contact_id": "tg:@alice", "contact_nickname": "Alice"}) \
        == "saved contact Alice"
    people = [{"contact_id": f"tg:{n}", "contact_nickname": f"P{n}"} for n in range(5)]
    assert line("contacts_list", people) == "5 contacts: P0, P1, P2 and 2 more"
    assert line("contacts_list", []) == "0 contacts"
    assert line("contacts_candidate_rank", {"count": 0, "decisions": []}) == \
        "nobody to share with now · nothing sent"
    assert line("contacts_candidate_rank", {"count": 1, "decisions": [
        {"contact_id": "tg:1", "contact_nickname": "Ann"}]}) == \
        "1 person to share with: Ann · nothing sent"


def test_a_plan_is_a_checklist() -> None:
    result = {"plan": {"summary": "Two steps.", "steps": [
        {"step": "Load <the> data", "status": "completed"},
        {"step": "Chart it", "status": "in_progress"},
        {"step": "Write it up", "status": "pending"}], "risks": ["no data"],
        "questions": [], "completion": "A chart"}}
    assert line("plan_create", result) == "a plan of 3 steps, starting with “Load <the> data”"
    steps = plan_steps(result)
    assert steps is not None
    html = plan_html(result, steps)
    assert "<ul class='ak-plan'>" in html and "Load &lt;the&gt; data" in html
    assert "☑" in html and "(done)" in html and "(in progress)" in html and "(to do)" in html
    assert "Risks: no data" in html and "Done when: A chart" in html
    assert "Questions" not in html
    assert plan_steps({"plan": "no"}) is None and plan_steps([1]) is None


def test_a_demo_plan_run_in_every_view(tmp_path) -> None:  # noqa: ANN001
    import io

    from agent_kernel import Agent
    from agent_kernel.views.mime import mime_bundle, transcript_of
    from agent_kernel.views.text import TextView

    agent = Agent(workspace=tmp_path / "ws")
    events: list = []
    agent.bus.subscribe(events.append)
    out = io.StringIO()
    TextView(agent.bus, out)
    agent.run("plan: load the <b>sales</b> data; chart it by month")
    assert "  ◐ Load the <b>sales</b> data\n  ☐ Chart it by month\n" in out.getvalue()
    bundle = mime_bundle(transcript_of(events))
    html = bundle["text/html"]
    assert "<details class='agent-kernel-tool' data-state='ok' open>" in html
    assert "Load the &lt;b&gt;sales&lt;/b&gt; data <span class='ak-muted'>(in progress)" in html
    assert "    ◐ Load the <b>sales</b> data" in bundle["text/plain"]
    card = next(e for e in bundle["application/vnd.agent-kernel.run.v1+json"]["entries"]
                if e.get("tool") == "plan_create")
    assert card["summary"].startswith("a plan of 2 steps, starting with “Load the <b>sales")
