"""One GRPO step's environment work (tasks/score_step.score_step), directly: the judge's findings become per-token
membership on the generated ids (DIRECT on the quoted code, OTHER elsewhere), ``passed`` is the paper's pass, and a
finding no quote of which can be found makes the response ``uniform`` (weights 1.0, never spread)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemas.config.attribution import AttributionConfig
from schemas.config.env import EnvConfig, RuntimeConfig
from schemas.rubric import Task
from tasks.attribution.weights import CONTEXT, DIRECT, OTHER
from tasks.rl.score_step import score_step
from tests.fixtures.rubrics.support import ScriptedProvider

FIX = Path(__file__).parent / "fixtures" / "env"
TASK = Task.model_validate_json((FIX / "task_counter.json").read_text())
CLEAN = (FIX / "clean.txt").read_text()
QUOTE = "count = 0; render();"  # once in clean.txt: the reset handler


def _diag(rubric: dict | None = None) -> dict:
    def layer(name, d=None):
        return {"name": name, "critical": [], "major": [], "minor": [], **(d or {})}

    return {"static_check": layer("static_check"), "code_simulation": layer("code_simulation"),
            "rubric_alignment": layer("rubric_alignment", rubric)}


DIAGNOSES = {  # rollout id -> what the judge says about it
    "clean": _diag(),
    "located": _diag({"major": [{"item_id": "D2", "description": "reset leaves the count",
                                 "code_quotes": [QUOTE]}]}),
    "unlocated": _diag({"major": [{"item_id": "D1", "description": "increment is wrong",
                                   "code_quotes": ["incrementTheCounterTwice();"]}]}),
    "minor": _diag({"minor": [{"item_id": "I3", "description": "colour is a bit off", "code_quotes": [QUOTE]}]}),
}


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    from tasks.attribution.tokens import load_tokenizer
    from training.tiny import build_tokenizer

    d = tmp_path_factory.mktemp("tok")
    build_tokenizer().save_pretrained(d)
    tok = load_tokenizer(str(d))  # as the train-rl flow loads the policy's tokenizer
    judge = ScriptedProvider(lambda req, _m: json.dumps(DIAGNOSES[req.key]))
    keys = list(DIAGNOSES)
    ids = [tok.encode(CLEAN, add_special_tokens=False).ids for _ in keys]
    out = score_step(keys, [TASK.query_id] * len(keys), [CLEAN] * len(keys), ids, {TASK.query_id: TASK}, tok,
                     provider=judge, env=EnvConfig(runtime=RuntimeConfig(enabled=False)),
                     attribution=AttributionConfig())
    return {k: i for i, k in enumerate(keys)}, out, tok, ids[0]


def test_membership_marks_the_quoted_tokens_direct(scored):
    at, out, tok, ids = scored
    m = list(out.membership[at["located"]])
    assert len(m) == len(ids)
    direct = [i for i, w in enumerate(m) if w == DIRECT]
    assert direct and direct == list(range(direct[0], direct[-1] + 1))  # one contiguous run
    text = tok.decode(ids[direct[0]:direct[-1] + 1])
    assert QUOTE in text and len(text) < len(QUOTE) + 12  # the quote, give or take the tokens at its edges
    assert set(m) <= {DIRECT, CONTEXT, OTHER}
    assert OTHER in m  # the rest of the app is not implicated


def test_passed_and_uniform(scored):
    at, out, _, _ = scored
    assert [out.passed[at[k]] for k in DIAGNOSES] == [True, False, False, True]  # a minor finding still passes
    assert [out.uniform[at[k]] for k in DIAGNOSES] == [False, False, True, False]
    # no findings, and an unlocalised finding: no token implicated (never spread over every match)
    for k in ("clean", "unlocated"):
        assert set(out.membership[at[k]].tolist()) == {OTHER}, k
    assert out.rewards[at["clean"]] > out.rewards[at["minor"]] > out.rewards[at["located"]]
    assert out.scored.judgments.column("provider").to_pylist() == ["scripted"] * len(DIAGNOSES)


def test_one_pass_rule_for_the_trainer_the_rows_and_the_binary_reward(scored):
    """The step's pass bits (binary mode's reward) are what evaluation and selection compute from the same
    step's published rows, and the binary reward's 1s: one rule (tasks/env/rewards.py: passed)."""
    from tasks.env.rewards import binary_reward, rubric_severities_of
    from tasks.evaluation.eval_results import passed

    _at, out, _, _ = scored
    judg = {j["rollout_id"]: j for j in out.scored.judgments.to_pylist()}
    rows = out.scored.rewards.to_pylist()
    assert [passed(r, judg[r["rollout_id"]]) for r in rows] == out.passed
    binary = [binary_reward(r["format_valid"], r["source_valid"], r["runtime_valid"],
                            rubric_severities_of(judg[r["rollout_id"]]["findings"])) for r in rows]
    assert binary == [float(p) for p in out.passed] and True in out.passed and False in out.passed
