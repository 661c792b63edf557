"""train-rl: rl_queries -> GRPO on DeepSpeed (+ vLLM or transformers rollouts) in a launched job.

The job (``python -m training``, or torchrun/deepspeed for several processes) is started as a
process; every step it calls :func:`score_fn`, which runs the ``score-step`` flow in the trainer's
process: the environment (gates, judge, hierarchical reward) and attribution (direct/context spans ->
token markers) as flow tasks, never inside the trainer. Afterwards the flow publishes the per-step
records as the ``rollouts``, ``judgments``, ``rewards``, ``attributions`` and ``train_steps`` stages.

Run: ``rubricrl run --only train-rl`` or ``prefect deployment run train-rl/demo``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from flows.common import flow_context, forward_library_logs, publish_artifact, stage_summary
from schemas.attribution import ATTRIBUTIONS_SCHEMA, attributions_suites
from schemas.config import load_config
from schemas.env import JUDGMENTS_SCHEMA, REWARDS_SCHEMA, judgments_suites, rewards_suites
from schemas.train_records import TRAIN_ROLLOUTS_SCHEMA, TRAIN_STEPS_SCHEMA
from schemas.train_stages import JUDGE_PROVIDER, rollouts_suites, train_steps_suites, with_judge_provider
from tasks import rl_step
from tasks.env.records import task_from_row
from tasks.stage import StageSpec, run_stage
from tasks.train_plots import write_run_plots
from tasks.store import StageStore, atomic_write_table

REPO = Path(__file__).resolve().parent.parent
CONTEXT_ENV = "RUBRICRL_TRAIN_CONTEXT"  # JSON: profile, sets, records dir (set by the flow for the job)

score_step_task = task(rl_step.score_step, name="score-and-attribute", cache_policy=NO_CACHE)


@lru_cache(maxsize=4)
def _tasks(data_dir: str, version: str) -> dict[str, Any]:
    rows = StageStore(data_dir).read("rl_queries", columns=["query_id", "query", "rubric_json"]).to_pylist()
    return {r["query_id"]: task_from_row(r) for r in rows}


@lru_cache(maxsize=4)
def _tokenizer(model_path: str) -> Any:
    from tasks.attribution.tokens import load_tokenizer

    return load_tokenizer(model_path)


@flow(name="score-step", log_prints=True)
def score_step_flow(step: int, rank: int, query_ids: list[str], responses: list[str], token_ids: list[list[int]],
                    model_path: str) -> dict[str, Any]:
    """One step's rewards and token markers (runs in the trainer's process, recorded in Prefect)."""
    ctx = json.loads(os.environ[CONTEXT_ENV])
    fc = flow_context(ctx["profile"], ctx["sets"])
    tasks = _tasks(str(fc.store.root), fc.store.version("rl_queries"))
    ids = [f"s{step:05d}-r{rank}-{i:04d}" for i in range(len(responses))]
    out = score_step_task(ids, query_ids, responses, token_ids, tasks, _tokenizer(model_path), provider=fc.provider,
                          env=fc.cfg.env, attribution=fc.cfg.attribution)
    records = Path(ctx["records"])
    for name, table in (("judgments", out.judgments), ("rewards", out.rewards_table),
                        ("attributions", out.attributions)):
        atomic_write_table(records / name / f"step-{step:06d}-rank{rank}.parquet", table)
    return {"rewards": out.rewards, "markers": out.markers,
            "info": {"uniform": out.uniform, "passed": out.passed, "tier": out.tier,
                     "judge_failed": [r is None for r in out.rewards], "time_score_s": out.time_score_s,
                     "time_attribute_s": out.time_attribute_s}}


def score_fn(prompts: list[str], responses: list[str], token_ids: list[list[int]], *, query_ids: list[str],
             step: int, rank: int, model_path: str, **_: Any) -> tuple[list[float | None], list[list[float]], dict]:
    """The trainer's ``run.score_fn``: delegates to the score-step flow."""
    out = score_step_flow(step, rank, query_ids, responses, token_ids, model_path)
    return out["rewards"], out["markers"], out["info"]


def _api_url() -> str | None:
    from prefect.client.orchestration import get_client

    try:
        with get_client(sync_client=True) as c:
            return str(c.api_url)
    except Exception:  # noqa: BLE001 - no server reachable: the job's flows start their own
        return None


def launch_job(cfg_path: Path, nproc: int, env: dict[str, str], log_path: Path) -> None:
    if nproc > 1:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
               "-m", "training", "--config", str(cfg_path)]
    else:
        cmd = [sys.executable, "-m", "training", "--config", str(cfg_path)]
    with open(log_path, "ab") as log:
        res = subprocess.run(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    if res.returncode != 0:
        tail = log_path.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"the GRPO job exited with code {res.returncode}; its log is {log_path}:\n{tail}")


def step_judge_providers(records: Path) -> dict[str, str]:
    """``step-NNNNNN`` -> the provider(s) of that step's judgments records (comma-joined when several)."""
    found: dict[str, set[str]] = {}
    for p in sorted((records / "judgments").glob("step-*.parquet")):
        step = p.stem.split("-rank")[0]
        found.setdefault(step, set()).update(x for x in pq.read_table(p, columns=["provider"]).column(0).to_pylist() if x)
    return {k: ",".join(sorted(v)) for k, v in found.items()}


def _with_lineage(table: pa.Table, provider: str | None) -> pa.Table:
    return table.append_column(JUDGE_PROVIDER, pa.array([provider] * table.num_rows, pa.string()))


def _publish_records(fc: Any, run_dir: Path, inputs: dict[str, str]) -> list[Any]:
    lineage = step_judge_providers(run_dir / "records")
    specs = [("rollouts", TRAIN_ROLLOUTS_SCHEMA, rollouts_suites, True),
             ("train_steps", TRAIN_STEPS_SCHEMA, train_steps_suites, True),
             ("judgments", JUDGMENTS_SCHEMA, judgments_suites, False),
             ("rewards", REWARDS_SCHEMA, lambda: rewards_suites(0.0, fc.cfg.env.reward.rubric_max), False),
             ("attributions", ATTRIBUTIONS_SCHEMA, attributions_suites, True)]
    outcomes = []
    for name, schema, suites, derived in specs:
        files = {p.stem: p for p in sorted((run_dir / "records" / name).glob("*.parquet"))}

        def part(k: str, files=files, schema=schema, derived=derived) -> pa.Table:
            table = pq.read_table(files[k], schema=schema)
            return _with_lineage(table, lineage.get(k.split("-rank")[0])) if derived else table

        stage_schema = with_judge_provider(schema) if derived else schema
        outcomes.append(run_stage(fc.store, StageSpec(name, stage_schema, suites), part_keys=list(files),
                                  make_part=part,
                                  provider=fc.provider.name, config=fc.cfg.model_dump(mode="json"),
                                  config_hash=fc.cfg.section_hash("train", "env", "attribution"),
                                  inputs={**inputs, "run": run_dir.name}, extra={"files": sorted(files)}))
    return outcomes


@flow(name="train-rl", log_prints=True)
def train_rl(profile: str = "demo", sets: list[str] | None = None, force: bool = False, nproc: int = 1,
             resume_run: str | None = None) -> dict[str, Any]:
    """GRPO with environment rewards and diagnostic token weights; ``resume_run`` continues a run dir."""
    forward_library_logs()
    fc = flow_context(profile, sets)
    logger = get_run_logger()
    store = fc.store
    rl = store.read("rl_queries", columns=["query_id", "query"])
    if rl.num_rows == 0:
        raise ValueError("the rl_queries stage is empty; run select-rl-queries first")
    runs = store.root / "runs" / "train-rl"
    run_dir = runs / resume_run if resume_run else runs / datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    run_dir.mkdir(parents=True, exist_ok=True)
    queries_path = run_dir / "queries.parquet"
    pq.write_table(rl, queries_path)
    from tasks.checkpoints import newest_policy

    policy = newest_policy(store.root)
    cfg = fc.cfg.train.model_copy(deep=True)
    cfg.run.out_dir = run_dir
    cfg.run.queries_path = str(queries_path)
    cfg.run.score_fn = "flows.train_rl:score_fn"
    cfg.run.resume = resume_run is not None
    if policy is not None:
        cfg.model.path = str(policy)
    logger.info("policy: %s", policy or "a tiny random model built by the job (no checkpoint yet)")
    cfg_path = run_dir / "train_rl.json"
    cfg_path.write_text(cfg.model_dump_json(indent=2))
    env = dict(os.environ, **{CONTEXT_ENV: json.dumps({"profile": fc.cfg.profile, "sets": list(sets or []),
                                                       "records": str(run_dir / "records")}),
                              "RUBRICRL_DATA_DIR": str(store.root), "PYTHONUNBUFFERED": "1"})
    if (url := _api_url()) is not None:
        env["PREFECT_API_URL"] = url
    launch_job(cfg_path, nproc, env, run_dir / "job.log")
    summary = json.loads((run_dir / "summary.json").read_text())
    final = run_dir / "final_model"
    ckpt = store.root / "checkpoints" / f"rl-{run_dir.name}" / "final_model"
    if final.exists():
        ckpt.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(final, ckpt, dirs_exist_ok=True)
    outcomes = _publish_records(fc, run_dir, {"rl_queries": store.version("rl_queries")})
    png = write_run_plots(store, run_dir, fc.cfg.attribution)
    hist = summary.get("history", [])
    rows = [stage_summary(o) for o in outcomes]
    last = hist[-1] if hist else {}
    notes = (f"Run dir: `{run_dir}`  \nPlots: [{png.name}]({png.as_uri()})  \nTensorBoard: `tensorboard --logdir {summary['tensorboard']}`  \n"
             f"Policy in: `{policy or 'tiny random model'}`; policy out: `{ckpt}`  \n"
             f"Mode: {summary.get('mode')}; steps {summary.get('steps_run')}; last step: reward/mean "
             f"{last.get('reward/mean', float('nan')):.4f}, loss/policy {last.get('loss/policy', float('nan')):.5f}")
    publish_artifact("train-rl", rows, notes=notes, fc=fc)
    print(f"train-rl: {summary.get('steps_run')} steps in {run_dir}; TensorBoard logs {summary['tensorboard']}; "
          f"step stages: rollouts, judgments, rewards, attributions, train_steps")
    return {"run_dir": str(run_dir), "tensorboard": summary["tensorboard"], "policy_out": str(ckpt), "png": str(png),
            "stages": rows, "history": hist}
