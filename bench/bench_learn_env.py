"""Bench: the learning test on the real environment reward (``tests/test_learn_env.py``), repeated over seeds,
to choose the test's margin.

Runs the test's exact configuration (``fakes/learn_env.py``: the SFT start policy built once, then
the train-rl flow with the environment's score-step flow: headless Chromium, the offline judge, executable
checks) for each seed of ``train.run.seed`` (rollout sampling), in a fresh data directory, and prints
per seed the mean reward of the first step (the start policy) and of the last step (after the updates),
both on the same fixed queries, their gain, the wall time, and the margin it suggests: half the smallest
gain. ``--lr`` tries another learning rate (a tiny one shows what "no learning" looks like).

Run: ``.venv/bin/python bench/bench_learn_env.py [--seeds 5] [--first-seed 0] [--lr 3e-3]``. Report ``uptime`` beside the
figures: the time depends on the machine's load (the gains do not).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
import _safe  # noqa: E402,F401 - first of our imports: API keys removed, no paid call by accident


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=0, help="seeds run: first-seed .. first-seed + seeds - 1")
    ap.add_argument("--lr", type=float, default=None, help="train.optim.lr (default: the test's)")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench-learn-env-"))
    os.environ.setdefault("PREFECT_HOME", str(tmp / "prefect"))
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    from prefect.testing.utilities import prefect_test_harness

    from fakes.learn_env import learn, rl_sets

    lr = {} if args.lr is None else {"lr": args.lr}
    print("settings (train.run.seed = each seed):", " ".join(rl_sets(args.first_seed, **lr)), flush=True)
    gains = []
    with prefect_test_harness(server_startup_timeout=600):  # a loaded machine starts it slowly
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            t0 = time.perf_counter()
            out = learn(tmp / f"seed{seed}" / "data", seed=seed, **lr)
            steps = out["steps"]
            first, last = steps[min(steps)][0], steps[max(steps)][0]
            gains.append(last - first)
            print(f"seed {seed}: start {first:.4f}  end {last:.4f}  gain {last - first:+.4f}  per step "
                  f"{[round(m, 4) for m, _ in steps.values()]}  ({time.perf_counter() - t0:.0f} s)", flush=True)
    print(f"gain: min {min(gains):+.4f}  mean {statistics.mean(gains):+.4f}  max {max(gains):+.4f}  over "
          f"{len(gains)} seeds; suggested margin (half the smallest gain): {min(gains) / 2:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
