"""The sign-dependent diagnostic token weights (paper 3.5, 4.4, B.4, G.3): the one rule.

The scorer gives each generated token a membership code (``DIRECT`` if it overlaps a direct span,
else ``CONTEXT`` if it overlaps a context span, else ``OTHER``) and a ``uniform`` flag (findings
were present but none could be localised). ``token_weights`` turns codes and the response's
advantage A into weights, reading every number from ``AttributionConfig``; the trainer
(``training.objective.policy_weights``) and ``rubricrl score --advantage`` both call it.

Weights with the defaults (``rule='sign'``):

====================  ==========  ===========  =======
case                  direct      contextual   other
====================  ==========  ===========  =======
A < 0                 3.0         1.5          1.0      direct_weight / context_weight / baseline_weight
A > 0                 1.0         1.0          1.2      baseline_weight / baseline_weight / positive_other_weight
A = 0                 1.0         1.0          1.0      baseline_weight
uniform (any A)       1.0         1.0          1.0      baseline_weight
====================  ==========  ===========  =======

A valid diagnosis with no findings has no attributed tokens, so the ordinary sign rule gives 1.0
(A<0) or 1.2 (A>0) everywhere. A missing diagnosis means no reward: the response is dropped before
weighting.

``rule='unconditional'`` (the paper's 4.4 ablation, "unconditional error penalization"): diagnosed
tokens get a NEGATIVE update whatever the sign of A. For A > 0 the weights are 3.0 / 1.5 with sign
-1 on direct / contextual tokens and 1.0 elsewhere (the plain baseline: the variant does not
re-emphasise unaffected regions); for A < 0 it equals the sign rule. ``rule='uniform'`` is standard
GRPO (the binary and hierarchical ablations): baseline everywhere. Which rule applies is
``train.objective.mode``'s (``schemas.config.train.RULE_OF_MODE``); the numbers are the
``attribution`` section's.

The weights are returned non-negative with a separate sign: the trainer multiplies A by the sign
BEFORE clipping, so the clipped surrogate is the one of a negative advantage (a negative weight
after clipping would clip the wrong side). ``weights_from_membership`` is their product, what
``rubricrl score`` prints.
"""
from __future__ import annotations

from typing import Literal

import numpy as np

from schemas.config.attribution import AttributionConfig, WeightRule

# Membership codes, one per generated token (np.int8): the scorer's output, the rule's input.
OTHER, CONTEXT, DIRECT = 0, 1, 2
MEMBERSHIP_DTYPE = np.int8
Status = Literal["localised", "unlocalised", "no_findings"]


def membership_codes(values, where: str = "membership") -> np.ndarray:
    """``values`` as a (T,) int8 array of codes; a clear error for anything else (e.g. float weights)."""
    arr = np.asarray(values)
    if arr.dtype == MEMBERSHIP_DTYPE and arr.ndim == 1 and (
            not arr.size or (arr.min() >= OTHER and arr.max() <= DIRECT)):
        return arr  # already codes: no copy on the trainer's hot path
    if arr.size and arr.dtype.kind not in "iu":
        raise ValueError(f"{where}: {arr.ravel()[:3].tolist()} are {arr.dtype} values, not membership codes; return "
                         f"one int per token: {OTHER} other, {CONTEXT} contextual, {DIRECT} direct "
                         "(tasks/attribution/weights.py applies the weights)")
    codes = arr.astype(np.int64).reshape(-1)
    bad = codes[(codes < OTHER) | (codes > DIRECT)]
    if bad.size:
        raise ValueError(f"{where}: {int(bad[0])} is not a membership code; use {OTHER} other, {CONTEXT} "
                         f"contextual, {DIRECT} direct (tasks/attribution/weights.py)")
    return codes.astype(MEMBERSHIP_DTYPE)


def token_weights(membership, advantage: float, config: AttributionConfig | None = None, *,
                  uniform: bool = False, rule: WeightRule = "sign") -> tuple[np.ndarray, np.ndarray]:
    """``(weights >= 0, sign in {+1, -1})``, both (T,) float64, by the table in the module docstring."""
    cfg = config or AttributionConfig()
    if advantage != advantage:
        raise ValueError("advantage is NaN; a response without a reward has no advantage: drop it before weighting")
    m = membership_codes(membership)
    ones = np.ones(m.shape, dtype=np.float64)
    if rule == "uniform" or uniform or advantage == 0:
        return np.full(m.shape, cfg.baseline_weight, dtype=np.float64), ones
    if rule not in ("sign", "unconditional"):
        raise ValueError(f"unknown weight rule {rule!r}; use one of uniform, sign, unconditional")
    if advantage > 0 and rule == "sign":
        return np.asarray([cfg.positive_other_weight, cfg.baseline_weight, cfg.baseline_weight])[m], ones
    weights = np.asarray([cfg.baseline_weight, cfg.context_weight, cfg.direct_weight])[m]
    # unconditional, A > 0: diagnosed tokens' advantage flips, so their update is negative
    sign = np.asarray([1.0, -1.0, -1.0])[m] if advantage > 0 else ones
    return weights, sign


def weights_from_membership(membership, advantage: float, status: Status, config: AttributionConfig | None = None,
                            rule: WeightRule = "sign") -> np.ndarray:
    """(T,) float64 weight times sign (negative where ``unconditional`` pushes a token down), for display."""
    w, sign = token_weights(membership, advantage, config, uniform=status == "unlocalised", rule=rule)
    return w * sign
