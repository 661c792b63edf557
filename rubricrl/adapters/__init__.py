"""Drop-in reward functions for the RL stacks teams already run, over the environment's reward service.

- ``rubricrl.adapters.trl``: ``RubricReward``, a ``GRPOTrainer`` ``reward_funcs`` callable;
- ``rubricrl.adapters.verl``: ``compute_score`` / ``compute_score_batch`` for ``custom_reward_function.path``;
- ``rubricrl.adapters.openrlhf``: the ``--reward.remote_url`` protocol (HTTP route and file form).

Each scores through ``rubricrl.adapters.client.scorer()``: in the trainer's process, or through
``rubricrl serve-env`` when ``service.url`` is set. docs/adapters.md has the trainer-side settings.
"""
from __future__ import annotations

import math
from typing import Any

from schemas.config.env import SCORED_TIERS


def number(value: Any) -> float:
    """A float for stacks whose logs take numbers only: None (undecided, missing) is NaN (pure)."""
    return math.nan if value is None else float(value)


def tier_number(tier: Any) -> float:
    """The tier's place in the hierarchy (0 format_invalid .. 3 valid); NaN for missing (pure)."""
    return float(SCORED_TIERS.index(tier)) if tier in SCORED_TIERS else math.nan
