"""What every score-step call of one training run shares, built once per run folder and process: the
run's configuration (``config.json``, written by train-rl), the judge provider (holding
``env.judge.concurrency`` as a process-wide bound, ``tasks.rl.judge_limit``), the tasks and the
policy's tokenizer; and the names of the per-step records files train-rl publishes at the end.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import pyarrow.parquet as pq

from schemas.config import Config, load_config
from schemas.layout import RUN_CONFIG, RUN_QUERIES
from schemas.rubric import Task
from tasks.env.publish import SCHEMAS, ScoredTables
from tasks.env.score_tables import task_from_row
from tasks.llm import Provider, get_provider
from tasks.rl.judge_limit import SharedLimit


@dataclass(frozen=True)
class StepRun:
    """What every step of one training run shares, built once: config, judge provider, tasks."""

    cfg: Config
    provider: Provider
    tasks: dict[str, Task]


def step_records_name(step: int, rank: int, part: int | None) -> str:
    """``step-000003-rank0.parquet``, or per streamed part ``step-000003-rank0-p0002.parquet``."""
    return f"step-{step:06d}-rank{rank}" + ("" if part is None else f"-p{part:04d}") + ".parquet"


def read_step_scores(records: Path, key: str) -> ScoredTables:
    """One step's (or part's) judgments, rewards and check_results records (``key``: the file name's stem)."""
    return ScoredTables(*(pq.read_table(records / name / f"{key}.parquet", schema=schema)
                          for name, schema in zip(ScoredTables._fields, SCHEMAS)))


@lru_cache(maxsize=4)
def step_run(run_dir: str, prepare: Callable[[Config], Config] | None = None) -> StepRun:
    """The run folder's shared state; ``prepare``: what the caller applies to the run's configuration first
    (the score-step flow: the reward of the training mode)."""
    cfg = load_config(file=Path(run_dir) / RUN_CONFIG)
    cfg = prepare(cfg) if prepare is not None else cfg
    rows = pq.read_table(Path(run_dir) / RUN_QUERIES, columns=["query_id", "query", "rubric_json"]).to_pylist()
    provider = SharedLimit(get_provider(config=cfg.resolved_llm()), cfg.env.judge.concurrency)
    return StepRun(cfg, provider, {r["query_id"]: task_from_row(r) for r in rows})  # type: ignore[arg-type]


@lru_cache(maxsize=4)
def step_tokenizer(model_path: str) -> Any:
    from tasks.attribution.tokens import load_tokenizer

    return load_tokenizer(model_path)
