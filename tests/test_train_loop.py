"""The GRPO loop on the tiny model (CPU, DeepSpeed, transformers rollouts): learning, resume, NaN stop.

- learning: on the toy reward (share of tokens in a band) the mean reward rises clearly within 10
  steps and every trainable parameter changed;
- resume: 2 steps + resume to 4 equals 4 uninterrupted steps bit for bit;
- NaN: a non-finite loss stops the step with a clear error and does not overwrite the last checkpoint;
- metrics and records: TensorBoard scalars under the agreed prefixes, Parquet rows per response.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch

from training import checkpoint
from training.config import demo_config
from training.grpo import run_grpo
from training.toy import pattern_reward
from training.update import NonFiniteLossError

REPO = Path(__file__).resolve().parent.parent
FAST = {"queries_per_step": 4, "group_size": 8, "max_new_tokens": 8, "instruction": "Write one HTML file."}


def _cfg(out: Path, **over):
    base = {"rollout": dict(FAST), "deepspeed": {"micro_batch_size": 16}, "optim": {"lr": 1e-2},
            "run": {"out_dir": str(out), "steps": 10, "save_every": 100}}
    for k, v in over.items():
        base[k] = {**base.get(k, {}), **v}
    return demo_config(**base)


def _params(model_dir: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(model_dir / "model.safetensors"))


def test_policy_learns_toy_reward_and_every_parameter_changes(tmp_path):
    summary = run_grpo(_cfg(tmp_path), pattern_reward)
    rewards = [h["reward/mean"] for h in summary["history"]]
    assert len(rewards) == 10
    assert sum(rewards[-3:]) / 3 > sum(rewards[:3]) / 3 + 0.2, rewards
    before, after = _params(tmp_path / "tiny_model"), _params(tmp_path / "final_model")
    assert set(before) == set(after)
    unchanged = [n for n in before if torch.equal(before[n], after[n])]
    assert not unchanged, f"parameters that never moved: {unchanged}"
    # metrics under the agreed prefixes, in TensorBoard and in the step records
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(summary["tensorboard"])
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    for tag in ("reward/mean", "reward/pass_rate", "loss/policy", "loss/clip_frac", "loss/kl", "rollout/entropy",
                "rollout/zero_variance_group_frac", "weights/frac_3", "judge/failures", "time/generate_s", "time/score_tail_s", "time/overlap_s", "rollout/staleness", "loss/ratio_mean",
                "time/score_s", "time/attribute_s", "time/update_s"):
        assert tag in tags, tag
    assert len(acc.Scalars("reward/mean")) == 10
    rows = pq.read_table(tmp_path / "records" / "rollouts").to_pylist()
    assert len(rows) == 10 * 32
    r0 = rows[0]
    assert len(r0["token_weights"]) == len(r0["response_ids"]) == len(r0["logprobs"])
    # the sign rule reached the records: positive advantage -> 1.0/1.2 only, negative -> markers
    pos = [r for r in rows if r["advantage"] > 0]
    neg = [r for r in rows if r["advantage"] < 0]
    assert pos and neg
    assert all({round(w, 4) for w in r["token_weights"]} <= {1.0, 1.2} for r in pos)
    assert all(set(r["token_weights"]) <= {1.0, 3.0} for r in neg)


def test_resume_is_bit_for_bit(tmp_path):
    straight = run_grpo(_cfg(tmp_path / "a", run={"steps": 4, "save_every": 2}), pattern_reward)
    run_grpo(_cfg(tmp_path / "b", run={"steps": 2, "save_every": 2}), pattern_reward)
    resumed = run_grpo(_cfg(tmp_path / "b", run={"steps": 4, "save_every": 2, "resume": True}), pattern_reward)
    assert resumed["start_step"] == 2 and resumed["steps_run"] == 2
    a, b = _params(tmp_path / "a" / "final_model"), _params(tmp_path / "b" / "final_model")
    for n in a:
        assert torch.equal(a[n], b[n]), n
    assert [h["reward/mean"] for h in straight["history"][2:]] == [h["reward/mean"] for h in resumed["history"]]
    assert checkpoint.complete_tags(tmp_path / "b" / "checkpoints") == ["step_000002", "step_000004"]


def test_nan_loss_stops_without_overwriting_the_checkpoint(tmp_path, monkeypatch):
    import training.update as upd

    real = upd.target_logprobs
    poisoned = {"on": False}

    def maybe_nan(logits, targets, temperature):
        out = real(logits, targets, temperature)
        return out * float("nan") if poisoned["on"] else out

    def reward(prompts, responses, token_ids, **ctx):
        poisoned["on"] = ctx["step"] == 2  # step 1 trains normally, step 2's loss is NaN
        return pattern_reward(prompts, responses, token_ids)

    monkeypatch.setattr(upd, "target_logprobs", maybe_nan)
    with pytest.raises(NonFiniteLossError, match="no checkpoint was written.*--resume"):
        run_grpo(_cfg(tmp_path, run={"steps": 3, "save_every": 1}), reward)
    assert checkpoint.complete_tags(tmp_path / "checkpoints") == ["step_000001"]
    assert not (tmp_path / "final_model").exists()


def test_score_fn_misaligned_weights_is_a_clear_error(tmp_path):
    def bad(prompts, responses, token_ids, **ctx):
        rewards, markers, info = pattern_reward(prompts, responses, token_ids)
        return rewards, [m[:-1] for m in markers], info

    with pytest.raises(ValueError, match="align the weights with the generated token ids"):
        run_grpo(_cfg(tmp_path, run={"steps": 1}), bad)


def _clean_env() -> dict[str, str]:
    """Without the rendezvous variables an in-process run of this session left behind."""
    import os

    return {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}


def test_cli_entry_runs_the_demo(tmp_path):
    out = tmp_path / "cli"
    proc = subprocess.run([sys.executable, "-m", "training", "--set", f"train.run.out_dir={out}",
                           "--set", "train.run.steps=2",
                           "--set", "train.rollout.max_new_tokens=8", "--set", "train.rollout.instruction=Write one HTML file."],
                          cwd=REPO, capture_output=True, text=True, timeout=300, env=_clean_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "TensorBoard logs:" in proc.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps_run"] == 2 and summary["rollout_engine"] == "transformers"
    bad = subprocess.run([sys.executable, "-m", "training", "--set", "train.run.score_fn=nope"], cwd=REPO,
                         capture_output=True, text=True, timeout=120, env=_clean_env())
    assert bad.returncode == 2 and "package.module:function" in bad.stderr
