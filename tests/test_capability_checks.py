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
# Start changes no text (and the query's countdown, ticking on its own, is stopped too)
STOPWATCH = (37, "ta_stopwatch", (("e.textContent = 'update ' + S.n;", ""),
                                  ("Number(e.textContent) - 1", "Number(e.textContent)")))
WIZARD = (56, "wf_multi_step_wizard", (("e.textContent = 'update ' + S.n;", ""),))  # Next changes no text
SKIP = (2, "pr_visual_feedback", (("e.textContent = 'update ' + S.n;", ""),))  # Skip changes no text
# typing hides nothing and changes no other text (the teacher's status line answers every input)
FILTER = (1121, "ip_search_filter", (("li.style.display =", "li.dataset.seen ="), ("'input, select'", "'select'")))
# A named button that throws when it is used; the first button throwing from its second click on
_CLICK = "else changed(b.id, S.n + 1);"


def _throws(name: str) -> tuple[tuple[str, str], ...]:
    return ((_CLICK, f"else if (b.textContent.toLowerCase() === '{name.lower()}') S.x.y; else changed(b.id, S.n + 1);"),)


STEP = (12, "si_step_run_pause", _throws("Step"))
RESET = (15, "er_reset_everything", _throws("Reset"))
MODES = (25, "sm_mode_switch", _throws("Hard"))
THEME = (58, "pr_theme_toggle", _throws("Dark"))
PANEL = (125, "in_toggle_panel", _throws("Settings"))
REPEAT_TWIN = ((_CLICK, "else if (S.n > 0) S.x.y; else changed(b.id, S.n + 1);"),)
RAPID = (15, "er_rapid_input", REPEAT_TWIN)
EDGE_CASES = (12, "hard", REPEAT_TWIN)  # the closer "Handle edge cases such as empty input and repeated actions."
# the state saved in a form the app cannot read back: its reload throws
PERSIST = (67, "sm_persist_local", (("JSON.stringify(S.v)", "String(S.v)"),))
# randomness the seed leaves out (the check pages seed Math.random alike, not crypto): a reload shows another run
SEEDED = (0, "si_random_seed", (("e.textContent = 'update ' + S.n;",
                                 "e.textContent = 'update ' + crypto.getRandomValues(new Uint32Array(1))[0];"),))
# each case's capability -> the item kind (and effect) its check is built from
KIND_OF = {"si_speed_control": ("takes_range", None), "in_drag_reorder": ("reorder_by_drag", None),
           "ta_stopwatch": ("operate_named", "text"), "wf_multi_step_wizard": ("operate_named", "text"),
           "pr_visual_feedback": ("operate_named", "text"), "wf_summary_screen": ("operate_named", "text"),
           "ip_search_filter": ("filter_by_typing", None),
           "si_step_run_pause": ("operate_named", "no_error"), "er_reset_everything": ("operate_named", "no_error"),
           "sm_mode_switch": ("operate_named", "no_error"), "er_rapid_input": ("repeat_no_error", None),
           "hard": ("repeat_no_error", None), "pr_theme_toggle": ("operate_named", "no_error"),
           "in_toggle_panel": ("operate_named", "no_error"), "sm_persist_local": ("restores_on_reload", None),
           "si_random_seed": ("reproduces_by_seed", None)}


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
    from tasks.rubrics.capabilities import SLIDER_CLASH, SPEED_CLASH, clause_evidence

    alone = "It must let the user change the simulation speed from 0.5x to 4x while it runs."
    ((speed,),) = [[f.evidence for f in clause_evidence(T.clauses_of(alone))]]
    assert isinstance(speed, Checkable) and speed.bounds == (0.5, 4.0)
    # Snake's parameter is "speed": its slider could be the one a check operates, and the other way round
    both = alone[:-1] + "; and provide a speed slider that shows its current value and adjusts the speed live " \
        "while it is dragged."
    assert [f.evidence for f in clause_evidence(T.clauses_of(both))] == [SPEED_CLASH, SLIDER_CLASH]
    # Breakout's "ball speed" slider: a slider found by "speed" could be it; one found by "ball speed" could not be
    # the speed control, but the speed control could be labelled so
    ball = both.replace("a speed slider", "a ball speed slider").replace("adjusts the speed", "adjusts the ball speed")
    assert [f.evidence for f in clause_evidence(T.clauses_of(ball))] == [SPEED_CLASH, SLIDER_CLASH]


def test_an_item_no_check_can_decide_says_why_on_its_checks_row():
    query = _query(RESET[0])  # its in_click_select names nothing to click
    items = _items(query)
    out = offline_checks({"items": json.dumps(items), "expanded_query": query})
    assert out["uncheckable"] and all(u["reason"] for u in out["uncheckable"])
    assert not {u["item_id"] for u in out["uncheckable"]} & {c["item_id"] for c in out["checks"]}
    rows = {r["item_id"]: r for r in check_rows(items, out["checks"], out["uncheckable"])}
    for u in out["uncheckable"]:
        assert (rows[u["item_id"]]["check_status"], rows[u["item_id"]]["check_problem"]) == ("none", u["reason"])


def _case_check(index: int, cap: str):
    """The query of ``index``, the one check of ``cap``'s kind built from its items, and the teacher's app."""
    spec = candidate_spec(index, SEED, PERSONAS, 2, 4)
    assert cap in spec.capability_ids or cap == spec.difficulty
    query = _query(index)
    items = {i["id"]: i for i in _items(query)}
    kind, effect = KIND_OF[cap]
    checks = [(c["item_id"], parse_check(c["check"])) for c in offline_checks(
        {"items": json.dumps(list(items.values())), "expanded_query": query})["checks"]]
    mine = [(i, c) for i, c in checks if items[i]["evidence_kind"] == kind
            and (effect is None or effect in (items[i]["effect"] or []))]
    if kind == "operate_named":  # the one named button of this capability
        mine = [(i, c) for i, c in mine if items[i]["trigger"] == evidence_table()[cap].trigger]
    assert len(mine) == 1, (cap, checks)
    app = offline_app(Task(query_id=str(index), query=query, rubric=CompactRubric(initial_state=[], dynamic=[])))
    return mine, app


@pytest.mark.browser
@needs_browser
def test_the_capability_checks_pass_on_the_teachers_app_and_fail_on_its_broken_twin():
    from tasks.env.checks import CheckPlan
    from tasks.env.runtime import BrowserRuntime

    apps, plans, kinds = [], [], []
    for index, cap, breaks in (SPEED, REORDER, STOPWATCH, WIZARD, SKIP, FILTER, STEP, RESET, MODES, THEME, PANEL,
                               RAPID, EDGE_CASES, PERSIST, SEEDED):
        mine, app = _case_check(index, cap)
        twin = app
        for good, bad in breaks:
            assert good in twin
            twin = twin.replace(good, bad)
        plan = CheckPlan(mine, ChecksConfig(step_timeout_ms=1000))
        apps += [app, twin]
        plans += [plan, plan]
        kinds.append(cap)
    with BrowserRuntime(RT) as rt:
        results = [[r.status for r in ev.check_results] for ev in rt.check_many(apps, checks=plans)]
    print("teacher / twin:", dict(zip(kinds, zip(results[::2], results[1::2]))))
    assert results[::2] == [["passed"]] * len(kinds)
    assert results[1::2] == [["failed"]] * len(kinds)


# A correct app written otherwise than the teacher's: an Undo button disabled until there is something to undo, a
# Step button that only redraws a canvas, modes as radio buttons, Reset and Dark mode buttons showing an icon, a
# settings panel hidden with the hidden attribute, a first button that opens a dialog. None of the no-error checks
# may fail it (inconclusive where it cannot act).
CORRECT = """<!DOCTYPE html><html><body>
<button id="help" onclick="document.getElementById('d').showModal()">Help</button>
<dialog id="d"><p>Step advances the simulation.</p><button onclick="this.closest('dialog').close()">Close</button></dialog>
<button id="undo" disabled>Undo</button> <button aria-label="Reset" onclick="n = 0; draw()">&#8634;</button>
<button onclick="run = true">Run</button><button onclick="run = false">Pause</button>
<button onclick="n += 1; draw()">Step</button>
<label><input type="radio" name="m" checked> Easy</label><label><input type="radio" name="m"> Medium</label>
<label><input type="radio" name="m"> Hard</label><canvas width="200" height="100"></canvas>
<button aria-label="Dark mode" onclick="document.body.classList.toggle('dark')">&#9790;</button>
<button aria-expanded="false" onclick="const p = document.getElementById('p'); p.hidden = !p.hidden">Settings</button>
<aside id="p" hidden><label>Size <input type="number" value="3"></label></aside>
<script>let n = 0, run = false; const g = document.querySelector('canvas').getContext('2d');
function draw() { g.fillStyle = '#fff'; g.fillRect(0, 0, 200, 100); g.fillStyle = '#05a'; g.fillRect(n * 7 % 190, 40, 10, 10); }
draw(); setInterval(() => { if (run) { n += 1; draw(); } }, 100);</script></body></html>"""


@pytest.mark.browser
@needs_browser
def test_the_no_error_checks_do_not_fail_a_correct_app_written_another_way():
    from tasks.env.checks import CheckPlan
    from tasks.env.runtime import BrowserRuntime

    checks = [c for index, cap, _ in (STEP, RESET, MODES, THEME, PANEL, RAPID) for c in _case_check(index, cap)[0]]
    with BrowserRuntime(RT) as rt:
        (ev,) = rt.check_many([CORRECT], checks=[CheckPlan(checks, ChecksConfig(step_timeout_ms=1000))])
    got = [r.status for r in ev.check_results]
    print("correct app:", got)
    # modes as radio buttons, the first button's dialog covering it again: the checks cannot act there, and say
    # so; Step, Reset, Dark mode and Settings work
    assert got == ["passed", "passed", "inconclusive", "passed", "passed", "inconclusive"], got


# Correct apps written otherwise than the teacher's: one saves a list only when Add is clicked and shows what it
# restored; one runs its simulation only from a Run button, with a seed in a text field labelled "Random seed", and
# shows the page time since it loaded. Neither reload check may fail them.
SAVES = """<!DOCTYPE html><html><body><button id="add">Add</button><ul id="l"></ul><p id="t"></p>
<script>const items = JSON.parse(localStorage.getItem('items') || '[]');
const show = () => { document.getElementById('l').innerHTML = items.map((x) => '<li>' + x + '</li>').join(''); };
document.getElementById('add').onclick = () => { items.push('item ' + (items.length + 1));
  localStorage.setItem('items', JSON.stringify(items)); show(); };
show(); setInterval(() => { document.getElementById('t').textContent = 'now ' + new Date().toISOString(); }, 250);
</script></body></html>"""
SEEDS = """<!DOCTYPE html><html><body><label for="s">Random seed</label> <input id="s" type="text" value="7">
<button id="run">Run</button><p id="out">not run yet</p><p id="clock"></p>
<script>const t0 = performance.now();
function rng(a) { return () => { a = (a + 0x6D2B79F5) >>> 0; let t = Math.imul(a ^ (a >>> 15), a | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; }; }
function run() { const r = rng(Number(document.getElementById('s').value) || 0); const xs = [];
  for (let i = 0; i < 5; i++) xs.push(Math.floor(r() * 100)); document.getElementById('out').textContent = xs.join(' '); }
document.getElementById('run').onclick = run; document.getElementById('s').addEventListener('input', run);
setInterval(() => { document.getElementById('clock').textContent = ((performance.now() - t0) / 1000).toFixed(1) + ' s'; }, 100);
</script></body></html>"""


@pytest.mark.browser
@needs_browser
def test_the_reload_checks_do_not_fail_correct_apps_written_another_way():
    from tasks.env.checks import CheckPlan
    from tasks.env.runtime import BrowserRuntime

    (persist,), (seed,) = _case_check(*PERSIST[:2])[0], _case_check(*SEEDED[:2])[0]
    with BrowserRuntime(RT) as rt:
        evs = rt.check_many([SAVES, SEEDS], checks=[CheckPlan([persist, seed], ChecksConfig(step_timeout_ms=1000))] * 2)
    got = [[(r.status, r.reason) for r in ev.check_results] for ev in evs]
    print("correct apps:", got)
    # the list app has no seed field (inconclusive); the seeded app's Run button is its first, and it saves nothing
    assert [[s for s, _ in g] for g in got] == [["passed", "inconclusive"], ["passed", "passed"]], got


# Correct quiz apps written otherwise than the teacher's: the quiz waits behind a Start button, its screen hidden
# (display none), faded out (opacity 0) below the Start screen, or shown with Skip disabled or doing nothing until
# Start; and one that starts on load and fades its Finish button in only at the last question (opacity 0 until
# then, a click before it does nothing). A user sees no Skip or Finish to use there, so no check may fail them.
_QUIZ = """<!DOCTYPE html><html><head><style>.off { opacity: 0 } .on { opacity: 1 }</style></head><body>%s
<p id="q"></p><p id="s"></p><script>const qs = ['2 + 2', 'Capital of France', '3 x 3'];
let i = 0, wrong = 0, active = %s;
function show() { document.getElementById('q').textContent = qs[i %% 3]; document.getElementById('s').textContent =
  'Question ' + (i + 1) + ' of 3, wrong ' + wrong; }
function skip() { if (!active) return; wrong += 1; i += 1; show(); }
function finish() { if (i < 2) return; document.getElementById('s').textContent = 'Done: ' + wrong + ' wrong'; }
function start() { active = true; %s show(); }
show();</script></body></html>"""
_START = '<button onclick="start()">Start quiz</button>'
_SKIP = '<button id="k" onclick="skip()"%s>Skip</button>'
WAITING_QUIZZES = {
    "hidden": _QUIZ % (_START + '<div id="z" hidden>' + _SKIP % "" + "</div>", "false",
                       "document.getElementById('z').hidden = false;"),
    "faded": _QUIZ % (_START + '<div id="z" class="off">' + _SKIP % "" + "</div>", "false",
                      "document.getElementById('z').className = 'on';"),
    "disabled": _QUIZ % (_START + _SKIP % " disabled", "false", "document.getElementById('k').disabled = false;"),
    "inert": _QUIZ % (_START + _SKIP % "", "false", ""),
    "finish_faded": _QUIZ % (_SKIP % "" + '<div class="off"><button onclick="finish()">Finish</button></div>',
                             "true", ""),
    "started": _QUIZ % (_SKIP % "", "true", ""),  # no Start, Skip works from the page just loaded: passes
}


@pytest.mark.browser
@needs_browser
def test_the_named_button_checks_do_not_fail_a_quiz_that_waits_for_start_or_fades_its_controls_in():
    from tasks.env.checks import CheckPlan
    from tasks.env.runtime import BrowserRuntime

    (skip,), (finish,) = _case_check(*SKIP[:2])[0], _case_check(8, "wf_summary_screen")[0]
    with BrowserRuntime(RT) as rt:
        evs = rt.check_many(list(WAITING_QUIZZES.values()),
                            checks=[CheckPlan([skip, finish], ChecksConfig(step_timeout_ms=1000))] * len(WAITING_QUIZZES))
    got = {name: [(r.status, r.reason) for r in ev.check_results] for name, ev in zip(WAITING_QUIZZES, evs)}
    print("quizzes:", got)
    # every app's Finish is there but not shown to use until the last question, or the quiz has not begun
    assert {name: [s for s, _ in g] for name, g in got.items()} == {
        "hidden": ["inconclusive"] * 2, "faded": ["inconclusive"] * 2, "disabled": ["inconclusive"] * 2,
        "inert": ["inconclusive"] * 2, "finish_faded": ["passed", "inconclusive"],
        "started": ["passed", "inconclusive"]}, got
