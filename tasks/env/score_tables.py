"""Rows of the ``judgments``, ``rewards`` and ``check_results`` stages from score results, and scoring a
rollout table.

``score_rollouts_table(rollouts, tasks, ...)`` is what the flows that score rollouts call: rollouts with
``rollout_id``, ``query_id``, ``response`` columns in, the three tables out (``tasks.env.publish.ScoredTables``;
schemas in ``schemas/contracts/env.py`` and ``schemas/contracts/env.py``), which ``tasks.env.publish`` publishes.
"""
from __future__ import annotations

import json
from typing import Any, Mapping

import pyarrow as pa

from schemas.checks import CHECKS_VERSION
from schemas.config.env import EnvConfig
from schemas.contracts.env import CHECK_RESULTS_SCHEMA, INTERACTION_TYPE, JUDGMENTS_SCHEMA, REWARDS_SCHEMA
from schemas.rubric import CompactRubric, Task
from tasks.env.judge_diagnosis import ScoredFinding
from tasks.env.publish import ScoredTables, env_fingerprint
from tasks.env.runtime import BrowserRuntime
from tasks.env.score import ScoreInput, ScoreResult, score_batch
from tasks.llm.base import Provider
from tasks.progress import Progress

ROLLOUT_COLUMNS = ("rollout_id", "query_id", "response")
_FINDING_KEYS = [f.name for f in JUDGMENTS_SCHEMA.field("findings").type.value_type]


def tier(r: ScoreResult) -> str:
    """Which tier decided the reward (pure)."""
    if r.reward is None:
        return "missing"
    if not r.format_valid:
        return "format_invalid"
    if r.source_valid is False:
        return "source_invalid"
    if r.runtime_valid is False:
        return "runtime_invalid"
    return "valid"


TIME_STATUSES = ("load_timeout", "unresponsive")


def tier_cause(r: ScoreResult) -> str | None:
    """Why a response sits in the missing or runtime-invalid tier (pure). Missing: ``environment_gap`` (it failed
    after a library request the mirror could not serve), ``browser_unavailable``, ``judge``. Runtime-invalid:
    ``time`` (the page ran out of time or hung, checked again alone), ``app_error`` (any other failure the
    browser saw), ``judge`` (the judge's code_simulation gate; the browser saw none)."""
    t = tier(r)
    if t == "missing":
        return r.missing_reason or "judge"
    if t != "runtime_invalid":
        return None
    if r.gates.get("browser") is not False:
        return "judge"
    inter = r.evidence.runtime.interaction if r.evidence.runtime is not None else None
    hung = inter is not None and inter.status == "hung"
    return "time" if r.evidence.runtime_status in TIME_STATUSES or hung else "app_error"


def missing_counts(table: pa.Table) -> dict[str, int]:
    """A stage summary's counts: rewards missing, and of them environment gaps (the app failed after a library
    request the mirror could not serve); ``table`` has ``reward`` and ``tier_cause`` (rewards, eval_results)."""
    causes = table.column("tier_cause").to_pylist()
    return {"missing_rewards": table.column("reward").null_count, "environment_gaps": causes.count("environment_gap")}


def _finding_row(f: ScoredFinding) -> dict[str, Any]:
    d = f.to_dict()
    row = {k: d.get(k) for k in _FINDING_KEYS}
    row["context_spans"] = [{"start": a, "end": b, "reason": why} for a, b, why in f.context_spans]
    return row


def interaction_row(inter: dict[str, Any] | None, rechecked_from: str | None) -> dict[str, Any] | None:
    """The ``interaction`` struct from ``evidence.interaction`` (its summary part)."""
    if not inter:
        return None
    fields = [f.name for f in INTERACTION_TYPE]
    fail_fields = [f.name for f in INTERACTION_TYPE.field("failures").type.value_type]
    row = {k: inter.get(k) for k in fields}
    row["failures"] = [{k: f.get(k) for k in fail_fields} for f in inter.get("failures") or []]
    row["rechecked_from"] = rechecked_from
    return row


def judgment_row(r: ScoreResult) -> dict[str, Any]:
    ev, rt, g = r.evidence, r.evidence.runtime, r.gates
    ev_json = r.evidence_json()  # the stage keeps the contract's evidence, and its probe summary in response offsets
    return {
        "rollout_id": r.key, "query_id": r.query_id, "provider": r.judge.provider or "none",
        "model": r.judge.model, "judge_error": r.judge.error, "judge_attempts": r.judge.attempts,
        "format_valid": r.format_valid, "html_offset": r.html_offset, "html_length": r.html_length,
        "source_valid": r.source_valid, "runtime_valid": r.runtime_valid,
        "gate_static_check": g.get("static_check"), "gate_code_simulation": g.get("code_simulation"),
        "gate_rubric_alignment": g.get("rubric_alignment"), "gate_tree_sitter": g.get("tree_sitter"),
        "gate_browser": g.get("browser"), "runtime_status": ev.runtime_status,
        "n_syntax_errors": len(ev.syntax_errors), "n_page_errors": len(rt.page_errors) if rt else 0,
        "n_blocked_requests": len(rt.blocked_requests) if rt else 0,
        "environment_gaps": [b.url for b in ev.gaps],
        "findings": [_finding_row(f) for f in r.findings],
        "interaction": interaction_row(ev_json["interaction"], rt.rechecked_from if rt else None),
        "undecided_item_ids": list(r.undecided),
        "evidence_json": json.dumps(ev_json, ensure_ascii=False),
    }


def reward_row(r: ScoreResult, cfg_hash: str) -> dict[str, Any]:
    return {"rollout_id": r.key, "query_id": r.query_id, "reward_kind": r.reward_kind, "reward": r.reward,
            "tier": tier(r), "tier_cause": tier_cause(r), "rubric_score": r.rubric_score, "format_valid": r.format_valid,
            "source_valid": r.source_valid, "runtime_valid": r.runtime_valid,
            "provider": r.judge.provider or "none", "reward_config_hash": cfg_hash}


def tables(results: list[ScoreResult], cfg: EnvConfig) -> tuple[pa.Table, pa.Table]:
    """The ``judgments`` and ``rewards`` rows of these results, scored with ``cfg``."""
    h = env_fingerprint(cfg)
    return (pa.Table.from_pylist([judgment_row(r) for r in results], schema=JUDGMENTS_SCHEMA),
            pa.Table.from_pylist([reward_row(r, h) for r in results], schema=REWARDS_SCHEMA))


def check_rows(r: ScoreResult, scope_of: Mapping[str, str]) -> list[dict[str, Any]]:
    """``check_results`` rows of one scored response (response offsets)."""
    out = []
    for c in r.check_results:
        errs = [e.to_dict() for e in c.errors]
        out.append({"rollout_id": r.key, "query_id": r.query_id, "item_id": c.item_id,
                    "scope": scope_of.get(c.item_id), "status": c.status, "step": c.step,
                    "step_kind": c.step_kind, "reason": c.reason, "observed": c.observed,
                    "expected": c.expected, "n_errors": len(errs),
                    "error_offset": next((e.offset for e in c.errors if e.offset is not None), None),
                    "errors_json": json.dumps(errs, ensure_ascii=False), "duration_s": c.duration_s,
                    "clock": c.clock, "clock_reason": c.clock_reason, "check_version": CHECKS_VERSION})
    return out


def checks_run(check_results: pa.Table) -> int:
    """How many ``check_results`` rows are checks that ran (the others say why not: ``not run: ...``) (pure)."""
    return sum(not (r or "").startswith("not run:") for r in check_results.column("reason").to_pylist())


def task_from_row(row: dict[str, Any]) -> Task:
    """A Task from a queries-like row: ``query_id``, ``query`` (or ``text``), ``rubric`` (dict or JSON)."""
    rubric = row.get("rubric") if row.get("rubric") is not None else row.get("rubric_json")
    if isinstance(rubric, str):
        rubric = json.loads(rubric)
    query = row.get("query") if row.get("query") is not None else row.get("text")
    if rubric is None or query is None:
        raise ValueError(f"task row {row.get('query_id')!r} needs 'query' (or 'text') and 'rubric' (or 'rubric_json') "
                         f"columns; got {sorted(row)}")
    return Task(query_id=row["query_id"], query=query, rubric=CompactRubric.model_validate(rubric))


def scored_tables(results: list[ScoreResult], tasks: dict[str, Task], cfg: EnvConfig) -> ScoredTables:
    """The three stages' rows of these results (``tasks``: the rubric of each result's query)."""
    checks = [row for r in results for row in check_rows(r, tasks[r.query_id].rubric.scope_of())]
    return ScoredTables(*tables(results, cfg), pa.Table.from_pylist(checks, schema=CHECK_RESULTS_SCHEMA))


def score_rollouts_table(rollouts: pa.Table, tasks: dict[str, Task], *, provider: Provider | None,
                         cfg: EnvConfig, runtime: BrowserRuntime | None = None,
                         progress: Progress | None = None) -> ScoredTables:
    """Score a table of rollouts: every row gets a judgment and a reward row (reward may be null), and one
    ``check_results`` row per checked item; ``progress`` counts the apps as they are scored."""
    missing = [c for c in ROLLOUT_COLUMNS if c not in rollouts.column_names]
    if missing:
        raise ValueError(f"rollouts need columns {list(ROLLOUT_COLUMNS)}; missing {missing}: fix the producing stage")
    inputs = []
    for row in rollouts.select(list(ROLLOUT_COLUMNS)).to_pylist():
        task = tasks.get(row["query_id"])
        if task is None:
            raise ValueError(f"rollout {row['rollout_id']!r} names query {row['query_id']!r}, which has no task row; "
                             "score rollouts against the rl_queries they were sampled from")
        inputs.append(ScoreInput(row["rollout_id"], task, row["response"] or ""))
    results = score_batch(inputs, provider=provider, runtime=runtime, cfg=cfg, progress=progress)
    return scored_tables(results, tasks, cfg)
