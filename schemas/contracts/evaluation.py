"""The ``eval_results`` stage (evaluate, paper Table 1): one row per (generator, sampling run, query).

``passed`` is the paper's pass: every gate passed and every rubric item met (no critical or major
finding on a rubric item). ``tier`` is the rewards stage's tier (``missing`` when the judge failed:
not a pass, no reward). ``screenshot_*``: the apps' screenshots beside the stage, a null path always
with its ``screenshot_note``. ``official_*``: the ingested benchmark's own metric of the same app, by its
own protocol (``tasks/evaluation/official.py``): ``official_score`` in [0, 1], null when that protocol could
not judge the app or the benchmark has none, always with its ``official_note``; ``official_detail`` one row
per test, test case or judge score. The markdown/PNG/HTML report is built from these rows by
``tasks/evaluation/summary.py``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import re

import pandas as pd
import pyarrow as pa

from schemas.contracts.env import TIERS
from schemas.contracts.validation import expectations, exploded, FrameSuite, rows, suite
from schemas.layout import stage_screenshots

if TYPE_CHECKING:  # GX (seconds, ~280 MB) loads when a suite is built: a scorer or a job reading a schema never pays it
    import great_expectations as gx

STAGE = "eval_results"
MODEL_KINDS = ["checkpoint", "responses", "api", "tiny-random"]
OFFICIAL_STATUSES = ["passed", "failed", "timedOut", "interrupted", "skipped", "no_reference", "unserved", "met",
                     "unmet", "undecided", "scored"]
OFFICIAL_DETAIL = pa.struct([
    pa.field("name", pa.string()),  # the test's title, the test case, or "Overall Score"
    pa.field("passed", pa.bool_()),  # null: not judged here (no reference image, a library the mirror lacks...)
    pa.field("status", pa.string()),  # one of OFFICIAL_STATUSES
    pa.field("score", pa.float64()),  # a judge's points (ArtifactsBench); null for pass/fail tests
    pa.field("note", pa.string()),  # the first error line, what the sandbox refused, the judge's reason
])

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
    pa.field("tier_cause", pa.string()),  # why missing or runtime-invalid (schemas.contracts.env.TIER_CAUSES), else null
    pa.field("environment_gaps", pa.list_(pa.string())),  # library URLs the sandbox's mirror lacked (judgments')
    pa.field("reward", pa.float64()),
    pa.field("rubric_score", pa.float64()),
    pa.field("passed", pa.bool_()),
    pa.field("items_total", pa.int64()),
    pa.field("items_failed", pa.int64()),  # rubric items with a critical or major finding
    pa.field("items_undecided", pa.int64()),  # offline judge: items no evidence spoke to (out of rubric_score)
    pa.field("checks_passed", pa.int64()),  # the rubric's executable checks on this response, by verdict
    pa.field("checks_failed", pa.int64()),
    pa.field("checks_inconclusive", pa.int64()),
    pa.field("judge_provider", pa.string()),
    pa.field("category", pa.string()),  # the benchmark's category (ours: the query's first capability category)
    pa.field("output_tokens", pa.int64()),  # generated tokens (None: a folder of responses)
    pa.field("generation_s", pa.float64()),  # seconds to generate it (None: unknown, or served from the cache)
    pa.field("top_findings", pa.list_(pa.string())),  # the most severe judge findings, for the report
    # the browser check's screenshots, relative to the data directory (tasks/evaluation/screenshots.py)
    pa.field("screenshot_load", pa.string()),  # after load and settle, before the probe acts
    pa.field("screenshot_probe", pa.string()),  # after the probe
    pa.field("screenshot_note", pa.string()),  # why a screenshot is null (None: both kept)
    pa.field("official_metric", pa.string()),  # the benchmark's own metric (schemas.contracts.benchmark.OFFICIAL_METRICS)
    pa.field("official_score", pa.float64()),  # that metric for this app, in [0, 1]
    pa.field("official_detail", pa.list_(OFFICIAL_DETAIL)),
    pa.field("official_note", pa.string()),  # why the score is null, or what was not judged
])
SCREENSHOT_MOMENTS = ("load", "probe")


def screenshot_path_regex(moment: str) -> str:
    """A kept screenshot's path: ``<stage screenshots folder>/<app key>-<moment>.png`` (tasks.env.runtime)."""
    return f"^{re.escape(stage_screenshots(STAGE))}/[0-9a-f]+-{moment}\\.png$"


def screenshot_explained(table: pa.Table) -> pd.DataFrame:
    """Per row: every null screenshot path has a note saying why."""
    df = table.select(["eval_id", "screenshot_load", "screenshot_probe", "screenshot_note"]).to_pandas()
    df["explained"] = (df["screenshot_load"].notna() & df["screenshot_probe"].notna()) | df["screenshot_note"].notna()
    return df[["eval_id", "explained"]]


def official_explained(table: pa.Table) -> pd.DataFrame:
    """Per row: a null official score always says why."""
    df = table.select(["eval_id", "official_score", "official_note"]).to_pandas()
    df["explained"] = df["official_score"].notna() | df["official_note"].notna()
    return df[["eval_id", "explained"]]


def official_details(table: pa.Table) -> pd.DataFrame:
    df = exploded("eval_id", "official_detail", "detail")(table)
    df = df[df["detail"].notna()].reset_index(drop=True)
    df["status"] = [d["status"] for d in df["detail"]]
    return df[["eval_id", "status"]]


def eval_results_suites() -> list[FrameSuite]:
    E = expectations()
    return [FrameSuite("rows", rows, suite(
        STAGE,
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
        E.ExpectColumnValuesToBeBetween(column="official_score", min_value=0.0, max_value=1.0),
        *(E.ExpectColumnValuesToMatchRegex(column=f"screenshot_{m}", regex=screenshot_path_regex(m))
          for m in SCREENSHOT_MOMENTS),
    ), ["eval_id"]), FrameSuite("screenshots", screenshot_explained, suite(
        "eval_results_screenshots", E.ExpectColumnValuesToBeInSet(column="explained", value_set=[True]),
    ), ["eval_id"]), FrameSuite("official", official_explained, suite(
        "eval_results_official", E.ExpectColumnValuesToBeInSet(column="explained", value_set=[True]),
    ), ["eval_id"]), FrameSuite("official_detail", official_details, suite(
        "eval_results_official_detail", E.ExpectColumnValuesToBeInSet(column="status", value_set=OFFICIAL_STATUSES),
    ), ["eval_id"])]
