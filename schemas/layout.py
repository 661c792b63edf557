"""Every folder and file a run writes under the data directory (``Config.data_dir``), named here only.

``make clean`` removes exactly ``RUN_OUTPUTS`` (``python3 -m schemas.layout data`` prints them as
paths); nothing else is written under the data directory, and nothing a run writes lies outside it.
No third-party imports: ``make clean`` runs it with the system Python.
"""
from __future__ import annotations

import sys
from pathlib import Path

STAGES = "stages"  # Parquet parts + manifest per stage version (tasks/stages/store.py)
CATALOG = "catalog.duckdb"  # one view per published stage (tasks/stages/catalog.py)
VALIDATION = "validation"  # GX validation reports (tasks/stages/stage.py)
REPORTS = "reports"  # plots and markdown reports of the flows
EXPORTS = "exports"  # files for other tools (the SFT chat export)
RUNS = "runs"  # one folder per training run: checkpoints, TensorBoard logs, step records
CHECKPOINTS = "checkpoints"  # the policies the flows hand on (tasks/rl/checkpoints.py)
LLM = "llm"  # response cache, ledger, batch ids (llm.store_path)
RUN_LOCK = "run.lock"  # the flock of the run writing here, and who it is (tasks/stages/lock.py)
RUN_OUTPUTS = (STAGES, CATALOG, VALIDATION, REPORTS, EXPORTS, RUNS, CHECKPOINTS, LLM, RUN_LOCK)

FINAL_MODEL = "final_model"  # a policy as a Hugging Face model directory: checkpoints/<name>/, a run's folder
SFT_EXPORT = "sft_train.parquet"  # the chat-format SFT export (generate-sft writes, train-sft reads), in EXPORTS

RUN_CONFIG = "config.json"  # the whole resolved configuration of one training run, in its run folder
RUN_QUERIES = "queries.parquet"  # a train-rl run's queries with their rubrics, in its run folder
RUN_RECORDS = "records"  # per-step Parquet records of a training run, in its run folder
RUN_CHECKPOINTS = "checkpoints"  # a training job's resumable DeepSpeed checkpoints, in its run folder
SCREENSHOTS = "screenshots"  # app screenshots kept beside a stage (evaluate: stages/eval_results/screenshots)


def runs_dir(data_dir: str | Path, flow: str) -> Path:
    """Where ``flow`` (train-rl, sft, ...) keeps its run folders."""
    return Path(data_dir) / RUNS / flow


def stage_screenshots(stage: str) -> str:
    """The screenshots folder of ``stage``, relative to the data directory (as rows record it)."""
    return f"{STAGES}/{stage}/{SCREENSHOTS}"


if __name__ == "__main__":  # make clean: the paths to remove under the data directory given
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "data")
    print(" ".join(str(root / name) for name in RUN_OUTPUTS))
