"""``eval_results`` rows of one generator's rollouts: scored by the environment, with the screenshots the
browser kept and the ingested benchmark's own protocol beside them; the Table-1 summary of those rows.
The evaluate flow (``flows/evaluate.py``) produces the rollouts and publishes the stage.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from schemas.contracts.env import TIERS as ENV_TIERS
from schemas.contracts.evaluation import EVAL_RESULTS_SCHEMA
from schemas.rubric import Task
from tasks.env.extract import extract_html
from tasks.env.score_tables import score_rollouts_table
from tasks.env.runtime import BrowserRuntime
from tasks.env.shots import ScreenshotSpec, app_key
from tasks.evaluation import summary as evaluation
from tasks.evaluation.official import OfficialInputs, official_columns
from tasks.evaluation.official_summary import official_metrics
from tasks.evaluation.screenshots import FOLDER as SCREENSHOTS, off_reason, screenshot_columns
from tasks.progress import Progress
from tasks.evaluation.eval_results import eval_rows, summary_rows, tier_rates


def evaluation_runtime(cfg: Any, data_dir: Path) -> BrowserRuntime | None:
    """The browser evaluate scores with: its own, keeping screenshots beside eval_results. None (screenshots
    off, or no browser): the environment's shared one, as training's, or none."""
    ev, rt = cfg.evaluation, cfg.env.runtime
    if not (ev.screenshots and rt.enabled):
        return None
    return BrowserRuntime(rt, screenshots=ScreenshotSpec(Path(data_dir) / SCREENSHOTS, ev.screenshot_timeout_s))


def eval_table(spec: dict[str, Any], rollouts: list[dict[str, Any]], all_tasks: dict[str, Task],
               meta: dict[str, Any], env: Any, provider: Any, runtime: BrowserRuntime | None,
               data_dir: Path | None, official: OfficialInputs | None = None) -> pa.Table:
    """``eval_results`` rows of one generator's rollouts: scored by the environment (with ``runtime``, else
    the shared browser), with the screenshots ``runtime`` kept (paths relative to ``data_dir``), and by the
    ingested benchmark's own protocol (``official``; None: off)."""
    unknown = sorted({r["query_id"] for r in rollouts} - set(all_tasks))
    if unknown:
        raise ValueError(f"{spec['path']}: responses for queries without a rubric reference {unknown[:10]}; remove "
                         "those files or run build-rubrics for them")
    table = pa.Table.from_pylist([{k: r[k] for k in ("rollout_id", "query_id", "response")} for r in rollouts])
    with Progress(f"evaluate {spec['label']}", len(rollouts), unit="apps", verb="scored") as progress:
        tasks = {q: all_tasks[q] for q in {r["query_id"] for r in rollouts}}
        judg, rew, _checks = score_rollouts_table(table, tasks, provider=provider, cfg=env, runtime=runtime,
                                                  progress=progress)
    verdicts = judg.select(["rollout_id", "gate_rubric_alignment", "findings", "environment_gaps",
                            "undecided_item_ids", "evidence_json"]).to_pylist()
    rows = eval_rows(spec["label"], spec["path"], spec["kind"], rollouts, rew.to_pylist(), verdicts, all_tasks, meta)
    status = dict(zip(judg.column("rollout_id").to_pylist(), judg.column("runtime_status").to_pylist()))
    off = off_reason(runtime is not None and runtime.screenshots is not None, env.runtime.enabled)
    for row, ro in zip(rows, rollouts):
        ext = extract_html(ro["response"] or "")  # the application the browser loaded (score_batch extracts alike)
        row.update(screenshot_columns(
            ext.html if ext else None, status.get(ro["rollout_id"]),
            runtime.shots.get(app_key(ext.html)) if runtime is not None and ext else None, off=off,
            probe_enabled=env.runtime.probe.enabled, exists=lambda rel: (Path(data_dir or ".") / rel).is_file()))
    by_id = {v["rollout_id"]: v for v in verdicts}
    for row, cols in zip(rows, official_columns(rows, [by_id.get(ro["rollout_id"]) for ro in rollouts], official)):
        row.update(cols)
    return pa.Table.from_pylist(rows, schema=EVAL_RESULTS_SCHEMA)


def summarize_rows(rows: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Table 1 per model; tier rates recounted with ``missing`` (judge failed) as its own tier."""
    summary = evaluation.summarize(summary_rows(rows))
    for model, rates in tier_rates(rows, tuple(t for t in ENV_TIERS)).items():
        summary[model].update(rates)
    for model, figures in official_metrics(rows).items():  # the benchmark's own metric beside ours
        summary[model].update(figures)
    return summary
