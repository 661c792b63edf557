"""The one launcher of training jobs: train-rl starts the GRPO job (``python -m training``, or torchrun for
several processes) and train-sft the SFT job (``python -m training.sft``), each with ``--config`` the whole
resolved configuration the flow wrote into the run folder.

A job runs in a SUBPROCESS: DeepSpeed initialised in the flow's process would break later runs in it. Its
stdout and stderr go to a log file. A job that refuses its configuration exits with 2 after an ``error:``
line (``training/launch.py``, ``training/sft.py``): that line is raised as a ``ValueError``; any other
failure is a ``RuntimeError`` with the last lines of the log.

Run: ``run_job(GRPO_JOB, run_dir / "config.json", run_dir / "job.log", nproc=2)``.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GRPO_JOB, SFT_JOB = "training", "training.sft"
_NAMES = {GRPO_JOB: "GRPO", SFT_JOB: "SFT"}


def job_command(module: str, config: Path, nproc: int = 1) -> list[str]:
    """``python -m <module> --config <config>``, under ``torch.distributed.run`` when ``nproc`` > 1."""
    launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}"] if nproc > 1 else []
    return [sys.executable, *launcher, "-m", module, "--config", str(config)]


def run_job(module: str, config: Path, log: Path, *, nproc: int = 1, env: dict[str, str] | None = None,
            append: bool = False) -> Path:
    """Run the job to its end from the repository root, its output into ``log`` (appended to with
    ``append``, e.g. a resumed run's log); returns the log. ``env``: the job's environment (default: ours)."""
    start = log.stat().st_size if append and log.exists() else 0
    with open(log, "ab" if append else "wb") as f:
        proc = subprocess.run(job_command(module, config, nproc), cwd=REPO, env=dict(env or os.environ), stdout=f,
                              stderr=subprocess.STDOUT, check=False)
    with open(log, "rb") as f:
        f.seek(start)
        text = f.read().decode(errors="replace")
    name = _NAMES.get(module, module)
    if proc.returncode == 2 and "error:" in text:
        raise ValueError(text[text.rindex("error:"):].strip() + f" ({name} job log: {log})")
    if proc.returncode != 0:
        raise RuntimeError(f"the {name} job exited with code {proc.returncode}; last lines of {log}:\n{text[-3000:]}")
    return log
