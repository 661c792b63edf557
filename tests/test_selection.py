import pytest

from schemas.config.selection import SelectionConfig
from tasks.selection.select import Candidate, discrimination, select, selection_diff


def test_discrimination_is_zero_for_equal_rewards_and_grows_with_spread():
    assert discrimination([0.5] * 8, 0.5)[0] == 0.0
    assert discrimination([None, 0.7], 0.5)[0] == 0.0  # one reward cannot be compared
    two = discrimination([0.2, 0.2, 0.9, 0.9], 0.5)
    many = discrimination([0.2, 0.4, 0.6, 0.9], 0.5)
    assert two[1] == 2 and many[1] == 4
    assert 0 < two[0] < many[0] <= 1.0


def test_equal_reward_queries_are_never_selected_and_discriminative_ones_are():
    cands = [Candidate(f"flat{i}", [0.3] * 8, ["state_management"], items_total=80, items_failed=70) for i in range(5)]
    cands += [Candidate(f"disc{i}", [0.1, 0.3, 0.5, 0.9, 0.1, 0.3, 0.5, 0.9], ["presentation"], items_total=80,
                        items_failed=10) for i in range(3)]
    out = {s.query_id: s for s in select(cands, SelectionConfig(target_size=6))}
    assert all(not out[f"flat{i}"].selected for i in range(5))
    assert all(out[f"disc{i}"].selected for i in range(3))
    assert "zero advantage" in out["flat0"].reason


def test_weakness_ranks_equally_discriminative_queries():
    r = [0.2, 0.8] * 4
    cands = [Candidate("weak", r, ["domain_logic"], items_total=10, items_failed=9),
             Candidate("strong", r, ["presentation"], items_total=10, items_failed=1)]
    out = {s.query_id: s for s in select(cands, SelectionConfig(target_size=1, coverage_strength=0))}
    assert out["weak"].selected and not out["strong"].selected


def test_coverage_shifts_choices_when_one_category_dominates():
    r_hi = [0.1, 0.9] * 4
    r_lo = [0.1, 0.5] * 4
    cands = [Candidate(f"dom{i}", r_hi, ["interaction"], items_total=10, items_failed=5) for i in range(20)]
    cands += [Candidate(f"rare{i}", r_lo, ["simulation"], items_total=10, items_failed=5) for i in range(4)]
    no_cov = select(cands, SelectionConfig(target_size=8, coverage_strength=0))
    cov = select(cands, SelectionConfig(target_size=8, coverage_strength=4))
    rare = lambda res: sum(s.selected and s.query_id.startswith("rare") for s in res)  # noqa: E731
    assert rare(no_cov) == 0
    assert rare(cov) >= 2
    assert sum(s.selected for s in cov) == 8


def test_target_larger_than_eligible_takes_all_eligible():
    cands = [Candidate("a", [0, 1], ["x"], items_total=2, items_failed=1), Candidate("b", [1, 1], ["x"])]
    out = select(cands, SelectionConfig(target_size=10))
    assert [s.query_id for s in out if s.selected] == ["a"]


def test_selection_diff():
    assert selection_diff({"a", "b"}, {"b", "c"}) == {"added": ["c"], "kept": ["b"], "dropped": ["a"]}


@pytest.mark.parametrize("bad", [{"target_size": 0}, {"w_levels": 2}])
def test_config_rejects_bad_values(bad):
    with pytest.raises(ValueError):
        SelectionConfig(**bad)
