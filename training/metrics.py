"""Step metrics (TensorBoard) and per-step records (Parquet parts for the DuckDB stages).

Metric names are grouped by prefix: ``reward/``, ``loss/``, ``rollout/``, ``weights/``, ``judge/``
and ``time/`` (the step time split: ``generate_s``, ``score_s`` / ``score_tail_s`` / ``overlap_s`` as
``training/stream.py`` defines them, ``score_busy_s``, ``attribute_s``, ``update_s``, ``step_s``). Only rank 0 writes
TensorBoard; every rank writes its own rollout records.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from schemas.contracts.training import TRAIN_ROLLOUTS_SCHEMA, TRAIN_STEPS_SCHEMA
from schemas.layout import RUN_RECORDS
from training.rollout import Rollout
from training.stream import Scored
from training.update import PackedResponse


def atomic_parquet(path: Path, table: pa.Table) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def write_rollout_records(out_dir: Path, step: int, rank: int, rows: list[dict[str, Any]]) -> Path:
    path = out_dir / RUN_RECORDS / "rollouts" / f"step-{step:06d}-rank{rank}.parquet"
    atomic_parquet(path, pa.Table.from_pylist(rows, schema=TRAIN_ROLLOUTS_SCHEMA))
    return path


def write_step_record(out_dir: Path, step: int, metrics: dict[str, float]) -> Path:
    path = out_dir / RUN_RECORDS / "train_steps" / f"step-{step:06d}.parquet"
    rows = [{"step": step, "metric": k, "value": float(v)} for k, v in sorted(metrics.items())]
    atomic_parquet(path, pa.Table.from_pylist(rows, schema=TRAIN_STEPS_SCHEMA))
    return path


class MetricWriter:
    """TensorBoard scalars; ``purge_step`` drops events a resumed run will rewrite."""

    def __init__(self, log_dir: Path, enabled: bool, purge_step: int | None = None):
        self.log_dir, self._w = log_dir, None
        if enabled:
            from torch.utils.tensorboard import SummaryWriter

            self._w = SummaryWriter(log_dir=str(log_dir), purge_step=purge_step)

    def write(self, step: int, metrics: dict[str, float]) -> None:
        if self._w is None:
            return
        for k, v in metrics.items():
            self._w.add_scalar(k, v, step)
        self._w.flush()

    def close(self) -> None:
        if self._w is not None:
            self._w.close()


def fraction_by_weight(weight_values: list[float]) -> dict[str, float]:
    """``weights/frac_<w>`` for the weight values the paper uses (3.0, 1.5, 1.2, 1.0) and any other."""
    if not weight_values:
        return {}
    counts: dict[str, int] = {}
    for w in weight_values:
        key = f"weights/frac_{round(w, 2):g}"
        counts[key] = counts.get(key, 0) + 1
    return {k: c / len(weight_values) for k, c in counts.items()}


def gather_sums(local: dict[str, float]) -> dict[str, float]:
    """Sum small metric dicts over ranks (keys may differ between ranks)."""
    import torch.distributed as dist

    if not dist.is_initialized() or dist.get_world_size() == 1:
        return dict(local)
    parts: list[dict[str, float]] = [{} for _ in range(dist.get_world_size())]
    dist.all_gather_object(parts, local)
    out: dict[str, float] = {}
    for p in parts:
        for k, v in p.items():
            out[k] = out.get(k, 0.0) + v
    return out


def local_sums(rollouts: list[Rollout], scored: Scored, rewards: list[float | None], adv: Any,
               packed: list[PackedResponse]) -> dict[str, float]:
    s: dict[str, float] = {"responses": len(rollouts), "groups": adv.n_groups, "degenerate": adv.n_degenerate_groups,
                           "dropped": adv.n_dropped}
    got = [r for r in rewards if r is not None]
    s["reward_sum"], s["reward_sq"], s["rewarded"] = sum(got), sum(r * r for r in got), len(got)
    s["passed"] = sum(bool(p) for p in scored.info.get("passed") or [])
    s["judge_failed"] = sum(bool(f) for f in scored.info.get("judge_failed") or [])
    for tier in scored.info.get("tier") or []:
        if tier is not None:
            s[f"tier:{tier}"] = s.get(f"tier:{tier}", 0) + 1
    s["resp_tokens"] = sum(len(r.response_ids) for r in rollouts)
    s["finished"] = sum(r.finished for r in rollouts)
    for p in packed:
        if p.include:
            for key, c in fraction_by_weight(p.weights).items():
                s[key] = s.get(key, 0.0) + c * len(p.weights)
            s["weight_sum"] = s.get("weight_sum", 0.0) + sum(p.weights)
    return s


def step_metrics(sums: dict[str, float], upd: dict[str, float], times: dict[str, float]) -> dict[str, float]:
    n, rewarded = max(sums["responses"], 1), max(sums["rewarded"], 1)
    mean = sums["reward_sum"] / rewarded
    tokens = max(upd.get("tokens", 0.0), 1.0)
    m = {
        "reward/mean": mean,
        "reward/std": max(sums["reward_sq"] / rewarded - mean * mean, 0.0) ** 0.5,
        "reward/pass_rate": sums["passed"] / n,
        "reward/missing_frac": sums["dropped"] / n,
        "rollout/zero_variance_group_frac": sums["degenerate"] / max(sums["groups"], 1),
        "rollout/response_tokens_mean": sums["resp_tokens"] / n,
        "rollout/finished_frac": sums["finished"] / n,
        "rollout/entropy": upd.get("entropy_sum", 0.0) / tokens,
        "loss/policy": upd.get("loss_sum", 0.0) / tokens,
        "loss/clip_frac": upd.get("clipped", 0.0) / tokens,
        "loss/kl": upd.get("kl_sum", 0.0) / tokens,
        "loss/ratio_mean": upd.get("ratio_sum", 0.0) / tokens,  # to the behaviour logprobs (1 on-policy)
        "loss/ratio_max": upd.get("ratio_max", 0.0),
        "loss/tokens": upd.get("tokens", 0.0),
        "judge/failures": sums["judge_failed"],
        "judge/failure_rate": sums["judge_failed"] / n,
        "weights/mean": sums.get("weight_sum", 0.0) / tokens,
    }
    if "grad_norm" in upd:
        m["loss/grad_norm"] = upd["grad_norm"]
    m.update({f"reward/tier_{k[5:]}": v / n for k, v in sums.items() if k.startswith("tier:")})
    m.update({k: v / tokens for k, v in sums.items() if k.startswith("weights/frac_")})
    m.update({f"time/{k}": v for k, v in times.items()})
    m["time/tokens_per_s"] = sums["resp_tokens"] / max(times.get("step_s", 0.0), 1e-9)
    return m
