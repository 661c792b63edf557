"""The stages the training flows publish from their jobs' per-step records: ``rollouts`` and
``train_steps`` (train-rl), ``sft_steps`` (train-sft); pyarrow schemas and GX suites.

The GRPO job writes one Parquet part per step and rank under ``<out_dir>/records/<stage>/``; the train-rl
flow publishes them through the stage store with ``judge_provider`` added (``with_judge_provider``).
``token_weights`` are the final w_{i,t} the objective used (after the sign rule), aligned with
``response_ids`` (the prediction targets). The SFT job's per-step metrics have the long format of
``train_steps`` (``step``, ``metric``, ``value``) and are published once the job finished.

The training jobs import these schemas, so great_expectations (seconds and about 280 MB to import) is
imported only when a suite is built.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from schemas.config.train import MODES
from schemas.contracts.validation import expectations, FrameSuite, rows, suite

if TYPE_CHECKING:  # GX (seconds, ~280 MB) loads when a suite is built: a scorer or a job reading a schema never pays it
    import great_expectations as gx
    import pandas as pd


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


# Lineage: the stages derived from the judge's verdicts say which provider judged (offline rules or an LLM) in
# every row, not only in the manifest, so a query over them cannot mix offline and LLM-judged rows unknowingly.
JUDGE_PROVIDER = pa.field("judge_provider", pa.string())


def with_judge_provider(schema: pa.Schema) -> pa.Schema:
    """A per-step record schema as published: the job's columns plus ``judge_provider``."""
    return schema.append(JUDGE_PROVIDER)


def judge_provider_expectation() -> gx.expectations.Expectation:
    return expectations().ExpectColumnValuesToNotBeNull(column="judge_provider")


def rollouts_suites() -> list[FrameSuite]:
    E = expectations()
    return [FrameSuite("rows", rows, suite(
        "rollouts",
        E.ExpectColumnValuesToNotBeNull(column="query_id"),
        E.ExpectColumnValuesToNotBeNull(column="step"),
        E.ExpectCompoundColumnsToBeUnique(column_list=["step", "group_id", "sample"]),
        E.ExpectColumnValuesToBeInSet(column="mode", value_set=list(MODES)),
        E.ExpectColumnValuesToBeBetween(column="reward", min_value=0.0, max_value=1.0),
        judge_provider_expectation(),
    ), ["step", "query_id"]),
        # One weight and one log-prob per prediction target: a shifted or truncated weight list would put the
        # diagnostic weights on the wrong tokens.
        FrameSuite("alignment", _aligned, suite(
            "rollouts-alignment", E.ExpectColumnValuesToBeInSet(column="weights_aligned", value_set=[True]),
            E.ExpectColumnValuesToBeInSet(column="logprobs_aligned", value_set=[True])), ["step", "query_id", "sample"])]


def _aligned(table: pa.Table) -> pd.DataFrame:
    import pandas as pd
    n = pc.list_value_length(table.column("response_ids"))
    return pd.DataFrame({
        "step": table.column("step").to_pylist(), "query_id": table.column("query_id").to_pylist(),
        "sample": table.column("sample").to_pylist(),
        "weights_aligned": pc.equal(pc.list_value_length(table.column("token_weights")), n).to_pylist(),
        "logprobs_aligned": pc.equal(pc.list_value_length(table.column("logprobs")), n).to_pylist()})


def train_steps_suites() -> list[FrameSuite]:
    E = expectations()
    return [FrameSuite("rows", rows, suite(
        "train_steps",
        E.ExpectColumnValuesToNotBeNull(column="value"),
        E.ExpectCompoundColumnsToBeUnique(column_list=["step", "metric"]),
        E.ExpectColumnValuesToBeBetween(column="step", min_value=1),
        judge_provider_expectation(),
    ), ["step", "metric"]),
        # The streamed step's timing split and staleness (training/stream.py, docs/training.md "Streamed scoring"): the
        # tail is part of the scoring span, and the off-policy trainer never uses a batch more than one step old.
        FrameSuite("timing", _timing, suite(
            "train_steps-timing",
            *[E.ExpectColumnValuesToBeBetween(column=c, min_value=0.0) for c in STEP_TIMES],
            E.ExpectColumnValuesToBeInSet(column="tail_within_score", value_set=[True]),
            E.ExpectColumnValuesToBeInSet(column="rollout/staleness", value_set=[0.0, 1.0]),
        ), ["step"])]


STEP_TIMES = ("time/generate_s", "time/score_s", "time/score_tail_s", "time/overlap_s", "time/update_s")


def _timing(table: pa.Table) -> pd.DataFrame:
    """One row per step with the timing metrics and the staleness as columns (a metric a step lacks is null,
    and its expectations skip it)."""
    long = table.select(["step", "metric", "value"]).to_pandas()
    wide = long.pivot_table(index="step", columns="metric", values="value", aggfunc="first")
    wide = wide.reindex(columns=[*STEP_TIMES, "rollout/staleness"]).reset_index()
    tail, score = wide["time/score_tail_s"], wide["time/score_s"]
    wide["tail_within_score"] = (tail.isna() | score.isna() | (tail <= score + 1e-9)).tolist()
    return wide


SFT_STEPS_SCHEMA = TRAIN_STEPS_SCHEMA


def sft_steps_suites() -> list[FrameSuite]:
    E = expectations()
    return [FrameSuite("rows", rows, suite(
        "sft_steps",
        E.ExpectColumnValuesToBeBetween(column="step", min_value=1),
        E.ExpectColumnValuesToNotBeNull(column="metric"),
        E.ExpectColumnValuesToNotBeNull(column="value"),
        E.ExpectCompoundColumnsToBeUnique(column_list=["step", "metric"]),
    ), ["step", "metric"])]
