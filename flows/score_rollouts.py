"""The two scoring flows: ``score-rollouts`` (a rollouts stage -> judgments, rewards; paper 3.3) and
``score-step`` (one GRPO step's responses -> rewards and token membership; paper 3.4, 3.5, B.4).

score-rollouts.

Chunks of rollouts fan out over a Prefect task runner: threads by default (``env.task_runner``
= "threads", ``env.workers`` workers), or Ray through prefect-ray ("ray"; ``env.ray_address`` or a
local Ray instance). Each worker process keeps one browser (fresh context per app) and builds its
judge provider from the run's LLM settings, so nothing unpicklable crosses to Ray workers.

Inputs: a rollouts stage with ``rollout_id``, ``query_id``, ``response`` and a tasks stage with
``query_id``, ``query``/``text``, ``rubric``/``rubric_json``. Outputs: the ``judgments`` and
``rewards`` stages (schemas/env.py), validated by their GX suites before the flow reports success.

Run: ``prefect deployment run score-rollouts/<deployment>`` or ``score_rollouts(...)`` in Python.

score-step. The train-rl job calls ``score_step_flow`` (its ``train.run.score_fn``) in the trainer's
process: once per step, or (streamed scoring, the default) once per finished group, several at once on
the trainer's score workers. It reads the run's whole resolved configuration from the run folder
(written once by train-rl), and builds the judge provider, the tasks and the tokenizer once per run,
not per step; the provider is shared by every call in the process and holds ``env.judge.concurrency``
as a process-wide bound (``tasks.rl.judge_limit``). The work is ``tasks.rl.score_step.score_step``; the
judgments, rewards and attributions rows go to the run folder's records (one file per step and rank,
``-pNNNN`` per group when streamed), which train-rl publishes as stages at the end.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import as_completed
from prefect.task_runners import ThreadPoolTaskRunner

from flows.common import flow_context, forward_library_logs, publish_artifact, stage_summary
from schemas.check_results import CHECK_RESULTS_SCHEMA, check_results_suites
from schemas.config import Config, load_config
from schemas.config_env import EnvConfig
from schemas.config_train import RULE_OF_MODE
from schemas.env import JUDGMENTS_SCHEMA, REWARDS_SCHEMA, judgments_suites, reward_suites_for
from schemas.layout import RUN_CONFIG, RUN_QUERIES, RUN_RECORDS
from schemas.rubric import Task
from tasks.env.score_tables import checks_run, missing_counts, reward_config_hash, score_rollouts_tables, task_from_row
from tasks.llm import Provider, get_provider
from tasks.progress import Progress
from tasks.rl.judge_limit import SharedLimit
from tasks.rl.score_step import score_step
from tasks.stages.stage import StageSpec, chunked, run_stage
from tasks.stages.store import atomic_write_table
from training.config import with_mode_reward


def _score_chunk(rollouts: pa.Table, tasks: dict[str, dict[str, Any]], env: dict[str, Any],
                 llm: dict[str, Any]) -> tuple[pa.Table, pa.Table, pa.Table]:
    """One chunk on one worker: the worker's shared browser, a provider built here (picklable inputs only)."""
    from schemas.config_llm import LLMConfig

    cfg = EnvConfig.model_validate(env)
    provider = get_provider(config=LLMConfig.model_validate(llm))
    task_objs = {k: task_from_row(v) for k, v in tasks.items()}
    return score_rollouts_tables(rollouts, task_objs, provider=provider, cfg=cfg)


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
                 llm: dict[str, Any]) -> dict[str, tuple[pa.Table, pa.Table, pa.Table]]:
    futures = {k: score_chunk.submit(t, {q: tasks[q] for q in set(t.column("query_id").to_pylist()) if q in tasks},
                                     env, llm) for k, t in chunks.items()}
    keys = {f: k for k, f in futures.items()}
    with Progress("score-rollouts", sum(t.num_rows for t in chunks.values()), unit="apps", verb="scored") as p:
        for f in as_completed(list(futures.values())):  # a chunk on a worker counts as soon as it is back
            p.update(chunks[keys[f]].num_rows, checks_run=checks_run(f.result()[2]))
    return {k: f.result() for k, f in futures.items()}


@flow(name="score-rollouts-fanout")
def _fanout(chunks: dict[str, pa.Table], tasks: dict[str, dict[str, Any]], env: dict[str, Any],
            llm: dict[str, Any]) -> dict[str, tuple[pa.Table, pa.Table, pa.Table]]:
    return score_chunks(chunks, tasks, env, llm)


def _check_stats(t: pa.Table) -> dict[str, Any]:
    status = t.column("status").to_pylist()
    return {s: status.count(s) for s in ("passed", "failed", "inconclusive")}


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
    keys = list(chunks)
    llm = fc.pinned_llm().model_dump(mode="json")
    env_json = env_cfg.model_dump(mode="json")
    kind = env_cfg.reward_kind
    inputs = {rollouts_stage: fc.store.manifest(rollouts_stage).version,  # type: ignore[union-attr]
              tasks_stage: fc.store.manifest(tasks_stage).version}  # type: ignore[union-attr]
    results: dict[str, tuple[pa.Table, pa.Table, pa.Table]] = {}

    def compute() -> dict[str, tuple[pa.Table, pa.Table, pa.Table]]:
        if not results:  # one fan-out serves all three stages
            logger.info("scoring %d rollouts in %d chunks on %s (%d workers)", rollouts.num_rows, len(chunks),
                        env_cfg.task_runner, env_cfg.workers)
            results.update(_fanout.with_options(task_runner=task_runner_for(env_cfg))(chunks, task_rows, env_json, llm))
        return results

    common = dict(provider=fc.provider.name, config={"env": env_json}, config_hash=reward_config_hash(env_cfg, kind),
                  inputs=inputs, extra={"judge_provider": llm, "chunk_size": chunk_size, "checks": env_json["checks"]},
                  force=force)  # the judge sees the checks' results, so their settings enter every stage here
    judg = run_stage(fc.store, StageSpec("judgments", JUDGMENTS_SCHEMA, judgments_suites), part_keys=keys,
                     make_part=lambda k: compute()[k][0], **common)
    rew = run_stage(fc.store, StageSpec("rewards", REWARDS_SCHEMA, lambda: reward_suites_for(env_cfg.reward)),
                    part_keys=keys, make_part=lambda k: compute()[k][1],
                    **{**common, "inputs": {**inputs, "judgments": judg.manifest.version}})
    chk = run_stage(fc.store, StageSpec("check_results", CHECK_RESULTS_SCHEMA, check_results_suites),
                    part_keys=keys, make_part=lambda k: compute()[k][2],
                    **{**common, "inputs": {**inputs, "judgments": judg.manifest.version}}, stats=_check_stats)
    table = fc.store.read("rewards")
    counts = missing_counts(table)
    missing = counts["missing_rewards"]
    summaries = [stage_summary(judg), stage_summary(rew, counts),
                 stage_summary(chk, {k: v for k, v in chk.manifest.stats.items() if k != "rows"})]
    publish_artifact("score-rollouts", summaries, fc=fc)
    print(f"rewards: {table.num_rows} rows, {missing} missing ({counts['environment_gaps']} of them environment gaps: "
          "libraries the sandbox's CDN mirror lacks)")
    return {"stages": summaries, "missing_rewards": missing}



@dataclass(frozen=True)
class StepRun:
    """What every step of one training run shares, built once: config, judge provider, tasks."""

    cfg: Config
    provider: Provider
    tasks: dict[str, Task]


def step_records_name(step: int, rank: int, part: int | None) -> str:
    """``step-000003-rank0.parquet``, or per streamed part ``step-000003-rank0-p0002.parquet``."""
    return f"step-{step:06d}-rank{rank}" + ("" if part is None else f"-p{part:04d}") + ".parquet"


@lru_cache(maxsize=4)
def step_run(run_dir: str) -> StepRun:
    cfg = with_mode_reward(load_config(file=Path(run_dir) / RUN_CONFIG))
    rows = pq.read_table(Path(run_dir) / RUN_QUERIES, columns=["query_id", "query", "rubric_json"]).to_pylist()
    provider = SharedLimit(get_provider(config=cfg.resolved_llm()), cfg.env.judge.concurrency)
    return StepRun(cfg, provider, {r["query_id"]: task_from_row(r) for r in rows})  # type: ignore[arg-type]


@lru_cache(maxsize=4)
def step_tokenizer(model_path: str) -> Any:
    from tasks.attribution.tokens import load_tokenizer

    return load_tokenizer(model_path)


score_step_task = task(score_step, name="score-step", cache_policy=NO_CACHE)


@flow(name="score-step", log_prints=True)
def score_step_flow(prompts: list[str], responses: list[str], token_ids: list[list[int]], query_ids: list[str],
                    group_ids: list[int], step: int, rank: int, model_path: str, out_dir: str,
                    part: int | None = None, offset: int = 0, deadline: float | None = None
                    ) -> tuple[list[float | None], list[list[int]], dict[str, Any]]:
    """One step's (or one part's) rewards and token membership, by the trainer's ``score_fn`` contract
    (training/grpo.py). ``part`` / ``offset``: a streamed chunk's index and its first response's index in
    the step, so rollout ids are the step's and each part has its own records file. ``deadline`` (Unix
    time): past it the trainer has stopped waiting and counted these rewards missing, so the records are
    dropped rather than published for rewards no step used."""
    run = step_run(out_dir)
    ids = [f"s{step:05d}-r{rank}-{offset + i:04d}" for i in range(len(responses))]
    out = score_step_task(ids, query_ids, responses, token_ids, run.tasks, step_tokenizer(model_path),
                          provider=run.provider, env=run.cfg.env, attribution=run.cfg.attribution,
                          rule=RULE_OF_MODE[run.cfg.train.objective.mode])
    info = {"uniform": out.uniform, "passed": out.passed, "tier": out.tier,
            "judge_failed": [r is None for r in out.rewards], "time_score_s": out.time_score_s,
            "time_attribute_s": out.time_attribute_s}
    if deadline is not None and time.time() > deadline:
        get_run_logger().warning(
            "score part %s of step %d (responses %d-%d) finished %.0f s after the trainer stopped waiting "
            "(train.rollout.score_timeout_s): its rewards were counted missing, so its records are dropped",
            part, step, offset, offset + len(responses) - 1, time.time() - deadline)
        return out.rewards, [m.tolist() for m in out.membership], info
    records = Path(out_dir) / RUN_RECORDS
    for name, table in (("judgments", out.judgments), ("rewards", out.rewards_table),
                        ("attributions", out.attributions)):
        atomic_write_table(records / name / step_records_name(step, rank, part), table)
    return out.rewards, [m.tolist() for m in out.membership], info
