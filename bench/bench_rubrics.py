"""Bench: build-rubrics at the ``full`` profile (55,000 queries) on the offline provider: all five
stages plus rubric_items, wall time and peak memory (goal: under 15 minutes, under 4 GB), then the
cost of a re-run when everything is current.

Run: ``.venv/bin/python bench/bench_rubrics.py [--profile full|demo] [--queries N]``.
The queries stage is made first by ``rubricrl run --only synthesize-queries`` (not timed here).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
import _safe  # noqa: E402,F401 - first of our imports: API keys removed, no paid call by accident

REPO = Path(__file__).resolve().parent.parent
CHILD = """
import json, resource, sys, time
from flows.build_rubrics import build_rubrics
t0 = time.perf_counter()
out = build_rubrics(profile=sys.argv[1], sets=sys.argv[2:])
wall = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_SELF)
cpu = ru.ru_utime + ru.ru_stime
peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print("BENCH " + json.dumps({"wall_s": wall, "cpu_s": cpu, "peak_mb": peak / 1024, "coverage": out["coverage"],
                             "stages": {s["stage"]: s["rows"] for s in out["stages"]}}))
"""


def _run_build(env: dict[str, str], profile: str, sets: list[str]) -> dict:
    res = subprocess.run([sys.executable, "-c", CHILD, profile, *sets], cwd=REPO, env=env, check=True,
                         capture_output=True, text=True)
    line = [x for x in res.stdout.splitlines() if x.startswith("BENCH ")][-1]
    return json.loads(line[len("BENCH "):])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="full")
    ap.add_argument("--queries", type=int, default=None, help="override synth.n_queries (default: the profile's)")
    args = ap.parse_args()
    synth = [f"synth.n_queries={args.queries}"] if args.queries else []
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, RUBRICRL_DATA_DIR=f"{tmp}/data", PREFECT_HOME=f"{tmp}/prefect")
        cmd = [sys.executable, "-m", "rubricrl.cli", "run", "--profile", args.profile, "--only", "synthesize-queries"]
        for s in synth:
            cmd += ["--set", s]
        subprocess.run(cmd, cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
        first = _run_build(env, args.profile, synth)
        t1 = time.perf_counter()
        again = _run_build(env, args.profile, synth)
        rerun = time.perf_counter() - t1
    print(json.dumps(first["stages"]))
    print(json.dumps(first["coverage"]))
    print(f"build-rubrics profile={args.profile}: wall {first['wall_s']:.1f} s (flow process CPU {first['cpu_s']:.1f} s; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores), peak RSS {first['peak_mb']:.0f} MB "
          f"(goal < 900 s, < 4096 MB); re-run when current {again['wall_s']:.1f} s in-flow ({rerun:.1f} s with start-up)")


if __name__ == "__main__":
    main()
