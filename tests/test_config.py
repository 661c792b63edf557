import pytest

from schemas.config import load_config


def test_profiles_differ_in_scale():
    demo, full = load_config("demo", environ={}), load_config("full", environ={})
    assert demo.synth.n_queries == 200
    assert full.synth.n_queries == 55_000


def test_environment_and_set_overrides_apply_in_order():
    env = {"RUBRICRL_SYNTH__N_QUERIES": "300", "RUBRICRL_DATA_DIR": "/tmp/x", "RUBRICRL_LLM__PROVIDER": "offline"}
    cfg = load_config("demo", environ=env, sets=["synth.n_queries=400"])
    assert cfg.synth.n_queries == 400
    assert str(cfg.data_dir) == "/tmp/x"
    assert cfg.llm.provider == "offline"


def test_bad_value_names_field_and_allowed_values():
    with pytest.raises(ValueError) as e:
        load_config("demo", environ={}, sets=["llm.provider=claude"])
    assert "llm.provider" in str(e.value) and "'offline'" in str(e.value) and "'anthropic'" in str(e.value)


def test_unknown_field_and_profile_are_rejected():
    with pytest.raises(ValueError, match="no such setting"):
        load_config("demo", environ={}, sets=["synth.n_query=5"])
    with pytest.raises(ValueError, match="allowed values: demo, full"):
        load_config("huge", environ={})
    with pytest.raises(ValueError, match="section.field=value"):
        load_config("demo", environ={}, sets=["oops"])


def test_section_hash_tracks_only_named_sections():
    a = load_config("demo", environ={})
    b = load_config("demo", environ={}, sets=["llm.concurrency=3"])
    c = load_config("demo", environ={}, sets=["synth.seed=3"])
    assert a.section_hash("synth") == b.section_hash("synth")
    assert a.section_hash("synth") != c.section_hash("synth")


def test_the_weight_rule_has_one_setting():
    """The rule follows train.objective.mode; attribution.mode is refused with the setting to use instead."""
    from schemas.config.train import RULE_OF_MODE

    with pytest.raises(ValueError, match="set train.objective.mode instead"):
        load_config("demo", environ={}, sets=["attribution.mode=unconditional"])
    cfg = load_config("demo", environ={}, sets=["train.objective.mode=unconditional"])  # the twin: the one setting
    assert RULE_OF_MODE[cfg.train.objective.mode] == "unconditional"


def test_the_binary_ablation_has_one_switch():
    """In training train.objective.mode selects the reward; env.reward_kind=binary beside another mode is refused."""
    from training.config import with_mode_reward

    assert with_mode_reward(load_config("demo", environ={}, sets=["train.objective.mode=binary"])).env.reward_kind \
        == "binary"
    with pytest.raises(ValueError, match="set train.objective.mode=binary"):
        with_mode_reward(load_config("demo", environ={}, sets=["env.reward_kind=binary"]))
    # the twins: the default, and both switches saying the same
    assert with_mode_reward(load_config("demo", environ={})).env.reward_kind == "hierarchical"
    both = ["env.reward_kind=binary", "train.objective.mode=binary"]
    assert with_mode_reward(load_config("demo", environ={}, sets=both)).env.reward_kind == "binary"
