"""Table-driven tests of the tree-sitter query files in tasks/attribution/queries/ and of the analyzer
built on them: (snippet, expected extraction)."""
from __future__ import annotations

import pytest

from tasks.attribution.analyzer import analyze
from tasks.attribution.grammar import captures, js_language, load_query

import tree_sitter as ts


def _caps(query: str, js: str) -> dict[str, list[str]]:
    root = ts.Parser(js_language()).parse(js.encode()).root_node
    return {k: sorted(n.text.decode() for n in v) for k, v in captures(load_query(query), root).items()}


QUERY_TABLE = [
    # (query file, snippet, capture name, expected texts)
    ("functions", "function go(a) { return a }", "name", ["go"]),
    ("functions", "const f = () => 1;", "name", ["f"]),
    ("functions", "let g = function () {};", "name", ["g"]),
    ("functions", "obj.h = function () {};", "name", ["h"]),
    ("functions", "x = () => 0;", "name", ["x"]),
    ("functions", "const o = { m: () => 1, n() { return 2 } };", "name", ["m", "n"]),
    ("functions", "class C { run() {} #hide() {} }", "name", ["#hide", "run"]),
    ("functions", "function* gen() { yield 1 }", "name", ["gen"]),
    ("functions", "[1].map(v => v * 2)", "function", ["v => v * 2"]),
    ("calls", "render(); a.b.update(1); new Game();", "callee", ["Game", "render", "update"]),
    ("calls", "// render()\nconst s = 'update()';", "callee", []),
    ("state", "let total = 0; var s = {a: 1}; function f() { let local = 1; }", "state.name", ["s", "total"]),
    ("state", "total++; s.a += 2; x = 1; --y;", "write", ["s.a", "total", "x", "y"]),
    ("state", "items.push(1); list.map(f);", "write", ["items"]),
    ("reads", "f(total, s.a)", "read.member", ["s.a"]),
    ("events", "btn.addEventListener('click', go);", "event", ["click"]),
    ("events", "btn.addEventListener('click', go);", "handler", ["go"]),
    ("events", "el.onclick = () => go();", "event", ["onclick"]),
    ("events", "el.value = 3; el.addEventListener(type, h);", "binding", []),
    ("events", "// btn.addEventListener('click', go);\nconst t = \"el.onclick = go\";", "binding", []),
]


@pytest.mark.parametrize("query,snippet,name,expected", QUERY_TABLE)
def test_query_table(query, snippet, name, expected):
    assert _caps(query, snippet).get(name, []) == expected


def _page(js: str, body: str = "") -> str:
    return f"<!DOCTYPE html><html><body>{body}<script>{js}</script></body></html>"


ANALYZER_TABLE = [
    # (page, what, expected)
    (_page("function a() { b(); }\nconst b = () => c();\nfunction c() {}"), "calls",
     [("b", "a"), ("c", "b")]),
    (_page("let n = 0; function inc() { n++; }\nfunction show() { return n; }"), "accesses",
     [("n", "declare", None), ("n", "write", "inc"), ("n", "read", "show")]),
    (_page("const st = {s: 0}; function add() { st.s += 1; }\nconst v = () => st.s;"), "accesses",
     [("st", "declare", None), ("st.s", "write", "add"), ("st.s", "read", "v")]),
    (_page("let n = 0; function f() { const s = 'n = 1'; /* n++ */ }"), "accesses", [("n", "declare", None)]),
    (_page("function go() {}\nbtn.addEventListener('click', go);\nwin.onkeydown = (e) => go();"), "bindings",
     [("click", "addEventListener", "go", ()), ("keydown", "property", None, ("go",))]),
    (_page("function go() {}", '<button onClick="go(); track()">x</button>'), "bindings",
     [("click", "attribute", None, ("go", "track"))]),
]


def _summary(model, what):
    names = {i: f.name for i, f in enumerate(model.functions)}
    if what == "calls":
        return [(c.callee, names.get(c.caller)) for c in model.calls]
    if what == "accesses":
        return [(a.var, a.kind, names.get(a.function)) for a in model.accesses]
    return [(b.event, b.kind, b.handler_name, b.handler_calls) for b in model.bindings]


@pytest.mark.parametrize("page,what,expected", ANALYZER_TABLE)
def test_analyzer_table(page, what, expected):
    assert _summary(analyze(page), what) == expected


def test_offsets_are_page_characters_across_several_scripts_and_non_ascii():
    page = ("<html><body><p>Café ♠♥ 😀</p><script>let score = 0; // ✓ héllo\n</script>"
            "<p>日本</p><script type='application/json'>{\"a\": 1}</script>"
            "<script>\nfunction bump() { score++; }</script></body></html>")
    model = analyze(page)
    (fn,) = model.functions
    assert page[fn.start:fn.end] == "function bump() { score++; }"
    writes = [a for a in model.accesses if a.kind == "write"]
    assert [page[a.start:a.end] for a in writes] == ["score++"]
    assert len(model.script_ranges) == 2  # the JSON script is not JavaScript
    assert all(page[s:e].strip().startswith(("let", "function")) for s, e in model.script_ranges)


def test_named_handler_range_is_its_function_and_handler_reaches_it():
    page = _page("function submit() { save(); }\nfunction save() {}\nform.addEventListener('submit', submit);")
    model = analyze(page)
    (b,) = model.bindings
    assert page[b.handler_start:b.handler_end] == "function submit() { save(); }"
    assert page[b.start:b.end] == "form.addEventListener('submit', submit);"


def test_page_without_scripts_has_no_relations_and_bad_input_names_the_fix():
    model = analyze("<html><body><p>no code</p></body></html>")
    assert (model.functions, model.calls, model.accesses, model.bindings) == ([], [], [], [])
    with pytest.raises(TypeError, match="decode bytes"):
        analyze(b"<html></html>")  # type: ignore[arg-type]
