"""The ``check_results`` stage: one row per scored response and checked rubric item.

Joinable to ``rubric_items`` on (query_id, item_id = id) and to ``rewards`` / ``judgments`` on
rollout_id, e.g. which items fail their checks most often::

    SELECT i.requirement, c.status, count(*) FROM check_results c
    JOIN rubric_items i ON i.query_id = c.query_id AND i.id = c.item_id GROUP BY ALL ORDER BY 3 DESC;

Offsets (``error_offset``, and those inside ``errors_json``) are character offsets into the response.
"""
from __future__ import annotations

import great_expectations as gx
import pandas as pd
import pyarrow as pa

from schemas.checks import STATUSES
from schemas.validation import FrameSuite, rows, suite

CHECK_RESULTS_SCHEMA = pa.schema([
    pa.field("rollout_id", pa.string(), nullable=False),
    pa.field("query_id", pa.string()),
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("scope", pa.string()),
    pa.field("status", pa.string()),  # passed | failed | inconclusive
    pa.field("step", pa.int64()),  # the failing (or stopping) step; null when passed
    pa.field("step_kind", pa.string()),
    pa.field("reason", pa.string()),
    pa.field("observed", pa.string()),
    pa.field("expected", pa.string()),
    pa.field("n_errors", pa.int64()),  # uncaught page errors during the check
    pa.field("error_offset", pa.int64()),  # the first one's response offset, when it has one
    pa.field("errors_json", pa.string()),
    pa.field("duration_s", pa.float64()),
    pa.field("clock", pa.string()),  # controlled (the environment's clock) | page (the page's own) | null: not run
    pa.field("clock_reason", pa.string()),  # why the page left the controlled clock (Web Audio, a worker, ...)
    pa.field("check_version", pa.string()),
])


def _consistent(table: pa.Table) -> pd.DataFrame:
    """A failed check names its step and why; a passed one names no failing step."""
    df = table.select(["rollout_id", "item_id", "status", "step", "reason"]).to_pandas()
    failed, passed = df["status"] == "failed", df["status"] == "passed"
    ok = (~failed | (df["step"].notna() & (df["reason"].fillna("") != ""))) & (~passed | df["step"].isna())
    return pd.DataFrame({"rollout_id": df["rollout_id"], "item_id": df["item_id"], "consistent": ok})


def check_results_suites() -> list[FrameSuite]:
    E = gx.expectations
    main = suite(
        "check_results",
        E.ExpectColumnValuesToNotBeNull(column="rollout_id"),
        E.ExpectColumnValuesToNotBeNull(column="item_id"),
        E.ExpectCompoundColumnsToBeUnique(column_list=["rollout_id", "item_id"]),
        E.ExpectColumnValuesToBeInSet(column="status", value_set=list(STATUSES)),
        E.ExpectColumnValuesToBeInSet(column="scope", value_set=["initial_state", "dynamic"]),
        E.ExpectColumnValuesToBeBetween(column="step", min_value=0),
        E.ExpectColumnValuesToBeBetween(column="error_offset", min_value=0),
        E.ExpectColumnValuesToNotBeNull(column="check_version"),
        E.ExpectColumnValuesToBeInSet(column="clock", value_set=["controlled", "page"]),
    )
    consistent = suite("check_results-consistent",
                       E.ExpectColumnValuesToBeInSet(column="consistent", value_set=[True]))
    return [FrameSuite("rows", rows, main, ["rollout_id", "item_id"]),
            FrameSuite("consistent", _consistent, consistent, ["rollout_id", "item_id"])]
