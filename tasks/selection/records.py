"""From probe and evaluation judgments to selection candidates, ``rl_queries`` rows and ``eval_results`` rows.

Pure functions over plain rows (the judgments/rewards stages of ``schemas/env.py``): the flows read the
stages, these decide the numbers. A rubric item counts as judged for a response when the judge's
rubric_alignment layer was decided for it, and as failed when its finding is critical or major (the
binary reward's "unmet", paper 3.3); the paper's pass is ``tasks.env.rewards.passed``.
"""
from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from schemas.rubric import Task
from tasks.env.rewards import passed as pass_rule
from tasks.env.rewards import rubric_severities_of, unmet_items
from tasks.selection.select import Candidate, Scored
from tasks.stages.store import StageStore

QUERY_META = ["query_id", "category_ids", "capability_ids", "persona_id", "difficulty", "domain"]


def query_meta(store: StageStore) -> dict[str, dict[str, Any]]:
    """The ``queries`` stage's descriptive columns by query id (selection and evaluation rows carry them)."""
    return {r["query_id"]: r for r in store.read("queries", columns=QUERY_META).to_pylist()}


def failed_items(judgment: dict[str, Any]) -> set[str]:
    """Rubric item ids with a critical or major rubric_alignment finding in one judgment row."""
    return unmet_items(rubric_severities_of(judgment.get("findings") or []))


def items_judged(judgment: dict[str, Any], n_items: int) -> int:
    """The rubric's item count when the rubric layer was decided for this response, else 0."""
    return n_items if judgment.get("gate_rubric_alignment") is not None else 0


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


def passed(reward_row: dict[str, Any], judgment: dict[str, Any] | None) -> bool:
    """The paper's pass of one response from its rewards and judgments rows (undecided is not a pass)."""
    if judgment is None:
        return False
    severities = (rubric_severities_of(judgment.get("findings") or [])
                  if judgment.get("gate_rubric_alignment") is not None else None)
    return pass_rule(reward_row["format_valid"], reward_row["source_valid"], reward_row["runtime_valid"],
                     severities) is True


def eval_rows(model: str, model_path: str, model_kind: str, rollouts: list[dict[str, Any]],
              rewards: list[dict[str, Any]], judgments: list[dict[str, Any]], tasks: dict[str, Task],
              meta: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """``eval_results`` rows; ``rollouts`` carry rollout_id, query_id, run, response."""
    rew = {r["rollout_id"]: r for r in rewards}
    judg = {j["rollout_id"]: j for j in judgments}
    out = []
    for ro in rollouts:
        r, j = rew[ro["rollout_id"]], judg.get(ro["rollout_id"])
        n_items = len(tasks[ro["query_id"]].rubric.level_of())
        m = meta.get(ro["query_id"], {})
        out.append({
            "eval_id": f"{model}:{ro['run']}:{ro['query_id']}", "model": model, "model_path": model_path,
            "model_kind": model_kind, "run": ro["run"], "query_id": ro["query_id"],
            "difficulty": m.get("difficulty") or "(none)", "domain": m.get("domain") or "(none)",
            "response": ro["response"], "tier": r["tier"], "tier_cause": r.get("tier_cause"),
            "environment_gaps": (j or {}).get("environment_gaps") or [], "reward": r["reward"],
            "rubric_score": r["rubric_score"],
            "passed": passed(r, j), "items_total": items_judged(j, n_items) if j else 0,
            "items_failed": len(failed_items(j)) if j else 0, **check_counts(j),
            "judge_provider": r.get("provider"),
            "category": m.get("category") or "(none)", "output_tokens": ro.get("output_tokens"),
            "generation_s": ro.get("generation_s"), "top_findings": top_findings(j),
        })
    return out


SEVERITY_ORDER = ("critical", "major", "minor")
TOP_FINDINGS = 3  # findings per response shown in the report


def check_counts(judgment: dict[str, Any] | None) -> dict[str, int]:
    """Undecided items and the executable checks' verdicts of one judgment row (evidence_json's ``checks``)."""
    checks = (json.loads(judgment.get("evidence_json") or "{}").get("checks") or []) if judgment else []
    statuses = [c.get("status") for c in checks]
    return {"items_undecided": len((judgment or {}).get("undecided_item_ids") or []),
            **{f"checks_{s}": statuses.count(s) for s in ("passed", "failed", "inconclusive")}}


def top_findings(judgment: dict[str, Any] | None) -> list[str]:
    """The most severe findings of one response as one line each (``severity layer item: description``)."""
    fs = sorted((judgment or {}).get("findings") or [], key=lambda f: SEVERITY_ORDER.index(f["severity"])
                if f["severity"] in SEVERITY_ORDER else len(SEVERITY_ORDER))
    return [f"{f['severity']} {f['layer']}{' ' + f['item_id'] if f.get('item_id') else ''}: {f.get('description') or ''}"
            for f in fs[:TOP_FINDINGS]]


def summary_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows for ``tasks.evaluation.summary.summarize``, whose tiers do not include ``missing`` (judge failed):
    such a row keeps its pass (False) and no reward, and its tier is recounted by ``missing_rates``."""
    return [{**r, "tier": "valid" if r["tier"] == "missing" else r["tier"]} for r in rows]


def tier_rates(rows: list[dict[str, Any]], tiers: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """model -> ``tier/<t>`` -> percentage of rows in tier t, averaged over runs (the summarize rule)."""
    runs: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        runs[r["model"]][r["run"]].append(r["tier"])
    out: dict[str, dict[str, float]] = {}
    for model, by_run in runs.items():
        out[model] = {f"tier/{t}": sum(100.0 * ts.count(t) / len(ts) for ts in by_run.values()) / len(by_run)
                      for t in tiers}
    return out
