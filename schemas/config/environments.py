"""Configuration of ``rubricrl serve-openenv`` (``rubricrl.environments.serve_openenv``: the package's OpenEnv
server, environments/rubricrl_webapp, run in .envs/openenv; docs/environments.md).

Scoring is the reward service's (a running ``rubricrl serve-env`` at ``service.url``, else ``service.host`` and
``service.port``), under its bounds; this section holds only what an episode adds: how many apps the policy may
write, how long one app may take to score before its reward counts as missing, and how many OpenEnv sessions
one server holds. The other stacks take the same settings as their own options (docs/environments.md).
Overrides follow the usual ``RUBRICRL_ENVIRONMENTS__MAX_TURNS=3`` / ``--set environments.max_turns=3`` rules.
"""
from __future__ import annotations

from pydantic import Field

from schemas.config.base import Section


# the published query sets an environment draws from: the selected RL queries, or every query with a rubric
SPLITS = ("rl_queries", "all")


class EnvironmentsConfig(Section):
    """Episodes in ``rubricrl serve-openenv``."""

    max_turns: int = Field(1, ge=1, le=16, description="Apps the policy may write in one episode; after each "
                                                        "but the last it reads what the environment found")
    sample_timeout_s: float = Field(600.0, gt=0, description="Time limit of scoring one app; past it the app's "
                                                              "reward is missing (masked, never 0) with the reason")
    openenv_port: int = Field(8766, ge=1, le=65535, description="rubricrl serve-openenv's listen port (the host and "
                                                                 "token are service.host and service.token_env)")
    max_sessions: int = Field(64, ge=1, le=4096, description="OpenEnv WebSocket sessions (episodes) one server "
                                                              "holds at once")
