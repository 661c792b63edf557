"""The ``sft_answers`` stage: every teacher answer with its gates; rejected ones stay, marked."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from schemas.contracts.validation import expectations, FrameSuite, rows, suite

if TYPE_CHECKING:  # GX (seconds, ~280 MB) loads when a suite is built: a scorer or a job reading a schema never pays it
    import great_expectations as gx

MESSAGE = pa.struct([pa.field("role", pa.string()), pa.field("content", pa.string())])

SFT_ANSWERS_SCHEMA = pa.schema([
    pa.field("answer_id", pa.string()),
    pa.field("query_id", pa.string()),
    pa.field("teacher", pa.string()),
    pa.field("provider", pa.string()),
    pa.field("prompt_version", pa.string()),
    pa.field("messages", pa.list_(MESSAGE)),
    pa.field("response", pa.string()),
    pa.field("error", pa.string()),
    pa.field("format_valid", pa.bool_()),
    pa.field("source_valid", pa.bool_()),
    pa.field("runtime_valid", pa.bool_()),
    pa.field("reward", pa.float64()),
    pa.field("rejected", pa.bool_()),
    pa.field("reject_reason", pa.string()),
    pa.field("difficulty", pa.string()),
    pa.field("domain", pa.string()),
    pa.field("category_ids", pa.list_(pa.string())),
])

REJECT_REASONS = ["missing", "format_invalid", "source_invalid", "runtime_invalid", "judge_failed"]


def sft_answers_suites() -> list[FrameSuite]:
    E = expectations()
    return [FrameSuite("rows", rows, suite(
        "sft_answers",
        E.ExpectColumnValuesToNotBeNull(column="answer_id"),
        E.ExpectColumnValuesToBeUnique(column="answer_id"),
        E.ExpectColumnValuesToNotBeNull(column="query_id"),
        E.ExpectColumnValuesToNotBeNull(column="rejected"),
        E.ExpectColumnValuesToBeInSet(column="reject_reason", value_set=REJECT_REASONS),
        E.ExpectColumnValuesToNotBeNull(column="provider"),
    ), ["answer_id"]),
        # The SFT export keeps exactly the accepted answers: a rejection without its reason (or a reason on an
        # accepted answer) would hide why an answer is in or out.
        FrameSuite("reasons", _reason_matches, suite(
            "sft_answers-reasons", E.ExpectColumnValuesToBeInSet(column="reason_matches_rejected", value_set=[True])),
            ["answer_id"])]


def _reason_matches(table: pa.Table):
    df = table.select(["answer_id", "rejected", "reject_reason"]).to_pandas()
    df["reason_matches_rejected"] = df["rejected"].fillna(False).astype(bool) == df["reject_reason"].notna()
    return df[["answer_id", "reason_matches_rejected"]]
