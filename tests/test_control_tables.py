"""A plan's table of controls (issue 51): ``| ID | Type | Default Value | Min | Max | Step |`` states each control's
default and range for that control alone, which the offline items then carry and their checks compare (the
table wins over the words around a control, which may give the number of something else: "black (at value 0)");
a checkbox checked at first still gets what unchecking it does; and the cap on items per query keeps what a
check compares before what is only looked for, so the last control the plan names keeps its items.

The twins: ``tests/fixtures/env/tables/stated.html``, the page as the table states (clean), and three edits of it
(``BROKEN``): the gray level starting at 0 and the size stopping at 600 (a major on each of the two controls'
items), the size slider that redraws nothing (a major on what moving it does), the grid checkbox that redraws
nothing (a major on what unchecking it does)."""
from __future__ import annotations

from pathlib import Path

import pytest

from schemas.config.env import RuntimeConfig
from schemas.rubric import Task
from tasks.rubrics.checks_offline import drawing_of, item_steps
from tasks.rubrics.offline_items import cap_rank, spec_items
from tasks.rubrics.prompt_spec import read_spec
from tasks.rubrics.prompt_tables import TableRow, stated_default, table_rows
from tests.fixtures.env_inputs import score_fixture_apps

FIX = Path(__file__).parent / "fixtures" / "env" / "tables"
PLAN = """### 1. Components
*   `<label for="slider-size">plot size</label>` `<input type="range" id="slider-size">` `<span id="size-value"></span>`
*   `<label for="checkbox-grid">grid</label>` `<input type="checkbox" id="checkbox-grid">`
*   `<label for="slider-shade">gray level</label>` `<input type="range" id="slider-shade">`
*   `<div id="canvas-container"></div>`: holds the canvas.
### 2. Component IDs and State
| ID | Type | Default Value | Min | Max | Step | Label |
| :--- | :--- | :--- | :--- | :--- | :--- | :--- |
| `slider-size` | range | 400 | 200 | 800 | 1 | plot size |
| `checkbox-grid` | checkbox | checked | - | - | - | grid |
| `slider-shade`| range | 0.5 | 0 | 1 | 0.01 | gray level |
*   **Value Spans**: the span next to the slider (`size-value`) displays the slider's current value.
### 3. Interaction Logic
*   **`slider-size`**: Sets the width and height of the canvas. Changing this value requires resizing the canvas
    and redrawing the scene.
*   **`checkbox-grid`**: If checked (default), draw the grid. Triggers a redraw of the canvas.
*   **`slider-shade`**: The color interpolates from black (at value 0) to blue (at value 1). Triggers a redraw of
    the canvas.
"""
CORRECT = "stated.html"
SIZE_WIRED = "for (const el of [size, grid, shade]) el.addEventListener('input', draw);"
BROKEN = {  # twin -> its edits of the correct page
    "off_table.html": [('value="0.5"', 'value="0"'), ('max="800"', 'max="600"')],
    "dead_size.html": [(SIZE_WIRED, "for (const el of [grid, shade]) el.addEventListener('input', draw);\n"
                        "size.addEventListener('input', () => { document.getElementById('size-value').textContent = "
                        "size.value; });")],
    "dead_grid.html": [(SIZE_WIRED, "for (const el of [size, shade]) el.addEventListener('input', draw);"),
                       ("grid.addEventListener('change', draw);", "")]}
TWINS = (CORRECT, *BROKEN)
CFG = RuntimeConfig(concurrency=2)
needs_browser = pytest.mark.skipif(not Path(CFG.executable_path).exists(),
                                   reason="needs Debian's chromium-headless-shell: scripts/setup-system.sh")


def test_a_table_of_controls_is_read_row_by_row():
    rows = table_rows(PLAN)
    assert rows["slider-size"] == TableRow("slider-size", "range", "400", 200.0, 800.0, 1.0)
    assert rows["checkbox-grid"] == TableRow("checkbox-grid", "checkbox", "checked")
    assert rows["slider-shade"] == TableRow("slider-shade", "range", "0.5", 0.0, 1.0, 0.01)  # no space before "|"


def test_other_headers_and_cells_that_state_nothing():
    table = ("| ID | Type | Initial Value | Min | Max | Step | Label / Description |\n|---|---|---|---|---|---|---|\n"
             '| `select-view` | `select` | "ground" | N/A | N/A | N/A | **view from** |\n'
             "| `check-day` | `checkbox` | `unchecked` | N/A | N/A | N/A | **day** |\n")
    rows = table_rows("* a list item\n\n" + table)
    assert rows["select-view"] == TableRow("select-view", "select", "ground")
    assert rows["check-day"] == TableRow("check-day", "checkbox", "unchecked")
    assert table_rows("| Body | Semi-major Axis (a, AU) |\n|---|---|\n| `earth` | 1.0 |\n") == {}  # data: no id column
    assert stated_default("checkbox", rows["check-day"]) == "unchecked"
    assert stated_default("range", TableRow("x", default="a lot")) is None  # a slider's default is a number
    assert stated_default("button", TableRow("b", default="inactive")) is None


def test_the_table_states_the_controls_the_words_around_them_do_not():
    by_id = {c.id: c for c in read_spec(PLAN).controls}
    size, shade, grid = by_id["slider-size"], by_id["slider-shade"], by_id["checkbox-grid"]
    assert (size.default, size.min, size.max, size.step) == ("400", 200.0, 800.0, 1.0)
    assert (shade.default, shade.min, shade.max, shade.step) == ("0.5", 0.0, 1.0, 0.01)  # not "at value 0"
    assert grid.default == "checked"
    html_first = PLAN.replace('id="slider-size">', 'id="slider-size" value="300" max="900">')
    size = next(c for c in read_spec(html_first).controls if c.id == "slider-size")
    assert (size.default, size.min, size.max) == ("300", 200.0, 900.0)  # the HTML's own attributes come first


def test_a_checkbox_checked_at_first_gets_what_unchecking_it_does():
    items = {(i.role, i.element) for i in spec_items(read_spec(PLAN))}
    assert ("behaviour", "#checkbox-grid") in items and ("control", "#checkbox-grid") in items


def _slider_plan(n: int) -> str:
    rows = "".join(f"| `slider-p{k}` | range | 5 | 0 | 10 | 1 |\n" for k in range(n))
    decls = "".join(f'*   `<input type="range" id="slider-p{k}">` `<span id="p{k}-value"></span>`\n' for k in range(n))
    logic = "".join(f"*   **`slider-p{k}`**: Triggers a redraw of the canvas.\n" for k in range(n))
    return (f"### 1. Components\n{decls}*   `<canvas id=\"plot\"></canvas>`"
            f"\n### 2. State\n| ID | Type | Default Value | Min | Max | Step |\n|---|---|---|---|---|---|\n{rows}"
            "* Each value span shows its slider's current value.\n### 3. Interaction Logic\n" + logic)


def test_the_cap_keeps_what_a_check_compares_for_every_control_first():
    spec = read_spec(_slider_plan(8))
    whole, capped = spec_items(spec), spec_items(spec, max_items=20)
    assert len(whole) == 8 * 3 + 1 and len(capped) == 20  # each slider: its default, what moving it does, its value
    moved = {i.element for i in capped if i.role == "behaviour"}
    assert moved == {f"#slider-p{k}" for k in range(8)}  # the last sliders keep theirs too
    assert {i.element for i in capped if i.role == "readout"} == {f"#p{k}-value" for k in range(8)}
    assert [i for i in whole if i in capped] == capped  # those kept stay in the plan's order
    assert sorted(cap_rank(i) for i in capped) == [0] * 16 + [1] * 4
    assert spec_items(spec, max_items=40) == whole


def _task() -> Task:
    spec = read_spec(PLAN)
    items = spec_items(spec)
    rubric: dict[str, list[dict]] = {"initial_state": [], "dynamic": []}
    for i in items:
        steps = item_steps(i.structure(), spec, drawing_of(spec.controls))
        rows = rubric[i.scope]
        rows.append({"id": f"{i.scope[0].upper()}{len(rows) + 1}", "requirement": i.requirement, "level": i.level,
                     **i.structure(), **({"check": {"version": "1", "steps": steps}} if steps else {})})
    return Task.model_validate({"query_id": "q-tables", "query": PLAN, "rubric": rubric})


def test_each_broken_twin_is_the_correct_page_edited():
    page = (FIX / CORRECT).read_text()
    assert all(page.count(old) == 1 for edits in BROKEN.values() for old, _ in edits)


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tables")
    page = (FIX / CORRECT).read_text()
    (folder / CORRECT).write_text(page)
    for name, edits in BROKEN.items():
        twin = page
        for old, new in edits:
            twin = twin.replace(old, new)
        (folder / name).write_text(twin)
    task = _task()
    ids = {it.requirement: it.id for it in task.rubric.initial_state + task.rubric.dynamic}
    return ids, score_fixture_apps(task, folder, TWINS, CFG)


def _item(ids: dict[str, str], start: str) -> str:
    return next(i for r, i in ids.items() if r.startswith(start))


@needs_browser
def test_the_twins_in_the_browser(scored):
    ids, res = scored
    assert {k: r.runtime_valid for k, r in res.items()} == dict.fromkeys(TWINS, True)
    got = {k: sorted((f.item_id, f.severity) for f in r.findings) for k, r in res.items()}
    assert got[CORRECT] == [] and res[CORRECT].reward == 1.0
    assert got["off_table.html"] == sorted([(_item(ids, "The slider #slider-size"), "major"),
                                            (_item(ids, "The slider #slider-shade"), "major")])
    assert got["dead_size.html"] == [(_item(ids, "Moving the slider #slider-size"), "major")]
    assert got["dead_grid.html"] == [(_item(ids, "Toggling the checkbox #checkbox-grid"), "major")]
    assert all(res[k].reward is not None and res[k].reward < 1.0 for k in TWINS[1:])
