"""verl: the environment as a custom reward function (``custom_reward_function.path``).

    custom_reward_function.path=pkg://rubricrl.adapters.verl   # or this file's path
    custom_reward_function.name=compute_score              # reward_model.reward_manager=naive (one at a time)
    custom_reward_function.name=compute_score_batch        # reward_model.reward_manager=batch

verl's reward managers call ``compute_score(data_source=, solution_str=, ground_truth=, extra_info=)``
per response (``verl/workers/reward_manager/naive.py``, and the reward loop's
``verl/experimental/reward_loop/reward_manager/naive.py``, from worker threads) or
``compute_score(data_sources=, solution_strs=, ground_truths=, extra_infos=)`` per batch
(``verl/workers/reward_manager/batch.py``), merging ``custom_reward_function.reward_kwargs`` into the
keywords (``verl/trainer/ppo/reward.py``). Here ``ground_truth`` (the dataset's
``reward_model.ground_truth``) is the response's ``query_id`` in the published rubric_items.

Each returns verl's dict form: ``score`` (the environment's reward) and, as numeric ``reward_extra_info``,
``reward_missing``, ``tier`` (0 format_invalid .. 3 valid, NaN missing), ``rubric_score``, ``format_valid``,
``source_valid``, ``runtime_valid`` (1/0, NaN undecided). verl has no missing reward, and a NaN in a GRPO
group makes the whole group's advantages NaN; so the batched form, which sees the group, gives a missing
reward the mean of its group's other rewards (group: the same ``ground_truth`` and ``extra_info["index"]``,
one dataset row's n responses): the group mean stays, its GRPO advantage is 0, as the paper drops it (B.4),
and ``reward_missing`` says so. The per-response form cannot see the group: its missing score is NaN. verl
places the score on the response's last token; GRPO sums token rewards, so token weights do not pass here.
"""
from __future__ import annotations

import math
from typing import Any

from rubricrl.adapters import number, tier_number


def verl_score(answer: dict[str, Any]) -> dict[str, float]:
    """verl's dict form of one service answer (pure)."""
    out = {"score": number(answer.get("reward")), "reward_missing": float(answer.get("reward") is None),
           "tier": tier_number(answer.get("tier"))}
    return {**out, **{k: number(answer.get(k)) for k in ("rubric_score", "format_valid", "source_valid",
                                                          "runtime_valid")}}


def _item(ground_truth: Any, solution_str: str) -> dict[str, Any]:
    if not isinstance(ground_truth, str) or not ground_truth:
        raise ValueError(f"reward_model.ground_truth is {ground_truth!r}; set it to the row's query_id from the "
                         "rubric_items stage when writing the verl dataset")
    return {"query_id": ground_truth, "response": solution_str}


def compute_score(data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any = None,
                  **_: Any) -> dict[str, float]:
    """One response (verl's naive reward manager and reward loop)."""
    from rubricrl.adapters.client import scorer

    return verl_score(scorer().score([_item(ground_truth, solution_str)])[0])


def compute_score_batch(data_sources: Any, solution_strs: list[str], ground_truths: list[Any],
                        extra_infos: Any = None, **_: Any) -> list[dict[str, float]]:
    """A whole batch in one call (verl's batch reward manager): scored at once under the shared bounds; a
    missing reward gets its group's mean (see the module docstring)."""
    from rubricrl.adapters.client import scorer

    answers = scorer().score([_item(g, s) for g, s in zip(ground_truths, solution_strs)])
    infos = list(extra_infos) if extra_infos is not None else [None] * len(answers)
    groups = [(g, (x or {}).get("index") if isinstance(x, dict) else None) for g, x in zip(ground_truths, infos)]
    out = [verl_score(a) for a in answers]
    for o, score in zip(out, group_mean_fill([o["score"] for o in out], groups)):
        o["score"] = score
    return out


def group_mean_fill(scores: list[float], groups: list[Any]) -> list[float]:
    """A NaN score becomes the mean of its group's other scores (0.0 when none has one): its GRPO advantage is
    0 and its group's mean unchanged (pure)."""
    present: dict[Any, list[float]] = {}
    for s, g in zip(scores, groups):
        if not math.isnan(s):
            present.setdefault(g, []).append(s)
    return [s if not math.isnan(s) else (sum(present[g]) / len(present[g]) if g in present else 0.0)
            for s, g in zip(scores, groups)]
