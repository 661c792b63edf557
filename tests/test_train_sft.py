"""The SFT job on the tiny model (CPU, DeepSpeed): the answer loss falls, resume is bit-for-bit, bad batch sizes
are clear errors."""
from __future__ import annotations

import pytest
import torch

from training.sft import run_sft, sft_demo_config


def _params(path):
    from safetensors.torch import load_file

    return load_file(str(path / "model.safetensors"))


def test_sft_loss_falls_and_resume_is_bit_for_bit(tmp_path):
    cfg = lambda out, steps_epochs, resume=False: sft_demo_config(  # noqa: E731
        run={"out_dir": str(out), "epochs": steps_epochs, "save_every": 2, "resume": resume,
             "instruction": "Write one HTML file."}, optim={"lr": 2e-3})
    full = run_sft(cfg(tmp_path / "a", 2))  # 8 toy examples, 4 per step -> 4 steps
    losses = [h["loss/sft"] for h in full["history"]]
    assert len(losses) == 4 and losses[-1] < losses[0] - 0.5, losses
    run_sft(cfg(tmp_path / "b", 1))  # 2 steps, checkpoint at 2
    resumed = run_sft(cfg(tmp_path / "b", 2, resume=True))
    assert resumed["start_step"] == 2 and resumed["steps_run"] == 2
    a, b = _params(tmp_path / "a" / "final_model"), _params(tmp_path / "b" / "final_model")
    assert all(torch.equal(a[n], b[n]) for n in a)


def test_sft_batch_that_does_not_split_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="micro-batches of deepspeed.micro_batch_size=3"):
        run_sft(sft_demo_config(run={"out_dir": str(tmp_path)}, deepspeed={"micro_batch_size": 3}))
