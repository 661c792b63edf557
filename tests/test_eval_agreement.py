"""Agreement between our reward and someone else's label (tasks/evaluation/agreement.py) and the Playwright
JSON report reader that gives the label (tasks/evaluation/playwright_report.py), on cases worked by hand."""
import pytest

from tasks.evaluation.agreement import pairwise_within, ranks, spearman
from tasks.evaluation.playwright_report import pass_share, spec_outcomes, spec_task_id


def test_pairwise_skips_label_ties_and_counts_reward_ties_as_misses():
    apps = [("t1", 0.9, 1.0), ("t1", 0.2, 0.0), ("t1", 0.5, 0.0),  # pairs: (a,b) agree, (a,c) agree, (b,c) label tie
            ("t2", 0.7, 0.5), ("t2", 0.7, 1.0),  # reward tie on different labels: a miss
            ("t3", 0.1, 1.0), ("t3", 0.8, 0.0),  # ordered backwards: a miss
            ("t1", None, 0.5), ("t4", 0.3, None)]  # missing values are skipped
    got = pairwise_within(apps)
    assert (got.agree, got.pairs, got.reward_ties) == (2, 4, 1)
    assert got.rate == pytest.approx(0.5)
    assert pairwise_within([("t", 1.0, 1.0), ("u", 0.0, 0.0)]).rate is None  # no pair inside a task


def test_spearman_matches_hand_computed_values_with_ties():
    assert ranks([10, 20, 20, 5]) == [2.0, 3.5, 3.5, 1.0]
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 1, 1], [1, 2, 3]) is None  # a constant side has no order
    assert spearman([1, None, 2, 3], [2, 5, 1, 3]) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="same length"):
        spearman([1, 2], [1])


def test_playwright_json_report_gives_each_spec_files_pass_share():
    def spec(title, ok, status, err=None):
        res = {"status": status, **({"error": {"message": err}} if err else {})}
        return {"title": title, "ok": ok, "tests": [{"results": [res]}]}
    report = {"suites": [
        {"title": "A.spec.js", "file": "A.spec.js", "specs": [], "suites": [
            {"title": "A demo", "file": "A.spec.js", "specs": [spec("slider", True, "passed"),
                                                               spec("input", False, "failed", "Error: expect\nmore")]}]},
        {"title": "B.spec.js", "file": "B.spec.js", "specs": [spec("all", False, "timedOut")], "suites": []}]}
    got = spec_outcomes(report)
    assert [t.title for t in got["A.spec.js"]] == ["slider", "input"]
    assert got["A.spec.js"][1].error == "Error: expect" and got["B.spec.js"][0].status == "timedOut"
    assert pass_share(got["A.spec.js"]) == 0.5 and pass_share(got["B.spec.js"]) == 0.0 and pass_share([]) is None
    assert spec_task_id("PFT_tests/AdditiveCipher.spec.js") == "AdditiveCipher"
    with pytest.raises(ValueError, match="reporter=json"):
        spec_outcomes({"stats": {}})
