"""Entry point the ``deepspeed`` launcher or torchrun runs (one process per rank).

Examples::

    python -m training --profile demo --set run.out_dir=runs/demo           # one CPU process
    torchrun --nproc_per_node 2 -m training --profile demo                  # two ranks, gloo
    deepspeed --num_gpus 8 training/launch.py --config train_rl.json        # one node, 8 GPUs
    python -m training --config train_rl.json --resume                      # continue from the newest checkpoint

The score function is ``run.score_fn`` ("module:function", imported in every rank); the train-rl
flow points it at the environment + attribution tasks. Prints the summary JSON on rank 0.
"""
from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script by the deepspeed launcher: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from schemas.config_train import TrainRLConfig  # noqa: E402
from training.config import demo_config, load_config, parse_set  # noqa: E402


def resolve_score_fn(spec: str):
    module, sep, name = spec.partition(":")
    if not sep or not module or not name:
        raise ValueError(f"run.score_fn={spec!r}: use 'package.module:function'")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"run.score_fn={spec!r} cannot be imported ({e}); check the module path and function name") from e
    if not callable(fn):
        raise ValueError(f"run.score_fn={spec!r} is not callable")
    return fn


def build_config(args: argparse.Namespace) -> TrainRLConfig:
    cfg = load_config(args.config) if args.config else (demo_config() if args.profile == "demo" else TrainRLConfig())
    cfg = parse_set(cfg, args.set or [])
    if args.resume:
        cfg = cfg.model_copy(update={"run": cfg.run.model_copy(update={"resume": True})})
    return cfg


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m training", description="GRPO training job (rubricrl train-rl)")
    p.add_argument("--config", help="JSON file of the train_rl section (TrainRLConfig)")
    p.add_argument("--profile", choices=["demo", "full"], default="demo", help="defaults when --config is not given")
    p.add_argument("--set", action="append", metavar="SECTION.FIELD=VALUE", help="override one field (repeatable)")
    p.add_argument("--resume", action="store_true", help="continue from the newest complete checkpoint in out_dir")
    p.add_argument("--local_rank", "--local-rank", type=int, default=None, help=argparse.SUPPRESS)  # deepspeed launcher
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        cfg = build_config(args)
        score_fn = resolve_score_fn(cfg.run.score_fn)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from training.grpo import run_grpo

    summary = run_grpo(cfg, score_fn)
    import torch.distributed as dist

    if int(os.environ.get("RANK", "0")) == 0:
        short = {k: v for k, v in summary.items() if k != "history"}
        if summary["history"]:
            short["last_metrics"] = summary["history"][-1]
        print(json.dumps(short, indent=2, default=str))
        print(f"TensorBoard logs: {summary['tensorboard']}\nstep records (Parquet): {summary['records']}")
    if dist.is_initialized() and summary["rollout_engine"] != "vllm":  # vLLM's exit hook destroys the groups itself
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
