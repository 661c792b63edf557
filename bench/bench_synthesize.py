"""Bench: synthesize-queries at the `full` profile (55,000 queries) on the offline provider.

Prints wall time and the peak resident memory of the run (goal: under 5 minutes, under 2 GB on the
2-core machine). Run: ``.venv/bin/python bench/bench_synthesize.py [--profile full|demo]``.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
import _safe  # noqa: E402,F401 - first of our imports: API keys removed, no paid call by accident

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="full")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, RUBRICRL_DATA_DIR=f"{tmp}/data", PREFECT_HOME=f"{tmp}/prefect")
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "rubricrl.cli", "run", "--profile", args.profile, "--only",
                        "synthesize-queries"], cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        out = subprocess.run([sys.executable, "-m", "rubricrl.cli", "sql",
                              "select count(*) as n, count(distinct query_id) as ids from queries"],
                             cwd=REPO, env=env, check=True, capture_output=True, text=True).stdout
        t1 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "rubricrl.cli", "run", "--profile", args.profile, "--only",
                        "synthesize-queries"], cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
        rerun = time.perf_counter() - t1
    print(out.strip())
    print(f"synthesize-queries profile={args.profile}: wall {wall:.1f} s, peak RSS {peak_mb:.0f} MB "
          f"(goal < 300 s, < 2048 MB); re-run when current {rerun:.1f} s")


if __name__ == "__main__":
    main()
