"""TRL's ``GRPOTrainer`` trained a few real steps on a tiny local model (no downloads) with ``RubricReward``
through ``rubricrl serve-env``: the rewards TRL logs are the environment's for the same responses scored
alone, a missing reward stays missing (TRL: NaN, advantage 0), every parameter moves. The tiny random
model cannot write an app, so generation replays real fixture responses through TRL's ``rollout_func``
(their token ids in the tiny tokenizer); reward, advantages and the update are TRL's own."""
from __future__ import annotations

import math

import pytest

from rubricrl.adapters.client import ServiceClient, scorer_for
from rubricrl.adapters.trl import RubricReward, completion_text
from rubricrl.service.engine import ScoreEngine
from tests.fixtures.service import counter_alone, counter_responses, judged_project, running_service
from tests.fixtures.trl_replay import grpo_args, replay

responses = counter_responses


@pytest.fixture
def service(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")  # for the local fake only
    with judged_project(tmp_path / "data") as cfg, running_service(ScoreEngine(cfg)) as s:
        yield s, cfg


def test_grpo_trainer_steps_on_service_rewards(service, tmp_path):
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import GRPOTrainer

    s, cfg = service
    r = replay(cfg, tmp_path)
    want, rewards, tok = r.want, r.rewards, r.tok

    def rollout(prompts, trainer):
        out = r.rollout(prompts)
        del out["texts"]
        return out

    model = AutoModelForCausalLM.from_pretrained(r.model_dir)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    ds = Dataset.from_list([{"prompt": "Build a click counter miniapp.", "query_id": "q-counter"}] * 8)
    args = grpo_args(tmp_path)
    reward = RubricReward(scorer=ServiceClient(s.url, None, cfg.service.request_timeout_s, cfg.service.max_items))
    trainer = GRPOTrainer(model=model, reward_funcs=[reward], args=args, train_dataset=ds, processing_class=tok,
                          rollout_func=rollout)
    trainer.train()

    logged = list(trainer._logs["rewards"]["rubricrl"])  # the last step's batch, as TRL kept it
    assert logged[:3] == pytest.approx(rewards[:3]) and math.isnan(logged[3])
    advantages = list(trainer._logs["advantages"])
    assert advantages[3] == 0.0 and all(a != 0.0 for a in advantages[:3])  # missing: no learning signal
    assert list(trainer._logs["extra"]["rubricrl_tier"]) == [a["tier"] for a in want]
    steps = [h for h in trainer.state.log_history if "rewards/rubricrl/mean" in h]
    assert len(steps) == 2
    for h in steps:
        assert h["rewards/rubricrl/mean"] == pytest.approx(sum(rewards[:3]) / 3)
        assert h["rubricrl/reward_missing"] == pytest.approx(0.25)
    moved = [n for n, p in model.named_parameters() if not torch.equal(before[n], p.detach())]
    assert len(moved) == len(before)


def test_reward_called_as_trl_calls_it_scores_in_process(service):
    s, cfg = service
    want = counter_alone(cfg)
    extra, metrics = {}, {}
    reward = RubricReward(scorer=scorer_for(cfg))
    conversational = [[{"role": "assistant", "content": [{"type": "text", "text": t}]}] for t in responses()]
    got = reward(prompts=[[{"role": "user", "content": "Build a counter"}]] * 4, completions=conversational,
                 completion_ids=[[1]] * 4, query_id=["q-counter"] * 4, trainer_state=None,
                 log_extra=lambda k, v: extra.__setitem__(k, v), log_metric=lambda k, v: metrics.__setitem__(k, v))
    assert got == [a["reward"] for a in want] and got[3] is None
    assert extra == {"rubricrl_tier": [a["tier"] for a in want]} and metrics == {"rubricrl/reward_missing": 0.25}
    with pytest.raises(ValueError, match="no 'query_id' column"):
        reward(prompts=["p"], completions=["c"], prompt_id=["x"])
    assert completion_text("plain") == "plain"
