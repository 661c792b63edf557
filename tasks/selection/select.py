"""Capability- and reward-guided selection of RL queries (paper D.2).

Three signals, all computed from probe rollouts of the current policy:

- **reward discrimination**: spread of the rewards among a query's samples (std, scaled to [0, 1]) and
  how many distinct reward levels they reach. Equal rewards give zero centred advantages, so such a
  query has no immediate training value and is never selected, however hard it is.
- **capability weakness**: for each category and capability, the share of rubric items the policy
  failed (critical or major) in its probe judgments; a query scores the mean over its categories and
  capabilities.
- **coverage**: selection is greedy with diminishing returns: each further pick from a category,
  capability or persona already chosen is worth less (``1 / (1 + strength * picks / fair_share)``), so
  learning does not collapse onto a few patterns. No fixed quota: a strong enough query still wins.

Pure functions; the flow supplies the probe tables. Departure from the paper: the paper gives the
criteria, not a formula; this module is one explicit, configurable formula for them.
"""
from __future__ import annotations

import heapq
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Iterable

from schemas.config.selection import SelectionConfig


@dataclass
class Candidate:
    query_id: str
    rewards: list[float | None]
    category_ids: list[str]
    capability_ids: list[str] = field(default_factory=list)
    persona_id: str | None = None
    items_total: int = 0        # rubric items judged over all probe samples
    items_failed: int = 0       # of which critical or major


@dataclass
class Scored:
    query_id: str
    discrimination: float
    weakness: float
    base_score: float
    distinct_levels: int
    reward_std: float
    coverage_factor: float = 1.0
    final_score: float = 0.0
    selected: bool = False
    reason: str = ""


def discrimination(rewards: Iterable[float | None], w_levels: float, decimals: int = 6) -> tuple[float, int, float]:
    """(score in [0, 1], distinct levels, std) over the rewarded samples; fewer than 2 rewards -> 0."""
    r = [x for x in rewards if x is not None]
    if len(r) < 2:
        return 0.0, len(r), 0.0
    levels = len({round(x, decimals) for x in r})
    mean = sum(r) / len(r)
    std = math.sqrt(sum((x - mean) ** 2 for x in r) / len(r))
    if levels < 2:
        return 0.0, levels, std
    span = max(r) - min(r)
    std_part = min(1.0, 2 * std / span) if span > 0 else 0.0  # 2*std/span is 1 for a two-point split
    level_part = (levels - 1) / (len(r) - 1)
    return (1 - w_levels) * std_part + w_levels * level_part, levels, std


def failure_rates(cands: list[Candidate]) -> dict[str, float]:
    """Failure rate of every category and capability: failed items / judged items over its queries."""
    tot: Counter = Counter()
    bad: Counter = Counter()
    for c in cands:
        for key in [*c.category_ids, *c.capability_ids]:
            tot[key] += c.items_total
            bad[key] += c.items_failed
    return {k: bad[k] / tot[k] for k in tot if tot[k] > 0}


def score_candidates(cands: list[Candidate], cfg: SelectionConfig) -> list[Scored]:
    rates = failure_rates(cands)
    out = []
    for c in cands:
        d, levels, std = discrimination(c.rewards, cfg.w_levels)
        keys = [*c.category_ids, *c.capability_ids]
        weak = sum(rates.get(k, 0.0) for k in keys) / len(keys) if keys else 0.0
        base = cfg.w_discrimination * d + cfg.w_weakness * weak if d > 0 else 0.0
        out.append(Scored(c.query_id, d, weak, base, levels, std))
    return out


def select(cands: list[Candidate], cfg: SelectionConfig) -> list[Scored]:
    """Greedy selection with diminishing coverage returns (lazy evaluation: factors only fall)."""
    scored = score_candidates(cands, cfg)
    by_id = {c.query_id: c for c in cands}
    eligible = [s for s in scored if s.base_score > 0]
    target = min(cfg.target_size, len(eligible))
    groups = lambda c: [f"cat:{k}" for k in c.category_ids] + [f"cap:{k}" for k in c.capability_ids] + (  # noqa: E731
        [f"persona:{c.persona_id}"] if c.persona_id else [])
    group_size: Counter = Counter(g for s in eligible for g in groups(by_id[s.query_id]))
    picks: Counter = Counter()

    def factor(c: Candidate) -> float:
        gs = groups(c)
        if not gs or cfg.coverage_strength == 0:
            return 1.0
        vals = []
        for g in gs:
            fair = max(1e-9, target * group_size[g] / max(1, len(eligible)))
            vals.append(1.0 / (1.0 + cfg.coverage_strength * picks[g] / fair))
        return sum(vals) / len(vals)

    heap = [(-s.base_score, s.query_id, 0) for s in eligible]
    heapq.heapify(heap)
    state = {s.query_id: s for s in scored}
    rounds: dict[str, int] = defaultdict(int)
    chosen = 0
    while heap and chosen < target:
        neg, qid, stamp = heapq.heappop(heap)
        s = state[qid]
        if stamp != chosen:  # stale: re-score under the current picks and push back
            s.coverage_factor = factor(by_id[qid])
            heapq.heappush(heap, (-s.base_score * s.coverage_factor, qid, chosen))
            rounds[qid] += 1
            continue
        s.coverage_factor = factor(by_id[qid])
        s.final_score = s.base_score * s.coverage_factor
        s.selected = True
        s.reason = (f"discrimination {s.discrimination:.2f} ({s.distinct_levels} reward levels, std {s.reward_std:.3f}); "
                    f"weakness {s.weakness:.2f}; coverage factor {s.coverage_factor:.2f}")
        for g in groups(by_id[qid]):
            picks[g] += 1
        chosen += 1
    for s in scored:
        if not s.selected:
            s.reason = ("all probe rewards equal: zero advantage, no training value" if s.base_score == 0
                        else f"not among the top {target} after coverage (score {s.base_score:.2f})")
    return scored


def selection_diff(previous: set[str], current: set[str]) -> dict[str, list[str]]:
    return {"added": sorted(current - previous), "kept": sorted(current & previous), "dropped": sorted(previous - current)}
