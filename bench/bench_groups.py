"""Benchmark of the reward's spread in groups as GRPO sees them; prints figures, asserts nothing.

A GRPO group is the apps one policy writes for one prompt, and a group whose rewards tie has zero advantage: it
teaches nothing. Here a group is one InteractScience task and its apps are the answers of every model the public
snapshot holds for it (``eval/interactscience_lm_<model>.jsonl``: 34 models, so about 30 apps a task), scored by
the user's route (``rubricrl ingest``, ``run --only build-rubrics``, ``run --only evaluate`` with one response folder
per model, as ``bench_realapps.py`` runs it).

Prints, per group: apps, distinct rewards, the rewards' standard deviation, the share of app pairs whose rewards
tie, how many apps share the group's top reward, and the same spread of the labels beside it (the share of the
benchmark's own tests an app passed, for the apps that have one: ``--labels published``, the three models whose
results the authors published (a snapshot may lack them), ``official``, our run of the tests inside evaluate, which
costs minutes a model, or ``--labels-from DIR``, that run kept by ``bench_official.py --keep DIR``).
Then over all groups: the share with no reward spread, the mean standard deviation, the mean share of tied pairs,
and the share of apps whose GRPO advantage is zero (its reward equals its group's mean).

Before and after a change: run it from a worktree of each commit with its own ``--keep``; the imports and the
``rubricrl`` it runs are the tree the bench file is in. ``--reuse``: the figures from ``--keep DIR``'s eval_results.

Run: ``.venv/bin/python bench/bench_groups.py --corpus DIR [--limit 5] [--keep DIR] [--reuse]
[--labels published|official|none] [--models m1 m2 ...]``.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
import _safe  # noqa: E402,F401 - the repo on sys.path, no paid call by accident
import bench_realapps as route  # noqa: E402 - the user's route: ingest, build-rubrics, evaluate
import interactscience as corpus  # noqa: E402
import realapps_devset  # noqa: E402 - our run of the benchmark's tests as labels

TIE = 1e-9  # rewards closer than this are one reward (they are sums of a few weighted items)


def snapshot_models(root: Path) -> list[str]:
    """Every model whose answers the snapshot holds (the language-model track)."""
    return sorted(p.name.removeprefix("interactscience_lm_").removesuffix(".jsonl")
                  for p in (root / "eval").glob("interactscience_lm_*.jsonl"))


def spread(values: list[float]) -> dict[str, float | int | None]:
    """One group's spread: apps, distinct values, population standard deviation, the share of pairs that tie,
    how many share the top value, and how many sit exactly at the mean (their GRPO advantage is zero)."""
    if not values:
        return {"n": 0, "distinct": 0, "std": None, "tied_pairs": None, "at_top": 0, "zero_adv": 0}
    pairs = list(itertools.combinations(values, 2))
    top, mean = max(values), statistics.fmean(values)
    distinct = len({round(v / TIE) for v in values})
    return {"n": len(values), "distinct": distinct, "std": statistics.pstdev(values),
            "tied_pairs": sum(abs(a - b) <= TIE for a, b in pairs) / len(pairs) if pairs else None,
            "at_top": sum(abs(v - top) <= TIE for v in values), "zero_adv": sum(abs(v - mean) <= TIE for v in values)}


Group = tuple[list[float], list[float], list[float]]


def groups(rows: list[dict], by_label: dict[str, str], labels: dict[str, dict[str, float]]) -> dict[str, Group]:
    """query id -> (the rewards of its apps, those of its working apps (tier valid: past every gate), the labels
    of those that have one)."""
    out: dict[str, Group] = {}
    for r in rows:
        if r["reward"] is None:
            continue
        rewards, valid, labs = out.setdefault(r["query_id"], ([], [], []))
        rewards.append(r["reward"])
        if r["tier"] == "valid":
            valid.append(r["reward"])
        lab = labels.get(by_label.get(r["model"], r["model"]), {}).get(r["query_id"])
        if lab is not None:
            labs.append(lab)
    return out


def fmt(v: object) -> str:
    return f"{v:.3f}" if isinstance(v, float) else "-" if v is None else str(v)


def report(per_group: dict[str, Group]) -> None:
    cols = ["n", "distinct", "std", "tied_pairs", "at_top"]
    print("group | " + " | ".join(f"reward {c}" for c in cols) + " | working apps | their distinct rewards | "
          "their tied pairs | labelled | label distinct | label std")
    summary, working = [], []
    for q, (rewards, valid, labs) in sorted(per_group.items()):
        s, v, lab = spread(rewards), spread(valid), spread(labs)
        summary.append(s)
        working.append(v)
        print(" | ".join([q] + [fmt(s[c]) for c in cols] + [fmt(v["n"]), fmt(v["distinct"]), fmt(v["tied_pairs"]),
                                                             fmt(lab["n"]), fmt(lab["distinct"]), fmt(lab["std"])]))
    n = len(summary)
    apps = sum(s["n"] for s in summary)
    flat = sum(1 for s in summary if s["distinct"] == 1)
    print(f"groups {n}, apps {apps}: with no reward spread {flat} of {n}; mean reward std "
          f"{fmt(statistics.fmean(s['std'] for s in summary) if n else None)}; mean share of tied pairs "
          f"{fmt(statistics.fmean(s['tied_pairs'] for s in summary if s['tied_pairs'] is not None) if n else None)}; "
          f"apps with zero advantage {sum(s['zero_adv'] for s in summary)} of {apps}; apps sharing their group's "
          f"top reward {sum(s['at_top'] for s in summary)} of {apps}")
    tied = [v["tied_pairs"] for v in working if v["tied_pairs"] is not None]
    print(f"working apps (past every gate) {sum(v['n'] for v in working)}: mean share of their pairs tied "
          f"{fmt(statistics.fmean(tied) if tied else None)}; groups whose working apps all tie "
          f"{sum(1 for v in working if v['n'] > 1 and v['distinct'] == 1)} of {sum(1 for v in working if v['n'] > 1)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    corpus.add_arguments(ap, limit=5, models=None, models_help="default: every model of the snapshot")
    ap.add_argument("--reuse", action="store_true", help="the figures from --keep's eval_results")
    ap.add_argument("--labels", default="published", choices=["published", "official", "none"])
    ap.add_argument("--labels-from", default=None, help="a data directory whose eval_results hold our run of the "
                    "benchmark's tests (bench_official.py --keep DIR): its labels, for the models it ran")
    ap.add_argument("--set", action="append", default=[], help="extra --set for build-rubrics and evaluate")
    args = ap.parse_args()
    if args.reuse and not args.keep:
        ap.error("--reuse needs --keep DIR")
    root = args.corpus or os.environ.get(corpus.ENV_VAR)
    if not root:
        print(f"bench_groups: skipped; give --corpus DIR (or ${corpus.ENV_VAR}), a local copy of "
              "github.com/open-compass/InteractScience")
        return
    c = corpus.load(root, args.split)
    models = args.models or snapshot_models(c.root)
    data, work, ids, folders = corpus.user_inputs(c, args.keep, "bench-groups-", args.limit, models)
    answered = [(f, m) for f, m in zip(folders, models) if any(Path(f).glob("*.txt"))]  # some answer none of them
    folders, models = [f for f, _ in answered], [m for _, m in answered]
    sets = [x for s in args.set for x in ("--set", s)]
    started = time.perf_counter()
    if not args.reuse:
        tests = ["--tests", str(c.root / "PFT_tests")] if args.labels == "official" else []
        route.rubricrl(data, "ingest", str(work / "interactscience.jsonl"), *tests)
        route.rubricrl(data, "run", "--only", "build-rubrics", *sets)
        route.rubricrl(data, "run", "--only", "evaluate", "--set", f"evaluation.models={json.dumps(folders)}",
                       "--set", "evaluation.benchmark=ingested", "--set", "evaluation.runs=1", *sets)
    by_label = {Path(f).name: m for f, m in zip(folders, models)}
    want = {corpus.query_id(t) for t in ids}
    rows = [r for r in route.stage_rows(data, "eval_results") if r["model"] in by_label and r["query_id"] in want]
    if args.labels_from:
        labels, _dropped = realapps_devset.read_official_labels(Path(args.labels_from))
        args.labels = f"our run of the tests in {args.labels_from}"
    elif args.labels == "official":
        labels, _dropped = realapps_devset.official_labels(rows, by_label)
    else:
        labels = {m: c.labels(m) for m in models if m in corpus.LABELLED_MODELS} if args.labels == "published" else {}
    print(f"InteractScience {args.split}: {len(ids)} tasks x {len(models)} models = {len(rows)} apps; data {data}")
    print(f"uptime: {os.popen('uptime').read().strip()}; "
          + ("reused eval_results" if args.reuse else f"route took {time.perf_counter() - started:.0f} s"))
    print(f"labels: {args.labels} ({sum(len(v) for v in labels.values())} apps of {len(labels)} models)")
    report(groups(rows, by_label, labels))


if __name__ == "__main__":
    main()
