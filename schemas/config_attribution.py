"""Configuration of diagnostic attribution and token weights (paper 3.4, 3.5, B.3, B.4, G.3).

Defaults are the paper's numbers; ``AttributionConfig`` is the ``attribution`` section of
``schemas/config.py``, and ``tasks.attribution.weights`` is the one reader of its weights (the
trainer and ``rubricrl score`` both go through it). Every field says where its default comes from.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

WeightMode = Literal["sign", "unconditional"]


class AttributionConfig(BaseModel):
    """Localisation, expansion and sign-dependent token weights."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    direct_weight: float = Field(3.0, gt=0, description="A<0: tokens directly implicated by a finding (paper 3.5).")
    context_weight: float = Field(1.5, gt=0, description="A<0: tokens only in contextual spans (paper 3.5).")
    baseline_weight: float = Field(
        1.0, gt=0,
        description="A<0 remaining tokens; A>0 attributed tokens; A=0; prompt positions; uniform fallback (B.4, G.3).",
    )
    positive_other_weight: float = Field(1.2, gt=0, description="A>0: tokens outside every attributed span (G.3).")
    mode: WeightMode = Field(
        "sign",
        description="'sign' is the paper's rule; 'unconditional' is the 4.4 ablation (see tasks.attribution.weights).",
    )
    window_chars: int = Field(1200, ge=0, description="Analysis window each side of a direct anchor (B.3).")
    min_fragment_chars: int = Field(
        8, ge=1, description="Fragments with fewer non-whitespace characters are too short to be used alone (B.3).",
    )
    call_depth: int = Field(
        3, ge=1, description="How many call hops an event handler may take to reach an anchor's function.",
    )

    @model_validator(mode="after")
    def _check(self) -> "AttributionConfig":
        if self.direct_weight < self.context_weight:
            raise ValueError(
                f"direct_weight {self.direct_weight} < context_weight {self.context_weight}; direct membership must "
                "weigh at least as much as contextual membership (paper 3.5: 3.0 and 1.5)"
            )
        return self
