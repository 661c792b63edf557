"""What a multi-turn episode shows the policy (``rubricrl.environments.observation``, pure: the service's
``observe: true`` answers) and when nothing is left to fix (``passed``). Answers are built by hand in ``rubricrl
score``'s shape. The episode's own rules (when it ends, its reward, a missing reward never a 0) are the
package's, tested in each stack: tests/test_env_package_*.py."""
from __future__ import annotations

from rubricrl.environments.observation import code_line, passed, render_observation

APP = "<html>\n<body>\n<script>\n  display.style.color = settings.color;\n  let x = ;\n</script>\n</body></html>"
OFFSET = APP.index("display")


def answer(**kw):
    base = {"query_id": "q-counter", "format_valid": True, "source_valid": True, "runtime_valid": True, "reward": 1.0,
            "tier": "valid", "rubric_score": 1.0, "findings": [], "gates": {"static_check": True, "browser": True},
            "evidence": {"checks": [], "interaction": {"status": "ok", "dead_controls": [], "visual_change": True}},
            "reason": None}
    return {**base, **kw}


BROKEN = answer(
    runtime_valid=False, reward=0.2, tier="runtime_invalid", rubric_score=0.0,
    gates={"static_check": True, "browser": False, "rubric_alignment": False},
    findings=[{"severity": "major", "item_id": "D1", "description": "clicking 'Increment' changes nothing"},
              {"severity": "critical", "item_id": None, "description": "uncaught TypeError during load",
               "code_quotes": ["display.style.color = settings.color;"]}],
    evidence={"runtime_status": "page_error", "syntax_errors": [],
              "page_errors": [{"name": "TypeError", "message": "Cannot read properties of null", "line": 4,
                               "offset": OFFSET}],
              "checks": [{"item_id": "D2", "status": "failed", "reason": "count stayed 3", "expected": "0",
                          "observed": "3"}, {"item_id": "I1", "status": "passed"}],
              "interaction": {"status": "ok", "dead_controls": ["Increment", "Reset"], "visual_change": False}})


def test_the_observation_names_what_to_fix_worst_first():
    text = render_observation(BROKEN, APP, {"D1": "Clicking Increment adds 1", "D2": "Reset sets 0"})
    assert text.startswith("Your app scored 0.2 (tier runtime_invalid).")
    assert "runtime FAILED (page_error)" in text and "format ok" in text
    assert "uncaught TypeError: Cannot read properties of null at line 4:\n    display.style.color = settings.color;" in text
    assert text.index("[critical]") < text.index("[major] D1 (Clicking Increment adds 1)")
    assert "- D2 (Reset sets 0): count stayed 3; expected 0, saw 3" in text
    assert "controls that did nothing when used: Increment, Reset" in text
    assert "did not change on screen" in text and text.endswith("whole corrected single-file HTML app.")


def test_a_passing_app_says_so_and_a_missing_one_says_why():
    assert passed(answer()) and render_observation(answer(), APP).endswith("every decided rubric item passed.")
    assert not passed(answer(findings=[{"severity": "minor", "item_id": "I3", "description": "small"}]))
    assert not passed(answer(evidence={"checks": [{"item_id": "D1", "status": "failed"}]}))
    assert not passed(answer(gates={"browser": False}))
    assert passed(answer(gates={"browser": None}))  # not checked is not failed
    missing = answer(reward=None, tier="missing", reason="judge failed")
    assert not passed(missing) and render_observation(missing, APP).startswith("Your app could not be scored: judge failed.")


def test_code_line_is_the_line_holding_the_offset():
    assert code_line(APP, OFFSET + 5) == "display.style.color = settings.color;"
    assert code_line(APP, None) is None and code_line(APP, len(APP) + 3) is None
