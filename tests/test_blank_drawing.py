"""An empty drawing area (issue 51): a drawing the plan asks to show on load whose area is on screen but has
nothing drawn is a minor finding on that item, read from the browser (probe.js ``canvases``: no script gave
the canvas a context, or its 2D pixels are all one colour, after load and settle, before any action). The twins
in ``tests/fixtures/env/drawing``: the curve drawn on load with an empty overlay canvas in the same area (clean),
the same page drawing only once the slider moves (minor on the item), a WebGL drawing (never read as blank)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from schemas.config.env import RuntimeConfig
from schemas.rubric import Task, judge_payload
from tasks.env.evidence import RuntimeEvidence
from tasks.env.judge_offline import _rubric_layer
from tasks.env.probe_records import ProbeRecord
from tasks.env.records import CheckResult
from tasks.env.rubric_evidence import blank_drawing
from tests.fixtures.env_inputs import score_fixture_apps

FIX = Path(__file__).parent / "fixtures" / "env" / "drawing"
CHECK = {"version": "1", "steps": [{"expect": "count", "target": {"css": "#plot-area", "canvas": False,
                                                                   "drawing": False, "nth": 0}, "at_least": 1}]}
ITEM = {"id": "I1", "requirement": "The drawing area #plot-area is visible when the page loads.",
        "level": "rendering_effect", "check": CHECK, "evidence_kind": "drawing_present", "element": "#plot-area"}
TASK = Task.model_validate({"query_id": "q-plot", "query": "A parabola y = a x^2 drawn in #plot-area; slider #slider-a.",
                            "rubric": {"initial_state": [ITEM], "dynamic": []}})
(JUDGE_ITEM,) = judge_payload(TASK.rubric)
CFG = RuntimeConfig(concurrency=2)
needs_browser = pytest.mark.skipif(not Path(CFG.executable_path).exists(),
                                   reason="needs Debian's chromium-headless-shell: scripts/setup-system.sh")


def _inter(*canvases):
    return ProbeRecord.from_dict({"status": "ok", "canvases": [{"ids": ids, "blank": blank, "context": ctx}
                                                               for ids, blank, ctx in canvases]})


@pytest.mark.parametrize("canvases, minor", [
    ([(["plot", "plot-area"], True, "2d")], True),  # the only canvas in the area is empty
    ([(["plot", "plot-area"], True, None), (["overlay", "plot-area"], True, "2d")], True),
    ([(["plot", "plot-area"], False, "2d"), (["overlay", "plot-area"], True, "2d")], False),  # an empty overlay layer
    ([(["plot", "plot-area"], None, "webgl")], False),  # WebGL pixels are not read: never blank
    ([(["other"], True, "2d")], False),  # an empty canvas elsewhere says nothing of this area
    ([], False),  # no canvas in it (an SVG or DOM drawing): not this evidence's to judge
])
def test_an_empty_drawing_area_is_a_minor_finding_only_when_every_canvas_in_it_is_blank(canvases, minor):
    got = blank_drawing(JUDGE_ITEM, _inter(*canvases))
    assert (got is not None and got[0] == "minor") is minor
    layer, undecided = _rubric_layer("<p></p>", [JUDGE_ITEM], RuntimeEvidence(interaction=_inter(*canvases)),
                                     [CheckResult("I1", "passed")])
    assert undecided == [] and [f.item_id for f in layer.minor] == (["I1"] if minor else [])
    assert layer.major == layer.critical == []


def test_a_failed_check_stays_major_and_other_kinds_of_item_are_not_this_evidences():
    inter = _inter((["plot", "plot-area"], True, "2d"))
    layer, _ = _rubric_layer("<p></p>", [JUDGE_ITEM], RuntimeEvidence(interaction=inter),
                             [CheckResult("I1", "failed", 0, "count", "absent")])
    assert [f.item_id for f in layer.major] == ["I1"] and layer.minor == []
    control = JUDGE_ITEM.model_copy(update={"evidence_kind": "control_default"})
    assert blank_drawing(control, inter) is None
    assert blank_drawing(JUDGE_ITEM, replace(inter, status="hung")) is None


@pytest.fixture(scope="module")
def scored():
    return score_fixture_apps(TASK, FIX, ("drawn.html", "blank.html", "webgl.html"), CFG)


@needs_browser
def test_the_twins_in_the_browser(scored):
    drawn, blank, webgl = scored["drawn.html"], scored["blank.html"], scored["webgl.html"]
    for r in (drawn, blank, webgl):
        assert r.runtime_valid is True, (r.key, r.findings)
    assert drawn.findings == [] and drawn.reward == 1.0  # the empty overlay beside the drawn curve is no finding
    assert webgl.findings == [] and webgl.reward == 1.0
    hits = [f for f in blank.findings if f.item_id == "I1"]
    assert [f.severity for f in hits] == ["minor"] and "#plot-area is empty" in hits[0].description
    assert blank.findings == hits and 0.0 < blank.reward < 1.0  # the one item, met less the minor penalty
