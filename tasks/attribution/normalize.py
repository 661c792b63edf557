"""Issue normalisation (paper B.3): each judge finding becomes direct anchors plus hints.

Direct anchors are the finding's ``code_quotes`` (deduplicated, blank ones dropped). Hints are the
``related_symbols`` (function names; a trailing ``()`` is removed), the ``state_variables`` and the
identifiers named in ``context_hints`` (``"renderAccuracy reads total"`` hints at ``renderAccuracy``
and ``total``). Missing features have no quotes and so yield no direct anchors (paper B.2: absences
are not located at an arbitrary insertion point).

Departure from the paper: the paper also draws anchors from "error-subgraph fields"; our judge
schema (``schemas/llm/diagnosis.py``) has no such field, so quotes are the only direct anchors.

Run: ``python -c "from tasks.attribution.normalize import normalize; ..."`` on a ``Diagnosis``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from schemas.llm.diagnosis import Diagnosis, Finding

_IDENT = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
# Words of a hint that are English, not code: they never name a symbol.
_STOP = {
    "the", "a", "an", "and", "or", "of", "to", "in", "on", "for", "is", "are", "be", "by", "with", "that", "this",
    "it", "its", "only", "when", "not", "from", "function", "handler", "state", "variable", "reads", "writes",
    "calls", "click", "listener", "button", "display", "updates", "update", "render", "score", "event",
}


@dataclass(frozen=True)
class NormalizedFinding:
    key: str
    layer: str
    severity: str
    item_id: str | None
    quotes: tuple[str, ...]  # direct anchors
    symbols: tuple[str, ...]  # related_symbols, plain names
    state_variables: tuple[str, ...]
    hint_words: tuple[str, ...]  # identifiers named in context_hints

    @property
    def names(self) -> set[str]:
        """Every name the evidence points at, for disambiguation."""
        return set(self.symbols) | set(self.hint_words)


def _symbol(text: str) -> str:
    return re.sub(r"\s*\(.*\)\s*$", "", text.strip())


def _dedupe(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in items if i))


def hint_identifiers(hints: list[str]) -> tuple[str, ...]:
    """Code-like identifiers in free-text hints: camelCase, snake_case, dotted, or followed by ``()``."""
    out = []
    for hint in hints:
        for m in _IDENT.finditer(hint):
            word = m.group(0)
            code_like = "." in word or "_" in word or any(c.isupper() for c in word[1:]) or hint[m.end():m.end() + 1] == "("
            if code_like and word.lower() not in _STOP:
                out.append(word)
    return _dedupe(out)


def normalize_finding(finding: Finding, key: str, layer: str, severity: str) -> NormalizedFinding:
    return NormalizedFinding(
        key=key,
        layer=layer,
        severity=severity,
        item_id=finding.item_id,
        quotes=_dedupe([q for q in finding.code_quotes if q.strip()]),
        symbols=_dedupe([_symbol(s) for s in finding.related_symbols]),
        state_variables=_dedupe([s.strip() for s in finding.state_variables]),
        hint_words=hint_identifiers(finding.context_hints),
    )


def normalize(diagnosis: Diagnosis) -> list[NormalizedFinding]:
    """All findings of a diagnosis, keyed and ordered as ``Diagnosis.keyed_findings`` keys them."""
    return [normalize_finding(f, key, layer, severity) for key, layer, severity, f in diagnosis.keyed_findings()]
