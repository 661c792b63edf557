"""The synthesized queries state what they used to leave to the app (#52): each capability phrase names the control a
check uses (a button's label, a slider's or field's name) and what it changes from a page just loaded, so the rules
write the item's fields from the phrase's spec (``tasks/rubrics/capabilities.py``) and a check follows from them. The
checks pass on the offline teacher's app (it follows the stated names), fail on a twin that breaks what the phrase
states, and do not fail correct apps written another way."""
from __future__ import annotations

import json
import re

import pytest

from schemas.checks import parse_check
from schemas.config.checks import ChecksConfig
from schemas.rubric import CompactRubric, Task
from tasks.queries.synthesize import candidate_spec, load_taxonomy
from tasks.rubrics import text as T
from tasks.rubrics.capabilities import Checkable, evidence_table
from tasks.rubrics.checks_offline import offline_checks
from tasks.rubrics.prompt_spec import read_spec
from tasks.sft.teacher import offline_app
from tests.test_capability_checks import PERSONAS, RT, SEED, _items, _query, needs_browser

SUBJECT = {"obj": "tasks", "obj_one": "task", "param": "priority"}
_STATUS = ("e.textContent = 'update ' + S.n;", "")  # the teacher's status line no longer answers what is done
# the teacher's fields answer no typing, and its page no key (the Tab that leaves a field would update the status)
_DEAF = (("'input, select'", "'select'"), ("addEventListener('keydown'", "addEventListener('keyup-never'"))
# (index of a seed-17 candidate with the capability, capability, item kind, how its twin is broken)
CASES = [
    (7, "er_guarded_empty_state", "operate_named", (_STATUS,)),  # 'Clear all' changes no text
    (10, "dv_bar_chart", "operate_named", (("\n  draw();\n}", "\n}"),)),  # 'Add task' redraws nothing
    (81, "in_slider_control", "slides_named", (_STATUS,)),  # the slider's value shows nowhere
    (22, "rc_edge_values", "rejects_out_of_range", _DEAF),  # typing shows nothing
    (13, "iv_format_hint", "rejects_bad_format", _DEAF),
    (5, "iv_disable_invalid", "starts_disabled", ((" disabled data-submit", " data-submit"),)),  # enabled at once
    (33, "ta_countdown", "text_by_itself", (("Number(e.textContent) - 1", "Number(e.textContent)"),)),  # stands still
    (6, "rc_initial_content", "starts_listed", (('<li draggable="true" data-item>', "<p>", 3),)),  # two list items
    (24, "iv_duplicate_check", "refuses_duplicate", (_STATUS,)),  # a second add says nothing
    (0, "si_physics_motion", "motion_by_itself", (("moving: true", "moving: false"),)),  # nothing moves on load
]


def _phrase(cap: str) -> str:
    return load_taxonomy().capability()[cap].phrase.format(**SUBJECT)


def test_each_phrase_states_the_names_its_check_finds():
    """A check finds a button, slider or field by the name its item carries: the phrase says that name."""
    table = evidence_table()
    for cat in load_taxonomy().categories:
        for cap in cat.capabilities:
            ev = table[cap.id]
            if not isinstance(ev, Checkable):
                continue
            phrase = T.normalise(cap.phrase.format(**SUBJECT))
            names = [n.format(**SUBJECT) for n in (ev.trigger, *ev.others) if n]
            names += [ev.element.format(**SUBJECT)] if ev.element and ev.kind != "takes_range" else []
            for n in names:
                assert re.search(rf"\b{re.escape(T.normalise(n))}\b", phrase), (cap.id, n, phrase)


def test_a_phrase_asks_for_motion_only_where_its_check_is_a_motion_check():
    """A sentence read as motion by itself gets a canvas motion item: the round loop's "moves on automatically" did,
    and a quiz with a still canvas would have failed it."""
    table = evidence_table()
    for cat in load_taxonomy().categories:
        for cap in cat.capabilities:
            query = f"Make a Kanban Board miniapp for a busy teacher at home. It must {_phrase(cap.id)}. " \
                    "Keep the interface simple and uncluttered."
            moves = bool(read_spec(query).motions)
            assert not moves or getattr(table[cap.id], "kind", None) == "motion_by_itself", cap.id


def test_the_scoring_phrase_states_its_points_so_no_default_contradicts_it():
    from tasks.rubrics.expansion import offline_expansion
    from tasks.rubrics.vocab import SCORE_DEFAULT

    query = f"Make a Trivia Quiz miniapp for a teacher. It must {_phrase('dl_scoring_rules')}."
    assert SCORE_DEFAULT not in offline_expansion({"query": query})["expanded_query"]


def _case(index: int, cap: str, kind: str):
    """The query of ``index``, its one check of ``kind``, and the teacher's app for it."""
    assert cap in candidate_spec(index, SEED, PERSONAS, 2, 4).capability_ids
    query = _query(index)
    items = {i["id"]: i for i in _items(query)}
    checks = [(c["item_id"], parse_check(c["check"])) for c in offline_checks(
        {"items": json.dumps(list(items.values())), "expanded_query": query})["checks"]]
    mine = [(i, c) for i, c in checks if items[i]["evidence_kind"] == kind]
    if kind == "operate_named":  # the capability's own button
        trigger = evidence_table()[cap].trigger.format(obj_one=candidate_spec(index, SEED, PERSONAS, 2, 4).subject[2])
        mine = [(i, c) for i, c in mine if items[i]["trigger"] == trigger]
    assert len(mine) >= 1, (cap, kind, checks)
    app = offline_app(Task(query_id=str(index), query=query, rubric=CompactRubric(initial_state=[], dynamic=[])))
    return mine[:1], app


def _twin(app: str, breaks: tuple[tuple, ...]) -> str:
    for good, bad, *count in breaks:
        assert good in app, good
        app = app.replace(good, bad, *count)
    return app


def test_every_case_has_its_check_and_the_teacher_writes_what_its_twin_breaks():
    for index, cap, kind, breaks in CASES:
        mine, app = _case(index, cap, kind)
        assert mine[0][1].steps and _twin(app, breaks) != app, cap


@pytest.mark.browser
@needs_browser
def test_the_phrase_checks_pass_on_the_teachers_app_and_fail_on_its_broken_twin():
    from tasks.env.checks import CheckPlan
    from tasks.env.runtime import BrowserRuntime

    apps, plans = [], []
    for index, cap, kind, breaks in CASES:
        mine, app = _case(index, cap, kind)
        twin = _twin(app, breaks)
        plan = CheckPlan(mine, ChecksConfig(step_timeout_ms=1500))
        apps += [app, twin]
        plans += [plan, plan]
    with BrowserRuntime(RT) as rt:
        results = [[(r.status, r.reason) for r in ev.check_results] for ev in rt.check_many(apps, checks=plans)]
    got = {c[1]: (results[2 * n], results[2 * n + 1]) for n, c in enumerate(CASES)}
    print("teacher / twin:", got)
    assert {cap: [s for s, _ in t] for cap, (t, _) in got.items()} == {c[1]: ["passed"] for c in CASES}
    assert {cap: [s for s, _ in w] for cap, (_, w) in got.items()} == {c[1]: ["failed"] for c in CASES}


# Correct apps written otherwise than the teacher's, for a Kanban Board query asking for these capabilities: a
# 'Clear all ✕' button whose list empties into a placeholder; the 'Add task' button growing a bar drawn in SVG; the
# priority field validated when it is left (a change event), its error in a live region, before a priority slider whose value shows in an
# <output>; a Submit button marked disabled by aria-disabled only; example tasks in an <ol> after a help list of
# three; a Name field cleared after each add; and, in a page of its own, a countdown written as m:ss by
# requestAnimationFrame. None of their checks may fail.
CORRECT_CAPS = ("er_guarded_empty_state", "dv_bar_chart", "in_slider_control", "rc_edge_values", "iv_format_hint",
                "iv_disable_invalid", "ta_countdown", "rc_initial_content", "iv_duplicate_check")
CORRECT = """<!DOCTYPE html><html><body>
<ul id="help"><li>Add adds a task</li><li>Clear all empties the list</li><li>Skip moves on</li></ul>
<ol id="tasks"><li>Write report</li><li>Call Ann</li><li>Buy milk</li><li>Fix bike</li><li>Plan trip</li></ol>
<p id="none" hidden>No tasks yet: add one above.</p>
<button onclick="document.getElementById('tasks').innerHTML = ''; document.getElementById('none').hidden = false">
Clear all &#10005;</button>
<label for="n">Name</label><input id="n"><button id="add">Add</button><p id="why" role="status"></p>
<button id="add-task">Add task</button>
<label for="f">Priority</label><input id="f"><span id="err" aria-live="polite"></span>
<label>Priority slider <input id="p" type="range" min="1" max="5" value="3"></label><output id="pv">3</output>
<button aria-disabled="true">Submit</button>
<svg width="200" height="60"><rect id="bar" x="0" y="10" width="40" height="40" fill="#36c"/></svg>
<script>
const names = new Set(), $ = (id) => document.getElementById(id);
$('add').onclick = () => { const v = $('n').value.trim(); $('n').value = '';
  if (!v) return; if (names.has(v)) { $('why').textContent = v + ' is already in the list'; return; }
  names.add(v); $('why').textContent = ''; $('tasks').insertAdjacentHTML('beforeend', '<li>' + v + '</li>'); };
$('add-task').onclick = () => { $('tasks').insertAdjacentHTML('beforeend', '<li>New task</li>');
  $('bar').setAttribute('width', String(+$('bar').getAttribute('width') + 20)); };
$('p').addEventListener('input', () => { $('pv').textContent = $('p').value; });
$('f').addEventListener('change', () => {
  const v = $('f').value, ok = /^[0-9]+$/.test(v) && +v >= 1 && +v <= 100;
  $('err').textContent = ok || !v ? '' : 'Enter a whole number from 1 to 100'; });
</script></body></html>"""
# the countdown apart: text that changes by itself would pass every other check's "the page's text changes"
TICKING = """<!DOCTYPE html><html><body><p>Time left <span id="t">1:00</span></p><script>
const t0 = performance.now(), t = document.getElementById('t');
(function tick() { const left = Math.max(0, 60 - Math.floor((performance.now() - t0) / 1000));
  t.textContent = Math.floor(left / 60) + ':' + String(left % 60).padStart(2, '0'); requestAnimationFrame(tick); })();
</script></body></html>"""


def _kanban_checks() -> list:
    """The checks the rules write for a Kanban Board query asking for ``CORRECT_CAPS`` (one of each kind)."""
    from tasks.rubrics.expansion import offline_expansion

    body = "; ".join(_phrase(c) for c in CORRECT_CAPS)
    query = offline_expansion({"query": f"Build a Kanban Board miniapp for a nurse who is a beginner, planning "
                                        f"shifts, and will use the app on a laptop. It must {body}. A single screen "
                                        "is enough."})["expanded_query"]
    items = {i["id"]: i for i in _items(query)}
    out = offline_checks({"items": json.dumps(list(items.values())), "expanded_query": query})["checks"]
    kinds = {f'{items[c["item_id"]]["evidence_kind"]} {items[c["item_id"]]["trigger"] or ""}': parse_check(c["check"])
             for c in out if items[c["item_id"]]["scope"] == "dynamic"}
    assert {CASE[2] for CASE in CASES} - {"motion_by_itself"} <= {k.split()[0] for k in kinds}, sorted(kinds)
    return sorted(kinds.items())


@pytest.mark.browser
@needs_browser
def test_the_phrase_checks_do_not_fail_a_correct_app_written_another_way():
    from tasks.env.checks import CheckPlan
    from tasks.env.runtime import BrowserRuntime

    checks = _kanban_checks()
    ticks = [(k, c) for k, c in checks if k.startswith("text_by_itself")]
    rest = [(k, c) for k, c in checks if (k, c) not in ticks]
    cfg = ChecksConfig(step_timeout_ms=1500)
    with BrowserRuntime(RT) as rt:
        evs = rt.check_many([CORRECT, TICKING], checks=[CheckPlan(rest, cfg), CheckPlan(ticks, cfg)])
    got = {k: (r.status, r.reason) for ev, part in zip(evs, (rest, ticks)) for (k, _), r in zip(part, ev.check_results)}
    print("correct app:", got)
    assert {k: s for k, (s, _) in got.items()} == {k: "passed" for k, _ in checks}, got
