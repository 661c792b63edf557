"""train-sft (paper D.1): the chat-format teacher answers of generate-sft -> the SFT job -> the policy
checkpoint that initialises RL (``<data_dir>/checkpoints/sft/final_model``) and the ``sft_steps`` stage.

The job (``python -m training.sft --config ...``) runs in a SUBPROCESS: DeepSpeed initialised in this
process would break later runs in it. Its out_dir is ``<data_dir>/runs/sft/<key>`` where the key hashes
the export and the ``train_sft`` section, so a run killed half way resumes from its newest checkpoint
(bit-for-bit on CPU) and a finished one is not redone. The artifact carries the loss curve (PNG path
and a table). ``train_sft.model.path`` None means the tiny random model (built by the job).

Run: ``rubricrl run --only train-sft`` or ``train_sft(profile="demo")``.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from flows.common import flow_context, forward_library_logs, publish_artifact, stage_summary
from schemas.config import Config, write_config
from schemas.contracts.training import SFT_STEPS_SCHEMA, sft_steps_suites
from schemas.layout import (EXPORTS, FINAL_MODEL, REPORTS, RUN_CHECKPOINTS, RUN_CONFIG, RUN_RECORDS,
                            SFT_EXPORT, runs_dir)
from tasks.rl.checkpoints import install_policy, sft_policy_dir
from tasks.stages.stage import StageSpec, run_stage
from tasks.stages.store import fingerprint

REPO = Path(__file__).resolve().parent.parent


def chat_to_examples(rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Chat rows (system/user/assistant ``messages``) -> the job's ``query_id``/``query``/``answer`` rows.

    The user turn IS the expanded query (the shared generation prompt's user text is ``{{query}}``),
    and the job re-applies the same system prompt, so nothing is lost. A row without a user or
    assistant turn is a clear error naming it."""
    out = []
    for i, r in enumerate(rows):
        turns = {m["role"]: m["content"] for m in r.get("messages") or []}
        if not turns.get("user") or not turns.get("assistant"):
            raise ValueError(f"export row {i} ({r.get('answer_id') or r.get('query_id')}) has no user or assistant "
                             "turn; re-run generate-sft to rebuild exports/sft_train.parquet")
        out.append({"query_id": str(r.get("query_id") or i), "query": turns["user"], "answer": turns["assistant"]})
    return out


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def run_job(cfg: Config, out_dir: Path) -> dict[str, Any]:
    """Write the whole config into ``out_dir``, run ``python -m training.sft`` in a subprocess (resuming
    if it has checkpoints)."""
    resume = any((out_dir / RUN_CHECKPOINTS).glob("*")) if (out_dir / RUN_CHECKPOINTS).is_dir() else False
    cfg = cfg.model_copy(deep=True)
    cfg.train_sft.run.out_dir, cfg.train_sft.run.resume = out_dir, resume
    conf = write_config(cfg, out_dir / RUN_CONFIG)
    log = out_dir / "job.log"
    with open(log, "w") as f:
        proc = subprocess.run([sys.executable, "-m", "training.sft", "--config", str(conf)], cwd=REPO, stdout=f,
                              stderr=subprocess.STDOUT, env=dict(os.environ), check=False)
    text = log.read_text(errors="replace")
    if proc.returncode == 2 and "error:" in text:
        raise ValueError(text[text.rindex("error:"):].strip() + f" (SFT job log: {log})")
    if proc.returncode != 0:
        raise RuntimeError(f"the SFT job exited with {proc.returncode}; last lines of {log}:\n{text[-3000:]}")
    return {"resumed": resume, "log": str(log), "final_model": out_dir / FINAL_MODEL}


def _steps(out_dir: Path) -> pa.Table:
    files = sorted((out_dir / RUN_RECORDS / "train_steps").glob("step-*.parquet"))
    if not files:
        raise RuntimeError(f"the SFT job wrote no step records under {out_dir}/records; see {out_dir}/job.log")
    return pa.concat_tables([pq.read_table(f, schema=SFT_STEPS_SCHEMA) for f in files])


def loss_plot(steps: list[dict[str, Any]], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = sorted((r["step"], r["value"]) for r in steps if r["metric"] == "loss/sft")
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o")
    ax.set_xlabel("step")
    ax.set_ylabel("answer-token cross-entropy")
    ax.set_title("SFT loss")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


sft_job = task(run_job, name="sft-job", cache_policy=NO_CACHE)


@flow(name="train-sft", log_prints=True)
def train_sft(profile: str = "demo", sets: list[str] | None = None, force: bool = False) -> dict[str, Any]:
    forward_library_logs()
    fc = flow_context(profile, sets)
    cfg, store = fc.cfg, fc.store
    logger = get_run_logger()
    export = store.root / EXPORTS / SFT_EXPORT
    if not export.exists():
        raise ValueError(f"{export} does not exist; run generate-sft first (it writes the chat-format export)")
    examples = chat_to_examples(pq.read_table(export).to_pylist())
    export_hash = _file_hash(export)
    key = fingerprint(export=export_hash, train_sft=cfg.section_hash("train_sft"))
    out_dir = runs_dir(store.root, "sft") / key
    dest = sft_policy_dir(store.root)
    job: dict[str, Any] = {}

    def make(_k: str) -> pa.Table:
        out_dir.mkdir(parents=True, exist_ok=True)
        answers = out_dir / "examples.jsonl"
        answers.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in examples), encoding="utf-8")
        logger.info("SFT on %d accepted teacher answers; job out_dir %s", len(examples), out_dir)
        job_cfg = cfg.model_copy(deep=True)
        job_cfg.train_sft.run.answers_path = str(answers)
        job.update(sft_job(job_cfg, out_dir))
        install_policy(out_dir / FINAL_MODEL, dest)
        return _steps(out_dir)

    out = run_stage(store, StageSpec("sft_steps", SFT_STEPS_SCHEMA, sft_steps_suites), part_keys=["all"],
                    make_part=make, provider="sft-job", config=cfg.model_dump(mode="json"),
                    config_hash=cfg.section_hash("train_sft"), inputs={"sft_export": export_hash},
                    extra={"examples": len(examples)}, force=force,
                    stats=lambda t: {"out_dir": str(out_dir), "checkpoint": str(dest)})
    if not (dest / "config.json").exists():  # stage current but the checkpoint was deleted: reinstall it
        if not (out_dir / FINAL_MODEL / "config.json").exists():
            raise ValueError(f"{dest} is missing and so is {out_dir / FINAL_MODEL}; re-run with force=True")
        install_policy(out_dir / FINAL_MODEL, dest)
    steps = store.read("sft_steps").to_pylist()
    png = loss_plot(steps, store.root / REPORTS / "sft_loss.png")
    losses = sorted((r["step"], r["value"]) for r in steps if r["metric"] == "loss/sft")
    table = "\n".join(["| step | loss/sft |", "|---|---|"] + [f"| {s} | {v:.4f} |" for s, v in losses])
    summary = stage_summary(out, {"checkpoint": str(dest), "examples": len(examples),
                                  "first_loss": round(losses[0][1], 4), "last_loss": round(losses[-1][1], 4)})
    publish_artifact("train-sft", [summary], notes=f"Checkpoint: `{dest}`\n\nLoss curve: `{png}`\n\n{table}", fc=fc)
    print(f"train-sft: {len(losses)} steps, loss {losses[0][1]:.3f} -> {losses[-1][1]:.3f}; checkpoint {dest}")
    return {"stages": [summary], "checkpoint": str(dest), "loss_png": str(png), "losses": [v for _, v in losses],
            "resumed": job.get("resumed", False)}
