"""Stage 4, atomic decomposition (paper B.1): candidate items that target independently failing
states, rules, calculations, outputs or interactions, each with a verification description;
scope ``initial_state`` (page load, no action) or ``dynamic`` (after interaction). Ambiguity left
in the expanded query is preserved, not resolved by new items.

Validation context: covered ids must be requirement ids, ``source_module`` a module name.

Offline rule, per must_cover requirement (optional ones stay uncovered, and are reported so):
display/app/constraint -> an initial_state item; interaction -> a dynamic core_module item, plus a
dynamic rendering_effect item when the clause names a visible result; rules, timing and
calculations -> dynamic correct_rule; feedback -> dynamic rendering_effect; modes/options/controls
-> also an initial_state item that they are offered on load.
"""
from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel

from schemas.rubric_outputs import CandidateSet
from schemas.rubrics import CANDIDATES_SCHEMA
from tasks.rubrics import text as T
from tasks.rubrics.modules import modules_json
from tasks.rubrics.pipeline import QueryContext, StageDef
from tasks.rubrics.requirements import requirements_json

_VISIBLE = re.compile(r"\b(show\w*|display\w*|visible|update\w*|feedback|highlight\w*|reflect\w*|shown|chart|"
                      r"list|preview)\b", re.I)


def _cand(scope: str, level: str, target: str, requirement: str, verification: str, module: str,
          r: dict[str, Any]) -> dict[str, Any]:
    return {"scope": scope, "rubric_level": level, "target": target, "requirement": requirement,
            "verification": verification, "source_module": module, "covered_requirement_ids": [r["id"]],
            "query_evidence": r["query_evidence"]}


def candidates_for(r: dict[str, Any], module: str) -> list[dict[str, Any]]:
    """The offline candidates of one requirement (see module docstring)."""
    text, role, rtype = r["description"].rstrip("."), r["functional_role"], r["requirement_type"]
    low = T.lower_first(text)
    out: list[dict[str, Any]] = []
    if role == "app":
        out.append(_cand("initial_state", "core_module", "output", f"The page loads as the requested app: {low}.",
                         "Load the page without any interaction and check that the main interface of the "
                         "requested application is present and usable.", module, r))
    elif rtype in ("output", "constraint") and role != "feedback" and not T.is_conditional(text):
        level = "core_module" if rtype == "constraint" or role == "display" else "rendering_effect"
        out.append(_cand("initial_state", level, "output" if rtype == "output" else "state", T.sentence(text),
                         f"Load the page without any interaction and check that {low}.", module, r))
    elif role == "feedback" or rtype == "output":
        out.append(_cand("dynamic", "rendering_effect", "output", T.sentence(text),
                         f"Trigger the interaction that produces this result and inspect the display: {low}.",
                         module, r))
    elif rtype == "interaction":
        out.append(_cand("dynamic", "core_module", "interaction", T.sentence(text),
                         f"Perform the action and check that the application responds as required: {low}.",
                         module, r))
        if _VISIBLE.search(text):
            out.append(_cand("dynamic", "rendering_effect", "output",
                             f"The result of this interaction is visible on screen: {low}.",
                             f"After performing the action, check that the display shows the result: {low}.",
                             module, r))
    else:
        target = {"calculation": "calculation", "state": "state"}.get(rtype, "rule")
        out.append(_cand("dynamic", "correct_rule", target, T.sentence(text),
                         f"Drive the app into the situations the requirement names and check each outcome: {low}.",
                         module, r))
    if rtype in ("state", "rule") and T.mentions_availability(text) and role != "app":
        out.append(_cand("initial_state", "core_module", "state", f"The choices this requires are offered on load: "
                         f"{low}.", f"Load the page and check that the controls needed for this are present: {low}.",
                         module, r))
    return out


def offline_candidates(v: dict[str, Any]) -> dict[str, Any]:
    reqs, modules = json.loads(v["requirements"]), json.loads(v["modules"])
    module_of = {rid: m["name"] for m in modules for rid in m["covered_requirement_ids"]}
    pick = lambda keep: [c for r in reqs if keep(r) for c in candidates_for(r, module_of.get(r["id"], modules[0]["name"]))]  # noqa: E731
    cands = pick(lambda r: r["must_cover"]) or pick(lambda r: True)  # nothing must_cover: cover what there is
    return {"candidates": [{"id": f"C{i + 1}", **c} for i, c in enumerate(cands)]}


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
             "rubric_level": c.rubric_level, "target": c.target,
             "evidence_in_query": T.evidence_in(c.query_evidence, ctx.expanded_query)}
            for i, c in enumerate(out.candidates)]


def candidates_json(ctx: QueryContext) -> str:
    keys = ("candidate_id", "scope", "requirement", "verification", "source_module", "covered_requirement_ids",
            "query_evidence", "rubric_level", "target")
    return json.dumps([{("id" if k == "candidate_id" else k): c[k] for k in keys} for c in ctx.candidates])


STAGE = StageDef(name="rubric_candidates", section="decomposition", prompt="rubric_decomposition",
                 schema=CANDIDATES_SCHEMA, output_model=CandidateSet, offline_rule=offline_candidates,
                 variables=_variables, rows=_rows, validation_context=_context)
