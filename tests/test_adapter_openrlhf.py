"""OpenRLHF's remote reward, called exactly as OpenRLHF calls it (OpenRLHF is not installed here; each step
below follows the cited OpenRLHF source): the HTTP route with aiohttp as ``_fetch_rewards_via_http`` posts,
and the file form as ``SingleTurnAgentExecutor`` loads ``reward_func``; then the answer goes through what
OpenRLHF does with it (its tensors, dynamic filtering, the group advantage). A group holding a missing
reward (NaN) is dropped by dynamic filtering; a whole group gets finite advantages."""
from __future__ import annotations

import asyncio
import importlib.util
import math

import pytest
import torch

import rubricrl.adapters.openrlhf as openrlhf_adapter
from rubricrl.adapters.client import scorer
from rubricrl.service.engine import ScoreEngine
from tests.fixtures.service import counter_alone, counter_responses, judged_project, running_service


@pytest.fixture
def served(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")  # for the local fake only
    with judged_project(tmp_path / "data") as cfg, running_service(ScoreEngine(cfg)) as s:
        yield s, cfg


def samples(tmp_path) -> tuple[list[str], list[str], list[str]]:
    """(query, prompt, label) per sample as OpenRLHF's executor builds them: the chat-templated prompt, and
    the query decoded from prompt + response token ids with special tokens kept (``utils/agent.py``)."""
    from transformers import AutoTokenizer

    from training.tiny import build_tokenizer

    tok = build_tokenizer()
    tok.save_pretrained(tmp_path / "tok")
    tok = AutoTokenizer.from_pretrained(tmp_path / "tok")
    prompt = tok.apply_chat_template([{"role": "user", "content": "Build a click counter."}], tokenize=False,
                                     add_generation_prompt=True)
    prompt_ids = tok(text=prompt, add_special_tokens=False)["input_ids"]
    queries = [tok.decode(prompt_ids + tok(r + "<|im_end|>", add_special_tokens=False)["input_ids"],
                          skip_special_tokens=False) for r in counter_responses()]
    return queries, [prompt] * len(queries), ["q-counter"] * len(queries)


async def fetch_via_http(url: str, query: str, prompt: str, label: str) -> dict:
    """openrlhf/utils/agent.py ``_fetch_rewards_via_http`` for one server and one sample."""
    import aiohttp

    payload = {"query": [query], "prompts": [prompt], "labels": [label]}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=180)) as session:
        async with session.post(url, json=payload) as response:
            response.raise_for_status()
            return await response.json()


def experience(rewards_info: dict) -> dict:
    """``SingleTurnAgentExecutor.execute`` (reward, scores, extra_logs from the answer) and
    trainer/ppo_utils/samples_generator.py ``_process_response_into_experience`` (the tensors)."""
    score_value = rewards_info.get("scores")
    if score_value is None:
        score_value = rewards_info.get("rewards")
    reward_val, extra_logs = rewards_info.get("rewards"), rewards_info.get("extra_logs") or {}
    info = {"reward": torch.tensor([reward_val]), "score": torch.tensor([score_value])}
    for key, value in extra_logs.items():
        info[key] = torch.tensor([value])
    return {"rewards": torch.tensor([reward_val]), "scores": torch.tensor([score_value]), "info": info}


def kept_by_dynamic_filtering(group: list[dict], low: float = 0.0, high: float = 1.0) -> bool:
    """samples_generator.py ``_generate_vllm``: a group is dropped unless low < mean score < high."""
    scores = [e["scores"][0].item() for e in group]
    avg = sum(scores) / len(scores)
    return low < avg < high


def group_norm(group: list[dict], n: int) -> torch.Tensor:
    """ppo_utils/experience_maker.py ``compute_advantages_and_returns``, estimator group_norm."""
    raw = torch.cat([e["rewards"] for e in group], dim=0)
    rewards = raw.reshape(-1, n)
    return ((rewards - rewards.mean(-1, keepdim=True)) / (rewards.std(-1, keepdim=True) + 1e-9)).reshape(-1)


def test_http_route_as_openrlhf_calls_it(served, tmp_path):
    s, cfg = served
    want = [a["reward"] for a in counter_alone(cfg)]
    queries, prompts, labels = samples(tmp_path)
    url = f"{s.url}/openrlhf/get_reward"

    async def all_samples() -> list[dict]:
        return await asyncio.gather(*(fetch_via_http(url, q, p, lab) for q, p, lab in zip(queries, prompts, labels)))

    answers = asyncio.run(all_samples())
    group = [experience(a) for a in answers]
    got = [e["rewards"].item() for e in group]
    assert [g for g, w in zip(got, want) if w is not None] == pytest.approx([w for w in want if w is not None])
    assert math.isnan(got[3]) and group[3]["info"]["rubricrl/reward_missing"].item() == 1.0
    assert [e["info"]["rubricrl/tier"].item() for e in group[:3]] == [3.0, 2.0, 1.0]
    assert not kept_by_dynamic_filtering(group)  # the group with the missing reward is dropped, as we drop it
    whole = group[:3] + [group[0]]
    assert kept_by_dynamic_filtering(whole)
    adv = group_norm(whole, 4)
    assert torch.isfinite(adv).all() and adv[0] > 0 > adv[2]


def test_file_form_as_openrlhf_loads_it(served, tmp_path, monkeypatch):
    """``SingleTurnAgentExecutor.__init__`` loads ``reward_func`` from the .py path; ``_fetch_rewards_via_func``
    calls it in a thread with one sample at a time."""
    s, cfg = served
    queries, prompts, labels = samples(tmp_path)
    monkeypatch.setenv("RUBRICRL_SERVICE__URL", s.url)  # the file form reaching the running service
    monkeypatch.setenv("RUBRICRL_DATA_DIR", str(cfg.data_dir))
    scorer.cache_clear()
    try:
        spec = importlib.util.spec_from_file_location("reward_func", openrlhf_adapter.__file__)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)

        async def via_func() -> list[dict]:
            return await asyncio.gather(*(asyncio.to_thread(module.reward_func, queries[i:i + 1], prompts[i:i + 1],
                                                            labels[i:i + 1]) for i in range(len(queries))))

        by_func = asyncio.run(via_func())
    finally:
        scorer.cache_clear()
    by_http = [asyncio.run(fetch_via_http(f"{s.url}/openrlhf/get_reward", q, p, lab))
               for q, p, lab in zip(queries, prompts, labels)]
    for f, h in zip(by_func, by_http):
        assert f["extra_logs"]["rubricrl/tier"] == pytest.approx(h["extra_logs"]["rubricrl/tier"], nan_ok=True)
        assert f["rewards"] == pytest.approx(h["rewards"], nan_ok=True)


def test_a_bad_sample_is_a_422_naming_the_openrlhf_field(served):
    import httpx

    s, _ = served
    r = httpx.post(f"{s.url}/openrlhf/get_reward", json={"query": ["p: x"], "prompts": ["p: "], "labels": ["q-none"]})
    assert r.status_code == 422 and r.json()["error"]["field"] == "labels[0]"
    big = {"query": ["p: " + "x" * 1_000_001], "prompts": ["p: "], "labels": ["q-counter"]}
    r = httpx.post(f"{s.url}/openrlhf/get_reward", json=big)
    assert r.status_code == 413 and r.json()["error"]["field"] == "query[0]"
