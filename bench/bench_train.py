"""Training benchmarks (CPU): cost of the diagnostic weights, and the GRPO step-time split.

1. Weighted vs unweighted objective per step: the same batch updated in mode ``full`` (sign rule
   on markers, weighted surrogate) and ``hierarchical`` (uniform weights), through the real
   DeepSpeed update; and the objective alone on large tensors. Goal: under 2% overhead.
2. Step-time split (rollout / score / attribute / update) of the demo profile, with the toy score
   function or any ``--score-fn module:function`` (the train-rl flow's real environment).

Run: ``python bench/bench_train.py [--repeats 7] [--score-fn training.toy:pattern_reward]``
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from training.config import demo_config  # noqa: E402
from training.grpo import Scored, build_packed  # noqa: E402
from training.objective import token_loss  # noqa: E402
from training.rollout import Rollout  # noqa: E402
from training.update import make_micro_batches, run_update  # noqa: E402


def synthetic_step(n_groups: int, group: int, prompt_len: int, resp_len: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    rollouts, rewards, markers, gids = [], [], [], []
    for i in range(n_groups * group):
        resp = torch.randint(5, 500, (resp_len,), generator=g).tolist()
        rollouts.append(Rollout(torch.randint(5, 500, (prompt_len,), generator=g).tolist(), resp,
                                (-6.2 + 0.1 * torch.randn(resp_len, generator=g)).tolist(), True))
        rewards.append(float(torch.rand(1, generator=g)))
        markers.append(torch.tensor([1.0, 1.5, 3.0])[torch.randint(0, 3, (resp_len,), generator=g)].tolist())
        gids.append(i // group)
    return rollouts, Scored(rewards, markers, {}, 0.0, 0.0), rewards, gids


def bench_weights(model_dir: Path, repeats: int) -> dict[str, float]:
    from training.engine import build_engine, init_distributed, load_policy

    n_groups, group, mb = 2, 8, 8
    init_distributed("gloo")
    cfg = demo_config(rollout={"queries_per_step": n_groups, "group_size": group},
                      deepspeed={"micro_batch_size": mb}, optim={"optimizer": "sgd", "lr": 1e-9})
    model, _ = load_policy(model_dir, "fp32", torch.device("cpu"))
    engine = build_engine(cfg, model, 1)
    rollouts, scored, rewards, gids = synthetic_step(n_groups, group, prompt_len=64, resp_len=192)
    times: dict[str, list[float]] = {"full": [], "hierarchical": []}
    for r in range(repeats + 1):
        for mode in ("full", "hierarchical") if r % 2 else ("hierarchical", "full"):
            c = cfg.model_copy(update={"objective": cfg.objective.model_copy(update={"mode": mode})})
            t0 = time.perf_counter()
            packed, _ = build_packed(c, rollouts, scored, rewards, gids)
            n_tok = sum(len(p.response_ids) for p in packed if p.include)
            run_update(engine, make_micro_batches(packed, mb, 0), n_tok, 1, temperature=1.0, eps_low=0.2, eps_high=0.28)
            if r:  # first round warms up
                times[mode].append(time.perf_counter() - t0)
    full, hier = statistics.median(times["full"]), statistics.median(times["hierarchical"])
    return {"update_full_s": full, "update_uniform_s": hier, "overhead_pct": 100 * (full - hier) / hier}


def bench_objective_only(repeats: int) -> dict[str, float]:
    g = torch.Generator().manual_seed(1)
    shape = (64, 2048)
    logp = torch.randn(shape, generator=g).clamp(max=0)
    old = logp + 0.05 * torch.randn(shape, generator=g)
    adv, mask = torch.randn(shape, generator=g), torch.ones(shape, dtype=torch.bool)
    w = torch.tensor([1.0, 1.5, 3.0])[torch.randint(0, 3, shape, generator=g)]
    def plain() -> torch.Tensor:  # standard GRPO surrogate, no weights at all
        ratio = torch.exp(logp - old)
        sur = torch.minimum(ratio * adv, torch.clamp(ratio, 0.8, 1.28) * adv)
        return torch.where(mask, -sur, torch.zeros_like(sur)).sum()

    runs = {"weighted": lambda: token_loss(logp, old, adv, w, mask, 0.2, 0.28)[0].sum(), "unweighted": plain}
    ts: dict[str, list[float]] = {k: [] for k in runs}
    for r in range(repeats + 1):  # interleaved, first round is warm-up
        for name, fn in runs.items():
            t0 = time.perf_counter()
            fn()
            if r:
                ts[name].append(time.perf_counter() - t0)
    return {f"objective_{k}_ms": 1000 * statistics.median(v) for k, v in ts.items()}


def bench_split(score_fn_spec: str, steps: int) -> dict[str, float]:
    from training.grpo import run_grpo
    from training.launch import resolve_score_fn

    with tempfile.TemporaryDirectory() as d:
        cfg = demo_config(run={"out_dir": d, "steps": steps, "save_every": 10**6})
        hist = run_grpo(cfg, resolve_score_fn(score_fn_spec))["history"][1:]  # drop the warm-up step
    keys = ("time/rollout_s", "time/score_s", "time/attribute_s", "time/update_s", "time/step_s", "time/tokens_per_s")
    return {k: statistics.mean(h[k] for h in hist) for k in keys}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--steps", type=int, default=4, help="demo steps for the split (the first is dropped)")
    ap.add_argument("--score-fn", default="training.toy:pattern_reward")
    args = ap.parse_args()
    from training.tiny import build_tiny_model

    with tempfile.TemporaryDirectory() as d:
        model_dir = build_tiny_model(Path(d) / "tiny")
        w = bench_weights(model_dir, args.repeats)
    o = bench_objective_only(args.repeats * 3)
    print(f"weighted update step (mode full):        {w['update_full_s'] * 1000:8.1f} ms")
    print(f"unweighted update step (hierarchical):   {w['update_uniform_s'] * 1000:8.1f} ms")
    print(f"diagnostic-weight overhead per step:     {w['overhead_pct']:8.2f} %  (goal < 2%)")
    print(f"objective alone, 64x2048 tokens: weighted {o['objective_weighted_ms']:.2f} ms, "
          f"plain GRPO surrogate {o['objective_unweighted_ms']:.2f} ms (the multiply and clip-stats; "
          "forward/backward dominate the step)")
    s = bench_split(args.score_fn, args.steps)
    print(f"demo step-time split ({args.score_fn}, mean of {args.steps - 1} steps):")
    for k, v in s.items():
        print(f"  {k:22s} {v:10.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
