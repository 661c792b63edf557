"""Quote matching in the application source (paper B.3, B.4): pure functions on strings.

Order of attempts for one quote:

1. exact: every occurrence of the quote (overlapping ones included);
2. whitespace-normalised: any run of whitespace in the quote equals any run of whitespace in the
   source, across line breaks too; leading and trailing whitespace of the quote is ignored. This is a
   regex over the ORIGINAL source, so matches are exact source offsets by construction;
3. fragments: the quote is split at statement boundaries (``;``), braces and line breaks (and at a
   judge's elision ``...``); each fragment is matched as in 1-2. Fragments with fewer than
   ``min_chars`` non-whitespace characters, or that are a lone keyword, are too short to be meaningful
   and are not used alone.

A quote (or fragment) with several matches is disambiguated by a caller-supplied ``score(start, end)``
(the enclosing function named in related_symbols, the state variables, nearby evidence); a unique best
score wins, otherwise the anchor is dropped: it is never spread over every match. Unmatched quotes are
dropped; the other anchors of the finding still count.

Run: ``python -c "from tasks.attribution.locate import locate; print(locate(src, quote))"``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Literal

Method = Literal["exact", "whitespace", "fragment"]
Status = Literal["matched", "ambiguous", "unmatched"]
Scorer = Callable[[int, int], float]

_SPLIT = re.compile(r"[;{}\n]|\.\.\.|…")
_WS = re.compile(r"\s+")
_KEYWORDS = {"return", "else", "break", "continue", "default", "function", "const", "let", "var", "this", "true",
             "false", "null", "undefined", "async", "await", "try", "finally"}


@dataclass(frozen=True)
class AnchorResult:
    """How one quote resolved: the spans chosen (source offsets) and why."""

    quote: str
    status: Status
    method: Method | None
    spans: tuple[tuple[int, int], ...] = ()
    candidates: int = 0  # matches found before disambiguation
    dropped_fragments: tuple[str, ...] = field(default=())


def squash(text: str) -> str:
    """The whitespace-normalised form two texts are compared by."""
    return _WS.sub(" ", text).strip()


def find_exact(source: str, quote: str) -> list[tuple[int, int]]:
    out, i = [], source.find(quote)
    while i >= 0 and quote:
        out.append((i, i + len(quote)))
        i = source.find(quote, i + 1)
    return out


def whitespace_pattern(quote: str) -> re.Pattern[str] | None:
    """The regex ``find_whitespace`` implements (kept as the specification; tests compare the two)."""
    parts = quote.split()
    return re.compile(r"\s+".join(re.escape(p) for p in parts)) if parts else None


def find_whitespace(source: str, quote: str) -> list[tuple[int, int]]:
    r"""Every match of ``whitespace_pattern(quote)`` (overlapping ones included), without compiling it.

    The pattern is the quote's non-whitespace parts joined by ``\s+``; since parts never start with
    whitespace, a match at a given start is unique (each run of whitespace is taken whole), so it is
    checked part by part with ``str.startswith`` from every occurrence of the first part."""
    parts = quote.split()
    if not parts:
        return []
    first, rest = parts[0], parts[1:]
    out, n = [], len(source)
    i = source.find(first)
    while i >= 0:
        pos = i + len(first)
        for part in rest:
            k = pos
            while k < n and source[k].isspace():
                k += 1
            if k == pos or not source.startswith(part, k):
                break
            pos = k + len(part)
        else:
            out.append((i, pos))
        i = source.find(first, i + 1)
    return out


def meaningful(fragment: str, min_chars: int) -> bool:
    compact = "".join(fragment.split())
    return len(compact) >= min_chars and compact not in _KEYWORDS


def split_fragments(quote: str, min_chars: int) -> tuple[list[str], list[str]]:
    """(usable fragments, dropped short ones), in quote order, stripped."""
    keep, drop = [], []
    for part in _SPLIT.split(quote):
        part = part.strip()
        if part:
            (keep if meaningful(part, min_chars) else drop).append(part)
    return list(dict.fromkeys(keep)), drop


def proximity(s: int, e: int, others: list[tuple[int, int]], window: int) -> float:
    """Nearby evidence in [0, 1]: 1 next to another resolved anchor, falling to 0 at ``window`` away."""
    best = 0.0
    for a, b in others:
        gap = max(a - e, s - b, 0)
        if gap <= window:
            best = max(best, 1.0 - gap / (window + 1))
    return best


def pick(cands: list[tuple[int, int]], score: Scorer | None) -> tuple[int, int] | None:
    """The unique candidate, or the unique best-scoring one; None when still ambiguous."""
    if len(cands) == 1:
        return cands[0]
    if not cands or score is None:
        return None
    scored = sorted(((score(s, e), (s, e)) for s, e in cands), reverse=True)
    return scored[0][1] if scored[0][0] > scored[1][0] else None


def _find(source: str, text: str) -> tuple[list[tuple[int, int]], Method | None]:
    if found := find_exact(source, text):
        return found, "exact"
    if found := find_whitespace(source, text):
        return found, "whitespace"
    return [], None


def locate(source: str, quote: str, score: Scorer | None = None, *, min_chars: int = 8,
           window: int = 1200) -> AnchorResult:
    """Resolve one quote to source spans (see module docstring for the order and the rules)."""
    cands, method = _find(source, quote)
    if method is not None:
        chosen = pick(cands, score)
        if chosen is None:
            return AnchorResult(quote, "ambiguous", method, (), len(cands))
        return AnchorResult(quote, "matched", method, (chosen,), len(cands))
    return _locate_fragments(source, quote, score, min_chars, window)


def _locate_fragments(source: str, quote: str, score: Scorer | None, min_chars: int, window: int) -> AnchorResult:
    fragments, dropped = split_fragments(quote, min_chars)
    found = [(f, find_exact(source, f) or find_whitespace(source, f)) for f in fragments]
    found = [(f, c) for f, c in found if c]
    if not found:
        return AnchorResult(quote, "unmatched", None, (), 0, tuple(dropped))
    # Fragments of one quote sit together: a fragment's match near an already chosen fragment is
    # nearby evidence, added to the caller's score.
    chosen: list[tuple[int, int]] = [c[0] for _, c in found if len(c) == 1]

    def near(s: int, e: int) -> float:
        base = score(s, e) if score is not None else 0.0
        return base + proximity(s, e, chosen, window)

    for _, cands in found:
        if len(cands) > 1 and (best := pick(cands, near)) is not None:
            chosen.append(best)
    spans = tuple(sorted(set(chosen)))
    total = sum(len(c) for _, c in found)
    if not spans:
        return AnchorResult(quote, "ambiguous", "fragment", (), total, tuple(dropped))
    return AnchorResult(quote, "matched", "fragment", spans, total, tuple(dropped))
