"""The rubric reference (paper B.1) and its two exports.

The enriched final reference keeps seven fields per item; scope is not a field but membership in
``initial_state`` or ``dynamic``. The compact export keeps id, requirement and level; the
judge-facing payload makes scope explicit and exposes the functional level as ``level``.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.checks import Check

RubricLevel = Literal["core_module", "correct_rule", "rendering_effect"]
Scope = Literal["initial_state", "dynamic"]
RUBRIC_LEVELS: tuple[str, ...] = ("core_module", "correct_rule", "rendering_effect")
SCOPES: tuple[str, ...] = ("initial_state", "dynamic")
LEVEL_LETTER = {"core_module": "C", "correct_rule": "R", "rendering_effect": "E"}


class RubricItem(BaseModel):
    """One item of the enriched final reference: the seven fields of paper B.1."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(description="Stable id, I1.. for initial_state items, D1.. for dynamic ones.")
    requirement: str
    verification: str = Field(description="The behaviour or state to inspect.")
    source_module: str
    covered_requirement_ids: list[str]
    query_evidence: str = Field(description="Text that occurs in the expanded query.")
    rubric_level: RubricLevel


class Reference(BaseModel):
    """The enriched final reference of one query."""

    model_config = ConfigDict(extra="forbid")
    initial_state: list[RubricItem]
    dynamic: list[RubricItem]

    def items(self) -> list[tuple[Scope, RubricItem]]:
        return [("initial_state", i) for i in self.initial_state] + [("dynamic", i) for i in self.dynamic]


class CompactItem(BaseModel):
    """Compact export: id, requirement, level (scope by list membership); ``check``, the item's executable
    check (``schemas/checks.py``), travels with it to the environment when build-rubrics wrote one."""

    id: str
    requirement: str
    level: RubricLevel
    check: Check | None = None


class CompactRubric(BaseModel):
    initial_state: list[CompactItem]
    dynamic: list[CompactItem]

    def ids(self) -> set[str]:
        return {i.id for i in self.initial_state} | {i.id for i in self.dynamic}

    def scope_of(self) -> dict[str, Scope]:
        out: dict[str, Scope] = {i.id: "initial_state" for i in self.initial_state}
        out.update({i.id: "dynamic" for i in self.dynamic})
        return out

    def level_of(self) -> dict[str, str]:
        return {i.id: i.level for i in [*self.initial_state, *self.dynamic]}

    def checks(self) -> list[tuple[str, Check]]:
        """(item id, check) of the items that have one, in rubric order."""
        return [(i.id, i.check) for i in [*self.initial_state, *self.dynamic] if i.check is not None]

    def with_checks(self, checks: dict[str, Check]) -> "CompactRubric":
        """A copy whose items carry ``checks[item id]`` (items not named keep none)."""
        conv = lambda items: [i.model_copy(update={"check": checks.get(i.id)}) for i in items]  # noqa: E731
        return CompactRubric(initial_state=conv(self.initial_state), dynamic=conv(self.dynamic))


class JudgeItem(BaseModel):
    """Judge-facing payload item: scope explicit, functional level as ``level``."""

    id: str
    scope: Scope
    requirement: str
    level: RubricLevel


class Task(BaseModel):
    """What the environment scores a response against (``rubricrl score --task TASK.json``)."""

    query_id: str
    query: str = Field(description="The expanded query: the only specification.")
    rubric: CompactRubric


def compact(reference: Reference) -> CompactRubric:
    conv = lambda items: [CompactItem(id=i.id, requirement=i.requirement, level=i.rubric_level) for i in items]  # noqa: E731
    return CompactRubric(initial_state=conv(reference.initial_state), dynamic=conv(reference.dynamic))


def judge_payload(rubric: CompactRubric) -> list[JudgeItem]:
    return [JudgeItem(id=i.id, scope="initial_state", requirement=i.requirement, level=i.level) for i in rubric.initial_state] + [
        JudgeItem(id=i.id, scope="dynamic", requirement=i.requirement, level=i.level) for i in rubric.dynamic
    ]
