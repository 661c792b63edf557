"""Contextual expansion from direct anchors through source relations (paper 3.4, B.3, G.2).

From each direct anchor ``[a, b)`` (source characters) of a finding:

- the enclosing function (innermost);
- implicated state: the finding's ``state_variables`` (``total`` also matches ``state.total``), or,
  when it names none, the state the anchor itself reads or writes; every function that writes,
  reads or (at top level) declares that state;
- callers of the enclosing function, and callees called from it within the analysis window
  (``window`` characters each side of the anchor, paper B.3's ~1,200);
- event bindings whose handler reaches the anchor: the handler contains it, or reaches its function
  in at most ``call_depth`` calls; HTML ``on*`` attributes included;
- rendering / scoring regions supported by the evidence: functions named in ``related_symbols`` or
  ``context_hints``.

Each context span keeps its reasons; identical regions are merged with all their reasons. Direct
wins over context: a finding's direct spans are cut out of its context spans (G.3: an enclosing
function is context outside the quoted interval). A finding without direct anchors (a missing
feature, or quotes that did not resolve) gets no context: expansion starts from an anchor.

Run: see ``tasks.attribution.api.attribute``.
"""
from __future__ import annotations

from dataclasses import dataclass

from tasks.attribution.analyzer import SourceModel
from tasks.attribution.normalize import NormalizedFinding
from tasks.attribution.tokens import merge_intervals


@dataclass(frozen=True)
class Relation:
    """One source relation from a direct anchor to a region (the trace keeps these)."""

    kind: str  # enclosing_function | state_write | state_read | state_declare | caller | callee | event_binding | evidence
    detail: str
    anchor_start: int
    anchor_end: int
    start: int
    end: int


@dataclass(frozen=True)
class ContextSpan:
    start: int
    end: int
    reasons: tuple[str, ...]

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)


def subtract(span: tuple[int, int], cuts: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``span`` minus the (merged, sorted) ``cuts``."""
    out, (s, e) = [], span
    for a, b in cuts:
        if b <= s or a >= e:
            continue
        if a > s:
            out.append((s, a))
        s = max(s, b)
    if s < e:
        out.append((s, e))
    return out


def _fname(model: SourceModel, i: int | None) -> str:
    if i is None:
        return "top level"
    return model.functions[i].name or f"anonymous {model.functions[i].kind}"


def _region(model: SourceModel, i: int | None, start: int, end: int) -> tuple[int, int]:
    """A function's range, or the statement itself when it is at top level."""
    return (model.functions[i].start, model.functions[i].end) if i is not None else (start, end)


def _var_matches(var: str, wanted: set[str]) -> str | None:
    """``total`` wanted matches ``total`` and ``state.total``; ``state.total`` matches itself or ``state``."""
    for w in wanted:
        if var == w or var.endswith("." + w) or w.startswith(var + "."):
            return w
    return None


def _callees(model: SourceModel, start: int, end: int) -> set[str]:
    return {c.callee for c in model.calls if start <= c.start and c.end <= end}


def reachers(model: SourceModel, target: int, depth: int) -> set[str]:
    """Names whose call reaches function ``target`` within ``depth`` hops (its own name included)."""
    name = model.functions[target].name
    found = {name} if name else set()
    frontier = set(found)
    for _ in range(depth - 1):
        callers = {model.functions[i].name for i in range(len(model.functions))
                   if model.functions[i].name and model.callees(i) & frontier} - found
        if not callers:
            break
        found |= callers
        frontier = callers
    return found


def relations_for_anchor(model: SourceModel, finding: NormalizedFinding, a: int, b: int, *, window: int,
                         call_depth: int) -> list[Relation]:
    rel: list[Relation] = []

    def add(kind: str, detail: str, region: tuple[int, int]) -> None:
        rel.append(Relation(kind, detail, a, b, region[0], region[1]))

    fi = model.enclosing(a, b)
    if fi is not None:
        add("enclosing_function", f"enclosing function {_fname(model, fi)}", _region(model, fi, a, b))
    wanted = {v for v in finding.state_variables if v}
    if not wanted:  # the state the anchor itself touches
        wanted = {acc.var for acc in model.accesses if a <= acc.start and acc.end <= b and acc.kind != "declare"}
    for acc in model.accesses if wanted else ():
        if (w := _var_matches(acc.var, wanted)) is not None:
            verb = {"write": "writes", "read": "reads", "declare": "defines"}[acc.kind]
            add(f"state_{acc.kind}", f"{_fname(model, acc.function)} {verb} state {acc.var}",
                _region(model, acc.function, acc.start, acc.end))
    if fi is not None and (name := model.functions[fi].name):
        for c in model.calls:
            if c.callee == name and not (model.functions[fi].start <= c.start < model.functions[fi].end):
                add("caller", f"{_fname(model, c.caller)} calls {name}", _region(model, c.caller, c.start, c.end))
        f = model.functions[fi]
        lo, hi = max(f.start, a - window), min(f.end, b + window)
        for callee in sorted(_callees(model, lo, hi)):
            for j in model.named(callee):
                if j != fi:
                    add("callee", f"{name} calls {callee}", _region(model, j, 0, 0))
    reach = reachers(model, fi, call_depth) if fi is not None else set()
    for ev in model.bindings:
        inside = ev.handler_start <= a and b <= ev.handler_end or ev.start <= a and b <= ev.end
        names = set(ev.handler_calls) | ({ev.handler_name} if ev.handler_name else set())
        if inside or names & reach:
            what = f"{ev.event} {'attribute' if ev.kind == 'attribute' else 'listener'}"
            add("event_binding", f"{what} reaches {_fname(model, fi) if fi is not None else 'the anchor'}",
                (ev.start, ev.end))
    for sym, where in [(s, "related_symbols") for s in finding.symbols] + [(s, "context_hints") for s in finding.hint_words]:
        for j in model.named(sym.split(".")[-1]):
            add("evidence", f"{sym} named in {where}", _region(model, j, 0, 0))
    return rel


def consolidate(relations: list[Relation], direct: list[tuple[int, int]]) -> list[ContextSpan]:
    """Merge identical regions with their reasons, then cut the direct spans out (direct wins)."""
    by_region: dict[tuple[int, int], list[str]] = {}
    for r in relations:
        reasons = by_region.setdefault((r.start, r.end), [])
        if r.detail not in reasons:
            reasons.append(r.detail)
    cuts = merge_intervals(direct)
    out = []
    for (s, e), reasons in sorted(by_region.items()):
        for ps, pe in subtract((s, e), cuts):
            out.append(ContextSpan(ps, pe, tuple(reasons)))
    return out


def expand(model: SourceModel, finding: NormalizedFinding, direct: list[tuple[int, int]], *, window: int = 1200,
           call_depth: int = 3) -> tuple[list[ContextSpan], list[Relation]]:
    """Context spans (with reasons) and the relations behind them, for one finding's direct spans."""
    relations: list[Relation] = []
    for a, b in merge_intervals(direct):
        relations.extend(relations_for_anchor(model, finding, a, b, window=window, call_depth=call_depth))
    return consolidate(relations, direct), relations
