"""Sampling a policy checkpoint for select-rl-queries and evaluate (shared by both flows).

The policy is the newest checkpoint under ``<data_dir>/checkpoints`` (``tasks.rl.checkpoints``), an
explicit model directory, or, when there is none, the tiny random model built the way
``training.grpo.prepare_model_dir`` builds it (``train.model.tiny_*``, under ``<data_dir>/runs/tiny_model``);
rows say which (``policy_kind`` = ``checkpoint`` | ``tiny-random``). Sampling is the GRPO job's
``TransformersEngine`` in this process (no DeepSpeed: nothing distributed is initialised), with the
shared generation prompt and the empty ``<think></think>`` opening of the assistant turn (paper F.3).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schemas.config.train import ModelSection
from schemas.layout import RUNS
from tasks.rl.checkpoints import is_model_dir, model_identity, newest_policy

log = logging.getLogger("rubricrl.policy")


@dataclass(frozen=True)
class PolicyRef:
    path: Path
    kind: str  # checkpoint | tiny-random
    identity: str  # changes when the weights change: part of the stage fingerprints

    @property
    def label(self) -> str:
        return "tiny-random" if self.kind == "tiny-random" else f"{self.path.parent.name}/{self.path.name}"


def resolve_policy(data_dir: Path, explicit: str | Path | None, tiny: ModelSection, seed: int = 0) -> PolicyRef:
    """An explicit model directory, else the newest checkpoint, else the tiny random model (built once)."""
    if explicit is not None:
        p = Path(explicit)
        if not is_model_dir(p):
            raise ValueError(f"{p} is not a Hugging Face model directory (config.json and weights); give a "
                             "checkpoint's final_model directory")
        return PolicyRef(p.resolve(), "checkpoint", model_identity(p))
    newest = newest_policy(data_dir)
    if newest is not None:
        return PolicyRef(newest.resolve(), "checkpoint", model_identity(newest))
    path = Path(data_dir).resolve() / RUNS / "tiny_model"
    if not (path / "config.json").exists():
        from training.tiny import build_tiny_model

        build_tiny_model(path, vocab_size=tiny.tiny_vocab_size, hidden_size=tiny.tiny_hidden_size,
                         num_layers=tiny.tiny_layers, seed=seed)
    log.warning("no policy checkpoint under %s/checkpoints: sampling the tiny RANDOM model at %s (rows say "
                "policy_kind=tiny-random); run train-sft or train-rl first for a real policy", data_dir, path)
    return PolicyRef(path, "tiny-random", model_identity(path))


def sample_policy(model_dir: Path, queries: list[tuple[str, str]], n: int, *, max_new_tokens: int,
                  max_prompt_tokens: int, temperature: float, seed: int) -> list[dict[str, Any]]:
    """``n`` responses per (query_id, query): rows with query_id, sample, response, n_tokens, finished."""
    import torch

    from training.engine import load_policy
    from training.rollout import TransformersEngine, build_prompt, encode_prompts

    if not queries:
        return []
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model, tok = load_policy(model_dir, "fp32", device)
    engine = TransformersEngine(model, tok, max_new_tokens, temperature)
    prompts, cut = encode_prompts(tok, [build_prompt(tok, q) for _, q in queries], max_prompt_tokens)
    if cut:
        log.warning("%d of %d prompts were longer than %d tokens and were cut from the left", cut, len(prompts),
                    max_prompt_tokens)
    groups = engine.generate(prompts, n, seed)
    rows = []
    for (qid, _), group in zip(queries, groups):
        for k, r in enumerate(group):
            rows.append({"query_id": qid, "sample": k, "response": tok.decode(r.response_ids, skip_special_tokens=True),
                         "n_tokens": len(r.response_ids), "finished": r.finished})
    del engine, model
    return rows
