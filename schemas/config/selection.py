"""select-rl-queries (paper D.2): weights of the selection score; no category quota, no single
variance threshold. Queries whose probe rewards are all equal carry zero advantage and are never chosen."""
from __future__ import annotations

from typing import Any

from pydantic import Field

from schemas.config.base import Section
from schemas.config.train import DEMO_MAX_NEW_TOKENS


class SelectionConfig(Section):
    target_size: int = Field(3_626, ge=1, description="Queries in the RL set (paper D.2: 3,626)")
    probe_samples: int = Field(8, ge=2, description="Responses sampled per candidate query from the current policy")
    w_discrimination: float = Field(1.0, ge=0, description="Weight of reward discrimination (spread and distinct levels)")
    w_weakness: float = Field(1.0, ge=0, description="Weight of capability weakness (failure rate of its categories)")
    w_levels: float = Field(0.5, ge=0, le=1, description="Share of discrimination from distinct reward levels vs std")
    coverage_strength: float = Field(1.0, ge=0, description="How fast a category's or persona's repeated picks lose value")
    max_candidates: int | None = Field(None, ge=1, description="Probe at most this many candidate queries (None = all)")
    probe_max_new_tokens: int = Field(16384, ge=1, description="Generation length limit of a probe response")
    probe_max_prompt_tokens: int = Field(4096, ge=8, description="Longer prompts are cut from the left")
    probe_temperature: float = Field(1.0, gt=0.0, description="Sampling temperature of the probes (untruncated)")
    probe_chunk_size: int = Field(64, ge=1, description="Candidate queries per resumable probe part")
    seed: int = Field(0, description="Probe sampling seed (per part: seed + part index)")
    schedule_cron: str = Field("0 2 * * *", description="Nightly re-selection (cron)")
    schedule_timezone: str = Field("UTC", description="Time zone of the cron schedule")


# What gives select-rl-queries discriminative queries when every probe reward is equal (the flow's warning and
# `rubricrl run`'s stop message say it).
EMPTY_SELECTION_HELP = ("a stronger SFT policy (train_sft.run.epochs), more probe samples (selection.probe_samples), "
                        "room to finish an app (selection.probe_max_new_tokens) or more candidates "
                        "(selection.max_candidates)")

# The demo profile: a tiny model, few candidates, a few probe samples, enough new tokens for the SFT'd
# tiny policy to finish its app (so probe samples differ in validity and selection has real choices).
SELECTION_DEMO_OVERRIDES: dict[str, Any] = {"target_size": 6, "probe_samples": 4, "max_candidates": 12,
                                            "probe_max_new_tokens": DEMO_MAX_NEW_TOKENS, "probe_max_prompt_tokens": 768,
                                            "probe_chunk_size": 6}
