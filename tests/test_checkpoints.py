"""newest_policy picks the newest complete final_model; incomplete directories are ignored; the
held-out split is stable and sized by its percent."""
import os

import pytest

from tasks.queries.split import held_out
from tasks.rl.checkpoints import model_identity, newest_policy, policy_dirs


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


# Installs a model directory and is SIGKILLed half way through writing the last file it copies.
KILLED_INSTALL = """
import os, shutil, signal, sys
from pathlib import Path
from tasks.rl.checkpoints import install_policy

src, dest = Path(sys.argv[1]), Path(sys.argv[2])
left = [len(list(src.iterdir()))]
whole = shutil.copyfile

def copy_then_die(a, b, **kw):
    left[0] -= 1
    if left[0]:
        return whole(a, b, **kw)
    data = Path(a).read_bytes()
    with open(b, "wb") as f:
        f.write(data[: len(data) // 2])
    os.kill(os.getpid(), signal.SIGKILL)

shutil.copyfile = copy_then_die
install_policy(src, dest)
"""


def _files(d):
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def _source(root, name, seed):
    d = root / name
    d.mkdir()
    (d / "config.json").write_text('{"model": "%s"}' % name + " " * 4096)
    (d / "model.safetensors").write_bytes(os.urandom(1 << 20) + bytes([seed]))
    (d / "tokenizer.json").write_text('{"vocab": {}}' + " " * 4096)
    return d


def test_a_policy_install_killed_half_way_is_never_read(tmp_path):
    """train-rl and train-sft install their final model with one atomic install: a reader (the nightly
    re-selection's newest_policy) sees the old model, none, or the whole new one; a copy killed mid-way is
    never read, and the next install completes."""
    import subprocess
    import sys
    from pathlib import Path

    from tasks.rl.checkpoints import install_policy

    repo = Path(__file__).resolve().parent.parent
    data = tmp_path / "data"
    new, old = _source(tmp_path, "new", 1), _source(tmp_path, "old", 2)

    def killed_install(dest):
        p = subprocess.run([sys.executable, "-c", KILLED_INSTALL, str(new), str(dest)], cwd=repo, timeout=60)
        assert p.returncode == -9  # it was killed mid-copy, not finished

    fresh = data / "checkpoints" / "rl-20250101T000000Z" / "final_model"  # a new run's policy
    killed_install(fresh)
    assert newest_policy(data) is None
    existing = install_policy(old, data / "checkpoints" / "sft" / "final_model")  # a policy being replaced
    killed_install(existing)
    assert newest_policy(data) == existing and _files(existing) == _files(old)
    assert install_policy(new, existing) == existing and _files(existing) == _files(new)  # the next one completes
    assert [p.name for p in existing.parent.iterdir()] == ["final_model"]  # nothing half-written left beside it


def test_both_training_flows_install_through_the_one_atomic_install():
    import flows.train_rl
    import flows.train_sft
    from tasks.rl.checkpoints import install_policy

    assert flows.train_rl.install_policy is install_policy and flows.train_sft.install_policy is install_policy
