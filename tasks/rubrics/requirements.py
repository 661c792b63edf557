"""Stage 2, requirement extraction (paper B.1): an explicit map with stable ids (R1..), requirement
type, functional role, supporting query evidence and a must_cover indicator.

Offline rule: one requirement per offline item of the expanded query (``tasks/rubrics/offline_items.py``:
what a user can see or do, read from the query's structure), at most ``rubrics.max_items``; its role is
the item's, its type the role's (``ROLES``), its evidence the item's verbatim span of the query; every one
is must_cover.
"""
from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from schemas.contracts.rubrics import REQUIREMENTS_SCHEMA
from schemas.llm.rubric_construction import RequirementMap
from tasks.rubrics import text as T
from tasks.rubrics.offline_items import ROLES, spec_items
from tasks.rubrics.pipeline import QueryContext, StageDef
from tasks.rubrics.prompt_spec import read_spec


def offline_requirements(v: dict[str, Any], max_items: int | None = None) -> dict[str, Any]:
    items = spec_items(read_spec(v["expanded_query"]), max_items)
    return {"requirements": [{"id": f"R{n + 1}", "requirement_type": ROLES[i.role][2], "functional_role": i.role,
                              "description": i.requirement, "query_evidence": i.evidence, "must_cover": True}
                             for n, i in enumerate(items)]}


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


def make_stage(max_items: int | None = None) -> StageDef:
    return StageDef(name="requirements", section="requirements", prompt="rubric_requirements",
                    schema=REQUIREMENTS_SCHEMA, output_model=RequirementMap,
                    offline_rule=lambda v: offline_requirements(v, max_items), variables=_variables, rows=_rows,
                    needs=("expansions",))
