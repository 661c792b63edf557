"""rubricrl's web-app environment for verifiers v1: ``vf-eval rubricrl-webapp`` (README.md)."""
from rubricrl_webapp.env import WebAppEnv
from rubricrl_webapp.taskset import WebAppTaskset

__all__ = ["WebAppEnv", "WebAppTaskset"]
