"""An uncaught error at load, in real headless Chromium, under ``env.runtime.probe.load_error_rule``: with
``evidence`` an app that still answers its controls after the error keeps its rubric-level reward (the error a
minor code_simulation finding at the line that threw), and its twin whose error stops the wiring stays
runtime-invalid; with ``gate`` both are runtime-invalid."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemas.config.env import EnvConfig, ProbeConfig, RuntimeConfig
from schemas.rubric import Task
from tasks.env.runtime import BrowserRuntime
from tasks.env.score import ScoreInput, score_batch
from tasks.llm import get_provider

IX = Path(__file__).resolve().parent / "fixtures" / "env" / "interaction"
BASE = RuntimeConfig(concurrency=2)
pytestmark = pytest.mark.skipif(not Path(BASE.executable_path).exists(),
                                reason="needs Debian's chromium-headless-shell: scripts/setup-system.sh")
TASK = Task.model_validate(json.loads((IX / "tasks.json").read_text())["button"])
WIRED = (IX / "button_wired.html").read_text()
ERROR = "const tint = color(200, 40, 40);  // a p5 call before p5 runs\n"
# the twins: the same error in a script of its own before the app's, or at the top of the app's script
APPS = {"load_error_answers.html": WIRED.replace("<script>\n", f"<script>\n{ERROR}</script>\n<script>\n", 1),
        "load_error_dead.html": WIRED.replace("<script>\n", f"<script>\n{ERROR}", 1)}
assert all(app != WIRED for app in APPS.values())


def score(rule: str) -> dict:
    cfg = BASE.model_copy(update={"probe": ProbeConfig(load_error_rule=rule)})
    with BrowserRuntime(cfg) as rt:
        res = score_batch([ScoreInput(a, TASK, html) for a, html in APPS.items()], provider=get_provider("offline"),
                          runtime=rt, cfg=EnvConfig(runtime=cfg))
    return {r.key: r for r in res}


def test_an_error_at_load_blocks_only_the_app_it_stops():
    got = score("evidence")
    ok, dead = got["load_error_answers.html"], got["load_error_dead.html"]
    assert ok.runtime_valid is True and ok.gates["browser"] is True, ok.findings
    (sim,) = [f for f in ok.findings if f.layer == "code_simulation"]
    assert sim.severity == "minor" and "not blocking: the app still answers input" in sim.explanation
    assert "color is not defined" in sim.description and sim.direct_spans
    assert ok.reward > EnvConfig().reward.rubric_floor
    assert dead.runtime_valid is False and dead.gates["browser"] is False
    assert any(f.layer == "code_simulation" and f.severity == "critical" for f in dead.findings)
    assert dead.evidence_json()["interaction"]["status"] == "ok"  # the probe used it, and nothing answered


def test_the_gate_rule_fails_both():
    got = score("gate")
    assert [got[a].runtime_valid for a in APPS] == [False, False]
    assert [got[a].evidence_json()["interaction"] for a in APPS] == [None, None]  # nothing to decide: the probe stays off



def test_the_hard_limit_cutting_the_probe_short_after_an_error_at_load_is_a_time_verdict():
    # Found under load on a real app: the hard limit hit mid-probe after an error at load, the status stayed
    # page_error, the probe's record said ok with no action run, the checks never ran and every item undecided
    # gave reward 1.0. Here the probe's first click blocks the page past the hard limit, and past the window a
    # starved frame gets to answer (pagetime.answer_window_s, 8 s): a 5 s block answered within it under load, and
    # was then rightly waited for as a starved page (the test failed beside a bench, passed alone).
    busy = "const t = performance.now(); while (performance.now() - t < 20000) {}"
    blocks = APPS["load_error_answers.html"].replace("index = (index + 1)", busy + "; index = (index + 1)", 1)
    assert blocks != APPS["load_error_answers.html"]
    cfg = BASE.model_copy(update={"hard_limit_s": 3.0, "load_timeout_s": 1.0})
    with BrowserRuntime(cfg) as rt:
        (res,) = score_batch([ScoreInput("blocks", TASK, blocks)], provider=get_provider("offline"), runtime=rt,
                             cfg=EnvConfig(runtime=cfg))
    # a time verdict: rechecked alone in a batch (RuntimeEvidence.timed_out), and not a valid tier on no evidence.
    # Which of the two clocks saw it first depends on the machine: the hard limit (unresponsive), or the probe's
    # own read of the page's clock (the error at load stands, the hang blocks); either way the probe hung.
    assert res.evidence.runtime_status in ("unresponsive", "page_error"), res.evidence.runtime_status
    assert res.evidence_json()["interaction"]["status"] == "hung", (res.evidence.runtime_status, res.reward)
    assert res.runtime_valid is False and res.reward == EnvConfig().reward.runtime_invalid
