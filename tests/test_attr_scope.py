"""Scoped analysis (tasks/attribution/scope.py) gives the same trace as the whole-page analysis:
on the G.2 fixture, on random pages (hypothesis) with the constructs the scoper must get right,
and on pages where its cheap predictions fail and it must fall back."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.attribution.analyzer import analyze
from tasks.attribution.api import attribute
from tasks.attribution.cut import predict_scripts, top_level_starts
from tasks.attribution.scope import ScopedAnalyzer, ScopeStats

FIX = Path(__file__).parent / "fixtures" / "attribution"
G2 = (FIX / "g2_response.md").read_text()
G2_DIAG = json.loads((FIX / "g2_diagnosis.json").read_text())


def _diag(findings: list[dict]) -> dict:
    return {"static_check": {"name": "static_check"}, "code_simulation": {"name": "code_simulation"},
            "rubric_alignment": {"name": "rubric_alignment", "major": findings}}


def _same(response: str, h: int, diagnosis: dict) -> ScopeStats:
    scoped = attribute(response, h, diagnosis)
    full = attribute(response, h, diagnosis, scoped=False)
    assert scoped == full
    return scoped.scope


def test_g2_scoped_trace_equals_full_and_parses_no_more_than_the_page():
    scope = _same(G2, G2.index("<!DOCTYPE"), G2_DIAG)
    assert not scope.fallback and scope.html_fast
    assert 0 < scope.parsed_chars <= scope.script_chars


# -- random pages --------------------------------------------------------------------------------
NAMES = ["render", "update", "score", "reset", "tick", "draw", "save", "load"]
VARS = ["total", "count", "level", "items"]


@st.composite
def pages(draw):
    """(page, findings) with top-level state (plain and object properties), functions of every form,
    calls, listeners, on* properties and attributes, strings/comments/templates naming things, an
    indented or flush script, non-ASCII text, and a second script."""
    ind = draw(st.sampled_from(["", "    ", "\t"]))
    fns = draw(st.lists(st.sampled_from(NAMES), min_size=2, max_size=6, unique=True))
    var = draw(st.lists(st.sampled_from(VARS), min_size=1, max_size=3, unique=True))
    lines = [f"let {v} = 0;" for v in var] + ["const state = { " + ", ".join(f"{v}: 0" for v in var) + " };"]
    bodies = []
    for i, f in enumerate(fns):
        v, w = var[i % len(var)], var[(i + 1) % len(var)]
        callee = fns[(i + 1) % len(fns)]
        form = draw(st.integers(0, 4))
        body = draw(st.sampled_from([
            f"{v} += 1;\n{ind}  state.{w}++;",
            f"if (state.{v} > 1) {{\n{ind}    {callee}({v});\n{ind}  }} else {{\n{ind}    {w} = 0;\n{ind}  }}",
            f"const s = '{callee}() {v}++'; // {w} = 2 ♠\n{ind}  return {v} + state.{w};",
            f"items.push({v});\n{ind}  {callee}();",
            f"document.getElementById('x{i}').textContent = `v ${{{v}}} — ✓`;",
        ]))
        bodies.append(body)
        if form == 0:
            lines.append(f"function {f}(e) {{\n{ind}  {body}\n{ind}}}")
        elif form == 1:
            lines.append(f"const {f} = (e) => {{\n{ind}  {body}\n{ind}}};")
        elif form == 2:
            lines.append(f"const api{i} = {{\n{ind}  {f}(e) {{\n{ind}  {body}\n{ind}  }}\n{ind}}};")
        elif form == 3:
            lines.append(f"class C{i} {{\n{ind}  {f}() {{\n{ind}  {body}\n{ind}  }}\n{ind}}}")
        else:
            lines.append(f"function {f}(e) {{\n{ind}  {body}\n{ind}}}\n{ind}btn{i}.onclick = () => {f}();")
        if draw(st.booleans()):
            lines.append(f"document.getElementById('b{i}').addEventListener('click', {f});")
    if draw(st.booleans()):  # a template literal with code-like lines at the top indent
        lines.append("const tpl = `\n" + ind + f"function {fns[0]}() {{}}\n" + ind + "let fake = 1;\n`;")
    if draw(st.booleans()):
        lines.append(f"/*\n{ind}function {fns[-1]}() {{ {var[0]}++; }}\n{ind}*/")
    lines.append(f"if (count) {{\n{ind}  {fns[0]}();\n{ind}}}\n{ind}else {{\n{ind}  {fns[-1]}();\n{ind}}}")
    js = "\n".join(ind + ln for ln in lines)
    attr = draw(st.sampled_from(["", f' onclick="{fns[0]}(); {fns[1]}()"', f" ONCHANGE='{fns[-1]}()'"]))
    page = (f"<!DOCTYPE html>\n<html><head><style>.a {{ color: red; }}</style></head>\n<body>\n"
            f"<p>Café ♥ — {fns[0]}()</p><button id='b'{attr}>go</button>\n<script>\n{js}\n</script>\n"
            f"<script type='application/json'>{{\"{var[0]}\": 1}}</script>\n"
            f"<script>\n{ind}function {fns[0]}Extra() {{ {fns[0]}(); }}\n</script>\n</body></html>\n")
    findings = []
    for k in range(draw(st.integers(1, 3))):
        body = draw(st.sampled_from(bodies))
        a = draw(st.integers(0, max(len(body) - 8, 0)))
        quote = body[a:a + draw(st.integers(8, 60))]
        if draw(st.booleans()):
            quote = " ".join(quote.split())  # re-flowed: whitespace-normalised matching
        state = draw(st.sampled_from([[], [var[0]], [f"state.{var[-1]}"], var]))
        symbols = draw(st.sampled_from([[], [fns[0]], [f"{fns[-1]}()"]]))
        hints = draw(st.sampled_from([[], [f"{fns[1]} reads {var[0]}"]]))
        findings.append({"item_id": f"R{k}", "description": "d", "code_quotes": [quote],
                         "related_symbols": symbols, "state_variables": state, "context_hints": hints})
    return page, findings


@settings(max_examples=int(__import__("os").environ.get("ATTR_SCOPE_EXAMPLES", "150")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(pages(), st.sampled_from(["", "Here is the app.\n\n```html\n"]))
def test_property_scoped_trace_equals_whole_page_analysis(page_findings, prose):
    page, findings = page_findings
    response = prose + page
    _same(response, len(prose), _diag(findings))


def test_syntax_error_in_a_selected_statement_falls_back_to_the_whole_page():
    page = ("<html><body><script>\nlet total = 0;\nfunction add() {\n  total += 1;\n}\n"
            "function broken() {\n  total = (1 + ;\n}\n</script></body></html>")
    scope = _same(page, 0, _diag([{"item_id": "X", "description": "d", "code_quotes": ["total += 1;"],
                                   "state_variables": ["total"]}]))
    assert scope.fallback


def test_statement_starts_follow_the_top_indent_and_skip_continuations():
    js = "    let a = 0;\n    function f() {\n        a++;\n    }\n    if (a) {\n    }\n    else {\n    }\n    g();\n"
    starts = top_level_starts(js)
    assert [js[s:].split("\n")[0].strip() for s in starts] == ["let a = 0;", "function f() {", "if (a) {", "g();"]
    assert top_level_starts("x = 1 + 2;") == [0]  # no declaration line: one statement


@pytest.mark.parametrize("page", [
    "<p>a</p><script>let a = 1;</SCRIPT ><b>x</b>",
    "<!-- <script>no()</script> --><script>let b = 2;</script>",
    '<div title="<script>no</script>"><script>let c = 3;</script></div>',
    '<script data-x="a>b">let d = 4;</script>',
    "<script>let e = '</scrip';</script>",
    "<script>let f = '<</script>';</script>",
    "<style>p { color: red }</style><script type=module>let g = 5;</script><script></script>",
    "<script>let h = 1;",
])
def test_script_prediction_is_verified_against_tree_sitter(page):
    scope = ScopedAnalyzer(page)
    full = analyze(page)
    assert scope.script_ranges == full.script_ranges
    assert [(b.event, b.start, b.end) for b in scope.html_bindings] == [
        (b.event, b.start, b.end) for b in full.bindings if b.kind == "attribute"]
    if predict_scripts(page.encode()) is None:
        assert not scope.html_fast


def test_on_attributes_found_by_the_markup_parse():
    page = '<button onclick="go(); track()">x</button><script>\nfunction go() {}\n</script>'
    scope = ScopedAnalyzer(page)
    assert scope.html_fast
    (b,) = scope.html_bindings
    assert (b.event, b.handler_calls) == ("click", ("go", "track"))


MARKUP = ["<!DOCTYPE html>", "<p class=a>", "</p>", "text &amp; more", "<!-- c -->", "<!-- <script>x()</script> -->",
          '<div title="<script>">', "<div title='a>b'>", "</div>", "<style>p { color: red }</style>",
          "<style>/* <script> */</style>", "<br/>", "<img src=x.png>", "a < b", "<script>let a = 1;</script>",
          "<SCRIPT type='module'>b()</SCRIPT>", '<script type="application/json">{"a": 1}</script>',
          "<textarea><script>t()</script></textarea>", "<scripts>", "<script src='x.js'></script>",
          '<button onclick="go()">', "<input onchange = 'f()'>", "<data-on x='1'>", "</script>", "\n  ",
          "<script>\nlet s = '</scr' + 'ipt>';\nfunction g() { return '<b>'; }\n</script>", "<p>Café ♠ 😀</p>"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(MARKUP), max_size=12))
def test_property_script_ranges_and_attributes_match_tree_sitter_html(pieces):
    page = "".join(pieces)
    scope, full = ScopedAnalyzer(page), analyze(page)
    assert scope.script_ranges == full.script_ranges
    assert [(b.event, b.start, b.end, b.handler_calls) for b in scope.html_bindings] == [
        (b.event, b.start, b.end, b.handler_calls) for b in full.bindings if b.kind == "attribute"]
