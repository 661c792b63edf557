"""The environment as an OpenEnv server (``rubricrl serve-openenv``; pinned: openenv-core==0.2.1, the ``envs``
extra; docs/environments.md) and its client.

    rubricrl serve-openenv --set environments.max_turns=3         # ws://127.0.0.1:8766/ws, POST /reset, /step
    with RubricEnvClient("http://127.0.0.1:8766") as env:
        obs = env.reset(query_id="q-counter").observation         # obs.prompt: the chat turns for the policy
        result = env.step(AppAction(app=text))                    # result.reward, result.done, .observation.feedback

``reset`` picks a published query (``query_id``, else one drawn by ``seed``) and returns its prompt; ``step``
scores the app (``rubricrl.environments.episode``: ``rubricrl score``'s code under the process's one engine, or
through ``rubricrl serve-env`` with ``service.url``) and returns its reward, ``done``, and with turns left what
the environment found, as the next user turn. A missing reward is ``reward: null`` with ``masked: true`` and
the reason in ``error``; the episode ends there. Bad input is refused as ``rubricrl serve-env`` refuses it
(``rubricrl.service.requests``): over HTTP the same 4xx body naming the field and the limit, over the
WebSocket an error message with the same text. Episodes are WebSocket sessions (OpenEnv's HTTP routes build a
fresh environment per request, so ``POST /step`` scores one app of the ``query_id`` it names).
"""
from __future__ import annotations

import hmac
import math
import os
import random
import uuid
from dataclasses import dataclass
from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server import Action, Environment, Observation, State
from pydantic import Field

from rubricrl.adapters.client import Scorer, scorer_for
from rubricrl.environments.episode import Episode, load_split, prompt_messages, score_app
from rubricrl.service.app import json_response
from rubricrl.service.requests import RequestError, check_item
from schemas.config import Config
from schemas.config.service import ServiceConfig
from schemas.rubric import Task


class AppAction(Action):
    app: str = Field(..., description="the policy's whole response: the app in a fenced html block")
    query_id: str | None = Field(None, description="the query the app answers; needed only without a reset "
                                                   "(OpenEnv's stateless POST /step)")


class AppObservation(Observation):
    query_id: str = ""
    prompt: list[dict[str, str]] = Field(default_factory=list, description="the chat turns the policy answers next")
    feedback: str | None = Field(None, description="what the environment found in the last app (the next user turn)")
    turn: int = 0
    tier: str | None = None
    masked: bool = Field(False, description="the reward is missing (scoring failed or timed out): leave it out")
    error: str | None = None
    metrics: dict[str, float | None] = Field(default_factory=dict)


@dataclass
class Runtime:
    """What every session of one server shares: the tasks, the one scorer (so the process-wide bounds hold)
    and the settings."""

    tasks: dict[str, Task]
    scorer: Scorer
    service: ServiceConfig
    max_turns: int
    sample_timeout_s: float

    @classmethod
    def of(cls, project: Config, split: str = "rl_queries", benchmark: str | None = None,
           scorer: Scorer | None = None) -> "Runtime":
        env = project.environments
        return cls({t.query_id: t for t in load_split(project, split, benchmark)}, scorer or scorer_for(project),
                   project.service, env.max_turns, env.sample_timeout_s)


def finite(metrics: dict[str, float]) -> dict[str, float | None]:
    """JSON has no NaN: an undecided metric travels as null (pure)."""
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in metrics.items()}


class RubricEnvironment(Environment):
    """One session's episodes over the shared ``Runtime``."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # sessions share only the scorer, which bounds itself

    def __init__(self, runtime: Runtime) -> None:
        super().__init__()
        self.runtime = runtime
        self.episode: Episode | None = None
        self._state = State(episode_id=None, step_count=0)

    def _task(self, query_id: str, field: str) -> Task:
        task = self.runtime.tasks.get(query_id)
        if task is None:
            raise RequestError(422, field, f"{query_id!r} is not a query of this server "
                                           f"({len(self.runtime.tasks)} published)")
        return task

    def _begin(self, task: Task, episode_id: str | None) -> None:
        self.episode = Episode(task, self.runtime.max_turns)
        self._state = State(episode_id=episode_id or uuid.uuid4().hex[:16], step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, query_id: str | None = None,
              **kwargs: Any) -> AppObservation:
        if query_id is None:
            query_id = random.Random(seed).choice(sorted(self.runtime.tasks))
        task = self._task(query_id, "query_id")
        self._begin(task, episode_id)
        return AppObservation(query_id=task.query_id, prompt=prompt_messages(task), done=False, reward=None)

    def step(self, action: AppAction, timeout_s: float | None = None, **kwargs: Any) -> AppObservation:
        if action.query_id is not None and (self.episode is None or self.episode.done
                                            or action.query_id != self.episode.task.query_id):
            self._begin(self._task(action.query_id, "action.query_id"), None)
        ep = self.episode
        if ep is None or ep.done:
            raise RequestError(409, "action.query_id", "no episode in progress: reset first, or name the query "
                                                       "the app answers")
        try:  # the service's item checks (length, valid text), named after the action's field
            check_item(0, {"query_id": ep.task.query_id, "response": action.app}, self.runtime.service)
        except RequestError as e:
            raise RequestError(e.status, "action.app", e.message, e.limit) from None
        limit = min(timeout_s or math.inf, self.runtime.sample_timeout_s)
        answer = score_app(self.runtime.scorer, ep.task.query_id, action.app, limit)
        ep.add(action.app, answer)
        self._state.step_count += 1
        feedback = None if ep.missing else ep.observation()
        return AppObservation(query_id=ep.task.query_id, prompt=[] if ep.done else ep.conversation(), feedback=feedback,
                              turn=len(ep.turns), tier=answer.get("tier"), masked=ep.missing,
                              error=answer.get("reason") if ep.missing else None, metrics=finite(ep.metrics()),
                              reward=answer.get("reward"), done=ep.done)

    @property
    def state(self) -> State:
        return self._state


def create_openenv_app(runtime: Runtime, max_sessions: int, token: str | None = None) -> Any:
    """OpenEnv's FastAPI app over ``runtime``; bad input answered as ``rubricrl serve-env`` answers it."""
    from fastapi import Request
    from openenv.core.env_server import create_fastapi_app

    app = create_fastapi_app(lambda: RubricEnvironment(runtime), AppAction, AppObservation,
                             max_concurrent_envs=max_sessions)

    @app.exception_handler(RequestError)
    async def refused(_request: Request, e: RequestError) -> Any:
        return json_response(e.status, e.body())

    if token is not None:
        app.add_middleware(BearerToken, token=token)
    return app


class BearerToken:
    """Every HTTP request and WebSocket must carry ``Authorization: Bearer <token>`` (as ``serve-env`` asks)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.token = app, token.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not (given.startswith(b"Bearer ") and hmac.compare_digest(given[len(b"Bearer "):], self.token)):
                err = RequestError(401, "Authorization", "missing or wrong token")
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                await json_response(401, err.body())(scope, receive, send)
                return
        await self.app(scope, receive, send)


def serve_openenv(project: Config, split: str = "rl_queries", benchmark: str | None = None) -> int:
    """``rubricrl serve-openenv``: the bind and token rules of ``serve-env``, then uvicorn until SIGTERM."""
    import uvicorn

    from rubricrl.service.server import check_bind, draining_server

    svc, env = project.service, project.environments
    token = os.environ.get(svc.token_env) or None
    check_bind(svc.host, token, svc.token_env)
    runtime = Runtime.of(project, split, benchmark)  # tasks and scorer (browser, judge) up before the port opens
    where = f"http://{svc.host}:{env.openenv_port}"
    print(f"rubricrl serve-openenv: {where} (ws {where.replace('http', 'ws', 1)}/ws)  {len(runtime.tasks)} queries  "
          f"max_turns={env.max_turns}  sample_timeout_s={env.sample_timeout_s:g}  "
          f"scoring={'via ' + svc.url if svc.url else 'in-process'}", flush=True)
    config = uvicorn.Config(create_openenv_app(runtime, env.max_sessions, token), host=svc.host,
                            port=env.openenv_port, log_level="warning", access_log=False)
    server = draining_server(config)
    server.run()
    return 0 if server.started else 1


class RubricEnvClient(EnvClient[AppAction, AppObservation, State]):
    """OpenEnv's WebSocket client for ``rubricrl serve-openenv``: one episode per connection at a time."""

    def __init__(self, base_url: str, message_timeout_s: float = 900.0, token: str | None = None, **kw: Any) -> None:
        super().__init__(base_url, message_timeout_s=message_timeout_s, **kw)
        self._token = token

    def connect(self) -> "RubricEnvClient":
        if self._ws is None and self._token is not None:
            from websockets.sync.client import connect as ws_connect

            self._ws = ws_connect(self._ws_url, open_timeout=self._connect_timeout,
                                  additional_headers={"Authorization": f"Bearer {self._token}"})
            return self
        super().connect()
        return self

    def _step_payload(self, action: AppAction) -> dict[str, Any]:
        return action.model_dump(exclude={"metadata"}, exclude_none=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[AppObservation]:
        obs = AppObservation(**payload.get("observation", {}), reward=payload.get("reward"),
                             done=payload.get("done", False))
        return StepResult(observation=obs, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(**payload)


def env_reward(prompts: list[Any], completions: list[Any], env_reward: list[float | None] | None = None,
               **kwargs: Any) -> list[float | None]:
    """TRL ``reward_funcs`` entry for a ``rollout_func`` that stepped the OpenEnv server: its ``env_reward``
    column, a missing one ``None`` (TRL: NaN, advantage 0)."""
    if env_reward is None:
        raise ValueError("no env_reward column: the rollout_func must return the rewards step() gave "
                         "(rubricrl.environments.openenv.step_apps)")
    return list(env_reward)


def step_apps(client: RubricEnvClient, query_ids: list[str], apps: list[str]) -> list[float | None]:
    """One single-turn episode per app on ``client``'s server: the rewards ``step`` returned, in order."""
    rewards = []
    for q, app in zip(query_ids, apps):
        client.reset(query_id=q)
        rewards.append(client.step(AppAction(app=app)).reward)
    return rewards
