"""Scoped source analysis: parse and query only the top-level statements the relations need.

``analyze`` (``tasks.attribution.analyzer``) parses every inline script of the page and runs every
query over all of it; for a 30 KB page that was most of the attribution cost. Here the scripts are
cut into top-level statements (``tasks.attribution.cut.top_level_starts``) and only the statements
that relations from the direct anchors can reach are parsed (each on its own, with
``included_ranges`` so offsets stay page offsets) and queried only where needed
(``QueryCursor.set_byte_range``; structure queries and state queries have separate ranges). What
is selected mirrors ``tasks.attribution.expand.relations_for_anchor`` and the disambiguation scorer
in ``api``:

- the statements holding the anchors (the enclosing functions lie inside them), structure queried
  over the anchor's ``window`` (paper B.3's analysis window: callees are read there), state over the
  anchor itself; for the scorer, the statements holding each candidate match;
- every place an implicated state variable is mentioned as a word (its writers and readers; state
  is queried at each such site), and the places that may declare a state root at top level
  (``let``/``const``/``var`` before the name), including roots ``X`` of ``X.total`` when ``total``
  is implicated, so ``state.total`` is state;
- every place that may define a related symbol, a hinted name or a callee (every mention except
  certain calls: ``x.name(`` and ``name(...)`` not followed by ``{``);
- then, to a fixed point: every mention of the enclosing functions' names (callers, bindings naming
  a handler that contains the anchor) and of every name whose calls reach the anchor's function
  within ``call_depth`` hops (bindings whose handler reaches it).

Mentions are found by word search on the raw text, so strings and comments can only ADD statements,
never hide one. The result is a subset of the full model holding every item those relations look
at, so the trace equals the whole-page analysis; ``tests/test_attr_scope.py`` checks this on the G.2
fixture and on random pages (hypothesis), and the bench checks it on every page it times.

Cuts are never made inside a template literal or block comment spanning lines; a cut that is still
wrong (an expression spread over lines at the top indent) leaves a statement that does not parse,
and any selected statement with a syntax error makes the whole page fall back to ``analyze``. The
script bodies are found in the markup without parsing them (``tasks.attribution.cut``; checked
against tree-sitter-html's own parse of the rest of the markup when it is not strictly well-formed).

Departure: on a page whose scripts have a syntax error in a statement NOT selected, the whole-page
parse's error recovery may mangle later code while the scoped parse does not; the two traces may
then differ (the scoped one reads the code as written).

Run: ``python -c "from tasks.attribution.scope import ScopedAnalyzer; s = ScopedAnalyzer(page)"``;
``attribute(..., scoped=False)`` runs the whole-page analysis instead.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Iterable

import numpy as np
import tree_sitter as ts

from tasks.attribution.analyzer import (
    EventBinding, SourceModel, _attribute_bindings, _is_js, _is_js_tag, _Offsets, _script_nodes, analyze, model_from_roots,
)
from tasks.attribution.cut import (
    ON_ATTRIBUTE, may_declare, member_root, not_definition, components, find_words, predict_scripts, strict_scripts,
    top_level_starts,
)
from tasks.attribution.grammar import html_language, js_language, load_query, matches

@dataclass(frozen=True)
class ScopeStats:
    """What the scoped analysis of one response did (kept on the trace; the bench reports it)."""

    script_chars: int  # characters of JavaScript in the page
    parsed_chars: int  # characters parsed (the whole page's scripts after a fallback)
    fallback: bool  # a selected statement did not parse: the whole page was analysed
    html_fast: bool  # script bodies were found without parsing the markup's full text


class ScopedAnalyzer:
    """One page, cut into top-level statements; ``model()`` analyses the selected ones."""

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise TypeError(f"ScopedAnalyzer takes the page as str, got {type(text).__name__}; decode bytes as UTF-8 first")
        self.text = text
        self.data = text.encode("utf-8")
        self.off = _Offsets(text, self.data)
        self._newlines = np.flatnonzero(np.frombuffer(self.data, dtype=np.uint8) == 10).tolist()
        self.html_fast = False
        self.script_ranges, self.html_bindings = self._html()
        # chunk k spans [starts[k], ends[k]) in page characters; chunks never cross scripts
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.script_of: list[int] = []
        for si, (s, e) in enumerate(self.script_ranges):
            cuts = [s + c for c in top_level_starts(text[s:e])]
            self.starts += cuts
            self.ends += cuts[1:] + [e]
            self.script_of += [si] * len(cuts)
        self.selected: set[int] = set()
        self.want: list[tuple[int, int]] = []  # character ranges to query (inside selected statements)
        self.want_state: list[tuple[int, int]] = []  # where state accesses are read (a subset of want)
        self.mentioned_state: set[str] = set()
        self.mentioned: set[str] = set()
        self.defined: set[str] = set()
        self.declared: set[str] = set()
        self.fallback = False
        self.parsed_chars = 0  # characters parsed so far (the bench reports it)
        self._trees: dict[int, ts.Node] = {}  # one parse per selected statement
        self._model: SourceModel | None = None
        self._model_key: frozenset[int] | None = None
        self._parser = ts.Parser(js_language())
        self._queries: dict = {}  # query matches per (statement, range): rounds re-use them
        self._lo: dict[int, int] = {}  # statement -> span of the structure ranges wanted in it
        self._hi: dict[int, int] = {}
        self._folded = 0  # how many of ``want`` are in _lo/_hi
        self._sites: dict[str, list[tuple[int, int]]] = {}

    def _has_on_attribute(self, scripts: list[tuple[int, int, int]]) -> bool:
        """Whether the markup outside the script bodies may hold an ``on*`` attribute."""
        pos = 0
        for _, body, end in scripts:
            if ON_ATTRIBUTE.search(self.data, pos, body):
                return True
            pos = end
        return ON_ATTRIBUTE.search(self.data, pos) is not None

    def _html(self) -> tuple[list[tuple[int, int]], list[EventBinding]]:
        """Script ranges (page characters) and HTML ``on*`` bindings. The markup is parsed without
        the predicted script bodies (``predict_scripts``), which are most of the page; the prediction
        must agree with every ``script_element`` of that parse, else the whole page is parsed."""
        data, parser = self.data, ts.Parser(html_language())
        strict = strict_scripts(data)
        if strict is not None and not self._has_on_attribute(strict):  # no markup parse needed
            self.html_fast = True
            return [(self.off(b), self.off(e)) for t, b, e in strict if _is_js_tag(data[t:b])], []
        predicted = predict_scripts(data)
        if predicted:
            keep, pos = [], 0
            for a, b in predicted:
                if a > pos:
                    keep.append(self._byte_range(pos, a))
                pos = b
            if pos < len(data):
                keep.append(self._byte_range(pos, len(data)))
            parser.included_ranges = keep
            root = parser.parse(data).root_node
            tags = [(m["script.start"][0], m["script.end"][0])
                    for m in matches(load_query("html_scripts", html=True), root) if "script.end" in m]
            # error recovery can read a start tag that a raw-text element or comment holds (the removed body
            # ended that element): a parse that needed it does not vouch for the prediction
            if not root.has_error and [(a.end_byte, b.start_byte) for a, b in tags] == predicted:
                self.html_fast = True
                # an on* attribute with a quoted value needs ``on<letters> = "`` in the markup
                markup = b"".join(data[r.start_byte:r.end_byte] for r in keep)
                bindings = (_attribute_bindings(root, data, self.off) if ON_ATTRIBUTE.search(markup) else [])
                scripts = [(a, b) for (a, b), (tag, _) in zip(predicted, tags) if _is_js(data, tag)]
                return [(self.off(a), self.off(b)) for a, b in scripts], bindings
            parser = ts.Parser(html_language())
        root = parser.parse(data).root_node
        html_matches = matches(load_query("html", html=True), root)  # one pass for both
        scripts = _script_nodes(root, data, html_matches)
        return ([(self.off(n.start_byte), self.off(n.end_byte)) for n in scripts],
                _attribute_bindings(root, data, self.off, html_matches))

    def stats(self) -> ScopeStats:
        return ScopeStats(sum(e - s for s, e in self.script_ranges), self.parsed_chars, self.fallback, self.html_fast)

    # -- selection: statements to parse, and character ranges to query in them ---------------------
    def select_regions(self, regions: Iterable[tuple[int, int]], *, query: tuple[int, int] | None = None) -> None:
        """Parse every statement overlapping the regions ``[a, b)``; query the structure over ``query``
        (default: the regions) inside them, and state (declarations, writes, reads) over the regions."""
        for a, b in regions:
            k = max(bisect.bisect_right(self.starts, a) - 1, 0)
            while k < len(self.starts) and self.starts[k] < max(b, a + 1):
                if self.ends[k] > a:
                    self.selected.add(k)
                k += 1
            self.want.append(query or (a, b))
            self.want_state.append((a, b))

    def _select_sites(self, sites: Iterable[tuple[int, int]], state: bool = False) -> None:
        for a, b in sites:
            self.selected.add(bisect.bisect_right(self.starts, a) - 1)
            self.want.append((a, b))
            if state:
                self.want_state.append((a, b))

    def _find(self, names: set[str]) -> list[tuple[int, int]]:
        """Word occurrences of ``names`` in the scripts (each name is searched once per page)."""
        out: list[tuple[int, int]] = []
        for name in names:
            if name not in self._sites:
                self._sites[name] = [w for s, e in self.script_ranges for w in find_words(self.text, (name,), s, e)]
            out += self._sites[name]
        return out

    def select_mentions(self, names: Iterable[str], state: bool = False) -> None:
        """Every place one of ``names`` occurs as a word (code, string or comment); with ``state``,
        state accesses are read there too (else calls, functions and bindings only)."""
        new = {n for n in names if n} - (self.mentioned_state if state else self.mentioned)
        self.mentioned |= new
        if state:
            self.mentioned_state |= new
        self._select_sites(self._find(new), state)

    def select_definitions(self, names: Iterable[str]) -> None:
        """Every place that may define one of ``names`` (a superset: every mention but certain calls)."""
        new = {n for n in names if n} - self.mentioned - self.defined
        self.defined |= new
        text = self.text
        # a name that only ever occurs as ``.name(`` (DOM calls: getElementById) defines nothing here
        new = {n for n in new if text.count(n) != text.count(f".{n}(")}
        self._select_sites(w for w in self._find(new) if not not_definition(text, *w))

    def select_declarations(self, names: Iterable[str]) -> None:
        """Every place that may declare one of ``names`` at top level."""
        new = {n for n in names if n} - self.declared
        self.declared |= new
        self._select_sites((w for w in self._find(new) if may_declare(self.text, w[0])), state=True)

    def select_state(self, variables: Iterable[str]) -> None:
        """What relations over implicated state read: accesses to it and the declarations of its roots."""
        variables = [v for v in variables if v]
        words: set[str] = set()
        for var in variables:
            words |= components(var)
        if not words - self.mentioned_state:
            return
        self.select_mentions(words, state=True)
        roots = set(words)
        # X in ``X.total`` / ``X?.total``: is X top-level state? (the word before the dot)
        for a, _ in self._find({var.split(".")[-1] for var in variables}):
            if (root := member_root(self.text, a)) is not None:
                roots.add(root)
        self.select_declarations(roots)

    # -- analysis --------------------------------------------------------------------------------
    def _byte(self, char: int) -> int:
        return self.off.byte(char)

    def _range(self, a: int, b: int) -> ts.Range:
        return self._byte_range(self._byte(a), self._byte(b))

    def _byte_range(self, ba: int, bb: int) -> ts.Range:
        def point(byte: int) -> ts.Point:
            row = bisect.bisect_left(self._newlines, byte)  # newlines before this byte
            return ts.Point(row, byte - (self._newlines[row - 1] + 1 if row else 0))

        return ts.Range(point(ba), point(bb), ba, bb)

    def _chunk_root(self, k: int) -> ts.Node:
        if k not in self._trees:
            self._parser.included_ranges = [self._range(self.starts[k], self.ends[k])]
            self._trees[k] = self._parser.parse(self.data).root_node
            self.parsed_chars += self.ends[k] - self.starts[k]
        return self._trees[k]

    def _fold(self) -> None:
        """Fold the structure ranges wanted since the last call into per-statement spans."""
        starts, ends, n, lo, hi = self.starts, self.ends, len(self.starts), self._lo, self._hi
        for a, b in self.want[self._folded:]:
            if b <= a:
                b = a + 1
            k = bisect.bisect_right(starts, a) - 1
            if k < 0:
                k = 0
            while k < n and starts[k] < b:
                if ends[k] > a:
                    ca = a if a > starts[k] else starts[k]
                    cb = b if b < ends[k] else ends[k]
                    if k not in lo:
                        lo[k], hi[k] = ca, cb
                    else:
                        if ca < lo[k]:
                            lo[k] = ca
                        if cb > hi[k]:
                            hi[k] = cb
                k += 1
        self._folded = len(self.want)

    def _state_sites(self) -> dict[int, list[tuple[int, int]]]:
        """Statement -> the merged ranges where state is wanted in it (clipped to the statement)."""
        starts, ends, n = self.starts, self.ends, len(self.starts)
        per: dict[int, list[tuple[int, int]]] = {}
        for a, b in self.want_state:
            if b <= a:
                b = a + 1
            k = max(bisect.bisect_right(starts, a) - 1, 0)
            while k < n and starts[k] < b:
                if ends[k] > a:
                    per.setdefault(k, []).append((max(a, starts[k]), min(b, ends[k])))
                k += 1
        out = {}
        for k, spans in per.items():
            merged: list[tuple[int, int]] = []
            for a, b in sorted(set(spans)):
                if merged and a <= merged[-1][1]:
                    merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
                else:
                    merged.append((a, b))
            out[k] = merged
        return out

    def model(self) -> SourceModel:
        """The model of the selected statements (the full ``analyze`` model after a fallback)."""
        key = (frozenset(self.selected), len(self.want), len(self.want_state))
        if self._model is not None and (self.fallback or key == self._model_key):
            return self._model
        chunks = sorted(self.selected)
        roots = [self._chunk_root(k) for k in chunks]
        if any(r.has_error for r in roots):
            self.fallback = True
            self.parsed_chars += sum(e - s for s, e in self.script_ranges)
            self._model = analyze(self.text)
            return self._model
        # per statement, each query group covers the span of the ranges wanted inside it (one cursor
        # per statement and group); wanted ranges only grow, so only the new ones are folded in
        self._fold()
        lo, hi = self._lo, self._hi
        scoped = [(root, (self._byte(lo[k]), self._byte(hi[k]))) for k, root in zip(chunks, roots) if k in lo]
        # state is read at each site (a cursor per site): a span over far-apart sites of one long
        # statement would match every identifier and assignment between them
        sites = self._state_sites()
        state = [(root, tuple((self._byte(a), self._byte(b)) for a, b in sites[k]))
                 for k, root in zip(chunks, roots) if k in sites]
        self._model = model_from_roots(self.text, self.data, self.off, self.script_ranges, scoped, self.html_bindings,
                                       self._queries, state)
        self._model_key = key
        return self._model


def anchor_needs(model: SourceModel, a: int, b: int, window: int, call_depth: int) -> set[str]:
    """Names whose statements the relations from anchor ``[a, b)`` look at (see ``relations_for_anchor``):
    the enclosing functions (callers, named handlers containing the anchor) and every name reaching
    the innermost enclosing function within ``call_depth`` calls (bindings naming or calling it)."""
    from tasks.attribution.expand import reachers

    fi = model.enclosing(a, b)
    if fi is None:
        return set()
    names: set[str] = set()
    i: int | None = fi
    # each name is needed at every mention: its callers and the bindings naming it
    while i is not None:  # the enclosing chain: innermost and every function around it
        if model.functions[i].name:
            names.add(model.functions[i].name)
        i = model._parent[i]
    f = model.functions[fi]
    names |= reachers(model, fi, call_depth)
    return names


def anchor_callees(model: SourceModel, a: int, b: int, window: int) -> set[str]:
    """Names called inside the enclosing function within the window (their definitions are context)."""
    from tasks.attribution.expand import _callees

    fi = model.enclosing(a, b)
    if fi is None:
        return set()
    f = model.functions[fi]
    return _callees(model, max(f.start, a - window), min(f.end, b + window))
