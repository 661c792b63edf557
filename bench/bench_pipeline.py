"""Bench: the whole demo pipeline (`make run`) flow by flow, in a fresh data directory.

Prints each flow's wall time and the total (goal: the whole pipeline under 15 minutes on the 2-core
machine). Run: ``.venv/bin/python bench/bench_pipeline.py``.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
import _safe  # noqa: E402,F401 - first of our imports: API keys removed, no paid call by accident

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from rubricrl.cli import PIPELINE  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, RUBRICRL_DATA_DIR=f"{tmp}/data", PREFECT_HOME=f"{tmp}/prefect")
        times = {}
        for name in PIPELINE:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "rubricrl.cli", "run", "--only", name], cwd=REPO, env=env,
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[name] = time.perf_counter() - t0
    width = max(map(len, times))
    for name, t in times.items():
        print(f"{name:<{width}}  {t:7.1f} s")
    print(f"{'total':<{width}}  {sum(times.values()):7.1f} s  (goal < 900 s; each flow includes Prefect's start, ~5-10 s)")


if __name__ == "__main__":
    main()
