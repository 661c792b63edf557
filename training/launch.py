"""Entry point the ``deepspeed`` launcher or torchrun runs (one process per rank).

Examples::

    python -m training --profile demo --set train.run.steps=2                # one CPU process
    torchrun --nproc_per_node 2 -m training --profile demo                  # two ranks, gloo
    deepspeed --num_gpus 8 --module training --config data/runs/train-rl/RUN/config.json   # one node, 8 GPUs
    python -m training --config config.json --resume                        # continue from the newest checkpoint

The configuration is the project's one (``schemas.config.load_config``): a profile, or with
``--config`` the whole resolved configuration a train-rl run wrote into its run folder; ``--set``
takes the same ``section.field=value`` paths as ``rubricrl --set``. The job reads ``train`` and the
``attribution`` weights. Without ``train.run.out_dir`` it writes under ``<data_dir>/runs/train-rl/job``
and records the resolved configuration there. The score function is ``train.run.score_fn``
("module:function", imported in every rank). Prints the summary JSON on rank 0.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys

from schemas.config import Config, load_config, write_config
from schemas.config.train import TrainRLConfig
from schemas.layout import RUN_CONFIG, runs_dir
from training.config import with_mode_reward
from training.stream import resolve_score_fn  # noqa: F401 (the job's way to its score function)


def build_config(args: argparse.Namespace) -> Config:
    for item in args.set or []:
        head = item.split(".", 1)[0].split("=", 1)[0]
        if head in TrainRLConfig.model_fields:
            raise ValueError(f"--set {item!r}: settings are paths in the whole configuration; write train.{item}")
    cfg = with_mode_reward(load_config(args.profile, sets=args.set, file=args.config))
    if args.resume:
        cfg.train.run.resume = True
    if cfg.train.run.out_dir is None:
        cfg.train.run.out_dir = runs_dir(cfg.data_dir, "train-rl") / "job"
    return cfg


def record_config(cfg: Config, args: argparse.Namespace) -> None:
    """The run folder holds the configuration the job ran with (the train-rl flow wrote it already)."""
    path = cfg.train.run.out_dir / RUN_CONFIG
    if args.config and os.path.abspath(args.config) == os.path.abspath(path) and not args.set and not args.resume:
        return
    if int(os.environ.get("RANK", "0")) == 0:
        write_config(cfg, path)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m training", description="GRPO training job (rubricrl train-rl)")
    p.add_argument("--config", help="a whole resolved configuration (a train-rl run folder's config.json)")
    p.add_argument("--profile", choices=["demo", "full"], default=None,
                   help="when --config is not given (default: RUBRICRL_PROFILE, else demo)")
    p.add_argument("--set", action="append", metavar="SECTION.FIELD=VALUE", help="override one field (repeatable)")
    p.add_argument("--resume", action="store_true", help="continue from the newest complete checkpoint in out_dir")
    p.add_argument("--local_rank", "--local-rank", type=int, default=None, help=argparse.SUPPRESS)  # deepspeed launcher
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        cfg = build_config(args)
        score_fn = resolve_score_fn(cfg.train.run.score_fn)
        record_config(cfg, args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from training.grpo import run_grpo

    summary = run_grpo(cfg.train, score_fn, attribution=cfg.attribution, env=cfg.env)
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
