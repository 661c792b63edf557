"""What an episode starts from, whatever stack runs it: the published queries of a split and the policy's
first turn over one (``rubricrl export-tasks`` writes them for the package, environments/rubricrl_webapp, and
``rubricrl serve-openenv`` hands them to its server). The episodes themselves run in the package, which scores
each app through ``rubricrl serve-env``.
"""
from __future__ import annotations

from schemas.config import Config
from schemas.config.environments import SPLITS
from schemas.rubric import Task


def split_query_ids(project: Config, split: str, benchmark: str | None) -> list[str] | None:
    """The query ids of ``split`` (None: every published task); ``benchmark`` keeps an ingested file's."""
    import pyarrow.compute as pc

    from tasks.stages.store import StageStore

    if split not in SPLITS:
        raise ValueError(f"split={split!r}: use one of {SPLITS} (rl_queries: the selected RL queries; all: every "
                         "query with a published rubric)")
    store = StageStore(project.data_dir)
    ids: list[str] | None = None
    if split == "rl_queries":
        ids = store.read("rl_queries", columns=["query_id"]).column("query_id").to_pylist()
    if benchmark is not None:
        rows = store.read("benchmark_queries", columns=["query_id", "benchmark"])
        mine = rows.filter(pc.equal(rows.column("benchmark"), benchmark)).column("query_id").to_pylist()
        if not mine:
            names = sorted(set(rows.column("benchmark").to_pylist()))
            raise ValueError(f"benchmark={benchmark!r} has no ingested queries; ingested: {names}")
        ids = mine if ids is None else [q for q in ids if q in set(mine)]
    return ids


def load_split(project: Config, split: str = "rl_queries", benchmark: str | None = None) -> list[Task]:
    """The tasks (query, rubric) of a split, as published in the data directory."""
    from tasks.rubrics import load_tasks
    from tasks.stages.store import StageStore

    ids = split_query_ids(project, split, benchmark)
    tasks = load_tasks(StageStore(project.data_dir), ids)
    if not tasks:
        raise ValueError(f"no published tasks for split={split!r} in {project.data_dir}; run the pipeline "
                         "(`rubricrl run`) or ingest a benchmark first")
    return tasks


def prompt_messages(task: Task) -> list[dict[str, str]]:
    """The policy's first turn: the shared generation prompt over the expanded query (as in training)."""
    from training.rollout import prompt_messages as shared

    return shared(task.query)
