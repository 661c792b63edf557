"""The offline rubric rules read the query itself: a plan's items name the controls it declares with their
defaults and ranges (no heading, code-sample or format item); a short request gets what is drawn, what moves
and what answers input. The checks built from the prompt alone pass on a correct app written by hand (not by
the teacher) and fail on its twin with one control broken, on that control's check only; the offline
teacher's app, written from the query, passes them too.

The plan (``fixtures/offline_rubrics/pendulum_plan.md``) and the app (``pendulum_correct.html``) were written
for these tests in InteractScience's shape; nothing is copied from the benchmark."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemas.checks import parse_check
from schemas.config.env import EnvConfig, RuntimeConfig
from tasks.rubrics import text as T
from tasks.rubrics.filtering import item_rows
from tests.fixtures.rubrics.support import offline_reference, offline_task

FIX = Path(__file__).parent / "fixtures" / "offline_rubrics"
PLAN = (FIX / "pendulum_plan.md").read_text()
CORRECT = (FIX / "pendulum_correct.html").read_text()
SLIDER_WIRING = "lengthSlider.addEventListener('input', onLength);"
READOUT = "document.getElementById('length-value').textContent = length.toFixed(1);"
IN_CM = READOUT.replace("length.toFixed(1)", "(length * 100).toFixed(0)")  # the display shows another number
PROSE = ("Build a Trip Planner miniapp for a nurse who is busy. It must let the user add stops with an Add button; "
         "and work as a single self-contained HTML file with no external requests.")
RT = RuntimeConfig(concurrency=4)
needs_browser = pytest.mark.skipif(not Path(RT.executable_path).exists(),
                                   reason="needs Debian's chromium-headless-shell: scripts/setup-system.sh")


def _items(query: str, max_items: int | None = None) -> list[dict]:
    row = offline_reference("q", query, max_items)
    return [{**r, "row": row} for r in item_rows(row)]


def test_plan_items_name_its_controls_with_defaults_ranges_and_behaviour():
    items = _items(PLAN)
    reqs = [i["requirement"] for i in items]
    named = {w.lstrip("#").rstrip(".,") for r in reqs for w in r.split() if w.startswith("#")}
    assert {"slider-length", "select-planet", "checkbox-trail", "btn-kick", "length-value", "period-display",
            "pendulum-canvas"} <= named, reqs
    slider = next(i for i in items if i["requirement"].startswith("The slider #slider-length"))
    assert "1.5" in slider["requirement"] and "0.5 to 3" in slider["requirement"] and slider["scope"] == "initial_state"
    assert any(r.startswith("Moving the slider #slider-length") and "#length-value" in r for r in reqs)
    assert 'The display #period-display shows "2.46" when the page loads.' in reqs
    # no heading, code sample or format constraint became an item, and every evidence is a span of the plan
    everything = " ".join(i["requirement"] + " " + i["query_evidence"] for i in items)
    for absent in ("Page Content Structure", "Interaction Logic", "Visualization Techniques", "beginPath", "moveTo",
                   "single HTML file", "HTML/CSS/JS", "external libraries"):
        assert absent not in everything, absent
    assert all(T.evidence_in(i["query_evidence"], PLAN) for i in items)
    assert json.loads(items[0]["row"]["reference_json"])["initial_state"][0]["query_evidence"] in PLAN


def test_max_items_keeps_what_checks_compare_first_in_the_plans_order():
    reqs = [i["requirement"] for i in _items(PLAN, max_items=3)]
    assert [r.split(" (")[0] for r in reqs] == ["Moving the slider #slider-length", "The display #length-value shows "
                                                "the value of the slider #slider-length", "Choosing another option in "
                                                "#select-planet"]
    reqs = [i["requirement"] for i in _items(PLAN, max_items=8)]  # then the stated defaults; nothing only looked for
    assert reqs[0].startswith("The slider #slider-length") and any(r.startswith("The checkbox #checkbox-trail")
                                                                    for r in reqs)
    assert not any(r.endswith(("is on the page.", "is visible when the page loads.")) for r in reqs), reqs


@pytest.mark.parametrize("query, expect", [
    ("a bouncing DVD logo", ["draws the requested scene (a bouncing DVD logo)", "moves by itself over time"]),
    ("A Flappy-Bird clone", ["draws the requested scene", "answers input"]),
    ("a snake game you steer with the arrow keys", ["answers input", "Pressing ArrowRight"]),
])
def test_a_short_request_gets_what_is_drawn_moves_and_answers_input(query, expect):
    reqs = [i["requirement"] for i in _items(query)]
    assert all(any(e in r for r in reqs) for e in expect), reqs
    assert len(reqs) <= 4


def test_format_constraints_are_no_items():
    for query in ("a Pong game in a single HTML file, using HTML/CSS/JS only", PROSE):
        reqs = " ".join(i["requirement"] for i in _items(query))
        assert "single" not in reqs and "HTML/CSS/JS" not in reqs and "external" not in reqs, reqs
    assert 'The page has a button labelled "Add".' in [i["requirement"] for i in _items(PROSE)]


def test_checks_are_built_from_what_the_plan_states():
    task = offline_task("q", PLAN)
    checks = dict(task.rubric.checks())
    items = {i.id: i.requirement for i in task.rubric.initial_state + task.rubric.dynamic}
    slider = next(i for i, r in items.items() if r.startswith("The slider #slider-length"))
    steps = [s.model_dump(exclude_none=True) for s in checks[slider].steps]
    assert [s.get("do") or s.get("expect") for s in steps] == ["count", "number_relation", "fill", "number_relation",
                                                               "fill", "number_relation"]
    assert steps[1]["right"] == {"const": 1.5} and steps[2]["value"] == "3" and steps[4]["value"] == "0.5"
    moving = next(i for i, r in items.items() if r.startswith("Moving the slider"))
    steps = [s.model_dump(exclude_none=True) for s in checks[moving].steps]
    assert steps[0]["target"]["css"] == "#length-value" and steps[1] == {"do": "fill", "target": {
        "css": "#slider-length", "canvas": False, "drawing": False, "nth": 0}, "value": "3"} and steps[2]["expect"] == \
        "text_changes"
    for _id, check in checks.items():
        parse_check(check.model_dump(exclude_none=True))


@pytest.fixture(scope="module")
def scored():
    """One batch in the browser: the hand-written app, its twin with the slider unwired, and the teacher's apps
    for the plan, a short request and a request in sentences (each against checks built from its query)."""
    from tasks.env.score import ScoreInput, score_batch
    from tasks.llm.offline import OfflineProvider
    from tasks.sft.teacher import offline_teacher_answer

    assert SLIDER_WIRING in CORRECT and READOUT in CORRECT
    plan, dvd, prose = offline_task("plan", PLAN), offline_task("dvd", "a bouncing DVD logo"), offline_task("prose", PROSE)
    inputs = [ScoreInput("correct", plan, f"```html\n{CORRECT}\n```"),
              ScoreInput("twin", plan, f"```html\n{CORRECT.replace(SLIDER_WIRING, '')}\n```"),
              ScoreInput("cm", plan, f"```html\n{CORRECT.replace(READOUT, IN_CM)}\n```")]
    inputs += [ScoreInput(f"teacher-{t.query_id}", t, offline_teacher_answer(t)) for t in (plan, dvd, prose)]
    results = score_batch(inputs, provider=OfflineProvider(), cfg=EnvConfig(runtime=RT))
    return {r.key: r for r in results}, plan


@needs_browser
def test_a_correct_app_written_by_hand_passes_and_its_broken_twin_fails_that_control(scored):
    results, plan = scored
    correct, twin = results["correct"], results["twin"]
    assert correct.runtime_valid and twin.runtime_valid
    assert {c.status for c in correct.check_results} == {"passed"}, correct.check_results
    assert len(correct.check_results) == len(plan.rubric.checks())
    failed = {c.item_id for c in twin.check_results if c.status == "failed"}
    requirement = {i.id: i.requirement for i in plan.rubric.initial_state + plan.rubric.dynamic}
    # the unwired slider: what moving it changes, and its display after it is moved; nothing else
    assert sorted(requirement[i].split(" #")[0] for i in failed) == ["Moving the slider", "The display"], failed
    assert all("#slider-length" in requirement[i] for i in failed)
    assert sum(c.status == "passed" for c in twin.check_results) == len(twin.check_results) - 2
    assert twin.reward < correct.reward == 1.0


@needs_browser
def test_a_display_showing_another_number_than_its_slider_fails_its_readout(scored):
    results, plan = scored
    requirement = {i.id: i.requirement for i in plan.rubric.initial_state + plan.rubric.dynamic}
    failed = sorted(requirement[c.item_id] for c in results["cm"].check_results if c.status == "failed")
    assert failed == ['The display #length-value shows "1.5" when the page loads.',
                      'The display #length-value shows the value of the slider #slider-length ("length (m)"), when the '
                      'page loads and after it is moved.'], failed
    assert results["cm"].reward < results["correct"].reward


@needs_browser
def test_the_teachers_apps_pass_checks_built_from_the_prompt_alone(scored):
    results, _plan = scored
    for key in ("teacher-plan", "teacher-dvd", "teacher-prose"):
        r = results[key]
        assert r.check_results and {c.status for c in r.check_results} == {"passed"}, (key, r.check_results)
        assert r.runtime_valid and r.reward == 1.0


def test_a_long_declaring_line_is_cut_at_a_word_so_it_stays_evidence():
    words = " ".join(["the slider sets how far the pendulum swings"] * 10)
    plan = f"### 2. Components\n- `<input type=\"range\" id=\"slider-reach\">`: {words}\n- Initial value: 4\n- `<button id=\"b\">Go</button>`\n"
    (slider,) = [i for i in _items(plan) if "#slider-reach" in i["requirement"]]
    assert len(slider["query_evidence"]) <= 300 and T.evidence_in(slider["query_evidence"], plan)


READOUT_PLAN = """### 2. HTML Components
*   `<label for="slider-mass">mass</label>` `<input type="range" id="slider-mass">` `<span id="label-mass"></span>`
*   `<label for="slider-speed">speed</label>` `<input type="range" id="slider-speed">` `<span id="label-speed"></span>`
*   `<input type="range" id="slider-angle">` and `<span id="angle-note"></span>`: the word "degrees".
*   `<input type="checkbox" id="checkbox-grid">` and `<input type="checkbox" id="checkbox-axes">`
*   `<canvas id="scene-canvas"></canvas>`

### 3. Component IDs and State
*   `id="slider-mass"`: default: 2, min: 1, max: 5, step: 1
*   `id="slider-speed"`: default: 0.5, min: 0, max: 1, step: 0.05
*   `id="slider-angle"`: default: 30, min: 0, max: 90, step: 1
*   `id="checkbox-grid"`: default: `checked = false`
*   `id="checkbox-axes"`: default: `checked = true`

Spans like `label-mass` show the current value of their slider.

### 4. Interaction Logic
*   **On `slider-mass` input:** `update()` is called.
*   **On `slider-angle` input:** the angle is stored.
*   **`update()` function:**
    *   clears the canvas and redraws the ball at its new place.
"""


def test_a_display_the_plan_pairs_with_a_slider_shows_its_value():
    from tasks.rubrics.prompt_spec import read_spec

    spec = read_spec(READOUT_PLAN)
    # label-speed is named like label-mass, which the plan says shows a value; angle-note is about something else
    assert {s: o.id for s, o in spec.readouts.items()} == {"slider-mass": "label-mass", "slider-speed": "label-speed"}
    reqs = [i["requirement"] for i in _items(READOUT_PLAN)]
    assert 'The display #label-speed shows the value of the slider #slider-speed ("speed"), when the page loads and ' \
           'after it is moved.' in reqs
    assert not any("#angle-note" in r for r in reqs)
    unsaid = READOUT_PLAN.replace("Spans like `label-mass` show the current value of their slider.\n", "")
    assert read_spec(unsaid).readouts == {}  # nothing says the spans show a value


def test_a_readout_check_reads_both_numbers_from_the_page():
    from tasks.rubrics.checks_offline import readout_check, readout_tolerance
    from tasks.rubrics.prompt_spec import read_spec

    spec = read_spec(READOUT_PLAN)
    speed = next(c for c in spec.controls if c.id == "slider-speed")
    steps = readout_check(speed, spec.readouts["slider-speed"])
    assert [s.get("do") or s.get("expect") for s in steps] == ["text", "number_relation", "fill", "number_relation"]
    assert steps[1]["left"] == {"read": {"css": "#label-speed"}} and steps[1]["right"] == {"read": {"css": "#slider-speed"}}
    assert steps[2]["value"] == "0"  # a bound with the fewest decimals, not the default
    assert readout_tolerance(0.76, 0.01) == pytest.approx(0.05) and readout_tolerance(2, 1) == pytest.approx(0.51)


def test_a_checkbox_default_written_as_an_assignment():
    from tasks.rubrics.prompt_spec import read_spec

    boxes = {c.id: c.default for c in read_spec(READOUT_PLAN).controls if c.kind == "checkbox"}
    assert boxes == {"checkbox-grid": "unchecked", "checkbox-axes": "checked"}


def test_what_a_called_function_draws_is_what_operating_the_control_changes():
    from tasks.rubrics.prompt_spec import read_spec

    effects = {b.control.id: b.effects for b in read_spec(READOUT_PLAN).behaviours if b.control is not None}
    assert effects.get("slider-mass") == ("drawing",) and "slider-angle" not in effects, effects


def test_what_a_plan_says_of_any_slider_holds_for_sliders_only():
    from tasks.rubrics.prompt_spec import read_spec

    plan = ("### 2. Components\n*   `<input type=\"range\" id=\"slider-a\">`\n*   `<button id=\"btn-go\">Go</button>`\n"
            "### 4. Interaction Logic\n*   **On any slider input:** the text content of the span next to it is updated.\n")
    effects = {b.control.id: b.effects for b in read_spec(plan).behaviours if b.control is not None}
    assert effects == {"slider-a": ("text",)}, effects


TWO_AREAS_PLAN = """### 2. Components
*   `<input type="range" id="slider-size">`: the size.
*   `<input type="text" id="input-letter">`: the letter.
*   `<div id="before-area">`: holds the canvas of the source picture.
*   `<div id="after-area">`: holds the canvas of the filtered picture.
### 3. Component IDs and State
*   `id="slider-size"`
    *   **Initial Value:** 20
    *   **Min:** 10
    *   **Max:** 40
### 4. Interaction Logic
A single `update()` function is triggered by any change in the control panel's inputs.
1.  **`update()` function**:
    -   Draw the letter as a grid of squares on the "before" canvas.
    -   Draw the filtered grid on the "after" canvas.
"""


def test_what_is_said_of_any_change_in_the_inputs_holds_for_each_and_several_areas_watch_the_whole_drawing():
    from tasks.rubrics.check_locators import DRAWING
    from tasks.rubrics.prompt_spec import read_spec

    spec = read_spec(TWO_AREAS_PLAN)
    effects = {b.control.id: b.effects for b in spec.behaviours if b.control is not None}
    assert effects == {"slider-size": ("drawing",), "input-letter": ("drawing",)}, effects
    checks = dict(offline_task("q", TWO_AREAS_PLAN).rubric.checks())
    watched = [s.target.model_dump(exclude_defaults=True) for c in checks.values() for s in c.steps
               if getattr(s, "expect", None) == "canvas_changes"]
    assert watched == [DRAWING, DRAWING], checks  # two areas: no one canvas to watch, so every canvas and svg
