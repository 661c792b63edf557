"""The paper's pass rule and the eval/selection rows built on it, with inputs where some responses pass
(the offline judge never passes a teacher answer, so the flow tests cannot show the rule)."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from flows.train_rl import step_judge_providers
from schemas.rubric import Task
from tasks.evaluation.summary import summarize
from tasks.evaluation.eval_results import eval_rows, passed, summary_rows
from tasks.selection.candidates import judge_providers


def _f(layer: str, severity: str, item: str) -> dict:
    return {"layer": layer, "severity": severity, "item_id": item}


def _judgment(rid: str, gate: bool | None = True, findings: list | None = None) -> dict:
    return {"rollout_id": rid, "gate_rubric_alignment": gate, "findings": findings or []}


def _reward(rid: str, tier: str = "valid", reward: float | None = 0.9) -> dict:
    gates = {"valid": (True, True, True), "runtime_invalid": (True, True, False), "missing": (True, None, None)}[tier]
    return {"rollout_id": rid, "tier": tier, "reward": reward, "rubric_score": 0.8, "provider": "anthropic",
            **dict(zip(("format_valid", "source_valid", "runtime_valid"), gates))}


CASES = {  # rollout -> (reward row, judgment, the paper's pass)
    "clean": (_reward("clean"), _judgment("clean"), True),
    "minor-only": (_reward("minor-only"), _judgment("minor-only", findings=[_f("rubric_alignment", "minor", "D1")]),
                   True),  # a minor finding is met, less a penalty: still a pass
    "major-item": (_reward("major-item"), _judgment("major-item", gate=False,
                                                     findings=[_f("rubric_alignment", "major", "D2")]), False),
    "critical-gate-true": (_reward("critical-gate-true"),  # the gate and the findings disagree: an unmet item wins
                           _judgment("critical-gate-true", findings=[_f("rubric_alignment", "critical", "I1")]), False),
    "not-judged": (_reward("not-judged"), _judgment("not-judged", gate=None), False),
    "runtime-invalid": (_reward("runtime-invalid", "runtime_invalid", 0.2), _judgment("runtime-invalid"), False),
    "missing": (_reward("missing", "missing", None), None, False),
    "static-minor": (_reward("static-minor"), _judgment("static-minor", findings=[_f("static_check", "minor", "")]),
                     True),
}


def test_pass_rule_on_passing_and_failing_responses():
    got = {k: passed(r, j) for k, (r, j, _) in CASES.items()}
    assert got == {k: want for k, (_, _, want) in CASES.items()}
    assert sum(got.values()) == 3  # some pass, some do not


def test_eval_rows_and_summary_count_the_passes():
    task = Task.model_validate({"query_id": "q1", "query": "Build a counter", "rubric": {
        "initial_state": [{"id": "I1", "requirement": "a count shows 0", "level": "core_module"}],
        "dynamic": [{"id": "D1", "requirement": "+ adds one", "level": "correct_rule"},
                    {"id": "D2", "requirement": "reset sets 0", "level": "correct_rule"}]}})
    names = list(CASES)
    rollouts = [{"rollout_id": k, "query_id": "q1", "run": 0, "response": k} for k in names]
    rows = eval_rows("m", "p", "responses", rollouts, [CASES[k][0] for k in names],
                     [CASES[k][1] for k in names if CASES[k][1]], {"q1": task}, {})
    by = {r["response"]: r for r in rows}
    assert [k for k in names if by[k]["passed"]] == ["clean", "minor-only", "static-minor"]
    assert by["major-item"]["items_failed"] == 1 and by["major-item"]["items_total"] == 3
    assert by["not-judged"]["items_total"] == 0 and by["missing"]["items_total"] == 0
    assert {r["judge_provider"] for r in rows} == {"anthropic"}
    # eval ids must be unique per (model, run, query): one response per query for the summary
    per_query = [{**r, "query_id": r["response"], "eval_id": r["response"]} for r in rows]
    s = summarize(summary_rows(per_query))
    assert s["m"]["pass/overall"] == 100.0 * 3 / len(names)


def test_judge_provider_lineage_helpers(tmp_path):
    rewards = [{"query_id": "q1", "provider": "offline"}, {"query_id": "q1", "provider": "offline"},
               {"query_id": "q2", "provider": "anthropic"}, {"query_id": "q2", "provider": "offline"},
               {"query_id": "q3", "provider": None}]
    assert judge_providers(rewards) == {"q1": "offline", "q2": "anthropic,offline"}
    rec = tmp_path / "judgments"
    rec.mkdir()
    for name, prov in (("step-000001-rank0", "offline"), ("step-000001-rank1", "openai"), ("step-000002-rank0", "offline")):
        pq.write_table(pa.table({"rollout_id": ["a"], "provider": [prov]}), rec / f"{name}.parquet")
    assert step_judge_providers(tmp_path) == {"step-000001": "offline,openai", "step-000002": "offline"}
