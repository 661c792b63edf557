"""Benchmark of evaluate: N queries x 3 generators with the offline judge; prints figures,
asserts nothing.

Generators: a folder of the offline teacher's apps, a folder of one small fixed app, and an API model
behind the local fake OpenAI-compatible server (answers at once, so the figure is our overhead, not a
model's). Scored by the environment (tree-sitter, headless Chromium unless --no-browser, the offline
judge). Prints the wall time and where it goes: generation, scoring (static + browser + judge + the
eval_results rows, as the flow builds them), summary + plot + HTML report. References are built first
and not counted. With ``--screenshots both`` (the default) the same responses are scored twice in fresh
browsers, without and with the screenshots evaluate keeps: their added cost, their size on disk, and
the verdicts (tier, pass, reward) that differ; ``--screenshots noise`` adds a second pass without them,
so the verdicts the machine's load alone changes are counted beside.

Run: ``.venv/bin/python bench/bench_eval.py [--queries 100] [--runs 1] [--no-browser] [--screenshots both|noise]``. Report
``uptime`` beside the figures: browser timings depend on the machine's load.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
import _safe  # noqa: E402,F401 - first of our imports: API keys removed, no paid call by accident


def build(root: Path, n: int) -> dict:
    from tasks.rubrics.build import build_stages
    from schemas.config.rubrics import RubricsConfig
    from schemas.contracts.queries import QUERIES_SCHEMA
    from tasks.llm.offline import OfflineProvider
    from tasks.rubrics import load_tasks
    from tasks.stages.stage import StageSpec, run_stage
    from tasks.stages.store import StageStore
    from tasks.queries.synthesize import sample_personas, synthesize_chunk

    store = StageStore(root)
    tab = synthesize_chunk(list(range(n)), 17, sample_personas(20, 17), 2, 4, OfflineProvider(), 1).drop_columns(["error"])
    run_stage(store, StageSpec("queries", QUERIES_SCHEMA, lambda: []), part_keys=["all"], make_part=lambda _k: tab,
              provider="offline", config={}, config_hash="bench", inputs={})
    build_stages(store, OfflineProvider(), RubricsConfig(chunk_size=50), concurrency=1)
    return {t.query_id: t for t in load_tasks(store)}


PASSES = {"on": {"on": True}, "off": {"off": False}, "both": {"off": False, "on": True},
          "noise": {"off": False, "on": True, "off_again": False}}


def score_passes(specs: list[dict], rollouts: dict[str, list[dict]], tasks: dict, cfg, data: Path,
                 passes: dict[str, bool]) -> dict[str, tuple[list[dict], float]]:
    """Every generator's rollouts scored into eval_results rows as the flow does, once per pass (a browser
    of its own that keeps screenshots or not); passes alternate per generator so load drift hits both alike.
    ``passes``: name -> screenshots on?; -> name -> (rows, scoring seconds)."""
    from tasks.evaluation.scoring import eval_table, evaluation_runtime
    from tasks.env.runtime import BrowserRuntime
    from tasks.llm.offline import OfflineProvider

    cfgs = {name: cfg.model_copy(update={"evaluation": cfg.evaluation.model_copy(update={"screenshots": shots})})
            for name, shots in passes.items()}
    runtimes = {name: evaluation_runtime(c, data) if passes[name] else (BrowserRuntime(c.env.runtime)
                                                                         if c.env.runtime.enabled else None)
                for name, c in cfgs.items()}
    out: dict[str, tuple[list[dict], float]] = {name: ([], 0.0) for name in passes}
    try:
        for spec in specs:
            for name in passes:
                t = time.perf_counter()
                rows = eval_table(spec, rollouts[spec["label"]], tasks, {}, cfgs[name].env, OfflineProvider(),
                                  runtimes[name], data).to_pylist()
                out[name] = (out[name][0] + rows, out[name][1] + time.perf_counter() - t)
    finally:
        for rt in runtimes.values():
            if rt is not None:
                rt.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--screenshots", choices=tuple(PASSES), default="both",
                    help="score with screenshots kept (evaluate's default), without, both (their added cost), or "
                         "noise (off, on, off again: how many verdicts the machine's load alone changes)")
    args = ap.parse_args()

    from schemas.config import load_config
    from schemas.contracts.evaluation import SCREENSHOT_MOMENTS
    from tasks.evaluation import summary as evaluation
    from tasks.evaluation.generators import api_provider, api_rollouts, folder_rollouts, parse_generator
    from tasks.evaluation.report import write_report
    from tasks.evaluation.eval_results import summary_rows
    from tasks.sft.teacher import offline_teacher_answer
    from fakes.fake_openai import FakeOpenAI
    from fakes.policy_data import ANSWER

    tmp = Path(tempfile.mkdtemp(prefix="bench-eval-"))
    data = tmp / "data"
    t0 = time.perf_counter()
    tasks = build(data, args.queries)
    setup_s = time.perf_counter() - t0
    queries = list(tasks.values())
    teacher, small = tmp / "teacher", tmp / "small"
    for folder, text in ((teacher, offline_teacher_answer), (small, lambda _t: ANSWER)):
        for r in range(args.runs):
            (folder / f"run-{r}").mkdir(parents=True)
            for t in queries:
                (folder / f"run-{r}" / f"{t.query_id}.txt").write_text(text(t))
    sets = {"data_dir": str(data)}
    if args.no_browser:
        sets["env.runtime.enabled"] = "false"
    cfg = load_config("demo", overrides=sets)
    os.environ.setdefault("OPENAI_API_KEY", "bench")
    passes = PASSES[args.screenshots]
    figures: dict[str, dict] = {}
    rows: list[dict] = []
    start = time.perf_counter()
    generate_s = 0.0
    with FakeOpenAI(reply=lambda body: ANSWER) as api:
        specs, rollouts = [], {}
        for raw in (str(teacher), str(small), f"api:openai/local@{api.base_url}/v1"):
            specs.append(parse_generator(raw, {s["label"] for s in specs}))
        for spec in specs:
            t = time.perf_counter()
            rollouts[spec["label"]] = api_rollouts(
                spec, queries, args.runs, api_provider(spec, cfg.resolved_llm()), max_tokens=4096, temperature=1.0,
                concurrency=cfg.llm.concurrency) if spec["kind"] == "api" else folder_rollouts(spec)
            generate_s += time.perf_counter() - t
    verdicts: dict[str, dict[str, tuple]] = {}
    for name, (rows, score_s) in score_passes(specs, rollouts, tasks, cfg, data, passes).items():
        verdicts[name] = {r["eval_id"]: (r["tier"], r["passed"], r["reward"]) for r in rows}
        kept = {data / r[f"screenshot_{m}"] for r in rows for m in SCREENSHOT_MOMENTS if r[f"screenshot_{m}"]}
        figures[f"screenshots_{name}"] = {
            "score_s": round(score_s, 1), "responses_per_s": round(len(rows) / score_s, 2),
            **({"screenshot_files": len(kept), "screenshot_mb": round(sum(f.stat().st_size for f in kept) / 2**20, 1),
                "rows_without_load_screenshot": sum(r["screenshot_load"] is None for r in rows)} if passes[name] else {})}
    t = time.perf_counter()
    summary = evaluation.summarize(summary_rows(rows))
    png = evaluation.plot(rows, tmp / "eval.png")
    html = write_report(tmp / "eval.html", "bench", summary, specs[0]["label"], rows, png, data)
    report_s = time.perf_counter() - t
    wall = time.perf_counter() - start
    out = {"bench": "evaluate", "queries": len(queries), "generators": len(specs), "runs": args.runs,
           "responses": len(rows), "browser": not args.no_browser, "wall_s": round(wall, 1),
           "generate_s": round(generate_s, 1), **figures, "report_s": round(report_s, 1),
           "report_kb": round(html.stat().st_size / 1024), "setup_references_s": round(setup_s, 1),
           "load": os.getloadavg()[0]}
    if "off" in passes and "on" in passes:
        off, on = figures["screenshots_off"]["score_s"], figures["screenshots_on"]["score_s"]
        out["screenshots_added_s"] = round(on - off, 1)
        out["screenshots_added_pct"] = f"{100 * (on - off) / off:+.0f}%"
        for other in [n for n in passes if n != "off"]:  # verdicts (tier, pass, reward) that differ from 'off'
            diff = sorted(k for k, v in verdicts["off"].items() if verdicts[other].get(k) != v)
            out[f"verdicts_changed_{other}_vs_off"] = {
                "n": len(diff), "first": {k: [verdicts["off"][k], verdicts[other].get(k)] for k in diff[:5]}}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
