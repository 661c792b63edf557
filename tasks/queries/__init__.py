"""Queries: synthesis from categories x personas (paper D.1), near-dedup, coverage, ingest of external sets,
and the held-out split (``split``)."""
from __future__ import annotations

from typing import Any

from tasks.stages.store import StageStore

QUERY_META = ["query_id", "category_ids", "capability_ids", "persona_id", "difficulty", "domain"]


def query_meta(store: StageStore) -> dict[str, dict[str, Any]]:
    """The ``queries`` stage's descriptive columns by query id (selection and evaluation rows carry them)."""
    return {r["query_id"]: r for r in store.read("queries", columns=QUERY_META).to_pylist()}
