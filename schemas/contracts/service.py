"""Contracts of ``rubricrl serve-env``: one request item, and the ``service_scores`` stage.

A request is ``{"items": [ITEM, ...]}``; an item carries what ``rubricrl score`` takes: ``task`` (the
TASK.json object) or ``query_id`` (resolved against the published ``rubric_items``), ``response``,
and optionally ``diagnosis`` (a judge output: no LLM is called) and ``advantage`` (with the service's
tokenizer: token weights). The answer per item is what ``rubricrl score`` prints, plus ``index``
(the item's place in the request) and ``reason`` (why ``reward`` is null, when it is); an item sent with
``observe: true`` is also answered ``observation`` (the next user turn of a repair episode,
``rubricrl.environments.observation``) and ``passed`` (nothing left to fix), so a client in another
process, without this repository, runs multi-turn episodes.

``service_scores`` (kept when ``service.keep_scores`` is on): one row per item answered, so a team can
ask in DuckDB what its trainer was rewarded for::

    SELECT tier, count(*), avg(reward) FROM service_scores GROUP BY 1 ORDER BY 2 DESC;
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import math
from typing import Any

import pandas as pd
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from schemas.config.env import TIERS
from schemas.contracts.validation import expectations, FrameSuite, rows, suite

if TYPE_CHECKING:  # GX (seconds, ~280 MB) loads when a suite is built: a scorer or a job reading a schema never pays it
    import great_expectations as gx


class ScoreItem(BaseModel):
    """One item of ``POST /score`` (its shape; the task, query id and diagnosis are resolved after)."""

    model_config = ConfigDict(extra="forbid")

    task: dict[str, Any] | None = Field(None, description="TASK.json: query_id, query, rubric")
    query_id: str | None = Field(None, min_length=1, description="A query of the published rubric_items")
    response: str = Field(description="The model's full response text")
    diagnosis: dict[str, Any] | None = Field(None, description="A judge output for this response; no LLM call")
    advantage: float | None = Field(None, description="The response's advantage A: token weights with a tokenizer")
    observe: bool = Field(False, description="Also answer what the environment found, written for the policy "
                                             "(observation) and whether nothing is left to fix (passed)")

    @field_validator("advantage")
    @classmethod
    def _finite(cls, v: float | None) -> float | None:
        if v is not None and not math.isfinite(v):
            raise ValueError("must be a finite number")
        return v

    @model_validator(mode="after")
    def _one_task(self) -> "ScoreItem":
        if (self.task is None) == (self.query_id is None):
            raise ValueError('give exactly one of "task" (a TASK.json object) and "query_id" (a published query)')
        return self


SERVICE_SCORES_SCHEMA = pa.schema([
    pa.field("request_id", pa.string(), nullable=False),
    pa.field("item_index", pa.int64(), nullable=False),  # the item's place in its request
    pa.field("route", pa.string()),  # score | score/stream | openrlhf | local (an adapter in the trainer's process)
    pa.field("scored_at", pa.timestamp("us", tz="UTC")),
    pa.field("query_id", pa.string()),
    pa.field("response", pa.string()),
    pa.field("advantage", pa.float64()),
    pa.field("reward", pa.float64()),  # null: missing (reason says why), never a made-up number
    pa.field("reward_kind", pa.string()),
    pa.field("tier", pa.string()),
    pa.field("reason", pa.string()),
    pa.field("format_valid", pa.bool_()),
    pa.field("source_valid", pa.bool_()),
    pa.field("runtime_valid", pa.bool_()),
    pa.field("rubric_score", pa.float64()),
    pa.field("provider", pa.string()),  # the judge: offline | anthropic | openai | given | none
    pa.field("n_findings", pa.int64()),
    pa.field("latency_s", pa.float64()),  # the item's time in the service
    pa.field("result_json", pa.string()),  # the whole answer, as the trainer received it
])


def _consistent(table: pa.Table) -> pd.DataFrame:
    """A null reward is the missing tier and says why; a reward that is there is not missing."""
    df = table.select(["request_id", "item_index", "reward", "tier", "reason"]).to_pandas()
    missing = df["reward"].isna()
    ok = (missing & (df["tier"] == "missing") & (df["reason"].fillna("") != "")) | (~missing & (df["tier"] != "missing"))
    return pd.DataFrame({"request_id": df["request_id"], "item_index": df["item_index"], "consistent": ok})


def service_scores_suites() -> list[FrameSuite]:
    E = expectations()
    main = suite(
        "service_scores",
        E.ExpectColumnValuesToNotBeNull(column="request_id"),
        E.ExpectCompoundColumnsToBeUnique(column_list=["request_id", "item_index"]),
        E.ExpectColumnValuesToBeInSet(column="tier", value_set=list(TIERS)),
        E.ExpectColumnValuesToNotBeNull(column="provider"),
        E.ExpectColumnValuesToBeBetween(column="latency_s", min_value=0),
    )
    consistent = suite("service_scores-consistent", E.ExpectColumnValuesToBeInSet(column="consistent", value_set=[True]))
    return [FrameSuite("rows", rows, main, ["request_id", "item_index"]),
            FrameSuite("consistent", _consistent, consistent, ["request_id", "item_index"])]
