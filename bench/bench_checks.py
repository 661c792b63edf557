"""Benchmark of the executable rubric checks; prints figures, asserts nothing.

The apps and checks are the hand-labelled fixtures (tests/fixtures/checks: ``labelled.json``, and
``labelled_more.json``: a countdown that fails the round at 0, an animation, a CSS fade, pages that must leave
the controlled clock, the interaction fixtures, a plot in SVG beside a canvas, each with its broken twin where it
has one) and the quiz of the attribution tests with its buggy twin.

- default: a GRPO-sized step, ``--responses`` apps (default 512, the paper's 64 x 8) with ``--checks`` checks
  each (default 6), in turn over the apps. Two passes through one browser: load only (the runtime gate), then
  load + checks. Prints checks per second, the CPU seconds a check costs (this process, the driver, the browser
  and its renderers together: a figure the machine's other load hardly moves), the time the checks add to the
  step (total and per response) and the checks' agreement with the hand labels.
- ``--time``: the wall time of checks that live long in page time, each alone: a ``wait`` of 3000 ms and a
  countdown that fails the round after 10 s (median and worst of ``--repeat``), and an app whose 20 checks
  all look for what it does not have.
- ``--per-document``: where a check's cost goes, in one app's context, one thing at a time (``--repeat`` x 8 each):
  a navigation to the app, a fresh document (navigation, settle, forget), and a whole check that counts one
  element (the same, plus Playwright's selector engine injected into the new document and the check's own work).
- ``--load-noise RATE``: every app with all its checks, on a quiet CPU and with Chromium starving every page
  RATE times over (``tasks/env/throttle.py``); ``--vs-concurrency N``: at ``--concurrency`` and at N apps at
  once, one check at a time. Each prints how many check verdicts (and which status pairs) changed.

Report ``uptime`` beside every figure. Run: ``python bench/bench_checks.py [--responses 512] [--checks 6]
[--concurrency 8] [--time] [--per-document] [--load-noise 8] [--vs-concurrency 1]``.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any
import _safe  # noqa: E402,F401 - first of our imports: API keys removed, no paid call by accident
from _cpu import tree_cpu_s  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "tests" / "fixtures"
LABELLED = (("checks/apps", FIX / "checks" / "labelled.json"), ("", FIX / "checks" / "labelled_more.json"))
QUIZ = ("checks/quiz_fixed.html", "checks/quiz_buggy.html")


def app_html(rel: str) -> str:
    from tasks.env.extract import extract_html

    text = (FIX / rel).read_text()
    return extract_html(text).html if rel.endswith(".txt") else text  # type: ignore[union-attr]


def apps_and_checks() -> dict[str, list[tuple[str, Any, str | None]]]:
    """app path (under tests/fixtures) -> [(item id, check, hand label or None)], every app of the bench."""
    from schemas.checks import parse_check

    by_app: dict[str, list] = {}
    for folder, path in LABELLED:
        for k, it in enumerate(json.loads(path.read_text())["items"]):
            for app, label in it["apps"].items():
                rel = f"{folder}/{app}" if folder else app
                by_app.setdefault(rel, []).append((f"{path.stem}.{k}", parse_check(it["check"]), label))
    quiz = parse_check((FIX / "checks" / "quiz_accuracy_check.json").read_text())
    for rel, label in zip(QUIZ, ("met", "not_met")):
        by_app[rel] = [("quiz.accuracy", quiz, label)]
    return by_app


def workload(n: int, per_app: int, apps_of: str = "all") -> list[tuple[str, str, list]]:
    """(app, html, [(item id, check, label)]) for n responses, apps in turn, ``per_app`` checks each; ``apps_of``
    labelled: only the apps of labelled.json (the first workload this bench measured)."""
    by_app = apps_and_checks()
    apps = sorted(a for a in by_app if apps_of == "all" or a.startswith(LABELLED[0][0]))
    html = {a: app_html(a) for a in apps}
    out = []
    for i in range(n):
        pool = by_app[apps[i % len(apps)]]
        out.append((apps[i % len(apps)], html[apps[i % len(apps)]], [pool[j % len(pool)] for j in range(per_app)]))
    return out


def plans(work: list, ck: Any) -> list:
    from tasks.env.checks import CheckPlan

    return [CheckPlan([(f"{iid}.{j}", c) for j, (iid, c, _l) in enumerate(cs)], ck) for _n, _h, cs in work]


def at_once(ck: Any, n: int | None) -> Any:
    """``ck`` with ``n`` checks of an app at once (the base commit ran them one at a time and has no setting)."""
    return ck.model_copy(update={"parallel": n}) if n is not None and "parallel" in type(ck).model_fields else ck


def machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "loadavg_1m": round(os.getloadavg()[0], 2)}


def throughput(work: list, rt_cfg: Any, ck: Any) -> dict[str, Any]:
    from tasks.env.checks import label_agreement
    from tasks.env.runtime import BrowserRuntime

    htmls = [h for _n, h, _c in work]
    with BrowserRuntime(rt_cfg) as rt:
        rt.check_many(htmls[:2])  # browser start-up is not part of either pass
        cpu0, t0 = tree_cpu_s(), time.perf_counter()
        rt.check_many(htmls)
        load_s, load_cpu = time.perf_counter() - t0, tree_cpu_s() - cpu0
        cpu0, t0 = tree_cpu_s(), time.perf_counter()
        evs = rt.check_many(htmls, checks=plans(work, ck))
        both_s, both_cpu = time.perf_counter() - t0, tree_cpu_s() - cpu0
    pairs = [(lab, r.status) for (_n, _h, cs), ev in zip(work, evs) for (_i, _c, lab), r in zip(cs, ev.check_results)]
    n_checks = sum(len(cs) for _n, _h, cs in work)
    added = both_s - load_s
    clocks = Counter(r.clock for ev in evs for r in ev.check_results)
    return {"bench": "checks", "responses": len(work), "checks_per_response": len(work[0][2]), "checks": n_checks,
            "results": len(pairs), "concurrency": rt_cfg.concurrency, "parallel_checks": getattr(ck, "parallel", 1),
            "load_only_s": round(load_s, 1), "load_and_checks_s": round(both_s, 1),
            "checks_per_s": round(n_checks / both_s, 1), "cpu_s_per_check": round((both_cpu - load_cpu) / n_checks, 4),
            "cpu_s_per_load": round(load_cpu / len(work), 4),
            "added_to_scoring_s": round(added, 1), "added_per_response_s": round(added / len(work), 3),
            "clocks": dict(clocks), "labels": label_agreement([(lab, st) for lab, st in pairs if lab is not None]),
            **machine()}


def timed_checks(rt_cfg: Any, ck: Any, repeat: int) -> dict[str, Any]:
    """Wall time of single checks that live long in page time, each alone in its app."""
    from schemas.checks import parse_check
    from tasks.env.checks import CheckPlan
    from tasks.env.runtime import BrowserRuntime

    countdown = app_html("checks/time/countdown.html")
    lost = next(c for iid, c, _l in apps_and_checks()["checks/time/countdown.html"] if iid == "labelled_more.0")
    wait = parse_check({"steps": [{"do": "wait", "ms": 3000},
                                  {"expect": "text", "target": {"role": "status"}, "matches": "press start"}]})
    missing = [(f"M{i}", parse_check({"steps": [{"do": "click", "target": {"role": "button", "name": f"pause {i}"}},
                                                {"expect": "no_error"}]})) for i in range(20)]
    out: dict[str, Any] = {"bench": "checks_timed", "repeat": repeat}
    cfg = rt_cfg.model_copy(update={"concurrency": 1})
    with BrowserRuntime(cfg) as rt:
        rt.check_many([countdown])
        for name, check in (("wait_3000", wait), ("countdown_10s_lost", lost)):
            rs = [rt.check_many([countdown], checks=[CheckPlan([(name, check)], ck)])[0].check_results[0]
                  for _ in range(repeat)]
            walls = [r["duration_s"] for r in rs]
            out[name] = {"wall_s_median": round(statistics.median(walls), 3), "wall_s_max": round(max(walls), 3),
                         "statuses": dict(Counter(r.status for r in rs))}
        t0 = time.perf_counter()
        ev = rt.check_many([countdown], checks=[CheckPlan(missing, ck.model_copy(update={"max_checks": 20}))])[0]
        out["twenty_missing_app_s"] = {"wall_s": round(time.perf_counter() - t0, 2), "load_s": None,
                                       "statuses": dict(Counter(r.status for r in ev.check_results))}
        t0 = time.perf_counter()
        rt.check_many([countdown])
        out["twenty_missing_app_s"]["load_s"] = round(time.perf_counter() - t0, 2)
    return {**out, "goal": "wait_3000 and countdown_10s_lost < 0.2 s wall each; 20 missing checks < 3 s", **machine()}


def per_document(rt_cfg: Any, ck: Any, repeat: int) -> dict[str, Any]:
    """CPU seconds (this process and all it started) and wall seconds of each part of a check's fresh document."""
    import asyncio

    from schemas.checks import parse_check
    from tasks.env import checks as K
    from tasks.env.lanes import Lane
    from tasks.env.page import APP_URL
    from tasks.env import runtime as R
    from tasks.env.checks import CheckPlan
    from tasks.env.pagetime import PageTime

    n, html = repeat * 8, app_html("checks/apps/todo.html")
    count = parse_check({"steps": [{"expect": "count", "target": {"css": "body"}, "at_least": 1}]})
    out: dict[str, Any] = {"bench": "checks_per_document", "app": "checks/apps/todo.html", "n": n}

    # the parts timed in the app's own context, where the runtime's session runs its checks: in place of them
    async def parts(context: Any, html_: str, _checks: Any, _cfg: Any, _load_s: float, page: Any = None,
                    idle: Any = None) -> list:
        lane = Lane(context, html_)
        await lane.adopt(page)

        async def navigation() -> None:
            await lane.page.goto(APP_URL, wait_until="load")

        async def fresh_document() -> None:
            p = await lane.open([])
            t = PageTime(p, ck, ck.check_limit_s * 1000)
            await K._fresh_document(p, t, ck, rt_cfg.load_timeout_s)
            await lane.forget(t)

        async def whole_check() -> None:
            await K._check_in_page(lane, "count", count, ck, rt_cfg.load_timeout_s, ck.check_limit_s * ck.max_slowdown)

        for name, part in (("navigation", navigation), ("fresh_document", fresh_document), ("check", whole_check)):
            cpu0, t0 = tree_cpu_s(), time.perf_counter()
            for _ in range(n):
                await part()
            out[name] = {"cpu_s": round((tree_cpu_s() - cpu0) / n, 4), "wall_s": round((time.perf_counter() - t0) / n, 4)}
        await asyncio.sleep(0)
        return []

    real, R.run_checks = R.run_checks, parts
    try:
        with R.BrowserRuntime(rt_cfg.model_copy(update={"concurrency": 1})) as rt:
            ev = rt.check_many([html], checks=[CheckPlan([("count", count)], ck)])[0]
    finally:
        R.run_checks = real
    if ev.checks_error:
        raise RuntimeError(f"the timed parts crashed: {ev.checks_error}")
    return {**out, **machine()}


def compare(work: list, rt_cfg: Any, ck: Any, arms: list[tuple[str, float, int, int | None]]) -> dict[str, Any]:
    """The same checks under two arms (name, CPU throttling rate, apps at once, checks at once): changed verdicts."""
    from tasks.env.throttle import ThrottledRuntime

    statuses, secs = {}, {}
    for name, rate, conc, par in arms:
        cfg, ck_arm = rt_cfg.model_copy(update={"concurrency": conc}), at_once(ck, par)
        with ThrottledRuntime(cfg, rate=rate) as rt:
            t0 = time.perf_counter()
            evs = rt.check_many([h for _n, h, _c in work], checks=plans(work, ck_arm))
            secs[name] = round(time.perf_counter() - t0, 1)
        statuses[name] = [(n, res.item_id, res.status, res.reason)
                          for (n, _h, _c), ev in zip(work, evs) for res in ev.check_results]
    (a, _r, _c, _p), (b, _r2, _c2, _p2) = arms
    changed = [(x, y) for x, y in zip(statuses[a], statuses[b]) if x[2] != y[2]]
    why = Counter(re.sub(r"[\d.]+", "#", (y[3] or x[3])[:70]) for x, y in changed)
    return {"bench": "checks_verdicts", "arms": [dict(zip(("name", "cpu_throttling", "apps_at_once", "checks_at_once"),
                                                           arm)) for arm in arms],
            "apps": len(work), "checks": len(statuses[a]), "changed": len(changed),
            "changes": dict(Counter(f"{x[2]}->{y[2]}" for x, y in changed)), "why": dict(why),
            "which": [f"{x[0]}:{x[1]}" for x, _y in changed][:20], "seconds": secs, **machine()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--responses", type=int, default=512)
    ap.add_argument("--checks", type=int, default=6)
    ap.add_argument("--concurrency", type=int, default=None, help="apps at once (default env.runtime.concurrency)")
    ap.add_argument("--apps", choices=("all", "labelled"), default="all",
                    help="the step's apps: all of the bench's, or only those of labelled.json")
    ap.add_argument("--time", action="store_true", help="wall time of long-lived checks, each alone")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--per-document", action="store_true", help="the cost of each part of a check's fresh document")
    ap.add_argument("--load-noise", type=float, default=None, metavar="RATE",
                    help="check every app quiet and with CPU throttling RATE (e.g. 8); count the verdicts that change")
    ap.add_argument("--vs-concurrency", type=int, default=None, metavar="N",
                    help="check every app at --concurrency and at N apps at once, one check at a time")
    args = ap.parse_args(argv)
    from schemas.config.checks import ChecksConfig
    from schemas.config.env import RuntimeConfig

    rt_cfg = RuntimeConfig(**({"concurrency": args.concurrency} if args.concurrency else {}))
    if not Path(rt_cfg.executable_path).exists():
        print(json.dumps({"bench": "checks", "skipped": f"no browser at {rt_cfg.executable_path}"}))
        return 0
    ck, par = ChecksConfig(), getattr(ChecksConfig(), "parallel", None)
    every = [(a, app_html(a), cs) for a, cs in sorted(apps_and_checks().items())]
    if args.time:
        print(json.dumps(timed_checks(rt_cfg, ck, args.repeat)))
    elif args.per_document:
        print(json.dumps(per_document(rt_cfg, ck, args.repeat)))
    elif args.load_noise is not None:
        c = rt_cfg.concurrency
        print(json.dumps(compare(every, rt_cfg, ck, [("quiet", 1.0, c, par), ("throttled", args.load_noise, c, par)])))
    elif args.vs_concurrency is not None:
        print(json.dumps(compare(every, rt_cfg, ck, [("many", 1.0, rt_cfg.concurrency, par),
                                                     ("few", 1.0, args.vs_concurrency, 1)])))
    else:
        print(json.dumps({**throughput(workload(args.responses, args.checks, args.apps), rt_cfg, ck), "apps": args.apps}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
