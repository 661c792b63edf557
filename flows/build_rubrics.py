"""build-rubrics: queries -> expansions -> requirements -> modules -> rubric_candidates ->
rubric_references -> rubric_items (paper B.1, the five-stage query-grounded rubric construction).

Every stage is a published, validated Parquet stage (DuckDB view of the same name). Parts are
chunks of the sorted query ids, so a run killed half way resumes where it stopped. Rows whose
chained input hash is unchanged are copied from the previous version: only queries without a
current reference are sent to the model; ``force`` rebuilds everything. A changed prompt (its
version and text enter the hash) re-runs that stage and the ones after it only.

Run: ``rubricrl run --only build-rubrics`` or ``prefect deployment run build-rubrics/demo``;
``python -m flows.build_rubrics --profile demo [--set rubrics.chunk_size=50] [--force]``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import logging
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from flows.common import flow_context, forward_library_logs, publish_artifact, stage_summary
from schemas.config_env import RuntimeConfig
from schemas.config_rubrics import RubricsConfig
from schemas.rubrics import (ITEMS_SCHEMA, candidates_suites, checks_suites, expansions_suites,
                             items_suites, modules_suites, references_suites, requirements_suites)
from tasks.llm.base import Provider
from tasks.rubrics import checks, pipeline, stages
from tasks.rubrics.report import coverage_markdown, coverage_summary
from tasks.stages.stage import StageOutcome, StageSpec, run_stage
from tasks.stages.store import StageStore

log = logging.getLogger("rubricrl.rubrics")
# The stage store is the cross-run cache (parts keyed by chunk), so Prefect result caching is off.
stage_part = task(stages.stage_part, name="rubric-stage-part", retries=1, retry_delay_seconds=[10],
                  cache_policy=NO_CACHE)
items_part = task(stages.items_part, name="rubric-items-part", cache_policy=NO_CACHE)
checks_part = task(checks.checks_part, name="rubric-checks-part", retries=1, retry_delay_seconds=[10],
                   cache_policy=NO_CACHE)


# modules and candidates also check that covered ids exist among the query's published requirements
SUITES: dict[str, Callable[[pa.Table | None], list]] = {
    "expansions": lambda _r: expansions_suites(), "requirements": lambda _r: requirements_suites(),
    "modules": modules_suites, "rubric_candidates": candidates_suites,
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
                 concurrency: int = 8, runtime: RuntimeConfig | None = None) -> list[StageOutcome]:
    """Run the five stages, ``rubric_checks`` and ``rubric_items`` over the published ``queries`` stage.
    ``runtime``: the browser the checks are dry-run in (None: no dry run, the rows say so)."""
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
            table, c = stage_part.with_options(name=f"{sd.name}-part")(store, index, key, chunks[key], chunk_texts,
                                                                      provider, rcfg, prior, concurrency)
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
    outcomes.append(_checks_stage(store, provider, rcfg, chunks, inputs, part_cfg, force, concurrency, runtime))
    refs = store.read("rubric_references")
    items = run_stage(store, StageSpec("rubric_items", ITEMS_SCHEMA, lambda: items_suites(refs)),
                      part_keys=list(chunks), make_part=lambda k: items_part(store, k, chunks[k]),
                      provider=provider.name, config=rcfg.model_dump(mode="json"), config_hash=_hash(part_cfg),
                      inputs={"rubric_references": inputs["rubric_references"],
                              "rubric_checks": outcomes[-1].manifest.version}, force=force,
                      stats=lambda t: {"items": t.num_rows, "queries": len(set(t.column("query_id").to_pylist()))})
    outcomes.append(items)
    return outcomes


def _checks_stage(store: StageStore, provider: Provider, rcfg: RubricsConfig, chunks: dict[str, list[str]],
                  inputs: dict[str, str], part_cfg: dict[str, Any], force: bool, concurrency: int,
                  runtime: RuntimeConfig | None) -> StageOutcome:
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
                "items_without_check": status.count("none")}

    return run_stage(store, StageSpec(sd.name, sd.schema, checks_suites), part_keys=list(chunks), make_part=make,
                     provider=provider.name, config=rcfg.model_dump(mode="json"),
                     config_hash=_hash([part_cfg, settings, dry]),
                     inputs={"rubric_references": inputs["rubric_references"]},
                     extra={"prompt": pipeline.prompt_fingerprint(sd.prompt, rcfg.prompt_dir),
                            "provider": provider.name, "model": provider.model}, force=force, stats=stats)


@flow(name="build-rubrics", log_prints=True)
def build_rubrics(profile: str = "demo", sets: list[str] | None = None, force: bool = False) -> dict[str, Any]:
    """The five-stage rubric construction over the published queries (see module docstring)."""
    forward_library_logs()
    fc = flow_context(profile, sets)
    rcfg = fc.cfg.rubrics
    logger = get_run_logger()
    logger.info("rubrics configuration: %s", rcfg.model_dump_json())
    # The offline rules are pure Python under the GIL: threads would only add overhead.
    concurrency = 1 if fc.provider.name == "offline" else (rcfg.concurrency or fc.cfg.llm.concurrency)
    runtime = fc.cfg.env.runtime if rcfg.check_dry_run and fc.cfg.env.runtime.enabled else None
    outcomes = build_stages(fc.store, fc.provider, rcfg, force=force, concurrency=concurrency, runtime=runtime)
    summaries = [stage_summary(o, {k: v for k, v in o.manifest.stats.items() if k not in ("rows",)})
                 for o in outcomes]
    cov = coverage_summary(fc.store.read("rubric_references"), fc.store.read("rubric_items"))
    notes = coverage_markdown(cov) + checks.dropped_markdown(fc.store.read("rubric_checks"))
    publish_artifact("build-rubrics", summaries, notes=notes, fc=fc)
    print(f"rubric_items: {cov['items']} items for {cov['references']} queries; "
          f"{cov['queries_without_reference']} without a reference; uncovered must_cover: {cov['uncovered_must_cover']}")
    return {"stages": summaries, "coverage": cov}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flows.build_rubrics", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", choices=["demo", "full"], default=None)
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE")
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args(argv)
    build_rubrics(profile=args.profile or "demo", sets=args.set, force=args.force)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
