"""Training benchmarks (CPU): cost of the diagnostic weights, and the GRPO step-time split.

1. Weighted vs unweighted update per step: real DeepSpeed steps of the same batch with the diagnostic
   weights (sign rule while packing, the weight multiply in the objective) and with uniform weights,
   rotating in one run; their ratio is the overhead. Goal: under 2%. A second unweighted arm gives the
   noise floor (its ratio to the first is 1 up to noise on a shared CPU).
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
import _safe  # noqa: E402,F401 - first of our imports: API keys removed, no paid call by accident

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from schemas.config.attribution import AttributionConfig  # noqa: E402
from training.config import demo_config  # noqa: E402
from training.grpo import Scored, build_packed  # noqa: E402
from training.objective import token_loss  # noqa: E402
from training.rollout import Rollout  # noqa: E402
from training.update import make_micro_batches, run_update  # noqa: E402


def synthetic_step(n_groups: int, group: int, prompt_len: int, resp_len: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    rollouts, rewards, membership, gids = [], [], [], []
    for i in range(n_groups * group):
        resp = torch.randint(5, 500, (resp_len,), generator=g).tolist()
        rollouts.append(Rollout(torch.randint(5, 500, (prompt_len,), generator=g).tolist(), resp,
                                (-6.2 + 0.1 * torch.randn(resp_len, generator=g)).tolist(), True))
        rewards.append(float(torch.rand(1, generator=g)))
        membership.append(torch.randint(0, 3, (resp_len,), generator=g).numpy().astype("int8"))
        gids.append(i // group)
    return rollouts, Scored(rewards, membership, {}, 0.0, 0.0), rewards, gids


def _median_time(fn, repeats: int) -> float:
    fn()  # warm-up
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def objective_costs(shape: tuple[int, int], repeats: int) -> tuple[float, float]:
    """Median forward+backward time of the weighted objective and of the plain GRPO surrogate."""
    g = torch.Generator().manual_seed(1)
    base = torch.randn(shape, generator=g).clamp(max=0)
    old = base + 0.05 * torch.randn(shape, generator=g)
    adv, mask = torch.randn(shape, generator=g), torch.ones(shape, dtype=torch.bool)
    w = torch.tensor([1.0, 1.5, 3.0])[torch.randint(0, 3, shape, generator=g)]

    def weighted() -> None:
        logp = base.clone().requires_grad_(True)
        token_loss(logp, old, adv, w, mask, 0.2, 0.28)[0].sum().backward()

    def plain() -> None:  # standard GRPO surrogate, no weights at all
        logp = base.clone().requires_grad_(True)
        ratio = torch.exp(logp - old)
        sur = torch.minimum(ratio * adv, torch.clamp(ratio, 0.8, 1.28) * adv)
        torch.where(mask, -sur, torch.zeros_like(sur)).sum().backward()

    return _median_time(weighted, repeats), _median_time(plain, repeats)


def bench_weights(model_dir: Path, repeats: int) -> dict[str, float]:
    """Overhead = a real weighted DeepSpeed step (sign-rule packing + update) against a real unweighted one (uniform
    weights), same batch, same engine, timed alternately in one run. The isolated pieces (packing, objective
    forward+backward) are timed too: on a shared CPU the noise of a whole step can exceed the difference."""
    from training.engine import build_engine, init_distributed, load_policy

    n_groups, group, mb, prompt_len, resp_len = 2, 8, 8, 64, 192
    init_distributed("gloo")
    cfg = demo_config(rollout={"queries_per_step": n_groups, "group_size": group},
                      deepspeed={"micro_batch_size": mb}, optim={"optimizer": "sgd", "lr": 1e-9})
    model, _ = load_policy(model_dir, "fp32", torch.device("cpu"))
    engine = build_engine(cfg, model, 1)
    rollouts, scored, rewards, gids = synthetic_step(n_groups, group, prompt_len, resp_len)
    mode_cfg = {m: cfg.model_copy(update={"objective": cfg.objective.model_copy(update={"mode": m})})
                for m in ("full", "hierarchical")}
    pack_t = {m: _median_time(lambda c=c: build_packed(c, rollouts, scored, rewards, gids, AttributionConfig()), 50)
              for m, c in mode_cfg.items()}
    packed, _ = build_packed(mode_cfg["full"], rollouts, scored, rewards, gids, AttributionConfig())
    n_tok = sum(len(p.response_ids) for p in packed if p.include)

    def real_step(c) -> float:
        """One real step's weight-dependent work: packing (sign rule or uniform) and the DeepSpeed update."""
        t0 = time.perf_counter()
        p, _ = build_packed(c, rollouts, scored, rewards, gids, AttributionConfig())
        run_update(engine, make_micro_batches(p, mb, 0), n_tok, 1, temperature=1.0, eps_low=0.2, eps_high=0.28)
        return time.perf_counter() - t0

    # Weighted (full) and unweighted (hierarchical: uniform weights) updates of the same batch on the same engine,
    # rotating the order each round so drift in machine load falls on all alike; the first round warms up. A second,
    # identical unweighted arm ("control") measures the noise floor: its ratio to the first is 1 up to noise.
    arms = ("full", "hierarchical", "control")
    step_t: dict[str, list[float]] = {a: [] for a in arms}
    for r in range(repeats + 1):
        for a in arms[r % 3:] + arms[:r % 3]:
            dt = real_step(mode_cfg["full" if a == "full" else "hierarchical"])
            if r:
                step_t[a].append(dt)
    w_obj, p_obj = objective_costs((n_groups * group, prompt_len + resp_len), 200)
    weighted, unweighted = statistics.median(step_t["full"]), statistics.median(step_t["hierarchical"])
    return {"update_s": min(step_t["full"]), "pack_full_ms": 1000 * pack_t["full"],
            "pack_uniform_ms": 1000 * pack_t["hierarchical"], "objective_weighted_ms": 1000 * w_obj,
            "objective_plain_ms": 1000 * p_obj, "weighted_step_s": weighted, "unweighted_step_s": unweighted,
            "control_step_s": statistics.median(step_t["control"]), "overhead_pct": 100 * (weighted / unweighted - 1)}


def bench_split(score_fn_spec: str, steps: int) -> dict[str, float]:
    from training.grpo import run_grpo
    from training.launch import resolve_score_fn

    with tempfile.TemporaryDirectory() as d:
        cfg = demo_config(run={"out_dir": d, "steps": steps, "save_every": 10**6})
        hist = run_grpo(cfg, resolve_score_fn(score_fn_spec))["history"][1:]  # drop the warm-up step
    keys = ("time/generate_s", "time/score_s", "time/attribute_s", "time/update_s", "time/step_s", "time/tokens_per_s")
    return {k: statistics.mean(h[k] for h in hist) for k in keys}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--steps", type=int, default=4, help="demo steps for the split (the first is dropped)")
    ap.add_argument("--score-fn", default="training.toy:pattern_reward")
    args = ap.parse_args()
    from training.tiny import build_tiny_model

    with tempfile.TemporaryDirectory() as d:
        w = bench_weights(build_tiny_model(Path(d) / "tiny"), args.repeats)
    print(f"update step, 16 responses x (64 prompt + 192 response) tokens: {w['update_s'] * 1000:.1f} ms "
          f"(best of {args.repeats})")
    print(f"packing with the sign rule: {w['pack_full_ms']:.3f} ms; with uniform weights: {w['pack_uniform_ms']:.3f} ms")
    print(f"objective fwd+bwd: weighted {w['objective_weighted_ms']:.3f} ms; plain GRPO surrogate "
          f"{w['objective_plain_ms']:.3f} ms")
    print(f"real DeepSpeed steps, same batch, rotating (median of {args.repeats}): weighted (full) "
          f"{w['weighted_step_s'] * 1000:.1f} ms, unweighted (uniform) {w['unweighted_step_s'] * 1000:.1f} ms; "
          f"ratio {w['weighted_step_s'] / w['unweighted_step_s']:.4f}")
    print(f"noise floor: a second unweighted arm, same batch, {w['control_step_s'] * 1000:.1f} ms; ratio to the first "
          f"{w['control_step_s'] / w['unweighted_step_s']:.4f} (an overhead inside this band is not measurable here)")
    print(f"diagnostic-weight overhead per step: {w['overhead_pct']:.2f} %  (goal < 2%)")
    s = bench_split(args.score_fn, args.steps)
    print(f"demo step-time split ({args.score_fn}, mean of {args.steps - 1} steps):")
    for k, v in s.items():
        print(f"  {k:22s} {v:10.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
