"""Toy queries and a toy score function, for the demo run and the CPU tests (not the paper's reward).

``pattern_reward`` rewards the share of generated tokens whose id lies in a fixed band, so a tiny
random policy can visibly learn; it also returns token membership (DIRECT on the tokens outside the
band, as if "directly implicated") so every weight mode is exercised. The real score function
is supplied by the train-rl flow (environment rewards + attribution).
"""
from __future__ import annotations

from typing import Any

from tasks.attribution.weights import DIRECT, OTHER

TOY_QUERIES = [
    {"query_id": f"toy-{i}", "query": q}
    for i, q in enumerate([
        "Build a counter app with a +1 button and a reset button.",
        "Make a todo list with add, complete and filter controls.",
        "Create a stopwatch with start, stop and lap buttons.",
        "Build a colour picker that previews the chosen colour.",
        "Make a calculator for addition and subtraction.",
        "Create a memory card game with a move counter.",
        "Build a unit converter between metres and feet.",
        "Make a tip calculator with a split-the-bill field.",
    ])
]

BAND = (100, 164)  # token ids rewarded by pattern_reward


def in_band(token_id: int) -> bool:
    return BAND[0] <= token_id < BAND[1]


def pattern_reward(prompts: list[str], responses: list[str], token_ids: list[list[int]], **ctx: Any
                   ) -> tuple[list[float | None], list[list[int]], dict[str, Any]]:
    """Reward = share of response tokens in ``BAND``; DIRECT membership on the others (the "errors")."""
    rewards: list[float | None] = []
    membership: list[list[int]] = []
    for ids in token_ids:
        hits = [in_band(t) for t in ids]
        rewards.append(sum(hits) / len(ids) if ids else 0.0)
        membership.append([OTHER if h else DIRECT for h in hits])
    passed = [r is not None and r >= 0.5 for r in rewards]
    return rewards, membership, {"passed": passed, "tier": ["rubric" if p else "runtime" for p in passed]}
