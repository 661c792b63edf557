"""Contract of the ``attributions`` stage: one row per response with its attribution trace.

The trace keeps what paper B.3 says it must: the SOURCE intervals ``[a, b)`` (add ``html_offset`` =
h for response offsets), the expansion relations with their reasons, and h. Nested lists of structs
are queryable in DuckDB, e.g.::

    SELECT response_id, f.key, unnest(f.direct_spans) FROM attributions, unnest(findings) AS t(f);

The great-expectations suites check the row ids, the status vocabulary, the counts, and that every
span is a non-empty interval inside the source.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from typing import get_args

import pandas as pd
import pyarrow as pa

from schemas.config.attribution import WeightRule
from schemas.contracts.validation import expectations, FrameSuite, rows, suite

if TYPE_CHECKING:  # GX (seconds, ~280 MB) loads when a suite is built: a scorer or a job reading a schema never pays it
    import great_expectations as gx

STATUSES = ["localised", "unlocalised", "no_findings"]
ANCHOR_STATUSES = ["matched", "ambiguous", "unmatched"]
WEIGHT_RULES = get_args(WeightRule)  # weight_mode: the rule the trainer applies to this row's tokens

SPAN = pa.struct([("start", pa.int64()), ("end", pa.int64())])
CONTEXT_SPAN = pa.struct([("start", pa.int64()), ("end", pa.int64()), ("reasons", pa.list_(pa.string()))])
ANCHOR = pa.struct([
    ("quote", pa.string()),
    ("status", pa.string()),  # matched | ambiguous | unmatched
    ("method", pa.string()),  # exact | whitespace | fragment | null
    ("candidates", pa.int32()),
    ("spans", pa.list_(SPAN)),
])
RELATION = pa.struct([
    ("kind", pa.string()),
    ("detail", pa.string()),
    ("anchor_start", pa.int64()),
    ("anchor_end", pa.int64()),
    ("start", pa.int64()),
    ("end", pa.int64()),
])
FINDING = pa.struct([
    ("key", pa.string()),  # layer.severity.index
    ("layer", pa.string()),
    ("severity", pa.string()),
    ("item_id", pa.string()),
    ("anchors", pa.list_(ANCHOR)),
    ("direct_spans", pa.list_(SPAN)),
    ("context_spans", pa.list_(CONTEXT_SPAN)),
    ("relations", pa.list_(RELATION)),
])

ATTRIBUTIONS_SCHEMA = pa.schema([
    pa.field("response_id", pa.string(), nullable=False),
    pa.field("query_id", pa.string()),
    pa.field("html_offset", pa.int64(), nullable=False),  # h
    pa.field("source_len", pa.int64(), nullable=False),
    pa.field("status", pa.string(), nullable=False),
    pa.field("n_findings", pa.int32(), nullable=False),
    pa.field("n_localised", pa.int32(), nullable=False),
    pa.field("findings", pa.list_(FINDING)),
    pa.field("advantage", pa.float64()),  # null when weights were not computed
    pa.field("weight_mode", pa.string()),  # train.objective.mode's rule (schemas.config.train.RULE_OF_MODE)
    pa.field("n_tokens", pa.int64()),
    pa.field("n_direct_tokens", pa.int64()),
    pa.field("n_context_tokens", pa.int64()),
])


def _spans_frame(table: pa.Table) -> pd.DataFrame:
    """One row per direct or context span, with the source length it must lie inside."""
    out = []
    for r in table.select(["response_id", "source_len", "findings"]).to_pylist():
        for f in r["findings"] or []:
            for kind in ("direct_spans", "context_spans"):
                for s in f[kind] or []:
                    out.append({"response_id": r["response_id"], "key": f["key"], "kind": kind,
                                "start": s["start"], "end": s["end"], "source_len": r["source_len"]})
    cols = ["response_id", "key", "kind", "start", "end", "source_len"]
    return pd.DataFrame(out, columns=cols)


def attributions_suites() -> list[FrameSuite]:
    """The published stage, which carries ``judge_provider`` (added by train-rl, schemas/contracts/training.py)."""
    E = expectations()
    return [
        FrameSuite("attributions", rows, suite(
            "attributions",
            E.ExpectColumnValuesToNotBeNull(column="response_id"),
            E.ExpectColumnValuesToBeUnique(column="response_id"),
            E.ExpectColumnValuesToBeInSet(column="status", value_set=STATUSES),
            E.ExpectColumnValuesToBeBetween(column="html_offset", min_value=0),
            E.ExpectColumnValuesToBeBetween(column="n_findings", min_value=0),
            E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="n_findings", column_B="n_localised", or_equal=True),
            E.ExpectColumnValuesToBeInSet(column="weight_mode", value_set=list(WEIGHT_RULES), mostly=1.0),
            E.ExpectColumnValuesToNotBeNull(column="judge_provider"),
        ), ["response_id"]),
        FrameSuite("attribution_spans", _spans_frame, suite(
            "attribution_spans",
            E.ExpectColumnValuesToBeBetween(column="start", min_value=0),
            E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="end", column_B="start"),
            E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="source_len", column_B="end", or_equal=True),
        ), ["response_id", "key"]),
    ]
