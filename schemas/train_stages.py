"""GX suites of the stages the train-rl flow publishes from the job's per-step records
(``rollouts`` and ``train_steps``; schemas in ``schemas/train_records.py``)."""
from __future__ import annotations

import great_expectations as gx

from schemas.validation import FrameSuite, rows, suite

TRAIN_MODES = ["binary", "hierarchical", "full", "unconditional"]


def rollouts_suites() -> list[FrameSuite]:
    E = gx.expectations
    return [FrameSuite("rows", rows, suite(
        "rollouts",
        E.ExpectColumnValuesToNotBeNull(column="query_id"),
        E.ExpectColumnValuesToNotBeNull(column="step"),
        E.ExpectCompoundColumnsToBeUnique(column_list=["step", "group_id", "sample"]),
        E.ExpectColumnValuesToBeInSet(column="mode", value_set=TRAIN_MODES),
        E.ExpectColumnValuesToBeBetween(column="reward", min_value=0.0, max_value=1.0),
    ), ["step", "query_id"])]


def train_steps_suites() -> list[FrameSuite]:
    E = gx.expectations
    return [FrameSuite("rows", rows, suite(
        "train_steps",
        E.ExpectColumnValuesToNotBeNull(column="value"),
        E.ExpectCompoundColumnsToBeUnique(column_list=["step", "metric"]),
        E.ExpectColumnValuesToBeBetween(column="step", min_value=1),
    ), ["step", "metric"])]
