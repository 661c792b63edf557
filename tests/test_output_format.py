"""A display's stated line format (issue 51): a plan that says a display's lines are "formatted as: `s  value`"
gets an offline item, decided by a check: every line of the display's text has as many parts set apart by
whitespace as the format has words. The twins in ``tests/fixtures/env/format``: the columns as stated (clean), the
round run into its code ("20A5F51E" where round 2 and its code are meant: the check fails, a major finding on the
item), and columns set apart by the layout only (a fixed-width cell: the check does not read such a display, so
no finding)."""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from schemas.config.env import RuntimeConfig
from schemas.rubric import Task
from tasks.rubrics.checks_offline import drawing_of, item_steps
from tasks.rubrics.offline_items import spec_items
from tasks.rubrics.prompt_formats import line_pattern, stated_formats
from tasks.rubrics.prompt_spec import read_spec
from tests.fixtures.env_inputs import score_fixture_apps

FIX = Path(__file__).parent / "fixtures" / "env" / "format"
PLAN = """### 1. Components
*   `<input type="range" id="rounds">`: the rounds, from 2 to 8.
*   `<pre id="log"></pre>`: the results, one line per round.
### 2. Logic
*   For each round a new line is appended to the `#log` element, formatted as: `s      round_code`. The round
    number is left-padded with spaces.
"""
TWINS = ("columns.html", "glued.html", "spans.html")
CFG = RuntimeConfig(concurrency=2)
needs_browser = pytest.mark.skipif(not Path(CFG.executable_path).exists(),
                                   reason="needs Debian's chromium-headless-shell: scripts/setup-system.sh")


def _matches(template: str, text: str) -> bool:
    return re.search(line_pattern(template), text.strip(), re.I) is not None


def test_the_plan_states_a_format_for_one_display_only_with_two_or_more_words():
    got = stated_formats(PLAN, {"log"})
    assert [(f.element, f.template) for f in got] == [("log", "s      round_code")]
    assert stated_formats(PLAN, {"other"}) == []  # a line naming no display of the plan's
    assert stated_formats("* The `#log` is formatted as: `value`.", {"log"}) == []  # one value fixes no columns
    assert stated_formats("* `#a` and `#b`, formatted as: `x  y`.", {"a", "b"}) == []  # which display: not said


@pytest.mark.parametrize("text, ok", [
    (" 2    0A5F51E8\n 4    BECBC9AF\n 8    39886F8E", True),
    ("Round  Code\n 2    0A5F51E8\n\n 4    BECBC9AF", True),  # a header line of any form, blank lines between
    ("step 2: 0A5F51E8\nstep 4: BECBC9AF", True),  # more parts than the format's words: a label is no finding
    ("     20A5F51E8\n     4BECBC9AF\n     839886F8E", False),  # the round run into its code
    ("     20A5F51E8\n 4    BECBC9AF", True),  # the first line could be a header: one glued line is no finding
    (" 2    0A5F51E8\n 4    BECBC9AF\n     839886F8E", False),
    ("", False),
])
def test_every_line_has_the_formats_parts_set_apart(text, ok):
    assert _matches("s      round_code", text) is ok


def test_a_failing_text_costs_linear_time():
    text = "\n".join(["a b c d e f g h   "] * 4000) + "\nglued"
    started = time.perf_counter()
    assert not _matches("s  code", text)
    assert time.perf_counter() - started < 1.0


def test_the_item_and_its_check_come_from_the_plan():
    spec = read_spec(PLAN)
    items = [i for i in spec_items(spec) if i.role == "format"]
    assert len(items) == 1 and items[0].structure()["evidence_kind"] == "output_format"
    assert items[0].element == "#log" and items[0].level == "rendering_effect"
    steps = item_steps(items[0].structure(), spec, drawing_of(spec.controls))
    assert steps == [{"expect": "text", "target": {"css": "#log:not(:has(*))"},
                      "matches": line_pattern("s      round_code")}]
    assert not [i for i in spec_items(read_spec(PLAN.replace("formatted as", "shown as"))) if i.role == "format"]


@pytest.fixture(scope="module")
def scored():
    spec = read_spec(PLAN)
    item = next(i for i in spec_items(spec) if i.role == "format")
    check = {"version": "1", "steps": item_steps(item.structure(), spec, drawing_of(spec.controls))}
    task = Task.model_validate({"query_id": "q-rounds", "query": PLAN, "rubric": {"initial_state": [
        {"id": "I1", "requirement": item.requirement, "level": item.level, "check": check, **item.structure()}],
        "dynamic": []}})
    return score_fixture_apps(task, FIX, TWINS, CFG)


@needs_browser
def test_the_twins_in_the_browser(scored):
    assert {k: r.runtime_valid for k, r in scored.items()} == dict.fromkeys(TWINS, True)
    columns, glued, spans = (scored[n] for n in TWINS)
    assert columns.findings == [] and columns.reward == 1.0
    assert spans.findings == [] and spans.reward == 1.0  # set apart by the layout: not read, no finding
    assert [(f.item_id, f.severity) for f in glued.findings] == [("I1", "major")]
    assert glued.reward is not None and glued.reward < 1.0
