"""The weights the trainer applies come from the run's ``attribution`` section, through the real
score-step path: train-rl's run folder (whole config + queries) -> the job's loader -> the
``score-step`` flow (environment + attribution -> membership codes) -> the trainer's packing
(``tasks.attribution.weights``). No weight number is written twice on that path."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from schemas.config import load_config, write_config
from schemas.layout import RUN_CONFIG, RUN_QUERIES
from tasks.attribution.tokens import load_tokenizer
from tasks.attribution.weights import CONTEXT, DIRECT, OTHER, membership_codes
from training import launch
from training.grpo import build_packed, score_rollouts
from training.rollout import Rollout

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "fixtures" / "attribution"))
from make_tokenizer import byte_level  # noqa: E402

RUBRIC = {"initial_state": [{"id": "I1", "requirement": "A counter display and an increment button are shown",
                             "level": "core_module"}],
          "dynamic": [{"id": "D1", "requirement": "Clicking the increment button raises the counter display",
                       "level": "correct_rule"}]}
APP = ("```html\n<!DOCTYPE html>\n<html><body><h1>Counter display</h1>\n<button id=\"inc\">increment</button>\n"
       "<span id=\"counter\">0</span>\n<script>\nlet counter = 0;\n"
       "document.getElementById('inc').addEventListener('click', () => {\n  counter++;\n"
       "  document.getElementById('counter').textContent = counter;\n});\n</script></body></html>\n```")
BROKEN = APP.replace("let counter = 0;", "let counter = ;\nfunction raise( {")  # a syntax error the judge quotes
RESPONSES = [APP, BROKEN, "I cannot build that."]  # valid > source-invalid > no HTML: advantages +, -, -
DEFAULTS = {"direct": 3.0, "context": 1.5, "baseline": 1.0, "positive_other": 1.2}
CHANGED = {"direct": 4.5, "context": 2.25, "baseline": 0.75, "positive_other": 1.75}


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    return byte_level(tmp_path_factory.mktemp("tok"))


def _run_dir(root: Path, weights: dict[str, float], sets: tuple[str, ...] = ("env.runtime.enabled=false",
                                                                               "llm.provider=offline")) -> Path:
    """What train-rl writes into a run folder: the whole resolved configuration and the queries."""
    run = root / "runs" / "train-rl" / "r1"
    sets = [*sets, "train.run.score_fn=flows.score_step:score_step_flow",
            f"train.run.out_dir={run}"] + [f"attribution.{k}_weight={v}" for k, v in weights.items()]
    cfg = load_config("demo", sets=sets, environ={})
    cfg.data_dir = root
    write_config(cfg, run / RUN_CONFIG)
    pq.write_table(pa.Table.from_pylist([{"query_id": "q1", "query": "Build a counter app.",
                                          "rubric_json": json.dumps(RUBRIC)}]), run / RUN_QUERIES)
    return run


def _trainer_scores(run: Path, tokenizer_dir: Path):
    """The job's configuration, and one step's rollouts of RESPONSES scored by its score function."""
    cfg = launch.build_config(launch.parser().parse_args(["--config", str(run / RUN_CONFIG)]))
    score_fn = launch.resolve_score_fn(cfg.train.run.score_fn)
    tok = load_tokenizer(tokenizer_dir)
    rollouts = [Rollout([1, 2], tok.encode(r).ids, [-1.0] * len(tok.encode(r).ids), True) for r in RESPONSES]
    queries = [{"query_id": "q1", "query": "Build a counter app."}] * len(RESPONSES)
    scored = score_rollouts(score_fn, queries, rollouts, [0] * len(RESPONSES), tok,
                            {"step": 1, "rank": 0, "model_path": str(tokenizer_dir), "out_dir": str(run)})
    return cfg, rollouts, scored


def _trainer_weights(run: Path, tokenizer_dir: Path) -> tuple[list[list[float]], list[float], list[list[int]]]:
    cfg, rollouts, scored = _trainer_scores(run, tokenizer_dir)
    gids = [0] * len(rollouts)
    packed, adv = build_packed(cfg.train, rollouts, scored, scored.rewards, gids, cfg.attribution)
    return [p.weights for p in packed], adv.advantages, [m.tolist() for m in scored.membership]


@pytest.mark.parametrize("weights", [DEFAULTS, CHANGED], ids=["defaults", "changed"])
def test_trainer_applies_the_attribution_sections_weights(prefect_harness, tmp_path, tokenizer_dir, weights):
    applied, adv, membership = _trainer_weights(_run_dir(tmp_path / "data", weights), tokenizer_dir)
    assert adv[0] > 0 and adv[1] < 0, adv
    # A > 0: attributed tokens keep the baseline, the rest get positive_other_weight
    pos = {m: w for m, w in zip(membership[0], applied[0])}
    assert pos.get(OTHER) == pytest.approx(weights["positive_other"])
    assert all(w == pytest.approx(weights["positive_other"] if m == OTHER else weights["baseline"])
               for m, w in zip(membership[0], applied[0]))
    # A < 0 on the localised syntax error: direct / contextual / other tokens by their membership
    assert DIRECT in membership[1], "the judge's quote of the syntax error was not localised"
    expect = {DIRECT: weights["direct"], CONTEXT: weights["context"], OTHER: weights["baseline"]}
    for m, w in zip(membership[1], applied[1]):
        assert w == pytest.approx(expect[m])


def test_score_step_builds_the_run_once(prefect_harness, tmp_path, tokenizer_dir):
    from tasks.rl.step_run import step_run

    run = _run_dir(tmp_path / "data", DEFAULTS)
    before = step_run.cache_info()
    _trainer_weights(run, tokenizer_dir)
    _trainer_weights(run, tokenizer_dir)
    after = step_run.cache_info()
    assert (after.misses - before.misses, after.hits - before.hits) == (1, 1)


def test_float_weights_from_a_score_function_are_a_clear_error():
    with pytest.raises(ValueError, match="not membership codes"):
        membership_codes([3.0, 1.5, 1.0], "score_fn response 0")
    with pytest.raises(ValueError, match="7 is not a membership code"):
        membership_codes([0, 7])
    assert membership_codes([OTHER, CONTEXT, DIRECT]).tolist() == [0, 1, 2]  # the twin stays clean


# The token-weight rule of each training mode (paper 4.3, 4.4): uniform weights are standard GRPO.
RULE = {"binary": "uniform", "hierarchical": "uniform", "full": "sign", "unconditional": "unconditional"}


@pytest.mark.parametrize("mode", ["hierarchical", "unconditional", "full"])
def test_attributions_rows_record_the_rule_the_trainer_applied(prefect_harness, tmp_path, tokenizer_dir, mode):
    from schemas.config.attribution import AttributionConfig
    from schemas.layout import RUN_RECORDS
    from tasks.attribution.weights import token_weights

    run = _run_dir(tmp_path / "data", DEFAULTS, ("env.runtime.enabled=false", "llm.provider=offline",
                                                  f"train.objective.mode={mode}"))
    applied, adv, membership = _trainer_weights(run, tokenizer_dir)
    rows = pq.read_table(run / RUN_RECORDS / "attributions").to_pylist()
    assert len(rows) == len(RESPONSES) and {r["weight_mode"] for r in rows} == {RULE[mode]}
    for m, a, w in zip(membership, adv, applied):  # the rule the row names gives the trainer's weights
        want, _sign = token_weights(membership_codes(m), a, AttributionConfig(), rule=RULE[mode])
        assert w == pytest.approx(want.tolist())


def test_binary_mode_publishes_the_reward_the_trainer_optimises(prefect_harness, tmp_path, tokenizer_dir):
    """train.objective.mode=binary is the one switch: the scorer gives the binary reward, and the rewards rows
    hold what the trainer optimised (the pass bit), not a hierarchical reward it ignored."""
    from schemas.layout import RUN_RECORDS
    from training.grpo import effective_rewards

    run = _run_dir(tmp_path / "data", DEFAULTS, ("env.runtime.enabled=false", "llm.provider=offline",
                                                  "train.objective.mode=binary"))
    cfg, _rollouts, scored = _trainer_scores(run, tokenizer_dir)
    rows = pq.read_table(run / RUN_RECORDS / "rewards").to_pylist()
    assert {r["reward_kind"] for r in rows} == {"binary"}
    assert [r["reward"] for r in rows] == effective_rewards(cfg.train, scored) == scored.rewards
