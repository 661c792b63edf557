"""Stage 2, requirement extraction (paper B.1): an explicit map with stable ids (R1..), requirement
type, functional role, supporting query evidence and a must_cover indicator.

Offline rule: one requirement per clause of the expanded query (sentences split at top-level
semicolons); type and role by keyword tables; the clause itself is the evidence; a clause marked
optional ("if possible", "may") is not must_cover.
"""
from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from schemas.rubric_outputs import RequirementMap
from schemas.rubrics import REQUIREMENTS_SCHEMA
from tasks.rubrics import text as T
from tasks.rubrics.pipeline import QueryContext, StageDef


def offline_requirements(v: dict[str, Any]) -> dict[str, Any]:
    reqs = []
    for c in T.clauses_of(v["expanded_query"]):
        role, rtype = T.classify(c.text)
        reqs.append({"id": f"R{len(reqs) + 1}", "requirement_type": rtype, "functional_role": role,
                     "description": T.sentence(c.text), "query_evidence": c.evidence,
                     "must_cover": not T.is_optional(c.text)})
    if not reqs:  # a query with no checkable clause: the whole request is the one requirement
        q = v["expanded_query"].strip()
        reqs.append({"id": "R1", "requirement_type": "output", "functional_role": "app",
                     "description": T.sentence(q[:200]), "query_evidence": q[:200], "must_cover": True})
    return {"requirements": reqs}


def _variables(ctx: QueryContext) -> dict[str, Any]:
    return {"expanded_query": ctx.expanded_query}


def _rows(ctx: QueryContext, out: BaseModel) -> list[dict[str, Any]]:
    assert isinstance(out, RequirementMap)
    return [{"position": i, "requirement_id": r.id, "requirement_type": r.requirement_type,
             "functional_role": r.functional_role, "description": r.description, "query_evidence": r.query_evidence,
             "must_cover": r.must_cover, "evidence_in_query": T.evidence_in(r.query_evidence, ctx.expanded_query)}
            for i, r in enumerate(out.requirements)]


def requirements_json(ctx: QueryContext) -> str:
    """The requirement map as later prompts show it."""
    keys = ("requirement_id", "requirement_type", "functional_role", "description", "query_evidence", "must_cover")
    return json.dumps([{("id" if k == "requirement_id" else k): r[k] for k in keys} for r in ctx.requirements],
                      indent=1)


STAGE = StageDef(name="requirements", section="requirements", prompt="rubric_requirements",
                 schema=REQUIREMENTS_SCHEMA, output_model=RequirementMap, offline_rule=offline_requirements,
                 variables=_variables, rows=_rows)
