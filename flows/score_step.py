"""score-step: one GRPO step's responses -> rewards and token membership (paper 3.4, 3.5, B.4).

The train-rl job calls ``score_step_flow`` (its ``train.run.score_fn``) in the trainer's process: once
per step, or (streamed scoring, the default) once per finished group, several at once on the trainer's
score workers. It reads the run's whole resolved configuration from the run folder (written once by
train-rl); the judge provider, the tasks and the tokenizer are built once per run, not per step
(``tasks/rl/step_run.py``), and the provider is shared by every call in the process. The work is
``tasks.rl.score_step.score_step``; the judgments, rewards, check_results and attributions rows go to the
run folder's records (one file per step and rank, ``-pNNNN`` per group when streamed), which train-rl
publishes as stages at the end.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from schemas.config.train import RULE_OF_MODE
from schemas.layout import RUN_RECORDS
from tasks.rl.score_step import score_step
from tasks.rl.step_run import step_records_name, step_run, step_tokenizer
from tasks.stages.store import atomic_write_table
from training.config import with_mode_reward

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
    run = step_run(out_dir, with_mode_reward)
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
    for name, table in (*zip(out.scored._fields, out.scored), ("attributions", out.attributions)):
        atomic_write_table(records / name / step_records_name(step, rank, part), table)
    return out.rewards, [m.tolist() for m in out.membership], info
