"""Training-run plots: per-step series from rollouts rows (pure), and the PNG."""
import pytest

from schemas.config.attribution import AttributionConfig
from tasks.rl.plots import plot_run, step_series

A = AttributionConfig()


def _r(step, reward, tier, adv, weights):
    return {"step": step, "reward": reward, "tier": tier, "advantage": adv, "token_weights": weights, "mode": "full"}


def test_step_series_counts_attributed_tokens_by_the_sign_rule(tmp_path):
    rows = [
        # A<0: 3.0 direct and 1.5 context are attributed, 1.0 is the ordinary weight
        _r(0, 0.2, "runtime_invalid", -1.0, [3.0, 1.5, 1.0, 1.0]),
        # A>0: 1.0 is attributed, 1.2 is the ordinary weight
        _r(0, 0.9, "valid", 1.0, [1.0, 1.2, 1.2, 1.2]),
        _r(1, None, "missing", 0.5, [1.2, 1.2]),  # twin: nothing attributed, no reward
        _r(1, 1.0, "valid", 0.5, [1.2, 1.2]),
    ]
    s = step_series(rows, A)
    assert s["step"] == [0, 1]
    assert s["reward_mean"] == pytest.approx([0.55, 1.0])
    assert s["weighted_token_share"] == pytest.approx([100.0 * 3 / 8, 0.0])
    assert s["valid_rate"] == pytest.approx([50.0, 50.0])
    assert s["tier/runtime_invalid"] == pytest.approx([50.0, 0.0]) and s["tier/missing"] == pytest.approx([0.0, 50.0])
    assert plot_run(s, tmp_path / "run.png").stat().st_size > 5000


def test_the_weighted_share_follows_each_rows_training_mode():
    """A row's tokens are weighted against the rule its mode applied: uniform weights (hierarchical) are
    never counted as attributed, and the 4.4 ablation's diagnosed tokens are, whatever A's sign."""
    rows = [_r(0, 0.9, "valid", 1.0, [1.0, 1.0, 1.0]) | {"mode": "hierarchical"},
            _r(1, 0.9, "valid", 1.0, [3.0, 1.5, 1.0, 1.0]) | {"mode": "unconditional"}]
    assert step_series(rows, A)["weighted_token_share"] == pytest.approx([0.0, 50.0])
