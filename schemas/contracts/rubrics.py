"""The build-rubrics stages (paper B.1): pyarrow schemas and great-expectations suites.

Stages (DuckDB view names): ``expansions`` (one row per query), ``requirements``, ``modules``,
``rubric_candidates`` (one row per element; a query whose call failed keeps one row with a null
element id and its status), ``rubric_references`` (one row per query: the enriched reference, its
compact and judge-facing exports, coverage and faithfulness reports) and ``rubric_items`` (one row
per final item: query_id, scope, the seven fields and what decides it: evidence_kind, element, trigger,
effect, null where unknown).

Every row says which provider/model/prompt version produced it and carries ``input_hash``: the
chained hash of everything the row depends on (query text, the prompt fingerprints of its stage and
the stages before it, the stage settings). A later run re-uses rows whose hash is unchanged.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Callable

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from schemas.contracts.validation import expectations, FrameSuite, suite
from schemas.llm.rubric_construction import CANDIDATE_TARGETS, MODULE_KINDS, REQUIREMENT_TYPES
from schemas.rubric import EVIDENCE_KINDS, RUBRIC_LEVELS, SCOPES

if TYPE_CHECKING:  # GX (seconds, ~280 MB) loads when a suite is built: a scorer or a job reading a schema never pays it
    import great_expectations as gx
    from great_expectations.expectations.expectation import ColumnMapExpectation

STATUSES = ("ok", "missing", "error", "budget", "upstream_missing", "no_items")
_S, _L = pa.string(), pa.list_(pa.string())

COMMON = [pa.field("query_id", _S), pa.field("input_hash", _S), pa.field("status", _S), pa.field("error", _S),
          pa.field("attempts", pa.int32()), pa.field("provider", _S), pa.field("model", _S),
          pa.field("prompt_version", _S)]

UNDERSPECIFIED = pa.struct([("choice", _S), ("alternatives", _L), ("high_risk", pa.bool_()), ("frozen_decision", _S)])
CAUSAL_LINK = pa.struct([("action", _S), ("state_change", _S), ("computation", _S), ("visible_result", _S)])
EXPANSIONS_SCHEMA = pa.schema(COMMON + [
    pa.field("expanded_query", _S), pa.field("core_objects", _L), pa.field("actions", _L), pa.field("states", _L),
    pa.field("outputs", _L), pa.field("hard_constraints", _L), pa.field("underspecified", pa.list_(UNDERSPECIFIED)),
    pa.field("causal_links", pa.list_(CAUSAL_LINK)),
])
REQUIREMENTS_SCHEMA = pa.schema(COMMON + [
    pa.field("position", pa.int32()), pa.field("requirement_id", _S), pa.field("requirement_type", _S),
    pa.field("functional_role", _S), pa.field("description", _S), pa.field("query_evidence", _S),
    pa.field("must_cover", pa.bool_()), pa.field("evidence_in_query", pa.bool_()),
])
MODULES_SCHEMA = pa.schema(COMMON + [
    pa.field("position", pa.int32()), pa.field("module_id", _S), pa.field("name", _S), pa.field("kind", _S),
    pa.field("description", _S), pa.field("covered_requirement_ids", _L), pa.field("query_evidence", _S),
    pa.field("evidence_in_query", pa.bool_()),
])
RUBRIC_CANDIDATES_SCHEMA = pa.schema(COMMON + [
    pa.field("position", pa.int32()), pa.field("candidate_id", _S), pa.field("scope", _S),
    pa.field("requirement", _S), pa.field("verification", _S), pa.field("source_module", _S),
    pa.field("covered_requirement_ids", _L), pa.field("query_evidence", _S), pa.field("rubric_level", _S),
    pa.field("target", _S), pa.field("evidence_kind", _S), pa.field("element", _S), pa.field("trigger", _S),
    pa.field("effect", _L), pa.field("evidence_in_query", pa.bool_()),
])
UNSUPPORTED = pa.struct([("ids", _L), ("requirement", _S), ("query_evidence", _S), ("reason", _S),
                         ("found_by", _S)])
DECISION = pa.struct([("action", _S), ("candidate_ids", _L), ("result_ids", _L), ("reason", _S), ("made_by", _S)])
REFERENCES_SCHEMA = pa.schema(COMMON + [
    pa.field("expanded_query", _S), pa.field("reference_json", _S), pa.field("compact_json", _S),
    pa.field("judge_payload_json", _S), pa.field("n_initial", pa.int32()), pa.field("n_dynamic", pa.int32()),
    pa.field("requirement_ids", _L), pa.field("must_cover_ids", _L), pa.field("covered_requirement_ids", _L),
    pa.field("uncovered_requirement_ids", _L), pa.field("uncovered_must_cover_ids", _L),
    pa.field("unsupported_items", pa.list_(UNSUPPORTED)), pa.field("filtering_decisions", pa.list_(DECISION)),
    pa.field("coverage_report", _S), pa.field("faithfulness_report", _S),
])
CHECK_STATUSES = ("kept", "dropped", "none")
DRY_RUNS = ("inconclusive", "passed", "failed", "error", "skipped")
CHECKS_SCHEMA = pa.schema(COMMON + [
    pa.field("position", pa.int32()), pa.field("item_id", _S), pa.field("scope", _S),
    pa.field("check_json", _S),  # kept: the validated check (schemas/checks.py); dropped: what was proposed
    pa.field("check_status", _S), pa.field("check_problem", _S),  # why dropped, or why no check decides it
    pa.field("dry_run", _S),  # the check's verdict on an empty page (only 'inconclusive' is kept)
])
ITEMS_SCHEMA = pa.schema([
    pa.field("query_id", _S), pa.field("scope", _S), pa.field("position", pa.int32()), pa.field("id", _S),
    pa.field("requirement", _S), pa.field("verification", _S), pa.field("source_module", _S),
    pa.field("covered_requirement_ids", _L), pa.field("query_evidence", _S), pa.field("rubric_level", _S),
    pa.field("input_hash", _S), pa.field("provider", _S), pa.field("model", _S), pa.field("prompt_version", _S),
    pa.field("given", pa.bool_()),  # copied from an ingested benchmark's checklist (source_module 'given')
    pa.field("check", _S),  # the item's executable check (JSON, schemas/checks.py); null when none was kept
    # what decides the item (schemas/rubric.py STRUCTURE; issue #41): null where the rules know none (LLM, old)
    pa.field("evidence_kind", _S), pa.field("element", _S), pa.field("trigger", _S), pa.field("effect", _L),
])


# -- frames ----------------------------------------------------------------------------------------
def columns(*names: str, only_ok: bool = False) -> Callable[[pa.Table], pd.DataFrame]:
    """A frame of just the columns a suite checks (converting list columns to pandas is slow)."""

    def build(table: pa.Table) -> pd.DataFrame:
        t = table.filter(pc.equal(table.column("status"), "ok")) if only_ok else table
        return t.select(list(names)).to_pandas()

    return build


STATUS_COLUMNS = ("query_id", "status", "provider", "input_hash")


def _req_index(requirements: pa.Table | None) -> set[str] | None:
    if requirements is None:
        return None
    t = requirements.filter(pc.equal(requirements.column("status"), "ok")).select(["query_id", "requirement_id"])
    return {f"{q}\0{r}" for q, r in zip(t.column(0).to_pylist(), t.column(1).to_pylist())}


def covered_ids_exist(requirements: pa.Table | None, id_column: str) -> Callable[[pa.Table], pd.DataFrame]:
    """One row per element: does every covered requirement id exist among the query's requirements?"""

    def build(table: pa.Table) -> pd.DataFrame:
        index = _req_index(requirements)
        t = table.filter(pc.equal(table.column("status"), "ok")).select(["query_id", id_column,
                                                                          "covered_requirement_ids"])
        q, e, cov = (t.column(i).to_pylist() for i in range(3))
        ok = [index is None or all(f"{qq}\0{c}" in index for c in (cc or [])) for qq, cc in zip(q, cov)]
        return pd.DataFrame({"query_id": q, id_column: e, "covered_ids_exist": ok})

    return build


def _status_suite(name: str) -> gx.ExpectationSuite:
    E = expectations()
    return suite(name, E.ExpectColumnValuesToNotBeNull(column="query_id"),
                 E.ExpectColumnValuesToBeInSet(column="status", value_set=list(STATUSES)),
                 E.ExpectColumnValuesToNotBeNull(column="provider"),
                 E.ExpectColumnValuesToNotBeNull(column="input_hash"))


def _element_suites(stage: str, id_col: str, *extra: ColumnMapExpectation) -> list[FrameSuite]:
    E = expectations()
    ok = suite(f"{stage}-ok", E.ExpectColumnValuesToNotBeNull(column=id_col),
               E.ExpectCompoundColumnsToBeUnique(column_list=["query_id", id_col]),
               E.ExpectColumnValuesToNotBeNull(column="query_evidence"), *extra)
    checked = ["query_id", id_col, "query_evidence"] + [e.column for e in extra]
    return [FrameSuite("rows", columns(*STATUS_COLUMNS), _status_suite(stage), ["query_id"]),
            FrameSuite("ok", columns(*dict.fromkeys(checked), only_ok=True), ok, ["query_id"])]


def expansions_suites() -> list[FrameSuite]:
    E = expectations()
    main = suite("expansions", *_status_suite("expansions").expectations,
                 E.ExpectColumnValuesToBeUnique(column="query_id"))
    ok = suite("expansions-ok", E.ExpectColumnValuesToNotBeNull(column="expanded_query"),
               E.ExpectColumnValuesToNotBeNull(column="prompt_version"))
    return [FrameSuite("rows", columns(*STATUS_COLUMNS), main, ["query_id"]),
            FrameSuite("ok", columns("query_id", "expanded_query", "prompt_version", only_ok=True), ok, ["query_id"])]


def requirements_suites() -> list[FrameSuite]:
    E = expectations()
    return _element_suites("requirements", "requirement_id",
                           E.ExpectColumnValuesToBeInSet(column="requirement_type", value_set=list(REQUIREMENT_TYPES)),
                           E.ExpectColumnValuesToNotBeNull(column="must_cover"))


def _covered(stage: str, requirements: pa.Table | None, id_col: str) -> FrameSuite:
    E = expectations()
    s = suite(f"{stage}-covered-ids", E.ExpectColumnValuesToBeInSet(column="covered_ids_exist", value_set=[True]))
    return FrameSuite("covered_ids", covered_ids_exist(requirements, id_col), s, ["query_id", id_col])


def modules_suites(requirements: pa.Table | None = None) -> list[FrameSuite]:
    E = expectations()
    return [*_element_suites("modules", "module_id",
                             E.ExpectColumnValuesToBeInSet(column="kind", value_set=list(MODULE_KINDS))),
            _covered("modules", requirements, "module_id")]


def rubric_candidates_suites(requirements: pa.Table | None = None) -> list[FrameSuite]:
    E = expectations()
    return [*_element_suites("rubric_candidates", "candidate_id",
                             E.ExpectColumnValuesToBeInSet(column="scope", value_set=list(SCOPES)),
                             E.ExpectColumnValuesToBeInSet(column="rubric_level", value_set=list(RUBRIC_LEVELS)),
                             E.ExpectColumnValuesToBeInSet(column="target", value_set=list(CANDIDATE_TARGETS))),
            _covered("rubric_candidates", requirements, "candidate_id")]


def _reference_checks(table: pa.Table) -> pd.DataFrame:
    """Per ok reference: items exist; must_cover ids are covered or listed uncovered; covered ids exist."""
    t = table.filter(pc.equal(table.column("status"), "ok"))
    out = {"query_id": t.column("query_id").to_pylist(), "has_items": [], "must_cover_accounted": [],
           "covered_ids_exist": []}
    for ref, req, must, unc in zip(t.column("reference_json").to_pylist(), t.column("requirement_ids").to_pylist(),
                                   t.column("must_cover_ids").to_pylist(),
                                   t.column("uncovered_requirement_ids").to_pylist()):
        parsed = json.loads(ref)
        items = [*parsed["initial_state"], *parsed["dynamic"]]
        covered = {c for i in items for c in i["covered_requirement_ids"]}
        out["has_items"].append(bool(items))
        out["must_cover_accounted"].append(set(must) <= covered | set(unc))
        out["covered_ids_exist"].append(covered <= set(req))
    return pd.DataFrame(out)


def references_suites() -> list[FrameSuite]:
    E = expectations()
    main = suite("rubric_references", *_status_suite("rubric_references").expectations,
                 E.ExpectColumnValuesToBeUnique(column="query_id"))
    checks = suite("rubric_references-checks",
                   *(E.ExpectColumnValuesToBeInSet(column=c, value_set=[True])
                     for c in ("has_items", "must_cover_accounted", "covered_ids_exist")))
    return [FrameSuite("rows", columns(*STATUS_COLUMNS), main, ["query_id"]),
            FrameSuite("checks", _reference_checks, checks, ["query_id"])]


def _items_per_query(references: pa.Table | None) -> Callable[[pa.Table], pd.DataFrame]:
    """Per query of either table: an ok reference <=> at least one item; coverage by the items."""

    def build(table: pa.Table) -> pd.DataFrame:
        by_q: dict[str, tuple[set[str], int]] = {}
        for q, cov in zip(table.column("query_id").to_pylist(), table.column("covered_requirement_ids").to_pylist()):
            ids, n = by_q.get(q, (set(), 0))
            by_q[q] = (ids | set(cov or []), n + 1)
        refs: dict[str, tuple[set[str], set[str], set[str]]] = {}
        if references is not None:
            r = references.filter(pc.equal(references.column("status"), "ok"))
            for q, req, must, unc in zip(*(r.column(c).to_pylist() for c in (
                    "query_id", "requirement_ids", "must_cover_ids", "uncovered_requirement_ids"))):
                refs[q] = (set(req), set(must), set(unc))
        qs = sorted(set(by_q) | set(refs)) if references is not None else sorted(by_q)
        rows_: dict[str, list] = {"query_id": qs, "has_items": [], "has_reference": [], "must_cover_accounted": [],
                                  "covered_ids_exist": []}
        for q in qs:
            covered, n = by_q.get(q, (set(), 0))
            req, must, unc = refs.get(q, (covered, set(), set()))
            rows_["has_items"].append(n > 0)
            rows_["has_reference"].append(references is None or q in refs)
            rows_["must_cover_accounted"].append(must <= covered | unc)
            rows_["covered_ids_exist"].append(covered <= req)
        return pd.DataFrame(rows_)

    return build


def _id_matches_scope(table: pa.Table) -> pd.DataFrame:
    ids, scopes = table.column("id").to_pylist(), table.column("scope").to_pylist()
    ok = [bool(i) and (i[0] == ("I" if s == "initial_state" else "D")) and i[1:].isdigit() for i, s in zip(ids, scopes)]
    return pd.DataFrame({"query_id": table.column("query_id").to_pylist(), "id": ids, "id_matches_scope": ok})


def _check_parses(table: pa.Table) -> pd.DataFrame:
    from pydantic import ValidationError

    from schemas.checks import Check

    def ok(c: str | None) -> bool:
        try:
            return c is None or bool(Check.model_validate_json(c))
        except ValidationError:
            return False

    return pd.DataFrame({"query_id": table.column("query_id").to_pylist(), "id": table.column("id").to_pylist(),
                         "check_parses": [ok(c) for c in table.column("check").to_pylist()]})


def checks_suites() -> list[FrameSuite]:
    """rubric_checks: statuses in their sets; a kept check parses in the language and was not unsound on
    the empty page."""
    E = expectations()
    ok = suite("rubric_checks-ok", E.ExpectColumnValuesToNotBeNull(column="item_id"),
               E.ExpectCompoundColumnsToBeUnique(column_list=["query_id", "item_id"]),
               E.ExpectColumnValuesToBeInSet(column="scope", value_set=list(SCOPES)),
               E.ExpectColumnValuesToBeInSet(column="check_status", value_set=list(CHECK_STATUSES)),
               E.ExpectColumnValuesToBeInSet(column="dry_run", value_set=list(DRY_RUNS)))
    kept = suite("rubric_checks-kept", E.ExpectColumnValuesToBeInSet(column="check_parses", value_set=[True]),
                 E.ExpectColumnValuesToBeInSet(column="dry_run", value_set=["inconclusive", "skipped", None]))

    def kept_frame(table: pa.Table) -> pd.DataFrame:
        t = table.filter(pc.equal(table.column("check_status"), "kept"))
        df = _check_parses(t.select(["query_id", "item_id", "check_json"]).rename_columns(["query_id", "id", "check"]))
        df["dry_run"] = t.column("dry_run").to_pylist()
        return df

    return [FrameSuite("rows", columns(*STATUS_COLUMNS), _status_suite("rubric_checks"), ["query_id"]),
            FrameSuite("ok", columns("query_id", "item_id", "scope", "check_status", "dry_run", only_ok=True), ok,
                       ["query_id", "item_id"]),
            FrameSuite("kept", kept_frame, kept, ["query_id", "id"])]


def items_suites(references: pa.Table | None = None) -> list[FrameSuite]:
    E = expectations()
    main = suite("rubric_items", E.ExpectColumnValuesToNotBeNull(column="query_id"),
                 E.ExpectColumnValuesToNotBeNull(column="id"),
                 E.ExpectCompoundColumnsToBeUnique(column_list=["query_id", "id"]),
                 E.ExpectColumnValuesToBeInSet(column="scope", value_set=list(SCOPES)),
                 E.ExpectColumnValuesToBeInSet(column="rubric_level", value_set=list(RUBRIC_LEVELS)),
                 E.ExpectColumnValuesToNotBeNull(column="query_evidence"),
                 E.ExpectColumnValuesToNotBeNull(column="provider"),
                 E.ExpectColumnValuesToBeInSet(column="evidence_kind", value_set=list(EVIDENCE_KINDS)))  # or null
    ids = suite("rubric_items-ids", E.ExpectColumnValuesToBeInSet(column="id_matches_scope", value_set=[True]))
    per_q = suite("rubric_items-per-query",
                  *(E.ExpectColumnValuesToBeInSet(column=c, value_set=[True])
                    for c in ("has_items", "has_reference", "must_cover_accounted", "covered_ids_exist")))
    main_cols = columns("query_id", "id", "scope", "rubric_level", "query_evidence", "provider", "evidence_kind")
    checks = suite("rubric_items-checks", E.ExpectColumnValuesToBeInSet(column="check_parses", value_set=[True]))
    return [FrameSuite("rows", main_cols, main, ["query_id", "id"]), FrameSuite("ids", _id_matches_scope, ids, ["query_id", "id"]),
            FrameSuite("per_query", _items_per_query(references), per_q, ["query_id"]),
            FrameSuite("checks", _check_parses, checks, ["query_id", "id"])]
