"""Stage 5, final filtering (paper B.1): merge duplicate or overlapping candidates, refine overly
broad ones, remove unsupported ones; the final reference (seven fields per item, scope by
membership) with coverage and faithfulness reports, uncovered requirements, unsupported items and
the filtering decisions.

The model proposes; the program decides (``finalize``, pure):
- **the expanded query is the only specification**: an item whose query_evidence does not occur in
  it (normalised match, ``text.evidence_in``) is removed and counted as unsupported, with the
  reason "only in the expansion trace" when a trace decision is all that supports it;
- exact duplicates (same normalised requirement, same scope) left by the model are merged;
- ids are re-assigned I1.. (initial_state) and D1.. (dynamic) in the model's order, so the same
  inputs always give the same ids;
- coverage is recomputed from the kept items: must_cover requirements covered by no item are
  listed as uncovered (the model's own list is not trusted).

Offline rule: keep every candidate whose evidence is in the expanded query, merge exact duplicates.
"""
from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from schemas.contracts.benchmark import GIVEN_MODULE
from schemas.contracts.rubrics import REFERENCES_SCHEMA
from schemas.llm.rubric_construction import FinalItem, FinalReference
from schemas.rubric import Reference, RubricItem, compact, judge_dicts, structure_of
from tasks.rubrics import text as T
from tasks.rubrics.decomposition import candidates_json
from tasks.rubrics.pipeline import QueryContext, StageDef
from tasks.rubrics.requirements import requirements_json

SCOPE_PREFIX = {"initial_state": "I", "dynamic": "D"}
NOT_IN_QUERY = "query_evidence does not occur in the expanded query"
_NO_CHECK = {"initial_state": {"__all__": {"check"}}, "dynamic": {"__all__": {"check"}}}  # checks come later
TRACE_ONLY = "supported only by a decision in the expansion trace, not by the expanded query"


def offline_filtering(v: dict[str, Any]) -> dict[str, Any]:
    expanded = v["expanded_query"]
    reqs, cands = json.loads(v["requirements"]), json.loads(v["candidates"])
    out: dict[str, list[dict[str, Any]]] = {"initial_state": [], "dynamic": []}
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    decisions, unsupported = [], []
    for c in cands:
        if not T.evidence_in(c["query_evidence"], expanded):
            unsupported.append({"candidate_id": c["id"], "reason": NOT_IN_QUERY})
            decisions.append({"action": "remove", "candidate_ids": [c["id"]], "reason": NOT_IN_QUERY})
            continue
        key = (c["scope"], T.normalise(c["requirement"]))
        if key in seen:
            first = seen[key]
            first["covered_requirement_ids"] += [r for r in c["covered_requirement_ids"]
                                                 if r not in first["covered_requirement_ids"]]
            first["from_candidates"].append(c["id"])
            decisions.append({"action": "merge", "candidate_ids": first["from_candidates"][:1] + [c["id"]],
                              "reason": "same requirement in the same scope"})
            continue
        item = {"id": f"{SCOPE_PREFIX[c['scope']]}{len(out[c['scope']]) + 1}", "requirement": c["requirement"],
                "verification": c["verification"], "source_module": c["source_module"],
                "covered_requirement_ids": list(c["covered_requirement_ids"]), "query_evidence": c["query_evidence"],
                "rubric_level": c["rubric_level"], **structure_of(c), "from_candidates": [c["id"]]}
        seen[key] = item
        out[c["scope"]].append(item)
    covered = {r for items in out.values() for i in items for r in i["covered_requirement_ids"]}
    uncovered = [r["id"] for r in reqs if r["id"] not in covered]
    return {**out, "decisions": decisions, "unsupported": unsupported, "uncovered_requirement_ids": uncovered,
            "coverage_report": f"{len(reqs) - len(uncovered)} of {len(reqs)} requirements covered by rules.",
            "faithfulness_report": f"{len(unsupported)} candidates without evidence in the expanded query removed."}


def trace_text(trace: dict[str, Any]) -> str:
    """Every string of the expansion trace, for telling 'only in the trace' apart."""
    parts: list[str] = []

    def walk(x: Any) -> None:
        if isinstance(x, str):
            parts.append(x)
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, (list, tuple)):
            for v in x:
                walk(v)

    walk(trace)
    return " . ".join(parts)


def _decision(action: str, ids: list[str], reason: str, made_by: str, result: list[str] | None = None) -> dict:
    return {"action": action, "candidate_ids": ids, "result_ids": result or [], "reason": reason, "made_by": made_by}


def finalize(ctx: QueryContext, ans: FinalReference, min_chars: int = 3) -> dict[str, Any]:
    """The published reference row of one query from the model's answer (see module docstring)."""
    cand = {c["candidate_id"]: c for c in ctx.candidates}
    trace = trace_text(ctx.trace)
    unsupported = [{"ids": [u.candidate_id], "requirement": cand.get(u.candidate_id, {}).get("requirement"),
                    "query_evidence": cand.get(u.candidate_id, {}).get("query_evidence"), "reason": u.reason,
                    "found_by": "model"} for u in ans.unsupported]
    decisions = [_decision(d.action, d.candidate_ids, d.reason, "model") for d in ans.decisions]
    kept: dict[str, list[FinalItem]] = {"initial_state": [], "dynamic": []}
    for scope, items in (("initial_state", ans.initial_state), ("dynamic", ans.dynamic)):
        seen: dict[str, FinalItem] = {}
        for it in items:
            src = it.from_candidates or [it.id]
            if not T.evidence_in(it.query_evidence, ctx.expanded_query, min_chars):
                reason = TRACE_ONLY if T.evidence_in(it.query_evidence, trace, min_chars) else NOT_IN_QUERY
                unsupported.append({"ids": src, "requirement": it.requirement, "query_evidence": it.query_evidence,
                                    "reason": reason, "found_by": "evidence_check"})
                decisions.append(_decision("remove", src, reason, "program"))
                continue
            key = T.normalise(it.requirement)
            if key in seen:
                first = seen[key]
                first.covered_requirement_ids += [r for r in it.covered_requirement_ids
                                                  if r not in first.covered_requirement_ids]
                first.from_candidates += src
                decisions.append(_decision("merge", src, "exact duplicate requirement in the same scope", "program"))
                continue
            seen[key] = it.model_copy(deep=True)
            kept[scope].append(seen[key])
    ref = Reference(**{scope: [RubricItem(**{**i.model_dump(exclude={"from_candidates"}),
                                             "id": f"{SCOPE_PREFIX[scope]}{n + 1}"}) for n, i in enumerate(items)]
                       for scope, items in kept.items()})
    ref.dynamic += given_rubric_items(ctx.given, start=len(ref.dynamic))
    new_ids: dict[str, list[str]] = {}
    for scope, items in kept.items():
        for i, r in zip(items, getattr(ref, scope)):
            for c in i.from_candidates or [i.id]:
                new_ids.setdefault(c, []).append(r.id)
    for d in decisions:
        if d["action"] != "remove" and not d["result_ids"]:
            d["result_ids"] = [r for c in d["candidate_ids"] for r in new_ids.get(c, [])]
            d["result_ids"] = sorted(set(d["result_ids"]), key=lambda r: (r[0] != "I", int(r[1:] or 0)))
    return _reference_row(ctx, ans, ref, unsupported, decisions)


def given_rubric_items(given: list[dict[str, Any]], start: int) -> list[RubricItem]:
    """A benchmark's checklist items as dynamic rubric items after the derived ones, marked by their module.

    They are kept whatever the model said: the benchmark, not the expanded query, is their evidence.
    """
    return [RubricItem(id=f"{SCOPE_PREFIX['dynamic']}{start + k + 1}", requirement=g["requirement"],
                       verification=g.get("verification") or g["requirement"], source_module=GIVEN_MODULE,
                       covered_requirement_ids=[], query_evidence=g["requirement"], rubric_level="correct_rule")
            for k, g in enumerate(given)]


def _reference_row(ctx: QueryContext, ans: FinalReference, ref: Reference, unsupported: list[dict[str, Any]],
                   decisions: list[dict[str, Any]]) -> dict[str, Any]:
    req_ids = [r["requirement_id"] for r in ctx.requirements]
    must = [r["requirement_id"] for r in ctx.requirements if r["must_cover"]]
    covered = {c for _s, i in ref.items() for c in i.covered_requirement_ids}
    uncovered = [r for r in req_ids if r not in covered]
    unc_must = [r for r in must if r not in covered]
    n_items = len(ref.initial_state) + len(ref.dynamic)
    removed = sum(u["found_by"] == "evidence_check" for u in unsupported)
    trace_only = sum(u["reason"] == TRACE_ONLY for u in unsupported)
    merges = sum(d["action"] == "merge" for d in decisions)
    coverage = (f"{len(req_ids) - len(uncovered)}/{len(req_ids)} requirements covered, "
                f"{len(must) - len(unc_must)}/{len(must)} must_cover; uncovered must_cover: {unc_must or 'none'}")
    faith = (f"{n_items} items kept; {removed} removed by the evidence check ({trace_only} supported only by the "
             f"trace); {len(unsupported) - removed} reported unsupported by the model; {merges} merges")
    cmp_ = compact(ref)
    return {"expanded_query": ctx.expanded_query, "reference_json": ref.model_dump_json(),
            # the paper's compact export (id, requirement, level) and what decides an item where it is known
            "compact_json": cmp_.model_dump_json(exclude=_NO_CHECK, exclude_none=True),
            "judge_payload_json": json.dumps(judge_dicts(cmp_)),
            "n_initial": len(ref.initial_state), "n_dynamic": len(ref.dynamic), "requirement_ids": req_ids,
            "must_cover_ids": must, "covered_requirement_ids": [r for r in req_ids if r in covered],
            "uncovered_requirement_ids": uncovered, "uncovered_must_cover_ids": unc_must,
            "unsupported_items": unsupported, "filtering_decisions": decisions,
            "coverage_report": coverage + (f"\nmodel: {ans.coverage_report}" if ans.coverage_report else ""),
            "faithfulness_report": faith + (f"\nmodel: {ans.faithfulness_report}" if ans.faithfulness_report else ""),
            **({} if n_items else {"status": "no_items", "error": "no item is supported by the expanded query"})}


def item_rows(ref_row: dict[str, Any]) -> list[dict[str, Any]]:
    """``rubric_items`` rows (one per final item) of one ``rubric_references`` row."""
    if ref_row["status"] != "ok":
        return []
    ref = Reference.model_validate_json(ref_row["reference_json"])
    meta = {k: ref_row[k] for k in ("query_id", "input_hash", "provider", "model", "prompt_version")}
    return [{**meta, "scope": scope, "position": n, **item.model_dump(), "given": item.source_module == GIVEN_MODULE}
            for n, (scope, item) in enumerate(ref.items())]


def _variables(ctx: QueryContext) -> dict[str, Any]:
    return {"expanded_query": ctx.expanded_query, "requirements": requirements_json(ctx),
            "candidates": candidates_json(ctx)}


def _context(ctx: QueryContext) -> dict[str, Any]:
    return {"requirement_ids": {r["requirement_id"] for r in ctx.requirements},
            "candidate_ids": {c["candidate_id"] for c in ctx.candidates}}


def make_stage(min_chars: int = 3) -> StageDef:
    def rows(ctx: QueryContext, out: BaseModel) -> list[dict[str, Any]]:
        assert isinstance(out, FinalReference)
        return [finalize(ctx, out, min_chars)]

    return StageDef(name="rubric_references", section="filtering", prompt="rubric_filtering",
                    schema=REFERENCES_SCHEMA, output_model=FinalReference, offline_rule=offline_filtering,
                    variables=_variables, rows=rows, validation_context=_context,
                    needs=("expansions", "requirements", "rubric_candidates"))
