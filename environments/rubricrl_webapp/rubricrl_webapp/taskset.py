"""The web-app tasks: one per line of a ``rubricrl export-tasks`` file (the package's own ``tasks.jsonl`` by
default), each a query with its rubric and the policy's first turn; and where they are scored.

    vf-eval rubricrl-webapp --env.taskset.path my_tasks.jsonl --env.taskset.task.max-turns 3 ...
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from pydantic import Field

from rubricrl_webapp.service import SAMPLE_TIMEOUT_S, RewardMissing, score_app, url_from_env
from rubricrl_webapp.tasks_file import TASKS, read_tasks



class WebAppTaskConfig(vf.TaskConfig):
    """Where and how each task's apps are scored (``--env.taskset.task.*``)."""

    service_url: str = Field(default_factory=url_from_env)
    """A running ``rubricrl serve-env`` (default: ``$RUBRICRL_SERVICE__URL``, else 127.0.0.1:8765)."""
    token_env: str = "RUBRICRL_SERVICE_TOKEN"
    """The environment variable holding the service's bearer token (unset: none is sent)."""
    max_turns: int = Field(1, ge=1)
    """Apps per episode: after each, the policy reads what the environment found and may revise."""
    sample_timeout_s: float = Field(SAMPLE_TIMEOUT_S, gt=0)
    """One app's scoring time limit; past it the reward is missing (the episode fails, never a 0)."""


class WebAppTasksetConfig(vf.TasksetConfig):
    path: str | None = None
    """A ``rubricrl export-tasks`` JSONL file (default: the tasks shipped with this package)."""
    task: WebAppTaskConfig = WebAppTaskConfig()


class WebAppData(vf.TaskData):
    task: dict[str, Any]
    """TASK.json: query_id, query (expanded), rubric; sent inline with every app."""


class WebAppTask(vf.Task[WebAppData, vf.State, WebAppTaskConfig]):
    @property
    def key(self) -> str:
        return self.data.task["query_id"]

    async def validate(self, runtime: Any) -> bool | None:
        """``vf-validate``'s gold check (there is no reference app): the service takes this task's rubric and
        scores an app for it (an empty answer, format-invalid); False when it refuses the task."""
        try:
            await score_app(self.config.service_url, os.environ.get(self.config.token_env), self.data.task, "",
                            self.config.sample_timeout_s)
        except RewardMissing:
            return False
        return True


class WebAppTaskset(vf.Taskset[WebAppTask, WebAppTasksetConfig]):
    def load(self) -> list[WebAppTask]:
        out = []
        for i, row in enumerate(read_tasks(Path(self.config.path) if self.config.path else TASKS)):
            system, user = row["prompt"]
            data = WebAppData(idx=i, id=row["task"]["query_id"], name=row["task"]["query_id"],
                              prompt=user["content"], system_prompt=system["content"], task=row["task"])
            out.append(WebAppTask(data, self.config.task))
        return out
