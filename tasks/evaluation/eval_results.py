"""``eval_results`` rows from evaluation judgments, and the per-model tier rates (paper 4.2).

Pure functions over plain rows (the judgments/rewards stages of ``schemas/contracts/env.py``): the evaluate flow
reads the stages, these decide the numbers. The paper's pass is ``tasks.env.rewards.passed``; ``passed``
here applies it to one response's rows.
"""
from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from schemas.rubric import Task
from tasks.env.rewards import failed_items, items_judged, rubric_severities_of
from tasks.env.rewards import passed as pass_rule


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
