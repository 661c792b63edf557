"""`rubricrl score` with attribution: findings carry direct/context spans in response offsets, and
`--advantage A --tokenizer DIR` adds one weight per response token (paper G.2/G.3 worked example)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "tests" / "fixtures" / "attribution"
sys.path.insert(0, str(FIX))
from make_tokenizer import byte_level  # noqa: E402


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("score")
    task = {"query_id": "q5", "query": "Build a Poker Hand Evaluator miniapp ... Track cumulative score and session accuracy percentage.",
            "rubric": {"initial_state": [{"id": "I1", "requirement": "Five cards are shown", "level": "core_module"}],
                       "dynamic": [{"id": "D12", "requirement": "Accuracy = correct / all submitted answers", "level": "correct_rule"}]}}
    (d / "task.json").write_text(json.dumps(task))
    return d, byte_level(d / "tok")


def _score(d, *extra):
    res = subprocess.run([sys.executable, "-m", "rubricrl.cli", "score", "--task", str(d / "task.json"), "--response",
                          str(FIX / "g2_response.md"), "--diagnosis", str(FIX / "g2_diagnosis.json"), "--no-browser", *extra],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    return res


def test_findings_carry_spans_in_response_offsets(files):
    d, _ = files
    res = _score(d)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    response = (FIX / "g2_response.md").read_text()
    (f,) = out["findings"]
    assert f["item_id"] == "D12" and f["key"] == "rubric_alignment.major.0"
    (a, b), = f["direct_spans"]
    assert response[a:b].startswith("if (correct)") and "totalAnswers++" in response[a:b]
    reasons = " ".join(r for _, _, r in f["context_spans"])
    assert "enclosing" in reasons
    assert any(response[s:e].lstrip().startswith("function renderAccuracy") for s, e, _ in f["context_spans"])
    assert any("addEventListener" in response[s:e] for s, e, _ in f["context_spans"])


def test_token_weights_follow_the_sign_rule(files):
    d, tok = files
    neg = json.loads(_score(d, "--advantage", "-0.8", "--tokenizer", str(tok)).stdout)
    pos = json.loads(_score(d, "--advantage", "0.8", "--tokenizer", str(tok)).stdout)
    assert len(neg["token_weights"]) == len(neg["token_offsets"]) == len(pos["token_weights"])
    assert set(neg["token_weights"]) == {3.0, 1.5, 1.0}
    assert set(pos["token_weights"]) == {1.0, 1.2}
    (a, b), = neg["findings"][0]["direct_spans"]
    for w, (s, e) in zip(neg["token_weights"], neg["token_offsets"]):
        if s < b and e > a:
            assert w == 3.0
    # a token is attributed (1.0 when A > 0) exactly when it is direct or contextual when A < 0
    assert [w == 1.0 for w in pos["token_weights"]] == [w > 1.0 for w in neg["token_weights"]]


def test_advantage_without_tokenizer_is_a_clear_error(files):
    d, _ = files
    res = _score(d, "--advantage", "1")
    assert res.returncode == 2 and "both --advantage" in res.stderr
