"""Stage 6 of build-rubrics: an executable check for each dynamic item, and for the
initial-state items where one fits, written from the expanded query and the final reference (never
from an implementation), in the ``rubric_checks`` stage (one row per final item).

The model proposes; the program decides:
- each proposed check is validated on its own against the check language (``schemas/checks.py``); one
  that does not parse is dropped, its problem kept in ``check_problem`` and reported in the artifact;
- each kept check is dry-run on an empty page in the sandboxed browser: there every target is
  missing, so a sound check is *inconclusive*; one that passes or fails there verifies nothing (or
  cannot run) and is dropped too;
- the kept checks go to ``rubric_items.check`` and travel with the reference to the environment.

Offline rule: a check for each offline item where one can observe it soundly, built from what the
expanded query states about the element the item names (``checks_offline``), never from the teacher:
a correct app written by anyone passes it.
"""
from __future__ import annotations

import json
from concurrent.futures import as_completed
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pydantic import BaseModel

from schemas.checks import CheckSet, parse_check
from schemas.config.checks import ChecksConfig
from schemas.config.env import RuntimeConfig
from schemas.contracts.rubrics import CHECKS_SCHEMA
from schemas.rubric import known_structure
from tasks.progress import Progress
from tasks.rubrics.checks_offline import offline_checks
from tasks.rubrics.pipeline import OK, PartCounts, PriorRows, QueryContext, StageDef, build_part, read_part
from tasks.stages.store import StageStore

if TYPE_CHECKING:
    from tasks.env.evidence import RuntimeEvidence
    from tasks.env.records import CheckResult

EMPTY_PAGE = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title></title></head><body></body></html>"
DRY_RUN_BATCH = 8  # checks per empty page: pages of one batch run in turn, batches in parallel


def reference_items(ref: dict[str, Any]) -> list[dict[str, Any]]:
    """The final items in rubric order with their scope (the prompt's and the rows' order)."""
    return [{"id": i["id"], "scope": scope, "requirement": i["requirement"], "verification": i["verification"],
             "level": i["rubric_level"], **known_structure(i)}
            for scope in ("initial_state", "dynamic") for i in ref.get(scope, [])]


def _variables(ctx: QueryContext) -> dict[str, Any]:
    return {"expanded_query": ctx.expanded_query,
            "items": json.dumps(reference_items(ctx.reference), ensure_ascii=False, indent=1)}


def _context(ctx: QueryContext) -> dict[str, Any]:
    return {"valid_ids": {i["id"] for i in reference_items(ctx.reference)}}


def check_rows(items: list[dict[str, Any]], proposed: list[dict[str, Any]],
               uncheckable: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One row per item: its proposed check validated (kept / dropped with the problem / none, with the reason
    no check decides it where one was given) (pure)."""
    why = {u.get("item_id"): str(u.get("reason"))[:1000] for u in uncheckable or [] if isinstance(u, dict)}
    by_item: dict[str, Any] = {}
    extra: list[str] = []
    for p in proposed:
        iid = p.get("item_id") if isinstance(p, dict) else None
        if iid in by_item or iid not in {i["id"] for i in items}:
            extra.append(str(iid))
            continue
        by_item[iid] = p.get("check")
    rows = []
    for n, it in enumerate(items):
        row = {"position": n, "item_id": it["id"], "scope": it["scope"], "check_json": None, "check_status": "none",
               "check_problem": why.get(it["id"]), "dry_run": None}
        if it["id"] in by_item:
            try:
                check = parse_check(by_item[it["id"]])
                row.update(check_json=check.model_dump_json(exclude_none=True), check_status="kept")
            except ValueError as e:
                row.update(check_json=json.dumps(by_item[it["id"]])[:4000], check_status="dropped",
                           check_problem=str(e)[:1000])
        rows.append(row)
    return rows


def _rows(ctx: QueryContext, out: BaseModel) -> list[dict[str, Any]]:
    assert isinstance(out, CheckSet)
    return check_rows(reference_items(ctx.reference), list(out.checks), list(out.uncheckable))


STAGE = StageDef(name="rubric_checks", section="checks", prompt="rubric_checks", schema=CHECKS_SCHEMA,
                 output_model=CheckSet, offline_rule=offline_checks, variables=_variables, rows=_rows,
                 validation_context=_context, needs=("rubric_references",))


def dry_run_verdict(result: CheckResult) -> tuple[str, str | None]:
    """(dry_run, problem) from a check's result on the empty page: only 'found nothing' keeps it (pure)."""
    if result.status == "inconclusive" and result.reason.startswith("locator found nothing"):
        return "inconclusive", None
    if result.status == "passed":
        return result.status, "passes on an empty page, so it verifies nothing"
    if result.status == "failed":
        return result.status, f"fails on an empty page ({result.reason[:200]}), so it does not depend on the app"
    return "error", f"cannot run on an empty page: {result.reason[:300]}"


def dry_run(table: pa.Table, runtime_cfg: RuntimeConfig, step_timeout_ms: int) -> pa.Table:
    """Dry-run the kept, not yet dry-run checks of ``table`` on an empty page; drop the unsound ones. A check's
    verdict on the empty page is its text's alone, so each distinct check runs once and its rows share the verdict
    (the offline rules write the same check for many queries: 189 distinct of 1,007 in `make run`)."""
    from tasks.env.checks import CheckPlan
    from tasks.env.runtime import shared_runtime

    rows = table.to_pylist()
    todo = [i for i, r in enumerate(rows) if r["check_status"] == "kept" and r["dry_run"] is None]
    if not todo:
        return table
    try:
        runtime = shared_runtime(runtime_cfg)
    except ValueError as e:  # no browser on this machine: keep the checks, say they were not dry-run
        for i in todo:
            rows[i]["dry_run"] = "skipped"
            rows[i]["check_problem"] = f"not dry-run: {e}"[:1000]
        return pa.Table.from_pylist(rows, schema=table.schema)
    same: dict[str, list[int]] = {}  # check text -> its rows
    for i in todo:
        same.setdefault(rows[i]["check_json"], []).append(i)
    distinct = [group[0] for group in same.values()]
    cfg = ChecksConfig(step_timeout_ms=step_timeout_ms, settle_ms=0)
    batches = [distinct[k:k + DRY_RUN_BATCH] for k in range(0, len(distinct), DRY_RUN_BATCH)]
    plans = [CheckPlan([(str(i), parse_check(rows[i]["check_json"])) for i in b], cfg) for b in batches]
    pages = dict(zip(runtime.check_each([EMPTY_PAGE] * len(batches), checks=plans), batches))
    with Progress("rubric_checks dry run", len(distinct), unit="checks", verb="dry-run") as progress:
        for page in as_completed(pages):
            for i, (verdict, problem) in _dry_run_verdicts(pages[page], page.result()).items():
                for j in same[rows[i]["check_json"]]:
                    rows[j]["dry_run"] = verdict
                    if problem:
                        rows[j].update(check_status="dropped", check_problem=problem)
            progress.update(len(pages[page]))
    return pa.Table.from_pylist(rows, schema=table.schema)


def _dry_run_verdicts(batch: list[int], ev: RuntimeEvidence) -> dict[int, tuple[str, str | None]]:
    """Row -> (dry_run, problem) of each check of ``batch``, by its result on the empty page (``ev``)."""
    results = {r.item_id: r for r in ev.check_results}
    missing = ("error", f"no dry-run result (page {ev.status})")
    return {i: dry_run_verdict(res) if (res := results.get(str(i))) else missing for i in batch}


def load_contexts(store: StageStore, key: str, query_ids: list[str]) -> list[QueryContext]:
    """Contexts from the ``rubric_references`` part of the same key: the expanded query and reference."""
    refs = {r["query_id"]: r for r in read_part(store, "rubric_references", key, query_ids).to_pylist()}
    out = []
    for q in query_ids:
        r = refs.get(q)
        if r is None:
            out.append(QueryContext(q, "", "absent", status="missing", reader=STAGE.name, needs=STAGE.needs))
            continue
        ok = r["status"] == OK
        out.append(QueryContext(q, "", r["input_hash"], status=r["status"], expanded_query=r["expanded_query"] or "",
                                reference=json.loads(r["reference_json"]) if ok else {}, reader=STAGE.name,
                                needs=STAGE.needs))
    return out


def checks_part(store: StageStore, key: str, query_ids: list[str], provider: Any, settings: dict[str, Any],
                prompt_dir: str | None, prior: PriorRows | None, concurrency: int,
                runtime_cfg: RuntimeConfig | None, step_timeout_ms: int) -> tuple[pa.Table, PartCounts]:
    """One part of ``rubric_checks``: the model's (or rules') checks, validated, then dry-run."""
    table, counts = build_part(STAGE, load_contexts(store, key, query_ids), provider, settings, prompt_dir, prior,
                               concurrency)
    if runtime_cfg is not None:
        table = dry_run(table, runtime_cfg, step_timeout_ms)
    return table, counts


def dropped_markdown(table: pa.Table, limit: int = 20) -> str:
    """The artifact's report of dropped checks (query, item, problem)."""
    rows = [r for r in table.select(["query_id", "item_id", "check_status", "check_problem"]).to_pylist()
            if r["check_status"] == "dropped"]
    if not rows:
        return "\n## Dropped checks\n\nNone: every written check parsed and passed the empty-page dry run.\n"
    out = ["\n## Dropped checks\n", f"{len(rows)} checks dropped (first {min(limit, len(rows))} below; all in "
           "`rubric_checks` where check_status = 'dropped').\n", "| query | item | problem |", "|---|---|---|"]
    out += [f"| {r['query_id']} | {r['item_id']} | {(r['check_problem'] or '').replace('|', '/')[:200]} |"
            for r in rows[:limit]]
    return "\n".join(out) + "\n"
