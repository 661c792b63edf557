"""Per-step records the GRPO job writes for DuckDB (stages ``rollouts`` and ``train_steps``).

The job writes one Parquet part per step and rank under ``<out_dir>/records/<stage>/``; the
train-rl flow publishes them through the stage store. ``token_weights`` are the final w_{i,t} the
objective used (after the sign rule), aligned with ``response_ids`` (the prediction targets).
"""
from __future__ import annotations

import pyarrow as pa

TRAIN_ROLLOUTS_SCHEMA = pa.schema([
    pa.field("step", pa.int64(), nullable=False),
    pa.field("rank", pa.int32(), nullable=False),
    pa.field("query_id", pa.string(), nullable=False),
    pa.field("group_id", pa.int64(), nullable=False),
    pa.field("sample", pa.int32(), nullable=False),
    pa.field("response", pa.string(), nullable=False),
    pa.field("response_ids", pa.list_(pa.int32()), nullable=False),
    pa.field("logprobs", pa.list_(pa.float32()), nullable=False),
    pa.field("finished", pa.bool_(), nullable=False),
    pa.field("reward", pa.float64(), nullable=True),  # null: missing reward (judge failure), response dropped
    pa.field("advantage", pa.float64(), nullable=False),
    pa.field("informative", pa.bool_(), nullable=False),
    pa.field("passed", pa.bool_(), nullable=True),
    pa.field("tier", pa.string(), nullable=True),
    pa.field("token_weights", pa.list_(pa.float32()), nullable=False),
    pa.field("mode", pa.string(), nullable=False),
])

TRAIN_STEPS_SCHEMA = pa.schema([
    pa.field("step", pa.int64(), nullable=False),
    pa.field("metric", pa.string(), nullable=False),
    pa.field("value", pa.float64(), nullable=False),
])
