"""Model loading and the DeepSpeed engine (ZeRO stage, precision, micro-batch, accumulation from config).

A torch optimiser (AdamW, or SGD for exact-gradient tests) is built here and handed to
``deepspeed.initialize`` so nothing compiles FusedAdam. On CPU the process group is gloo and the
accelerator is DeepSpeed's CPU accelerator; ``TORCH_EXTENSIONS_DIR`` defaults to a git-ignored
``.torch_extensions/`` in the repository so the one C++ op DeepSpeed builds on first use is cached,
and that op is loaded first under ``training/ext_lock.py``'s guard against a killed build's lock.
Departure from the paper: it trained with Megatron (D.4); DeepSpeed ZeRO is this project's trainer.

Single process without a launcher works: the rendezvous variables default to a one-rank world.
"""
from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import torch

from schemas.config.train import DeepSpeedSection, OptimSection, TrainRLConfig
from training.config import micro_batches_per_rank
from training.ext_lock import load_comm_op

REPO_ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init_distributed(backend: str = "auto") -> tuple[int, int]:
    """Join (or create) the process group; returns ``(rank, world_size)``."""
    os.environ.setdefault("TORCH_EXTENSIONS_DIR", str(REPO_ROOT / ".torch_extensions"))
    load_comm_op()  # before DeepSpeed asks for the op: a killed build's lock would hang it forever
    import deepspeed
    import torch.distributed as dist

    # Without a launcher: a one-rank world (DeepSpeed reads these even when a group already exists).
    for k, v in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1"), ("MASTER_ADDR", "127.0.0.1")):
        os.environ.setdefault(k, v)
    if not dist.is_initialized():
        os.environ.setdefault("MASTER_PORT", str(_free_port()))
        if backend == "auto":
            backend = "nccl" if torch.cuda.is_available() else "gloo"
        deepspeed.init_distributed(dist_backend=backend, auto_mpi_discovery=False)
    return dist.get_rank(), dist.get_world_size()


def device_for_rank() -> torch.device:
    if torch.cuda.is_available():
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        return torch.device("cuda", local)
    return torch.device("cpu")


def load_policy(path: str | Path, precision: str, device: torch.device, gradient_checkpointing: bool = False):
    """The policy and its tokenizer from an HF directory (fp32 master weights; DeepSpeed casts for bf16)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    p = Path(path)
    if not (p / "config.json").exists():
        raise ValueError(f"model.path={str(p)!r} is not a Hugging Face model directory (no config.json); point it at "
                         "the SFT checkpoint, or leave it unset to build the tiny model")
    tokenizer = AutoTokenizer.from_pretrained(p)
    model = AutoModelForCausalLM.from_pretrained(p, dtype=torch.float32).to(device)
    if gradient_checkpointing:
        model.gradient_checkpointing_enable()
    model.config.use_cache = True
    return model, tokenizer


def deepspeed_config(ds: DeepSpeedSection, optim: OptimSection, grad_accum: int) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "train_micro_batch_size_per_gpu": ds.micro_batch_size,
        "gradient_accumulation_steps": grad_accum,
        "zero_optimization": {"stage": ds.zero_stage},
        "gradient_clipping": optim.grad_clip,  # explicit: 0.0 means off
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
        "zero_allow_untested_optimizer": True,  # torch SGD/AdamW handed in on purpose (nothing compiles)
    }
    if ds.precision == "bf16":
        conf["bf16"] = {"enabled": True}
    return conf


def build_optimizer(optim: OptimSection, model: torch.nn.Module) -> torch.optim.Optimizer:
    params = [p for p in model.parameters() if p.requires_grad]
    if optim.optimizer == "sgd":
        return torch.optim.SGD(params, lr=optim.lr, weight_decay=optim.weight_decay)
    return torch.optim.AdamW(params, lr=optim.lr, betas=optim.betas, weight_decay=optim.weight_decay, foreach=False)


def build_engine_for(ds: DeepSpeedSection, optim: OptimSection, model: torch.nn.Module, grad_accum: int):
    """``deepspeed.initialize`` with the torch optimiser passed in (shared by the GRPO and SFT jobs)."""
    import deepspeed

    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=build_optimizer(optim, model),
                                           config=deepspeed_config(ds, optim, grad_accum))
    return engine


def build_engine(cfg: TrainRLConfig, model: torch.nn.Module, world_size: int):
    """The GRPO engine: one accumulation boundary per step (all of a rank's micro-batches)."""
    return build_engine_for(cfg.deepspeed, cfg.optim, model, micro_batches_per_rank(cfg, world_size))
