"""What a multi-turn episode shows the policy (``rubricrl.environments.observation``, pure) and the episode's
rules (``rubricrl.environments.episode``): when it ends, its reward and metrics, the per-sample time limit and
a scoring failure as a missing reward, never a 0. Answers are built by hand in ``rubricrl score``'s shape."""
from __future__ import annotations

import math
import time

import pytest

from rubricrl.environments.episode import Episode, score_app
from rubricrl.environments.observation import code_line, passed, render_observation
from tests.fixtures.service import fixture_tasks

TASK = {t.query_id: t for t in fixture_tasks()}["q-counter"]
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


def test_episode_ends_on_pass_missing_or_max_turns_and_its_reward_is_the_last_apps():
    ep = Episode(TASK, max_turns=3)
    ep.add("a1", BROKEN)
    assert not ep.done and ep.reward == 0.2
    ep.add("a2", answer())
    assert ep.done and ep.reward == 1.0 and ep.turn_rewards() == [0.2, 1.0]
    m = ep.metrics()
    assert m["turns"] == 2.0 and m["turn_1_reward"] == 0.2 and m["turn_2_reward"] == 1.0
    assert math.isnan(m["turn_3_reward"]) and m["reward_missing"] == 0.0 and math.isnan(m["checks_passed"])
    with pytest.raises(ValueError, match="has ended"):
        ep.add("a3", answer())
    lost = Episode(TASK, max_turns=3)
    lost.add("a1", answer(reward=None, tier="missing", reason="timed out"))
    assert lost.done and lost.missing and lost.reward is None and lost.metrics()["reward_missing"] == 1.0
    capped = Episode(TASK, max_turns=2)
    capped.add("a1", BROKEN)
    capped.add("a2", BROKEN)
    assert capped.done and capped.metrics()["checks_passed"] == 0.5
    assert [m["role"] for m in capped.conversation()] == ["system", "user", "assistant", "user", "assistant", "user"]


class Stub:
    def __init__(self, delay_s=0.0, fail=False):
        self.delay_s, self.fail = delay_s, fail

    def score(self, items):
        time.sleep(self.delay_s)
        if self.fail:
            raise ConnectionError("service down")
        return [answer()]


def test_score_app_time_limit_and_failure_are_missing_rewards_never_zero():
    assert score_app(Stub(), "q-counter", "app", 5.0)["reward"] == 1.0
    slow = score_app(Stub(delay_s=1.0), "q-counter", "app", 0.1)
    assert slow["reward"] is None and "environments.sample_timeout_s=0.1 s" in slow["reason"]
    assert slow["tier"] == "missing" and slow["query_id"] == "q-counter"
    down = score_app(Stub(fail=True), "q-counter", "app", 5.0)
    assert down["reward"] is None and "ConnectionError: service down" in down["reason"]
