"""The rubric reference (paper B.1) and its two exports.

The enriched final reference keeps seven fields per item; scope is not a field but membership in
``initial_state`` or ``dynamic``. The compact export keeps id, requirement and level; the
judge-facing payload makes scope explicit and exposes the functional level as ``level``.
"""
from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from schemas.checks import Check

RubricLevel = Literal["core_module", "correct_rule", "rendering_effect"]
Scope = Literal["initial_state", "dynamic"]
RUBRIC_LEVELS: tuple[str, ...] = ("core_module", "correct_rule", "rendering_effect")
SCOPES: tuple[str, ...] = ("initial_state", "dynamic")
LEVEL_LETTER = {"core_module": "C", "correct_rule": "R", "rendering_effect": "E"}
# What kind of evidence can decide an item (issue #41): the structure the offline rules know of an item, carried
# as a field so that the checks and the judge never read it back from the requirement's words. One owner: here
# (schemas import nothing of ours; ``tasks/rubrics/offline_items.py`` maps its roles onto these).
EvidenceKind = Literal["control_default", "output_text", "drawing_present", "shown_on_load", "labelled_present",
                       "operate_control", "press_key", "readout", "motion_by_itself", "answers_input",
                       # each line of the display ``element`` has the parts its stated line format sets apart
                       "output_format",
                       # a synthesized query's capability (``tasks/rubrics/capabilities.py``): a control named by
                       # ``element`` takes its stated bounds; operating the control named ``trigger`` changes
                       # ``effect`` ("no_error": using it throws no uncaught error); a drag reorders the listed
                       # ``element``; typing in a search box filters them; the first button clicked again and again
                       # throws no uncaught error; the app reloaded after the first button is used throws none (what it
                       # saved is read back); the seed field filled alike before and after a reload shows the same page;
                       # the slider named ``trigger`` moved from end to end changes the page's text; a value outside
                       # the stated bounds (or the stated format) typed in the field named ``element`` changes it; the
                       # button named ``trigger`` is disabled on load; the text labelled ``element`` changes by itself;
                       # the page starts with the stated number of list items; a name added twice with the button
                       # ``trigger`` from the field ``element`` is refused with a message
                       "takes_range", "operate_named", "reorder_by_drag", "filter_by_typing", "repeat_no_error",
                       "restores_on_reload", "reproduces_by_seed", "slides_named", "rejects_out_of_range",
                       "rejects_bad_format", "starts_disabled", "text_by_itself", "starts_listed", "refuses_duplicate"]
EVIDENCE_KINDS: tuple[str, ...] = get_args(EvidenceKind)


# The four fields, declared once; each form of an item (RubricItem, CompactItem, JudgeItem, the LLM's candidate)
# lists them after its own fields (``STRUCTURE``), all optional: an LLM item or old data may have none, and a
# reader then falls back to the requirement's words (``tasks/env/rubric_evidence.py``). ``element`` is what the
# item is about; the paper's ``target`` is already the candidate's target type (state, rule, ...).
EvidenceKindField = Annotated[EvidenceKind | None, Field(description="What kind of evidence decides the item: "
                                                         + ", ".join(EVIDENCE_KINDS) + "; null when none fits.")]
ElementField = Annotated[str | None, Field(description="The element the item is about: '#id' when the query "
                                           "gives an id, else its label; null when it names none.")]
TriggerField = Annotated[str | None, Field(description="What the user operates to set it off: '#id' of a "
                                           "control or a key's name; null for what shows on load or by itself.")]
# What an ``effect`` names besides an output's '#id' (one owner: the offline rules write them, the checks read them).
DRAWING_EFFECT, TEXT_EFFECT, MOTION_EFFECT = "drawing", "text", "motion"
NO_ERROR_EFFECT = "no_error"  # using the control throws no uncaught error (what it changes is not stated)
EffectField = Annotated[list[str] | None, Field(description=f"What should change: '#id' of an output, "
                                                f"'{DRAWING_EFFECT}', '{TEXT_EFFECT}' (the page's text), "
                                                f"'{MOTION_EFFECT}' or '{NO_ERROR_EFFECT}' (using it throws no "
                                                "uncaught error); null when nothing is operated.")]
STRUCTURE = ("evidence_kind", "element", "trigger", "effect")


def structure_of(item: BaseModel | dict) -> dict:
    """The item's ``STRUCTURE`` fields (to carry them from one form of the item to the next)."""
    get = item.get if isinstance(item, dict) else lambda k: getattr(item, k, None)
    return {k: get(k) for k in STRUCTURE}


def known_structure(item: BaseModel | dict) -> dict:
    """The structure fields the item has (not None): what a prompt shows, so an item without them reads as before."""
    return {k: v for k, v in structure_of(item).items() if v is not None}


class RubricItem(BaseModel):
    """One item of the enriched final reference: the seven fields of paper B.1, and what decides it
    (``STRUCTURE``, optional)."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(description="Stable id, I1.. for initial_state items, D1.. for dynamic ones.")
    requirement: str
    verification: str = Field(description="The behaviour or state to inspect.")
    source_module: str
    covered_requirement_ids: list[str]
    query_evidence: str = Field(description="Text that occurs in the expanded query.")
    rubric_level: RubricLevel
    evidence_kind: EvidenceKindField = None
    element: ElementField = None
    trigger: TriggerField = None
    effect: EffectField = None


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
    evidence_kind: EvidenceKindField = None
    element: ElementField = None
    trigger: TriggerField = None
    effect: EffectField = None


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
    """Judge-facing payload item: scope explicit, functional level as ``level``, what decides it (the offline
    judge reads it)."""

    id: str
    scope: Scope
    requirement: str
    level: RubricLevel
    evidence_kind: EvidenceKindField = None
    element: ElementField = None
    trigger: TriggerField = None
    effect: EffectField = None


class Task(BaseModel):
    """What the environment scores a response against (``rubricrl score --task TASK.json``)."""

    query_id: str
    query: str = Field(description="The expanded query: the only specification.")
    rubric: CompactRubric


def compact(reference: Reference) -> CompactRubric:
    conv = lambda items: [CompactItem(id=i.id, requirement=i.requirement, level=i.rubric_level,  # noqa: E731
                                      **structure_of(i)) for i in items]
    return CompactRubric(initial_state=conv(reference.initial_state), dynamic=conv(reference.dynamic))


def judge_dicts(rubric: CompactRubric) -> list[dict]:
    """The judge payload as the prompt shows it (JSON): an item without structure fields shows none of them (null).
    Inside the environment the items stay ``JudgeItem`` (``judge_payload``)."""
    return [i.model_dump(exclude_none=True) for i in judge_payload(rubric)]


def judge_payload(rubric: CompactRubric) -> list[JudgeItem]:
    scopes: tuple[tuple[Scope, list[CompactItem]], ...] = (("initial_state", rubric.initial_state),
                                                           ("dynamic", rubric.dynamic))
    return [JudgeItem(id=i.id, scope=scope, requirement=i.requirement, level=i.level, **structure_of(i))
            for scope, items in scopes for i in items]
