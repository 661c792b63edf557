"""From probe judgments to selection candidates and ``rl_queries`` rows (paper D.2).

Pure functions over plain rows (the judgments/rewards stages of ``schemas/contracts/env.py``): the flow reads the
stages, these decide the numbers. A rubric item counts as judged for a response when the judge's
rubric_alignment layer was decided for it, and as failed when its finding is critical or major (the
binary reward's "unmet", paper 3.3: ``tasks.env.rewards.items_judged`` and ``failed_items``).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from schemas.rubric import Task
from tasks.env.rewards import failed_items, items_judged
from tasks.selection.select import Candidate, Scored


def build_candidates(tasks: list[Task], meta: dict[str, dict[str, Any]], rewards: list[dict[str, Any]],
                     judgments: list[dict[str, Any]]) -> list[Candidate]:
    """One Candidate per task: its probe rewards (sample order), categories, persona, judged/failed items."""
    by_query: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rewards:
        by_query[r["query_id"]].append(r)
    judg = {j["rollout_id"]: j for j in judgments}
    out = []
    for t in tasks:
        rows = sorted(by_query.get(t.query_id, []), key=lambda r: r["rollout_id"])
        n_items = len(t.rubric.level_of())
        total = failed = 0
        for r in rows:
            j = judg.get(r["rollout_id"])
            if j is not None:
                total += items_judged(j, n_items)
                failed += len(failed_items(j)) if items_judged(j, n_items) else 0
        m = meta.get(t.query_id, {})
        out.append(Candidate(query_id=t.query_id, rewards=[r["reward"] for r in rows],
                             category_ids=list(m.get("category_ids") or []),
                             capability_ids=list(m.get("capability_ids") or []), persona_id=m.get("persona_id"),
                             items_total=total, items_failed=failed))
    return out


def judge_providers(rewards: list[dict[str, Any]]) -> dict[str, str]:
    """query_id -> the provider(s) that judged its probes (comma-joined when several did), from rewards rows."""
    by_query: dict[str, set[str]] = defaultdict(set)
    for r in rewards:
        if r.get("provider"):
            by_query[r["query_id"]].add(r["provider"])
    return {q: ",".join(sorted(p)) for q, p in by_query.items()}


def rl_query_rows(scored: list[Scored], tasks: list[Task], meta: dict[str, dict[str, Any]],
                  cands: list[Candidate], policy_checkpoint: str, policy_kind: str,
                  providers: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Rows of ``rl_queries`` for the selected queries, in pick order (highest final score first).

    ``providers``: query_id -> judge provider of its probes (``judge_providers``)."""
    providers = providers or {}
    task_by = {t.query_id: t for t in tasks}
    cand_by = {c.query_id: c for c in cands}
    chosen = sorted((s for s in scored if s.selected), key=lambda s: (-s.final_score, s.query_id))
    rows = []
    for rank, s in enumerate(chosen, start=1):
        t, c, m = task_by[s.query_id], cand_by[s.query_id], meta.get(s.query_id, {})
        got = [x for x in c.rewards if x is not None]
        rows.append({
            "query_id": s.query_id, "query": t.query, "rubric_json": t.rubric.model_dump_json(),
            "category_ids": c.category_ids, "capability_ids": c.capability_ids, "persona_id": c.persona_id,
            "difficulty": m.get("difficulty"), "domain": m.get("domain"), "probe_samples": len(c.rewards),
            "probe_rewards": c.rewards, "mean_reward": sum(got) / len(got) if got else None,
            "distinct_levels": s.distinct_levels, "reward_std": s.reward_std, "discrimination": s.discrimination,
            "weakness": s.weakness, "base_score": s.base_score, "coverage_factor": s.coverage_factor,
            "final_score": s.final_score, "rank": rank, "reason": s.reason,
            "policy_checkpoint": policy_checkpoint, "policy_kind": policy_kind,
            "judge_provider": providers.get(s.query_id),
        })
    return rows
