"""Configuration of the GRPO and SFT jobs (paper 3.5, 4.3, 4.4, D.1, D.4): one typed section per concern.

:class:`TrainRLConfig` is the ``train`` section of ``schemas/config/``. Defaults
are the paper's where it states them (64 queries x 8 responses per step, BF16 on GPU, untruncated
sampling: top-k above the vocabulary size, D.4); ``DEMO_OVERRIDES`` is the small CPU profile used by
``make run`` and the tests. Cross-field checks live in ``training.config.validate_configs`` because
some need the world size, known only at launch.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import Field

from schemas.config.attribution import WeightRule
from schemas.config.base import Section
from schemas.config.env import RewardKind

Mode = Literal["binary", "hierarchical", "full", "unconditional"]
MODES: tuple[str, ...] = get_args(Mode)
# The token-weight rule each training mode applies (paper 4.3, 4.4): uniform weights are standard GRPO.
# The trainer, the attributions rows and `rubricrl score --advantage` all read it here.
RULE_OF_MODE: dict[str, WeightRule] = {"binary": "uniform", "hierarchical": "uniform", "full": "sign",
                                       "unconditional": "unconditional"}
# The reward each training mode optimises (paper 4.3): the mode is the one switch of the ablations, and a
# training run's scorer gives this reward (training.config.with_mode_reward pins env.reward_kind to it).
REWARD_KIND_OF_MODE: dict[str, RewardKind] = {"binary": "binary", "hierarchical": "hierarchical",
                                              "full": "hierarchical", "unconditional": "hierarchical"}


class ModelSection(Section):
    """The policy to train."""

    path: str | None = Field(None, description="HF directory of the policy (the SFT checkpoint); None = build the "
                                               "tiny random model under <out_dir>/tiny_model")
    tiny_vocab_size: int = Field(512, ge=300, description="Tiny model only: BPE vocabulary size")
    tiny_hidden_size: int = Field(128, ge=16, description="Tiny model only: hidden size")
    tiny_layers: int = Field(2, ge=1, description="Tiny model only: decoder layers")
    gradient_checkpointing: bool = Field(False, description="Activation recomputation (paper D.4 uses it at scale)")


class RolloutSection(Section):
    """Sampling B queries x G responses per step (paper 3.5, D.4)."""

    engine: Literal["transformers", "vllm"] = Field("transformers", description="vllm: colocated in each training "
                                                                                "process; transformers: generate")
    queries_per_step: int = Field(64, ge=1, description="B: queries per step across all ranks (paper: 64)")
    group_size: int = Field(8, ge=2, description="G: responses per query (paper: 8)")
    max_prompt_tokens: int = Field(4096, ge=8, description="Longer prompts are cut from the left, with a warning count")
    max_new_tokens: int = Field(16384, ge=1, description="Generation length limit per response")
    temperature: float = Field(1.0, gt=0.0, description="Sampling temperature; logprobs are of the tempered policy")
    instruction: str | None = Field(None, description="System text replacing the shared generation prompt "
                                                      "(tasks/prompts/generation.md, paper F.3); None = that prompt")
    vllm_gpu_memory_utilization: float = Field(0.3, gt=0.0, le=1.0, description="vLLM KV-cache share on GPU "
                                                                               "(colocated with training)")
    vllm_cpu_kvcache_gb: int = Field(1, ge=1, description="vLLM on CPU: KV cache GiB (VLLM_CPU_KVCACHE_SPACE is "
                                                          "set to it; an exported value that disagrees is an error)")
    stream_scoring: bool = Field(True, description="Score each group as soon as it is generated (training/stream.py; "
                                                   "runner and workers: env.task_runner / env.workers); False = "
                                                   "one score call after the whole batch")
    off_policy: bool = Field(False, description="One-step-off-policy: step t+1's rollouts are generated with the "
                                                "weights step t sampled with, while step t is scored (staleness <= 1)")
    score_timeout_s: float | None = Field(1800.0, gt=0, description="A score call running longer gives missing "
                                                                    "rewards (dropped, counted); None = no limit")


class ObjectiveSection(Section):
    """The weighted clipped surrogate (paper 3.5, D.3, G.3)."""

    mode: Mode = Field("full", description="binary | hierarchical | full | unconditional (paper 4.3, 4.4): the "
                                           "reward (REWARD_KIND_OF_MODE) and the token-weight rule (RULE_OF_MODE)")
    eps_low: float = Field(0.2, ge=0.0, lt=1.0, description="Lower clip range: ratio >= 1 - eps_low")
    eps_high: float = Field(0.28, ge=0.0, description="Upper clip range: ratio <= 1 + eps_high")
    adv_eps: float = Field(1e-6, gt=0.0, description="eps in A_i = (r_i - mean) / (std + eps)")
    kl_coef: float = Field(0.0, ge=0.0, description="k3 KL to the initial policy; 0 = off (default), not weighted")


class OptimSection(Section):
    optimizer: Literal["adamw", "sgd"] = Field("adamw", description="torch optimiser handed to DeepSpeed (nothing "
                                                                     "compiles); sgd is for exact-gradient tests")
    lr: float = Field(1e-6, gt=0.0)
    weight_decay: float = Field(0.0, ge=0.0)
    betas: tuple[float, float] = (0.9, 0.999)
    grad_clip: float = Field(1.0, ge=0.0, description="Global norm clip; 0 = off")


class DeepSpeedSection(Section):
    zero_stage: int = Field(1, ge=0, le=3, description="ZeRO stage (0-3)")
    precision: Literal["fp32", "bf16", "fp16"] = Field("bf16", description="bf16 on GPU (paper D.4); fp32 on CPU")
    micro_batch_size: int = Field(4, ge=1, description="Responses per forward/backward on one rank")
    dist_backend: Literal["auto", "nccl", "gloo"] = Field("auto", description="auto: nccl with CUDA, else gloo")


class RunSection(Section):
    steps: int = Field(200, ge=1, description="Optimiser steps (one per rollout batch; on-policy)")
    seed: int = 0
    out_dir: Path | None = Field(None, description="Checkpoints, TensorBoard logs, per-step records; None = "
                                                 "<data_dir>/runs/train-rl/job (the train-rl flow: one folder per run)")
    save_every: int = Field(50, ge=1, description="Checkpoint every N steps (and at the end)")
    keep_checkpoints: int = Field(2, ge=1, description="Newest checkpoints kept on disk")
    resume: bool = Field(False, description="Continue from the newest checkpoint in out_dir (bit-for-bit on CPU)")
    queries_path: str | None = Field(None, description="Parquet/JSONL with query_id, query (the rl_queries stage); "
                                                       "None = built-in toy queries")
    score_fn: str = Field("training.toy:pattern_reward", description="module:function that scores rollouts")


class TrainRLConfig(Section):
    """The ``train`` section: everything the GRPO job reads."""

    model: ModelSection = Field(default_factory=ModelSection)
    rollout: RolloutSection = Field(default_factory=RolloutSection)
    objective: ObjectiveSection = Field(default_factory=ObjectiveSection)
    optim: OptimSection = Field(default_factory=OptimSection)
    deepspeed: DeepSpeedSection = Field(default_factory=DeepSpeedSection)
    run: RunSection = Field(default_factory=RunSection)


# The CPU demo: a few steps of the tiny policy. It learned the offline teacher app by SFT (about 650
# tokens with its domain tokenizer, training.tiny) and is given enough new tokens to finish it, so GRPO
# samples differ in validity; a learning rate suited to that policy (3e-3 collapsed it after one step).
DEMO_MAX_NEW_TOKENS = 800  # one owner: the demo's probe, GRPO rollouts and evaluation generate this many at most
DEMO_OVERRIDES: dict[str, Any] = {
    "rollout": {"queries_per_step": 2, "group_size": 4, "max_new_tokens": DEMO_MAX_NEW_TOKENS, "max_prompt_tokens": 768},
    "optim": {"lr": 5e-5},
    "deepspeed": {"precision": "fp32", "micro_batch_size": 4, "zero_stage": 1},
    "run": {"steps": 3, "save_every": 2},
}


class SFTRunSection(Section):
    """The supervised stage before RL (paper D.1): teacher answers as targets."""

    epochs: int = Field(1, ge=1)
    examples_per_step: int = Field(64, ge=1, description="Global batch: examples per optimiser step, all ranks")
    max_seq_len: int = Field(16384, ge=16, description="Longer examples are cut (answer tail), and counted")
    seed: int = 0
    out_dir: Path | None = Field(None, description="Checkpoints, TensorBoard logs, final_model/; None = "
                                                 "<data_dir>/runs/sft/job (the train-sft flow: one folder per input)")
    save_every: int = Field(200, ge=1)
    keep_checkpoints: int = Field(2, ge=1)
    resume: bool = False
    answers_path: str | None = Field(None, description="sft_answers stage (Parquet) or JSONL with query and answer; "
                                                       "None = built-in toy examples")
    instruction: str | None = Field(None, description="System text replacing the shared generation prompt; None = "
                                                     "tasks/prompts/generation.md")


class TrainSFTConfig(Section):
    """The ``train_sft`` section (the SFT job shares loading, checkpoints and metrics with GRPO)."""

    model: ModelSection = Field(default_factory=ModelSection)
    optim: OptimSection = Field(default_factory=lambda: OptimSection(lr=1e-5))
    deepspeed: DeepSpeedSection = Field(default_factory=DeepSpeedSection)
    run: SFTRunSection = Field(default_factory=SFTRunSection)


SFT_DEMO_OVERRIDES: dict[str, Any] = {  # 25 epochs: the tiny policy learns the offline teacher app
    # a 1,536-token vocabulary trained on the teacher's apps: an app ~650 tokens, its prompt ~320 (max_seq_len fits both)
    "model": {"tiny_vocab_size": 1536},
    "optim": {"lr": 2e-3},
    "deepspeed": {"precision": "fp32", "micro_batch_size": 2, "zero_stage": 1},
    "run": {"epochs": 25, "examples_per_step": 4, "max_seq_len": 1152, "save_every": 1000},
}
