"""Where a real app's CPU goes on the controlled clock: the cost of its frames per second of page time. Prints
figures, asserts nothing.

On the controlled clock (``tasks/env/pagetime.py``) every animation frame of page time runs, whatever it costs, where a
browser on a busy machine would drop frames. This bench scores each app alone, with the probe off, once with
``--settle A`` and once with ``--settle B`` seconds of page time. It prints:

- the CPU of the whole process tree at each settle time (``_cpu.tree_cpu_s``: this process, the driver, the browser,
  its renderers);
- the part spent in the one GPU process that all of a batch's apps share (SwiftShader raster and WebGL);
- the cost of one more second of page time: the difference between the two settles, divided by B - A.

The apps are ``--real-apps`` published answers of InteractScience's dev split, taken as ``bench_env --corpus`` takes
them. The ``--top`` costliest are printed, then the totals.

Run: ``.venv/bin/python bench/bench_frames.py --corpus DIR (or $RUBRICRL_INTERACTSCIENCE) [--real-apps 49] [--settle 0.5 2.5] [--repeat 1]
[--top 5]``. Report ``uptime`` beside the figures.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import _safe  # noqa: F401 - first of our imports: API keys removed, no paid call by accident
from _cpu import tree_cpu_s
from bench_env import real_apps
from interactscience import ENV_VAR


def gpu_cpu_s() -> float:
    """CPU seconds of the live GPU processes of the browsers on this machine (the one a batch shares)."""
    ticks = 0
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if b"--type=gpu-process" in (d / "cmdline").read_bytes():
                    fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
                    ticks += int(fields[11]) + int(fields[12])
            except (OSError, IndexError):
                continue
    return ticks / os.sysconf("SC_CLK_TCK")


def cost(html: str, settle_s: float, repeat: int) -> tuple[float, float]:
    """Median total and GPU-process CPU seconds of one app scored alone with the probe off."""
    from schemas.config.env import RuntimeConfig
    from tasks.env.runtime import BrowserRuntime

    cfg = RuntimeConfig(settle_s=settle_s)
    cfg = cfg.model_copy(update={"probe": cfg.probe.model_copy(update={"enabled": False})})
    totals, gpus = [], []
    with BrowserRuntime(cfg) as rt:
        rt.check("<p>warm</p>")  # the browser's start is not the app's
        for _ in range(repeat):
            c0, g0 = tree_cpu_s(), gpu_cpu_s()
            rt.check(html)
            totals.append(tree_cpu_s() - c0)
            gpus.append(gpu_cpu_s() - g0)
    return sorted(totals)[len(totals) // 2], sorted(gpus)[len(gpus) // 2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=os.environ.get(ENV_VAR), help=f"a local copy of InteractScience (or ${ENV_VAR})")
    ap.add_argument("--real-apps", type=int, default=49)
    ap.add_argument("--settle", type=float, nargs=2, default=[0.5, 2.5], metavar=("A", "B"))
    ap.add_argument("--repeat", type=int, default=1, help="runs per app and settle time (the median is kept)")
    ap.add_argument("--top", type=int, default=5)
    args = ap.parse_args()
    if not args.corpus:  # `make bench` runs every bench without arguments
        print(f"bench_frames: skipped; give --corpus DIR (or ${ENV_VAR}), a local copy of "
              "github.com/open-compass/InteractScience")
        return
    a, b = args.settle
    apps = real_apps(args.corpus, args.real_apps)
    t0, rows = time.perf_counter(), []
    for i, html in enumerate(apps):
        (ca, ga), (cb, gb) = cost(html, a, args.repeat), cost(html, b, args.repeat)
        rows.append({"app": i, "cpu_s": round(ca, 2), f"cpu_s_settle_{b:g}": round(cb, 2),
                     "cpu_s_per_page_s": round((cb - ca) / (b - a), 2),
                     "gpu_share_of_it": round((gb - ga) / (cb - ca), 2) if cb > ca else None})
    rows.sort(key=lambda r: -r["cpu_s"])
    for r in rows[:args.top]:
        print(json.dumps(r))
    total = sum(r["cpu_s"] for r in rows)
    print(json.dumps({"bench": "frames", "apps": len(rows), "settle_s": [a, b], "cpu_s_per_app": round(total / len(rows), 3),
                      f"top_{args.top}_share_of_cpu": round(sum(r["cpu_s"] for r in rows[:args.top]) / total, 3),
                      "median_cpu_s_per_page_s": sorted(r["cpu_s_per_page_s"] for r in rows)[len(rows) // 2],
                      "wall_s": round(time.perf_counter() - t0, 1), "load_avg": [round(x, 2) for x in os.getloadavg()],
                      "cpus": os.cpu_count()}))


if __name__ == "__main__":
    main()
