"""A synthesized query's rubric items carry the structure a check is built from, read from the spec the query was
written from (``tasks/rubrics/capabilities.py``), or say why no check decides them; the checks built from that
structure pass on the offline teacher's app for the query and fail on a twin whose control is broken."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemas.checks import parse_check
from schemas.config.checks import ChecksConfig
from schemas.config.env import RuntimeConfig
from schemas.rubric import EVIDENCE_KINDS, CompactRubric, Task
from tasks.queries.synthesize import candidate_spec, load_taxonomy, offline_query, prompt_variables, sample_personas
from tasks.rubrics.capabilities import Checkable, Uncheckable, evidence_table
from tasks.rubrics.checks import check_rows
from tasks.rubrics.checks_offline import offline_checks
from tasks.rubrics.expansion import offline_expansion
from tasks.rubrics.offline_items import spec_items
from tasks.rubrics.prompt_spec import read_spec
from tasks.sft.teacher import offline_app

RT = RuntimeConfig(concurrency=5)
needs_browser = pytest.mark.skipif(not Path(RT.executable_path).exists(),
                                   reason="needs Debian's chromium-headless-shell: scripts/setup-system.sh")
SEED, PERSONAS = 17, sample_personas(10, 17)
# Candidates of seed 17 with a checkable capability: (index, capability, how the teacher's app is broken for it)
SPEED = (0, "si_speed_control", (('max="4"', 'max="3"'),))  # the slider stops short of 4x
REORDER = (1, "in_drag_reorder", (("li.after(dragged);", ""),))  # a drop moves nothing
STOPWATCH = (37, "ta_stopwatch", (("e.textContent = 'update ' + S.n;", ""),))  # Start changes no text
WIZARD = (56, "wf_multi_step_wizard", (("e.textContent = 'update ' + S.n;", ""),))  # Next changes no text
# typing hides nothing and changes no other text (the teacher's status line answers every input)
FILTER = (1121, "ip_search_filter", (("li.style.display =", "li.dataset.seen ="), ("'input, select'", "'select'")))


def _query(index: int) -> str:
    return offline_expansion({"query": offline_query(prompt_variables(candidate_spec(index, SEED, PERSONAS, 2, 4)))[
        "query"]})["expanded_query"]


def _items(query: str) -> list[dict]:
    return [{"id": f"X{n}", "scope": i.scope, "requirement": i.requirement, **i.structure()}
            for n, i in enumerate(spec_items(read_spec(query)))]


def test_every_capability_and_named_sentence_is_in_the_one_table_with_a_kind_or_a_reason():
    table = evidence_table()
    caps = {c.id for cat in load_taxonomy().categories for c in cat.capabilities}
    assert caps <= set(table)
    for key, ev in table.items():
        assert (isinstance(ev, Checkable) and ev.kind in EVIDENCE_KINDS) or \
            (isinstance(ev, Uncheckable) and ev.reason), key


def test_the_speed_item_is_a_range_with_the_specs_bounds_and_a_lookalike_sentence_gets_none():
    assert candidate_spec(SPEED[0], SEED, PERSONAS, 2, 4).capability_ids.count(SPEED[1]) == 1
    query = _query(SPEED[0])
    (speed,) = [i for i in _items(query) if i["evidence_kind"] == "takes_range"]
    assert (speed["scope"], speed["element"]) == ("dynamic", "speed")
    (check,) = [c["check"] for c in offline_checks({"items": json.dumps(_items(query)), "expanded_query": query})[
        "checks"] if c["item_id"] == speed["id"]]
    assert [s.get("value") for s in check["steps"] if s.get("do") == "fill"] == ["4", "0.5"]
    # the same words with other numbers are no phrase the synthesizer wrote: nothing is read back from them
    other = query.replace("from 0.5x to 4x", "from 1x to 8x")
    assert not [i for i in _items(other) if i["evidence_kind"] == "takes_range"]


def test_a_speed_slider_beside_another_slider_named_for_a_speed_gets_no_check():
    from tasks.rubrics import text as T
    from tasks.rubrics.capabilities import SPEED_CLASH, clause_evidence

    alone = "It must let the user change the simulation speed from 0.5x to 4x while it runs."
    ((speed,),) = [[f.evidence for f in clause_evidence(T.clauses_of(alone))]]
    assert isinstance(speed, Checkable) and speed.bounds == (0.5, 4.0)
    # Snake's parameter is "speed": its slider could be the one a check operates
    both = alone[:-1] + "; and provide a slider that adjusts the speed live while it is dragged."
    assert [f.evidence for f in clause_evidence(T.clauses_of(both))][0] == SPEED_CLASH


def test_an_item_no_check_can_decide_says_why_on_its_checks_row():
    query = _query(STOPWATCH[0])
    items = _items(query)
    out = offline_checks({"items": json.dumps(items), "expanded_query": query})
    assert out["uncheckable"] and all(u["reason"] for u in out["uncheckable"])
    assert not {u["item_id"] for u in out["uncheckable"]} & {c["item_id"] for c in out["checks"]}
    rows = {r["item_id"]: r for r in check_rows(items, out["checks"], out["uncheckable"])}
    for u in out["uncheckable"]:
        assert (rows[u["item_id"]]["check_status"], rows[u["item_id"]]["check_problem"]) == ("none", u["reason"])


@pytest.mark.browser
@needs_browser
def test_the_capability_checks_pass_on_the_teachers_app_and_fail_on_its_broken_twin():
    from tasks.env.checks import CheckPlan
    from tasks.env.runtime import BrowserRuntime

    apps, plans, kinds = [], [], []
    for index, cap, breaks in (SPEED, REORDER, STOPWATCH, WIZARD, FILTER):
        assert cap in candidate_spec(index, SEED, PERSONAS, 2, 4).capability_ids
        query = _query(index)
        items = {i["id"]: i for i in _items(query)}
        checks = [(c["item_id"], parse_check(c["check"])) for c in offline_checks(
            {"items": json.dumps(list(items.values())), "expanded_query": query})["checks"]]
        mine = [(i, c) for i, c in checks if items[i]["evidence_kind"] in ("takes_range", "operate_named",
                                                                          "reorder_by_drag", "filter_by_typing")]
        assert len(mine) == 1, (cap, checks)
        app = offline_app(Task(query_id=str(index), query=query, rubric=CompactRubric(initial_state=[], dynamic=[])))
        twin = app
        for good, bad in breaks:
            assert good in twin
            twin = twin.replace(good, bad)
        plan = CheckPlan(mine, ChecksConfig(step_timeout_ms=1000))
        apps += [app, twin]
        plans += [plan, plan]
        kinds.append(cap)
    with BrowserRuntime(RT) as rt:
        results = [[r["status"] for r in ev.check_results] for ev in rt.check_many(apps, checks=plans)]
    print("teacher / twin:", dict(zip(kinds, zip(results[::2], results[1::2]))))
    assert results[::2] == [["passed"]] * len(kinds)
    assert results[1::2] == [["failed"]] * len(kinds)
