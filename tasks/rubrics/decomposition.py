"""Stage 4, atomic decomposition (paper B.1): candidate items that target independently failing
states, rules, calculations, outputs or interactions, each with a verification description;
scope ``initial_state`` (page load, no action) or ``dynamic`` (after interaction). Ambiguity left
in the expanded query is preserved, not resolved by new items.

Validation context: covered ids must be requirement ids, ``source_module`` a module name.

Offline rule: one candidate per requirement, which is one offline item already
(``tasks/rubrics/offline_items.py``): its scope, level and target from the item's role (``ROLES``), its
verification and what decides it (evidence kind, element, trigger, effect) the item's.
"""
from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from schemas.contracts.rubrics import RUBRIC_CANDIDATES_SCHEMA
from schemas.llm.rubric_construction import CandidateSet
from schemas.rubric import known_structure, structure_of
from tasks.rubrics import text as T
from tasks.rubrics.modules import modules_json
from tasks.rubrics.offline_items import ROLES, items_by_requirement
from tasks.rubrics.pipeline import QueryContext, StageDef
from tasks.rubrics.requirements import requirements_json

def offline_candidates(v: dict[str, Any]) -> dict[str, Any]:
    reqs, modules = json.loads(v["requirements"]), json.loads(v["modules"])
    module_of = {rid: m["name"] for m in modules for rid in m["covered_requirement_ids"]}
    spec_of = items_by_requirement(v["expanded_query"])
    cands = []
    for r in reqs:
        scope, level, target = ROLES[r["functional_role"]][:3]
        item = spec_of[T.normalise(r["description"])]
        cands.append({"id": f"C{len(cands) + 1}", "scope": scope, "rubric_level": level, "target": target,
                      "requirement": r["description"], "source_module": module_of.get(r["id"], modules[0]["name"]),
                      "verification": item.verification, "covered_requirement_ids": [r["id"]],
                      "query_evidence": r["query_evidence"], **item.structure()})
    return {"candidates": cands}


def _variables(ctx: QueryContext) -> dict[str, Any]:
    return {"expanded_query": ctx.expanded_query, "requirements": requirements_json(ctx),
            "modules": modules_json(ctx)}


def _context(ctx: QueryContext) -> dict[str, Any]:
    return {"requirement_ids": {r["requirement_id"] for r in ctx.requirements},
            "module_names": {m["name"] for m in ctx.modules} | {m["module_id"] for m in ctx.modules}}


def _rows(ctx: QueryContext, out: BaseModel) -> list[dict[str, Any]]:
    assert isinstance(out, CandidateSet)
    return [{"position": i, "candidate_id": c.id, "scope": c.scope, "requirement": c.requirement,
             "verification": c.verification, "source_module": c.source_module,
             "covered_requirement_ids": c.covered_requirement_ids, "query_evidence": c.query_evidence,
             "rubric_level": c.rubric_level, "target": c.target, **structure_of(c),
             "evidence_in_query": T.evidence_in(c.query_evidence, ctx.expanded_query)}
            for i, c in enumerate(out.candidates)]


def candidates_json(ctx: QueryContext) -> str:
    keys = ("candidate_id", "scope", "requirement", "verification", "source_module", "covered_requirement_ids",
            "query_evidence", "rubric_level", "target")
    # what decides an item (``schemas.rubric.STRUCTURE``) only where it is known: a model's candidates without
    # it are shown as before
    return json.dumps([{**{("id" if k == "candidate_id" else k): c[k] for k in keys},
                        **known_structure(c)} for c in ctx.candidates])


STAGE = StageDef(name="rubric_candidates", section="decomposition", prompt="rubric_decomposition",
                 schema=RUBRIC_CANDIDATES_SCHEMA, output_model=CandidateSet, offline_rule=offline_candidates,
                 variables=_variables, rows=_rows, validation_context=_context,
                 needs=("expansions", "requirements", "modules"))
