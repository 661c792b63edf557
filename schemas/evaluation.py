"""The ``eval_results`` stage (evaluate, paper Table 1): one row per (generator, sampling run, query).

``passed`` is the paper's pass: every gate passed and every rubric item met (no critical or major
finding on a rubric item). ``tier`` is the rewards stage's tier (``missing`` when the judge failed:
not a pass, no reward). The markdown/PNG report is built from these rows by ``tasks/evaluation/summary.py``.
"""
from __future__ import annotations

import great_expectations as gx
import pyarrow as pa

from schemas.env import TIERS
from schemas.validation import FrameSuite, rows, suite

MODEL_KINDS = ["checkpoint", "responses", "api", "tiny-random"]

EVAL_RESULTS_SCHEMA = pa.schema([
    pa.field("eval_id", pa.string(), nullable=False),  # <model>:<run>:<query_id>
    pa.field("model", pa.string()),  # label in the report
    pa.field("model_path", pa.string()),
    pa.field("model_kind", pa.string()),
    pa.field("run", pa.int64()),
    pa.field("query_id", pa.string()),
    pa.field("difficulty", pa.string()),
    pa.field("domain", pa.string()),
    pa.field("response", pa.string()),
    pa.field("tier", pa.string()),
    pa.field("reward", pa.float64()),
    pa.field("rubric_score", pa.float64()),
    pa.field("passed", pa.bool_()),
    pa.field("items_total", pa.int64()),
    pa.field("items_failed", pa.int64()),  # rubric items with a critical or major finding
    pa.field("judge_provider", pa.string()),
    pa.field("category", pa.string()),  # the benchmark's category (ours: the query's first capability category)
    pa.field("output_tokens", pa.int64()),  # generated tokens (None: a folder of responses)
    pa.field("generation_s", pa.float64()),  # seconds to generate it (None: unknown, or served from the cache)
    pa.field("top_findings", pa.list_(pa.string())),  # the most severe judge findings, for the report
])


def eval_results_suites() -> list[FrameSuite]:
    E = gx.expectations
    return [FrameSuite("rows", rows, suite(
        "eval_results",
        E.ExpectColumnValuesToNotBeNull(column="eval_id"),
        E.ExpectColumnValuesToBeUnique(column="eval_id"),
        E.ExpectColumnValuesToNotBeNull(column="model"),
        E.ExpectColumnValuesToBeInSet(column="model_kind", value_set=MODEL_KINDS),
        E.ExpectColumnValuesToBeBetween(column="run", min_value=0),
        E.ExpectColumnValuesToBeInSet(column="tier", value_set=list(TIERS)),
        E.ExpectColumnValuesToNotBeNull(column="passed"),
        E.ExpectColumnValuesToBeBetween(column="rubric_score", min_value=0.0, max_value=1.0),
        E.ExpectColumnValuesToBeBetween(column="output_tokens", min_value=0),
        E.ExpectColumnValuesToBeBetween(column="generation_s", min_value=0.0),
    ), ["eval_id"])]
