"""The build-rubrics work: the five stages of the query-grounded rubric construction (paper B.1),
``rubric_checks`` and ``rubric_items``, each a published, validated stage over the ``queries`` stage.

Parts are chunks of the sorted query ids, so a run killed half way resumes where it stopped. Rows whose
chained input hash is unchanged are copied from the previous version: only queries without a current
reference are sent to the model; ``force`` rebuilds everything. A changed prompt (its version and text
enter the hash) re-runs that stage and the ones after it only. The build-rubrics flow
(``flows/build_rubrics.py``) calls ``build_stages`` with its Prefect tasks as the part makers.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from schemas.config.env import RuntimeConfig
from schemas.config.rubrics import RubricsConfig
from schemas.contracts.rubrics import (ITEMS_SCHEMA, checks_suites, expansions_suites, items_suites, modules_suites,
                                       references_suites, requirements_suites, rubric_candidates_suites)
from tasks.llm.base import Provider
from tasks.rubrics import checks, pipeline, stages
from tasks.stages.stage import StageOutcome, StageSpec, run_stage
from tasks.stages.store import StageStore


class PartMakers(NamedTuple):
    """What makes one part of each stage: ``stage(name)`` for the five LLM stages, ``items``, ``checks``."""

    stage: Callable[[str], Callable[..., Any]]
    items: Callable[..., pa.Table]
    checks: Callable[..., Any]


PLAIN = PartMakers(lambda _name: stages.stage_part, stages.items_part, checks.checks_part)


# modules and candidates also check that covered ids exist among the query's published requirements
SUITES: dict[str, Callable[[pa.Table | None], list]] = {
    "expansions": lambda _r: expansions_suites(), "requirements": lambda _r: requirements_suites(),
    "modules": modules_suites, "rubric_candidates": rubric_candidates_suites,
    "rubric_references": lambda _r: references_suites()}


def _hash(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _stats(counts: pipeline.PartCounts) -> Callable[[pa.Table], dict[str, Any]]:
    def stats(t: pa.Table) -> dict[str, Any]:
        status = t.column("status")
        per_q = t.group_by(["query_id", "status"]).aggregate([]) if t.num_rows else t
        out = {"queries": len(set(t.column("query_id").to_pylist())), "rows": t.num_rows,
               "queries_ok": int(pc.sum(pc.equal(per_q.column("status"), "ok")).as_py() or 0) if t.num_rows else 0,
               "queries_missing": int(pc.sum(pc.is_in(per_q.column("status"), value_set=pa.array(
                   ["missing", "error", "budget", "no_items"]))).as_py() or 0) if t.num_rows else 0,
               "upstream_missing": int(pc.sum(pc.equal(status, "upstream_missing")).as_py() or 0),
               "computed": counts.computed, "reused": counts.reused}
        if "evidence_in_query" in t.column_names:
            out["evidence_not_in_query"] = int(pc.sum(pc.invert(pc.fill_null(t.column("evidence_in_query"),
                                                                               True))).as_py() or 0)
        return out

    return stats


def build_stages(store: StageStore, provider: Provider, rcfg: RubricsConfig, *, force: bool = False,
                 concurrency: int = 8, runtime: RuntimeConfig | None = None,
                 parts: PartMakers = PLAIN) -> list[StageOutcome]:
    """Run the five stages, ``rubric_checks`` and ``rubric_items`` over the published ``queries`` stage.
    ``runtime``: the browser the checks are dry-run in (None: no dry run, the rows say so); ``parts``: what
    makes one part of each stage (the flow passes its Prefect tasks)."""
    queries = store.read("queries", columns=["query_id", "text"])
    queries = queries.filter(pc.is_valid(queries.column("text")))
    texts = dict(zip(queries.column("query_id").to_pylist(), queries.column("text").to_pylist()))
    ids = sorted(texts)[: rcfg.max_queries] if rcfg.max_queries else sorted(texts)
    if not ids:
        raise ValueError("the queries stage has no query text; run synthesize-queries (or ingest a file) first")
    chunks = pipeline.chunk_query_ids(ids, rcfg.chunk_size)
    inputs = {"queries": store.version("queries")}
    if store.manifest("benchmark_queries") is not None:  # given checklist items enter rubric_references
        inputs["benchmark_queries"] = store.version("benchmark_queries")
    part_cfg = {"chunk_size": rcfg.chunk_size, "max_queries": rcfg.max_queries}
    outcomes: list[StageOutcome] = []
    req_table: list[pa.Table] = []
    for index, sd in enumerate(stages.stage_defs(rcfg.evidence_min_chars)):
        settings = rcfg.stage_settings(sd.section)  # enters the fingerprint; rows hash it too
        prior = pipeline.PriorRows(store, sd.name, enabled=not force)
        counts = pipeline.PartCounts()

        def make(key: str, index: int = index, sd: pipeline.StageDef = sd, prior: pipeline.PriorRows = prior,
                 counts: pipeline.PartCounts = counts) -> pa.Table:
            chunk_texts = {q: texts[q] for q in chunks[key]} if index == 0 else {}
            table, c = parts.stage(sd.name)(store, index, key, chunks[key], chunk_texts, provider, rcfg, prior,
                                            concurrency)
            counts.add(c)
            return table

        def suites(name: str = sd.name) -> list:
            return SUITES[name](req_table[0] if req_table else None)

        out = run_stage(store, StageSpec(sd.name, sd.schema, suites), part_keys=list(chunks), make_part=make,
                        provider=provider.name, config=rcfg.model_dump(mode="json"),
                        config_hash=_hash([part_cfg, settings]), inputs=dict(inputs),
                        extra={"prompt": pipeline.prompt_fingerprint(sd.prompt, rcfg.prompt_dir),
                               "provider": provider.name, "model": provider.model},
                        force=force, stats=_stats(counts))
        outcomes.append(out)
        inputs[sd.name] = out.manifest.version
        if sd.name == "requirements":
            req_table.append(store.read("requirements", columns=["query_id", "status", "requirement_id"]))
    outcomes.append(_checks_stage(store, provider, rcfg, chunks, inputs, part_cfg, force, concurrency, runtime,
                                  parts.checks))
    refs = store.read("rubric_references")
    items = run_stage(store, StageSpec("rubric_items", ITEMS_SCHEMA, lambda: items_suites(refs)),
                      part_keys=list(chunks), make_part=lambda k: parts.items(store, k, chunks[k]),
                      provider=provider.name, config=rcfg.model_dump(mode="json"), config_hash=_hash(part_cfg),
                      inputs={"rubric_references": inputs["rubric_references"],
                              "rubric_checks": outcomes[-1].manifest.version}, force=force,
                      stats=lambda t: {"items": t.num_rows, "queries": len(set(t.column("query_id").to_pylist()))})
    outcomes.append(items)
    return outcomes


def _checks_stage(store: StageStore, provider: Provider, rcfg: RubricsConfig, chunks: dict[str, list[str]],
                  inputs: dict[str, str], part_cfg: dict[str, Any], force: bool, concurrency: int,
                  runtime: RuntimeConfig | None, checks_part: Callable[..., Any]) -> StageOutcome:
    """``rubric_checks``: a check per item where one fits, validated and dry-run (tasks/rubrics/checks.py)."""
    sd = checks.STAGE
    settings = rcfg.stage_settings(sd.section)
    prior = pipeline.PriorRows(store, sd.name, enabled=not force)
    counts = pipeline.PartCounts()
    dry = {"dry_run": runtime.model_dump(mode="json") if runtime else None, "step_ms": rcfg.dry_run_step_timeout_ms}

    def make(key: str) -> pa.Table:
        table, c = checks_part(store, key, chunks[key], provider, settings, rcfg.prompt_dir, prior, concurrency,
                               runtime, rcfg.dry_run_step_timeout_ms)
        counts.add(c)
        return table

    def stats(t: pa.Table) -> dict[str, Any]:
        status = t.column("check_status").to_pylist()
        return {**_stats(counts)(t), "checks_kept": status.count("kept"), "checks_dropped": status.count("dropped"),
                "items_without_check": status.count("none"),
                # items no check can decide, each with its reason in check_problem (``capabilities.EVIDENCE``)
                "items_uncheckable": sum(s == "none" and p is not None for s, p in
                                         zip(status, t.column("check_problem").to_pylist()))}

    return run_stage(store, StageSpec(sd.name, sd.schema, checks_suites), part_keys=list(chunks), make_part=make,
                     provider=provider.name, config=rcfg.model_dump(mode="json"),
                     config_hash=_hash([part_cfg, settings, dry]),
                     inputs={"rubric_references": inputs["rubric_references"]},
                     extra={"prompt": pipeline.prompt_fingerprint(sd.prompt, rcfg.prompt_dir),
                            "provider": provider.name, "model": provider.model}, force=force, stats=stats)
