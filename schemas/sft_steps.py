"""The ``sft_steps`` stage (train-sft): the SFT job's per-step metrics (long format, like the GRPO
job's ``train_steps`` records: ``step``, ``metric``, ``value``), published once the job finished."""
from __future__ import annotations

import great_expectations as gx

from schemas.train_records import TRAIN_STEPS_SCHEMA
from schemas.validation import FrameSuite, rows, suite

SFT_STEPS_SCHEMA = TRAIN_STEPS_SCHEMA


def sft_steps_suites() -> list[FrameSuite]:
    E = gx.expectations
    return [FrameSuite("rows", rows, suite(
        "sft_steps",
        E.ExpectColumnValuesToBeBetween(column="step", min_value=1),
        E.ExpectColumnValuesToNotBeNull(column="metric"),
        E.ExpectColumnValuesToNotBeNull(column="value"),
        E.ExpectCompoundColumnsToBeUnique(column_list=["step", "metric"]),
    ), ["step", "metric"])]
