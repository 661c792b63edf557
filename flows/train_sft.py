"""train-sft (paper D.1): the chat-format teacher answers of generate-sft -> the SFT job -> the policy
checkpoint that initialises RL (``<data_dir>/checkpoints/sft/final_model``) and the ``sft_steps`` stage.

The job (``python -m training.sft --config ...``) runs in a subprocess, started by ``training/jobs.py`` (the
launcher train-rl uses too); its examples, run key, step records and loss curve are ``tasks/sft/job.py``'s.
Its out_dir is ``<data_dir>/runs/sft/<key>`` where the key hashes the export and the ``train_sft`` section,
so a run killed half way resumes from its newest checkpoint (bit-for-bit on CPU) and a finished one is not
redone. The artifact carries the loss curve (PNG path
and a table). ``train_sft.model.path`` None means the tiny random model (built by the job).

Run: ``rubricrl run --only train-sft`` or ``train_sft(profile="demo")``.
"""
from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from flows.common import flow_context, forward_library_logs, publish_artifact, stage_summary
from schemas.config import write_config
from schemas.contracts.training import SFT_STEPS_SCHEMA, sft_steps_suites
from schemas.layout import EXPORTS, FINAL_MODEL, REPORTS, RUN_CHECKPOINTS, RUN_CONFIG, SFT_EXPORT, runs_dir
from tasks.rl.checkpoints import install_policy, sft_policy_dir
from tasks.sft.job import chat_to_examples, export_hash, loss_plot, losses, read_steps
from tasks.stages.stage import StageSpec, run_stage
from tasks.stages.store import fingerprint
from training.jobs import SFT_JOB, run_job

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
    export_key = export_hash(export)
    key = fingerprint(export=export_key, train_sft=cfg.section_hash("train_sft"))
    out_dir = runs_dir(store.root, "sft") / key
    dest = sft_policy_dir(store.root)
    job: dict[str, Any] = {}

    def make(_k: str) -> pa.Table:
        out_dir.mkdir(parents=True, exist_ok=True)
        answers = out_dir / "examples.jsonl"
        answers.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in examples), encoding="utf-8")
        logger.info("SFT on %d accepted teacher answers; job out_dir %s", len(examples), out_dir)
        job_cfg = cfg.model_copy(deep=True)
        run = job_cfg.train_sft.run
        run.answers_path, run.out_dir = str(answers), out_dir
        run.resume = (out_dir / RUN_CHECKPOINTS).is_dir() and any((out_dir / RUN_CHECKPOINTS).glob("*"))
        sft_job(SFT_JOB, write_config(job_cfg, out_dir / RUN_CONFIG), out_dir / "job.log")
        job["resumed"] = run.resume
        install_policy(out_dir / FINAL_MODEL, dest)
        return read_steps(out_dir)

    out = run_stage(store, StageSpec("sft_steps", SFT_STEPS_SCHEMA, sft_steps_suites), part_keys=["all"],
                    make_part=make, provider="sft-job", config=cfg.model_dump(mode="json"),
                    config_hash=cfg.section_hash("train_sft"), inputs={"sft_export": export_key},
                    extra={"examples": len(examples)}, force=force,
                    stats=lambda t: {"out_dir": str(out_dir), "checkpoint": str(dest)})
    if not (dest / "config.json").exists():  # stage current but the checkpoint was deleted: reinstall it
        if not (out_dir / FINAL_MODEL / "config.json").exists():
            raise ValueError(f"{dest} is missing and so is {out_dir / FINAL_MODEL}; re-run with force=True")
        install_policy(out_dir / FINAL_MODEL, dest)
    steps = store.read("sft_steps").to_pylist()
    png = loss_plot(steps, store.root / REPORTS / "sft_loss.png")
    curve = losses(steps)
    table = "\n".join(["| step | loss/sft |", "|---|---|"] + [f"| {s} | {v:.4f} |" for s, v in curve])
    summary = stage_summary(out, {"checkpoint": str(dest), "examples": len(examples),
                                  "first_loss": round(curve[0][1], 4), "last_loss": round(curve[-1][1], 4)})
    publish_artifact("train-sft", [summary], notes=f"Checkpoint: `{dest}`\n\nLoss curve: `{png}`\n\n{table}", fc=fc)
    print(f"train-sft: {len(curve)} steps, loss {curve[0][1]:.3f} -> {curve[-1][1]:.3f}; checkpoint {dest}")
    return {"stages": [summary], "checkpoint": str(dest), "loss_png": str(png), "losses": [v for _, v in curve],
            "resumed": job.get("resumed", False)}
