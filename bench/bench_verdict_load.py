"""Whether the development apps' verdicts move with load: every app of an evaluated data directory (real apps other
models wrote, e.g. the InteractScience development set that ``bench_official.py --keep DIR`` kept) scored twice by
the environment as it is now (offline judge, the default configuration), once on a quiet CPU and once with Chromium
slowing every page ``--rate`` times over (``tasks/env/throttle.py``, the load ``bench_checks.py --load-noise``
puts on its fixtures) or, with ``--share S``, its renderers starved for real (stopped but ``S`` of the time, as
other processes on the cores leave them), and the verdicts compared app by app: the gates, the reward, and each rubric item's
evidence (its check's status, the finding's severity, undecided). Prints every app whose verdict changed, with
what changed; asserts nothing.

Run: ``.venv/bin/python bench/bench_verdict_load.py --keep DIR [--models M ...] [--rate 8 | --share 0.25]``. Report ``uptime``
beside the figures (the quiet arm is quiet only for the pages: the machine's own load is the same in both arms).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _safe  # noqa: E402,F401 - first of our imports: API keys removed, no paid call by accident
from _cpu import tree_cpu_s  # noqa: E402
from realapps_devset import read_rows  # noqa: E402


def verdicts(data: Path, rows: list[dict[str, Any]], rate: float, share: float = 1.0) -> dict[str, tuple[Any, ...]]:
    """eval_id -> (format, source, runtime validity, reward, each item's evidence) of each app scored with its
    pages throttled ``rate`` times (1: not throttled), its renderers given ``share`` of the CPU (1: all of it)."""
    import contextlib

    from schemas.config import load_config
    from tasks.env.score import ScoreInput, score_batch
    from tasks.env.throttle import StarvedRenderers, ThrottledRuntime
    from tasks.llm.offline import OfflineProvider
    from tasks.rubrics import load_tasks
    from tasks.stages.store import StageStore

    cfg = load_config(None)
    tasks = {t.query_id: t for t in load_tasks(StageStore(data), sorted({r["query_id"] for r in rows}))}
    starving = StarvedRenderers(share) if share < 1 else contextlib.nullcontext()
    with ThrottledRuntime(cfg.env.runtime, rate=rate) as rt, starving:
        results = score_batch([ScoreInput(r["eval_id"], tasks[r["query_id"]], r["response"] or "") for r in rows],
                              provider=OfflineProvider(), runtime=rt, cfg=cfg.env)
    out = {}
    for res in results:
        items = {c.item_id: c.status for c in res.check_results}
        for f in res.findings:
            if f.item_id:
                items[f.item_id] = f"{items.get(f.item_id, '-')}/{f.severity}"
        why = tuple(f"{f.severity}: {f.description[:160]} | {f.explanation[:200]}"
                    for f in res.findings if f.layer == "code_simulation")
        out[res.key] = (res.format_valid, res.source_valid, res.runtime_valid, res.reward,
                        res.evidence.runtime_status, tuple(sorted(items.items())), tuple(sorted(res.undecided)),
                        why)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", type=Path, required=True, help="an evaluated data directory (eval_results)")
    ap.add_argument("--models", nargs="*", default=None, help="only these models' apps (default: all)")
    ap.add_argument("--rate", type=float, default=8.0, help="how many times over Chromium slows each page (emulated)")
    ap.add_argument("--share", type=float, default=None,
                    help="starve the renderers for real instead: each runs this share of the time (0.25: 4x), "
                         "stopped the rest (tasks/env/throttle.py StarvedRenderers)")
    a = ap.parse_args()
    rate, share = (1.0, a.share) if a.share is not None else (a.rate, 1.0)
    rows = [r for r in read_rows(a.keep) if a.models is None or r["model"] in a.models]
    arms: dict[str, dict[str, tuple[Any, ...]]] = {}
    seconds, cpu = {}, {}
    for name, arm in (("quiet", (1.0, 1.0)), ("throttled", (rate, share))):
        t0, c0 = time.perf_counter(), tree_cpu_s()
        arms[name] = verdicts(a.keep, rows, *arm)
        seconds[name], cpu[name] = round(time.perf_counter() - t0, 1), round(tree_cpu_s() - c0, 1)
    fields = ("format_valid", "source_valid", "runtime_valid", "reward", "runtime_status", "items", "undecided",
              "code_simulation")
    changed = {}
    for key, quiet in arms["quiet"].items():
        loud = arms["throttled"][key]
        diff = {f: [q, t] for f, q, t in zip(fields, quiet, loud) if q != t}
        if diff and diff.keys() != {"code_simulation"}:  # the same verdict: findings' wording alone is no change
            changed[key] = diff
    print(json.dumps({"bench": "verdict_load", "data": str(a.keep), "apps": len(rows), "rate": rate, "share": share,
                      "changed": len(changed), "which": changed, "seconds": seconds, "cpu_s": cpu,
                      "loadavg_1m": round(os.getloadavg()[0], 2)}, indent=1, default=str), flush=True)


if __name__ == "__main__":
    main()
