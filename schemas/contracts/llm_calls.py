"""Contract of the ``llm_calls`` stage (the ledger): one row per logical LLM call.

A logical call is one ``Provider.complete``: the first round trip plus, when the reply was not
usable, the one corrective retry (``attempts`` = 2). Tokens and cost add up both round trips.
``cached`` is true when every round trip came from the response cache and nothing was billed;
``batch`` when the first round trip was answered by a Message Batch (billed at the batch discount).
``first_try_valid``: the first reply was schema-valid (what structured outputs buy shows here).
``status``: ok | missing (unusable after the corrective retry) | error (transport failure after
retries) | budget (not sent: the run's budget was spent).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from schemas.contracts.validation import expectations, FrameSuite, rows, suite

if TYPE_CHECKING:  # GX (seconds, ~280 MB) loads when a suite is built: a scorer or a job reading a schema never pays it
    import great_expectations as gx

STATUSES = ("ok", "missing", "error", "budget")

LLM_CALLS_SCHEMA = pa.schema([
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
    pa.field("stage", pa.string(), nullable=False),
    pa.field("key", pa.string(), nullable=False),
    pa.field("provider", pa.string(), nullable=False),
    pa.field("model", pa.string(), nullable=False),
    pa.field("prompt", pa.string(), nullable=False),
    pa.field("prompt_version", pa.string(), nullable=False),
    pa.field("cache_key", pa.string(), nullable=False),
    pa.field("status", pa.string(), nullable=False),
    pa.field("error", pa.string(), nullable=True),
    pa.field("attempts", pa.int32(), nullable=False),
    pa.field("input_tokens", pa.int64(), nullable=False),
    pa.field("output_tokens", pa.int64(), nullable=False),
    pa.field("cache_read_tokens", pa.int64(), nullable=False),
    pa.field("cache_write_tokens", pa.int64(), nullable=False),
    pa.field("latency_s", pa.float64(), nullable=False),
    pa.field("cost_usd", pa.float64(), nullable=False),
    pa.field("cached", pa.bool_(), nullable=False),
    pa.field("batch", pa.bool_(), nullable=False),
    # The first reply validated (no corrective retry); null on rows written before it was recorded.
    pa.field("first_try_valid", pa.bool_(), nullable=True),
])


def llm_calls_suites() -> list[FrameSuite]:
    E = expectations()
    nonneg = [E.ExpectColumnValuesToBeBetween(column=c, min_value=0) for c in
              ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "latency_s", "cost_usd")]
    return [FrameSuite(
        frame="llm_calls",
        build=rows,
        suite=suite(
            "llm_calls",
            *[E.ExpectColumnValuesToNotBeNull(column=c) for c in ("run_id", "stage", "key", "provider", "model",
                                                                 "cache_key", "status")],
            E.ExpectColumnValuesToBeInSet(column="status", value_set=list(STATUSES)),
            E.ExpectColumnValuesToBeBetween(column="attempts", min_value=0, max_value=2),
            *nonneg,
        ),
        id_columns=["run_id", "stage", "key"],
    )]
