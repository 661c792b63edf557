"""The ``benchmark_queries`` stage: what an ingested external set says about each of its queries.

One row per ingested query (same ``query_id`` as the ``queries`` stage): the benchmark's own labels
(category, application type, domain, difficulty: free text, kept as the benchmark spells them) and
its given checklist items. build-rubrics adds the given items to the query's rubric as dynamic
items marked given (``source_module = GIVEN_MODULE``); evaluate reports by these labels.

Formats read by ``tasks/queries/ingest.py`` (JSONL, one object per line):

- WebGen-Bench: ``id``, ``instruction``, ``Category`` (``{"primary_category", "subcategories"}`` or a
  string), ``application_type``, ``ui_instruct``: ``[{"task", "expected_result", "task_category"}]``;
  each test case becomes one given item (requirement = task, verification = expected_result).
- InteractScience: ``id``, ``question`` (the benchmark's HTML implementation plan: sections, the
  components by id and type with their defaults), ``discipline``, ``difficulty``,
  ``theorem or principle``; ``snapshot_checklists`` belong to its screenshot protocol and give no items.
- generic: ``id``, ``query``, optional ``checklist`` (strings, or objects with ``requirement`` and
  optional ``verification``), ``domain``, ``difficulty``, ``category``.
"""
from __future__ import annotations

import great_expectations as gx
import pyarrow as pa

from schemas.validation import FrameSuite, exploded, rows, suite

GIVEN_MODULE = "given"  # source_module of a rubric item copied from the benchmark, not derived by the model
BENCHMARK_FORMATS = ("webgen-bench", "interactscience", "generic")

GIVEN_ITEM = pa.struct([pa.field("requirement", pa.string()), pa.field("verification", pa.string())])
BENCHMARK_SCHEMA = pa.schema([
    pa.field("query_id", pa.string(), nullable=False),
    pa.field("benchmark", pa.string()),  # the file name it came from
    pa.field("format", pa.string()),  # one of BENCHMARK_FORMATS
    pa.field("external_id", pa.string()),  # the benchmark's own id
    pa.field("category", pa.string()),
    pa.field("application_type", pa.string()),
    pa.field("domain", pa.string()),
    pa.field("difficulty", pa.string()),
    pa.field("given_items", pa.list_(GIVEN_ITEM)),
])


def benchmark_suites() -> list[FrameSuite]:
    E = gx.expectations
    main = suite("benchmark_queries",
                 E.ExpectColumnValuesToNotBeNull(column="query_id"),
                 E.ExpectColumnValuesToBeUnique(column="query_id"),
                 E.ExpectColumnValuesToBeInSet(column="format", value_set=list(BENCHMARK_FORMATS)),
                 E.ExpectColumnValuesToNotBeNull(column="benchmark"))
    items = suite("benchmark_queries-given", E.ExpectColumnValuesToNotBeNull(column="given_item"))
    return [FrameSuite("rows", lambda t: rows(t.drop_columns(["given_items"])), main, ["query_id"]),
            FrameSuite("given", _given_frame, items, ["query_id"])]


def _given_frame(table: pa.Table):
    # one row per given item; an item without requirement text shows as null and fails the suite
    df = exploded("query_id", "given_items", "given_item")(table)
    df = df[df["given_item"].notna()].reset_index(drop=True)
    df["given_item"] = [None if not (i.get("requirement") or "").strip() else i["requirement"] for i in df["given_item"]]
    return df
