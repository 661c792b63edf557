"""The same episodes as an OpenEnv environment on the current ``openenv`` package (0.10): a server that relays
each app to a running ``rubricrl serve-env`` and lists its tasks (OpenEnv's Task API), and a typed async client.

    uvicorn --factory rubricrl_webapp.openenv:app_from_env      # RUBRICRL_SERVICE__URL, RUBRICRL_TASKS, ...
    async with WebAppClient(base_url="http://127.0.0.1:8000", headers={"Authorization": "Bearer TOKEN"}) as env:
        first = await env.reset(index=0)          # first.observation.prompt: the policy's first turn
        result = await env.step(AppAction(app=text))

One split, ``all``: the task file's tasks in order (``reset(index=k)`` or ``reset(query_id=...)``). A step's
reward is the app's hierarchical reward, its ``feedback`` what the service found (the next user turn) until the
episode ends (the app passed, or ``max_turns``). A missing reward ends the episode with ``reward`` None and the
reason in ``error``: never a 0. With ``RUBRICRL_OPENENV_TOKEN`` set the server asks every request for it
(``Authorization: Bearer``); the same token variable as the service's is read for the relay.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State

from rubricrl_webapp.service import SAMPLE_TIMEOUT_S, RewardMissing, score_app_sync, url_from_env
from rubricrl_webapp.tasks_file import TASKS, read_tasks

ENV_NAME = "rubricrl-webapp"
SPLIT = "all"
MAX_SESSIONS = 64  # WebSocket sessions (episodes) one server holds at once


class AppAction(Action):
    app: str


class AppObservation(Observation):
    query_id: str | None = None
    prompt: list[dict[str, str]] | None = None
    feedback: str | None = None
    tier: str | None = None
    error: str | None = None


class WebAppEnvironment(Environment[AppAction, AppObservation, State]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, rows: list[dict[str, Any]], url: str, token: str | None, max_turns: int = 1,
                 timeout_s: float = SAMPLE_TIMEOUT_S) -> None:
        super().__init__()
        self.rows, self.url, self.token, self.max_turns, self.timeout_s = rows, url, token, max_turns, timeout_s
        self.row: dict[str, Any] | None = None
        self._state = State(step_count=0)

    def get_metadata(self) -> EnvironmentMetadata:  # GET /metadata, which `openenv validate --url` reads
        from importlib.metadata import version
        return EnvironmentMetadata(name=ENV_NAME, version=version("rubricrl-webapp"),
                                   description="Write a single-file HTML/CSS/JavaScript web app for a user's "
                                               "request; rubricrl's reward service scores it in a browser "
                                               "against the request's rubric, and its findings are the next turn")

    # the Task API (discovery only)
    def list_splits(self) -> list[str]:
        return [SPLIT]

    def list_tasks(self, split: str) -> list[dict[str, Any]]:
        return [self.get_task(split, i) for i in range(self.num_tasks(split))]

    def num_tasks(self, split: str) -> int:
        return len(self.rows) if split == SPLIT else 0

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        if split != SPLIT or not 0 <= index < len(self.rows):
            raise IndexError(index)
        task = self.rows[index]["task"]
        return {"index": index, "query_id": task["query_id"], "query": task["query"]}

    def reset(self, seed: int | None = None, episode_id: str | None = None, index: int = 0,
              query_id: str | None = None, **kwargs: Any) -> AppObservation:
        if query_id is not None:
            index = next(i for i, r in enumerate(self.rows) if r["task"]["query_id"] == query_id)
        self.row = self.rows[index]
        self._state = State(episode_id=episode_id, step_count=0)
        return AppObservation(query_id=self.row["task"]["query_id"], prompt=self.row["prompt"], done=False)

    def step(self, action: AppAction, timeout_s: float | None = None, **kwargs: Any) -> AppObservation:
        if self.row is None:
            raise RuntimeError("reset() first")
        self._state.step_count += 1
        qid = self.row["task"]["query_id"]
        try:
            answer = score_app_sync(self.url, self.token, self.row["task"], action.app, self.timeout_s)
        except RewardMissing as e:
            return AppObservation(query_id=qid, done=True, reward=None, error=str(e))
        done = bool(answer.get("passed")) or self._state.step_count >= self.max_turns
        return AppObservation(query_id=qid, done=done, reward=float(answer["reward"]), tier=answer.get("tier"),
                              feedback=None if done else answer["observation"])

    @property
    def state(self) -> State:
        return self._state


def build_app(rows: list[dict[str, Any]], url: str, token: str | None, max_turns: int = 1,
              server_token: str | None = None, timeout_s: float = SAMPLE_TIMEOUT_S,
              max_sessions: int = MAX_SESSIONS) -> Any:
    """The OpenEnv FastAPI app over ``rows`` (``rubricrl export-tasks`` lines); ``server_token``: asked of
    every request as ``Authorization: Bearer``; ``timeout_s``: one app's scoring, past it the reward is missing."""
    app = create_app(lambda: WebAppEnvironment(rows, url, token, max_turns, timeout_s), AppAction, AppObservation,
                     env_name=ENV_NAME, max_concurrent_envs=max_sessions)
    if server_token:
        from starlette.middleware.base import BaseHTTPMiddleware
        from starlette.responses import JSONResponse

        async def ask_token(request: Any, call_next: Any) -> Any:
            if request.headers.get("authorization") != f"Bearer {server_token}":
                return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401)
            return await call_next(request)

        app.add_middleware(BaseHTTPMiddleware, dispatch=ask_token)
    return app


def app_from_env() -> Any:
    """``build_app`` from the environment: ``RUBRICRL_TASKS`` (default: the shipped tasks),
    ``RUBRICRL_SERVICE__URL``, ``RUBRICRL_SERVICE_TOKEN``, ``RUBRICRL_MAX_TURNS``, ``RUBRICRL_OPENENV_TOKEN``,
    ``RUBRICRL_SAMPLE_TIMEOUT_S``, ``RUBRICRL_MAX_SESSIONS`` (``rubricrl serve-openenv`` sets them all)."""
    get = os.environ.get
    rows = read_tasks(Path(get("RUBRICRL_TASKS") or TASKS))
    return build_app(rows, url_from_env(), get("RUBRICRL_SERVICE_TOKEN"), int(get("RUBRICRL_MAX_TURNS") or 1),
                     get("RUBRICRL_OPENENV_TOKEN"),
                     float(get("RUBRICRL_SAMPLE_TIMEOUT_S") or SAMPLE_TIMEOUT_S),
                     int(get("RUBRICRL_MAX_SESSIONS") or MAX_SESSIONS))


class WebAppClient(EnvClient[AppAction, AppObservation, State]):
    """OpenEnv's async client for this server (``headers=`` carries the token)."""

    def _step_payload(self, action: AppAction) -> dict[str, Any]:
        return action.model_dump()

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[AppObservation]:
        obs = AppObservation(**payload.get("observation", {}), reward=payload.get("reward"),
                             done=payload.get("done", False))
        return StepResult(observation=obs, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(**payload)
