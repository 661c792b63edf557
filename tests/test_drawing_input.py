"""A plan's drawing that answers the mouse wherever it lands (issue #51): the plan says the user turns the view by
dragging (a 3D scene's camera). The offline rules make it an item (``answers_input``) whose check clicks and drags
on the page's one canvas and expects it to change; a drawing that ignores the mouse fails it. What no check can do
soundly gets no item: dragging one thing (a locator, a point) whose place no check knows, a click that adds one dot
(less of a canvas than a check counts as a change), a view turned only under a condition, a negated line. A page
with two canvases, of which no check knows the plan's, gets no verdict.

The plans and apps were written for these tests; nothing is copied from a benchmark."""
from __future__ import annotations

from pathlib import Path

import pytest

from schemas.config.env import EnvConfig, RuntimeConfig
from tasks.rubrics.prompt_spec import read_spec
from tests.fixtures.rubrics.support import offline_task

RT = RuntimeConfig(concurrency=4)
needs_browser = pytest.mark.skipif(not Path(RT.executable_path).exists(),
                                   reason="needs Debian's chromium-headless-shell: scripts/setup-system.sh")


def plan(interaction: str, area: str = "scene-container") -> str:
    return f"""### 1. Page Content Structure
- **Scene Area**: a large canvas showing the model.

### 2. HTML Components
- `<div id="{area}">`: holds the `<canvas>` where everything is drawn.

### 3. Interaction Logic
{interaction}
"""


ORBIT = plan("- **Camera**: The user can rotate the camera around the cube by clicking and dragging on the canvas.")
ADD = plan("- **Adding a Point**:\n    - When the user clicks on an empty part of the plot area (not on an existing "
           "point), a new data point is created.", area="plot-container")


@pytest.mark.parametrize("query", [ORBIT, plan("- Left-click and drag: rotate the view (orbit)."),
                                   plan("- The scene uses OrbitControls so the user can rotate it with the mouse.")])
def test_a_plan_whose_drawing_answers_the_mouse_anywhere_gets_an_input_item(query):
    spec = read_spec(query)
    assert spec.answers_input is not None
    from tasks.rubrics.offline_items import spec_items
    item = next(i for i in spec_items(spec) if i.role == "input")
    assert item.structure()["evidence_kind"] == "answers_input" and item.evidence == spec.answers_input


@pytest.mark.parametrize("query", [
    plan("- The user can click and drag the goal locator on the canvas; the path is recomputed."),
    plan("- Dragging a point on the canvas rotates the line through it."),
    plan("- Clicking on the canvas adds the element chosen in the toolbar at the mouse position."),
    ADD,
    plan("- When the 3D view is active, the user can interact with it:\n    - Rotate: left-click and drag."),
    plan("- The view cannot be rotated with the mouse; it is fixed."),
    plan("- Clicking on an empty part of the canvas does nothing."),
])
def test_a_drag_of_one_thing_a_click_that_adds_a_condition_or_a_negation_is_no_input_item(query):
    assert read_spec(query).answers_input is None


def test_the_check_applies_only_to_a_page_showing_one_canvas():
    from tasks.rubrics.checks_offline import item_steps
    spec = read_spec(ORBIT)
    steps = item_steps({"evidence_kind": "answers_input"}, spec, None)
    assert steps is not None and steps[0] == {"expect": "absent", "target": {"canvas": True, "nth": 1}}
    assert steps[-1]["expect"] == "canvas_changes"
    # a short request's input check is as it was: its one canvas is the request's scene
    request = item_steps({"evidence_kind": "answers_input"}, read_spec("A Flappy-Bird clone"), None)
    assert request is not None and request[0]["do"] == "remember"


_TURNS = """
const cv = document.getElementById('view'), g = cv.getContext('2d');
let angle = 0.3, down = null;
function draw() {
  g.fillStyle = '#fff'; g.fillRect(0, 0, cv.width, cv.height);
  g.save(); g.translate(150, 150); g.rotate(angle); g.fillStyle = '#36c'; g.fillRect(-60, -60, 120, 120); g.restore();
}
%s
draw();
"""
_MOUSE = """cv.addEventListener('pointerdown', (e) => { down = e.clientX; });
cv.addEventListener('pointermove', (e) => {
  if (down !== null) { angle += (e.clientX - down) / 100; down = e.clientX; draw(); } });
window.addEventListener('pointerup', () => { down = null; });"""


def page(area: str, script: str, legend: bool = False) -> str:
    extra = '<canvas id="legend" width="120" height="40"></canvas>' if legend else ""
    return (f'```html\n<!DOCTYPE html><html><body>{extra}<div id="{area}"><canvas id="view" width="300" height="300">'
            f'</canvas></div><script>{script}</script></body></html>\n```')


@pytest.fixture(scope="module")
def scored():
    from tasks.env.score import ScoreInput, score_batch
    from tasks.llm.offline import OfflineProvider

    orbit = offline_task("orbit", ORBIT)
    inputs = [ScoreInput("turns", orbit, page("scene-container", _TURNS % _MOUSE)),
              ScoreInput("still", orbit, page("scene-container", _TURNS % "")),
              ScoreInput("two-canvases", orbit, page("scene-container", _TURNS % _MOUSE, legend=True)),
              ScoreInput("still-two-canvases", orbit, page("scene-container", _TURNS % "", legend=True))]
    results = score_batch(inputs, provider=OfflineProvider(), cfg=EnvConfig(runtime=RT))
    return {r.key: r for r in results}, {"orbit": orbit}


def _input_check(results, tasks, key: str, query: str):
    item = next(i.id for i in tasks[query].rubric.dynamic if "answers input" in i.requirement)
    return next(c for c in results[key].check_results if c.item_id == item)


@needs_browser
def test_a_drawing_that_answers_the_mouse_passes_and_its_twin_that_ignores_it_fails(scored):
    results, tasks = scored
    assert _input_check(results, tasks, "turns", "orbit").status == "passed"
    assert results["turns"].reward == 1.0
    still = _input_check(results, tasks, "still", "orbit")
    assert still.status == "failed", still
    assert results["still"].runtime_valid and results["still"].reward < 1.0


@needs_browser
def test_a_page_with_two_canvases_gets_no_verdict_whichever_answers(scored):
    results, tasks = scored
    for key in ("two-canvases", "still-two-canvases"):
        c = _input_check(results, tasks, key, "orbit")
        assert c.status == "inconclusive" and "does not apply" in (c.reason or ""), (key, c)
    assert results["two-canvases"].reward == 1.0
