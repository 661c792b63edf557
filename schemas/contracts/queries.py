"""The ``query_candidates`` and ``queries`` stages (paper D.1): schema and GX suites."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
from pydantic import BaseModel, Field

from schemas.contracts.validation import expectations, exploded, FrameSuite, rows, suite

if TYPE_CHECKING:  # GX (seconds, ~280 MB) loads when a suite is built: a scorer or a job reading a schema never pays it
    import great_expectations as gx

DOMAINS = ("Games", "Science", "Tools", "Humanities", "Visualization", "Lifestyle")
DIFFICULTIES = ("easy", "medium", "hard")

QUERY_FIELDS = [
    pa.field("query_id", pa.string()),
    pa.field("text", pa.string()),
    pa.field("title", pa.string()),
    pa.field("capability_ids", pa.list_(pa.string())),
    pa.field("category_ids", pa.list_(pa.string())),
    pa.field("persona_id", pa.string()),
    pa.field("domain", pa.string()),
    pa.field("difficulty", pa.string()),
    pa.field("source", pa.string()),
    pa.field("provider", pa.string()),
    pa.field("model", pa.string()),
    pa.field("prompt_version", pa.string()),
    pa.field("candidate_index", pa.int64()),
]
QUERIES_SCHEMA = pa.schema(QUERY_FIELDS)
QUERY_CANDIDATES_SCHEMA = pa.schema(QUERY_FIELDS + [pa.field("error", pa.string())])


class QueryDraft(BaseModel):
    """What the synthesis prompt asks the model for."""

    title: str = Field(min_length=3, max_length=120)
    query: str = Field(min_length=40, description="The user's request for one interactive web app")


def _common(name: str, category_ids: list[str], capability_ids: list[str]) -> list[FrameSuite]:
    E = expectations()
    main = suite(
        name,
        E.ExpectColumnValuesToNotBeNull(column="query_id"),
        E.ExpectColumnValuesToBeUnique(column="query_id"),
        E.ExpectColumnValuesToBeInSet(column="domain", value_set=list(DOMAINS)),
        E.ExpectColumnValuesToBeInSet(column="difficulty", value_set=list(DIFFICULTIES)),
        E.ExpectColumnValuesToNotBeNull(column="provider"),
        E.ExpectColumnValuesToNotBeNull(column="source"),
    )
    cats = suite(f"{name}-categories", E.ExpectColumnValuesToBeInSet(column="category_id", value_set=category_ids))
    caps = suite(f"{name}-capabilities", E.ExpectColumnValuesToBeInSet(column="capability_id", value_set=capability_ids))
    return [
        FrameSuite("rows", rows, main, ["query_id"]),
        FrameSuite("categories", exploded("query_id", "category_ids", "category_id"), cats, ["query_id"]),
        FrameSuite("capabilities", exploded("query_id", "capability_ids", "capability_id"), caps, ["query_id"]),
    ]


def queries_suites(category_ids: list[str], capability_ids: list[str]) -> list[FrameSuite]:
    out = _common("queries", category_ids, capability_ids)
    main = out[0].suite
    out[0].suite = suite(main.name, *main.expectations, expectations().ExpectColumnValuesToNotBeNull(column="text"))
    return out


def query_candidates_suites(category_ids: list[str], capability_ids: list[str]) -> list[FrameSuite]:
    return _common("query_candidates", category_ids, capability_ids)
