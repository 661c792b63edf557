"""TRL: the environment as a ``GRPOTrainer`` reward function.

    from rubricrl.adapters.trl import RubricReward
    trainer = GRPOTrainer(model=..., reward_funcs=[RubricReward()], train_dataset=ds, args=GRPOConfig(...))

TRL calls each reward function as ``fn(prompts=..., completions=..., completion_ids=..., **columns)``
with every other dataset column repeated per completion (``trl/trainer/grpo_trainer.py``:
``_calculate_rewards``), plus ``trainer_state``, ``log_extra`` and ``log_metric``. The dataset's
``query_id`` column (``query_id_column``) names each prompt's task in the published rubric_items. The
reward is the environment's; a missing one is ``None``, which TRL turns into NaN and an advantage of 0
(the response does not move the policy), as the paper drops it (B.4). Per step the adapter logs
``rubricrl/reward_missing`` (fraction) and adds a ``rubricrl_tier`` column to TRL's completions table.

In the trainer's process by default, or through ``rubricrl serve-env`` with ``service.url`` set
(``rubricrl.adapters.client``), or with any ``scorer`` passed in.
"""
from __future__ import annotations

from typing import Any

from rubricrl.adapters.client import Scorer


def completion_text(completion: Any) -> str:
    """The text of one TRL completion: a string, or (conversational) the assistant messages' content (pure)."""
    if isinstance(completion, str):
        return completion
    parts = []
    for message in completion:
        content = message.get("content", "")
        if isinstance(content, list):  # typed content blocks
            content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
        parts.append(content)
    return "".join(parts)


class RubricReward:
    """``reward_funcs`` entry: rubric-grounded hierarchical rewards for ``GRPOTrainer``."""

    __name__ = "rubricrl"  # TRL names the reward's metrics after it: rewards/rubricrl/mean

    def __init__(self, query_id_column: str = "query_id", scorer: Scorer | None = None) -> None:
        self.query_id_column = query_id_column
        self._scorer = scorer

    @property
    def scorer(self) -> Scorer:
        if self._scorer is None:
            from rubricrl.adapters.client import scorer

            self._scorer = scorer()
        return self._scorer

    def __call__(self, prompts: list[Any], completions: list[Any], completion_ids: list[list[int]] | None = None,
                 **kwargs: Any) -> list[float | None]:
        query_ids = kwargs.get(self.query_id_column)
        if query_ids is None:
            raise ValueError(f"the training dataset has no {self.query_id_column!r} column; add each prompt's "
                             "query_id (from the rubric_items stage) as a column, or pass "
                             "RubricReward(query_id_column=NAME)")
        answers = self.scorer.score([{"query_id": str(q), "response": completion_text(c)}
                                     for q, c in zip(query_ids, completions)])
        rewards = [a["reward"] for a in answers]
        log_metric, log_extra = kwargs.get("log_metric"), kwargs.get("log_extra")
        if log_metric is not None:
            log_metric("rubricrl/reward_missing", sum(r is None for r in rewards) / max(1, len(rewards)))
        if log_extra is not None:
            log_extra("rubricrl_tier", [a.get("tier") for a in answers])
        return rewards
