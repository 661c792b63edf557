"""Hierarchical and binary rewards (paper 3.3 and the 4.3 ablation): pure functions of gates and findings.

Hierarchical: strictly ordered tiers, no HTML < source-invalid < runtime-invalid < valid; within the
valid tier a continuous rubric score over the items, weighted by rubric_level, where a critical or
major item counts as unmet (0), a minor item as met less ``minor_penalty``, an item without a finding
as met (1). An item the offline judge lists as undecided (no evidence spoke to it) is neither: it is left
out of the weights, so the score is over the items evidence decided; with none decided the score is 1.0
(nothing was shown unmet). A clean app gets ``rubric_max``. Binary: 1 only when every gate passes and no rubric
item is critical or major, else 0: the paper's pass (``passed``, the one pass rule; the trainer's binary mode,
selection and evaluation rows all call it).

A gate that is ``None`` (the judge failed and our own evidence did not decide) gives a missing reward
(``None``): never a made-up number; the RL job drops that response from its group. A gate our own
evidence failed decides the tier without the judge (the judge could not raise it).

Numbers come from ``schemas.config.env.RewardConfig``. Run: ``hierarchical_reward(...)``.
"""
from __future__ import annotations

from collections.abc import Collection
from typing import Any, Iterable, Mapping

from schemas.config.env import RewardConfig

UNMET = ("critical", "major")  # a rubric item with a finding of these severities is not met


def rubric_score(levels: dict[str, str], severities: dict[str, str], cfg: RewardConfig,
                 undecided: Collection[str] = ()) -> float:
    """Weighted share of met items in [0, 1]. ``levels``: item id -> rubric_level; ``severities``: item id ->
    severity of its finding (items without a finding are met); ``undecided``: items left out of the weights
    (a finding on one still counts). No items weighed -> 1.0 (nothing to miss)."""
    weighed = {i: lvl for i, lvl in levels.items() if i not in undecided or i in severities}
    total = sum(cfg.level_weights[lvl] for lvl in weighed.values())
    if total == 0:
        return 1.0
    got = 0.0
    for item, lvl in weighed.items():
        w = cfg.level_weights[lvl]
        sev = severities.get(item)
        got += 0.0 if sev in UNMET else w * (1.0 - cfg.minor_penalty) if sev == "minor" else w
    return got / total


def hierarchical_reward(format_valid: bool, source_valid: bool | None, runtime_valid: bool | None,
                        score: float | None, cfg: RewardConfig) -> float | None:
    """The tiered reward; ``score`` is ``rubric_score`` (None when the judge gave no rubric layer)."""
    if not format_valid:
        return cfg.format_invalid
    if source_valid is None:
        return None
    if not source_valid:
        return cfg.source_invalid
    if runtime_valid is None:
        return None
    if not runtime_valid:
        return cfg.runtime_invalid
    if score is None:
        return None
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"rubric score {score} is outside [0, 1]; compute it with rubric_score()")
    return cfg.rubric_floor + (cfg.rubric_max - cfg.rubric_floor) * score


def binary_reward(format_valid: bool, source_valid: bool | None, runtime_valid: bool | None,
                  severities: dict[str, str] | None) -> float | None:
    """1.0 only when all gates pass and no rubric item is critical or major; 0.0 otherwise; None if undecided."""
    p = passed(format_valid, source_valid, runtime_valid, severities)
    return None if p is None else float(p)


def passed(format_valid: bool, source_valid: bool | None, runtime_valid: bool | None,
           severities: dict[str, str] | None) -> bool | None:
    """The paper's pass: every gate passed and no rubric item unmet. False when a gate failed; None when a
    gate or the rubric layer is undecided (``severities`` None: the judge gave no rubric layer)."""
    if not format_valid or source_valid is False or runtime_valid is False:
        return False
    if source_valid is None or runtime_valid is None or severities is None:
        return None
    return not unmet_items(severities)


def unmet_items(severities: dict[str, str]) -> set[str]:
    """The rubric items whose finding is critical or major."""
    return {item for item, sev in severities.items() if sev in UNMET}


def rubric_severities_of(findings: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """item id -> severity of its rubric finding, from finding dicts or rows (``layer``, ``severity``, ``item_id``)."""
    return {f["item_id"]: f["severity"] for f in findings if f["layer"] == "rubric_alignment" and f.get("item_id")}


def failed_items(judgment: Mapping[str, Any]) -> set[str]:
    """Rubric item ids with a critical or major rubric_alignment finding in one ``judgments`` row."""
    return unmet_items(rubric_severities_of(judgment.get("findings") or []))


def items_judged(judgment: Mapping[str, Any], n_items: int) -> int:
    """The rubric's item count when the rubric layer was decided for this ``judgments`` row, else 0."""
    return n_items if judgment.get("gate_rubric_alignment") is not None else 0


def reward(kind: str, format_valid: bool, source_valid: bool | None, runtime_valid: bool | None,
           levels: dict[str, str], severities: dict[str, str] | None, cfg: RewardConfig,
           undecided: Collection[str] = ()) -> float | None:
    """Dispatch on ``kind`` (``hierarchical`` | ``binary``)."""
    if kind == "binary":
        return binary_reward(format_valid, source_valid, runtime_valid, severities)
    if kind != "hierarchical":
        raise ValueError(f"reward kind {kind!r} is not supported; use 'hierarchical' or 'binary'")
    score = rubric_score(levels, severities, cfg, undecided) if severities is not None else None
    return hierarchical_reward(format_valid, source_valid, runtime_valid, score, cfg)
