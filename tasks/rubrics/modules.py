"""Stage 3, functional module grouping (paper B.1): user-observable modules (state systems,
interaction workflows, validation categories, output mechanisms), each with its covered
requirement ids and query evidence. Boundaries follow application behaviour, not DOM operations,
variable names or implementation steps.

Validation context ``requirement_ids``: a module covering an id the map does not have fails
validation, so it gets the one corrective retry.

Offline rule: requirements grouped by the module of their role (``offline_items.ROLES``), in order of
first appearance.
"""
from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from schemas.contracts.rubrics import MODULES_SCHEMA
from schemas.llm.rubric_construction import ModuleMap
from tasks.rubrics import text as T
from tasks.rubrics.offline_items import ROLES
from tasks.rubrics.pipeline import QueryContext, StageDef
from tasks.rubrics.requirements import requirements_json


def offline_modules(v: dict[str, Any]) -> dict[str, Any]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in json.loads(v["requirements"]):  # roles of one module (a behaviour and a key) share its group
        groups.setdefault(ROLES[r["functional_role"]][3:], []).append(r)
    return {"modules": [{"id": f"M{n + 1}", "name": name, "kind": kind,
                         "description": " ".join(m["description"] for m in members)[:400],
                         "covered_requirement_ids": [m["id"] for m in members],
                         "query_evidence": members[0]["query_evidence"]}
                        for n, ((name, kind), members) in enumerate(groups.items())]}


def _variables(ctx: QueryContext) -> dict[str, Any]:
    return {"expanded_query": ctx.expanded_query, "requirements": requirements_json(ctx)}


def _context(ctx: QueryContext) -> dict[str, Any]:
    return {"requirement_ids": {r["requirement_id"] for r in ctx.requirements}}


def _rows(ctx: QueryContext, out: BaseModel) -> list[dict[str, Any]]:
    assert isinstance(out, ModuleMap)
    return [{"position": i, "module_id": m.id, "name": m.name, "kind": m.kind, "description": m.description,
             "covered_requirement_ids": m.covered_requirement_ids, "query_evidence": m.query_evidence,
             "evidence_in_query": T.evidence_in(m.query_evidence, ctx.expanded_query)}
            for i, m in enumerate(out.modules)]


def modules_json(ctx: QueryContext) -> str:
    keys = ("module_id", "name", "kind", "description", "covered_requirement_ids", "query_evidence")
    return json.dumps([{("id" if k == "module_id" else k): m[k] for k in keys} for m in ctx.modules])


STAGE = StageDef(name="modules", section="modules", prompt="rubric_modules", schema=MODULES_SCHEMA,
                 output_model=ModuleMap, offline_rule=offline_modules, variables=_variables, rows=_rows,
                 validation_context=_context, needs=("expansions", "requirements"))
