"""The same episodes as a skyrl-gym text environment, registered as ``rubricrl-webapp`` (``register()``).

    import skyrl_gym
    from rubricrl_webapp.skyrl import register
    register()
    env = skyrl_gym.make("rubricrl-webapp", env_config={"service_url": URL},
                         extras={"reward_spec": {"task": TASK_JSON}, "max_turns": 3})
    prompt, _ = env.init(prompt_messages)
    out = env.step(app_text)   # out["observations"]: what the service found (the next user turn)

A dataset row's ``reward_spec.task`` is one ``rubricrl export-tasks`` line's ``task`` (its ``prompt`` is the
row's prompt). Each step scores the app through ``rubricrl serve-env``; the episode ends when an app passes or
at ``max_turns`` (default 1: single-turn). The step that ends it carries the last app's hierarchical reward,
earlier steps 0, so an episode's return is its last app's reward, as in the verifiers environment; each turn's
reward is in the metadata and metrics. A missing reward raises ``RewardMissing`` out of ``step``: the episode
has no reward rather than a made-up 0 (docs/environments.md says what SkyRL does with it).
"""
from __future__ import annotations

import os
from typing import Any

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
from skyrl_gym.envs.registration import register as skyrl_register

from rubricrl_webapp.service import SAMPLE_TIMEOUT_S, answer_metrics, score_app_sync, url_from_env

ENV_ID = "rubricrl-webapp"


class WebAppTextEnv(BaseTextEnv):
    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None) -> None:
        super().__init__()
        cfg, extras = dict(env_config or {}), extras or {}
        self.task = extras["reward_spec"]["task"]
        self.max_turns = int(extras.get("max_turns") or cfg.get("max_turns") or 1)
        self.url = cfg.get("service_url") or url_from_env()
        self.token = os.environ.get(cfg.get("token_env") or "RUBRICRL_SERVICE_TOKEN")
        self.timeout_s = float(cfg.get("sample_timeout_s") or SAMPLE_TIMEOUT_S)
        self.answers: list[dict[str, Any]] = []

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        answer = score_app_sync(self.url, self.token, self.task, action, self.timeout_s)
        self.answers.append(answer)
        done = bool(answer.get("passed")) or self.turns >= self.max_turns
        return BaseTextEnvStepOutput(
            observations=[] if done else [{"role": "user", "content": answer["observation"]}],
            reward=float(answer["reward"]) if done else 0.0, done=done,
            metadata={"turn_reward": answer["reward"], "tier": answer.get("tier")})

    def get_metrics(self) -> dict[str, Any]:
        if not self.answers:
            return {}
        out: dict[str, Any] = {**answer_metrics(self.answers[-1]), "turns": float(len(self.answers))}
        out.update({f"turn_{k + 1}_reward": float(a["reward"]) for k, a in enumerate(self.answers)})
        return out


def register() -> None:
    """Register ``rubricrl-webapp`` with skyrl-gym (``skyrl_gym.make``); idempotent."""
    from skyrl_gym.envs.registration import registry

    if ENV_ID not in registry:
        skyrl_register(id=ENV_ID, entry_point="rubricrl_webapp.skyrl:WebAppTextEnv")
