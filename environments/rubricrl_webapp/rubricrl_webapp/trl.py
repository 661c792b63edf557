"""The same episodes for TRL's ``GRPOTrainer(environment_factory=...)`` (trl 1.16): the policy submits each app
with the ``submit_app`` tool, the tool's answer is what ``rubricrl serve-env`` found, and ``webapp_reward`` gives
the trainer the episode's reward.

    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer
    from rubricrl_webapp.trl import WebAppToolEnv, dataset_rows, webapp_reward
    trainer = GRPOTrainer(model=MODEL, args=GRPOConfig(max_tool_calling_iterations=3, ...),
                          train_dataset=Dataset.from_list(dataset_rows(max_turns=3)),
                          reward_funcs=webapp_reward,
                          environment_factory=lambda: WebAppToolEnv(service_url="http://127.0.0.1:8765"))

TRL makes one environment per rollout, calls ``reset(**row)`` with the dataset row (its ``task`` column is one
``rubricrl export-tasks`` line's task, as JSON text; an optional ``max_turns`` column) and exposes every public
method as a tool. Each ``submit_app`` scores one app; after ``max_turns`` apps, or once one passes, the episode
takes no more. The episode's reward is its last app's hierarchical reward, as in the other stacks; a rollout
that never called the tool has its final message scored as the app.

A missing reward (the service's time limit, a judge failure, the service unreachable or refusing the item):
``submit_app`` raises ``RewardMissing`` (TRL shows the policy ``{"error": ...}`` as the tool's answer) and
``webapp_reward`` gives ``None`` for that rollout, never a 0. TRL 1.16 turns ``None`` into NaN; a rollout whose
every reward is NaN is "unscorable": it is left out of its group's mean and std (nanmean, nanstd) and its own
advantage is set to 0, so the rest of its group keeps its advantages (docs/environments.md).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from rubricrl_webapp.service import SAMPLE_TIMEOUT_S, RewardMissing, score_app_sync, url_from_env
from rubricrl_webapp.tasks_file import TASKS, read_tasks

# appended to the task's last user turn by reset(): the tool is how an app reaches the environment
HOW = ("\n\nSubmit your app by calling the submit_app tool with the whole single-file HTML app. It answers with "
       "what the environment found; you may submit a revised app, {turns} app(s) in all.")


def dataset_rows(path: Path = TASKS, max_turns: int | None = None) -> list[dict[str, Any]]:
    """TRL dataset rows from a task file: ``prompt`` (system, user) and ``task`` as JSON text (Arrow would turn
    the rubric's nested objects into columns of nulls); ``max_turns`` when given."""
    rows = [{"prompt": r["prompt"], "task": json.dumps(r["task"])} for r in read_tasks(path)]
    return [{**r, "max_turns": max_turns} for r in rows] if max_turns else rows


class WebAppToolEnv:
    """One rollout's environment. Its public methods are the policy's tools (TRL lists them on the class), so
    everything else is private."""

    def __init__(self, service_url: str | None = None, token: str | None = None, max_turns: int = 1,
                 timeout_s: float = SAMPLE_TIMEOUT_S) -> None:
        self._url = service_url or url_from_env()
        self._token = token if token is not None else os.environ.get("RUBRICRL_SERVICE_TOKEN")
        self._default_turns, self._timeout_s = max_turns, timeout_s
        self._task: dict[str, Any] | None = None
        self._max_turns = max_turns
        self._rewards: list[float | None] = []  # one per app scored or lost, in order
        self._done = False

    def reset(self, task: str | dict[str, Any] | None = None, max_turns: int | None = None, **row: Any) -> str:
        if task is None:
            raise ValueError("the dataset row has no `task` column (rubricrl_webapp.trl.dataset_rows)")
        self._task = json.loads(task) if isinstance(task, str) else task
        self._max_turns = int(max_turns or self._default_turns)
        self._rewards, self._done = [], False
        return HOW.format(turns=self._max_turns)

    def submit_app(self, app: str) -> str:
        """Submit a complete single-file HTML/JS web app to be scored.

        Args:
            app: The whole app: one HTML document with its CSS and JavaScript inline.

        Returns:
            What the environment found in the app: its score, the gates, errors and failed checks to fix.
        """
        if self._done or self._task is None:
            return "The episode is over: no more apps are scored."
        try:
            answer = score_app_sync(self._url, self._token, self._task, app, self._timeout_s)
        except RewardMissing:
            self._rewards.append(None)
            self._done = len(self._rewards) >= self._max_turns
            raise
        self._rewards.append(float(answer["reward"]))
        self._done = bool(answer.get("passed")) or len(self._rewards) >= self._max_turns
        return str(answer["observation"])

    def _episode_reward(self, completion: Any) -> float | None:
        if not self._rewards:  # no tool call: the final message is the app
            try:
                self.submit_app(_last_text(completion))
            except RewardMissing:
                return None
        return self._rewards[-1]


def _last_text(completion: Any) -> str:
    if isinstance(completion, str):
        return completion
    return next((str(m.get("content") or "") for m in reversed(completion) if m.get("role") == "assistant"), "")


def webapp_reward(completions: list[Any], environments: list[WebAppToolEnv], **kwargs: Any) -> list[float | None]:
    """TRL's reward function: each rollout's episode reward, ``None`` when the service gave none."""
    return [env._episode_reward(c) for env, c in zip(environments, completions, strict=True)]
