"""The held-out split: which queries evaluate scores and neither generate-sft nor select-rl-queries trains on.

Run: ``held_out("q00017", cfg.evaluation.heldout_percent)``.
"""
from __future__ import annotations

import hashlib


def held_out(query_id: str, percent: float) -> bool:
    """Whether a query belongs to the evaluation split: a stable hash of its id, so the split never
    moves when queries are added, and select-rl-queries never trains on what evaluate scores."""
    if not 0 <= percent <= 100:
        raise ValueError(f"held-out percent {percent} must be within [0, 100]; set evaluation.heldout_percent")
    bucket = int(hashlib.sha256(query_id.encode()).hexdigest()[:8], 16) % 10_000
    return bucket < percent * 100
