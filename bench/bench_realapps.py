"""Benchmark of the embedded (offline) environment on real apps nobody here wrote: InteractScience.

The user's route, with no API key, as a newcomer types it: ``rubricrl ingest`` of the benchmark's plans,
``rubricrl run --only build-rubrics``, then ``rubricrl run --only evaluate`` with one response folder per
model (the models' published answers). Each app's label is the share of the benchmark's own Playwright
functional tests (PFT) it passed, as the benchmark's authors published them (``bench/interactscience.py``).

Prints, per model and over all apps: pairwise agreement within a task between our reward and the label
(label ties skipped, reward ties count as misses), Spearman over all apps, the mean reward of apps passing
no PFT test and of apps passing at least 80%, tiers, items per query, the executable checks' verdicts by
status and the items no evidence decided, and seconds per step and per app; the goals as PASS/FAIL with
``uptime``; and the best Spearman and pass-80 mean any judge could reach with the same gate verdicts (the tiers
bound them: a runtime-invalid app's reward is fixed whatever its label); and the same figures on labels that
count a test failed only by number formatting (``"0"`` shown as ``"0.0"``) as passed, a measure of how strict
the labels are (the goals stay on the published ones). Asserts nothing.

Needs a local copy of github.com/open-compass/InteractScience (``--corpus DIR`` or
``RUBRICRL_INTERACTSCIENCE``); development split only (task ids A to M) unless ``--split`` says otherwise.

``--short``: the same route and figures on short requests instead ("a bouncing DVD logo", "A Flappy-Bird
clone"), each with a working and a broken app written for this bench (``tests/fixtures/short_requests/``:
``requests.jsonl`` and ``<id>/working.html``, ``<id>/broken.html``); label 1 for working, 0 for broken.

``--labels official``: each app's label is the share of the benchmark's own tests it passed in OUR run of them (the
``official_*`` columns of eval_results, as ``bench_official.py --keep DIR`` writes them), for the models the
snapshot publishes no PFT results for (the development set of strong models); an app those tests could not judge
is dropped, and said (``realapps_devset.py``). Then the within-task pairs beside the benchmark's VLM judge on the
same pairs. ``--reuse``: the figures from the eval_results already in ``--keep DIR`` (no ingest, build-rubrics or
evaluate). ``--misordered``: every pair the reward orders wrong or ties, with what differs between its two apps.

Run: ``.venv/bin/python bench/bench_realapps.py --corpus DIR [--limit 20] [--models gpt-oss-20b ...] [--keep DIR]``
or ``.venv/bin/python bench/bench_realapps.py --short [--keep DIR]``, or on bench_official's data
``... --models gpt-5 o3 ... --keep DIR --reuse --labels official --misordered``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
import _safe  # noqa: E402,F401 - the repo on sys.path, no paid call by accident
import interactscience as corpus  # noqa: E402
import realapps_devset  # noqa: E402 - the development set: labels from our PFT run, pairs, the VLM judge
import realapps_env  # noqa: E402 - the environment's sections: runtime-invalid by cause, mirror coverage

from schemas.config import load_config  # noqa: E402
from tasks.evaluation.agreement import pairwise_within, spearman  # noqa: E402

GOALS = {"pairwise": 0.75, "spearman": 0.6, "reward_pass_none_max": 0.3, "reward_pass_80_min": 0.7, "s_per_app_max": 3.0}
SHORT = REPO / "tests" / "fixtures" / "short_requests"
SHORT_KINDS = {"working": 1.0, "broken": 0.0}


def rubricrl(data: Path, *args: str) -> float:
    """Run the CLI as a user would (its own process, the data directory in the environment); seconds taken."""
    # a loaded machine starts Prefect's temporary server slowly: give it longer than the default 20 s
    env = {"PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120", **os.environ, "RUBRICRL_DATA_DIR": str(data),
           "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    proc = subprocess.run([str(REPO / ".venv" / "bin" / "rubricrl"), *args], env=env, cwd=REPO,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"rubricrl {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return time.perf_counter() - started


def stage_rows(data: Path, stage: str) -> list[dict]:
    from tasks.stages.store import StageStore

    return StageStore(data).read(stage).to_pylist()


def figures(apps: list[tuple[str, float | None, float | None]]) -> dict:
    """apps: (query id, reward, label) -> the agreement figures and the mean rewards at both label ends."""
    agree = pairwise_within(apps)
    none = [r for _, r, lab in apps if r is not None and lab == 0.0]
    good = [r for _, r, lab in apps if r is not None and lab is not None and lab >= 0.8]
    mean = lambda xs: sum(xs) / len(xs) if xs else None  # noqa: E731
    return {"apps": len(apps), "pairwise": agree.rate, "pairs": agree.pairs, "reward_ties": agree.reward_ties,
            "spearman": spearman([a[1] for a in apps], [a[2] for a in apps]),
            "reward_pass_none": mean(none), "n_pass_none": len(none),
            "reward_pass_80": mean(good), "n_pass_80": len(good),
            "missing": sum(1 for a in apps if a[1] is None)}


def ceiling(apps: list[tuple[str, float | None, float | None]], cfg: object) -> dict:
    """apps: (tier, reward, label). What a judge could reach at best with these gate verdicts: Spearman when
    every valid app's reward is ``rubric_floor + (rubric_max - rubric_floor) * label`` (the valid tier ordered
    exactly as the labels), and the mean reward of apps passing >= 80% when every valid one gets ``rubric_max``.
    The labels only bound the figures here; no reward is made from them."""
    ranked = [(cfg.rubric_floor + (cfg.rubric_max - cfg.rubric_floor) * lab if t == "valid" else r, lab)
              for t, r, lab in apps if r is not None and lab is not None]
    good = [cfg.rubric_max if t == "valid" else r for t, r, lab in apps if r is not None and lab is not None
            and lab >= 0.8]
    return {"spearman": spearman([a[0] for a in ranked], [a[1] for a in ranked]),
            "reward_pass_80": sum(good) / len(good) if good else None}


def write_short_inputs(work: Path) -> tuple[Path, dict[str, Path], dict[str, dict[str, float]]]:
    """The short requests as a generic JSONL for ``rubricrl ingest``, one response folder per kind (working,
    broken) and the labels: (queries file, kind -> folder, kind -> query id -> label)."""
    lines = [json.loads(x) for x in (SHORT / "requests.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    queries = work / "short_requests.jsonl"
    queries.write_text("".join(json.dumps({"id": r["id"], "query": r["query"]}) + "\n" for r in lines),
                       encoding="utf-8")
    folders, labels = {}, {}
    for kind, label in SHORT_KINDS.items():
        folders[kind] = work / "responses" / kind
        folders[kind].mkdir(parents=True, exist_ok=True)
        for r in lines:
            app = (SHORT / r["id"] / f"{kind}.html").read_text(encoding="utf-8")
            (folders[kind] / f"ext-{r['id']}.txt").write_text(f"```html\n{app}\n```\n", encoding="utf-8")
        labels[kind] = {f"ext-{r['id']}": label for r in lines}
    return queries, folders, labels


def route_inputs(args: argparse.Namespace) -> tuple[Path, Path, list[str], dict[str, dict[str, float]], list[str],
                                                 str, Path | None]:
    """(data directory, queries file, response folders, model -> query id -> label, task ids, title, corpus root)
    of the corpus the bench runs on; ``args.models`` becomes the folders' labels (working and broken, with
    ``--short``)."""
    if args.short:
        data, work = corpus.data_dirs(args.keep, "bench-realapps-")
        queries_file, by_kind, labels = write_short_inputs(work)
        args.models = list(by_kind)
        return (data, queries_file, [str(f) for f in by_kind.values()], labels, list(labels["working"]),
                "short requests", None)
    c = corpus.load(args.corpus, args.split)
    data, work, ids, folders = corpus.user_inputs(c, args.keep, "bench-realapps-", args.limit, args.models)
    labels = {m: c.labels(m) for m in args.models} if args.labels == "published" else {}
    return data, work / "interactscience.jsonl", folders, labels, ids, f"InteractScience {args.split}", c.root


def check_verdicts(rows: list[dict]) -> str:
    """The executable checks' verdicts over all apps, and the rubric items no evidence decided."""
    sums = {k: sum(r.get(k) or 0 for r in rows) for k in ("checks_passed", "checks_failed", "checks_inconclusive",
                                                         "items_undecided", "items_total")}
    return (f"check verdicts: passed {sums['checks_passed']}, failed {sums['checks_failed']}, inconclusive "
            f"{sums['checks_inconclusive']}; items undecided {sums['items_undecided']} of {sums['items_total']} "
            "judged (left out of the rubric score)")


def fmt(v: object) -> str:
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    corpus.add_arguments(ap, limit=None, models=list(corpus.LABELLED_MODELS))
    ap.add_argument("--set", action="append", default=[], help="extra --set for build-rubrics and evaluate")
    ap.add_argument("--short", action="store_true", help="short requests with a working and a broken app each "
                                                         "(tests/fixtures/short_requests/) instead of InteractScience")
    ap.add_argument("--labels", default="published", choices=["published", "official"],
                    help="published: the PFT results the benchmark's authors published (three models); official: "
                         "our run of the same tests (official_* of eval_results, e.g. bench_official.py --keep DIR)")
    ap.add_argument("--reuse", action="store_true", help="the figures from the eval_results already in --keep "
                                                          "(no ingest, build-rubrics or evaluate)")
    ap.add_argument("--misordered", action="store_true", help="with --labels official: every within-task pair the "
                                                               "reward orders wrong or ties, with what differs")
    realapps_env.add_arguments(ap)
    args = ap.parse_args()
    if args.reuse and not args.keep:
        ap.error("--reuse needs --keep DIR (the data directory whose eval_results to read)")
    if args.labels == "official" and args.short:
        ap.error("--labels official needs InteractScience (its Playwright tests), not --short")
    if not args.short and not (args.corpus or os.environ.get(corpus.ENV_VAR)):
        print(f"bench_realapps: skipped; give --corpus DIR (or ${corpus.ENV_VAR}), a local copy of "
              "github.com/open-compass/InteractScience, or --short")
        return
    data, queries_file, folders, labels, ids, title, root = route_inputs(args)
    sets = [x for s in args.set for x in ("--set", s)]
    t_ingest = t_rubrics = t_eval = 0.0
    if not args.reuse:
        tests = ["--tests", str(root / "PFT_tests")] if args.labels == "official" else []
        t_ingest = rubricrl(data, "ingest", str(queries_file), *tests)
        t_rubrics = rubricrl(data, "run", "--only", "build-rubrics", *sets)
        t_eval = rubricrl(data, "run", "--only", "evaluate", "--set", f"evaluation.models={json.dumps(folders)}",
                          "--set", "evaluation.benchmark=ingested", "--set", "evaluation.runs=1", *sets)

    items = stage_rows(data, "rubric_items")
    by_label = {Path(f).name: m for f, m in zip(folders, args.models)}
    rows = stage_rows(data, "eval_results")
    if args.reuse:  # the kept data directory may hold more apps than this command names
        want = set(ids) if args.short else {corpus.query_id(t) for t in ids}
        rows = [r for r in rows if r["model"] in by_label and r["query_id"] in want]
    dropped: list = []
    if args.labels == "official":
        labels, dropped = realapps_devset.official_labels(rows, by_label)
    per_query = Counter(i["query_id"] for i in items)
    apps_of: dict[str, list] = {}
    tiers: Counter = Counter()
    tiered = []
    for r in rows:
        m = by_label.get(r["model"], r["model"])
        apps_of.setdefault(m, []).append((r["query_id"], r["reward"], labels.get(m, {}).get(r["query_id"])))
        tiered.append((r["tier"], r["reward"], labels.get(m, {}).get(r["query_id"])))
        tiers[r["tier"]] += 1
    n_apps = len(rows)
    print(f"{title}: {len(ids)} tasks x {len(args.models)} models = {n_apps} apps; data {data}")
    print(f"uptime: {os.popen('uptime').read().strip()}")
    if args.reuse:
        print(f"time: reused the eval_results in {data} (no ingest, build-rubrics or evaluate here)")
    else:
        print(f"time: ingest {t_ingest:.1f} s, build-rubrics {t_rubrics:.1f} s, evaluate {t_eval:.1f} s "
              f"({t_eval / max(n_apps, 1):.2f} s per app)")
    print(f"labels: {'the published PFT results' if args.labels == 'published' else 'our run of the PFT tests'}")
    print(f"rubric items per query: mean {sum(per_query.values()) / max(len(per_query), 1):.1f}, "
          f"min {min(per_query.values(), default=0)}, max {max(per_query.values(), default=0)}")
    print("tiers: " + ", ".join(f"{t} {n}" for t, n in tiers.most_common()))
    print(check_verdicts(rows))
    header = ["model", "apps", "pairwise", "pairs", "reward_ties", "spearman", "reward_pass_none", "n_pass_none",
              "reward_pass_80", "n_pass_80", "missing"]
    print(" | ".join(header))
    every = []
    for m, apps in apps_of.items():
        f = figures(apps)
        every += [(f"{m}/{q}", r, lab) for q, r, lab in apps]
        print(" | ".join([m] + [fmt(f[h]) for h in header[1:]]))
    # Pairwise is within a task across models: the task id without the model prefix groups the apps.
    pooled = [(q.split("/", 1)[1], r, lab) for q, r, lab in every]
    f = figures(pooled)
    print(" | ".join(["all"] + [fmt(f[h]) for h in header[1:]]))
    s_per_app = t_eval / max(n_apps, 1)
    checks = [("pairwise >= 0.75", f["pairwise"] is not None and f["pairwise"] >= GOALS["pairwise"]),
              ("spearman >= 0.6", f["spearman"] is not None and f["spearman"] >= GOALS["spearman"]),
              ("mean reward of apps passing no PFT test <= 0.3",
               f["reward_pass_none"] is not None and f["reward_pass_none"] <= GOALS["reward_pass_none_max"]),
              ("mean reward of apps passing >= 80% >= 0.7",
               f["reward_pass_80"] is not None and f["reward_pass_80"] >= GOALS["reward_pass_80_min"]),
              ("seconds per app <= 3", s_per_app <= GOALS["s_per_app_max"])][: 4 if args.reuse else 5]
    for name, ok in checks:
        print(f"goal {name}: {'PASS' if ok else 'FAIL'}")
    best = ceiling(tiered, load_config(None, sets=args.set).env.reward)
    print(f"at best with these gate verdicts (the valid tier ordered as the labels): spearman "
          f"{fmt(best['spearman'])}, mean reward of apps passing >= 80% {fmt(best['reward_pass_80'])}")
    if root is not None and args.labels == "published":
        lenient_section(rows, by_label, corpus.load(root, args.split))
    if args.labels == "official":
        realapps_devset.devset_section(rows, by_label, labels, dropped, corpus.load(root, args.split), data, args.set,
                                       misordered=args.misordered)
    env_sections(rows, by_label, labels, root, args)


def lenient_section(rows: list[dict], by_label: dict[str, str], c: "corpus.Corpus") -> None:
    """The same figures on labels that count a test failed only by number formatting (``"0"`` shown as
    ``"0.0"``) as passed: how much of the disagreement is the labels' strictness. The goals stay on the
    published labels."""
    lenient = {m: c.format_only_labels(m) for m in set(by_label.values())}
    apps = [(r["query_id"], r["reward"], lenient.get(by_label.get(r["model"], r["model"]), {}).get(r["query_id"]))
            for r in rows]
    strict = {m: c.labels(m) for m in lenient}
    moved = sum(1 for r in rows if (m := by_label.get(r["model"], r["model"])) in lenient and
                lenient[m].get(r["query_id"]) != strict[m].get(r["query_id"]))
    f = figures(apps)
    print(f"with number-format failures counted as passes ({moved} of {len(rows)} labels move): pairwise "
          f"{fmt(f['pairwise'])}, spearman {fmt(f['spearman'])}, mean reward of apps passing none "
          f"{fmt(f['reward_pass_none'])} (n {f['n_pass_none']}), passing >= 80% {fmt(f['reward_pass_80'])} "
          f"(n {f['n_pass_80']})")


def env_sections(rows: list[dict], by_label: dict[str, str], labels: dict[str, dict], root: Path | None,
                 args: argparse.Namespace) -> None:
    """Runtime-invalid apps by cause (before and after) and, on InteractScience, the CDN mirror's coverage."""
    rows = [{**r, "model_label": by_label.get(r["model"], r["model"])} for r in rows]
    label_of = {(m, q): lab for m, labs in labels.items() for q, lab in labs.items()}
    realapps_env.causes_section(rows, label_of, args.before, args.before_mirror)
    mirror = load_config(None, sets=args.set).env.runtime.cdn_root()
    if root is not None and mirror is not None and mirror.is_dir():
        realapps_env.mirror_section(root, mirror, [realapps_env.app_html_of(r) for r in rows])


if __name__ == "__main__":
    main()
