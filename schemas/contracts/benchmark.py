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
  Its own Playwright spec (``<id>.spec.js`` from the benchmark's ``PFT_tests/`` folder) is kept whole in
  ``official_tests``.
- ArtifactsBench (the lite set of JanusCoder's ``artifacts_bench_lite.json``): ``index``, ``question``,
  ``checklist`` of ten ``{"id", "title", "description", "maxScore"}`` scoring dimensions, ``class``,
  ``difficulty``. The checklist is its multimodal judge's rubric (``official_checklist``), not rubric
  items of ours: our reward would otherwise copy the judge it is compared with.
- generic: ``id``, ``query``, optional ``checklist`` (strings, or objects with ``requirement`` and
  optional ``verification``), ``domain``, ``difficulty``, ``category``. MiniAppBench publishes no data or
  harness we can read; its queries fit this format and get no official metric.

``OFFICIAL_METRICS``: the metric each format's own protocol reports (``tasks/evaluation/official.py``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from schemas.contracts.validation import expectations, exploded, FrameSuite, rows, suite

if TYPE_CHECKING:  # GX (seconds, ~280 MB) loads when a suite is built: a scorer or a job reading a schema never pays it
    import great_expectations as gx

GIVEN_MODULE = "given"  # source_module of a rubric item copied from the benchmark, not derived by the model
BENCHMARK_FORMATS = ("webgen-bench", "interactscience", "artifactsbench", "generic")
# format -> the benchmark's own metric per app, in [0, 1] (None: the format has no official protocol)
OFFICIAL_METRICS: dict[str, str | None] = {
    "interactscience": "pft_pass_rate",  # share of the app's Playwright functional tests that passed
    "artifactsbench": "checklist_score",  # the multimodal judge's overall score over its checklist, / 100
    "webgen-bench": "test_cases_met",  # share of the task's test cases (given rubric items) met
    "generic": None,
}

GIVEN_ITEM = pa.struct([pa.field("requirement", pa.string()), pa.field("verification", pa.string())])
CHECKLIST_ITEM = pa.struct([pa.field("id", pa.string()), pa.field("title", pa.string()),
                            pa.field("description", pa.string()), pa.field("max_score", pa.float64())])
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
    pa.field("official_tests", pa.string()),  # the benchmark's own test spec (InteractScience PFT), verbatim
    pa.field("official_tests_name", pa.string()),  # its file name, e.g. AdditiveCipher.spec.js
    pa.field("official_checklist", pa.list_(CHECKLIST_ITEM)),  # the benchmark judge's checklist (ArtifactsBench)
])


def benchmark_suites() -> list[FrameSuite]:
    E = expectations()
    main = suite("benchmark_queries",
                 E.ExpectColumnValuesToNotBeNull(column="query_id"),
                 E.ExpectColumnValuesToBeUnique(column="query_id"),
                 E.ExpectColumnValuesToBeInSet(column="format", value_set=list(BENCHMARK_FORMATS)),
                 E.ExpectColumnValuesToNotBeNull(column="benchmark"))
    items = suite("benchmark_queries-given", E.ExpectColumnValuesToNotBeNull(column="given_item"))
    return [FrameSuite("rows", lambda t: rows(t.drop_columns(["given_items", "official_checklist"])), main,
                       ["query_id"]),
            FrameSuite("given", _given_frame, items, ["query_id"])]


def _given_frame(table: pa.Table):
    # one row per given item; an item without requirement text shows as null and fails the suite
    df = exploded("query_id", "given_items", "given_item")(table)
    df = df[df["given_item"].notna()].reset_index(drop=True)
    df["given_item"] = [None if not (i.get("requirement") or "").strip() else i["requirement"] for i in df["given_item"]]
    return df
