"""Quote location: exact, whitespace-normalised, fragments, disambiguation, drops; plus properties."""
from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.llm.diagnosis import Diagnosis
from tasks.attribution.api import attribute
from tasks.attribution.locate import find_whitespace, locate, split_fragments, squash

SRC = """function a() {
  if (ok) {
    total++;
  }
}
function b() {
  if (ok) {
    total++;
  }
  render(total);
}
"""


def test_exact_then_whitespace_normalised_maps_to_exact_offsets():
    r = locate(SRC, "render(total);")
    assert (r.status, r.method) == ("matched", "exact")
    assert SRC[slice(*r.spans[0])] == "render(total);"
    r = locate(SRC, "}\n  render(total)")  # other whitespace than the source: two spaces vs newline+2
    r2 = locate(SRC, "}   render(total)")
    assert r2.method == "whitespace" and SRC[slice(*r2.spans[0])] == "}\n  render(total)"
    assert r.method == "exact"


def test_whitespace_runs_match_across_line_breaks_but_never_invent_whitespace():
    assert find_whitespace("x =\n\t 1", "x = 1") == [(0, 7)]
    assert find_whitespace("x=1", "x = 1") == []


def test_ambiguous_quote_is_dropped_not_spread():
    r = locate(SRC, "if (ok) {\n    total++;\n  }")
    assert r.status == "ambiguous" and r.spans == () and r.candidates == 2


def test_ambiguity_resolved_by_a_unique_best_score_only():
    second = SRC.index("function b")
    r = locate(SRC, "total++;", lambda s, e: 1.0 if s > second else 0.0)
    assert r.status == "matched" and r.spans[0][0] > second
    r = locate(SRC, "total++;", lambda s, e: 1.0)  # a tie stays ambiguous
    assert r.status == "ambiguous"


def test_fragments_split_at_statements_braces_and_breaks_short_ones_unused():
    keep, drop = split_fragments("if (ready) { count += 2; x++ } else { reset() }", 6)
    assert keep == ["if (ready)", "count += 2", "reset()"]
    assert drop == ["x++", "else"]
    # the quote as a whole is not in the source, its fragments are (the judge merged two lines)
    r = locate(SRC, "function b() { render(total); }", min_chars=6)
    assert r.method == "fragment"
    assert sorted(SRC[s:e] for s, e in r.spans) == ["function b()", "render(total)"]


def test_fragment_matching_several_places_uses_nearby_fragments():
    src = "function a() {\n  step();\n}\nfunction b() {\n  step();\n  finish(now);\n}\n"
    r = locate(src, "step(); finish(now); doesNotExist();", min_chars=5)
    assert r.method == "fragment"
    assert sorted(src[s:e] for s, e in r.spans) == ["finish(now)", "step()"]
    assert all(s > src.index("function b") for s, _ in r.spans)


def test_unmatched_quote_dropped_other_anchors_of_the_finding_still_count():
    html = "<html><body><script>\nlet n = 0;\nfunction inc() { n++; }\n</script></body></html>"
    diag = Diagnosis.model_validate({
        "static_check": {"name": "static_check"}, "code_simulation": {"name": "code_simulation"},
        "rubric_alignment": {"name": "rubric_alignment", "major": [
            {"item_id": "D1", "description": "x", "code_quotes": ["n--; // never written", "n++;"]},
            {"item_id": "D2", "description": "missing feature: no reset button", "code_quotes": []},
        ]},
    })
    trace = attribute("Answer:\n" + html, 8, diag)
    found, missing = trace.findings
    assert [a.status for a in found.anchors] == ["unmatched", "matched"]
    assert [("Answer:\n" + html)[s:e] for s, e in found.direct_spans_response()] == ["n++;"]
    assert missing.direct_spans == [] and missing.context_spans == []
    assert trace.status == "localised"


def test_disambiguation_by_enclosing_function_in_related_symbols():
    html = f"<html><body><script>\n{SRC}</script></body></html>"
    base = {"static_check": {"name": "static_check"}, "code_simulation": {"name": "code_simulation"}}

    def run(symbols):
        d = {**base, "rubric_alignment": {"name": "rubric_alignment", "major": [
            {"item_id": "D1", "description": "x", "code_quotes": ["total++;"], "related_symbols": symbols}]}}
        return attribute(html, 0, Diagnosis.model_validate(d)).findings[0]

    f = run(["b()"])
    (s, e), = f.direct_spans
    assert html[s:e] == "total++;" and s > html.index("function b")
    assert run([]).direct_spans == []  # no evidence: dropped


# --- properties ---------------------------------------------------------------------------------

_code = st.text(alphabet="abcxyz_();{}=+ \n\t", min_size=1, max_size=300)


@st.composite
def source_and_quote(draw):
    src = draw(_code)
    i = draw(st.integers(0, len(src) - 1))
    j = draw(st.integers(i + 1, len(src)))
    quote = src[i:j]
    # re-flow the whitespace of the quote: any run may become any other run
    quote = re.sub(r"\s+", lambda m: draw(st.sampled_from([" ", "\n", "  \t", "\n    "])), quote)
    return src, quote


@settings(max_examples=150, deadline=None)
@given(source_and_quote(), st.integers(1, 10))
def test_property_spans_inside_source_and_text_equals_quote_modulo_whitespace(sq, min_chars):
    src, quote = sq
    r = locate(src, quote, lambda s, e: -s, min_chars=min_chars)  # a scorer that always breaks ties
    for s, e in r.spans:
        assert 0 <= s < e <= len(src)
        if r.method in ("exact", "whitespace"):
            assert squash(src[s:e]) == squash(quote)
        else:
            fragments, _ = split_fragments(quote, min_chars)
            assert squash(src[s:e]) in {squash(f) for f in fragments}
    if squash(quote):  # a quote cut from the source is always found
        assert r.status == "matched" and r.method in ("exact", "whitespace")


@settings(max_examples=100, deadline=None)
@given(_code, st.text(min_size=1, max_size=40))
def test_property_random_quotes_never_leave_the_source(src, quote):
    r = locate(src, quote, min_chars=3)
    assert r.status in ("matched", "ambiguous", "unmatched")
    assert all(0 <= s < e <= len(src) for s, e in r.spans)
    assert (r.status == "matched") == bool(r.spans)
