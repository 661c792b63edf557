"""Benchmark of the executable rubric checks (issue 13); prints figures, asserts nothing.

A GRPO-sized step: ``--responses`` apps (default 512, the paper's 64 x 8) with ``--checks`` checks each
(default 6), drawn from the hand-labelled fixture apps and their checks (tests/fixtures/checks). Two
passes through one browser: load only (the runtime gate as before), then load + checks. Prints
checks per second and the time the checks add to scoring the step (total and per response), plus the
checks' agreement with the hand labels over the run.

With ``--load-noise RATE`` it measures instead whether verdicts depend on machine load: the same apps and
checks twice, on a quiet CPU and with Chromium starving every page RATE times over
(``tasks/env/throttle.py``), and prints how many check verdicts (and which status pairs) changed. Report
``uptime`` beside it.

Run: ``python -m bench.bench_checks [--responses 512] [--checks 6] [--concurrency 8] [--load-noise 8]``.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path
from typing import Any
import _safe  # noqa: E402,F401 - first of our imports: API keys removed, no paid call by accident

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "tests" / "fixtures" / "checks"


def workload(n: int, per_app: int) -> list[tuple[str, str, list]]:
    """(app name, html, [(item id, check, label)]) for n responses, apps in turn, ``per_app`` checks each."""
    from schemas.checks import parse_check

    items = json.loads((FIX / "labelled.json").read_text())["items"]
    by_app: dict[str, list] = {}
    for k, it in enumerate(items):
        for app, label in it["apps"].items():
            by_app.setdefault(app, []).append((f"X{k}", parse_check(it["check"]), label))
    apps = sorted(by_app)
    out = []
    for i in range(n):
        name = apps[i % len(apps)]
        pool = by_app[name]
        out.append((name, (FIX / "apps" / name).read_text(), [pool[j % len(pool)] for j in range(per_app)]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--responses", type=int, default=512)
    ap.add_argument("--checks", type=int, default=6)
    ap.add_argument("--concurrency", type=int, default=None, help="apps at once (default env.runtime.concurrency)")
    ap.add_argument("--load-noise", type=float, default=None, metavar="RATE",
                    help="check the apps quiet and with CPU throttling RATE (e.g. 8); count the verdicts that change")
    args = ap.parse_args(argv)
    from schemas.config_checks import ChecksConfig
    from schemas.config_env import RuntimeConfig
    from tasks.env.checks import checks_hook, label_agreement
    from tasks.env.runtime import BrowserRuntime

    rt_cfg = RuntimeConfig(**({"concurrency": args.concurrency} if args.concurrency else {}))
    if not Path(rt_cfg.executable_path).exists():
        print(json.dumps({"bench": "checks", "skipped": f"no browser at {rt_cfg.executable_path}"}))
        return 0
    ck = ChecksConfig()
    work = workload(args.responses, args.checks)
    if args.load_noise is not None:
        return load_noise(work, rt_cfg, ck, args.load_noise)
    htmls = [h for _n, h, _c in work]
    with BrowserRuntime(rt_cfg) as rt:
        rt.check_many(htmls[:2])  # browser start-up is not part of either pass
        t0 = time.perf_counter()
        rt.check_many(htmls)
        load_s = time.perf_counter() - t0
        hooks = [checks_hook([(f"{iid}.{j}", c) for j, (iid, c, _l) in enumerate(cs)], ck, rt_cfg.load_timeout_s)
                 for _n, _h, cs in work]
        t0 = time.perf_counter()
        evs = rt.check_many(htmls, extras=hooks)
        both_s = time.perf_counter() - t0
    pairs = [(lab, r["status"]) for (_n, _h, cs), ev in zip(work, evs) for (_i, _c, lab), r in zip(cs, ev.check_results)]
    n_checks = sum(len(cs) for _n, _h, cs in work)
    added = both_s - load_s
    print(json.dumps({"bench": "checks", "responses": args.responses, "checks_per_response": args.checks,
                      "checks": n_checks, "results": len(pairs), "concurrency": rt_cfg.concurrency,
                      "load_only_s": round(load_s, 1), "load_and_checks_s": round(both_s, 1),
                      "checks_per_s": round(n_checks / both_s, 1),
                      "added_to_scoring_s": round(added, 1),
                      "added_per_response_s": round(added / args.responses, 3),
                      "labels": label_agreement(pairs), "cpus": os.cpu_count(),
                      "loadavg_1m": round(os.getloadavg()[0], 2)}))
    return 0


def load_noise(work: list, rt_cfg: Any, ck: Any, rate: float) -> int:
    """The same checks quiet and throttled ``rate`` times; prints the verdicts that changed."""
    from collections import Counter

    from tasks.env.checks import checks_hook
    from tasks.env.throttle import ThrottledRuntime

    statuses, secs = {}, {}
    for r in (1.0, rate):
        hooks = [checks_hook([(f"{iid}.{j}", c) for j, (iid, c, _l) in enumerate(cs)], ck, rt_cfg.load_timeout_s)
                 for _n, _h, cs in work]
        with ThrottledRuntime(rt_cfg, rate=r) as rt:
            t0 = time.perf_counter()
            evs = rt.check_many([h for _n, h, _c in work], extras=hooks)
            secs[r] = round(time.perf_counter() - t0, 1)
        statuses[r] = [(res["status"], res["reason"]) for ev in evs for res in ev.check_results]
    changed = [(a, b) for a, b in zip(statuses[1.0], statuses[rate]) if a[0] != b[0]]
    pairs = Counter(f"{a[0]}->{b[0]}" for a, b in changed)
    why = Counter(re.sub(r"[\d.]+", "#", (b[1] or a[1])[:70]) for a, b in changed)
    print(json.dumps({"bench": "checks_load_noise", "rate": rate, "responses": len(work),
                      "checks": len(statuses[1.0]), "changed": sum(pairs.values()), "changes": dict(pairs), "why": dict(why),
                      "quiet_s": secs[1.0], "throttled_s": secs[rate], "concurrency": rt_cfg.concurrency,
                      "max_slowdown": ck.max_slowdown, "cpus": os.cpu_count(),
                      "loadavg_1m": round(os.getloadavg()[0], 2)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
