"""Severity from evidence (pure): which failures the interaction probe caused block the app, and which are a
defect of the one control whose handler threw (a minor code_simulation finding plus a major one on its item)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from schemas.llm.diagnosis import Diagnosis
from schemas.rubric import JudgeItem
from tasks.env.evidence import Evidence, RuntimeEvidence
from tasks.env.judge_diagnosis import item_for_control, with_observed_findings
from tasks.env.probe_records import Action, Liveness, ProbeError, ProbeRecord
from tasks.env.records import Failure, LoadErrorsVerdict, PageError
from tasks.env.severity import classify_failures

ACTIONS = [{"i": 0, "kind": "click", "target_desc": "button.go", "target_index": 4, "tag": "button", "label": "Start"},
           {"i": 1, "kind": "click", "target_desc": "button.go", "target_index": 5, "tag": "button", "label": "Boost"},
           {"i": 2, "kind": "fill", "target_desc": "input#mass-slider", "target_index": 6, "tag": "input", "label": "5"},
           {"i": 3, "kind": "key", "target_desc": "document", "label": "ArrowLeft"},
           {"i": 4, "kind": "key", "target_desc": "document", "label": "ArrowRight"},
           {"i": 5, "kind": "drag", "target_desc": "canvas#c", "target_index": 7, "tag": "canvas", "handled": False,
            "label": ""}]  # a bare canvas (no listener): not a control of the app


def acts(dicts):
    return [Action.from_dict(d) for d in dicts]


def err(action, sync=True, message="x is undefined"):
    return {"action": action, "sync": sync, "kind": "error", "name": "TypeError", "message": message,
            "offset": 10, "caused": True}


def inter(errors=(), hang=None, idle_rafs=0, after_rafs=None):
    return ProbeRecord.from_dict({"status": "ok", "actions": ACTIONS, "errors": list(errors), "hang": hang,
                                  "liveness": {"rafs": idle_rafs, "draws": 0},
                                  "loop_after": {} if after_rafs is None else {"rafs": after_rafs, "draws": 0}})


def blocking(ev, rule="evidence"):
    return [(f.label, f.blocking) for f in classify_failures(ev, rule)]


def test_an_error_in_one_controls_handler_is_confined_and_the_gate_rule_blocks_it():
    assert blocking(inter([err(1)])) == [("Boost", False)]
    assert blocking(inter([err(1)]), "gate") == [("Boost", True)]
    # keys are one control, the keyboard: errors on two keys are one failing control of four
    assert blocking(inter([err(3, message="a"), err(4, message="b")])) == [("ArrowLeft", False), ("ArrowRight", False)]


def test_failures_on_most_controls_block():
    got = classify_failures(inter([err(0, message="a"), err(1, message="b"), err(2, message="c")]), "evidence")
    assert all(f.blocking for f in got) and "3 of 4" in got[0].why
    assert blocking(inter([err(0, message="a"), err(1, message="b")])) == [("Start", False), ("Boost", False)]  # 2 of 4
    # one message thrown by three controls (reported once) is three failing controls
    assert blocking(inter([err(0), err(1), err(2)])) == [("Start", True)]
    # a control's only siblings being bare canvases: the keyboard is the app's one control
    keys_only = replace(inter([err(0)]), actions=acts({**a, "i": k} for k, a in enumerate(ACTIONS[3:])))
    assert blocking(keys_only) == [("ArrowLeft", True)]


def test_a_deferred_error_after_the_controls_effect_is_not_a_failing_control():
    # the held-out app: one button shows its hint, then a helper on setTimeout(0) throws (sync false). The hint
    # showed, so the one control did not fail its user: confined, not "most controls (1 of 1)"
    one = [{"i": 0, "kind": "click", "target_desc": "button#hint", "target_index": 3, "tag": "button",
            "label": "Show hint", "outcome": "ok", "changed": ["m"]}]
    shown = replace(inter([err(0, sync=False)]), actions=acts(one))
    assert blocking(shown) == [("Show hint", False)]
    # the twins that still block: the handler itself threw, or the deferred error came and nothing showed
    assert blocking(replace(shown, errors=[ProbeError.from_dict(err(0, sync=True))])) == [("Show hint", True)]
    assert blocking(replace(shown, actions=acts([{**one[0], "changed": []}]))) == [("Show hint", True)]
    # the probe's own fill moves only form values and the scroll: no effect of the app's
    assert blocking(replace(shown, actions=acts([{**one[0], "changed": ["v", "s"]}]))) == [("Show hint", True)]


def test_a_submit_that_reloads_the_page_blocks():
    form = inter()
    form.actions = acts([{**ACTIONS[0], "submit": {"form": "form#f", "action_attr": None}}, ACTIONS[1], ACTIONS[2]])
    assert blocking(form) == [("Start", True)]


def test_a_hang_and_an_error_that_stops_the_main_loop_block():
    hang = {"action": 1, "action_kind": "click", "target": "button#boost", "label": "Boost", "offset": 3}
    assert blocking(inter(hang=hang)) == [("Boost", True)]
    stopped = classify_failures(inter([err(1, sync=False)], idle_rafs=20, after_rafs=0), "evidence")
    assert stopped[0].blocking and "main loop stopped" in stopped[0].why
    # the twins: the loop still runs after it; an error raised inside the handler itself; an app with no loop
    assert blocking(inter([err(1, sync=False)], idle_rafs=20, after_rafs=18)) == [("Boost", False)]
    assert blocking(inter([err(1, sync=True)], idle_rafs=20, after_rafs=0)) == [("Boost", False)]
    assert blocking(inter([err(1, sync=False)], idle_rafs=0, after_rafs=0)) == [("Boost", False)]


def test_an_unknown_rule_names_the_choices():
    with pytest.raises(ValueError, match="gate, evidence"):
        classify_failures(inter([err(1)]), "strict")


ITEMS = [JudgeItem(level="correct_rule", **i) for i in (
    {"id": "I1", "scope": "initial_state", "requirement": "A Boost button is shown"},
    {"id": "D1", "scope": "dynamic", "requirement": "Clicking Start starts the simulation"},
    {"id": "D2", "scope": "dynamic", "requirement": "Clicking Boost doubles the speed"},
    {"id": "D3", "scope": "dynamic", "requirement": "Dragging the mass slider changes the mass of the ball"})]


@pytest.mark.parametrize("failure, item", [
    (Failure("error", label="Boost", target="button#boost"), "D2"),  # named by its label (a dynamic item, not the display one)
    (Failure("error", label="5", target="input#mass-slider"), "D3"),  # a slider's label is its value: its id's words decide
    (Failure("error", label="Go", target="button#go"), None),  # no item speaks of it
])
def test_the_item_a_control_serves(failure, item):
    got = item_for_control(ITEMS, failure)
    assert (got.id if got else None) == item


def test_an_item_with_fields_is_matched_by_the_elements_it_names_not_its_words():
    # the control #massSlider: the gravity item's sentence speaks of the mass, but the element it names is #gravity;
    # the item about #mass-range names no control in words. Matching the sentence put a major finding on the wrong item
    fielded = [JudgeItem(level="correct_rule", **i) for i in (
        {"id": "F1", "scope": "dynamic", "evidence_kind": "operate_control", "trigger": "#gravity",
         "requirement": "Dragging the gravity slider changes how fast the mass falls"},
        {"id": "F2", "scope": "dynamic", "evidence_kind": "operate_control", "trigger": "#mass-range",
         "requirement": "The ball's weight follows its control"})]
    assert item_for_control(fielded, Failure("error", label="5", target="input#massSlider")).id == "F2"
    assert item_for_control(fielded, Failure("error", label="Go", target="button#go")) is None


def test_a_confined_failure_is_a_minor_simulation_finding_and_a_major_one_on_its_item():
    html = "<script>\nboost.onclick = () => {\n  out.textContent = state.speed.toFixed(2);\n};\n</script>"
    f = Failure("error", 1, "click", "button#boost", "Boost", name="TypeError", message="toFixed of undefined",
                offset=html.index("out.text"), blocking=False, why="confined to this control's handler")
    empty = Diagnosis.model_validate({k: {"name": k} for k in ("static_check", "code_simulation", "rubric_alignment")})
    out = with_observed_findings(empty, html, [f], ITEMS)
    (sim,) = out.code_simulation.minor
    assert out.code_simulation.major == [] and sim.code_quotes == ["out.textContent = state.speed.toFixed(2);"]
    (item,) = out.rubric_alignment.major
    assert item.item_id == "D2" and item.scope == "dynamic" and item.code_quotes == sim.code_quotes
    # one finding per item: a judge's minor one on D2 gives way, a judge's critical one stays alone
    judged = Diagnosis.model_validate({"static_check": {"name": "static_check"},
                                       "code_simulation": {"name": "code_simulation"},
                                       "rubric_alignment": {"name": "rubric_alignment",
                                                            "minor": [{"item_id": "D2", "description": "slow"}],
                                                            "critical": [{"item_id": "D1", "description": "x"}]}})
    again = with_observed_findings(judged, html, [f, replace(f, label="Start", target="button#start")], ITEMS)
    assert [x.item_id for x in again.rubric_alignment.major] == ["D2"] and again.rubric_alignment.minor == []
    assert [x.item_id for x in again.rubric_alignment.critical] == ["D1"]
    blocking_one = with_observed_findings(empty, html, [replace(f, blocking=True)], ITEMS)
    assert len(blocking_one.code_simulation.major) == 1 and blocking_one.rubric_alignment.major == []


def test_the_judge_prompt_says_which_failures_block():
    from tasks.env.judge import observed_facts

    html = "<html>\n<body>\n<button>Boost</button>\n<script>\nnull.go();\n</script></body></html>"
    rt = RuntimeEvidence(status="ok", interaction=inter([err(1)]))
    confined = observed_facts(html, Evidence(runtime=rt, failures=tuple(classify_failures(rt.interaction, "evidence"))))
    assert "click on 'Boost' throws TypeError: x is undefined (line 2; confined to this control's handler" in confined
    gate = observed_facts(html, Evidence(runtime=rt, failures=tuple(classify_failures(rt.interaction, "gate"))))
    assert "(line 2; blocking: an interaction error fails the runtime gate)" in gate


def acted(changed_by_action, status="ok", animated=False):
    """Probe evidence after an error at load: ``changed_by_action`` maps an ACTIONS index to what it changed."""
    return ProbeRecord.from_dict({"status": status, "errors": [], "liveness": {"animated": animated},
                                  "actions": [{**a, "outcome": "ok", "changed": changed_by_action.get(a["i"], [])}
                                              for a in ACTIONS]})


def test_an_error_at_load_blocks_only_when_nothing_answers_after_it():
    from tasks.env.severity import load_errors_verdict

    # a control that changed the DOM or a canvas answers; the probe's own fill changes values ('v'), which does not
    assert load_errors_verdict(acted({1: ["m"]}), "evidence") == LoadErrorsVerdict(
        False, "the app still answers input after the error: 1 of 4 controls used changed the page")
    assert not load_errors_verdict(acted({5: ["m"], 0: ["c"]}), "evidence").blocking
    dead = load_errors_verdict(acted({2: ["v"], 0: ["s"]}), "evidence")
    assert dead == LoadErrorsVerdict(True, "none of the 4 controls used changed the page after the error")
    # no control: motion by itself decides; a hang or no probe run blocks; the gate rule always blocks
    bare = replace(acted({}), actions=acts([ACTIONS[5]]))
    assert load_errors_verdict(replace(bare, liveness=Liveness(animated=True)), "evidence").blocking is False
    assert load_errors_verdict(bare, "evidence").blocking is True
    assert load_errors_verdict(acted({1: ["m"]}, status="hung"), "evidence").blocking is True
    assert load_errors_verdict(None, "evidence").blocking is True
    assert load_errors_verdict(acted({1: ["m"]}), "gate").blocking is True
    with pytest.raises(ValueError, match="load_error_rule"):
        load_errors_verdict(None, "strict")


def test_an_error_at_load_that_does_not_block_is_a_minor_simulation_finding_and_the_prompt_says_so():
    from tasks.env.judge import observed_facts
    from tasks.env.judge_offline import _simulation_layer

    html = "<html>\n<script>\nconst c = color(1);\n</script></html>"
    rt = RuntimeEvidence(status="page_error", interaction=acted({1: ["m"]}), page_errors=[
        PageError("ReferenceError", "color is not defined", offset=html.index("color"))])
    answers = LoadErrorsVerdict(False, "the app still answers input after the error: 1 of 4 controls used changed the page")
    layer = _simulation_layer(html, rt, answers)
    assert layer.critical == [] and "not blocking: the app still answers" in layer.minor[0].explanation
    assert layer.minor[0].code_quotes == ["const c = color(1);"]
    assert len(_simulation_layer(html, rt, LoadErrorsVerdict(True, "x")).critical) == 1
    assert len(_simulation_layer(html, rt).critical) == 1  # unmarked errors block
    facts = observed_facts(html, Evidence(runtime=rt, load_errors=answers))
    assert "load in headless Chromium: page_error (not blocking: the app still answers input" in facts
