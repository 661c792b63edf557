"""verl's custom reward function, called exactly as verl calls it (verl is not installed here; each call below
follows the cited verl source): loaded from its file path, wrapped with ``reward_kwargs``, called per response
by the naive reward manager and by the reward loop's worker threads, and per batch by the batch manager. The
scores are the environment's for the same responses scored alone; a missing one is NaN per response, and in
the batched form its group's mean (GRPO advantage 0), with reward_missing either way."""
from __future__ import annotations

import asyncio
import importlib.util
import math
import os
from collections import defaultdict
from functools import partial

import numpy as np
import pytest
import torch

import rubricrl.adapters.verl as verl_adapter
from rubricrl.adapters.client import scorer
from tests.fixtures.service import counter_alone, counter_responses, judged_project


def load_like_verl(path: str, name: str, reward_kwargs: dict):
    """verl/utils/import_utils.py ``load_module`` (a file path, a unique module name) and
    verl/trainer/ppo/reward.py ``get_custom_reward_fn`` (``partial(_call_with_kwargs, raw_fn, reward_kwargs)``)."""
    spec = importlib.util.spec_from_file_location(f"custom_module_{hash(os.path.abspath(path))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    raw_fn = getattr(module, name)

    def _call_with_kwargs(raw_fn, extra_kwargs, *args, **kwargs):
        return raw_fn(*args, **{**kwargs, **extra_kwargs})

    return partial(_call_with_kwargs, raw_fn, reward_kwargs)


@pytest.fixture
def env(tmp_path, monkeypatch):
    """The project as a verl worker resolves it: from the environment (``RUBRICRL_*``), no service.url."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")  # for the local fake only
    with judged_project(tmp_path / "data") as cfg:
        for k, v in {"RUBRICRL_DATA_DIR": str(cfg.data_dir), "RUBRICRL_LLM__PROVIDER": "anthropic",
                     "RUBRICRL_LLM__BASE_URL": cfg.llm.base_url, "RUBRICRL_LLM__RETRY__MAX_RETRIES": "0"}.items():
            monkeypatch.setenv(k, v)
        scorer.cache_clear()
        yield [a["reward"] for a in counter_alone(cfg)]
        scorer.cache_clear()


def same(got: list[float], want: list[float | None]) -> bool:
    return all((w is None and math.isnan(g)) or g == pytest.approx(w) for g, w in zip(got, want)) and \
        len(got) == len(want)


def test_naive_reward_manager_call(env):
    """verl/workers/reward_manager/naive.py ``__call__``: one compute_score per response, the score on the
    response's last valid token, the dict's keys into reward_extra_info."""
    compute_score = load_like_verl(verl_adapter.__file__, "compute_score", {})
    lengths = [5, 3, 7, 4]
    reward_tensor = torch.zeros(4, 8)
    reward_extra_info = defaultdict(list)
    for i, text in enumerate(counter_responses()):
        extra_info = {"index": i, "num_turns": None, "rollout_reward_scores": {}}
        score = compute_score(data_source="rubricrl", solution_str=text, ground_truth="q-counter",
                              extra_info=extra_info)
        reward = score["score"] if isinstance(score, dict) else score
        for key, value in score.items():
            reward_extra_info[key].append(value)
        reward_tensor[i, lengths[i] - 1] = reward
    assert same([reward_tensor[i, n - 1].item() for i, n in enumerate(lengths)], env)
    assert reward_extra_info["reward_missing"] == [0.0, 0.0, 0.0, 1.0]
    assert reward_extra_info["tier"][:3] == [3.0, 2.0, 1.0] and math.isnan(reward_extra_info["tier"][3])
    assert all(len(v) == 4 for v in reward_extra_info.values())


def test_reward_loop_calls_from_worker_threads(env):
    """verl/experimental/reward_loop/reward_manager/naive.py ``run_single``: a sync compute_score runs in the
    loop's executor, one task per response, all at once (``compute_score_batch`` gathers them)."""
    compute_score = load_like_verl(verl_adapter.__file__, "compute_score", {})

    async def run_single(text: str) -> dict:
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(None, lambda: compute_score(
            data_source="rubricrl", solution_str=text, ground_truth="q-counter",
            extra_info={"num_turns": None, "rollout_reward_scores": {}}))
        return {"reward_score": result["score"], "reward_extra_info": dict(result)}

    async def batch() -> list[dict]:
        return await asyncio.gather(*(asyncio.create_task(run_single(t)) for t in counter_responses() * 2))

    out = asyncio.run(batch())
    assert same([o["reward_score"] for o in out], env * 2)


def grpo_advantages(scores: torch.Tensor, index: list[int], epsilon: float = 1e-6) -> torch.Tensor:
    """verl/trainer/ppo/core_algos.py ``compute_grpo_outcome_advantage`` on outcome scores (one per response)."""
    id2score = defaultdict(list)
    for i in range(len(scores)):
        id2score[index[i]].append(scores[i])
    mean = {k: torch.mean(torch.stack(v)) for k, v in id2score.items()}
    std = {k: torch.std(torch.stack(v)) for k, v in id2score.items()}
    return torch.stack([(scores[i] - mean[index[i]]) / (std[index[i]] + epsilon) for i in range(len(scores))])


def test_batch_reward_manager_call(env):
    """verl/workers/reward_manager/batch.py ``verify``: one call with the batch's data sources (a numpy object
    array), decoded responses, ground truths and extra infos, plus the reward kwargs. Two groups (dataset rows
    0 and 1, four responses each); the missing reward of row 0 gets its group's mean: GRPO advantage 0."""
    compute_score = load_like_verl(verl_adapter.__file__, "compute_score_batch", {"unused_option": 1})
    texts = counter_responses() + counter_responses()[:3] + counter_responses()[:1]
    index = [0] * 4 + [1] * 4
    scores = compute_score(data_sources=np.array(["rubricrl"] * 8, dtype=object), solution_strs=texts,
                           ground_truths=["q-counter"] * 8,
                           extra_infos=np.array([{"index": i, "rollout_reward_scores": {}} for i in index],
                                                dtype=object))
    rewards = [s["score"] if isinstance(s, dict) else s for s in scores]
    present = env[:3]
    assert rewards[:3] == pytest.approx(present) and rewards[3] == pytest.approx(sum(present) / 3)
    assert rewards[4:] == pytest.approx(present + present[:1])
    assert [s["reward_missing"] for s in scores] == [0, 0, 0, 1, 0, 0, 0, 0]
    adv = grpo_advantages(torch.tensor(rewards, dtype=torch.float32), index)  # data.batch["acc"] is this tensor
    assert torch.isfinite(adv).all() and adv[3].item() == pytest.approx(0.0, abs=1e-6) and adv[0] > 0


def test_ground_truth_must_be_a_query_id(env):
    with pytest.raises(ValueError, match="reward_model.ground_truth"):
        verl_adapter.compute_score(data_source="x", solution_str="y", ground_truth=None)
    with pytest.raises(ValueError, match="not a published query"):
        verl_adapter.compute_score(data_source="x", solution_str="y", ground_truth="q-unknown")
