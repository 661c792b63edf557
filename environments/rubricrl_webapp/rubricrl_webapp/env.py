"""One episode: the policy writes an app, ``rubricrl serve-env`` scores it; with ``max_turns > 1`` the policy
then reads what the environment found (the service's ``observation``) and revises, until an app passes or
the turns run out.

The trace's one weighted reward is the last app's hierarchical reward, the service's own number. Its metrics
(weight 0): the last app's gates, rubric score and checks passed, the turns taken, each turn's reward. A
missing reward (the service's time limit, a judge failure, the service unreachable) fails the episode: the
trace carries the error (``has_error``) and ``run()`` raises, which verifiers records on the episode. prime-rl's
orchestrator trains no trace of a failed episode and takes its group's advantages over the clean traces
alone, so the rest of the group keeps its advantages (docs/environments.md).
"""
from __future__ import annotations

import math
import os
from typing import Any

import verifiers.v1 as vf

from rubricrl_webapp.service import RewardMissing, answer_metrics, score_app
from rubricrl_webapp.taskset import WebAppTask

REWARD = "reward"  # the trace's one weighted reward: the last app's hierarchical reward


class WebAppEnvConfig(vf.EnvConfig):
    agent: vf.AgentConfig = vf.AgentConfig.model_validate({"harness": {"id": "null"},
                                                           "runtime": {"type": "subprocess"}})
    """The policy's seat: a plain chat program, no tools and no code run, so a local process is its runtime
    (``--env.agent.*``)."""


def record(trace: vf.Trace, answers: list[dict[str, Any]], max_turns: int) -> None:
    """The last app's reward (weight 1) and the episode's metrics on ``trace``."""
    last = answers[-1]
    trace.record_reward(REWARD, float(last["reward"]), 1.0)
    trace.record_metrics(answer_metrics(last))
    trace.record_metric("turns", float(len(answers)))
    for k in range(max_turns):
        trace.record_metric(f"turn_{k + 1}_reward", float(answers[k]["reward"]) if k < len(answers) else math.nan)
    trace.info["rubricrl"] = [{"reward": a["reward"], "tier": a.get("tier")} for a in answers]


def failed(trace: vf.Trace, error: RewardMissing) -> None:
    """A missing reward on the trace: an error, no reward (never a 0)."""
    trace.record_metric("reward_missing", 1.0)
    trace.errors.append(vf.Error(type=type(error).__name__, message=str(error)))
    trace.ok = False


class WebAppEnv(vf.Env[WebAppEnvConfig]):
    async def run(self, task: WebAppTask, agents: vf.Agents) -> None:
        cfg = task.config
        token = os.environ.get(cfg.token_env)
        answers: list[dict[str, Any]] = []
        missing: RewardMissing | None = None
        async with agents.agent.interaction(task) as interaction:
            segment = await interaction.turn()
            while not segment.terminated:
                try:
                    answers.append(await score_app(cfg.service_url, token, task.data.task, segment.last_reply,
                                                   cfg.sample_timeout_s))
                except RewardMissing as e:
                    missing = e
                    break
                if answers[-1].get("passed") or len(answers) >= cfg.max_turns:
                    break
                segment = await interaction.turn(answers[-1]["observation"])
        trace = interaction.trace
        if missing is not None:
            failed(trace, missing)
            raise missing
        if answers:
            trace.record_metric("reward_missing", 0.0)
            record(trace, answers, cfg.max_turns)
