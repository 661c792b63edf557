"""Benchmark of the official metric: InteractScience's own Playwright tests (PFT) run here, beside the results
the benchmark's authors published for the same models' answers.

The user's route with no key: ``rubricrl ingest`` of the benchmark's plans with its ``PFT_tests/``,
``rubricrl run --only build-rubrics``, ``rubricrl run --only evaluate`` on ``evaluation.benchmark=interactscience``
with one response folder per model (the models' published answers: several generators in one command). Every
app is scored by our reward and by the benchmark's own tests (``official_*`` columns of eval_results).

Prints, per model over the same tasks: the PFT pass rates the benchmark reports (overall = passed tests / all
tests, average = mean per-app share, perfect = apps passing every test), published and ours; ours counts a test
that could not be judged here (no reference screenshot in the public snapshot, a library the mirror lacks) as
Playwright does (not passed), and also over the judged tests only. Then the per-test agreement of the two runs
(tests matched by spec file and title), every test whose outcome differs with its cause, and the agreement of
our reward with the official metric (ours and the published one). Asserts nothing.

Needs a local copy of github.com/open-compass/InteractScience (``--corpus DIR`` or ``RUBRICRL_INTERACTSCIENCE``).

Run: ``.venv/bin/python bench/bench_official.py --corpus DIR [--limit 20] [--models M ...] [--keep DIR]
[--reuse [--official-only]]``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _safe  # noqa: E402,F401 - the repo on sys.path, no paid call by accident
import interactscience as corpus  # noqa: E402
from bench_realapps import rubricrl, stage_rows  # noqa: E402

from tasks.evaluation.agreement import pairwise_within, spearman  # noqa: E402
from tasks.evaluation.playwright_report import TestOutcome  # noqa: E402

DEFAULT_MODELS = ("Qwen2.5-Coder-32B-Instruct", "gpt-oss-20b")


def cause(published: TestOutcome, ours: dict) -> str:
    """Why a test's outcome differs between the published run and ours (first rule that fits)."""
    pub, mine = published.error or "", ours.get("note") or ""
    if ours["status"] == "no_reference":
        return "no reference screenshot in the public snapshot (ours cannot compare)"
    if ours["status"] == "unserved":
        return "a library the mirror lacks (not judged here)"
    if "sandbox refused" in mine:
        return "the sandbox refused a request the published run made"
    if "ERR_FILE_NOT_FOUND" in pub or "ERR_FILE_NOT_FOUND" in mine:
        return "page extracted on one side only"
    if "toHaveScreenshot" in pub or "snapshot" in pub.lower():
        return "published compared a screenshot with its reference image"
    if "timeout" in (pub + mine).lower() or "timed out" in (pub + mine).lower():
        return "a time limit (5 s expect / 30 s test) reached on one side"
    return "other"


def rescore_official(data: Path, rows: list[dict], workers: int) -> list[dict]:
    """The official columns of ``rows`` again, by the code evaluate calls (``official_columns``), so a change to
    the protocol is measured without scoring every app by our environment again."""
    from schemas.config.env import RuntimeConfig
    from schemas.config.evaluation import OfficialConfig
    from tasks.evaluation.official import official_columns, official_inputs
    from tasks.llm.offline import OfflineProvider
    from tasks.stages.store import StageStore

    inputs = official_inputs(StageStore(data), OfficialConfig(pft_workers=workers), RuntimeConfig(),
                             OfflineProvider(), data)
    out = []
    for model in dict.fromkeys(r["model"] for r in rows):  # one generator at a time, as evaluate does
        mine = [r for r in rows if r["model"] == model]
        out += [{**r, **cols} for r, cols in zip(mine, official_columns(mine, [None] * len(mine), inputs))]
    return out


def rates(per_app: list[tuple[int, int]]) -> tuple[float | None, float | None, float | None]:
    """(overall, average, perfect) from (passed, total) per app, as the benchmark's cal_metrics.py counts them."""
    apps = [(p, t) for p, t in per_app if t]
    if not apps:
        return None, None, None
    return (sum(p for p, _ in apps) / sum(t for _, t in apps), sum(p / t for p, t in apps) / len(apps),
            sum(p == t for p, t in apps) / len(apps))


def compare(model: str, published: dict[str, list[TestOutcome]], rows: list[dict]) -> dict:
    """Per-test comparison of one model's published outcomes with ours (matched by task and test title)."""
    ours_by_task = {r["query_id"].removeprefix("ext-"): r for r in rows}
    pub_apps, our_apps, judged_apps, pairs, diffs, unmatched = [], [], [], Counter(), [], 0
    for task, row in sorted(ours_by_task.items()):
        pub = published.get(task, [])
        mine = {d["name"]: d for d in row["official_detail"] or []}
        pub_apps.append((sum(t.passed for t in pub), len(pub)))
        our_apps.append((sum(d["status"] == "passed" for d in mine.values()), len(mine)))
        judged = [d for d in mine.values() if d["passed"] is not None]
        judged_apps.append((sum(d["passed"] for d in judged), len(judged)))
        titles = {t.title for t in pub}
        unmatched += len(set(mine) ^ titles)
        for t in pub:
            d = mine.get(t.title)
            if d is None:
                continue
            ours_ok = d["status"] == "passed"
            pairs[(t.passed, ours_ok)] += 1
            if t.passed != ours_ok:
                diffs.append((task, t.title, t.passed, d["status"], cause(t, d), (t.error or "")[:110],
                              (d.get("note") or "")[:110]))
    statuses = Counter(d["status"] for r in rows for d in r["official_detail"] or [])
    return {"model": model, "published": rates(pub_apps), "ours": rates(our_apps), "judged": rates(judged_apps),
            "pairs": pairs, "diffs": diffs, "unmatched": unmatched, "apps": len(ours_by_task), "statuses": statuses}


def pct(v: float | None) -> str:
    return "—" if v is None else f"{100 * v:.1f}"


def report(results: list[dict], rows: list[dict], labels: dict[str, dict[str, float]]) -> None:
    print("model | apps | overall pub / ours / ours-judged | average pub / ours / judged | perfect pub / ours / judged")
    for c in results:
        cols = [" / ".join(pct(x[i]) for x in (c["published"], c["ours"], c["judged"])) for i in range(3)]
        print(f"{c['model']} | {c['apps']} | " + " | ".join(cols))
    for c in results:
        same = c["pairs"][(True, True)] + c["pairs"][(False, False)]
        n = sum(c["pairs"].values())
        print(f"\n{c['model']}: per-test agreement {same}/{n} = {pct(same / n if n else None)}% (both pass "
              f"{c['pairs'][(True, True)]}, both fail {c['pairs'][(False, False)]}, published pass / ours not "
              f"{c['pairs'][(True, False)]}, published fail / ours pass {c['pairs'][(False, True)]}); tests on one "
              f"side only {c['unmatched']}; not judged here: no reference screenshot "
              f"{c['statuses']['no_reference']}, a library the mirror lacks {c['statuses']['unserved']}")
        for why, k in Counter(d[4] for d in c["diffs"]).most_common():
            print(f"  {k:3d} differ: {why}")
        for task, title, pub_ok, status, why, perr, merr in c["diffs"]:
            print(f"    - {task} / {title}: published {'pass' if pub_ok else 'fail'}, ours {status} [{why}]")
            if why == "other" or why.startswith("a time"):
                print(f"        published: {perr}\n        ours: {merr}")
    ours = [(r["query_id"], r["reward"], r["official_score"]) for r in rows]
    pub = [(r["query_id"], r["reward"], labels.get(r["model"], {}).get(r["query_id"])) for r in rows]
    for name, apps in (("our PFT run", ours), ("the published PFT results", pub)):
        pw = pairwise_within(apps)
        print(f"\nour reward vs {name}: Spearman {spearman([a[1] for a in apps], [a[2] for a in apps])}, pairwise "
              f"within a task {pw.rate} ({pw.pairs} pairs, {pw.reward_ties} reward ties)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    corpus.add_arguments(ap, limit=20, models=list(DEFAULT_MODELS))
    ap.add_argument("--workers", type=int, default=2, help="evaluation.official.pft_workers")
    ap.add_argument("--reuse", action="store_true", help="compare the eval_results already in --keep")
    ap.add_argument("--official-only", action="store_true", help="with --reuse: compute the official columns "
                                                                  "again with the current code (PFT run only)")
    args = ap.parse_args()
    if not (args.corpus or os.environ.get(corpus.ENV_VAR)):
        print(f"bench_official: skipped; give --corpus DIR (or ${corpus.ENV_VAR}), a local copy of "
              "github.com/open-compass/InteractScience")
        return
    c = corpus.load(args.corpus, args.split)
    data, work, ids, folders = corpus.user_inputs(c, args.keep, "bench-official-", args.limit, args.models)
    times = {}
    if not args.reuse:
        times["ingest"] = rubricrl(data, "ingest", str(work / "interactscience.jsonl"), "--tests",
                                   str(c.root / "PFT_tests"))
        times["build-rubrics"] = rubricrl(data, "run", "--only", "build-rubrics")
        times["evaluate"] = rubricrl(data, "run", "--only", "evaluate", "--set",
                                     f"evaluation.models={json.dumps(folders)}", "--set",
                                     "evaluation.benchmark=interactscience", "--set", "evaluation.runs=1", "--set",
                                     f"evaluation.official.pft_workers={args.workers}")
    rows = [r for r in stage_rows(data, "eval_results") if r["model"] in args.models]
    if args.reuse and args.official_only:
        started = time.perf_counter()
        rows = rescore_official(data, rows, args.workers)
        times["official (PFT) again"] = time.perf_counter() - started
    print(f"InteractScience {args.split}: {len(ids)} tasks x {len(args.models)} models = {len(rows)} apps; data {data}")
    print(f"uptime: {os.popen('uptime').read().strip()}")
    if times:
        per = times.get("evaluate", times.get("official (PFT) again", 0.0)) / max(len(rows), 1)
        print("time: " + ", ".join(f"{k} {v:.0f} s" for k, v in times.items()) + f" ({per:.1f} s per app)")
    results = [compare(m, c.outcomes(m), [r for r in rows if r["model"] == m]) for m in args.models]
    report(results, rows, {m: c.labels(m) for m in args.models})


if __name__ == "__main__":
    main()
