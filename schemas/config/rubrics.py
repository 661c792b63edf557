"""Configuration of build-rubrics (paper B.1): the ``rubrics`` section.

Defaults are the ``full`` profile's; suggested ``demo`` override: ``{"rubrics": {"chunk_size": 50}}``.
"""
from __future__ import annotations

from typing import Any

from pydantic import Field

from schemas.config.base import Section

OFFLINE_MAX_ITEMS = 20  # rubrics.max_items' default, which env.checks.max_checks also takes
RUBRIC_STAGES = ("expansions", "requirements", "modules", "rubric_candidates", "rubric_references", "rubric_checks")


class StageSettings(Section):
    max_tokens: int = Field(ge=256, le=64_000, description="Output token limit of one call of this stage")
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="Sampling temperature (0 = most repeatable)")


class RubricsConfig(Section):
    """build-rubrics: five LLM stages, each a published, validated Parquet stage."""

    chunk_size: int = Field(500, ge=1, le=100_000,
                            description="Queries per resumable part (chunks of the sorted query ids)")
    max_queries: int | None = Field(None, ge=1, description="Build references for the first N query ids only")
    evidence_min_chars: int = Field(3, ge=1, description="Shorter query_evidence cannot support an item")
    max_items: int = Field(OFFLINE_MAX_ITEMS, ge=1, le=200, description="Rubric items per query the offline rules build, at most "
                                                         "(kept by rank: what a check compares, then a control's "
                                                         "stated default or range, then presence; offline_items.cap_rank)")
    prompt_dir: str | None = Field(None, description="Folder of rubric_*.md prompts; None = tasks/prompts/")
    concurrency: int | None = Field(None, ge=1, le=1024, description="Parallel calls per part; None = llm.concurrency")
    expansion: StageSettings = Field(default_factory=lambda: StageSettings(max_tokens=3000))
    requirements: StageSettings = Field(default_factory=lambda: StageSettings(max_tokens=4000))
    modules: StageSettings = Field(default_factory=lambda: StageSettings(max_tokens=3000))
    decomposition: StageSettings = Field(default_factory=lambda: StageSettings(max_tokens=8000))
    filtering: StageSettings = Field(default_factory=lambda: StageSettings(max_tokens=10000))
    checks: StageSettings = Field(default_factory=lambda: StageSettings(max_tokens=8000))
    check_dry_run: bool = Field(True, description="Dry-run every written check on an empty page in the browser; a "
                                                  "check that passes or fails there (it verifies nothing) is dropped")
    dry_run_step_timeout_ms: int = Field(150, ge=50, le=5000, description="Step limit in the dry run: on an empty "
                                                                          "page every target is missing, so keep it short")

    def stage_settings(self, section: str) -> dict[str, Any]:
        """What one stage's rows depend on (enters its input hashes); chunking does not."""
        out = getattr(self, section).model_dump()
        if section == "filtering":
            out["evidence_min_chars"] = self.evidence_min_chars
        if section == "requirements":
            out["max_items"] = self.max_items
        return out
