"""How far our reward agrees with someone else's label of the same apps (pure functions).

Two figures, the ones a reader of a benchmark table asks for:

- ``pairwise_within``: for every pair of apps of the same task whose labels differ, whether the reward
  orders them the same way. Label ties are skipped (nothing to order); a reward tie on a pair whose
  labels differ counts as a miss (the reward could not tell them apart). Missing rewards are skipped.
- ``spearman``: Spearman's rank correlation over all apps (average ranks for ties), None when either
  side is constant or fewer than three apps have both values.

Run: ``pairwise_within([(task, reward, label), ...])`` -> ``Agreement``; ``spearman(xs, ys)``.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from typing import Iterable


@dataclass(frozen=True)
class Agreement:
    agree: int  # pairs the reward orders as the label does
    pairs: int  # pairs with different labels and both rewards present
    reward_ties: int  # of those, pairs the reward scored equal (counted as misses)

    @property
    def rate(self) -> float | None:
        return self.agree / self.pairs if self.pairs else None


def pairwise_within(apps: Iterable[tuple[str, float | None, float | None]], eps: float = 1e-9) -> Agreement:
    """Pairwise order agreement within each task; ``apps`` are (task, reward, label) triples."""
    by_task: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for task, reward, label in apps:
        if reward is not None and label is not None:
            by_task[task].append((float(reward), float(label)))
    agree = pairs = ties = 0
    for group in by_task.values():
        for (ra, la), (rb, lb) in combinations(group, 2):
            if abs(la - lb) <= eps:
                continue
            pairs += 1
            if abs(ra - rb) <= eps:
                ties += 1
            elif (ra > rb) == (la > lb):
                agree += 1
    return Agreement(agree, pairs, ties)


def ranks(xs: list[float]) -> list[float]:
    """1-based ranks, ties given their average rank."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    out = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(xs: list[float | None], ys: list[float | None]) -> float | None:
    """Spearman's rho over the pairs where both values are present."""
    if len(xs) != len(ys):
        raise ValueError(f"spearman needs two lists of the same length, got {len(xs)} and {len(ys)}")
    both = [(float(x), float(y)) for x, y in zip(xs, ys) if x is not None and y is not None]
    if len(both) < 3:
        return None
    rx, ry = ranks([b[0] for b in both]), ranks([b[1] for b in both])
    n = len(both)
    mx, my = sum(rx) / n, sum(ry) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = sum((a - mx) ** 2 for a in rx)
    vy = sum((b - my) ** 2 for b in ry)
    if vx == 0 or vy == 0:
        return None
    return cov / (vx * vy) ** 0.5
