"""The offline judge on evidence: what decides an item (a check, an id the source lacks, the probe, motion,
input, a blank page) and the undecided rule: an item no evidence speaks to is neither met nor unmet, so it is
left out of the rubric score's weights and listed in the judgment row; a model judge keeps the paper's rule."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemas.config.env import EnvConfig, RewardConfig, RuntimeConfig
from schemas.llm.diagnosis import Diagnosis
from schemas.rubric import JudgeItem, Task
from tasks.env import rewards as R
from tasks.env.score_tables import judgment_row
from tasks.env.evidence import RuntimeEvidence
from tasks.env.probe_records import ProbeRecord
from tasks.env.rubric_evidence import item_decision, named_ids
from tasks.env.score import ScoreInput, score_batch
from tasks.llm.offline import OfflineProvider
from tests.fixtures.rubrics.support import ScriptedProvider

FIX = Path(__file__).parent / "fixtures" / "env"
TASK = Task.model_validate_json((FIX / "task_counter.json").read_text())
CLEAN = (FIX / "clean.txt").read_text()
NO_BROWSER = EnvConfig(runtime=RuntimeConfig(enabled=False))
OK_PAGE = {"status": "ok", "blank_body": False, "interaction": None}


def _item(requirement: str, scope: str = "initial_state") -> JudgeItem:
    return JudgeItem.model_validate({"id": "X", "requirement": requirement, "scope": scope, "level": "correct_rule"})


@pytest.mark.parametrize("requirement, html, runtime, expect", [
    ("The slider #slider-v0 is on the page", "<input id='other'>", None, "critical"),  # the id is nowhere
    ("The slider #slider-v0 is on the page", "<script>s.id = 'slider-v0'</script>", None, None),  # a script makes it
    ("The bob is filled #d9534f", "<canvas></canvas>", OK_PAGE, None),  # a colour is no element id
    ('The page has a button labelled "Save".', "<button>+1</button>", OK_PAGE, "critical"),  # no such label
    ('The page has a button labelled "Save".', "<dialog><button>save</button></dialog>", OK_PAGE, None),  # hidden
    ('The display #out shows "22.7319" when the page loads.', "<span id='out'></span>", OK_PAGE, None),  # computed
    ("The page draws the requested scene (a DVD logo) when it loads.", "<canvas></canvas>",
     {**OK_PAGE, "blank_body": True}, "critical"),
    ("The page draws the requested scene (a DVD logo) when it loads.", "<canvas></canvas>", OK_PAGE, None),
    ("Something on the page moves by itself over time (a DVD logo).", "<canvas></canvas>",
     {**OK_PAGE, "interaction": {"status": "ok", "liveness": {"animated": False, "visual_change": False}}}, "major"),
    ("Something on the page moves by itself over time (a DVD logo).", "<canvas></canvas>",
     {**OK_PAGE, "interaction": {"status": "ok", "liveness": {"animated": True, "visual_change": True}}}, "met"),
    ("The scene answers input: a key press, click or drag changes what is shown (Pong).", "<canvas></canvas>",
     {**OK_PAGE, "interaction": {"status": "ok", "planned": 2,
                                 "actions": [{"i": i, "kind": "key", "outcome": "ok", "changed": []} for i in range(2)]}},
     "major"),
    ("The page explains the rules in a short help text.", "<p>help</p>", OK_PAGE, None),  # nothing speaks to it
])
def test_evidence_decides_or_leaves_the_item_undecided(requirement, html, runtime, expect):
    scope = "dynamic" if "answers input" in requirement or "moves" in requirement else "initial_state"
    if runtime is not None and runtime["interaction"] is not None:  # the probe's record, as its JSON reads back
        runtime = {**runtime, "interaction": ProbeRecord.from_dict(runtime["interaction"])}
    got = item_decision(_item(requirement, scope), None if runtime is None else RuntimeEvidence(**runtime), html)
    assert (got[0] if got else None) == expect
    if got and got[0] != "met":
        assert "heuristic" in got[2]


def test_an_item_names_elements_by_id_never_by_colour():
    assert named_ids("Moving #slider-a updates #value-a, drawn in #fff and #d9534f") == ["slider-a", "value-a"]


def test_undecided_items_leave_the_rubric_score_weights():
    levels = {"I1": "core_module", "D1": "correct_rule", "D2": "rendering_effect"}  # weights 3, 2, 1
    cfg = RewardConfig()
    assert R.rubric_score(levels, {"D1": "major"}, cfg) == pytest.approx(4 / 6)
    assert R.rubric_score(levels, {"D1": "major"}, cfg, undecided={"D2"}) == pytest.approx(3 / 5)
    assert R.rubric_score(levels, {"D1": "major"}, cfg, undecided={"D1", "D2"}) == pytest.approx(3 / 5)  # found: counts
    assert R.rubric_score(levels, {}, cfg, undecided=set(levels)) == 1.0  # none decided: nothing shown unmet
    assert R.reward("hierarchical", True, True, True, levels, {"D1": "major"}, cfg, {"D2"}) == pytest.approx(
        cfg.rubric_floor + (cfg.rubric_max - cfg.rubric_floor) * 3 / 5)


def test_the_judgment_row_lists_the_undecided_items():
    (r,) = score_batch([ScoreInput("k", TASK, CLEAN)], provider=OfflineProvider(), cfg=NO_BROWSER)
    ids = [i.id for i in TASK.rubric.initial_state + TASK.rubric.dynamic]
    assert r.judge.provider == "offline" and r.undecided == ids and r.to_json()["undecided"] == ids
    assert judgment_row(r)["undecided_item_ids"] == ids


def test_a_model_judge_keeps_the_papers_rule():
    """A model's reply that lists items as undecided has them met all the same: its schema has no such field."""
    reply = {name: {"name": name, "critical": [], "major": [], "minor": []}
             for name in ("static_check", "code_simulation", "rubric_alignment")}
    reply["rubric_alignment"]["major"] = [{"item_id": "D1", "description": "adds 2"}]
    provider = ScriptedProvider(lambda _req, _msgs: json.dumps({**reply, "undecided": ["I1", "I2", "I3", "D2"]}))
    (r,) = score_batch([ScoreInput("k", TASK, CLEAN)], provider=provider, cfg=NO_BROWSER)
    assert r.undecided == [] and r.reward == pytest.approx(0.3 + 0.7 * 9 / 11)
    assert "undecided" not in json.dumps(Diagnosis.llm_json_schema({"valid_ids": TASK.rubric.ids()}))
