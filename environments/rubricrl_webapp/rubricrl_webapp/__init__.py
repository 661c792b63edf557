"""rubricrl's web-app environment for verifiers v1 (``vf-eval rubricrl-webapp``), skyrl-gym
(``rubricrl_webapp.skyrl``), OpenEnv (``rubricrl_webapp.openenv``) and TRL's ``environment_factory``
(``rubricrl_webapp.trl``); README.md. The verifiers classes load on first use, so the other stacks' modules run
where verifiers is not installed."""
from typing import Any

__all__ = ["WebAppEnv", "WebAppTaskset"]


def __getattr__(name: str) -> Any:
    if name == "WebAppEnv":
        from rubricrl_webapp.env import WebAppEnv

        return WebAppEnv
    if name == "WebAppTaskset":
        from rubricrl_webapp.taskset import WebAppTaskset

        return WebAppTaskset
    raise AttributeError(name)
