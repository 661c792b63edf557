"""Format gate (extraction, offset h) and tree-sitter source checks with page offsets."""
from __future__ import annotations

from pathlib import Path

import pytest

from schemas.config.env import StaticConfig
from tasks.env.extract import extract_html
from tasks.env.static import check_source

FIX = Path(__file__).parent / "fixtures" / "env"


def test_fenced_block_offset_points_at_the_application():
    resp = (FIX / "clean.txt").read_text()
    ex = extract_html(resp)
    assert ex is not None and ex.kind == "fenced"
    assert resp[ex.offset : ex.offset + len(ex.html)] == ex.html
    assert ex.html.startswith("<!DOCTYPE html>") and ex.html.rstrip().endswith("</html>")


def test_last_complete_candidate_wins_and_truncated_does_not_count():
    first = "<!DOCTYPE html><html><body>one</body></html>"
    second = "<html><body>two</body></html>"
    resp = f"Draft:\n```html\n{first}\n```\nFinal:\n```html\n{second}\n```\nAnd a cut one:\n```html\n<html><body>three"
    ex = extract_html(resp)
    assert ex.html == second and resp.index(second) == ex.offset


def test_bare_document_outside_fences():
    doc = "<!doctype html>\n<html><body><p>x</p></body></html>"
    resp = "Sure! " + doc + "\nThat is all."
    ex = extract_html(resp)
    assert ex.kind == "document" and ex.offset == 6 and ex.html == doc


@pytest.mark.parametrize("resp", ["no code here", "```js\nlet a = 1;\n```", "<html><body>never closed", "```html\n```"])
def test_no_html_is_format_invalid(resp):
    assert extract_html(resp) is None


def test_non_str_response_is_a_clear_error():
    with pytest.raises(TypeError, match="decode the file"):
        extract_html(b"<html></html>")  # type: ignore[arg-type]


def test_syntax_error_offsets_are_page_offsets_in_the_right_script():
    html = ("<!DOCTYPE html><html><head><style>.a{color:red}</style></head><body>\n"
            "<script>const ok = 1;</script>\n"
            "<script>\n  // café: non-ASCII before the error moves byte offsets, not character offsets\n"
            "  function broken( { return 1 }\n</script>\n"
            "<script>let fine = [1, 2, 3].map(x => x * 2);</script></body></html>")
    ev = check_source(html)
    js = [e for e in ev.errors if e.language == "javascript"]
    assert js and all(e.blocking for e in js)
    assert html[js[0].start : js[0].end].startswith("function broken(")
    assert js[0].line == 5 and js[0].column == 3
    assert not ev.source_valid
    assert [r.kind for r in ev.regions] == ["style", "classic", "classic", "classic"]


def test_valid_modern_js_css_jsx_and_ignored_script_types():
    html = """<html><head>
<style>:root{--x:1px} .a{ &:hover{color:blue} } @media (max-width: 600px){ .b{display:none} }</style>
<script type="importmap">{"imports": {"three": "https://unpkg.com/three@0.160.0/build/three.module.js"}}</script>
<script type="module">import * as T from 'three'; class A { #p = 1; get q(){ return this.#p } } const v = a?.b ?? 1; await 0;</script>
<script type="text/babel">function App(){ const [n, setN] = React.useState(0); return <button onClick={() => setN(n + 1)}>{n}</button>; }</script>
<script type="x-shader/x-vertex">void main() { gl_Position = vec4(1.0); }</script>
<script src="https://cdn.jsdelivr.net/npm/chart.js">this body is ignored by browsers ((</script>
</head><body></body></html>"""
    ev = check_source(html)
    assert [e for e in ev.errors if e.blocking] == []
    assert ev.external_scripts == ["https://cdn.jsdelivr.net/npm/chart.js"]
    assert {r.kind for r in ev.regions} == {"style", "importmap", "module", "babel"}


def test_invalid_import_map_is_blocking_json_error():
    html = '<html><head><script type="importmap">{"imports": {"a": "b",}}</script></head><body>x</body></html>'
    ev = check_source(html)
    (err,) = ev.errors
    assert err.language == "json" and err.blocking and html[err.start] == "}"


def test_css_structural_error_blocks_but_spec_lag_does_not():
    lag = "<html><head><style>@media (width >= 600px){a{color:red}} .x{color:red;;}</style></head><body>x</body></html>"
    ev = check_source(lag)
    assert ev.errors and not any(e.blocking for e in ev.errors) and ev.source_valid
    broken = "<html><head><style>.a{color:red} .b{color:blue;</style></head><body>x</body></html>"
    ev2 = check_source(broken)
    assert any(e.blocking and e.language == "css" for e in ev2.errors) and not ev2.source_valid


def test_html_errors_recorded_and_blocking_only_by_config():
    html = "<html><body><div>x</div></span></body></html>"  # stray end tag: browsers recover, nothing to record
    page = f"{html}<p>"
    assert check_source(page).source_valid and check_source(page).errors == []
    broken = "<html><body><div <<>></body></html>"
    lenient, strict = check_source(broken), check_source(broken, StaticConfig(html_errors_fail=True))
    for ev, blocking in ((lenient, False), (strict, True)):
        html_errs = [(e.language, broken[e.start:e.end], e.line, e.column, e.blocking) for e in ev.errors]
        assert html_errs == [("html", "<<", 1, 18, blocking), ("html", ">", 1, 21, blocking)]
        assert all("html syntax error" in e.message for e in ev.errors)
    assert lenient.source_valid and not strict.source_valid  # recorded always, blocking only by config


def test_shifted_offsets_add_h():
    html = "<script>let = ;</script>"
    ev = check_source(html)
    from dataclasses import asdict

    from tasks.env.evidence import shift_offsets

    d = shift_offsets(asdict(ev.errors[0]), 100)
    assert d["start"] == ev.errors[0].start + 100 and d["end"] == ev.errors[0].end + 100
