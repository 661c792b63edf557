"""`rubricrl score` with attribution: findings carry direct/context spans in response offsets, and
`--advantage A --tokenizer DIR` adds one weight per response token (paper G.2/G.3 worked example)."""
import json
import os
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
    assert set(pos["token_weights"]) == {1.0, 1.2} and pos["weight_rule"] == neg["weight_rule"] == "sign"
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


def _spans(out: dict) -> list:
    return [(f["direct_spans"], f["context_spans"]) for f in out["findings"]]


def test_spans_and_weights_follow_the_projects_attribution_section(files):
    """`rubricrl score` reads the configuration like every command (profile, RUBRICRL_*, --set): the spans it
    prints are the ones the attribution section gives, not the defaults (a narrow window drops a callee)."""
    from schemas.config.attribution import AttributionConfig
    from tasks.attribution.api import attribute
    from tasks.env.extract import extract_html

    d, _ = files
    response = (FIX / "g2_response.md").read_text()
    diagnosis = json.loads((FIX / "g2_diagnosis.json").read_text())
    h = extract_html(response).offset

    def want(cfg: AttributionConfig) -> list:
        t = attribute(response, h, diagnosis, cfg)
        return [(f.direct_spans_response(), f.context_spans_response()) for f in t.findings]

    narrow = want(AttributionConfig(window_chars=0))
    assert narrow != want(AttributionConfig())  # the setting matters for this response
    by_set = _score(d, "--profile", "demo", "--set", "attribution.window_chars=0")
    assert by_set.returncode == 0, by_set.stderr
    assert _spans(json.loads(by_set.stdout)) == narrow


def test_token_weights_follow_the_training_modes_rule(files):
    """The weights printed are the ones the trainer would apply: train.objective.mode's rule (here the 4.4
    ablation: diagnosed tokens pushed down although A > 0), named in ``weight_rule`` (the default's twin:
    test_token_weights_follow_the_sign_rule)."""
    d, tok = files
    res = _score(d, "--advantage", "0.8", "--tokenizer", str(tok), "--set", "train.objective.mode=unconditional")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["weight_rule"] == "unconditional" and set(out["token_weights"]) == {-3.0, -1.5, 1.0}


def test_the_judge_provider_comes_from_the_configuration(files, tmp_path):
    """No --provider: llm.provider decides (here an OpenAI-compatible endpoint, the local fake); --provider still
    overrides it."""
    from fakes.fake_openai import FakeOpenAI

    d, _ = files
    empty = {k: {"name": k, "critical": [], "major": [], "minor": []}
             for k in ("static_check", "code_simulation", "rubric_alignment")}
    task, response = REPO / "tests" / "fixtures" / "env" / "task_counter.json", REPO / "tests" / "fixtures" / "env" / "clean.txt"
    with FakeOpenAI(reply=lambda body: json.dumps(empty)) as api:
        env = {**os.environ, "OPENAI_API_KEY": "test-key", "RUBRICRL_DATA_DIR": str(tmp_path / "data"),
               "RUBRICRL_LLM__PROVIDER": "openai", "RUBRICRL_LLM__MODEL": "local",
               "RUBRICRL_LLM__BASE_URL": api.base_url + "/v1"}
        base = [sys.executable, "-m", "rubricrl.cli", "score", "--task", str(task), "--response", str(response),
                "--no-browser"]
        configured = subprocess.run(base, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
        assert configured.returncode == 0, configured.stderr[-2000:]
        assert api.seen("/v1/chat/completions")
        explicit = subprocess.run([*base, "--provider", "offline"], cwd=REPO, env=env, capture_output=True, text=True,
                                  timeout=120)
    assert json.loads(configured.stdout)["judge"]["provider"] == "openai"
    assert json.loads(explicit.stdout)["judge"]["provider"] == "offline"
