"""Lightweight source analyzer for one HTML application (paper B.3), built on tree-sitter.

Every inline ``<script>`` of the page is parsed as ONE JavaScript program with ``included_ranges``,
so tree-sitter's offsets are page offsets. Tree-sitter reports BYTE offsets; everything here is
converted to CHARACTER offsets of the page (``str`` indices), which is what spans and token
alignment use. The patterns are the ``.scm`` files in ``queries/`` (table-driven tests in
``tests/test_attr_queries.py``):

- functions, arrow functions and methods, named from their declarators or keys;
- approximate calls between them (callee by name);
- state: top-level ``let``/``const``/``var`` and the properties of top-level objects
  (``state.total``), with their writes and reads;
- event bindings: ``addEventListener``, ``on*`` properties and HTML ``on*`` attributes, with the
  handler's range (an inline function, or the named function it refers to).

The query files are matched in two groups (``QUERY_GROUPS``: structure and state), each group in
one traversal. ``model_from_roots`` builds the model from any set of parsed program roots, each
with the byte range its queries are limited to: ``analyze`` gives it every script whole; the scoped
analyzer (``tasks.attribution.scope``, used by ``api.attribute``) only the statements it needs.

Strings and comments never produce relations: tree-sitter does not see code inside them (the paper
masks them with regexes; a parser makes that exact). Like the paper's analyzer this approximates
selected code-property relations; it is not a program analysis: names are not resolved by scope
(a local ``total`` shadowing the global is counted as the global), and calls resolve by name.

Run: ``python -c "from tasks.attribution.analyzer import analyze; print(analyze(open('app.html').read()))"``.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

import numpy as np
import tree_sitter as ts

from tasks.attribution.grammar import Root, all_matches, html_language, js_language, load_query, matches

# Script types a browser runs as JavaScript; others (JSON, templates, babel) are not analysed.
JS_TYPES = {"", "text/javascript", "application/javascript", "module", "text/ecmascript", "application/ecmascript"}
_TYPE_RE = re.compile(r"""\btype\s*=\s*["']?([^"'\s>]+)""", re.I)


@dataclass(frozen=True)
class Function:
    name: str | None
    kind: str  # function | arrow | method | generator
    start: int  # of the defining node (declarator, key, method), page characters
    end: int


@dataclass(frozen=True)
class Call:
    callee: str
    start: int
    end: int
    caller: int | None  # index into SourceModel.functions (innermost), None at top level


@dataclass(frozen=True)
class StateAccess:
    var: str  # "total" or "state.total"
    kind: str  # read | write | declare
    start: int
    end: int
    function: int | None


@dataclass(frozen=True)
class EventBinding:
    event: str  # "click"
    kind: str  # addEventListener | property | attribute
    target: str  # source text of the target expression, or the tag name for attributes
    start: int
    end: int
    handler_start: int
    handler_end: int
    handler_name: str | None  # a named handler function, when the handler is a reference
    handler_calls: tuple[str, ...] = ()  # callees inside an inline handler or attribute


@dataclass
class SourceModel:
    """What the analyzer extracted; every offset is a page character offset."""

    text: str
    script_ranges: list[tuple[int, int]]
    functions: list[Function]
    calls: list[Call]
    state_vars: set[str]
    accesses: list[StateAccess]
    bindings: list[EventBinding]
    _starts: list[int] = field(default_factory=list, repr=False)
    _by_name: dict[str, list[int]] = field(default_factory=dict, repr=False)
    _callees: dict[int, set[str]] = field(default_factory=dict, repr=False)
    _call_starts: list[int] = field(default_factory=list, repr=False)
    _parent: list[int | None] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._starts = [f.start for f in self.functions]
        self._by_name = {}
        for i, f in enumerate(self.functions):
            if f.name:
                self._by_name.setdefault(f.name, []).append(i)
        self._callees = {}
        # functions nest: the parent of each is the innermost earlier function still open
        self._parent, stack = [], []
        for i, f in enumerate(self.functions):
            while stack and self.functions[stack[-1]].end < f.end:
                stack.pop()
            self._parent.append(stack[-1] if stack else None)
            stack.append(i)

    def enclosing(self, start: int, end: int) -> int | None:
        """Index of the innermost function whose range contains [start, end)."""
        i: int | None = bisect.bisect_right(self._starts, start) - 1
        while i is not None and i >= 0:
            f = self.functions[i]
            if f.start <= start and end <= f.end:
                return i
            i = self._parent[i]
        return None

    def named(self, name: str) -> list[int]:
        return self._by_name.get(name, [])

    def callees(self, i: int) -> set[str]:
        """Names called anywhere inside function i (nested callbacks included)."""
        if i not in self._callees:
            f = self.functions[i]
            if len(self._call_starts) != len(self.calls):
                self._call_starts = [c.start for c in self.calls]  # calls are sorted by start
            lo = bisect.bisect_left(self._call_starts, f.start)
            hi = bisect.bisect_left(self._call_starts, f.end)
            self._callees[i] = {c.callee for c in self.calls[lo:hi] if c.end <= f.end}
        return self._callees[i]


    def in_script(self, start: int, end: int) -> bool:
        return any(a <= start and end <= b for a, b in self.script_ranges)


class _Offsets:
    """Byte offset <-> character offset of the page (identity for ASCII pages)."""

    def __init__(self, text: str, data: bytes) -> None:
        self.ascii = len(text) == len(data)
        if not self.ascii:
            lead = (np.frombuffer(data, dtype=np.uint8) & 0xC0) != 0x80  # (B,) bytes that start a character
            # chars_before[b]: characters starting before byte b, (B+1,); maps a byte to its character
            self.chars_before = np.zeros(len(data) + 1, dtype=np.int64)
            np.cumsum(lead, out=self.chars_before[1:])
            # char_start[c]: byte offset of character c (and of the end), (C+1,)
            self.char_start = np.append(np.flatnonzero(lead), len(data))

    def __call__(self, byte: int) -> int:
        return byte if self.ascii else self.chars_before.item(byte)

    def byte(self, char: int) -> int:
        return char if self.ascii else self.char_start.item(char)


def _is_js_tag(tag: bytes) -> bool:
    """A script the browser runs as JavaScript, by the ``type=`` of its start tag's text."""
    found = _TYPE_RE.search(tag.decode("utf-8", "replace"))
    return (found.group(1).lower() if found else "") in JS_TYPES


def _is_js(data: bytes, start_tag: ts.Node) -> bool:
    return _is_js_tag(data[start_tag.start_byte:start_tag.end_byte])


def _script_nodes(html_root: ts.Node, data: bytes, html_matches: list | None = None) -> list[ts.Node]:
    out = []
    for m in html_matches if html_matches is not None else matches(load_query("html", html=True), html_root):
        if "script.code" in m and _is_js(data, m["script.start"][0]):
            out.append(m["script.code"][0])
    return out


def _functions(roots: list[Root], data: bytes, off: _Offsets, cache: dict) -> list[Function]:
    kinds = {"arrow_function": "arrow", "method_definition": "method", "generator_function": "generator",
             "generator_function_declaration": "generator"}
    named: dict[tuple[int, int], Function] = {}  # keyed by the function node's byte range (unique per page)
    anon: dict[tuple[int, int], Function] = {}
    for m in all_matches("functions", roots, cache):
        fn = m["function"][0]
        key = (fn.start_byte, fn.end_byte)
        kind = kinds.get(fn.type, "function")
        if "name" in m:
            name = data[m["name"][0].start_byte:m["name"][0].end_byte].decode("utf-8", "replace")
            d = _statement(m["def"][0])
            named.setdefault(key, Function(name, kind, off(d.start_byte), off(d.end_byte)))
        else:
            anon[key] = Function(None, kind, off(fn.start_byte), off(fn.end_byte))
    funcs = list(named.values()) + [f for k, f in anon.items() if k not in named]
    return sorted(funcs, key=lambda f: (f.start, -f.end))


def _statement(node: ts.Node) -> ts.Node:
    """``const f = ...;`` rather than ``f = ...`` when the declaration declares only this name."""
    parent = node.parent
    if node.type == "variable_declarator" and parent is not None and parent.named_child_count == 1:
        return parent
    return node


def _text(data: bytes, node: ts.Node) -> str:
    return data[node.start_byte:node.end_byte].decode("utf-8", "replace")


def _state_name(node: ts.Node, data: bytes, state_vars: set[str]) -> str | None:
    """``total`` / ``state.total`` for a write target rooted at top-level state, else None."""
    if node.type in ("identifier", "shorthand_property_identifier"):
        name = _text(data, node)
        return name if name in state_vars else None
    if node.type in ("member_expression", "subscript_expression"):
        obj = node.child_by_field_name("object")
        if obj is None:
            return None
        if obj.type == "identifier" and _text(data, obj) in state_vars:
            prop = node.child_by_field_name("property")
            base = _text(data, obj)
            return f"{base}.{_text(data, prop)}" if node.type == "member_expression" and prop is not None else base
        return _state_name(obj, data, state_vars)
    if node.type == "parenthesized_expression" and node.named_child_count:
        return _state_name(node.named_children[0], data, state_vars)
    return None


def _state(roots: list[Root], data: bytes, off: _Offsets, model: SourceModel, cache: dict) -> None:
    caps_by_match = all_matches("state", roots, cache)
    state_vars: set[str] = set()
    decls = []
    for m in caps_by_match:
        if "state.name" in m:
            decl = m["state.decl"][0]
            value = decl.child_by_field_name("value")
            if value is not None and value.type in ("arrow_function", "function_expression", "generator_function"):
                continue  # a function, not state
            state_vars.add(_text(data, m["state.name"][0]))
            decls.append((_text(data, m["state.name"][0]), decl))
    name_starts = {decl.child_by_field_name("name").start_byte for _, decl in decls}
    model.state_vars = state_vars
    write_roots: set[int] = set()
    acc: list[StateAccess] = []
    for name, decl in decls:
        region = _statement(decl)
        s, e = off(region.start_byte), off(region.end_byte)
        acc.append(StateAccess(name, "declare", s, e, model.enclosing(s, e)))
    write_roots |= name_starts
    for m in caps_by_match:
        if "write" not in m:
            continue
        target = m["write"][0]
        name = _state_name(target, data, state_vars)
        if name is None:
            continue
        expr = m["write.expr"][0]
        s, e = off(expr.start_byte), off(expr.end_byte)
        acc.append(StateAccess(name, "write", s, e, model.enclosing(s, e)))
        node = target
        while node.type in ("member_expression", "subscript_expression") and node.child_by_field_name("object"):
            node = node.child_by_field_name("object")
        write_roots.add(node.start_byte)
    acc.extend(_reads(roots, data, off, model, write_roots, cache))
    model.accesses = sorted(acc, key=lambda a: (a.start, a.end, a.kind))


def _reads(roots: list[Root], data: bytes, off: _Offsets, model: SourceModel,
           write_roots: set[int], cache: dict) -> list[StateAccess]:
    caps: dict[str, list[ts.Node]] = {}
    for m in all_matches("reads", roots, cache):
        for k, v in m.items():
            caps.setdefault(k, []).extend(v)
    sv = model.state_vars
    out = []
    members: dict[int, str] = {}
    for node in caps.get("read.member", []):
        obj = node.child_by_field_name("object")
        base = _text(data, obj)
        if base in sv and obj.start_byte not in write_roots:
            members[obj.start_byte] = f"{base}.{_text(data, node.child_by_field_name('property'))}"
            s, e = off(node.start_byte), off(node.end_byte)
            out.append(StateAccess(members[obj.start_byte], "read", s, e, model.enclosing(s, e)))
    for node in caps.get("read", []):
        if node.start_byte in write_roots or node.start_byte in members:
            continue
        name = data[node.start_byte:node.end_byte].decode("utf-8", "replace")
        if name in sv:
            s, e = off(node.start_byte), off(node.end_byte)
            out.append(StateAccess(name, "read", s, e, model.enclosing(s, e)))
    return out


def _calls(roots: list[Root], data: bytes, off: _Offsets, model: SourceModel, cache: dict) -> list[Call]:
    out = []
    for m in all_matches("calls", roots, cache):
        call = m["call"][0]
        s, e = off(call.start_byte), off(call.end_byte)
        out.append(Call(_text(data, m["callee"][0]), s, e, model.enclosing(s, e)))
    return sorted(out, key=lambda c: (c.start, c.end))


def _handler(node: ts.Node, data: bytes, off: _Offsets, model: SourceModel) -> tuple[int, int, str | None]:
    """Handler range: an inline function's own range, or the named function's definition."""
    if node.type in ("arrow_function", "function_expression"):
        return off(node.start_byte), off(node.end_byte), None
    name = None
    if node.type == "identifier":
        name = _text(data, node)
    elif node.type == "member_expression" and node.child_by_field_name("property") is not None:
        name = _text(data, node.child_by_field_name("property"))
    elif node.type == "call_expression":  # handler.bind(this)
        fn = node.child_by_field_name("function")
        if fn is not None and fn.type == "member_expression":
            return _handler(fn.child_by_field_name("object"), data, off, model)
    for i in model.named(name) if name else []:
        return model.functions[i].start, model.functions[i].end, name
    return off(node.start_byte), off(node.end_byte), name


def _events(roots: list[Root], data: bytes, off: _Offsets, model: SourceModel,
            cache: dict) -> list[EventBinding]:
    out = []
    for m in all_matches("events", roots, cache):
        b, h = m["binding"][0], m["handler"][0]
        event = _text(data, m["event"][0])
        kind = "addEventListener" if "method" in m else "property"
        if kind == "property":
            event = event[2:]
        hs, he, hname = _handler(h, data, off, model)
        calls = tuple(c.callee for c in model.calls if hs <= c.start and c.end <= he) if hname is None else ()
        # the whole statement is the binding region (includes the trailing semicolon)
        stmt = b.parent if b.parent is not None and b.parent.type == "expression_statement" else b
        out.append(EventBinding(event, kind, _text(data, m["target"][0]), off(stmt.start_byte), off(stmt.end_byte),
                                hs, he, hname, calls))
    return out


def _attribute_bindings(html_root: ts.Node, data: bytes, off: _Offsets,
                        html_matches: list | None = None) -> list[EventBinding]:
    """HTML ``on*`` attributes: the value is a small script; its calls are parsed, not guessed."""
    parser = ts.Parser(js_language())
    calls_q = load_query("calls")
    out = []
    for m in html_matches if html_matches is not None else matches(load_query("html", html=True), html_root):
        if "attr" not in m:
            continue
        attr, value = m["attr"][0], m["attr.value"][0]
        code = data[value.start_byte:value.end_byte]
        tree = parser.parse(code)
        callees = tuple(_text(code, c["callee"][0]) for c in matches(calls_q, tree.root_node))
        tag = attr.parent.child(1) if attr.parent is not None and attr.parent.child_count > 1 else None
        out.append(EventBinding(_text(data, m["attr.name"][0]).lower()[2:], "attribute",
                                _text(data, tag) if tag is not None else "", off(attr.start_byte),
                                off(attr.end_byte), off(value.start_byte), off(value.end_byte), None, callees))
    return out


def model_from_roots(text: str, data: bytes, off: _Offsets, script_ranges: list[tuple[int, int]],
                     roots: list[Root], html_bindings: list[EventBinding], cache: dict | None = None,
                     state_roots: list[Root] | None = None) -> SourceModel:
    """The relations found in these JavaScript program roots (disjoint, in page order, each with the
    byte range its queries are limited to) plus the HTML ``on*`` attribute bindings. ``analyze`` passes
    one whole root for every script of the page; the scoped analyzer (``tasks.attribution.scope``)
    passes only the parsed runs of top-level statements it needs, queried where it needs them
    (``state_roots``: where state declarations, writes and reads are needed; default ``roots``)."""
    model = SourceModel(text, script_ranges, [], [], set(), [], [])
    if roots:
        cache = {} if cache is None else cache
        model.functions = _functions(roots, data, off, cache)
        model.__post_init__()
        model.calls = _calls(roots, data, off, model, cache)
        _state(roots if state_roots is None else state_roots, data, off, model, cache)
        model.bindings = _events(roots, data, off, model, cache)
    model.bindings += html_bindings
    return model


def analyze(text: str) -> SourceModel:
    """Analyze one HTML page (the application source); offsets are characters of ``text``."""
    if not isinstance(text, str):
        raise TypeError(f"analyze() takes the page as str, got {type(text).__name__}; decode bytes as UTF-8 first")
    data = text.encode("utf-8")
    off = _Offsets(text, data)
    html_root = ts.Parser(html_language()).parse(data).root_node
    scripts = _script_nodes(html_root, data)
    roots: list[Root] = []
    if scripts:
        parser = ts.Parser(js_language())
        parser.included_ranges = [n.range for n in scripts]
        roots.append((parser.parse(data).root_node, None))
    return model_from_roots(text, data, off, [(off(n.start_byte), off(n.end_byte)) for n in scripts], roots,
                            _attribute_bindings(html_root, data, off))
