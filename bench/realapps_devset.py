"""The development set's section of ``bench_realapps.py --labels official``: strong models' apps ordered within a task.

Labels come from our own run of the benchmark's Playwright tests (the ``official_*`` columns of the eval_results
``bench_official.py --keep DIR`` wrote), read by ``official_labels`` (the rule: ``realapps_pairs.official_label``);
an app without one is dropped and the section says how many and why. ``devset_section`` prints the within-task
pairs' agreement (ties as misses, and on the pairs the reward did order), the same with timed-out tests counted
as failed, and the benchmark's own VLM judge on the same pairs (``Corpus.vlm_scores``); with ``misordered``,
every pair the reward orders wrong or ties, with the PFT tests and the rubric items that differ between its two
apps. The items' verdicts are not in eval_results: those apps are scored again here (offline provider, the
bench's configuration), and a reward that comes out different is said.

Run: ``labels, dropped = official_labels(rows, model_of)``; ``devset_section(rows, model_of, labels, dropped,
corpus, data, sets, misordered=True)``.
"""
from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

from realapps_pairs import App, Pair, figures, group_spread, official_label, order_pairs, within_pairs

Labels = dict[str, dict[str, float]]  # model -> query id -> label
Dropped = list[tuple[str, str, str]]  # (model, query id, why it has no label)

SEVERITY_RANK = {"critical": 0, "major": 1, "minor": 2}


def read_rows(data: Path) -> list[dict[str, Any]]:
    from tasks.stages.store import StageStore

    return StageStore(data).read("eval_results").to_pylist()


def official_labels(rows: list[dict[str, Any]], model_of: dict[str, str] | None = None,
                    timeouts_judged: bool = False) -> tuple[Labels, Dropped]:
    """(model -> query id -> label, [(model, query id, why no label)]) from eval_results rows; ``model_of`` maps
    a row's ``model`` (the response folder's name) to the corpus model."""
    labels: Labels = {}
    dropped: Dropped = []
    for r in rows:
        m = (model_of or {}).get(r["model"], r["model"])
        label, why = official_label(r.get("official_detail"), r.get("official_note"), timeouts_judged)
        if label is None:
            dropped.append((m, r["query_id"], why or "no label"))
        else:
            labels.setdefault(m, {})[r["query_id"]] = label
    return labels, dropped


def read_official_labels(data: Path, model_of: dict[str, str] | None = None,
                         timeouts_judged: bool = False) -> tuple[Labels, Dropped]:
    """``official_labels`` of the eval_results published in the data directory ``data``."""
    return official_labels(read_rows(data), model_of, timeouts_judged)


def _apps(rows: list[dict[str, Any]], model_of: dict[str, str], labels: dict[str, dict[str, float]]) -> list[App]:
    out = []
    for r in rows:
        m = model_of.get(r["model"], r["model"])
        out.append(App(r["query_id"], m, r["reward"], labels.get(m, {}).get(r["query_id"])))
    return out


def _rate(f: Any) -> str:
    return "n/a" if f.rate is None else f"{f.rate:.3f}"


def _untied(f: Any) -> str:
    return "n/a" if f.untied_rate is None else f"{f.untied_rate:.3f}"


def vlm_judge_scores(corpus: Any, models: list[str]) -> tuple[dict[tuple[str, str], float], list[str]]:
    """((model, query id) -> the VLM judge's score, models the snapshot has no VLM-judge results for)."""
    scores, absent = {}, []
    for m in models:
        got = corpus.vlm_scores(m)
        if got is None:
            absent.append(m)
        else:
            scores.update({(m, q): s for q, s in got.items()})
    return scores, absent


def devset_section(rows: list[dict[str, Any]], model_of: dict[str, str], labels: dict[str, dict[str, float]],
                   dropped: list[tuple[str, str, str]], corpus: Any, data: Path, sets: list[str],
                   misordered: bool = False) -> dict[str, Any]:
    """Print the development set's figures (see the module docstring); returns them."""
    print("\n== development set: within-task pairs, labels from our run of the benchmark's tests (official_*)")
    print(f"apps without a label (dropped, in no pair): {len(dropped)} of {len(rows)}")
    for why, n in Counter(re.sub(r"\d+ ", "", why.split(" (")[0]) for _, _, why in dropped).most_common():
        print(f"  {n:3d} {why}")
    for m, q, why in dropped:
        print(f"    - {m}/{q}: {why}")
    no_reward = [a for a in _apps(rows, model_of, labels) if a.reward is None]
    if no_reward:
        print(f"apps with no reward (missing; in no pair): {len(no_reward)}: "
              + ", ".join(f"{a.model}/{a.task}" for a in no_reward))
    timed_out = sum(1 for r in rows for d in r.get("official_detail") or [] if d.get("status") == "timedOut")
    strict, _ = official_labels(rows, model_of, timeouts_judged=True)
    moved = sum(1 for m, labs in strict.items() for q, lab in labs.items() if labels.get(m, {}).get(q) != lab)
    pairs = within_pairs(_apps(rows, model_of, labels))
    f = figures(pairs)
    print(f"PFT tests that timed out (not judged): {timed_out}; labels they move when counted as failed: {moved}")
    print(f"our reward, pairwise within a task: {f.right}/{f.pairs} = {_rate(f)} (reward ties {f.ties}, counted as "
          f"misses; wrong {f.wrong}); on the {f.pairs - f.ties} pairs it did not tie: {_untied(f)}")
    fs = figures(within_pairs(_apps(rows, model_of, strict)))
    print(f"  with timed-out tests counted as failed: {fs.right}/{fs.pairs} = {_rate(fs)} (ties {fs.ties}); "
          f"non-tied {_untied(fs)}")
    models = sorted({model_of.get(r["model"], r["model"]) for r in rows})
    scores, absent = vlm_judge_scores(corpus, models)
    for m in absent:
        print(f"  {m}: the snapshot has no VLM-judge results (results/lm_results/VQT_vlm_judge_results/{m}.jsonl)")
    g, unscored = order_pairs(pairs, scores)
    print(f"the benchmark's VLM judge on the same pairs: {g.right}/{g.pairs} = {_rate(g)} (its ties {g.ties}; "
          f"non-tied {_untied(g)}); pairs it has no score for: {unscored}")
    gs = group_spread(_apps(rows, model_of, labels))
    print(f"groups (a task's labelled apps, as GRPO's group of one prompt): {gs.groups}; with no reward spread "
          f"{gs.flat}, of which labels differ in {gs.flat_labels_differ}; with no label spread {gs.labels_flat}")
    out = {"pairs": f, "vlm": g, "vlm_unscored": unscored, "strict": fs, "dropped": len(dropped), "groups": gs}
    if misordered:
        misordered_section(pairs, rows, model_of, scores, data, sets)
    return out


def item_verdicts(data: Path, rows: list[dict[str, Any]], sets: list[str]) -> dict[str, dict[str, Any]]:
    """eval_id -> {"reward", "tier", "items": item id -> (key, text)} of these rows' apps scored again."""
    from schemas.config import load_config
    from tasks.env.judge_diagnosis import ScoredFinding
    from tasks.env.score import ScoreInput, score_batch
    from tasks.llm.offline import OfflineProvider
    from tasks.rubrics import load_tasks
    from tasks.stages.store import StageStore

    if not rows:
        return {}
    cfg = load_config(None, sets=sets)
    tasks = {t.query_id: t for t in load_tasks(StageStore(data), sorted({r["query_id"] for r in rows}))}
    results = score_batch([ScoreInput(r["eval_id"], tasks[r["query_id"]], r["response"] or "") for r in rows],
                          provider=OfflineProvider(), cfg=cfg.env)
    out = {}
    for res in results:
        items: dict[str, tuple[str, str]] = {}
        checks = {c.item_id: c for c in res.check_results}
        worst: dict[str, ScoredFinding] = {}
        for fnd in res.findings:
            i = fnd.item_id
            if i and (i not in worst or SEVERITY_RANK.get(fnd.severity, 9) < SEVERITY_RANK.get(worst[i].severity, 9)):
                worst[i] = fnd
        for i in tasks[res.query_id].rubric.ids():
            c, fnd = checks.get(i), worst.get(i)
            key = (c.status if c else "-", fnd.severity if fnd else "met", i in res.undecided)
            text = ", ".join(x for x in (
                f"check {c.status}" + (f" ({c.reason[:70]})" if c.status != "passed" else "")
                if c else "", f"{fnd.severity}: {fnd.description[:90]}" if fnd else "",
                "undecided" if i in res.undecided else "") if x) or "met"
            items[i] = (repr(key), text)
        out[res.key] = {"reward": res.reward, "items": items}
    return out


def _pft_diff(ra: dict[str, Any], rb: dict[str, Any]) -> list[str]:
    a = {d["name"]: d for d in ra.get("official_detail") or []}
    b = {d["name"]: d for d in rb.get("official_detail") or []}
    out = []
    for name in sorted(set(a) | set(b)):
        sa, sb = (a.get(name) or {}).get("status"), (b.get(name) or {}).get("status")
        if sa != sb:
            note = next(((x.get("note") or "")[:90] for x in (a.get(name), b.get(name)) if x and x.get("note")), "")
            out.append(f"      PFT {name!r}: {sa} / {sb}{' — ' + note if note else ''}")
    return out


def misordered_section(pairs: list[Pair], rows: list[dict[str, Any]], model_of: dict[str, str],
                       scores: dict[tuple[str, str], float], data: Path, sets: list[str]) -> None:
    """Every pair the reward orders wrong or ties: the two apps' labels, rewards, VLM scores, tiers, then the PFT
    tests and the rubric items whose verdicts differ between them."""
    bad = [p for p in pairs if p.verdict != "right"]
    row_of = {(model_of.get(r["model"], r["model"]), r["query_id"]): r for r in rows}
    need = {row_of[(a.model, p.task)]["eval_id"]: row_of[(a.model, p.task)] for p in bad for a in (p.a, p.b)}
    print(f"\n== misordered pairs: {len(bad)} (wrong {sum(p.verdict == 'wrong' for p in bad)}, reward ties "
          f"{sum(p.verdict == 'tie' for p in bad)}); their {len(need)} apps scored again for their items "
          f"(uptime {os.popen('uptime').read().strip()})")
    again = item_verdicts(data, list(need.values()), sets)
    requirement = {}
    try:
        from tasks.rubrics import load_tasks
        from tasks.stages.store import StageStore

        for t in load_tasks(StageStore(data), sorted({p.task for p in bad})):
            for it in [*t.rubric.initial_state, *t.rubric.dynamic]:
                requirement[(t.query_id, it.id)] = it.requirement
    except ValueError:
        pass
    for p in bad:
        print(f"- {p.task} [{p.verdict}]")
        ra, rb = row_of[(p.a.model, p.task)], row_of[(p.b.model, p.task)]
        for app, r in ((p.a, ra), (p.b, rb)):
            v = scores.get((app.model, p.task))
            re_r = (again.get(r["eval_id"]) or {}).get("reward")
            changed = "" if re_r == app.reward else f" (scored again: {re_r})"
            cause = f" ({r['tier_cause']})" if r.get("tier_cause") else ""
            print(f"    {app.model}: label {app.label:.2f}, reward {app.reward:.3f}{changed}, VLM "
                  f"{'n/a' if v is None else f'{v:.2f}'}, tier {r['tier']}{cause}, "
                  f"items failed {r.get('items_failed')}, undecided {r.get('items_undecided')}, checks "
                  f"{r.get('checks_passed')}/{r.get('checks_failed')}/{r.get('checks_inconclusive')} (pass/fail/inc)")
        for line in _pft_diff(ra, rb):
            print(line)
        ia, ib = (again.get(ra["eval_id"]) or {}).get("items", {}), (again.get(rb["eval_id"]) or {}).get("items", {})
        diff = [i for i in sorted(set(ia) | set(ib)) if (ia.get(i) or ("",))[0] != (ib.get(i) or ("",))[0]]
        if not diff:
            print("      items: none differs between the two apps (our items cannot tell them apart)")
        for i in diff:
            print(f"      item {i} ({requirement.get((p.task, i), '')[:80]}): {p.a.model}: "
                  f"{(ia.get(i) or ('', 'n/a'))[1]} | {p.b.model}: {(ib.get(i) or ('', 'n/a'))[1]}")
