"""Loading and cross-checking the GRPO job's config (the models live in ``schemas/config_train.py``).

``validate_configs`` holds every check that spans sections or needs the world size, so a bad
combination fails once, at launch, with a message that names the fix.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from schemas.config_train import DEMO_OVERRIDES, TrainRLConfig


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def demo_config(**overrides: Any) -> TrainRLConfig:
    """The demo profile, with nested ``overrides`` (``{"run": {"steps": 2}}``) merged on top."""
    return TrainRLConfig.model_validate(deep_merge(DEMO_OVERRIDES, overrides))


def load_config(path: str | Path) -> TrainRLConfig:
    p = Path(path)
    if not p.exists():
        raise ValueError(f"config file {p} does not exist; write one with TrainRLConfig().model_dump_json()")
    return TrainRLConfig.model_validate(json.loads(p.read_text()))


def parse_set(cfg: BaseModel, assignments: list[str]) -> Any:
    """Apply ``section.field=value`` overrides (values parsed as JSON when they parse, else strings)."""
    data = cfg.model_dump(mode="json")
    for a in assignments:
        key, sep, raw = a.partition("=")
        parts = key.strip().split(".")
        if not sep or len(parts) != 2 or parts[0] not in data or parts[1] not in data[parts[0]]:
            raise ValueError(f"--set {a!r}: use section.field=value with a section of {sorted(data)} and one of its fields")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        data[parts[0]][parts[1]] = value
    return type(cfg).model_validate(data)


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
    if ob.mode in ("binary", "hierarchical") and ob.weights_input == "final":
        raise ValueError(f"objective.mode={ob.mode!r} uses uniform token weights; weights_input='final' only makes sense "
                         "with mode 'full' or 'unconditional'")
    if ob.mode == "unconditional" and ob.weights_input == "final":
        raise ValueError("objective.mode='unconditional' needs the nominal markers; set objective.weights_input='markers'")
    if ds.precision == "fp16":
        raise ValueError("deepspeed.precision='fp16' is not supported (loss scaling would interact with the NaN guard); "
                         "use 'bf16' on GPU or 'fp32' on CPU")
    if ro.engine == "vllm" and ds.zero_stage == 3 and world_size > 1:
        raise ValueError("rollout.engine='vllm' with ZeRO-3 on several ranks would gather the full model on every rank "
                         "each step; use zero_stage <= 2 or the transformers engine")


def micro_batches_per_rank(cfg: TrainRLConfig, world_size: int) -> int:
    return cfg.rollout.queries_per_step // world_size * cfg.rollout.group_size // cfg.deepspeed.micro_batch_size
