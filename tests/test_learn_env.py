"""Learning on the environment, not on a toy (issue 16): the tiny policy, trained by the real train-rl path
(the train-rl flow's job, scored every step by the score-step flow: headless Chromium, the offline judge,
executable checks, attribution) for a few steps, raises its mean environment reward on a fixed set of
queries above its start by a margin chosen from repeated runs, and every parameter changed.

The configuration (start policy, query set, settings) is ``fakes/learn_env.py``; the toy-reward
learning test (``tests/test_train_loop.py``) stays as well.
"""
from pathlib import Path

import duckdb
import pytest
import torch

from fakes.learn_env import STEPS, learn

# Chosen from repeated runs of this exact configuration, `bench/bench_learn_env.py --seeds 4 --first-seed 0` (one
# process, the SFT start policy built once, as here; seed 0 is this test's, and the runs are seeded: the failing
# figures below came alike from the test and from a run outside it). Mean environment reward of step 1 (start
# policy) -> step 4 (after 3 updates), 32 responses each, same 4 queries (taxonomy v2's, offline rules v9):
#   seed 0: 0.0713 -> 0.2524 (+0.181)   seed 1: 0.1076 -> 0.1651 (+0.058)   seed 2: 0.1232 -> 0.1510 (+0.028)
#   seed 3: 0.1068 -> 0.2338 (+0.127)   mean gain +0.098, smallest +0.028
# uptime during the runs: load average 5-10 on 2 cores (139-194 s a seed; the gains do not depend on load:
# sampling and updates are seeded on CPU). Margin: half the smallest gain is 0.014; the bar stays at 0.02, which
# every seed clears. Before this configuration (SFT max_seq_len 256, lr 3e-3; fakes/learn_env.py says why each
# changed) taxonomy v2's longer queries gave seed 0 [0.0713, 0.0815, 0.0784, 0.0321]. Seen failing: advantages
# sign flipped (training/objective.py, (mean - r) / std) gives 0.0713 -> 0 per step [0.0713, 0.0461, 0.0094, 0].
MARGIN = 0.02


def _params(model_dir):
    from safetensors.torch import load_file

    return load_file(str(model_dir / "model.safetensors"))


@pytest.mark.timeout(900)
def test_policy_learns_the_environment_reward_on_fixed_queries(prefect_harness, data_dir):
    out = learn(data_dir)
    steps = out["steps"]
    assert sorted(steps) == list(range(1, STEPS + 1))
    # a fixed set: every step (the first, measuring the start policy, and the last) saw exactly these queries
    assert all(queries == out["queries"] for _, queries in steps.values()), steps
    start, end = steps[1][0], steps[STEPS][0]
    assert end > start + MARGIN, f"mean reward per step: {[round(m, 4) for m, _ in steps.values()]}"
    # the reward came from the environment: the offline judge, and a real browser for every app it extracted
    con = duckdb.connect(str(data_dir / "catalog.duckdb"), read_only=True)
    providers = {p for (p,) in con.execute("select distinct provider from judgments").fetchall()}
    statuses = {s for (s,) in con.execute("select distinct runtime_status from judgments where format_valid")
                .fetchall()}
    tiers = {t for (t,) in con.execute("select distinct tier from rewards").fetchall()}
    con.close()
    assert providers <= {"offline", "none"} and "offline" in providers, providers
    assert statuses and "skipped" not in statuses and None not in statuses, statuses
    assert {"valid", "format_invalid"} <= tiers, tiers
    before, after = _params(out["start_policy"]), _params(Path(out["run_dir"]) / "final_model")
    assert set(before) == set(after)
    unchanged = [n for n in before if torch.equal(before[n], after[n])]
    assert not unchanged, f"parameters that never moved: {unchanged}"
