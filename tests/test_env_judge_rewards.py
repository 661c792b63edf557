"""Rewards (tier order, binary vs hierarchical), judge post-processing, the offline rule, the judge wire."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schemas.config.env import EnvConfig, RewardConfig, RuntimeConfig
from schemas.llm.diagnosis import Diagnosis
from schemas.rubric import Task
from tasks.env import rewards as R
from tasks.env.judge import build_judge_request
from tasks.env.judge_diagnosis import normalize_diagnosis, parse_diagnosis
from tasks.env.judge_offline import offline_diagnosis
from tasks.env.score import ScoreInput, score_batch
from tasks.llm import get_provider

FIX = Path(__file__).parent / "fixtures" / "env"
TASK = Task.model_validate_json((FIX / "task_counter.json").read_text())
LEVELS = TASK.rubric.level_of()  # I1 C, I2 C, I3 E, D1 R, D2 R
CFG = RewardConfig()
NO_BROWSER = EnvConfig(runtime=RuntimeConfig(enabled=False))


def _diag(rubric: dict[str, list] | None = None, static: dict | None = None, sim: dict | None = None) -> dict:
    def layer(name, d):
        return {"name": name, "critical": [], "major": [], "minor": [], **(d or {})}
    return {"static_check": layer("static_check", static), "code_simulation": layer("code_simulation", sim),
            "rubric_alignment": layer("rubric_alignment", rubric)}


def _f(item_id=None, desc="x", **kw):
    return {"item_id": item_id, "description": desc, **kw}


# -- rewards -----------------------------------------------------------------------------------------
def test_rubric_score_by_hand():
    # weights C=3, R=2, E=1 -> total 3+3+1+2+2 = 11. D1 major (unmet), I3 minor (1 - 0.2).
    s = R.rubric_score(LEVELS, {"D1": "major", "I3": "minor"}, CFG)
    assert s == pytest.approx((3 + 3 + 0.8 + 0 + 2) / 11)
    assert R.rubric_score(LEVELS, {}, CFG) == 1.0
    assert R.rubric_score(LEVELS, {i: "critical" for i in LEVELS}, CFG) == 0.0


def test_tier_ordering_examples():
    worst_valid = R.hierarchical_reward(True, True, True, 0.0, CFG)
    assert (R.hierarchical_reward(False, None, None, None, CFG) < R.hierarchical_reward(True, False, None, None, CFG)
            < R.hierarchical_reward(True, True, False, None, CFG) < worst_valid
            < R.hierarchical_reward(True, True, True, 0.5, CFG) < R.hierarchical_reward(True, True, True, 1.0, CFG))
    assert R.hierarchical_reward(True, True, True, 1.0, CFG) == CFG.rubric_max


severity = st.sampled_from([None, "minor", "major", "critical"])
sev_maps = st.fixed_dictionaries({i: severity for i in LEVELS}).map(lambda d: {k: v for k, v in d.items() if v})


@given(sev_maps, sev_maps)
def test_every_valid_app_outranks_every_invalid_one_and_more_findings_never_help(a, b):
    ra = R.reward("hierarchical", True, True, True, LEVELS, a, CFG)
    assert ra > R.reward("hierarchical", True, True, False, LEVELS, b, CFG)
    assert R.reward("hierarchical", True, True, False, LEVELS, a, CFG) > R.reward("hierarchical", True, False, True, LEVELS, b, CFG)
    assert R.reward("hierarchical", True, False, True, LEVELS, a, CFG) > R.reward("hierarchical", False, None, None, LEVELS, b, CFG)
    worse = {k: max(a.get(k), b.get(k), key=lambda s: {None: 0, "minor": 1, "major": 2, "critical": 3}[s])
             for k in LEVELS if a.get(k) or b.get(k)}
    assert R.reward("hierarchical", True, True, True, LEVELS, worse, CFG) <= ra


def test_binary_vs_hierarchical_on_the_same_inputs():
    cases = [  # (format, source, runtime, severities)
        (True, True, True, {}),
        (True, True, True, {"I3": "minor"}),
        (True, True, True, {"D1": "major"}),
        (True, True, True, {"D1": "major", "D2": "critical", "I1": "critical"}),
        (True, True, False, {}),
        (True, False, True, {}),
        (False, None, None, None),
    ]
    hier = [R.reward("hierarchical", *c[:3], LEVELS, c[3], CFG) for c in cases]
    binary = [R.reward("binary", *c[:3], LEVELS, c[3], CFG) for c in cases]
    assert binary == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    # The binary reward cannot tell the last five apart; the hierarchical one orders all of them.
    assert hier == sorted(hier, reverse=True) and len(set(hier)) == len(hier)
    assert hier[0] == 1.0 and hier[1] < 1.0  # minor keeps a small penalty


def test_undecided_gates_give_missing_reward_never_a_number():
    assert R.reward("hierarchical", True, None, None, LEVELS, None, CFG) is None
    assert R.reward("hierarchical", True, True, None, LEVELS, None, CFG) is None
    assert R.reward("hierarchical", True, True, True, LEVELS, None, CFG) is None
    assert R.reward("binary", True, True, True, LEVELS, None, CFG) is None
    # Our own evidence decides a failed tier without the judge.
    assert R.reward("hierarchical", True, False, None, LEVELS, None, CFG) == CFG.source_invalid
    assert R.reward("binary", True, None, False, LEVELS, None, CFG) == 0.0


def test_reward_config_rejects_a_broken_hierarchy_and_unknown_kind():
    with pytest.raises(ValueError, match="strictly increasing"):
        RewardConfig(runtime_invalid=0.5, rubric_floor=0.4)
    with pytest.raises(ValueError, match="level_weights"):
        RewardConfig(level_weights={"core_module": 1.0})
    with pytest.raises(ValueError, match="hierarchical"):
        R.reward("dense", True, True, True, LEVELS, {}, CFG)


# -- judge post-processing ---------------------------------------------------------------------------
def test_one_finding_per_item_highest_severity_wins_unknown_dropped_scope_from_reference():
    d = Diagnosis.model_validate(_diag(rubric={
        "critical": [_f("D1", "missing increment")],
        "major": [_f("D1", "wrong step"), _f("Z9", "not an item")],
        "minor": [_f("I3", "small text", scope="dynamic"), _f("I3", "dup")],
    }))
    clean, dropped = normalize_diagnosis(d, TASK.rubric)
    assert [(f.item_id, f.description) for f in clean.rubric_alignment.critical] == [("D1", "missing increment")]
    assert clean.rubric_alignment.major == []
    assert [(f.item_id, f.scope, f.description) for f in clean.rubric_alignment.minor] == [("I3", "initial_state", "small text")]
    assert {(x.item_id, x.reason.split(" (")[0]) for x in dropped} == {
        ("Z9", "unknown rubric id"), ("D1", "duplicate item id"), ("I3", "duplicate item id")}


def test_parse_diagnosis_names_the_problem():
    with pytest.raises(ValueError, match="three layers"):
        parse_diagnosis({"static_check": {}}, TASK.rubric)
    with pytest.raises(ValueError, match="JSON object"):
        parse_diagnosis([1, 2], TASK.rubric)
    diag, _ = parse_diagnosis({k: {"critical": [], "major": [], "minor": []}
                               for k in ("static_check", "code_simulation", "rubric_alignment")}, TASK.rubric)
    assert all(layer.gate_passed for layer in diag.layers())


def test_minor_passes_gate_major_fails_it_in_the_pipeline():
    html = (FIX / "clean.txt").read_text()
    inputs = [ScoreInput("a", TASK, html, _diag(sim={"minor": [_f(None, "risky")]})),
              ScoreInput("b", TASK, html, _diag(sim={"major": [_f(None, "blocks")]})),
              ScoreInput("c", TASK, html, _diag(static={"critical": [_f(None, "syntax")]})),
              ScoreInput("d", TASK, html, _diag())]
    a, b, c, d = score_batch(inputs, cfg=NO_BROWSER)
    assert a.runtime_valid is True and b.runtime_valid is False and c.source_valid is False
    assert d.reward == 1.0 and b.reward == CFG.runtime_invalid and c.reward == CFG.source_invalid
    assert a.evidence.runtime_status == "skipped"


def test_tree_sitter_error_fails_source_whatever_the_judge_says():
    resp = (FIX / "syntax_error.txt").read_text()
    (r,) = score_batch([ScoreInput("s", TASK, resp, _diag())], cfg=NO_BROWSER)
    assert r.source_valid is False and r.reward == CFG.source_invalid
    err = r.evidence_json()["syntax_errors"][0]
    assert resp[err["start"] : err["end"]].startswith("function render(")  # response offsets (h added)


# -- offline rule and provider ---------------------------------------------------------------------------
def test_offline_judge_is_deterministic_labelled_and_uses_our_evidence():
    resp = (FIX / "syntax_error.txt").read_text()
    inputs = [ScoreInput("k1", TASK, resp)]
    r1 = score_batch(inputs, provider=get_provider("offline"), cfg=NO_BROWSER)[0]
    r2 = score_batch(inputs, provider=get_provider("offline"), cfg=NO_BROWSER)[0]
    assert r1.judge.provider == "offline" and r1.findings == r2.findings
    static = [f for f in r1.findings if f.layer == "static_check"]
    assert static and static[0].severity == "critical" and static[0].description.startswith("[offline]")
    html = resp[r1.html_offset:]
    assert all(q in html for f in r1.findings for q in f.code_quotes)  # quotes are exact


def test_offline_rubric_layer_decides_from_evidence_only():
    """No check ran and no browser saw the app: nothing speaks to the counter's items, so all are undecided
    (a page about the weather is not judged by counting its words); an item naming an id the source lacks is
    critical."""
    html = "<html><body><h1>Weather</h1><p>Sunny</p></body></html>"
    req = build_judge_request(TASK, html, key="w")
    out = Diagnosis.model_validate(offline_diagnosis(dict(req.variables)), context=req.validation_context)
    assert not out.rubric_alignment.findings()
    assert out.undecided == [i.id for i in TASK.rubric.initial_state + TASK.rubric.dynamic]
    named = TASK.model_copy(update={"rubric": TASK.rubric.model_copy(update={"initial_state": [
        TASK.rubric.initial_state[0].model_copy(update={"requirement": "The display #count shows 0 on load"})]})})
    req = build_judge_request(named, html, key="w")
    out = Diagnosis.model_validate(offline_diagnosis(dict(req.variables)), context=req.validation_context)
    assert [(f.item_id, f.description) for f in out.rubric_alignment.critical] == [
        ("I1", "[offline] the app has no element #count")] and "I1" not in out.undecided


def test_judge_failure_gives_missing_reward():
    class Broken(type(get_provider("offline"))):  # a real provider whose calls fail at transport
        def _call(self, request, system, messages):
            raise ConnectionError("judge down")

    (r,) = score_batch([ScoreInput("x", TASK, (FIX / "clean.txt").read_text())], provider=Broken(), cfg=NO_BROWSER)
    assert r.reward is None and r.source_valid is None and "judge down" in r.judge.error
    assert r.format_valid is True and r.findings == []


def test_judge_through_the_real_sdk_with_one_corrective_retry(monkeypatch, tmp_path):
    from schemas.config import llm as config_llm
    from tasks.llm.factory import make_provider
    from fakes import fake_anthropic as fake_mod
    from fakes.http_fake import Scripted

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    good = json.dumps(_diag(rubric={"major": [_f("D2", "reset does nothing", code_quotes=["count = 0;"])]}))
    bad = json.dumps(_diag(rubric={"major": [_f("Q7", "invented id")]}))
    with fake_mod.FakeAnthropic(reply=lambda body: good) as api:
        api.push(Scripted(text=bad))  # first answer names an unknown id -> one corrective retry
        provider = make_provider("anthropic", base_url=api.base_url,
                                 config=config_llm.LLMConfig(store_path=str(tmp_path / "llm.sqlite")))
        (r,) = score_batch([ScoreInput("w", TASK, (FIX / "clean.txt").read_text())], provider=provider, cfg=NO_BROWSER)
        bodies = [s.body for s in api.seen("/v1/messages", "POST")]
    assert r.judge.provider == "anthropic" and r.judge.error is None, r.judge
    assert len(bodies) == 2  # the reply naming Q7 got exactly one corrective retry
    assert [(f.item_id, f.severity) for f in r.findings] == [("D2", "major")]
    assert r.reward == pytest.approx(CFG.rubric_floor + (CFG.rubric_max - CFG.rubric_floor) * 9 / 11)
    prompt = json.dumps(bodies[0]["messages"][0]["content"])
    assert "Increment button" in prompt and "D2" in prompt and "<!DOCTYPE html>" in prompt
    assert "Q7" in json.dumps(bodies[1]["messages"][-1]["content"])


def test_two_equal_findings_get_two_keys_in_the_judge_output_and_in_attribution():
    """One key per finding, shared by the judge's output and attribution's spans: equal findings (the same
    text twice) are two findings, each with its own spans."""
    from schemas.llm.diagnosis import Diagnosis, Finding, Layer
    from tasks.attribution.normalize import normalize
    from tasks.env.judge_diagnosis import findings_list

    f = Finding(description="score never resets", code_quotes=["score += 1"])
    d = Diagnosis(static_check=Layer(name="static_check"), code_simulation=Layer(name="code_simulation", major=[f, f]),
                  rubric_alignment=Layer(name="rubric_alignment", minor=[Finding(item_id="D1", description="x")]))
    keys = [x.key for x in findings_list(d)]
    assert keys == ["code_simulation.major.0", "code_simulation.major.1", "rubric_alignment.minor.0"]
    assert [n.key for n in normalize(d)] == keys
    spans = {"code_simulation.major.1": {"direct_spans": [[3, 9]], "context_spans": []}}
    assert [x.direct_spans for x in findings_list(d, spans)] == [(), ((3, 9),), ()]
