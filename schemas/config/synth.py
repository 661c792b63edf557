"""Configuration of synthesize-queries (paper D.1): the ``synth`` section."""
from __future__ import annotations

from pydantic import Field

from schemas.config.base import Section


class SynthConfig(Section):
    """synthesize-queries (paper D.1)."""

    n_queries: int = Field(55_000, ge=1, description="Queries published after deduplication")
    n_personas: int = Field(2_000, ge=1, description="Personas sampled from the persona attributes")
    oversample: float = Field(0.08, ge=0.0, le=2.0, description="Extra candidates generated to absorb duplicates")
    min_capabilities: int = Field(2, ge=1, description="Capabilities per query, at least")
    max_capabilities: int = Field(4, ge=1, description="Capabilities per query, at most")
    dedup_threshold: float = Field(0.8, gt=0.0, le=1.0, description="MinHash-LSH Jaccard threshold for near-duplicates")
    num_perm: int = Field(64, ge=16, le=512, description="MinHash permutations")
    chunk_size: int = Field(2_000, ge=1, description="Candidates per resumable part")
    seed: int = 17
    ingest_path: str | None = Field(None, description="Optional external JSONL of queries to ingest instead")
    ingest_tests: str | None = Field(None, description="The ingested benchmark's folder of per-task test specs "
                                                       "(InteractScience PFT_tests/); default: PFT_tests/ beside the "
                                                       "file or beside its folder")
