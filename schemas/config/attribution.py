"""Configuration of diagnostic attribution and token weights (paper 3.4, 3.5, B.3, B.4, G.3).

Defaults are the paper's numbers; ``AttributionConfig`` is the ``attribution`` section of
``schemas/config/``, and ``tasks.attribution.weights`` is the one reader of its weights (the
trainer and ``rubricrl score`` both go through it). Every field says where its default comes from.
Which rule applies the weights is not set here: it follows ``train.objective.mode``
(``schemas.config.train.RULE_OF_MODE``), so the trainer, the ``attributions`` rows and
``rubricrl score`` name the same rule.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from schemas.config.base import Section

# 'sign' is the paper's rule (3.5, G.3), 'unconditional' the 4.4 ablation, 'uniform' standard GRPO
# (the binary and hierarchical ablations); see tasks.attribution.weights
WeightRule = Literal["uniform", "sign", "unconditional"]


class AttributionConfig(Section):
    """Localisation, expansion and sign-dependent token weights."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    direct_weight: float = Field(3.0, gt=0, description="A<0: tokens directly implicated by a finding (paper 3.5).")
    context_weight: float = Field(1.5, gt=0, description="A<0: tokens only in contextual spans (paper 3.5).")
    baseline_weight: float = Field(
        1.0, gt=0,
        description="A<0 remaining tokens; A>0 attributed tokens; A=0; prompt positions; uniform fallback (B.4, G.3).",
    )
    positive_other_weight: float = Field(1.2, gt=0, description="A>0: tokens outside every attributed span (G.3).")
    window_chars: int = Field(1200, ge=0, description="Analysis window each side of a direct anchor (B.3).")
    min_fragment_chars: int = Field(
        8, ge=1, description="Fragments with fewer non-whitespace characters are too short to be used alone (B.3).",
    )
    call_depth: int = Field(
        3, ge=1, description="How many call hops an event handler may take to reach an anchor's function.",
    )

    @model_validator(mode="before")
    @classmethod
    def _no_rule_here(cls, data: Any) -> Any:
        if isinstance(data, dict) and "mode" in data:
            raise ValueError(f"attribution.mode={data['mode']!r} is not a setting: the token-weight rule follows "
                             "train.objective.mode (full: the sign rule, unconditional: the 4.4 ablation, binary or "
                             "hierarchical: uniform); remove attribution.mode and set train.objective.mode instead")
        return data

    @model_validator(mode="after")
    def _check(self) -> "AttributionConfig":
        if self.direct_weight < self.context_weight:
            raise ValueError(
                f"direct_weight {self.direct_weight} < context_weight {self.context_weight}; direct membership must "
                "weigh at least as much as contextual membership (paper 3.5: 3.0 and 1.5)"
            )
        return self
