"""build-rubrics: queries -> expansions -> requirements -> modules -> rubric_candidates ->
rubric_references -> rubric_items (paper B.1, the five-stage query-grounded rubric construction).

Every stage is a published, validated Parquet stage (DuckDB view of the same name). The work, its
resume and its re-use of unchanged rows, is ``tasks/rubrics/build.py``; here it runs with Prefect tasks
as the part makers and reports coverage and dropped checks in the artifact.

Run: ``rubricrl run --only build-rubrics`` or ``prefect deployment run build-rubrics/demo``;
``python -m flows.build_rubrics --profile demo [--set rubrics.chunk_size=50] [--force]``.
"""
from __future__ import annotations

import argparse
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from flows.common import flow_context, forward_library_logs, publish_artifact, stage_summary
from tasks.rubrics import checks, stages
from tasks.rubrics.build import PartMakers, build_stages
from tasks.rubrics.report import coverage_markdown, coverage_summary

# The stage store is the cross-run cache (parts keyed by chunk), so Prefect result caching is off.
stage_part = task(stages.stage_part, name="rubric-stage-part", retries=1, retry_delay_seconds=[10],
                  cache_policy=NO_CACHE)
items_part = task(stages.items_part, name="rubric-items-part", cache_policy=NO_CACHE)
checks_part = task(checks.checks_part, name="rubric-checks-part", retries=1, retry_delay_seconds=[10],
                   cache_policy=NO_CACHE)
PARTS = PartMakers(lambda name: stage_part.with_options(name=f"{name}-part"), items_part, checks_part)


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
    outcomes = build_stages(fc.store, fc.provider, rcfg, force=force, concurrency=concurrency, runtime=runtime,
                            parts=PARTS)
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
