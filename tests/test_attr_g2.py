"""The paper's G.2 worked example (accuracy counter whose denominator is updated only on correct
answers), end to end: spans, reasons, token weights for A<0 and A>0, score additions, the stage."""
from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from schemas.contracts.attribution import attributions_suites
from schemas.contracts.training import JUDGE_PROVIDER
from tasks.attribution.api import annotate_findings, attribute, score_additions, token_weights, trace_row, traces_table
from tasks.attribution.tokens import load_tokenizer, token_offsets
from tasks.stages.validate import run_suites
from tests.fixtures.attribution.make_tokenizer import byte_level

FIX = Path(__file__).parent / "fixtures" / "attribution"
RESPONSE = (FIX / "g2_response.md").read_text()
H = RESPONSE.index("<!DOCTYPE")
DIAGNOSIS = json.loads((FIX / "g2_diagnosis.json").read_text())
BRANCH = "if (correct) {\n    score += 10;\n    correctAnswers++;\n    totalAnswers++;\n  }"


def _region(text: str) -> tuple[int, int]:
    """Response span of a function / statement that starts with ``text``, to its closing line."""
    s = RESPONSE.index(text)
    end = RESPONSE.index("\n}\n", s) + 2 if text.startswith("function") else RESPONSE.index("\n", s)
    return s, end


@pytest.fixture(scope="module")
def trace():
    return attribute(RESPONSE, H, DIAGNOSIS)


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory):
    return byte_level(tmp_path_factory.mktemp("tok"))


def test_direct_span_is_the_quoted_branch_inside_submit(trace):
    (f,) = trace.findings
    assert f.key == "rubric_alignment.major.0" and f.item_id == "D12"
    (s, e), = f.direct_spans_response()
    assert RESPONSE[s:e] == BRANCH
    sub = _region("function submitAnswer")
    assert sub[0] < s and e < sub[1]


def test_context_spans_enclosing_function_renderer_and_click_listener(trace):
    (f,) = trace.findings
    ctx = {(s, e): why for s, e, why in f.context_spans_response()}
    d0, d1 = f.direct_spans_response()[0]
    sub0, sub1 = _region("function submitAnswer")
    # the enclosing function is context OUTSIDE the quoted interval (direct wins)
    assert "enclosing function submitAnswer" in ctx[(sub0, d0)] and "enclosing function submitAnswer" in ctx[(d1, sub1)]
    render = _region("function renderAccuracy")
    assert "renderAccuracy reads state totalAnswers" in ctx[render]
    assert "submitAnswer calls renderAccuracy" in ctx[render]  # several relations, one region
    listener = _region('document.getElementById("submit-btn").addEventListener')
    assert ctx[listener] == "click listener reaches submitAnswer"
    # state definitions are context; unrelated code is not
    assert any(RESPONSE[s:e] == "let totalAnswers = 0;" for s, e in ctx)
    assert not any(RESPONSE[s:e].startswith(("const RANKS", "<style>")) for s, e in ctx)
    # no region is listed twice
    assert len(ctx) == len(f.context_spans)


# Hand-computed table: region -> expected weight for A<0 and A>0. Every token lying wholly inside
# the region must carry it (tokens straddling a boundary are checked by the unit table).
WEIGHT_TABLE = [
    ("totalAnswers++;\n  }", 3.0, 1.0),                                 # the quoted branch: direct
    ('const choice = document.getElementById("rank-select")', 1.5, 1.0),  # submitAnswer outside branch
    ('document.getElementById("accuracy").textContent', 1.5, 1.0),     # renderAccuracy reads the state
    ('addEventListener("click", submitAnswer);', 1.5, 1.0),            # the click listener
    ("let totalAnswers = 0;", 1.5, 1.0),                               # defines the state
    ("Here is the complete Poker Hand Evaluator", 1.0, 1.2),           # prose before the HTML
    ("font-family: sans-serif; background: #0b6623;", 1.0, 1.2),       # CSS
    ("Poker Hand Evaluator — ♠ ♥ ♦ ♣", 1.0, 1.2),                       # markup, multi-byte chars
    ('const RANKS = ["Royal Flush"', 1.0, 1.2),                        # unrelated code
    ("The accuracy display updates after every submission.", 1.0, 1.2),
]


@pytest.mark.parametrize("region,neg,pos", WEIGHT_TABLE)
def test_token_weights_match_hand_computed_table(trace, tok_dir, region, neg, pos):
    tok = load_tokenizer(tok_dir)
    ids = tok.encode(RESPONSE).ids  # stand-in for the generated ids of this response
    offsets = token_offsets(ids, tok, expected_text=RESPONSE)
    s0 = RESPONSE.index(region)
    inside = [k for k, (s, e) in enumerate(offsets) if s0 <= s and e <= s0 + len(region) and s < e]
    assert inside, "the region holds whole tokens"
    w_neg = token_weights(trace, offsets, -0.8)
    w_pos = token_weights(trace, offsets, 0.8)
    assert {float(w_neg[k]) for k in inside} == {neg}
    assert {round(float(w_pos[k]), 6) for k in inside} == {pos}
    assert len(w_neg) == len(w_pos) == len(ids)


def test_missing_diagnosis_drops_the_response(tok_dir):
    assert token_weights(None, [(0, 1)], -1.0) is None


def test_score_additions_and_annotation(tok_dir):
    out = score_additions(RESPONSE, H, DIAGNOSIS, advantage=-0.5, tokenizer_dir=tok_dir)
    spans = out["findings"]["rubric_alignment.major.0"]
    (s, e), = spans["direct_spans"]
    assert RESPONSE[s:e] == BRANCH
    assert all(len(c) == 3 and isinstance(c[2], str) for c in spans["context_spans"])
    assert len(out["token_weights"]) == len(out["token_offsets"])
    assert set(out["token_weights"]) == {3.0, 1.5, 1.0}
    annotated = annotate_findings(DIAGNOSIS, out)
    assert annotated["rubric_alignment"]["major"][0]["direct_spans"] == [[s, e]]
    assert "direct_spans" not in DIAGNOSIS["rubric_alignment"]["major"][0]  # input untouched
    no_tokens = score_additions(RESPONSE, H, DIAGNOSIS)
    assert set(no_tokens) == {"attribution_status", "findings"}
    with pytest.raises(ValueError, match="pass both"):
        score_additions(RESPONSE, H, DIAGNOSIS, advantage=1.0)
    with pytest.raises(ValueError, match="where the HTML starts"):
        score_additions(RESPONSE, len(RESPONSE) + 1, DIAGNOSIS)


def test_reflowed_quote_still_grounds_the_branch():
    d = json.loads(json.dumps(DIAGNOSIS))
    d["rubric_alignment"]["major"][0]["code_quotes"] = ["if (correct) { score += 10; correctAnswers++; totalAnswers++; }"]
    (f,) = attribute(RESPONSE, H, d).findings
    assert f.anchors[0].method == "whitespace"
    (s, e), = f.direct_spans_response()
    assert RESPONSE[s:e] == BRANCH


def test_attributions_stage_row_validates_and_is_queryable(trace, tok_dir):
    tok = load_tokenizer(tok_dir)
    offsets = token_offsets(tok.encode(RESPONSE).ids, tok)
    empty = attribute(RESPONSE, H, {**DIAGNOSIS, "rubric_alignment": {"name": "rubric_alignment"}})
    table = traces_table([trace_row(trace, "q5-r0", "q5", advantage=-0.8, offsets=offsets),
                          trace_row(empty, "q5-r1", "q5")])
    # as train-rl publishes it: with the provider of the judgments behind each row
    table = table.append_column(JUDGE_PROVIDER, pa.array(["offline"] * table.num_rows, pa.string()))
    report = run_suites("attributions", table, attributions_suites())
    assert report.success, report.describe_failures()
    con = duckdb.connect()
    con.register("attributions", table)
    rows = con.sql("""SELECT response_id, html_offset, f.key, f.direct_spans[1].start AS a, f.direct_spans[1]."end" AS b,
                             len(f.context_spans) AS n_ctx, status, n_direct_tokens > 0 AS has_direct
                      FROM attributions, unnest(findings) AS t(f)""").fetchall()
    (rid, h, key, a, b, n_ctx, status, has_direct), = rows
    assert (rid, h, key, status, has_direct) == ("q5-r0", H, "rubric_alignment.major.0", "localised", True)
    assert RESPONSE[h + a:h + b] == BRANCH and n_ctx >= 5
    assert con.sql("SELECT status FROM attributions WHERE response_id = 'q5-r1'").fetchall() == [("no_findings",)]
    bad = traces_table([trace_row(trace, "x", None), trace_row(trace, "x", None)])  # duplicate ids
    assert not run_suites("attributions", bad, attributions_suites()).success
