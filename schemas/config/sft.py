"""generate-sft (paper D.1): teachers, gates, export. The SFT job itself is ``train_sft``
(``schemas.config.train.TrainSFTConfig``)."""
from __future__ import annotations

from pydantic import Field

from schemas.config.base import Section


class SFTConfig(Section):
    teachers: list[str] = Field(default_factory=lambda: ["claude-opus-4-8"],
                                description="Teacher models (one or several); offline runs use the offline teacher")
    max_queries: int | None = Field(None, ge=1, description="Answer at most this many queries (None = all with a reference)")
    judge: bool = Field(False, description="Also run the LLM judge on teacher answers (gates alone by default)")
    browser: bool = Field(True, description="Runtime gate in headless Chromium (False: tree-sitter gates only)")
    max_tokens: int = Field(16_000, ge=256, description="Teacher answer budget")
    temperature: float = Field(0.7, ge=0, le=2)
    chunk_size: int = Field(64, ge=1, description="Queries per resumable part")
