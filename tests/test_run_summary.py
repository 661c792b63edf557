"""`rubricrl run`'s closing summary: the figures of each flow that ran, and a degenerate output named as such
while its healthy twin stays clean (rows in, lines out; no store, no Prefect)."""
import pytest

from rubricrl.run_summary import summarize

FLOWS = ["select-rl-queries", "train-rl", "evaluate"]


def _apps(*tiers_rewards):
    return [{"query_id": f"q{i // 2}", "tier": t, "reward": r} for i, (t, r) in enumerate(tiers_rewards)]


def _healthy():
    return {
        "probe_rewards": _apps(("valid", 0.8), ("format_invalid", 0.0), ("valid", 0.55), ("source_invalid", 0.1)),
        "rl_queries": [{"query_id": "q0"}, {"query_id": "q1"}],
        "rewards": _apps(("valid", 0.9), ("runtime_invalid", 0.2), ("valid", 0.6), ("format_invalid", 0.0)),
        "train_steps": [{"step": 1, "metric": "reward/mean", "value": 0.55},
                        {"step": 2, "metric": "reward/mean", "value": 0.4},
                        {"step": 2, "metric": "loss/policy", "value": 0.01}],
        "eval_results": [{"model": "sft/final_model", "tier": "valid", "reward": 0.7, "passed": True},
                         {"model": "sft/final_model", "tier": "format_invalid", "reward": 0.0, "passed": False},
                         {"model": "rl-1/final_model", "tier": "valid", "reward": 0.9, "passed": True},
                         {"model": "rl-1/final_model", "tier": "valid", "reward": 0.5, "passed": False}],
    }


def _run(tables, flows=FLOWS):
    return summarize(flows, tables.get)


def test_healthy_run_prints_the_figures_and_no_warning():
    s = _run(_healthy())
    assert s.problems == []
    text = s.text()
    assert "select-rl-queries probe: 4 apps, 50% valid" in text and "2 rl_queries selected" in text
    assert "reward/mean first step 0.550, last step 0.400" in text
    assert "evaluate sft/final_model: pass rate 50%, mean reward 0.350" in text
    assert "evaluate rl-1/final_model: pass rate 50%, mean reward 0.700, 100% valid" in text
    assert text.index("sft/final_model") < text.index("rl-1/final_model")  # the evaluation's order kept


@pytest.mark.parametrize("stage, rows, problem", [
    ("probe_rewards", _apps(("format_invalid", 0.0), ("format_invalid", 0.0)), "probe: every app is format-invalid"),
    ("probe_rewards", _apps(("valid", 0.6), ("valid", 0.6), ("valid", 0.6)), "probe: every reward is 0.600"),
    ("rl_queries", [], "rl_queries is empty"),
    ("rewards", _apps(("source_invalid", 0.1), ("source_invalid", 0.1)), "every reward is 0.100"),
    ("rewards", _apps(("runtime_invalid", 0.2), ("source_invalid", 0.1)), "train-rl: no app reached the rubric"),
    ("eval_results", [{"model": "m", "tier": "format_invalid", "reward": 0.0, "passed": False}] * 2,
     "evaluate: every app of every policy is format-invalid"),
])
def test_a_degenerate_stage_is_named(stage, rows, problem):
    tables = {**_healthy(), stage: rows}
    s = _run(tables)
    assert any(problem in p for p in s.problems), s.problems
    assert len(s.problems) <= 2  # the one flat stage, not the healthy others


def test_only_the_flows_that_ran_are_summarised():
    tables = {**_healthy(), "rewards": _apps(("source_invalid", 0.1), ("source_invalid", 0.1))}
    s = _run(tables, ["select-rl-queries"])  # train-rl did not run in this invocation: its old stage is not read
    assert s.problems == [] and not any(x.startswith("train-rl") for x in s.lines)


def test_missing_rewards_are_not_counted_as_equal():
    tables = {**_healthy(), "rewards": [{"tier": "missing", "reward": None}, {"tier": "valid", "reward": 0.7}]}
    assert _run(tables).problems == []
