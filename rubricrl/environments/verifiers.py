"""The environment as a Prime Intellect ``verifiers`` environment (pinned: verifiers==0.1.9.post3, the
``envs`` extra; docs/environments.md).

    from rubricrl.environments.verifiers import load_environment
    env = load_environment(split="rl_queries", max_turns=3)
    results = env.evaluate_sync(client=AsyncOpenAI(base_url=..., api_key=...), model="policy")

A ``vf.MultiTurnEnv``: the policy writes an app, the environment scores it (``rubricrl score``'s code via
``rubricrl.adapters.client.scorer``: in this process, or through ``rubricrl serve-env`` with
``service_url``); with ``max_turns > 1`` the next user turn is what the environment found
(``rubricrl.environments.observation``) until an app passes or the turns run out. The rubric's one
weighted function is the last app's hierarchical reward; gates, rubric score, checks passed, turns, each
turn's reward and ``reward_missing`` are weight-0 metrics. A missing reward (scoring failed, timed out,
judge failure) is ``vf.InfraError`` in the rollout's ``state["error"]``, the rollout's reward NaN and its
advantage 0 (left out of its group's baseline): never a 0.
"""
from __future__ import annotations

import asyncio
import math
from typing import Any

import verifiers as vf
from datasets import Dataset

from rubricrl.adapters.client import Scorer, scorer_for
from rubricrl.adapters.trl import completion_text
from rubricrl.environments.episode import Episode, load_split, prompt_messages, score_app
from schemas.config import Config, load_config
from schemas.rubric import Task

ENV_ID = "rubricrl"


def dataset_of(tasks: list[Task]) -> Dataset:
    """verifiers' columns: the chat prompt, an (unused) answer, the task name and the query id in info."""
    return Dataset.from_list([{"prompt": prompt_messages(t), "answer": "", "task": ENV_ID,
                               "info": {"query_id": t.query_id}} for t in tasks])


def episode_of(state: Any) -> Episode:
    return state["rubricrl_episode"]


class RubricRubric(vf.Rubric):
    """The last app's reward (weight 1) and the episode's metrics (weight 0), with missing rewards masked:
    reward NaN, advantage 0, and the group's baseline taken over the scored rollouts only (verifiers' own
    would turn a failed score into a 0, or one NaN into a group of NaNs)."""

    def __init__(self, max_turns: int) -> None:
        super().__init__()
        self.add_reward_func(self.reward, weight=1.0)
        names = ["format_valid", "source_valid", "runtime_valid", "rubric_score", "checks_passed", "reward_missing",
                 "turns", *(f"turn_{k + 1}_reward" for k in range(max_turns))]
        for name in names:
            self.add_metric(metric_func(name), weight=0.0)

    async def reward(self, state: Any) -> float:
        r = episode_of(state).reward
        return math.nan if r is None else float(r)

    def _scored(self, state: Any) -> None:
        ep = episode_of(state)
        state["metrics"] = {"reward": math.nan if ep.reward is None else float(ep.reward), **ep.metrics()}
        state["reward"] = state["metrics"]["reward"]

    async def score_rollout(self, state: Any, score_sem: Any) -> None:
        self._scored(state)

    async def score_group(self, states: list[Any], score_sem: Any) -> None:
        for s in states:
            self._scored(s)
        scored = [s["reward"] for s in states if not math.isnan(s["reward"])]
        baseline = sum(scored) / len(scored) if scored else 0.0
        for s in states:
            s["advantage"] = 0.0 if math.isnan(s["reward"]) else s["reward"] - baseline
            for t in s["trajectory"]:
                t["reward"], t["advantage"] = s["reward"], s["advantage"]


def metric_func(name: str) -> Any:
    async def metric(state: Any) -> float:
        return episode_of(state).metrics()[name]

    metric.__name__ = name
    return metric


class RubricEnv(vf.MultiTurnEnv):
    """Write an app; read what the environment found; revise (``max_turns``)."""

    def __init__(self, tasks: list[Task], scorer: Scorer, sample_timeout_s: float, max_turns: int = 1,
                 **kwargs: Any) -> None:
        self.tasks = {t.query_id: t for t in tasks}
        self.scorer, self.sample_timeout_s = scorer, sample_timeout_s
        rubric = RubricRubric(max_turns)
        super().__init__(dataset=dataset_of(tasks), rubric=rubric, max_turns=max_turns, env_id=ENV_ID,
                         message_type="chat", **kwargs)
        # MultiTurnEnv groups in its turn counter, whose plain Rubric.score_group would overwrite the masked
        # advantages; ours counts the turns itself
        self.rubric = rubric

    async def setup_state(self, state: Any) -> Any:
        state["rubricrl_episode"] = Episode(self.tasks[state["info"]["query_id"]], self.max_turns)
        return state

    async def add_trajectory_step(self, state: Any, trajectory_step: Any) -> None:
        """After each app: score it; a missing reward ends the rollout as an error (masked, not 0)."""
        await super().add_trajectory_step(state, trajectory_step)
        ep = episode_of(state)
        app = completion_text(trajectory_step["completion"])
        answer = await asyncio.to_thread(score_app, self.scorer, ep.task.query_id, app, self.sample_timeout_s)
        ep.add(app, answer)
        trajectory_step["extras"]["rubricrl"] = {"reward": answer.get("reward"), "tier": answer.get("tier")}
        if ep.missing:
            state["error"] = vf.InfraError(f"reward missing for {ep.task.query_id}: {answer.get('reason')}")

    @vf.stop
    async def app_passed(self, state: Any) -> bool:
        """Nothing left to fix: the episode ends before ``max_turns``."""
        ep = episode_of(state)
        return ep.done and not ep.missing

    async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
        return [{"role": "user", "content": episode_of(state).observation()}]


def load_environment(split: str = "rl_queries", benchmark: str | None = None, service_url: str | None = None,
                     max_turns: int | None = None, sample_timeout_s: float | None = None,
                     profile: str | None = None, sets: list[str] | None = None, scorer: Scorer | None = None,
                     **kwargs: Any) -> RubricEnv:
    """The environment over the published ``split`` (``rl_queries`` or ``all``; ``benchmark``: one ingested
    file's queries) of the project's data directory (``profile``/``sets``/``RUBRICRL_*``). ``service_url``
    scores through a running ``rubricrl serve-env``; ``max_turns`` and ``sample_timeout_s`` default to
    ``environments.*``; other keyword arguments go to ``vf.MultiTurnEnv``."""
    extra = [f"service.url={service_url}"] if service_url else []
    project: Config = load_config(profile, sets=[*(sets or []), *extra])
    cfg = project.environments
    return RubricEnv(load_split(project, split, benchmark), scorer or scorer_for(project),
                     sample_timeout_s if sample_timeout_s is not None else cfg.sample_timeout_s,
                     max_turns if max_turns is not None else cfg.max_turns, **kwargs)
