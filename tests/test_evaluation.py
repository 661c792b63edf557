import pytest

from tasks.evaluation.summary import markdown_table, plot, summarize


def _row(model, run, q, diff, dom, tier, passed, reward):
    return dict(model=model, run=run, query_id=q, difficulty=diff, domain=dom, tier=tier, passed=passed, reward=reward)


def test_pass_rates_are_averaged_over_runs_by_difficulty_and_domain():
    rows = [
        _row("sft", 0, "a", "easy", "Games", "valid", True, 1.0),
        _row("sft", 0, "b", "hard", "Tools", "runtime_invalid", False, 0.2),
        _row("sft", 1, "a", "easy", "Games", "valid", False, 0.6),
        _row("sft", 1, "b", "hard", "Tools", "valid", False, None),
    ]
    s = summarize(rows)["sft"]
    assert s["pass/overall"] == pytest.approx(25.0)          # run0 50%, run1 0%
    assert s["pass/difficulty=easy"] == pytest.approx(50.0)  # run0 100%, run1 0%
    assert s["pass/domain=Tools"] == pytest.approx(0.0)
    assert s["tier/valid"] == pytest.approx(75.0)             # run0 50%, run1 100%
    assert s["reward/mean"] == pytest.approx((0.6 + 0.6) / 2)  # run0 mean 0.6, run1 mean 0.6 (None skipped)
    assert s["runs"] == 2


def test_side_by_side_deltas(tmp_path):
    rows = [_row("sft", 0, "a", "easy", "Games", "valid", False, 0.5),
            _row("rl", 0, "a", "easy", "Games", "valid", True, 1.0)]
    md = markdown_table(summarize(rows), baseline="sft")
    line = next(l for l in md.splitlines() if l.startswith("| pass/overall"))
    assert "+100.00" in line
    assert plot(rows, tmp_path / "p.png").stat().st_size > 1000


def test_unknown_tier_is_rejected():
    with pytest.raises(ValueError, match="allowed"):
        summarize([_row("m", 0, "a", "easy", "Games", "great", True, 1.0)])
