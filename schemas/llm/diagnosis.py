"""The judge's structured diagnosis (paper B.2, F.2): three layers, severity by list membership.

The judge gives evidence; programs decide numbers (gates, rewards, spans, token weights).
Validation context ``{"valid_ids": set[str]}`` makes an unknown rubric id a validation error, so
the LLM layer's single corrective retry covers it (paper B.4).
"""
from __future__ import annotations

import copy
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from schemas.llm.json_schema import base_schema

Severity = Literal["critical", "major", "minor"]
LayerName = Literal["static_check", "code_simulation", "rubric_alignment"]
SEVERITIES: tuple[Severity, ...] = ("critical", "major", "minor")
LAYERS: tuple[LayerName, ...] = ("static_check", "code_simulation", "rubric_alignment")
SEVERITY_RANK = {"critical": 3, "major": 2, "minor": 1}


class Finding(BaseModel):
    model_config = ConfigDict(extra="ignore")
    item_id: str | None = Field(default=None, description="Rubric layer: exactly one reference item id.")
    scope: Literal["initial_state", "dynamic"] | None = None
    description: str
    code_quotes: list[str] = Field(default_factory=list, description="Exact quotations; empty for missing features.")
    related_symbols: list[str] = Field(default_factory=list)
    state_variables: list[str] = Field(default_factory=list)
    context_hints: list[str] = Field(default_factory=list)
    explanation: str = ""


class Layer(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: LayerName
    critical: list[Finding] = Field(default_factory=list)
    major: list[Finding] = Field(default_factory=list)
    minor: list[Finding] = Field(default_factory=list)

    def findings(self) -> list[tuple[Severity, Finding]]:
        return [(s, f) for s in SEVERITIES for f in getattr(self, s)]

    @property
    def gate_passed(self) -> bool:
        """Critical or major fails the layer's gate; minor alone does not (paper B.2)."""
        return not self.critical and not self.major


class Diagnosis(BaseModel):
    model_config = ConfigDict(extra="ignore")
    static_check: Layer
    code_simulation: Layer
    rubric_alignment: Layer
    undecided: list[str] = Field(default_factory=list, description=(
        "Rubric ids no evidence spoke to (the offline rule only): neither met nor unmet in the reward. Not part "
        "of the LLM judge's schema: for it, an item without a finding is met (paper B.2)."))

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> "Diagnosis":
        for name in LAYERS:
            if getattr(self, name).name != name:
                raise ValueError(f"layer {name!r} carries name {getattr(self, name).name!r}; set name to {name!r}")
        valid = (info.context or {}).get("valid_ids") if info is not None else None
        for sev, f in self.rubric_alignment.findings():
            if not f.item_id:
                raise ValueError(f"rubric_alignment.{sev} finding has no item_id; each rubric finding names exactly one reference item")
            if valid is not None and f.item_id not in valid:
                raise ValueError(
                    f"rubric_alignment.{sev} names unknown rubric id {f.item_id!r}; use one of {sorted(valid)}"
                )
        return self

    @classmethod
    def llm_json_schema(cls, context: Mapping[str, Any]) -> dict[str, Any]:
        """The schema sent to the judge: what ``_check`` demands, said in JSON schema so a server that
        enforces it cannot produce a reply ``_check`` rejects. Each layer carries its own name;
        rubric findings name one existing rubric id (``valid_ids``), or any non-empty id without it."""
        schema = base_schema(cls)
        defs = schema["$defs"]
        valid = context.get("valid_ids")
        rubric_finding = copy.deepcopy(defs["Finding"])
        rubric_finding["properties"]["item_id"] = (
            {"type": "string", "enum": sorted(valid)} if valid else {"type": "string", "minLength": 1})
        defs["RubricFinding"] = rubric_finding
        for name in LAYERS:
            layer = copy.deepcopy(defs["Layer"])
            layer["properties"]["name"] = {"type": "string", "const": name}
            if name == "rubric_alignment":
                for sev in SEVERITIES:
                    lst = {**layer["properties"][sev], "items": {"$ref": "#/$defs/RubricFinding"}}
                    layer["properties"][sev] = {**lst, "maxItems": 0} if valid is not None and not valid else lst
            defs[f"Layer_{name}"] = layer
            schema["properties"][name] = {"$ref": f"#/$defs/Layer_{name}"}
        del defs["Layer"]
        schema["properties"].pop("undecided", None)
        return schema

    def layers(self) -> list[Layer]:
        return [self.static_check, self.code_simulation, self.rubric_alignment]

    def keyed_findings(self) -> list[tuple[str, LayerName, Severity, Finding]]:
        """Every finding with its key, in the one fixed order (layers, severities, list order): the judge's
        output and attribution both key findings here, so two equal findings still get two keys."""
        return [(finding_key(layer.name, sev, i), layer.name, sev, f)
                for layer in self.layers() for sev in SEVERITIES for i, f in enumerate(getattr(layer, sev))]


def finding_key(layer: str, severity: str, index: int) -> str:
    """A finding's key, ``layer.severity.index`` (its position in that list)."""
    return f"{layer}.{severity}.{index}"
