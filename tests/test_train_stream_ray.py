"""ScoreStream on the Ray runner: one small stream through a local Ray instance gives the same scores, in the
same order, as the score function called directly (the function is reached in the Ray workers by its path)."""
from __future__ import annotations

import pytest

from training.rollout import Rollout
from training.stream import ScoreStream
from training.toy import pattern_reward


class _Tok:
    def decode(self, ids, skip_special_tokens=True):
        return " ".join(map(str, ids))


def test_stream_through_a_local_ray_instance():
    ray = pytest.importorskip("ray")
    chunks = [[Rollout([1], [100 + 7 * g + k, 5, 120 + k][: 2 + k % 2], [-1.0] * (2 + k % 2), True) for k in range(3)]
              for g in range(3)]
    q = {"query": "q", "query_id": "x"}
    try:
        stream = ScoreStream(pattern_reward, _Tok(), {"step": 1, "rank": 0}, workers=2, runner="ray",
                             score_fn_path="fakes.stream_scorers:jittery_reward", timeout_s=120)
        for g, rolls in enumerate(chunks):
            stream.submit([q] * len(rolls), rolls, [g] * len(rolls))
        scored, timing = stream.finish()
    finally:
        ray.shutdown()
    flat = [r for c in chunks for r in c]
    want, membership, _ = pattern_reward([], [], [r.response_ids for r in flat])
    assert scored.rewards == want and len(set(want)) > 1
    assert [m.tolist() for m in scored.membership] == membership
    assert scored.info["passed"] == [w >= 0.5 for w in want]
    assert timing["score_s"] > 0


def test_ray_runner_needs_the_score_function_path():
    with pytest.raises(ValueError, match="score_fn_path"):
        ScoreStream(pattern_reward, _Tok(), {}, workers=1, runner="ray")
