"""Checkpoints: model, optimiser (through DeepSpeed), every rank's RNG state and the data position.

Layout: ``<out_dir>/checkpoints/step_000010/`` (DeepSpeed's files) plus ``rng_rank<r>.pt`` and a
``COMPLETE.json`` written last, after a barrier; resume only trusts tags that have it, so a crash
mid-save, or a NaN stop, never replaces the last good checkpoint. Old tags beyond ``keep`` are
removed after a new one completes.
"""
from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

COMPLETE = "COMPLETE.json"


def tag_for(step: int) -> str:
    return f"step_{step:06d}"


def complete_tags(ckpt_dir: Path) -> list[str]:
    if not ckpt_dir.exists():
        return []
    return sorted(p.name for p in ckpt_dir.iterdir() if p.is_dir() and (p / COMPLETE).exists())


def rng_state() -> dict[str, Any]:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save(engine: Any, ckpt_dir: Path, step: int, client_state: dict[str, Any], rank: int, keep: int) -> Path:
    """Save after ``step`` completed steps; every rank calls this."""
    import torch.distributed as dist

    tag = tag_for(step)
    engine.save_checkpoint(str(ckpt_dir), tag=tag, client_state=client_state, save_latest=True)
    torch.save(rng_state(), ckpt_dir / tag / f"rng_rank{rank}.pt")
    dist.barrier()
    if rank == 0:
        (ckpt_dir / tag / COMPLETE).write_text(json.dumps({"step": step, **client_state}))
        for old in complete_tags(ckpt_dir)[:-keep]:
            shutil.rmtree(ckpt_dir / old, ignore_errors=True)
    dist.barrier()
    return ckpt_dir / tag


def load_latest(engine: Any, ckpt_dir: Path, rank: int) -> dict[str, Any] | None:
    """Restore the newest complete checkpoint; returns its client state, or None when there is none."""
    tags = complete_tags(ckpt_dir)
    if not tags:
        return None
    tag = tags[-1]
    path, client_state = engine.load_checkpoint(str(ckpt_dir), tag=tag, load_optimizer_states=True,
                                                load_lr_scheduler_states=True)
    if path is None:
        raise ValueError(f"checkpoint {ckpt_dir / tag} could not be loaded; delete it to resume from an earlier one")
    rng_file = ckpt_dir / tag / f"rng_rank{rank}.pt"
    if not rng_file.exists():
        raise ValueError(f"{rng_file} is missing: the checkpoint was written with a different world size; resume with "
                         "the same number of processes")
    set_rng_state(torch.load(rng_file, weights_only=False))
    return dict(client_state or {})
