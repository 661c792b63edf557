"""Benchmarks of the evaluation environment; prints figures, asserts nothing.

1. tree-sitter static checks on ~30 KB apps: apps per second per core (goal >= 100).
2. browser runtime checks with isolation (fresh context per app, network blocked), with the interaction
   probe on (goal >= 4 apps/s) and off, and the probe's share of the per-app time; with ``--corpus DIR`` (a
   local copy of InteractScience) also on real LLM-written apps (p5, three.js, Plotly, canvas simulations: the
   published answers of several models), with the probe on.
3. a 512-response step judged through the fake Anthropic API with 1 s latency at concurrency 64:
   wall time vs the latency-bound ideal ceil(512/64) * 1 s (goal: within 15%). Needs the local fakes (fakes/).

Run: ``python bench/bench_env.py [--apps 200] [--browser-apps 48] [--skip-browser] [--skip-judge]
[--corpus DIR [--real-apps 45]]``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path
import _safe  # noqa: E402,F401 - first of our imports: API keys removed, no paid call by accident
from _cpu import tree_cpu_s  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "tests" / "fixtures" / "env"


def make_app(i: int, size: int = 30_000) -> str:
    """A realistic ~30 KB app: styles, markup, and a script of many small functions and handlers."""
    css = "".join(f".c{k} {{ color: #{k:06x}; padding: {k % 9}px; }}\n" for k in range(120))
    fns = []
    k = 0
    while sum(map(len, fns)) < size - len(css) - 1500:
        fns.append(f"function update{k}(state, ev) {{\n  const v = state.items.filter(x => x.id !== {k}).map(x => "
                   f"({{...x, n: x.n + {i}}}));\n  if (v.length > {k % 7}) {{ state.items = v; }}\n  "
                   f"document.getElementById('o').textContent = `n=${{v.length}}`;\n  return v;\n}}\n"
                   f"document.addEventListener('keydown', e => update{k}(window.S, e));\n")
        k += 1
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>App {i}</title><style>{css}</style></head>"
            f"<body><h1>App {i}</h1><div id='o'></div><button id='b'>Go</button>\n<script>window.S = {{items: []}};\n"
            + "".join(fns) + "</script></body></html>")


def bench_static(n: int) -> dict:
    from tasks.env.static import check_source

    apps = [make_app(i) for i in range(n)]
    cpu0, t0 = time.process_time(), time.perf_counter()
    errors = sum(len(check_source(a).errors) for a in apps)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    return {"bench": "static_tree_sitter", "apps": n, "avg_kb": round(sum(map(len, apps)) / n / 1024, 1),
            "apps_per_s_per_core": round(n / cpu, 1), "apps_per_s_wall": round(n / wall, 1), "errors_found": errors,
            "goal": ">= 100 apps/s/core"}


def own_mix() -> list[str]:
    """Small apps (clean, blocked network, throws on load), CDN apps (Chart.js; three.js on SwiftShader WebGL)
    and the ~30 KB script-heavy app of the static bench."""
    from tasks.env.extract import extract_html

    mix = [extract_html((FIX / f).read_text()).html for f in ("clean.txt", "network.txt", "throws.txt")]
    return mix + [(FIX / f).read_text() for f in ("chart_cdn.html", "three_cdn.html")] + [make_app(0)]


def real_apps(corpus: str, n: int) -> list[str]:
    """``n`` published answers of InteractScience's dev split, models in turn (the benchmark's own apps)."""
    import sys

    from tasks.env.extract import extract_html

    sys.path.insert(0, str(REPO / "bench"))
    import interactscience

    c = interactscience.load(Path(corpus))
    models = ("gpt-5", "claude-sonnet-4-20250514", "gemini-2.5-pro", *interactscience.LABELLED_MODELS)
    answers = [sorted(c.answers(m).items()) for m in models]
    out: list[str] = []
    for k in range(max(map(len, answers))):
        for a in answers:
            ex = extract_html(a[k][1]) if k < len(a) else None
            if ex is not None and len(out) < n:
                out.append(ex.html)
    return out


def bench_browser(n: int, concurrency: int, probe: bool = True, mix: list[str] | None = None,
                  name: str = "own mix") -> dict:
    from schemas.config.env import RuntimeConfig
    from tasks.env.runtime import BrowserRuntime

    mix = mix or own_mix()
    apps = [mix[i % len(mix)] for i in range(n)]
    cfg = RuntimeConfig(**({"concurrency": concurrency} if concurrency else {}))
    cfg = cfg.model_copy(update={"probe": cfg.probe.model_copy(update={"enabled": probe})})
    with BrowserRuntime(cfg) as rt:
        rt.check_many(apps[:concurrency])  # launch + warm
        cpu0, t0 = tree_cpu_s(), time.perf_counter()
        evs = rt.check_many(apps)
        wall, cpu = time.perf_counter() - t0, tree_cpu_s() - cpu0
    probe_s = sum(e.interaction.duration_s for e in evs if e.interaction)
    return {"bench": "browser_runtime", "apps_of": name, "probe": probe, "apps": n, "concurrency": cfg.concurrency,
            "settle_s": cfg.settle_s, "browser": cfg.executable_path,
            "apps_per_s": round(n / wall, 2), "cpu_s_per_app": round(cpu / n, 3),
            "probe_share_of_app_time": round(probe_s / max(sum(e.duration_s for e in evs), 1e-9), 3),
            "load_avg": [round(x, 2) for x in os.getloadavg()], "statuses": {s: sum(e.status == s for e in evs) for s in
                                                           sorted({e.status for e in evs})},
            "cpus": os.cpu_count(), "goal": ">= 4 apps/s"}


def bench_judge(n: int, concurrency: int, latency_s: float) -> dict:
    try:
        from fakes.fake_anthropic import FakeAnthropic
        from schemas.config.llm import LLMConfig
        from tasks.llm.factory import make_provider
    except ImportError as e:
        return {"bench": "judge_512_fake_api", "skipped": f"needs the LLM layer's fake API ({e})"}
    import tempfile

    from schemas.config.env import EnvConfig, JudgeConfig, RuntimeConfig
    from schemas.rubric import Task
    from tasks.env.score import ScoreInput, score_batch

    os.environ.setdefault("ANTHROPIC_API_KEY", "bench-key")
    task = Task.model_validate_json((FIX / "task_counter.json").read_text())
    response = (FIX / "clean.txt").read_text()
    empty = {k: {"name": k, "critical": [], "major": [], "minor": []}
             for k in ("static_check", "code_simulation", "rubric_alignment")}
    cfg = EnvConfig(runtime=RuntimeConfig(enabled=False), judge=JudgeConfig(concurrency=concurrency))
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic(latency_s=latency_s, reply=lambda b: json.dumps(empty)) as api:
        provider = make_provider("anthropic", base_url=api.base_url,
                                 config=LLMConfig(store_path=str(Path(tmp) / "llm.sqlite"), cache=False))
        # Each response differs (its own key and a comment), as rollouts of one step do.
        inputs = [ScoreInput(f"r{i}", task, response.replace("<title>", f"<!-- {i} --><title>")) for i in range(n)]
        t0 = time.perf_counter()
        res = score_batch(inputs, provider=provider, cfg=cfg)
        wall = time.perf_counter() - t0
    ideal = math.ceil(n / concurrency) * latency_s
    return {"bench": "judge_512_fake_api", "responses": n, "concurrency": concurrency, "latency_s": latency_s,
            "wall_s": round(wall, 2), "ideal_s": ideal, "overhead_pct": round(100 * (wall / ideal - 1), 1),
            "missing_rewards": sum(r.reward is None for r in res), "errors": sorted({str(r.judge.error)[:120]
                                                                                     for r in res if r.judge.error}),
            "goal": "within 15% of ideal"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--apps", type=int, default=200)
    ap.add_argument("--browser-apps", type=int, default=48)
    ap.add_argument("--concurrency", type=int, default=0, help="browser checks at once (0: env.runtime default)")
    ap.add_argument("--skip-browser", action="store_true")
    ap.add_argument("--skip-judge", action="store_true")
    ap.add_argument("--skip-static", action="store_true")
    ap.add_argument("--corpus", default=None, help="a local copy of InteractScience: also its models' real apps")
    ap.add_argument("--real-apps", type=int, default=45, help="how many of them (models in turn)")
    args = ap.parse_args()
    if not args.skip_static:
        print(json.dumps(bench_static(args.apps)))
    if not args.skip_browser:
        print(json.dumps(bench_browser(args.browser_apps, args.concurrency, probe=True)))
        print(json.dumps(bench_browser(args.browser_apps, args.concurrency, probe=False)))
        if args.corpus:
            real = real_apps(args.corpus, args.real_apps)
            print(json.dumps(bench_browser(len(real), args.concurrency, probe=True, mix=real,
                                           name="InteractScience answers")))
    if not args.skip_judge:
        print(json.dumps(bench_judge(512, 64, 1.0)))


if __name__ == "__main__":
    main()
