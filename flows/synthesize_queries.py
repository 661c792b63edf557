"""synthesize-queries: taxonomy x personas -> query_candidates -> (near-dedup) -> queries.

Run: ``rubricrl run --only synthesize-queries`` or ``prefect deployment run synthesize-queries/demo``.
"""
from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from flows.common import flow_context, forward_library_logs, publish_artifact, stage_summary
from schemas.contracts.benchmark import BENCHMARK_SCHEMA, benchmark_suites
from schemas.contracts.queries import QUERIES_SCHEMA, QUERY_CANDIDATES_SCHEMA, queries_suites, query_candidates_suites
from schemas.layout import REPORTS
from tasks.queries import coverage, synthesize
from tasks.queries.dedup import near_duplicates
from tasks.queries.ingest import ingest_jsonl
from tasks.stages.stage import StageSpec, chunked, run_stage

# The stage store is the cross-run cache (parts keyed by chunk), so Prefect result caching is off.
synthesize_chunk = task(synthesize.synthesize_chunk, name="synthesize-chunk", retries=2, retry_delay_seconds=[5, 30],
                        cache_policy=NO_CACHE)


def _suites(factory):
    tax = synthesize.load_taxonomy()
    cats = [c.id for c in tax.categories]
    caps = list(tax.capability())
    return lambda: factory(cats, caps)


def _ingest(fc: Any, path: str, force: bool, common: dict[str, Any]) -> dict[str, Any]:
    """An external set as the ``queries`` stage, its labels and given checklist items as ``benchmark_queries``."""
    logger = get_run_logger()
    got = ingest_jsonl(path, Path(fc.cfg.synth.ingest_tests) if fc.cfg.synth.ingest_tests else None)
    specs = got.benchmark.column("official_tests").to_pylist()
    # an edited file, or another folder of specs, re-ingests
    source = {"file": path, "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest(),
              "specs": hashlib.sha256("\0".join(x or "" for x in specs).encode()).hexdigest()}
    errors = [str(e) for e in got.errors]
    out = run_stage(fc.store, StageSpec("queries", QUERIES_SCHEMA, _suites(queries_suites)), part_keys=["all"],
                    make_part=lambda _k: got.queries, inputs=source, extra={"rows": got.queries.num_rows},
                    force=force, stats=lambda t: {"ingest_errors": errors}, **common)
    bench = run_stage(fc.store, StageSpec("benchmark_queries", BENCHMARK_SCHEMA, benchmark_suites),
                      part_keys=["all"], make_part=lambda _k: got.benchmark, inputs=source,
                      extra={"rows": got.benchmark.num_rows}, force=force,
                      stats=lambda t: {"given_items": sum(len(x) for x in t.column("given_items").to_pylist())},
                      **common)
    for e in errors:
        logger.error("ingest %s: %s (line skipped; the good lines were kept)", path, e)
    for note in got.notes:
        logger.warning("ingest %s: %s", path, note)
    summaries = [stage_summary(out, {"ingest_errors": len(errors)}),
                 stage_summary(bench, {"given_items": bench.manifest.stats.get("given_items", 0)})]
    publish_artifact("synthesize-queries", summaries, fc=fc)
    print(f"ingested {out.manifest.row_count} queries with {bench.manifest.stats.get('given_items', 0)} given "
          f"checklist items and {sum(x is not None for x in specs)} test specs from {path}; {len(errors)} lines "
          "skipped")
    return {"stages": summaries, "ingest_errors": errors}


@flow(name="synthesize-queries", log_prints=True)
def synthesize_queries(profile: str = "demo", sets: list[str] | None = None, force: bool = False) -> dict[str, Any]:
    forward_library_logs()
    fc = flow_context(profile, sets)
    cfg, store, s = fc.cfg, fc.store, fc.cfg.synth
    logger = get_run_logger()
    synthesize.load_taxonomy()  # validates the taxonomy data before any work
    cfg_hash = cfg.section_hash("synth")
    common = dict(provider=fc.provider.name, config=cfg.model_dump(mode="json"), config_hash=cfg_hash)
    prompt_fp = {"prompt": synthesize.load_prompt_fingerprint(), "provider": fc.provider.name,
                 "model": fc.provider.model}

    if s.ingest_path:
        return _ingest(fc, s.ingest_path, force, common)

    personas = synthesize.sample_personas(s.n_personas, s.seed)
    n_candidates = math.ceil(round(s.n_queries * (1 + s.oversample), 6))  # round: 55000*1.08 is 59400.000…1
    chunks = chunked(range(n_candidates), s.chunk_size)

    def make_chunk(key: str) -> pa.Table:
        return synthesize_chunk(chunks[key], s.seed, personas, s.min_capabilities, s.max_capabilities, fc.provider,
                                cfg.llm.concurrency)

    cand = run_stage(store, StageSpec("query_candidates", QUERY_CANDIDATES_SCHEMA, _suites(query_candidates_suites)),
                     part_keys=list(chunks), make_part=make_chunk, inputs={}, extra=prompt_fp, force=force,
                     stats=lambda t: {"missing": t.num_rows - t.column("text").drop_null().length()}, **common)

    dedup_info: dict[str, Any] = {}

    def make_queries(_key: str) -> pa.Table:
        table = store.read("query_candidates").sort_by("candidate_index")
        valid = table.filter(pc.is_valid(table.column("text")))
        res = near_duplicates(valid.column("text").to_pylist(), s.dedup_threshold, s.num_perm, limit=s.n_queries)
        dedup_info.update(candidates=table.num_rows, missing=table.num_rows - valid.num_rows,
                          near_duplicates_removed=len(res.duplicate_of), kept=len(res.kept))
        return valid.take(res.kept).drop_columns(["error"])

    queries = run_stage(store, StageSpec("queries", QUERIES_SCHEMA, _suites(queries_suites)), part_keys=["all"],
                        make_part=make_queries, inputs={"query_candidates": cand.manifest.version},
                        extra={"dedup_threshold": s.dedup_threshold, "num_perm": s.num_perm}, force=force,
                        stats=lambda t: dict(dedup_info), **common)
    info = queries.manifest.stats
    if queries.manifest.row_count < s.n_queries:
        logger.warning("only %d of %d queries remain after deduplication; raise synth.oversample",
                       queries.manifest.row_count, s.n_queries)
    counts = coverage.coverage_counts(store.read("queries"), personas)
    png = coverage.coverage_plot(counts, store.root / REPORTS / "queries_coverage.png")
    md = coverage.coverage_markdown(counts)
    summaries = [stage_summary(cand, {"missing": cand.manifest.stats.get("missing", 0)}),
                 stage_summary(queries, {"near_duplicates_removed": info.get("near_duplicates_removed", "")})]
    publish_artifact("synthesize-queries", summaries, notes=f"Coverage plot: `{png}`\n\n{md}", fc=fc)
    print(f"queries: {queries.manifest.row_count} rows "
          f"({info.get('near_duplicates_removed', 0)} near-duplicates removed); coverage plot {png}")
    return {"stages": summaries, "coverage_png": str(png)}
