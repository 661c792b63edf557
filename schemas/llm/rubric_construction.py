"""What each rubric-construction prompt asks the model for (paper B.1, F.1): pydantic models.

Ids a stage refers to must exist: pass ``validation_context`` with ``requirement_ids``,
``module_names`` or ``candidate_ids`` (sets). An unknown id is then a validation error, so the LLM
layer's single corrective retry covers it, and a second failure is recorded as missing (paper B.4).
"""
from __future__ import annotations

from typing import Any, ClassVar, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from schemas.llm.json_schema import IdFields, base_schema, with_known_ids
from schemas.rubric import (EffectField, ElementField, EvidenceKindField, RubricItem, RubricLevel, Scope,
                            TriggerField)

RequirementType = Literal["state", "interaction", "rule", "calculation", "output", "constraint"]
ModuleKind = Literal["state_system", "interaction_workflow", "validation_category", "output_mechanism"]
CandidateTarget = Literal["state", "rule", "calculation", "output", "interaction"]
FilterAction = Literal["keep", "merge", "split", "refine", "remove"]
REQUIREMENT_TYPES: tuple[str, ...] = ("state", "interaction", "rule", "calculation", "output", "constraint")
MODULE_KINDS: tuple[str, ...] = ("state_system", "interaction_workflow", "validation_category", "output_mechanism")
CANDIDATE_TARGETS: tuple[str, ...] = ("state", "rule", "calculation", "output", "interaction")
FILTER_ACTIONS: tuple[str, ...] = ("keep", "merge", "split", "refine", "remove")


class _Out(BaseModel):
    model_config = ConfigDict(extra="ignore")
    # The fields ``_check_known`` checks, so the schema sent to the model names only known ids.
    KNOWN_ID_FIELDS: ClassVar[IdFields] = {}

    @classmethod
    def llm_json_schema(cls, context: Mapping[str, Any]) -> dict[str, Any]:
        return with_known_ids(base_schema(cls), context, cls.KNOWN_ID_FIELDS)


def _check_known(kind: str, ids: list[str], info: ValidationInfo | None, key: str, where: str) -> None:
    known = (info.context or {}).get(key) if info is not None else None
    if known is None:
        return
    bad = [i for i in ids if i not in known]
    if bad:
        raise ValueError(f"{where} names unknown {kind} {bad}; use only {sorted(known)}")


def _unique(ids: list[str], what: str) -> None:
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"{what} ids {dup} are repeated; give every {what} its own id")


# -- stage 1: controlled expansion ---------------------------------------------------------------
class Underspecified(_Out):
    choice: str = Field(description="A choice the query leaves open")
    alternatives: list[str] = Field(default_factory=list, description="Materially different interpretations")
    high_risk: bool = Field(description="Would the interpretations change the reward substantially?")
    frozen_decision: str | None = Field(None, description="The minimal, testable default, for high-risk choices")


class CausalLink(_Out):
    action: str
    state_change: str
    computation: str = ""
    visible_result: str


class Expansion(_Out):
    core_objects: list[str]
    actions: list[str]
    states: list[str]
    outputs: list[str]
    hard_constraints: list[str] = Field(default_factory=list)
    underspecified: list[Underspecified] = Field(default_factory=list)
    causal_links: list[CausalLink] = Field(default_factory=list)
    expanded_query: str = Field(min_length=20, description="What the policy sees: the only specification")


# -- stage 2: requirement extraction -------------------------------------------------------------
class Requirement(_Out):
    id: str = Field(pattern=r"^R\d+$")
    requirement_type: RequirementType
    functional_role: str = Field(min_length=2)
    description: str = Field(min_length=3)
    query_evidence: str = Field(min_length=1)
    must_cover: bool


class RequirementMap(_Out):
    requirements: list[Requirement] = Field(min_length=1)

    @model_validator(mode="after")
    def _ids(self) -> "RequirementMap":
        _unique([r.id for r in self.requirements], "requirement")
        return self


# -- stage 3: functional module grouping ---------------------------------------------------------
class Module(_Out):
    id: str = Field(pattern=r"^M\d+$")
    name: str = Field(min_length=2)
    kind: ModuleKind
    description: str = ""
    covered_requirement_ids: list[str] = Field(min_length=1)
    query_evidence: str = Field(min_length=1)


class ModuleMap(_Out):
    KNOWN_ID_FIELDS: ClassVar[IdFields] = {("Module", "covered_requirement_ids"): "requirement_ids"}
    modules: list[Module] = Field(min_length=1)

    @model_validator(mode="after")
    def _ids(self, info: ValidationInfo) -> "ModuleMap":
        _unique([m.id for m in self.modules], "module")
        for m in self.modules:
            _check_known("requirement ids", m.covered_requirement_ids, info, "requirement_ids", f"module {m.id}")
        return self


# -- stage 4: atomic decomposition ---------------------------------------------------------------
class Candidate(_Out):
    id: str = Field(pattern=r"^C\d+$")
    scope: Scope
    requirement: str = Field(min_length=3)
    verification: str = Field(min_length=3)
    source_module: str
    covered_requirement_ids: list[str] = Field(min_length=1)
    query_evidence: str = Field(min_length=1)
    rubric_level: RubricLevel
    target: CandidateTarget
    evidence_kind: EvidenceKindField = None
    element: ElementField = None
    trigger: TriggerField = None
    effect: EffectField = None


class CandidateSet(_Out):
    KNOWN_ID_FIELDS: ClassVar[IdFields] = {("Candidate", "covered_requirement_ids"): "requirement_ids",
                                           ("Candidate", "source_module"): "module_names"}
    candidates: list[Candidate] = Field(min_length=1)

    @model_validator(mode="after")
    def _ids(self, info: ValidationInfo) -> "CandidateSet":
        _unique([c.id for c in self.candidates], "candidate")
        for c in self.candidates:
            _check_known("requirement ids", c.covered_requirement_ids, info, "requirement_ids", f"candidate {c.id}")
            _check_known("module", [c.source_module], info, "module_names", f"candidate {c.id}")
        return self


# -- stage 5: final filtering --------------------------------------------------------------------
class FinalItem(RubricItem):
    """A final item as the model writes it; ``id`` is re-assigned (I1.., D1..) by the program."""

    model_config = ConfigDict(extra="ignore")
    from_candidates: list[str] = Field(default_factory=list, description="Candidate ids merged or refined into it")


class Decision(_Out):
    action: FilterAction
    candidate_ids: list[str] = Field(min_length=1)
    reason: str


class UnsupportedItem(_Out):
    candidate_id: str
    reason: str


class FinalReference(_Out):
    KNOWN_ID_FIELDS: ClassVar[IdFields] = {("FinalItem", "covered_requirement_ids"): "requirement_ids",
                                           ("FinalItem", "from_candidates"): "candidate_ids",
                                           ("", "uncovered_requirement_ids"): "requirement_ids",
                                           ("Decision", "candidate_ids"): "candidate_ids",
                                           ("UnsupportedItem", "candidate_id"): "candidate_ids"}
    initial_state: list[FinalItem]
    dynamic: list[FinalItem]
    decisions: list[Decision] = Field(default_factory=list)
    unsupported: list[UnsupportedItem] = Field(default_factory=list)
    uncovered_requirement_ids: list[str] = Field(default_factory=list)
    coverage_report: str = ""
    faithfulness_report: str = ""

    @model_validator(mode="after")
    def _ids(self, info: ValidationInfo) -> "FinalReference":
        items = [*self.initial_state, *self.dynamic]
        _unique([i.id for i in items], "final item")
        for i in items:
            _check_known("requirement ids", i.covered_requirement_ids, info, "requirement_ids", f"item {i.id}")
            _check_known("candidate ids", i.from_candidates, info, "candidate_ids", f"item {i.id}")
        _check_known("requirement ids", self.uncovered_requirement_ids, info, "requirement_ids",
                     "uncovered_requirement_ids")
        for d in self.decisions:
            _check_known("candidate ids", d.candidate_ids, info, "candidate_ids", f"decision {d.action}")
        _check_known("candidate ids", [u.candidate_id for u in self.unsupported], info, "candidate_ids", "unsupported")
        return self
