"""TRL's ``GRPOTrainer`` trained two real steps on a tiny local model (no downloads) through the OpenEnv route:
its ``rollout_func`` steps ``rubricrl serve-openenv``'s app with the OpenEnv client and hands the rewards on as
the ``env_reward`` column (``rubricrl.environments.openenv.env_reward``), as TRL's OpenEnv examples do. As in
tests/test_adapter_trl.py, generation replays real fixture responses (the tiny random model cannot write an
app); the rewards TRL logs are ``rubricrl score``'s for the same apps alone, the judge's failure stays a
missing reward (TRL: NaN, advantage 0) and every parameter moves."""
from __future__ import annotations

import math

import pytest

from rubricrl.adapters.client import scorer_for
from rubricrl.environments.openenv import RubricEnvClient, Runtime, create_openenv_app, env_reward, step_apps
from tests.fixtures.service import judged_project, serving
from tests.fixtures.trl_replay import grpo_args, replay


@pytest.fixture
def server(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")  # for the local fake only
    with judged_project(tmp_path / "data") as cfg:
        runtime = Runtime.of(cfg, "all", scorer=scorer_for(cfg))
        with serving(create_openenv_app(runtime, max_sessions=2)) as s:
            yield s, cfg


def test_grpo_trainer_steps_on_openenv_rewards(server, tmp_path):
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import GRPOTrainer

    s, cfg = server
    r = replay(cfg, tmp_path)
    rewards, tok = r.rewards, r.tok
    client = RubricEnvClient(s.url).connect()

    def rollout(prompts, trainer):  # generation replayed; the rewards are the OpenEnv server's step()
        out = r.rollout(prompts)
        out["env_reward"] = step_apps(client, ["q-counter"] * len(prompts), out.pop("texts"))
        return out

    model = AutoModelForCausalLM.from_pretrained(r.model_dir)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    ds = Dataset.from_list([{"prompt": "Build a click counter miniapp."}] * 8)
    args = grpo_args(tmp_path)
    trainer = GRPOTrainer(model=model, reward_funcs=[env_reward], args=args, train_dataset=ds, processing_class=tok,
                          rollout_func=rollout)
    try:
        trainer.train()
    finally:
        client.close()

    logged = list(trainer._logs["rewards"]["env_reward"])  # the last step's batch, as TRL kept it
    assert logged[:3] == pytest.approx(rewards[:3]) and math.isnan(logged[3])
    advantages = list(trainer._logs["advantages"])
    assert advantages[3] == 0.0 and all(a != 0.0 for a in advantages[:3])  # missing: no learning signal
    steps = [h for h in trainer.state.log_history if "rewards/env_reward/mean" in h]
    assert len(steps) == 2 and all(h["rewards/env_reward/mean"] == pytest.approx(sum(rewards[:3]) / 3) for h in steps)
    moved = [n for n, p in model.named_parameters() if not torch.equal(before[n], p.detach())]
    assert len(moved) == len(before)
    with pytest.raises(ValueError, match="no env_reward column"):
        env_reward(prompts=["p"], completions=["c"])
