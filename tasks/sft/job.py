"""The SFT job seen from the pipeline (paper D.1): its examples, read from generate-sft's chat-format export;
the export's part of the train-sft run key; and what the job leaves in its run folder, the per-step
records (the ``sft_steps`` stage) and the loss curve drawn from them. ``training/jobs.py`` runs the job.

Run: ``chat_to_examples(pq.read_table(export).to_pylist())``; ``loss_plot(read_steps(out_dir).to_pylist(), png)``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from schemas.contracts.training import SFT_STEPS_SCHEMA
from schemas.layout import RUN_RECORDS
from tasks.stages.files import file_checksum


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


def export_hash(path: Path) -> str:
    """The export's identity in the train-sft run key: the first 16 hex digits of its sha256."""
    return file_checksum(path)["sha256"][:16]


def read_steps(out_dir: Path) -> pa.Table:
    """The job's per-step records under ``out_dir`` as one ``sft_steps`` table."""
    files = sorted((out_dir / RUN_RECORDS / "train_steps").glob("step-*.parquet"))
    if not files:
        raise RuntimeError(f"the SFT job wrote no step records under {out_dir}/records; see {out_dir}/job.log")
    return pa.concat_tables([pq.read_table(f, schema=SFT_STEPS_SCHEMA) for f in files])


def losses(steps: list[dict[str, Any]]) -> list[tuple[int, float]]:
    """(step, loss/sft) of ``sft_steps`` rows, by step."""
    return sorted((r["step"], r["value"]) for r in steps if r["metric"] == "loss/sft")


def loss_plot(steps: list[dict[str, Any]], path: Path) -> Path:
    """The loss curve of ``sft_steps`` rows as a PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = losses(steps)
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
