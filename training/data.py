"""The RL query set and the data position (paper D.2, D.4: training queries are shuffled).

Queries come from the ``rl_queries`` stage (Parquet parts or a JSONL file with ``query_id`` and
``query``) or the built-in toy set. The order is a seeded permutation per epoch, so the data
position is just the step number: step s, rank r reads global slots [s*B + r*B/W, s*B + (r+1)*B/W).
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from training.toy import TOY_QUERIES


def load_queries(path: str | None) -> list[dict[str, str]]:
    if path is None:
        return [dict(q) for q in TOY_QUERIES]
    p = Path(path)
    if not p.exists():
        raise ValueError(f"run.queries_path={path!r} does not exist; point it at the rl_queries stage (Parquet "
                         "directory or file) or a JSONL file with query_id and query")
    if p.suffix == ".jsonl":
        rows = [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    else:
        import pyarrow.parquet as pq

        rows = pq.read_table(p, columns=["query_id", "query"]).to_pylist()
    bad = [i for i, r in enumerate(rows) if not r.get("query_id") or not r.get("query")]
    if bad or not rows:
        raise ValueError(f"{path}: {'no rows' if not rows else f'rows {bad[:5]} lack query_id or query'}; every row "
                         "needs a non-empty query_id and query")
    return [{"query_id": str(r["query_id"]), "query": str(r["query"])} for r in rows]


class QuerySource:
    """Deterministic shuffled stream of queries addressed by step (no state beyond the step)."""

    def __init__(self, queries: list[dict[str, str]], seed: int):
        self.queries, self.seed = queries, seed
        self._perm_cache: dict[int, list[int]] = {}

    def _perm(self, epoch: int) -> list[int]:
        if epoch not in self._perm_cache:
            g = torch.Generator().manual_seed(self.seed * 7919 + epoch)
            self._perm_cache = {epoch: torch.randperm(len(self.queries), generator=g).tolist()}
        return self._perm_cache[epoch]

    def slot(self, index: int) -> dict[str, str]:
        n = len(self.queries)
        return self.queries[self._perm(index // n)[index % n]]

    def batch(self, step: int, rank: int, world_size: int, queries_per_step: int) -> list[dict[str, str]]:
        per_rank = queries_per_step // world_size
        start = step * queries_per_step + rank * per_rank
        return [self.slot(start + j) for j in range(per_rank)]
