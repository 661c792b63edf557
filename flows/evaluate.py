"""evaluate (paper 4.1, Table 1): generators side by side on a benchmark, scored by one judge.

For each generator: N sampling runs over the benchmark's queries (``evaluation.benchmark``: the held-out
split, ``evaluation.heldout_percent`` of the queries with references by a stable hash of the id, which
select-rl-queries never picks; or the ingested benchmark set), scored by the environment; one row per
(generator, query, run) in ``eval_results``; the Table-1 layout (pass rate overall, by difficulty, domain
and category, tier rates, mean reward, output tokens and generation time, averaged over runs, with the
spread over runs) as markdown + PNG under ``<data_dir>/reports/eval/`` and in the artifact. Two or more
generators get delta columns against the first. With the browser on and ``evaluation.screenshots``, the
browser check keeps each app's screenshots (after load, after the probe) beside the stage
(``stages/eval_results/screenshots/``; paths and why-not notes in the rows; thumbnails in the HTML report).
On an ingested benchmark each app is also scored by that benchmark's own protocol (``official_*`` columns,
``tasks/evaluation/official.py``), and the report sets the official metric beside ours with their agreement.

Generators (``tasks/evaluation/generators.py``): a Hugging Face directory (sampled here with the GRPO job's
transformers engine), a folder of responses (scored on the queries it has files for; all must have
references), or an API model (``api:anthropic/<model>``, ``api:openai/<model>@<base_url>``). None given:
the newest policy checkpoint, else the tiny random model (labelled so).

Run: ``rubricrl run --only evaluate`` or ``evaluate(profile="demo", models=["data/checkpoints/sft/final_model",
"api:openai/local@http://127.0.0.1:8000/v1"], benchmark="ingested")``.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa
from prefect import flow, get_run_logger, task
from prefect.artifacts import create_link_artifact
from prefect.cache_policies import NO_CACHE

from flows.common import flow_context, forward_library_logs, publish_artifact, stage_summary
from schemas.contracts.evaluation import EVAL_RESULTS_SCHEMA, eval_results_suites
from schemas.contracts.evaluation import STAGE as EVAL_STAGE
from schemas.layout import REPORTS
from schemas.rubric import Task
from tasks.env.publish import env_fingerprint
from tasks.env.score_tables import missing_counts
from tasks.env.runtime import BrowserRuntime
from tasks.evaluation import summary as evaluation
from tasks.evaluation.generators import (API_PREFIX, POLICY_PREFIX, api_provider, api_rollouts, benchmark_meta,
                                         benchmark_query_ids, folder_rollouts, parse_generator, resolve_policy_alias)
from tasks.evaluation.official import OfficialInputs, check_runner, official_inputs, protocol_identity
from tasks.evaluation.official_summary import agreement_line, official_plot, pooled_agreement
from tasks.evaluation.report import write_report
from tasks.evaluation.scoring import eval_table, evaluation_runtime, summarize_rows
from tasks.llm.prompts import load_prompt
from tasks.queries.split import held_out
from tasks.rubrics import load_tasks
from tasks.queries import query_meta
from tasks.stages.stage import StageSpec, run_stage
from training.policy import resolve_policy, sample_policy


def _model_rollouts(spec: dict[str, Any], queries: list[Task], ev: Any, llm: Any) -> list[dict[str, Any]]:
    """Rollout rows (rollout_id, query_id, run, response, output_tokens, generation_s) of one generator."""
    if spec["kind"] == "responses":
        return folder_rollouts(spec)
    if spec["kind"] == "api":
        return api_rollouts(spec, queries, ev.runs, api_provider(spec, llm), max_tokens=ev.max_new_tokens,
                            temperature=ev.temperature, concurrency=llm.concurrency)
    out = []
    for r in range(ev.runs):
        start = time.perf_counter()
        rows = sample_policy(Path(spec["path"]), [(t.query_id, t.query) for t in queries], 1,
                             max_new_tokens=ev.max_new_tokens, max_prompt_tokens=ev.max_prompt_tokens,
                             temperature=ev.temperature, seed=ev.seed + r)
        per = (time.perf_counter() - start) / max(1, len(rows))  # generated as one batch: the mean per response
        out += [{"rollout_id": f"{spec['label']}:{r}:{x['query_id']}", "query_id": x["query_id"], "run": r,
                 "response": x["response"], "output_tokens": x["n_tokens"], "generation_s": per} for x in rows]
    return out


def _evaluate_model(spec: dict[str, Any], queries: list[Task], all_tasks: dict[str, Task], meta: dict[str, Any],
                    ev: Any, env: Any, provider: Any, llm: Any, runtime: BrowserRuntime | None = None,
                    data_dir: Path | None = None, official: OfficialInputs | None = None) -> pa.Table:
    return eval_table(spec, _model_rollouts(spec, queries, ev, llm), all_tasks, meta, env, provider, runtime, data_dir,
                      official)


evaluate_model = task(_evaluate_model, name="evaluate-model", cache_policy=NO_CACHE)


def resolve_models(paths: list[str], data_dir: Path, cfg: Any) -> list[dict[str, Any]]:
    """Each given generator (checkpoint, policy alias, response folder, API model); a policy alias with no
    checkpoint yet is left out with a warning, and the same checkpoint named twice is evaluated once; none
    left: the newest policy (else the tiny random model)."""
    specs: list[dict[str, Any]] = []
    seen: set[str] = set()
    for raw in paths:
        if raw.startswith(POLICY_PREFIX):
            found = resolve_policy_alias(raw, data_dir)
            if found is None:
                get_run_logger().warning("generator %s: no such checkpoint in %s yet; left out", raw, data_dir)
                continue
            raw = str(found)
        same = raw if raw.startswith(API_PREFIX) else str(Path(raw).resolve())  # one checkpoint, however named
        if same in seen:
            continue
        seen.add(same)
        specs.append(parse_generator(raw, {s["label"] for s in specs}))
    if not specs:
        p = resolve_policy(data_dir, None, cfg.train.model, cfg.train.run.seed)
        return [{"label": p.label, "path": str(p.path), "kind": p.kind, "identity": p.identity}]
    return specs


def _run_eval_stage(store: Any, keys: dict[str, Any], make_part: Any, cfg: Any, fc: Any, specs: list[dict[str, Any]],
                    ev: Any, queries: list[Task], ingested: list[str] | None, force: bool) -> Any:
    return run_stage(
        store, StageSpec(EVAL_STAGE, EVAL_RESULTS_SCHEMA, eval_results_suites), part_keys=list(keys),
        make_part=make_part,
        provider=fc.provider.name, config=cfg.model_dump(mode="json"),
        config_hash=env_fingerprint(cfg.env),
        inputs={"rubric_references": store.version("rubric_references"), "queries": store.version("queries"),
                **({"benchmark_queries": store.version("benchmark_queries")} if ingested is not None else {})},
        extra={"models": [[s["label"], s["path"], s["identity"]] for s in specs], "eval": ev.model_dump(mode="json"),
               "queries": [t.query_id for t in queries], "judge": [fc.provider.name, fc.provider.model],
               "prompt": load_prompt("generation").fingerprint, "official": protocol_identity(ev.official)},
        force=force)


@flow(name="evaluate", log_prints=True)
def evaluate(profile: str = "demo", sets: list[str] | None = None, force: bool = False,
             models: list[str] | None = None, runs: int | None = None,
             benchmark: str | None = None) -> dict[str, Any]:
    forward_library_logs()
    fc = flow_context(profile, sets)
    cfg, store = fc.cfg, fc.store
    logger = get_run_logger()
    ev = cfg.evaluation
    ev = ev.model_copy(update={k: v for k, v in (("runs", runs), ("benchmark", benchmark)) if v is not None})
    all_tasks = {t.query_id: t for t in load_tasks(store)}
    ingested, meta = benchmark_meta(store, query_meta(store))
    ids = benchmark_query_ids(ev.benchmark, list(all_tasks), ingested, lambda q: held_out(q, ev.heldout_percent))
    queries = [all_tasks[q] for q in ids][: ev.max_queries]
    specs = resolve_models(list(models if models is not None else ev.models), cfg.data_dir, cfg)
    if not queries and any(s["kind"] != "responses" for s in specs):
        raise ValueError(f"no {ev.benchmark} query with a reference ({len(all_tasks)} references); raise "
                         "evaluation.heldout_percent, ingest a benchmark, or build rubrics for more queries")
    for s in specs:
        logger.info("model %s: %s (%s)", s["label"], s["path"], s["kind"])
        if s["kind"] == "tiny-random":
            logger.warning("no policy checkpoint found: evaluating the tiny RANDOM model (rows say tiny-random)")
    keys = {f"m{i:02d}": s for i, s in enumerate(specs)}
    official = official_inputs(store, ev.official, cfg.env.runtime, fc.provider, store.root)
    check_runner(official, ids)
    runtime = evaluation_runtime(cfg, store.root)
    try:
        out = _run_eval_stage(store, keys, lambda k: evaluate_model(
            keys[k], queries, all_tasks, meta, ev, cfg.env, fc.provider, cfg.resolved_llm(), runtime, store.root,
            official), cfg, fc, specs, ev, queries, ingested, force)
    finally:
        if runtime is not None:
            runtime.close()
    rows = store.read(EVAL_STAGE).to_pylist()
    summary = summarize_rows(rows)
    baseline = specs[0]["label"] if len(specs) > 1 else None
    md = evaluation.markdown_table(summary, baseline=baseline)
    report_dir = store.root / REPORTS / "eval"
    report_dir.mkdir(parents=True, exist_ok=True)
    png = evaluation.plot(rows, report_dir / "eval.png")
    official_png = official_plot(rows, report_dir / "official.png")
    metric = next((r["official_metric"] for r in rows if r["official_metric"]), None)
    agree = agreement_line(pooled_agreement(rows), metric)
    header = (f"# evaluate: {len(specs)} generator(s), {len({r['query_id'] for r in rows})} {ev.benchmark} queries, "
              f"runs per model: " + ", ".join(f"{m} {int(v['runs'] or 0)}" for m, v in summary.items()))
    official_md = f"\n\n{agree}\n\n![reward against the official metric](official.png)" if official_png else ""
    (report_dir / "eval.md").write_text(f"{header}\n\n{md}\n\n![spread](eval.png){official_md}\n", encoding="utf-8")
    report = write_report(report_dir / "eval.html", header.lstrip("# "), summary, baseline, rows, png, store.root,
                          official_png, agree)
    publish_artifact("evaluate", [stage_summary(out, {"models": len(specs), **missing_counts(store.read(EVAL_STAGE))})],
                     notes=f"Report: [{report}]({report.as_uri()}) (one HTML file), `{report_dir / 'eval.md'}`, "
                           f"plot `{png}`\n\n{md}", fc=fc)
    create_link_artifact(link=report.as_uri(), link_text="evaluation report (HTML)", key="evaluate-report")
    print(f"{header}\n{md}")
    return {"stages": [stage_summary(out)], "summary": summary, "report": str(report_dir / "eval.md"),
            "html": str(report), "png": str(png), "official_png": str(official_png) if official_png else None,
            "models": [s["label"] for s in specs]}
