"""train-rl: rl_queries -> GRPO on DeepSpeed (+ vLLM or transformers rollouts) in a launched job.

The flow writes the whole resolved configuration once into the run folder
(``<data_dir>/runs/train-rl/<run>/config.json``; its ``llm.provider`` is the provider this flow
resolved, never ``auto``) and starts the job (``python -m training --config``
that file, or torchrun for several processes) as a process, by ``training/jobs.py`` (train-sft's
launcher too). Every step the job calls the ``score-step`` flow (``flows/score_step.py``), which reads
the same file: the environment (gates, judge, hierarchical reward) and attribution (direct/context
spans -> token membership) run as flow tasks, never inside the trainer. Afterwards the flow publishes the per-step records as the
``rollouts``, ``train_steps`` and ``attributions`` stages, and the ``judgments``, ``rewards`` and
``check_results`` stages by ``tasks/env/publish.py`` (the one seam of every flow that scores).

Run: ``rubricrl run --only train-rl`` or ``prefect deployment run train-rl/demo``.
"""
from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from prefect import flow, get_run_logger

from flows.common import flow_context, forward_library_logs, publish_artifact, stage_summary
from schemas.config import write_config
from schemas.config.env import EnvConfig
from schemas.contracts.attribution import ATTRIBUTIONS_SCHEMA, attributions_suites
from schemas.contracts.training import (JUDGE_PROVIDER, TRAIN_ROLLOUTS_SCHEMA, TRAIN_STEPS_SCHEMA, rollouts_suites,
                                        train_steps_suites, with_judge_provider)
from schemas.layout import CHECKPOINTS, FINAL_MODEL, RUN_CONFIG, RUN_QUERIES, RUN_RECORDS, runs_dir
from tasks.env.publish import publish_scores
from tasks.env.score_tables import missing_counts
from tasks.rl.checkpoints import install_policy, newest_policy
from tasks.rl.plots import write_run_plots
from tasks.rl.step_run import read_step_scores
from tasks.stages.stage import StageOutcome, StageSpec, run_stage
from training.config import with_mode_reward
from training.jobs import GRPO_JOB, run_job


def _api_url() -> str | None:
    from prefect.client.orchestration import get_client

    try:
        with get_client(sync_client=True) as c:
            return str(c.api_url)
    except Exception:  # noqa: BLE001 - no server reachable: the job's flows start their own
        return None


def step_judge_providers(records: Path) -> dict[str, str]:
    """``step-NNNNNN`` -> the provider(s) of that step's judgments records (comma-joined when several)."""
    found: dict[str, set[str]] = {}
    for p in sorted((records / "judgments").glob("step-*.parquet")):
        step = p.stem.split("-rank")[0]
        found.setdefault(step, set()).update(x for x in pq.read_table(p, columns=["provider"]).column(0).to_pylist() if x)
    return {k: ",".join(sorted(v)) for k, v in found.items()}


def _with_lineage(table: pa.Table, provider: str | None) -> pa.Table:
    return table.append_column(JUDGE_PROVIDER, pa.array([provider] * table.num_rows, pa.string()))


def _publish_records(fc: Any, env: EnvConfig, run_dir: Path, inputs: dict[str, str]) -> list[StageOutcome]:
    """The run's records as stages: the scored ones by the one seam, the rest with their judges' lineage."""
    records = run_dir / RUN_RECORDS
    lineage = step_judge_providers(records)
    inputs = {**inputs, "run": run_dir.name}
    keys = sorted(p.stem for p in (records / "judgments").glob("*.parquet"))
    scored = publish_scores(fc.store, keys, lambda k: read_step_scores(records, k), env=env, provider=fc.provider,
                            inputs=inputs, extra={"files": keys})
    derived = {}
    for name, schema, suites in (("rollouts", TRAIN_ROLLOUTS_SCHEMA, rollouts_suites),
                                 ("train_steps", TRAIN_STEPS_SCHEMA, train_steps_suites),
                                 ("attributions", ATTRIBUTIONS_SCHEMA, attributions_suites)):
        files = {p.stem: p for p in sorted((records / name).glob("*.parquet"))}

        def part(k: str, files: dict[str, Path] = files, schema: pa.Schema = schema) -> pa.Table:
            return _with_lineage(pq.read_table(files[k], schema=schema), lineage.get(k.split("-rank")[0]))

        derived[name] = run_stage(fc.store, StageSpec(name, with_judge_provider(schema), suites),
                                  part_keys=list(files), make_part=part,
                                  provider=fc.provider.name, config=fc.cfg.model_dump(mode="json"),
                                  config_hash=fc.cfg.section_hash("train", "env", "attribution"),
                                  inputs=inputs, extra={"files": sorted(files)})
    return [derived["rollouts"], derived["train_steps"], *scored, derived["attributions"]]


@flow(name="train-rl", log_prints=True)
def train_rl(profile: str = "demo", sets: list[str] | None = None, force: bool = False, nproc: int = 1,
             resume_run: str | None = None) -> dict[str, Any]:
    """GRPO with environment rewards and diagnostic token weights; ``resume_run`` continues a run dir."""
    forward_library_logs()
    fc = flow_context(profile, sets)
    logger = get_run_logger()
    store = fc.store
    cfg = with_mode_reward(fc.cfg).model_copy(deep=True)  # a refused ablation switch stops the run here
    if store.read("rl_queries", columns=["query_id"]).num_rows == 0:
        raise ValueError("the rl_queries stage is empty; run select-rl-queries first")
    runs = runs_dir(store.root, "train-rl")
    run_dir = runs / resume_run if resume_run else runs / datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    run_dir.mkdir(parents=True, exist_ok=True)
    queries_path = run_dir / RUN_QUERIES
    pq.write_table(store.read("rl_queries", columns=["query_id", "query", "rubric_json"]), queries_path)
    policy = newest_policy(store.root)
    cfg.data_dir = store.root.resolve()  # the job and the scorer may run elsewhere
    # the provider this flow resolved: every scorer process (Ray workers too) reads it, none resolves `auto` again
    cfg.llm = fc.pinned_llm()
    run = cfg.train.run
    run.out_dir, run.queries_path, run.resume = run_dir, str(queries_path), resume_run is not None
    run.score_fn = "flows.score_step:score_step_flow"
    if policy is not None:
        cfg.train.model.path = str(policy)
    logger.info("policy: %s", policy or "a tiny random model built by the job (no checkpoint yet)")
    cfg_path = write_config(cfg, run_dir / RUN_CONFIG)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if (url := _api_url()) is not None:
        env["PREFECT_API_URL"] = url
    run_job(GRPO_JOB, cfg_path, run_dir / "job.log", nproc=nproc, env=env, append=True)
    summary = json.loads((run_dir / "summary.json").read_text())
    final = run_dir / FINAL_MODEL
    ckpt = store.root / CHECKPOINTS / f"rl-{run_dir.name}" / FINAL_MODEL
    if final.exists():
        install_policy(final, ckpt)
    outcomes = _publish_records(fc, cfg.env, run_dir, {"rl_queries": store.version("rl_queries")})
    png = write_run_plots(store, run_dir, fc.cfg.attribution)
    hist = summary.get("history", [])
    rows = [stage_summary(o, missing_counts(store.read("rewards")) if o.manifest.stage == "rewards" else None)
            for o in outcomes]
    last = hist[-1] if hist else {}
    notes = (f"Run dir: `{run_dir}`  \nPlots: [{png.name}]({png.as_uri()})  \nTensorBoard: `tensorboard --logdir {summary['tensorboard']}`  \n"
             f"Policy in: `{policy or 'tiny random model'}`; policy out: `{ckpt}`  \n"
             f"Mode: {summary.get('mode')}; steps {summary.get('steps_run')}; last step: reward/mean "
             f"{last.get('reward/mean', float('nan')):.4f}, loss/policy {last.get('loss/policy', float('nan')):.5f}")
    publish_artifact("train-rl", rows, notes=notes, fc=fc)
    print(f"train-rl: {summary.get('steps_run')} steps in {run_dir}; TensorBoard logs {summary['tensorboard']}; "
          f"step stages: rollouts, judgments, rewards, check_results, attributions, train_steps")
    return {"run_dir": str(run_dir), "tensorboard": summary["tensorboard"], "policy_out": str(ckpt), "png": str(png),
            "stages": rows, "history": hist}
