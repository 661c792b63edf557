"""select-rl-queries (paper D.2, nightly): probe the current policy on candidate queries, keep the
discriminative ones where it is weak, with coverage across categories, capabilities and personas.

Stages: ``probe_rollouts`` (k responses per candidate from the newest policy checkpoint, which every
row records) -> ``probe_judgments`` + ``probe_rewards`` + ``probe_check_results`` (the environment,
published by ``tasks/env/publish.py`` as every flow that scores does) ->
``rl_queries`` (selected queries with every score component and the reason; train-rl reads it). The
artifact lists the selection's diff against the previous ``rl_queries`` (added, kept, dropped).

Candidates are the queries with a rubric reference outside the evaluation split
(``evaluation.heldout_percent``), the first ``selection.max_candidates`` by query id. Departure: probe
and evaluation judgments go to their own stages (``probe_*``) so the RL job's ``judgments`` and
``rewards`` are never overwritten by a selection run.

Run: ``rubricrl run --only select-rl-queries`` or ``prefect deployment run select-rl-queries/nightly``.
"""
from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from flows.common import flow_context, forward_library_logs, publish_artifact, scored_summaries, stage_summary
from schemas.config.selection import EMPTY_SELECTION_HELP
from schemas.contracts.selection import (PROBE_ROLLOUTS_SCHEMA, RL_QUERIES_SCHEMA, probe_rollouts_suites,
                                         rl_queries_suites)
from tasks.queries.split import held_out
from tasks.env.publish import ScoredTables, publish_scores
from tasks.env.score_tables import score_rollouts_table
from tasks.llm.prompts import load_prompt
from tasks.queries import query_meta
from tasks.selection.candidates import build_candidates, judge_providers, rl_query_rows
from tasks.rubrics import load_tasks
from tasks.selection.select import select, selection_diff
from tasks.stages.stage import StageOutcome, StageSpec, chunked, run_stage
from tasks.stages.store import StageStore, fingerprint
from training.policy import PolicyRef, resolve_policy, sample_policy


def _probe(chunk: list[tuple[str, str]], policy: PolicyRef, n: int, max_new_tokens: int, max_prompt_tokens: int,
           temperature: float, seed: int) -> pa.Table:
    rows = sample_policy(policy.path, chunk, n, max_new_tokens=max_new_tokens, max_prompt_tokens=max_prompt_tokens,
                         temperature=temperature, seed=seed)
    for r in rows:
        r.update(rollout_id=f"{r['query_id']}:p{r['sample']}", policy_checkpoint=str(policy.path),
                 policy_kind=policy.kind, seed=seed)
    return pa.Table.from_pylist(rows, schema=PROBE_ROLLOUTS_SCHEMA)


probe_chunk = task(_probe, name="probe-policy", cache_policy=NO_CACHE)
score_chunk = task(score_rollouts_table, name="score-probes", retries=1, retry_delay_seconds=[5], cache_policy=NO_CACHE)


def probe_hash(s: Any) -> str:
    """What the probes depend on (not the selection weights or target: changing those re-selects only)."""
    keys = ("probe_samples", "max_candidates", "probe_max_new_tokens", "probe_max_prompt_tokens", "probe_temperature",
            "probe_chunk_size", "seed")
    return fingerprint(**{k: getattr(s, k) for k in keys})


def _previous_selection(store: StageStore) -> set[str]:
    if store.manifest("rl_queries") is None:
        return set()
    return set(store.read("rl_queries", columns=["query_id"]).column("query_id").to_pylist())


def _diff_markdown(diff: dict[str, list[str]], rows: list[dict[str, Any]], shown: int = 20) -> str:
    lines = [f"## Selection diff against the previous rl_queries: {len(diff['added'])} added, "
             f"{len(diff['kept'])} kept, {len(diff['dropped'])} dropped", ""]
    for k in ("added", "kept", "dropped"):
        ids = diff[k]
        lines.append(f"- **{k}** ({len(ids)}): {', '.join(ids[:shown])}{' ...' if len(ids) > shown else ''}")
    lines += ["", "## Selected (pick order)", "", "| rank | query_id | discrimination | weakness | coverage | final | reason |",
              "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['rank']} | {r['query_id']} | {r['discrimination']:.2f} | {r['weakness']:.2f} | "
              f"{r['coverage_factor']:.2f} | {r['final_score']:.3f} | {r['reason']} |" for r in rows[:shown]]
    return "\n".join(lines)


def _probe_stage(store: StageStore, chunks: dict[str, list[tuple[str, str]]], policy: PolicyRef, s: Any,
                 tasks: list[Any], common: dict[str, Any]) -> StageOutcome:
    """``probe_rollouts``: ``s.probe_samples`` responses of ``policy`` per candidate, a part per chunk."""
    inputs = {"rubric_references": store.version("rubric_references"), "queries": store.version("queries")}
    return run_stage(
        store, StageSpec("probe_rollouts", PROBE_ROLLOUTS_SCHEMA, probe_rollouts_suites), part_keys=list(chunks),
        make_part=lambda k: probe_chunk(chunks[k], policy, s.probe_samples, s.probe_max_new_tokens,
                                        s.probe_max_prompt_tokens, s.probe_temperature, s.seed + list(chunks).index(k)),
        provider="policy", config_hash=probe_hash(s), inputs=inputs,
        extra={"policy": str(policy.path), "policy_identity": policy.identity, "candidates": [t.query_id for t in tasks],
               "prompt": load_prompt("generation").fingerprint}, **common)


def _warn_short(logger: Any, selected: int, candidates: int, target: int) -> None:
    if not selected:
        logger.warning("no candidate is discriminative (all %d have equal probe rewards): rl_queries is empty; "
                       "what helps: %s", candidates, EMPTY_SELECTION_HELP)
    elif selected < target:
        logger.warning("only %d discriminative queries for a target of %d: probe more candidates", selected, target)


@flow(name="select-rl-queries", log_prints=True)
def select_rl_queries(profile: str = "demo", sets: list[str] | None = None, force: bool = False,
                      checkpoint: str | None = None) -> dict[str, Any]:
    forward_library_logs()
    fc = flow_context(profile, sets)
    cfg, store, s = fc.cfg, fc.store, fc.cfg.selection
    logger = get_run_logger()
    heldout = cfg.evaluation.heldout_percent
    tasks = [t for t in load_tasks(store) if not held_out(t.query_id, heldout)][: s.max_candidates]
    if not tasks:
        raise ValueError("no candidate queries: no rubric reference outside the evaluation split is published; run "
                         "build-rubrics first (or lower evaluation.heldout_percent)")
    meta = query_meta(store)
    policy = resolve_policy(cfg.data_dir, checkpoint, cfg.train.model, cfg.train.run.seed)
    logger.info("probing %d candidate queries x %d samples with policy %s (%s, %s)", len(tasks), s.probe_samples,
                policy.path, policy.kind, policy.identity)
    chunks = chunked([(t.query_id, t.query) for t in tasks], s.probe_chunk_size)
    common = dict(config=cfg.model_dump(mode="json"), force=force)
    probes = _probe_stage(store, chunks, policy, s, tasks, common)
    rollouts = store.read("probe_rollouts")
    task_by = {t.query_id: t for t in tasks}

    def scored_part(key: str) -> ScoredTables:
        ids = {q for q, _ in chunks[key]}
        part = rollouts.filter(pc.is_in(rollouts.column("query_id"), value_set=pa.array(sorted(ids))))
        return score_chunk(part, {q: task_by[q] for q in ids}, provider=fc.provider, cfg=cfg.env)

    scored = publish_scores(store, list(chunks), scored_part, env=cfg.env, provider=fc.provider,
                            inputs={"probe_rollouts": probes.manifest.version}, prefix="probe_", force=force)

    previous = _previous_selection(store)
    probe_rewards = store.read("probe_rewards").to_pylist()
    cands = build_candidates(tasks, meta, probe_rewards,
                             store.read("probe_judgments", columns=["rollout_id", "gate_rubric_alignment",
                                                                    "findings"]).to_pylist())
    result = select(cands, s)
    rows = rl_query_rows(result, tasks, meta, cands, str(policy.path), policy.kind, judge_providers(probe_rewards))
    sel = run_stage(store, StageSpec("rl_queries", RL_QUERIES_SCHEMA, rl_queries_suites), part_keys=["all"],
                    make_part=lambda _k: pa.Table.from_pylist(rows, schema=RL_QUERIES_SCHEMA),
                    provider=fc.provider.name, config_hash=cfg.section_hash("selection"),
                    inputs={"probe_rewards": scored.rewards.manifest.version,
                            "probe_judgments": scored.judgments.manifest.version},
                    extra={"policy_identity": policy.identity},
                    stats=lambda t: {"policy_checkpoint": str(policy.path), "policy_kind": policy.kind,
                                     "candidates": len(cands)}, **common)
    current = {r["query_id"] for r in rows}
    diff = selection_diff(previous, current)
    flat = sum(1 for x in result if x.base_score == 0)
    _warn_short(logger, len(rows), len(cands), s.target_size)
    summaries = [stage_summary(probes, {"policy": policy.label}), *scored_summaries(scored, store),
                 stage_summary(sel, {"added": len(diff["added"]), "kept": len(diff["kept"]),
                                     "dropped": len(diff["dropped"])})]
    notes = (f"Policy: `{policy.path}` ({policy.kind}); {len(cands)} candidates, {flat} with all-equal probe rewards "
             f"(never selected), {len(rows)} selected (target {s.target_size}).\n\n{_diff_markdown(diff, rows)}")
    publish_artifact("select-rl-queries", summaries, notes=notes, fc=fc)
    print(f"rl_queries: {len(rows)} selected of {len(cands)} candidates with policy {policy.label}; "
          f"{len(diff['added'])} added, {len(diff['kept'])} kept, {len(diff['dropped'])} dropped")
    return {"stages": summaries, "policy": str(policy.path), "policy_kind": policy.kind, "diff": diff,
            "selected": len(rows), "candidates": len(cands), "all_equal": flat}
