"""What decides a rubric item travels as typed fields (issue #41): each item the offline rules build carries its
evidence kind, element, trigger and effect from the query's structure to the rubric_items rows, the compact export
and the judge payload; an item the rules know no structure of (a sentence's rule) carries none, and neither does
an LLM item, which stays valid. The offline judge and the checks read the fields; the judge reads an item's
words only when it has none."""
from __future__ import annotations

import json

import pytest

from schemas.rubric import EVIDENCE_KINDS, STRUCTURE, CompactRubric, JudgeItem, RubricItem, judge_dicts
from tasks.env.evidence import RuntimeEvidence
from tasks.env.probe_records import ProbeRecord
from tasks.env.rubric_evidence import item_decision
from tasks.rubrics.checks import reference_items
from tasks.rubrics.checks_offline import offline_checks
from tasks.rubrics.offline_items import EVIDENCE_OF_ROLE, ROLES
from tests.fixtures.rubrics.support import ScriptedProvider, offline_reference
from tests.test_rubrics_offline import PLAN, PROSE, _items

# (query, the start of an item's requirement, (evidence_kind, element, trigger, effect))
FIELDS = [
    (PLAN, "The slider #slider-length", ("control_default", "#slider-length", None, None)),
    (PLAN, "The display #period-display shows", ("output_text", "#period-display", None, None)),
    (PLAN, "The canvas #pendulum-canvas is visible", ("drawing_present", "#pendulum-canvas", None, None)),
    (PLAN, "Moving the slider #slider-length", ("operate_control", "#slider-length", "#slider-length",
                                                ["#length-value", "#period-display", "drawing"])),
    (PLAN, "Clicking the button #btn-kick", ("operate_control", "#btn-kick", "#btn-kick", ["drawing"])),
    (PLAN, "The display #length-value shows the value", ("readout", "#length-value", "#slider-length",
                                                         ["#length-value"])),
    ("a bouncing DVD logo", "The page draws the requested scene", ("shown_on_load", None, None, None)),
    ("a bouncing DVD logo", "Something on the page moves by itself", ("motion_by_itself", None, None, None)),
    ("A Flappy-Bird clone", "The scene answers input", ("answers_input", None, None, None)),
    (PROSE, "The page has a button labelled", ("labelled_present", "Add", None, None)),
    (PROSE, "Let the user add stops", (None, None, None, None)),  # a sentence's rule: no structure known
]


@pytest.mark.parametrize("query,start,expected", FIELDS, ids=[f[1][:30] for f in FIELDS])
def test_each_offline_item_carries_what_decides_it(query, start, expected):
    item = next(i for i in _items(query) if i["requirement"].startswith(start))
    assert (item["evidence_kind"], item["element"], item["trigger"], item["effect"]) == expected
    ref = json.loads(item["row"]["reference_json"])
    compact = CompactRubric.model_validate_json(item["row"]["compact_json"])
    judged = {j["id"]: j for j in json.loads(item["row"]["judge_payload_json"])}[item["id"]]
    for form in (next(r for s in ("initial_state", "dynamic") for r in ref[s] if r["id"] == item["id"]),
                 next(c.model_dump() for c in compact.initial_state + compact.dynamic if c.id == item["id"]), judged):
        assert tuple(form.get(k) for k in ("evidence_kind", "element", "trigger", "effect")) == expected


def test_every_role_the_rules_know_the_structure_of_has_a_kind_of_the_vocabulary():
    from tasks.rubrics.capabilities import Checkable, evidence_table

    # a role's kind, or a synthesized query's capability's (a sentence's role has none: its spec may give one)
    capability_kinds = {e.kind for e in evidence_table().values() if isinstance(e, Checkable)}
    assert set(EVIDENCE_OF_ROLE.values()) | capability_kinds == set(EVIDENCE_KINDS)
    assert set(ROLES) - set(EVIDENCE_OF_ROLE) == {"shown", "rule"}  # a sentence's words: no structure


def test_an_item_without_the_fields_stays_valid_and_its_judge_payload_unchanged():
    old = {"id": "I1", "requirement": "r", "verification": "v", "source_module": "m", "covered_requirement_ids": [],
           "query_evidence": "e", "rubric_level": "core_module"}
    assert RubricItem.model_validate(old).evidence_kind is None
    rubric = CompactRubric.model_validate({"initial_state": [{"id": "I1", "requirement": "r", "level": "core_module"}],
                                           "dynamic": []})
    assert judge_dicts(rubric) == [{"id": "I1", "scope": "initial_state", "requirement": "r", "level": "core_module"}]


# -- the readers read the fields; the sentence only when an item has none (tasks/env/rubric_evidence.py) ------
APP = '<html><body><button id="go">Go</button><canvas></canvas></body></html>'
_OK = {"status": "ok"}
RUNTIMES = {"still": {"interaction": {**_OK, "liveness": {"animated": False, "visual_change": False, "gap_s": 1}}},
            "moving": {"interaction": {**_OK, "liveness": {"animated": True}}},
            "no_change": {"interaction": {**_OK, "actions": [{"i": 0, "kind": "click", "outcome": "ok", "changed": []}],
                                          "planned": 1}},
            "blank": {"blank_body": True}, "none": None}
RUNTIMES = {k: None if v is None else RuntimeEvidence(**{**v, **({"interaction": ProbeRecord.from_dict(v["interaction"])}
                                                                  if "interaction" in v else {})})
            for k, v in RUNTIMES.items()}
REWORDED = "Reworded by hand: no template's words."
# (requirement, fields, runtime, expected severity; None: undecided)
DECISIONS = [
    ("The drawing moves by itself over time.", {}, "still", "major"),  # no fields: the sentence, as before
    (REWORDED, {}, "still", None),  # no fields and no words the fallback knows: undecided
    (REWORDED, {"evidence_kind": "motion_by_itself"}, "still", "major"),
    (REWORDED, {"evidence_kind": "motion_by_itself"}, "moving", "met"),
    ("The scene answers input: a key press, click or drag changes what is shown.", {}, "no_change", "major"),
    (REWORDED, {"evidence_kind": "answers_input"}, "no_change", "major"),
    ("The page draws the requested scene (a kite) when it loads.", {}, "blank", "critical"),
    (REWORDED, {"evidence_kind": "shown_on_load"}, "blank", "critical"),
    ("The slider #speed is on the page.", {}, "none", "critical"),
    (REWORDED, {"evidence_kind": "control_default", "element": "#speed"}, "none", "critical"),
    (REWORDED, {"evidence_kind": "operate_control", "element": "#go", "trigger": "#go", "effect": ["#out"]},
     "none", "critical"),  # the effect's output is missing
    ('The page has a button labelled "Add".', {}, "none", "critical"),
    (REWORDED, {"evidence_kind": "labelled_present", "element": "Add"}, "none", "critical"),
    (REWORDED, {"evidence_kind": "labelled_present", "element": "Go"}, "none", None),
]


@pytest.mark.parametrize("requirement,fields,runtime,expected", DECISIONS,
                         ids=[f"{d[0][:24]}-{d[1].get('evidence_kind')}-{d[2]}" for d in DECISIONS])
def test_the_judge_decides_an_item_by_its_fields_else_by_its_words(requirement, fields, runtime, expected):
    item = JudgeItem.model_validate({"id": "D1", "scope": "dynamic", "requirement": requirement, "level": "core_module",
                                     **fields})
    decided = item_decision(item, RUNTIMES[runtime], APP)
    assert (decided[0] if decided else None) == expected


def test_the_checks_read_the_fields_not_the_requirement():
    """Every plan item's check is the same with its requirement reworded; an item stored without fields keeps its
    check when its requirement is the rules' own sentence, and gets none reworded (nothing knows it then)."""
    row = _items(PLAN)[0]["row"]
    items = reference_items(json.loads(row["reference_json"]))
    checks = lambda its: offline_checks({"items": json.dumps(its), "expanded_query": PLAN})["checks"]  # noqa: E731
    built = checks(items)
    assert len(built) >= 10 and {c["item_id"] for c in built} >= {"I1", "D1", "D2", "D3"}
    assert checks([{**i, "requirement": REWORDED} for i in items]) == built
    stored = [{k: v for k, v in i.items() if k not in STRUCTURE} for i in items]  # a rubric from before the fields
    assert checks(stored) == built
    assert checks([{**i, "requirement": REWORDED} for i in stored]) == []


# -- an LLM's items with the fields are decided as the rules' items ------------------------------------------
def _as_a_model_writes(item: dict, requirement: str) -> dict:
    """A final item as a model answers the filtering stage: its own words, the fields copied from the candidate."""
    keep = ("source_module", "covered_requirement_ids", "query_evidence", "rubric_level", *STRUCTURE)
    return {"id": item["id"], "requirement": requirement, "verification": "Look at the page.",
            "from_candidates": ["C1"], **{k: item[k] for k in keep}}


def test_an_llm_item_with_the_fields_is_checked_and_judged_as_the_rules_item():
    rules = {i["requirement"].split(" (")[0]: i for i in _items(PLAN)}
    control, behaviour = rules["The slider #slider-length"], rules["Moving the slider #slider-length"]
    answer = {"initial_state": [_as_a_model_writes(control, "The length starts at 1.5 m.")],
              "dynamic": [_as_a_model_writes(behaviour, "Dragging the length changes the period shown.")]}

    def reply(req, _messages):  # the model answers the filtering stage; the rules answer the others
        return json.dumps(answer if req.stage == "rubric_references" else req.offline_rule(req.variables))

    llm = offline_reference("q", PLAN, provider=ScriptedProvider(reply))
    ref = json.loads(llm["reference_json"])
    assert [i["evidence_kind"] for i in ref["initial_state"] + ref["dynamic"]] == ["control_default", "operate_control"]
    checks = lambda its: {c["item_id"]: c["check"] for c in offline_checks(  # noqa: E731
        {"items": json.dumps(its), "expanded_query": PLAN})["checks"]}
    theirs, ours = checks(reference_items(ref)), checks(reference_items(json.loads(control["row"]["reference_json"])))
    assert theirs == {"I1": ours[control["id"]], "D1": ours[behaviour["id"]]}
    payload = {i["id"]: JudgeItem.model_validate(i) for i in json.loads(llm["judge_payload_json"])}
    broken = APP.replace('id="go"', 'id="slider-length"')
    for html in (APP, broken):
        for runtime in RUNTIMES.values():
            for mine, rule_item in (("I1", control), ("D1", behaviour)):
                judged = JudgeItem.model_validate({**rule_item, "level": rule_item["rubric_level"]})
                assert item_decision(payload[mine], runtime, html) == item_decision(judged, runtime, html)
