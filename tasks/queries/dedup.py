"""Near-duplicate filtering with MinHash LSH (datasketch) over word 3-shingles.

Candidates are visited in a fixed order; a candidate whose estimated Jaccard similarity to an
already kept one reaches the threshold is dropped and recorded with the id it duplicates.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from datasketch import MinHash, MinHashLSH

_WORD = re.compile(r"[a-z0-9]+")


def shingles(text: str, k: int = 3) -> list[bytes]:
    words = _WORD.findall(text.lower())
    if len(words) < k:
        return [" ".join(words).encode()]
    return [" ".join(words[i:i + k]).encode() for i in range(len(words) - k + 1)]


@dataclass
class DedupResult:
    kept: list[int]                 # positions into the input, in input order
    duplicate_of: dict[int, int]    # dropped position -> kept position it resembles


def near_duplicates(texts: list[str], threshold: float, num_perm: int = 64, limit: int | None = None,
                    seed: int = 1) -> DedupResult:
    """Keep texts in order, dropping near-duplicates; stop once ``limit`` texts are kept."""
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    template = MinHash(num_perm=num_perm, seed=seed)
    kept: list[int] = []
    dup: dict[int, int] = {}
    for pos, text in enumerate(texts):
        if limit is not None and len(kept) >= limit:
            break
        m = MinHash(num_perm=num_perm, seed=seed, permutations=template.permutations, scheme=template.scheme)
        m.update_batch(shingles(text))
        hits = lsh.query(m)
        if hits:
            dup[pos] = int(min(hits))
            continue
        lsh.insert(pos, m, check_duplication=False)
        kept.append(pos)
    return DedupResult(kept, dup)


def exact_jaccard(a: str, b: str) -> float:
    sa, sb = set(shingles(a)), set(shingles(b))
    return len(sa & sb) / max(1, len(sa | sb))


__all__ = ["near_duplicates", "shingles", "exact_jaccard", "DedupResult"]
