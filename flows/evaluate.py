"""evaluate (paper 4.1, Table 1): policies (checkpoints or folders of responses) on the held-out queries.

For each model: N sampling runs over the held-out queries with references (``evaluation.heldout_percent``
of them by a stable hash of the id; select-rl-queries never picks them), scored by the environment;
rows in the ``eval_results`` stage; the Table-1 layout (pass rate overall, by difficulty and by domain,
tier rates, mean reward, averaged over runs) as markdown + PNG under ``<data_dir>/reports/eval/`` and in
the artifact. Two or more models side by side get delta columns against the first.

A model is a Hugging Face directory (sampled here with the GRPO job's transformers engine) or a folder
of responses: ``<query_id>.txt`` (one run) or ``run-<k>/<query_id>.txt`` (run k). A folder is scored on
the queries it has files for (all must have references). No model given: the newest policy checkpoint,
else the tiny random model (labelled so).

Run: ``rubricrl run --only evaluate`` or ``evaluate(profile="demo", models=["data/checkpoints/sft/final_model"])``.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from flows.common import flow_context, forward_library_logs, publish_artifact, stage_summary
from schemas.env import TIERS as ENV_TIERS
from schemas.evaluation import EVAL_RESULTS_SCHEMA, eval_results_suites
from schemas.rubric import Task
from tasks import evaluation
from tasks.checkpoints import held_out, is_model_dir, model_identity
from tasks.env.records import reward_config_hash, score_rollouts_table
from tasks.llm.prompts import load_prompt
from tasks.probe_records import eval_rows, query_meta, summary_rows, tier_rates
from tasks.rubrics import load_tasks
from tasks.stage import StageSpec, run_stage
from training.policy import resolve_policy, sample_policy

_RUN_DIR = re.compile(r"^run-(\d+)$")


def read_response_folder(folder: Path) -> dict[int, dict[str, str]]:
    """run -> query_id -> response text from ``<query_id>.txt`` (run 0) or ``run-<k>/<query_id>.txt``."""
    runs: dict[int, dict[str, str]] = {}
    for f in sorted(folder.glob("*.txt")):
        runs.setdefault(0, {})[f.stem] = f.read_text(encoding="utf-8", errors="replace")
    for d in sorted(folder.iterdir()):
        m = _RUN_DIR.match(d.name)
        if d.is_dir() and m:
            runs.setdefault(int(m.group(1)), {}).update(
                {f.stem: f.read_text(encoding="utf-8", errors="replace") for f in sorted(d.glob("*.txt"))})
    if not runs or not any(runs.values()):
        raise ValueError(f"{folder} holds no responses; put one <query_id>.txt per query in it (or run-<k>/ folders)")
    return runs


def model_label(path: Path, taken: set[str]) -> str:
    """A short unique label: the directory name, with its parent for ``final_model`` directories."""
    base = f"{path.parent.name}/{path.name}" if path.name == "final_model" else path.name
    label, k = base, 2
    while label in taken:
        label, k = f"{base}#{k}", k + 1
    return label


def _model_rollouts(spec: dict[str, Any], queries: list[Task], ev: Any) -> list[dict[str, Any]]:
    """Rollout rows (rollout_id, query_id, run, response) of one model."""
    if spec["kind"] == "responses":
        runs = read_response_folder(Path(spec["path"]))
        return [{"rollout_id": f"{spec['label']}:{r}:{q}", "query_id": q, "run": r, "response": text}
                for r, by_q in sorted(runs.items()) for q, text in sorted(by_q.items())]
    out = []
    for r in range(ev.runs):
        rows = sample_policy(Path(spec["path"]), [(t.query_id, t.query) for t in queries], 1,
                             max_new_tokens=ev.max_new_tokens, max_prompt_tokens=ev.max_prompt_tokens,
                             temperature=ev.temperature, seed=ev.seed + r)
        out += [{"rollout_id": f"{spec['label']}:{r}:{x['query_id']}", "query_id": x["query_id"], "run": r,
                 "response": x["response"]} for x in rows]
    return out


def _evaluate_model(spec: dict[str, Any], queries: list[Task], all_tasks: dict[str, Task], meta: dict[str, Any],
                    ev: Any, env: Any, provider: Any) -> pa.Table:
    rollouts = _model_rollouts(spec, queries, ev)
    unknown = sorted({r["query_id"] for r in rollouts} - set(all_tasks))
    if unknown:
        raise ValueError(f"{spec['path']}: responses for queries without a rubric reference {unknown[:10]}; remove "
                         "those files or run build-rubrics for them")
    table = pa.Table.from_pylist([{k: r[k] for k in ("rollout_id", "query_id", "response")} for r in rollouts])
    judg, rew = score_rollouts_table(table, {q: all_tasks[q] for q in {r["query_id"] for r in rollouts}},
                                     provider=provider, cfg=env)
    rows = eval_rows(spec["label"], spec["path"], spec["kind"], rollouts, rew.to_pylist(),
                     judg.select(["rollout_id", "gate_rubric_alignment", "findings"]).to_pylist(), all_tasks, meta)
    return pa.Table.from_pylist(rows, schema=EVAL_RESULTS_SCHEMA)


evaluate_model = task(_evaluate_model, name="evaluate-model", cache_policy=NO_CACHE)


def resolve_models(paths: list[str], data_dir: Path, cfg: Any) -> list[dict[str, Any]]:
    """Each given path as a checkpoint or a response folder; none given: the newest policy (or tiny random)."""
    specs: list[dict[str, Any]] = []
    if not paths:
        p = resolve_policy(data_dir, None, cfg.train.model, cfg.train.run.seed)
        return [{"label": p.label, "path": str(p.path), "kind": p.kind, "identity": p.identity}]
    for raw in paths:
        p = Path(raw).resolve()
        if not p.is_dir():
            raise ValueError(f"evaluation model {raw!r} is not a directory; give a checkpoint (final_model) or a "
                             "folder of <query_id>.txt responses")
        kind = "checkpoint" if is_model_dir(p) else "responses"
        specs.append({"label": model_label(p, {s["label"] for s in specs}), "path": str(p), "kind": kind,
                      "identity": model_identity(p)})
    return specs


def summarize_rows(rows: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Table 1 per model; tier rates recounted with ``missing`` (judge failed) as its own tier."""
    summary = evaluation.summarize(summary_rows(rows))
    for model, rates in tier_rates(rows, tuple(t for t in ENV_TIERS)).items():
        summary[model].update(rates)
    return summary


@flow(name="evaluate", log_prints=True)
def evaluate(profile: str = "demo", sets: list[str] | None = None, force: bool = False,
             models: list[str] | None = None, runs: int | None = None) -> dict[str, Any]:
    forward_library_logs()
    fc = flow_context(profile, sets)
    cfg, store = fc.cfg, fc.store
    logger = get_run_logger()
    ev = cfg.evaluation
    if runs is not None:
        ev = ev.model_copy(update={"runs": runs})
    all_tasks = {t.query_id: t for t in load_tasks(store)}
    queries = [t for q, t in sorted(all_tasks.items()) if held_out(q, ev.heldout_percent)][: ev.max_queries]
    specs = resolve_models(list(models if models is not None else ev.models), cfg.data_dir, cfg)
    if not queries and any(s["kind"] != "responses" for s in specs):
        raise ValueError(f"no held-out query with a reference ({ev.heldout_percent}% of {len(all_tasks)}); raise "
                         "evaluation.heldout_percent or build rubrics for more queries")
    meta = query_meta(store)
    for s in specs:
        logger.info("model %s: %s (%s)", s["label"], s["path"], s["kind"])
        if s["kind"] == "tiny-random":
            logger.warning("no policy checkpoint found: evaluating the tiny RANDOM model (rows say tiny-random)")
    keys = {f"m{i:02d}": s for i, s in enumerate(specs)}
    out = run_stage(
        store, StageSpec("eval_results", EVAL_RESULTS_SCHEMA, eval_results_suites), part_keys=list(keys),
        make_part=lambda k: evaluate_model(keys[k], queries, all_tasks, meta, ev, cfg.env, fc.provider),
        provider=fc.provider.name, config=cfg.model_dump(mode="json"),
        config_hash=reward_config_hash(cfg.env, cfg.env.reward_kind),
        inputs={"rubric_references": store.version("rubric_references"), "queries": store.version("queries")},
        extra={"models": [[s["label"], s["path"], s["identity"]] for s in specs], "eval": ev.model_dump(mode="json"),
               "queries": [t.query_id for t in queries], "judge": [fc.provider.name, fc.provider.model],
               "prompt": load_prompt("generation").fingerprint}, force=force)
    rows = store.read("eval_results").to_pylist()
    summary = summarize_rows(rows)
    baseline = specs[0]["label"] if len(specs) > 1 else None
    md = evaluation.markdown_table(summary, baseline=baseline)
    report_dir = store.root / "reports" / "eval"
    report_dir.mkdir(parents=True, exist_ok=True)
    png = evaluation.plot(summary, report_dir / "eval.png")
    header = (f"# evaluate: {len(specs)} model(s), {len({r['query_id'] for r in rows})} held-out queries, "
              f"runs per model: " + ", ".join(f"{m} {int(v['runs'] or 0)}" for m, v in summary.items()))
    (report_dir / "eval.md").write_text(f"{header}\n\n{md}\n\n![pass rates](eval.png)\n", encoding="utf-8")
    publish_artifact("evaluate", [stage_summary(out, {"models": len(specs)})],
                     notes=f"Report: `{report_dir / 'eval.md'}`, plot `{png}`\n\n{md}", fc=fc)
    print(f"{header}\n{md}")
    return {"stages": [stage_summary(out)], "summary": summary, "report": str(report_dir / "eval.md"),
            "png": str(png), "models": [s["label"] for s in specs]}
