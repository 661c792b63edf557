"""newest_policy picks the newest complete final_model; incomplete directories are ignored; the
held-out split is stable and sized by its percent."""
import os

import pytest

from tasks.rl.checkpoints import held_out, model_identity, newest_policy, policy_dirs


def _model(root, name, mtime, weights=True):
    d = root / "checkpoints" / name / "final_model"
    d.mkdir(parents=True)
    (d / "config.json").write_text("{}")
    if weights:
        (d / "model.safetensors").write_bytes(b"x")
    os.utime(d / "config.json", (mtime, mtime))
    return d


def test_newest_policy_by_mtime_and_incomplete_dirs_ignored(tmp_path):
    assert newest_policy(tmp_path) is None
    sft = _model(tmp_path, "sft", 1_000)
    assert newest_policy(tmp_path) == sft
    rl = _model(tmp_path, "rl-20250101T000000Z", 2_000)
    _model(tmp_path, "rl-20250102T000000Z", 3_000, weights=False)  # a half-written checkpoint
    (tmp_path / "checkpoints" / "rl-empty").mkdir()
    assert newest_policy(tmp_path) == rl
    assert policy_dirs(tmp_path) == [sft, rl]
    os.utime(sft / "config.json", (5_000, 5_000))  # SFT re-run later: it is the newest again
    assert newest_policy(tmp_path) == sft


def test_model_identity_changes_with_the_weights(tmp_path):
    d = _model(tmp_path, "sft", 1_000)
    before = model_identity(d)
    (d / "model.safetensors").write_bytes(b"xy")
    assert model_identity(d) != before


def test_held_out_split_is_stable_and_sized():
    ids = [f"q{i:06d}" for i in range(5_000)]
    share = sum(held_out(q, 10) for q in ids) / len(ids)
    assert 0.08 < share < 0.12
    assert [held_out(q, 10) for q in ids[:50]] == [held_out(q, 10) for q in ids[:50]]
    assert not any(held_out(q, 0) for q in ids[:100]) and all(held_out(q, 100) for q in ids[:100])
    with pytest.raises(ValueError, match="evaluation.heldout_percent"):
        held_out("q1", 120)
