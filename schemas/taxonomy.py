"""The capability taxonomy (paper D.1, Table 7) and persona attributes, kept as data in
``tasks/data/`` and validated by these models when loaded."""
from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

CapabilityKind = Literal["interaction", "state_transition", "information_operation", "structural_requirement",
                         "visualisation", "output_transformation", "domain_mechanism"]
PLACEHOLDERS = {"obj", "obj_one", "param"}


class Capability(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    kind: CapabilityKind
    phrase: str

    @model_validator(mode="after")
    def _placeholders(self) -> "Capability":
        unknown = set(re.findall(r"\{(\w+)\}", self.phrase)) - PLACEHOLDERS
        if unknown:
            raise ValueError(f"capability {self.id!r} uses unknown placeholders {sorted(unknown)}; allowed: {sorted(PLACEHOLDERS)}")
        return self


class Category(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    name: str
    description: str
    capabilities: list[Capability]


class Taxonomy(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: str
    capability_kinds: list[CapabilityKind]
    categories: list[Category]

    @model_validator(mode="after")
    def _check(self) -> "Taxonomy":
        if len(self.categories) != 12:
            raise ValueError(f"the taxonomy must have 12 operational categories (paper D.1); it has {len(self.categories)}")
        ids = [c.id for c in self.categories] + [k.id for c in self.categories for k in c.capabilities]
        dup = {i for i in ids if ids.count(i) > 1}
        if dup:
            raise ValueError(f"taxonomy ids must be unique; repeated: {sorted(dup)}")
        for c in self.categories:
            if len(c.capabilities) < 3:
                raise ValueError(f"category {c.id!r} needs at least 3 fine-grained capabilities")
        return self

    def category_of(self) -> dict[str, str]:
        return {k.id: c.id for c in self.categories for k in c.capabilities}

    def capability(self) -> dict[str, Capability]:
        return {k.id: k for c in self.categories for k in c.capabilities}


class PersonaAttributes(BaseModel):
    model_config = ConfigDict(extra="forbid")
    occupation: list[str]
    expertise: list[str]
    motivation: list[str]
    usage_environment: list[str]
