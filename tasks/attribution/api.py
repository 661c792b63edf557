"""Diagnostic attribution: judge findings -> direct / context code spans -> per-token GRPO weights.

One entry point, ``attribute(response, html_offset, diagnosis)``: the application source is
``response[html_offset:]`` (h, paper G.3); each finding's quotes are located (``locate``), expanded
through source relations (``expand``), and returned as an ``AttributionTrace`` whose spans are in
SOURCE coordinates ``[a, b)`` with ``h`` kept beside them; ``FindingTrace.direct_spans_response()``
and ``context_spans_response()`` give RESPONSE offsets ``[h + a, h + b)``.

The source is analysed in scope by default (``tasks.attribution.scope``: only the top-level
statements the relations reach are parsed and queried; the trace is the same as with
``scoped=False``, the whole-page analysis). ``trace.scope`` says what that analysis did.

``token_weights(trace, offsets, advantage)`` turns a trace into per-token weights by the rule in
``tasks.attribution.weights`` (``offsets`` as a list of pairs or the ``(T, 2)`` array of
``tokens.token_offsets_array``, the training hot path); ``score_additions(...)`` is what
``rubricrl score`` adds to its output.

Run: ``python -c "from tasks.attribution.api import attribute; ..."``; tests in tests/test_attr_*.py.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from schemas.config.attribution import AttributionConfig, WeightRule
from schemas.llm.diagnosis import Diagnosis
from tasks.attribution.analyzer import SourceModel, analyze
from tasks.attribution.expand import ContextSpan, Relation, expand, merge_intervals
from tasks.attribution.locate import AnchorResult, Scorer, locate, proximity
from tasks.attribution.normalize import NormalizedFinding, normalize
from tasks.attribution.scope import ScopedAnalyzer, ScopeStats, anchor_callees, anchor_needs
from tasks.attribution.tokens import load_tokenizer, token_membership, token_offsets
from tasks.attribution.weights import CONTEXT, DIRECT, Status, weights_from_membership

_IDENT = re.compile(r"[A-Za-z_$][\w$]*")


@dataclass
class FindingTrace:
    """One finding's attribution, source coordinates (add ``h`` for the response)."""

    key: str  # layer.severity.index, as findings are keyed in score output
    layer: str
    severity: str
    item_id: str | None
    anchors: list[AnchorResult]
    direct_spans: list[tuple[int, int]]
    context_spans: list[ContextSpan]
    relations: list[Relation]
    h: int = 0

    def direct_spans_response(self) -> list[list[int]]:
        return [[self.h + a, self.h + b] for a, b in self.direct_spans]

    def context_spans_response(self) -> list[list[Any]]:
        return [[self.h + c.start, self.h + c.end, c.reason] for c in self.context_spans]


@dataclass
class AttributionTrace:
    """The whole response's attribution; stored per response in the ``attributions`` stage."""

    h: int
    source_len: int
    findings: list[FindingTrace] = field(default_factory=list)
    scope: ScopeStats | None = field(default=None, repr=False, compare=False)  # what the scoped analysis did

    @property
    def status(self) -> Status:
        if not self.findings:
            return "no_findings"
        return "localised" if any(f.direct_spans for f in self.findings) else "unlocalised"

    def direct_response(self) -> list[tuple[int, int]]:
        """All findings' direct spans, response offsets (the set behind T_dir)."""
        return [(self.h + a, self.h + b) for f in self.findings for a, b in f.direct_spans]

    def context_response(self) -> list[tuple[int, int]]:
        return [(self.h + c.start, self.h + c.end) for f in self.findings for c in f.context_spans]


ModelFor = Callable[[list[tuple[int, int]], set[str]], SourceModel]
"""``model_for(regions, state)``: a model holding at least these regions and these state variables."""


def _scorer(model_for: ModelFor, finding: NormalizedFinding, neighbours: list[tuple[int, int]],
            window: int) -> Scorer:
    """Evidence for one match among several: enclosing function named in the finding, implicated
    state used there, and other anchors of the same finding nearby (paper B.4)."""
    wanted = set(finding.state_variables)

    def score(s: int, e: int) -> float:
        model = model_for([(s, e)], wanted)
        value = 0.0
        fi = model.enclosing(s, e)
        lo, hi = (model.functions[fi].start, model.functions[fi].end) if fi is not None else (s - window, e + window)
        if fi is not None and model.functions[fi].name in finding.symbols:
            value += 2.0
        elif fi is not None and model.functions[fi].name in finding.hint_words:
            value += 1.0
        if wanted:
            used = {a.var for a in model.accesses if lo <= a.start and a.end <= hi}
            value += sum(1.0 for w in wanted if any(u == w or u.endswith("." + w) for u in used))
        value += 0.5 * proximity(s, e, neighbours, window)
        return value

    return score


def _locate_finding(source: str, model_for: ModelFor, f: NormalizedFinding,
                    cfg: AttributionConfig) -> list[AnchorResult]:
    first = [locate(source, q, _scorer(model_for, f, [], cfg.window_chars), min_chars=cfg.min_fragment_chars,
                    window=cfg.window_chars) for q in f.quotes]
    resolved = [s for r in first for s in r.spans]
    if not resolved:
        return first
    # second pass: ambiguous quotes may be settled by the finding's other, resolved anchors nearby
    out = []
    for r in first:
        if r.status == "ambiguous":
            r = locate(source, r.quote, _scorer(model_for, f, resolved, cfg.window_chars),
                       min_chars=cfg.min_fragment_chars, window=cfg.window_chars)
        out.append(r)
    return out


def _scoped_model_for(scope: ScopedAnalyzer) -> ModelFor:
    def model_for(regions: list[tuple[int, int]], state: set[str]) -> SourceModel:
        # the enclosing function is found at the candidate itself; accesses to the wanted state are
        # queried wherever that state is mentioned, so ``used`` below sees all of them
        scope.select_regions(regions)
        scope.select_state(state)
        return scope.model()

    return model_for


def scope_for_expansion(scope: ScopedAnalyzer, needs: list[tuple[NormalizedFinding, list[tuple[int, int]]]],
                        cfg: AttributionConfig) -> SourceModel:
    """Grow the scoped selection to everything expansion from these direct spans looks at, to a
    fixed point (see ``tasks.attribution.scope``), and return that model."""
    source = scope.text
    window = cfg.window_chars
    for f, direct in needs:  # round 1: the anchors only (a small model to find the names they need)
        for a, b in merge_intervals(direct):  # the window: callees of the enclosing function are read there
            scope.select_regions([(a, b)], query=(a - window, b + window))
    first = True
    while True:
        model = scope.model()
        if scope.fallback:
            return model
        names: set[str] = set()
        callees: set[str] = set()
        touched: set[str] = set()
        for f, direct in needs:
            for a, b in merge_intervals(direct):
                names |= anchor_needs(model, a, b, window, cfg.call_depth)
                callees |= anchor_callees(model, a, b, window)
                if not f.state_variables:
                    touched |= {x.var for x in model.accesses if a <= x.start and x.end <= b and x.kind != "declare"}
        before = (len(scope.selected), len(scope.want))
        if first:  # what the findings' own evidence needs
            first = False
            for f, direct in needs:
                scope.select_state(f.state_variables)
                scope.select_definitions(s.split(".")[-1] for s in f.symbols + f.hint_words)
                if not f.state_variables:  # the state the anchor touches: which of its words are top-level state?
                    scope.select_declarations(w for a, b in direct for w in _IDENT.findall(source, a, b))
        scope.select_mentions(names)
        scope.select_definitions(callees)
        scope.select_state(touched)
        if (len(scope.selected), len(scope.want)) == before:
            return model


def attribute(response: str, html_offset: int, diagnosis: Diagnosis | dict, config: AttributionConfig | None = None,
              *, model: SourceModel | None = None, scoped: bool = True) -> AttributionTrace:
    """Per-finding direct and context spans for one response (see module docstring).

    ``model``: a full ``analyze`` model to use as is. Otherwise ``scoped`` (default) analyses only
    the statements the relations need (``tasks.attribution.scope``, same trace, much less parsing);
    ``scoped=False`` analyses the whole page first.
    """
    cfg = config or AttributionConfig()
    if not isinstance(response, str):
        raise TypeError(f"response must be str, got {type(response).__name__}")
    if not 0 <= html_offset <= len(response):
        raise ValueError(f"html_offset={html_offset} is outside the response (length {len(response)}); pass the "
                         "character offset where the HTML starts in the response")
    if isinstance(diagnosis, dict):
        diagnosis = Diagnosis.model_validate(diagnosis)
    source = response[html_offset:]
    findings = normalize(diagnosis)
    trace = AttributionTrace(h=html_offset, source_len=len(source))
    scope: ScopedAnalyzer | None = None
    if findings and model is None and any(f.quotes for f in findings):
        if scoped:
            scope = ScopedAnalyzer(source)
        else:
            model = analyze(source)
    model_for: ModelFor = _scoped_model_for(scope) if scope is not None else (lambda regions, state: model)
    located = []
    for f in findings:
        anchors = _locate_finding(source, model_for, f, cfg) if f.quotes else []
        located.append((f, anchors, sorted({s for a in anchors for s in a.spans})))
    if scope is not None and any(direct for _, _, direct in located):
        model = scope_for_expansion(scope, [(f, direct) for f, _, direct in located if direct], cfg)
    trace.scope = scope.stats() if scope is not None else None
    for f, anchors, direct in located:
        context, relations = (expand(model, f, direct, window=cfg.window_chars, call_depth=cfg.call_depth)
                              if direct else ([], []))
        trace.findings.append(FindingTrace(f.key, f.layer, f.severity, f.item_id, anchors, direct, context,
                                           relations, html_offset))
    return trace


def token_weights(trace: AttributionTrace | None, offsets: list[tuple[int, int]] | np.ndarray, advantage: float,
                  config: AttributionConfig | None = None, rule: WeightRule = "sign") -> np.ndarray | None:
    """(T,) weights for the response tokens with these character spans; None for a missing diagnosis
    (no reward: the response is dropped, paper B.4)."""
    if trace is None:
        return None
    membership = token_membership(offsets, trace.direct_response(), trace.context_response())
    return weights_from_membership(membership, float(advantage), trace.status, config, rule)


def membership_counts(trace: AttributionTrace, offsets: list[tuple[int, int]]) -> dict[str, int]:
    m = token_membership(offsets, trace.direct_response(), trace.context_response())
    return {"n_tokens": int(len(m)), "n_direct_tokens": int((m == DIRECT).sum()),
            "n_context_tokens": int((m == CONTEXT).sum())}


def score_additions(response: str, html_offset: int, diagnosis: Diagnosis | dict, advantage: float | None = None,
                    tokenizer_dir: str | Path | None = None, config: AttributionConfig | None = None,
                    rule: WeightRule = "sign") -> dict:
    """The keys ``rubricrl score`` adds: per-finding spans, and token weights given both options.

    Returns ``{"findings": {key: {"direct_spans": [[s, e], ...], "context_spans": [[s, e, reason], ...]}},
    "attribution_status": ...}`` plus ``"token_weights"`` and ``"token_offsets"`` when ``advantage`` and
    ``tokenizer_dir`` are both given. Offsets are response characters. Here the response is only text,
    so its ids come from encoding it once; in training the generated ids are used instead
    (``tasks.attribution.tokens.token_offsets``), never a re-tokenisation.
    """
    if (advantage is None) != (tokenizer_dir is None):
        raise ValueError("token weights need both --advantage A and --tokenizer DIR; pass both or neither")
    trace = attribute(response, html_offset, diagnosis, config)
    out: dict[str, Any] = {
        "attribution_status": trace.status,
        "findings": {f.key: {"direct_spans": f.direct_spans_response(), "context_spans": f.context_spans_response()}
                     for f in trace.findings},
    }
    if advantage is not None and tokenizer_dir is not None:
        tok = load_tokenizer(tokenizer_dir)
        ids = tok.encode(response, add_special_tokens=False).ids
        offsets = token_offsets(ids, tok, expected_text=None)
        weights = token_weights(trace, offsets, float(advantage), config, rule)
        out["token_weights"] = [round(float(w), 6) for w in weights]
        out["token_offsets"] = [[int(s), int(e)] for s, e in offsets]
    return out


def annotate_findings(diagnosis: dict, additions: dict) -> dict:
    """Copy of a diagnosis dict whose findings carry their ``direct_spans`` / ``context_spans``."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in diagnosis.items()}
    for key, spans in additions.get("findings", {}).items():
        layer, severity, index = key.rsplit(".", 2)
        items = [dict(x) for x in out[layer][severity]]
        items[int(index)].update(spans)
        out[layer] = {**out[layer], severity: items}
    return out


def trace_row(trace: AttributionTrace, response_id: str, query_id: str | None = None, *,
              advantage: float | None = None, offsets: list[tuple[int, int]] | None = None,
              rule: WeightRule = "sign") -> dict:
    """One row of the ``attributions`` stage (``schemas.contracts.attribution.ATTRIBUTIONS_SCHEMA``), source coordinates;
    ``rule``: the weight rule the trainer applies to this response's tokens (``weight_mode``)."""
    span = lambda s, e: {"start": s, "end": e}  # noqa: E731
    row: dict[str, Any] = {
        "response_id": response_id, "query_id": query_id, "html_offset": trace.h, "source_len": trace.source_len,
        "status": trace.status, "n_findings": len(trace.findings),
        "n_localised": sum(1 for f in trace.findings if f.direct_spans),
        "findings": [{
            "key": f.key, "layer": f.layer, "severity": f.severity, "item_id": f.item_id,
            "anchors": [{"quote": a.quote, "status": a.status, "method": a.method, "candidates": a.candidates,
                         "spans": [span(s, e) for s, e in a.spans]} for a in f.anchors],
            "direct_spans": [span(s, e) for s, e in f.direct_spans],
            "context_spans": [{"start": c.start, "end": c.end, "reasons": list(c.reasons)} for c in f.context_spans],
            "relations": [{"kind": r.kind, "detail": r.detail, "anchor_start": r.anchor_start,
                           "anchor_end": r.anchor_end, "start": r.start, "end": r.end} for r in f.relations],
        } for f in trace.findings],
        "advantage": advantage, "weight_mode": rule,
        "n_tokens": None, "n_direct_tokens": None, "n_context_tokens": None,
    }
    if offsets is not None:
        row.update(membership_counts(trace, offsets))
    return row


def traces_table(rows: list[dict]):  # -> pa.Table
    """The ``attributions`` stage table from ``trace_row`` dicts."""
    import pyarrow as pa

    from schemas.contracts.attribution import ATTRIBUTIONS_SCHEMA

    return pa.Table.from_pylist(rows, schema=ATTRIBUTIONS_SCHEMA)
