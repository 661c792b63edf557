"""generate-sft: rubric references -> teacher answers (gated) -> sft_answers + chat-format export.

Run: ``rubricrl run --only generate-sft`` or ``prefect deployment run generate-sft/demo``.
"""
from __future__ import annotations

from typing import Any

import pyarrow as pa
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from flows.common import flow_context, forward_library_logs, publish_artifact, stage_summary
from schemas.contracts.sft import SFT_ANSWERS_SCHEMA, sft_answers_suites
from schemas.layout import EXPORTS, SFT_EXPORT
from tasks.sft import data as sft_data
from tasks.queries.split import held_out
from tasks.llm import get_provider
from tasks.llm.prompts import load_prompt
from tasks.rubrics import load_tasks
from tasks.stages.stage import StageSpec, chunked, run_stage
from tasks.sft.teacher import GENERATION_PROMPT

answer_chunk = task(sft_data.answer_chunk, name="teacher-answers", retries=1, retry_delay_seconds=[10],
                    cache_policy=NO_CACHE)


def _rates_markdown(rates: dict[str, dict[str, tuple[int, int]]]) -> str:
    out = []
    for by, d in rates.items():
        out += [f"\n### Rejection rate by {by}\n", "| value | rejected | total | rate |", "|---|---|---|---|"]
        out += [f"| {k} | {r} | {n} | {100 * r / n:.1f}% |" for k, (r, n) in sorted(d.items())]
    return "\n".join(out)


@flow(name="generate-sft", log_prints=True)
def generate_sft(profile: str = "demo", sets: list[str] | None = None, force: bool = False) -> dict[str, Any]:
    forward_library_logs()
    fc = flow_context(profile, sets)
    cfg, store, s = fc.cfg, fc.store, fc.cfg.sft
    logger = get_run_logger()
    # the evaluation split (evaluation.heldout_percent) never becomes training data
    tasks = [t for t in load_tasks(store) if not held_out(t.query_id, cfg.evaluation.heldout_percent)]
    if s.max_queries is not None:
        tasks = tasks[: s.max_queries]
    if not tasks:
        raise ValueError("no rubric references are published; run build-rubrics first")
    meta = {r["query_id"]: r for r in store.read("queries", columns=["query_id", "difficulty", "domain",
                                                                     "category_ids"]).to_pylist()}
    if fc.provider.name == "offline":
        teachers = {fc.provider.model: fc.provider}
    else:
        teachers = {t: get_provider(config=cfg.resolved_llm().model_copy(update={"model": t})) for t in s.teachers}
    judge = fc.provider if s.judge else None
    env = cfg.env.model_copy(update={"runtime": cfg.env.runtime.model_copy(update={"enabled": s.browser})})
    by_key = chunked(tasks, s.chunk_size)

    def make(key: str) -> pa.Table:
        return answer_chunk(by_key[key], meta, teachers, env=env, judge=judge, max_tokens=s.max_tokens,
                            temperature=s.temperature, concurrency=cfg.llm.concurrency)

    out = run_stage(store, StageSpec("sft_answers", SFT_ANSWERS_SCHEMA, sft_answers_suites), part_keys=list(by_key),
                    make_part=make, provider=fc.provider.name, config=cfg.model_dump(mode="json"),
                    config_hash=cfg.section_hash("sft", "env"),
                    inputs={"rubric_references": store.version("rubric_references"), "queries": store.version("queries")},
                    extra={"teachers": sorted(teachers), "prompt": load_prompt(GENERATION_PROMPT).fingerprint,
                           "n": len(tasks)}, force=force,
                    stats=lambda t: {"rejected": int(sum(t.column("rejected").to_pylist()))})
    table = store.read("sft_answers")
    export = sft_data.export_chat(table, store.root / EXPORTS / SFT_EXPORT)
    rates = sft_data.rejection_rates(table)
    summary = stage_summary(out, {"rejected": out.manifest.stats.get("rejected", ""), "export": str(export)})
    publish_artifact("generate-sft", [summary], notes=f"Chat-format export: `{export}`\n{_rates_markdown(rates)}", fc=fc)
    logger.info("sft_answers: %d answers, %s rejected; export %s", out.manifest.row_count,
                out.manifest.stats.get("rejected"), export)
    return {"stages": [summary], "export": str(export), "rejection_rates": rates}
