"""score-rollouts: a rollouts stage -> judgments, rewards, check_results (paper 3.3).

Chunks of rollouts fan out over a Prefect task runner: threads by default (``env.task_runner``
= "threads", ``env.workers`` workers), or Ray through prefect-ray ("ray"; ``env.ray_address`` or a
local Ray instance). Each worker process keeps one browser (fresh context per app) and builds its
judge provider from the run's LLM settings, so nothing unpicklable crosses to Ray workers.

Inputs: a rollouts stage with ``rollout_id``, ``query_id``, ``response`` and a tasks stage with
``query_id``, ``query``/``text``, ``rubric``/``rubric_json``. Outputs: the ``judgments``, ``rewards`` and
``check_results`` stages, published by ``tasks/env/publish.py`` (the one seam of every flow that scores)
and validated by their GX suites before the flow reports success.

Run: ``prefect deployment run score-rollouts/<deployment>`` or ``score_rollouts(...)`` in Python.
"""
from __future__ import annotations

from typing import Any

import pyarrow as pa
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import as_completed
from prefect.task_runners import ThreadPoolTaskRunner

from flows.common import flow_context, forward_library_logs, publish_artifact, scored_summaries
from schemas.config.env import EnvConfig
from tasks.env.publish import ScoredTables, publish_scores
from tasks.env.score_tables import checks_run, score_rollouts_table, task_from_row
from tasks.llm import get_provider
from tasks.progress import Progress
from tasks.stages.stage import chunked


def _score_chunk(rollouts: pa.Table, tasks: dict[str, dict[str, Any]], env: dict[str, Any],
                 llm: dict[str, Any]) -> ScoredTables:
    """One chunk on one worker: the worker's shared browser, a provider built here (picklable inputs only)."""
    from schemas.config.llm import LLMConfig

    cfg = EnvConfig.model_validate(env)
    provider = get_provider(config=LLMConfig.model_validate(llm))
    task_objs = {k: task_from_row(v) for k, v in tasks.items()}
    return score_rollouts_table(rollouts, task_objs, provider=provider, cfg=cfg)


score_chunk = task(_score_chunk, name="score-chunk", retries=1, retry_delay_seconds=[5], cache_policy=NO_CACHE)


def task_runner_for(cfg: EnvConfig) -> Any:
    if cfg.task_runner == "ray":
        try:
            from prefect_ray import RayTaskRunner
        except ImportError as e:
            raise ValueError("env.task_runner is 'ray' but prefect-ray is not installed; "
                             "pip install prefect-ray==0.6.0, or set env.task_runner=threads") from e
        init = {"num_cpus": cfg.workers, "include_dashboard": False} if cfg.ray_address is None else None
        return RayTaskRunner(address=cfg.ray_address, init_kwargs=init)
    return ThreadPoolTaskRunner(max_workers=cfg.workers)


def score_chunks(chunks: dict[str, pa.Table], tasks: dict[str, dict[str, Any]], env: dict[str, Any],
                 llm: dict[str, Any]) -> dict[str, ScoredTables]:
    futures = {k: score_chunk.submit(t, {q: tasks[q] for q in set(t.column("query_id").to_pylist()) if q in tasks},
                                     env, llm) for k, t in chunks.items()}
    keys = {f: k for k, f in futures.items()}
    with Progress("score-rollouts", sum(t.num_rows for t in chunks.values()), unit="apps", verb="scored") as p:
        for f in as_completed(list(futures.values())):  # a chunk on a worker counts as soon as it is back
            p.update(chunks[keys[f]].num_rows, checks_run=checks_run(f.result().check_results))
    return {k: f.result() for k, f in futures.items()}


@flow(name="score-rollouts-fanout")
def _fanout(chunks: dict[str, pa.Table], tasks: dict[str, dict[str, Any]], env: dict[str, Any],
            llm: dict[str, Any]) -> dict[str, ScoredTables]:
    return score_chunks(chunks, tasks, env, llm)


@flow(name="score-rollouts", log_prints=True)
def score_rollouts(profile: str = "demo", sets: list[str] | None = None, rollouts_stage: str = "rollouts",
                   tasks_stage: str = "rl_queries", chunk_size: int = 64, env: dict[str, Any] | None = None,
                   force: bool = False) -> dict[str, Any]:
    forward_library_logs()
    fc = flow_context(profile, sets)
    logger = get_run_logger()
    env_cfg = fc.cfg.env if env is None else EnvConfig.model_validate(env)
    rollouts = fc.store.read(rollouts_stage)
    task_rows = {r["query_id"]: r for r in fc.store.read(tasks_stage).to_pylist()}
    rows = chunked(range(max(rollouts.num_rows, 1)), chunk_size)  # one (empty) part for no rollouts
    chunks = {k: rollouts.slice(r[0], len(r)) for k, r in rows.items()}
    llm = fc.pinned_llm().model_dump(mode="json")
    inputs = {rollouts_stage: fc.store.version(rollouts_stage), tasks_stage: fc.store.version(tasks_stage)}
    results: dict[str, ScoredTables] = {}

    def compute(key: str) -> ScoredTables:
        if not results:  # one fan-out scores every chunk
            logger.info("scoring %d rollouts in %d chunks on %s (%d workers)", rollouts.num_rows, len(chunks),
                        env_cfg.task_runner, env_cfg.workers)
            results.update(_fanout.with_options(task_runner=task_runner_for(env_cfg))(
                chunks, task_rows, env_cfg.model_dump(mode="json"), llm))
        return results[key]

    scored = publish_scores(fc.store, list(chunks), compute, env=env_cfg, provider=fc.provider, inputs=inputs,
                            extra={"chunk_size": chunk_size}, force=force)
    summaries = scored_summaries(scored, fc.store)
    rew = summaries[1]
    publish_artifact("score-rollouts", summaries, fc=fc)
    print(f"rewards: {rew['rows']} rows, {rew['missing_rewards']} missing ({rew['environment_gaps']} of them "
          "environment gaps: libraries the sandbox's CDN mirror lacks)")
    return {"stages": summaries, "missing_rewards": rew["missing_rewards"]}

