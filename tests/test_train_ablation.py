"""The ablation modes (paper 4.3/4.4) through real GRPO steps on the tiny model (CPU, DeepSpeed): binary,
hierarchical, full and unconditional. One step each from the same seed, so every
mode sees the same rollouts; the step records show which rewards reached the advantages and which tokens got
which weights, and the updated weights differ where the modes do."""
from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch

from schemas.config.attribution import AttributionConfig
from tasks.attribution.weights import DIRECT, OTHER
from training.config import demo_config
from training.grpo import run_grpo
from training.toy import in_band

RUNS = {"binary": {"mode": "binary"}, "hierarchical": {"mode": "hierarchical"}, "full": {"mode": "full"},
        "unconditional": {"mode": "unconditional"}}
W = AttributionConfig()  # the weight numbers (one owner)


def score(prompts, responses, token_ids, **_ctx):
    """Share of tokens in the toy band as the reward; the others directly implicated; passed = any token in the
    band (so a random tiny policy has both passes and fails in most groups)."""
    rewards = [sum(map(in_band, ids)) / len(ids) if ids else 0.0 for ids in token_ids]
    membership = [[OTHER if in_band(t) else DIRECT for t in ids] for ids in token_ids]
    return rewards, membership, {"passed": [r > 0 for r in rewards]}


def markers_of(ids: list[int]) -> list[float]:
    """The nominal weights of the score's membership: direct on the implicated tokens, baseline elsewhere."""
    return [W.baseline_weight if in_band(t) else W.direct_weight for t in ids]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[list[dict], Path]]:
    out = {}
    for name, objective in RUNS.items():
        d = tmp_path_factory.mktemp(name)
        cfg = demo_config(rollout={"queries_per_step": 2, "group_size": 6, "max_new_tokens": 8,
                                   "instruction": "Write one HTML file."},
                          deepspeed={"micro_batch_size": 12}, optim={"lr": 1e-2}, objective=objective,
                          run={"out_dir": str(d), "steps": 1, "save_every": 100, "seed": 3})
        run_grpo(cfg, score)
        out[name] = (pq.read_table(d / "records" / "rollouts").to_pylist(), d / "final_model")
    return out


def _params(model_dir: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(model_dir / "model.safetensors"))


def _toy_reward(ids: list[int]) -> float:
    return sum(map(in_band, ids)) / len(ids) if ids else 0.0


def test_every_mode_saw_the_same_rollouts(runs):
    ids = {name: [r["response_ids"] for r in rows] for name, (rows, _) in runs.items()}
    first = ids["full"]
    assert len(first) == 12 and all(v == first for v in ids.values())


def test_binary_rewards_are_the_pass_bit_and_hierarchical_the_reward(runs):
    binary, hier = runs["binary"][0], runs["hierarchical"][0]
    assert [r["reward"] for r in binary] == [float(_toy_reward(r["response_ids"]) > 0) for r in binary]
    assert [r["reward"] for r in hier] == pytest.approx([_toy_reward(r["response_ids"]) for r in hier])
    assert len({r["reward"] for r in hier}) > 2  # graded, not a bit
    # the advantages follow the rewards that reached them: the sign of (reward - group mean)
    for rows in (binary, hier):
        for r in rows:
            group = [x["reward"] for x in rows if x["group_id"] == r["group_id"]]
            mean = sum(group) / len(group)
            want = 0 if abs(r["reward"] - mean) < 1e-9 else (1 if r["reward"] > mean else -1)
            got = 0 if abs(r["advantage"]) < 1e-9 else (1 if r["advantage"] > 0 else -1)
            assert got == want, (r["reward"], group, r["advantage"])
    # and both are standard GRPO: one weight for every token
    assert all(set(r["token_weights"]) == {1.0} for r in binary + hier)


def test_full_mode_weights_follow_the_sign_rule(runs):
    rows = runs["full"][0]
    neg = [r for r in rows if r["advantage"] < 0]
    pos = [r for r in rows if r["advantage"] > 0]
    assert neg and pos
    for r in neg:  # A < 0: the markers (direct weight on diagnosed tokens, baseline elsewhere)
        assert r["token_weights"] == pytest.approx(markers_of(r["response_ids"]))
    for r in pos:  # A > 0: attributed 1.0, the other tokens 1.2
        assert r["token_weights"] == pytest.approx([W.baseline_weight if m > W.baseline_weight else W.positive_other_weight
                                                    for m in markers_of(r["response_ids"])])


def test_unconditional_weights_ignore_the_sign(runs):
    rows = runs["unconditional"][0]
    pos = [r for r in rows if r["advantage"] > 0]
    assert pos and any(W.direct_weight in r["token_weights"] for r in pos)
    assert all(r["token_weights"] == pytest.approx(markers_of(r["response_ids"])) for r in rows)


def test_the_modes_reach_the_update(runs):
    """Same rollouts, different weights or rewards: different updated policies (and binary == hierarchical only
    if every reward were already a bit, which the random policy does not give)."""
    params = {name: _params(d) for name, (_, d) in runs.items()}

    def moved(a: str, b: str) -> float:
        return max((params[a][k] - params[b][k]).abs().max().item() for k in params[a])

    for a, b in (("binary", "hierarchical"), ("hierarchical", "full"), ("full", "unconditional")):
        assert moved(a, b) > 1e-6, (a, b)
