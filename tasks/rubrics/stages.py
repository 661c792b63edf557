"""The five stages in order, and how each stage's per-query context is read from the stages it
declares (``StageDef.needs``; the part with the same chunk key, so a part reads only its own queries).

Stage order (DuckDB views): expansions -> requirements -> modules -> rubric_candidates ->
rubric_references (per-query final reference + reports) -> rubric_items (one row per item).
"""
from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from schemas.config.rubrics import RubricsConfig
from schemas.contracts.rubrics import ITEMS_SCHEMA
from tasks.llm.base import Provider
from tasks.rubrics import decomposition, expansion, filtering, modules, requirements
from tasks.rubrics.pipeline import (OK, PartCounts, PriorRows, QueryContext, StageDef, build_part, digest, grouped,
                                    query_hash, read_part)
from tasks.stages.store import StageStore

TRACE_FIELDS = ("core_objects", "actions", "states", "outputs", "hard_constraints", "underspecified", "causal_links")


def stage_defs(evidence_min_chars: int = 3, max_items: int | None = None) -> list[StageDef]:
    """The five stages; ``max_items`` caps the offline rules' items per query (None: no cap)."""
    defs = [expansion.STAGE, requirements.make_stage(max_items), modules.STAGE, decomposition.STAGE,
            filtering.make_stage(evidence_min_chars)]
    check_needs(defs)
    return defs


def check_needs(defs: list[StageDef]) -> None:
    """Every stage needs earlier stages only, the one just before it last (its rows chain to that stage's)."""
    for i, sd in enumerate(defs):
        earlier = [d.name for d in defs[:i]]
        if any(n not in earlier for n in sd.needs) or sd.needs[-1:] != tuple(earlier[-1:]):
            raise ValueError(f"stage {sd.name} needs {sd.needs}: name only stages before it "
                             f"({', '.join(earlier) or 'none'}), the one just before it last")


def _upstream(rows: list[dict[str, Any]] | None) -> tuple[str, str]:
    """(status, input_hash) of a query in an upstream stage; a query absent there is missing."""
    if not rows:
        return "missing", "absent"
    return (OK if all(r["status"] == OK for r in rows) else rows[0]["status"]), rows[0]["input_hash"]


def load_contexts(store: StageStore, sd: StageDef, key: str, query_ids: list[str],
                  queries: dict[str, str]) -> list[QueryContext]:
    """Contexts of ``query_ids`` for stage ``sd``: the rows of the stages it needs, nothing else."""
    if not sd.needs:
        return [QueryContext(q, queries[q], query_hash(q, queries[q]), reader=sd.name, needs=sd.needs)
                for q in query_ids]
    read = {s: grouped(read_part(store, s, key, query_ids)) for s in sd.needs}
    upstream = read[sd.needs[-1]]
    given = given_items(store, query_ids) if sd.name == "rubric_references" else {}
    out = []
    for q in query_ids:
        status, h = _upstream(upstream.get(q))
        if given.get(q):  # a changed checklist rebuilds this query's reference, nothing else
            h = digest("given", h, json.dumps(given[q], sort_keys=True))
        exp = (read.get("expansions", {}).get(q) or [{}])[0]
        ok = lambda stage: [r for r in read.get(stage, {}).get(q, []) if r["status"] == OK]  # noqa: E731
        out.append(QueryContext(
            query_id=q, query=queries.get(q, ""), input_hash=h, status=status,
            expanded_query=exp.get("expanded_query") or "", trace={k: exp.get(k) for k in TRACE_FIELDS},
            requirements=ok("requirements"), modules=ok("modules"), candidates=ok("rubric_candidates"),
            given=given.get(q, []), reader=sd.name, needs=sd.needs))
    return out


def given_items(store: StageStore, query_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """query_id -> the given checklist items of an ingested benchmark (none when nothing was ingested)."""
    if store.manifest("benchmark_queries") is None:
        return {}
    t = store.read("benchmark_queries", columns=["query_id", "given_items"])
    wanted = set(query_ids)
    return {q: items for q, items in zip(t.column("query_id").to_pylist(), t.column("given_items").to_pylist())
            if q in wanted and items}


def items_part(store: StageStore, key: str, query_ids: list[str]) -> pa.Table:
    """``rubric_items`` part from the ``rubric_references`` and ``rubric_checks`` parts of the same key (no
    model call); an item's ``check`` is its kept check."""
    refs = read_part(store, "rubric_references", key, query_ids)
    chk = read_part(store, "rubric_checks", key, query_ids).to_pylist()
    kept = {(r["query_id"], r["item_id"]): r["check_json"] for r in chk if r["check_status"] == "kept"}
    rows = [{**r, "check": kept.get((r["query_id"], r["id"]))}
            for ref in refs.to_pylist() for r in filtering.item_rows(ref)]
    return pa.Table.from_pylist(rows, schema=ITEMS_SCHEMA).sort_by([("query_id", "ascending"),
                                                                      ("position", "ascending")])


def stage_part(store: StageStore, index: int, key: str, query_ids: list[str], texts: dict[str, str],
               provider: Provider, rcfg: RubricsConfig, prior: PriorRows | None,
               concurrency: int) -> tuple[pa.Table, PartCounts]:
    """One part of stage number ``index``: read its contexts, then ``build_part``.

    Takes light arguments on purpose: an orchestrator that inspects task parameters (Prefect walks
    them for upstream dependencies) would otherwise walk every query's context.
    """
    sd = stage_defs(rcfg.evidence_min_chars, rcfg.max_items)[index]
    ctxs = load_contexts(store, sd, key, query_ids, texts)
    return build_part(sd, ctxs, provider, rcfg.stage_settings(sd.section), rcfg.prompt_dir, prior, concurrency)
