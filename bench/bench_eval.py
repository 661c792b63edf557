"""Benchmark of evaluate (issue 17): N queries x 3 generators with the offline judge; prints figures,
asserts nothing.

Generators: a folder of the offline teacher's apps, a folder of one small fixed app, and an API model
behind the local fake OpenAI-compatible server (answers at once, so the figure is our overhead, not a
model's). Scored by the environment (tree-sitter, headless Chromium unless --no-browser, the offline
judge). Prints the wall time and where it goes: generation, scoring (static + browser + judge),
eval_results rows, summary + plot + HTML report. References are built first and not counted.

Run: ``.venv/bin/python bench/bench_eval.py [--queries 100] [--runs 1] [--no-browser]``. Report
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
    from flows.build_rubrics import build_stages
    from schemas.config_rubrics import RubricsConfig
    from schemas.queries import QUERIES_SCHEMA
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args()

    from schemas.config import load_config
    from schemas.evaluation import EVAL_RESULTS_SCHEMA  # noqa: F401 (rows are built to this schema)
    from tasks.evaluation import summary as evaluation
    from tasks.env.records import score_rollouts_table
    from tasks.evaluation.generators import api_provider, api_rollouts, folder_rollouts, parse_generator
    from tasks.evaluation.report import write_report
    from tasks.llm.offline import OfflineProvider
    from tasks.selection.records import eval_rows, summary_rows
    from tasks.sft.teacher import offline_teacher_answer
    from tests.fakes.fake_openai import FakeOpenAI
    from tests.fixtures.policy_data import ANSWER

    tmp = Path(tempfile.mkdtemp(prefix="bench-eval-"))
    t0 = time.perf_counter()
    tasks = build(tmp / "data", args.queries)
    setup_s = time.perf_counter() - t0
    queries = list(tasks.values())
    teacher, small = tmp / "teacher", tmp / "small"
    for folder, text in ((teacher, offline_teacher_answer), (small, lambda _t: ANSWER)):
        for r in range(args.runs):
            (folder / f"run-{r}").mkdir(parents=True)
            for t in queries:
                (folder / f"run-{r}" / f"{t.query_id}.txt").write_text(text(t))
    cfg = load_config("demo", overrides={"data_dir": str(tmp / "data")})
    env = cfg.env if not args.no_browser else cfg.env.model_copy(
        update={"runtime": cfg.env.runtime.model_copy(update={"enabled": False})})
    os.environ.setdefault("OPENAI_API_KEY", "bench")
    times = {"generate_s": 0.0, "score_s": 0.0, "rows_s": 0.0, "report_s": 0.0}
    rows: list[dict] = []
    start = time.perf_counter()
    with FakeOpenAI(reply=lambda body: ANSWER) as api:
        specs = []
        for raw in (str(teacher), str(small), f"api:openai/local@{api.base_url}/v1"):
            specs.append(parse_generator(raw, {s["label"] for s in specs}))
        for spec in specs:
            t = time.perf_counter()
            if spec["kind"] == "api":
                ro = api_rollouts(spec, queries, args.runs, api_provider(spec, cfg.resolved_llm()), max_tokens=4096,
                                  temperature=1.0, concurrency=cfg.llm.concurrency)
            else:
                ro = folder_rollouts(spec)
            times["generate_s"] += time.perf_counter() - t
            t = time.perf_counter()
            import pyarrow as pa

            table = pa.Table.from_pylist([{k: r[k] for k in ("rollout_id", "query_id", "response")} for r in ro])
            judg, rew = score_rollouts_table(table, {q.query_id: q for q in queries}, provider=OfflineProvider(),
                                             cfg=env)
            times["score_s"] += time.perf_counter() - t
            t = time.perf_counter()
            rows += eval_rows(spec["label"], spec["path"], spec["kind"], ro, rew.to_pylist(),
                              judg.select(["rollout_id", "gate_rubric_alignment", "findings"]).to_pylist(), tasks, {})
            times["rows_s"] += time.perf_counter() - t
    t = time.perf_counter()
    summary = evaluation.summarize(summary_rows(rows))
    png = evaluation.plot(rows, tmp / "eval.png")
    html = write_report(tmp / "eval.html", "bench", summary, specs[0]["label"], rows, png)
    times["report_s"] = time.perf_counter() - t
    wall = time.perf_counter() - start
    n = len(rows)
    print(json.dumps({"bench": "evaluate", "queries": len(queries), "generators": len(specs), "runs": args.runs,
                      "responses": n, "browser": not args.no_browser, "wall_s": round(wall, 1),
                      "responses_per_s": round(n / wall, 2), **{k: round(v, 1) for k, v in times.items()},
                      "share": {k: f"{100 * v / wall:.0f}%" for k, v in times.items()},
                      "report_kb": round(html.stat().st_size / 1024), "setup_references_s": round(setup_s, 1),
                      "load": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
