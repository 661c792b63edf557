"""select-rl-queries (paper D.2): weights of the selection score; no category quota, no single
variance threshold. Queries whose probe rewards are all equal carry zero advantage and are never chosen."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class SelectionConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)
    target_size: int = Field(3_626, ge=1, description="Queries in the RL set (paper D.2: 3,626)")
    probe_samples: int = Field(8, ge=2, description="Responses sampled per candidate query from the current policy")
    w_discrimination: float = Field(1.0, ge=0, description="Weight of reward discrimination (spread and distinct levels)")
    w_weakness: float = Field(1.0, ge=0, description="Weight of capability weakness (failure rate of its categories)")
    w_levels: float = Field(0.5, ge=0, le=1, description="Share of discrimination from distinct reward levels vs std")
    coverage_strength: float = Field(1.0, ge=0, description="How fast a category's or persona's repeated picks lose value")
    max_candidates: int | None = Field(None, ge=1, description="Probe at most this many candidate queries (None = all)")
    schedule_cron: str = Field("0 2 * * *", description="Nightly re-selection (cron)")
    schedule_timezone: str = Field("UTC", description="Time zone of the cron schedule")
