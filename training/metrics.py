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

from schemas.layout import RUN_RECORDS
from schemas.train_records import TRAIN_ROLLOUTS_SCHEMA, TRAIN_STEPS_SCHEMA


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
