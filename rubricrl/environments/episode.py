"""One episode of the environment, whatever stack drives it: the queries, the scoring of each app with
its time limit, and the episode's turns, reward and metrics (``rubricrl.environments.verifiers`` and
``rubricrl.environments.openenv`` both run on this).

Scoring is the adapters' (``rubricrl.adapters.client.scorer``: in this process with the service's engine,
or through ``rubricrl serve-env``), one app per call, so the process-wide bounds (browser slots, judge
calls, LLM cache and budget) hold across every episode. An app not scored within
``environments.sample_timeout_s``, or whose scoring failed, has a missing reward: the episode ends there
with the reason, and the stacks mask it (never a 0).
"""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from rubricrl.adapters import number
from rubricrl.adapters.client import Scorer
from rubricrl.environments.observation import passed, render_observation, requirements_of
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


@lru_cache(maxsize=1)
def _waiters() -> ThreadPoolExecutor:
    # the scorer blocks; each app waits on its own thread so its time limit is its own
    return ThreadPoolExecutor(max_workers=64, thread_name_prefix="rubricrl-episode")


def score_app(scorer: Scorer, query_id: str, app: str, timeout_s: float) -> dict[str, Any]:
    """One app's answer within ``timeout_s``; past it, or when scoring fails, an answer with a missing reward
    and the reason (the scorer's own work goes on within ``service.request_timeout_s``)."""
    from rubricrl.service.engine import missing_answer

    future = _waiters().submit(scorer.score, [{"query_id": query_id, "response": app}])
    try:
        return future.result(timeout=timeout_s)[0]
    except FutureTimeout:
        return missing_answer(query_id, f"not scored within environments.sample_timeout_s={timeout_s:g} s")
    except Exception as e:  # the environment failed, not the app: a missing reward, never a 0
        return missing_answer(query_id, f"scoring failed: {type(e).__name__}: {e}")


def answer_metrics(answer: dict[str, Any]) -> dict[str, float]:
    """The weight-0 metrics of one scored app: gates, rubric score, checks passed, missing (pure)."""
    checks = (answer.get("evidence") or {}).get("checks") or []
    return {"format_valid": number(answer.get("format_valid")), "source_valid": number(answer.get("source_valid")),
            "runtime_valid": number(answer.get("runtime_valid")), "rubric_score": number(answer.get("rubric_score")),
            "checks_passed": sum(c.get("status") == "passed" for c in checks) / len(checks) if checks else math.nan,
            "reward_missing": float(answer.get("reward") is None)}


@dataclass
class Turn:
    app: str
    answer: dict[str, Any]


@dataclass
class Episode:
    """A task and the apps written for it so far; ends when an app passes, a reward is missing, or at
    ``max_turns``. Its reward is the last app's; each turn's reward is a metric."""

    task: Task
    max_turns: int
    turns: list[Turn] = field(default_factory=list)

    @property
    def requirements(self) -> dict[str, str]:
        return requirements_of(self.task.rubric)

    @property
    def last(self) -> dict[str, Any] | None:
        return self.turns[-1].answer if self.turns else None

    @property
    def missing(self) -> bool:
        return self.last is not None and self.last.get("reward") is None

    @property
    def done(self) -> bool:
        last = self.last
        return last is not None and (len(self.turns) >= self.max_turns or self.missing or passed(last))

    @property
    def reward(self) -> float | None:
        return None if self.last is None else self.last.get("reward")

    def add(self, app: str, answer: dict[str, Any]) -> None:
        if self.done:
            raise ValueError(f"the episode of {self.task.query_id} has ended; reset for a new one")
        self.turns.append(Turn(app, answer))

    def observation(self, k: int = -1) -> str:
        """What the environment found in turn ``k``'s app (the last by default), for the policy's next turn."""
        turn = self.turns[k]
        return render_observation(turn.answer, turn.app, self.requirements)

    def conversation(self) -> list[dict[str, str]]:
        """The chat so far: the prompt, then each app and what the environment found in it."""
        out = prompt_messages(self.task)
        for k, t in enumerate(self.turns):
            out += [{"role": "assistant", "content": t.app}, {"role": "user", "content": self.observation(k)}]
        return out

    def turn_rewards(self) -> list[float | None]:
        return [t.answer.get("reward") for t in self.turns]

    def metrics(self) -> dict[str, float]:
        """The last app's metrics, the turns taken and each turn's reward (``turn_<k>_reward``, NaN past the end)."""
        out = answer_metrics(self.last) if self.last is not None else {}
        out["turns"] = float(len(self.turns))
        rewards = self.turn_rewards()
        for k in range(self.max_turns):
            out[f"turn_{k + 1}_reward"] = number(rewards[k]) if k < len(rewards) else math.nan
        return out
