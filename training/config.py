"""Cross-checking the GRPO job's config (the models live in ``schemas/config/train.py``; loading and
``--set`` are ``schemas.config.load_config``'s).

``validate_configs`` holds every check that spans sections or needs the world size, so a bad
combination fails once, at launch, with a message that names the fix.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from schemas.config import Config, load_config
from schemas.config.train import REWARD_KIND_OF_MODE, TrainRLConfig


def demo_config(**overrides: Any) -> TrainRLConfig:
    """The demo profile's ``train`` section (the one ``rubricrl run`` uses), with nested ``overrides``
    (``{"run": {"steps": 2}}``) merged on top; no environment overrides."""
    return load_config("demo", overrides={"train": overrides}, environ={}).train


def validate_configs(cfg: TrainRLConfig, world_size: int = 1) -> None:
    """Cross-section checks; raises ``ValueError`` naming the fix."""
    ro, ds, ob = cfg.rollout, cfg.deepspeed, cfg.objective
    if world_size < 1:
        raise ValueError(f"world_size={world_size}; launch with at least one process")
    if ro.queries_per_step % world_size:
        raise ValueError(f"rollout.queries_per_step={ro.queries_per_step} must be divisible by the world size "
                         f"{world_size} (each rank owns whole groups); set it to a multiple of {world_size}")
    per_rank = ro.queries_per_step // world_size * ro.group_size
    if per_rank % ds.micro_batch_size:
        raise ValueError(f"each rank holds {per_rank} responses per step, not divisible by deepspeed.micro_batch_size="
                         f"{ds.micro_batch_size}; pick a micro_batch_size that divides {per_rank}")
    if ds.precision == "fp16":
        raise ValueError("deepspeed.precision='fp16' is not supported (loss scaling would interact with the NaN guard); "
                         "use 'bf16' on GPU or 'fp32' on CPU")
    if ro.off_policy and not ro.stream_scoring:
        raise ValueError("rollout.off_policy=true generates the next step while this one is scored, which needs "
                         "rollout.stream_scoring=true; set both, or off_policy=false")
    if ro.engine == "vllm" and ds.zero_stage == 3 and world_size > 1:
        raise ValueError("rollout.engine='vllm' with ZeRO-3 on several ranks would gather the full model on every rank "
                         "each step; use zero_stage <= 2 or the transformers engine")


def with_mode_reward(cfg: Config) -> Config:
    """The configuration a training run scores with: ``env.reward_kind`` pinned to the reward of
    ``train.objective.mode`` (the one switch of the ablations, paper 4.3), so the rewards rows say what
    the trainer optimised. ``env.reward_kind`` is the reward of score-rollouts and evaluate; set to
    binary beside another training mode it is refused, naming the setting to use instead."""
    mode, kind = cfg.train.objective.mode, REWARD_KIND_OF_MODE[cfg.train.objective.mode]
    if cfg.env.reward_kind == "binary" and kind != "binary":
        raise ValueError(f"env.reward_kind='binary' with train.objective.mode={mode!r}: in training the mode selects "
                         "the reward; set train.objective.mode=binary for the binary ablation (binary reward, uniform "
                         "weights), or leave env.reward_kind at 'hierarchical'")
    if cfg.env.reward_kind == kind:
        return cfg
    out = cfg.model_copy(deep=True)
    out.env.reward_kind = kind
    return out


def micro_batches_per_rank(cfg: TrainRLConfig, world_size: int) -> int:
    return cfg.rollout.queries_per_step // world_size * cfg.rollout.group_size // cfg.deepspeed.micro_batch_size


def out_dir_of(run: Any) -> Path:
    """The job's ``run.out_dir``; a clear error when nobody set it (the launchers place it under the data dir)."""
    if run.out_dir is None:
        raise ValueError("run.out_dir is not set; pass one, or start the job with `python -m training` (it places "
                         "the run under <data_dir>/runs)")
    return Path(run.out_dir)
