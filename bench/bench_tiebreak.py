"""Study of evidence that could break ties among working apps (issue 51), measured on the development set before
any of it goes into the reward.

For every labelled app of the development set (the eval_results ``bench_official.py --keep DIR`` wrote; labels
from our run of the benchmark's own tests, ``realapps_devset.official_labels``), the app is loaded once in
chromium-headless-shell at the environment's viewport (1280x800), its CDN libraries from our mirror and nothing
else from the network, and after ``--settle`` seconds the page is read for candidate defects a user sees:

- ``named_missing``: element ids the task's text names (``#id``) that are not on the page;
- ``named_zero``: such elements on the page with no size (and not hidden by ``display:none`` on purpose
  is not told apart: counted);
- ``h_overflow``: the page is wider than the viewport (a horizontal scroll bar: content cut off at the side);
- ``cut_off``: visible controls (inputs, buttons, selects) whose box reaches past the viewport's right edge;
- ``overlap``: pairs of visible controls whose boxes overlap by more than half the smaller one;
- ``blank_canvas``: visible canvases of at least 50x50 whose pixels are all one colour.

Then, for each candidate, over the within-task pairs whose labels differ: the pairs it decides (the two apps'
counts differ), how many of those it orders as the labels do (fewer defects, higher label), and the same on the
pairs the reward ties. Asserts nothing; changes nothing.

``--rescore``: instead, every labelled app is scored again by the environment as it is now (offline judge, the
default configuration, as ``realapps_devset.item_verdicts`` does), and the pairs are ordered by that reward beside
the stored one: ties broken, right and wrong, and, per kind of finding the change adds (``--finding TEXT``, a
substring of its description), the pairs it decides (the two apps' counts of it differ) and how many right.
``--new-items DIR``: the same per kind of evidence (``evidence_kind``) of the rubric items the rubrics scored have
and DIR's rubrics do not (by requirement text: DIR holds the rubrics the rules built before a change): the pairs
that the findings on those items decide, and how many as the labels order them.

Run: ``.venv/bin/python bench/bench_tiebreak.py --keep DIR [--keep DIR2] --models M ... [--rescore --finding T
--new-items DIR]``.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _safe  # noqa: E402,F401 - the repo on sys.path
from realapps_devset import official_labels, read_rows  # noqa: E402
from realapps_pairs import App, group_spread, within_pairs  # noqa: E402

CANDIDATES = ("named_missing", "named_zero", "h_overflow", "cut_off", "overlap", "blank_canvas", "blank_canvas_2d",
              "item_hidden", "item_cut", "item_covered")
NAMED_ID = re.compile(r"#([A-Za-z][\w-]*)")
MEASURE = """([ids, items]) => {
  const W = window.innerWidth, H = window.innerHeight;
  const vis = (el) => { const s = getComputedStyle(el); const r = el.getBoundingClientRect();
    return s.visibility !== 'hidden' && s.display !== 'none' && r.width > 0 && r.height > 0; };
  let missing = 0, zero = 0;
  for (const id of ids) { const el = document.getElementById(id);
    if (!el) { missing++; continue; } const r = el.getBoundingClientRect(); if (r.width <= 0 || r.height <= 0) zero++; }
  const de = document.documentElement;
  const h_overflow = Math.max(de.scrollWidth, document.body ? document.body.scrollWidth : 0) > W + 1 ? 1 : 0;
  const controls = [...document.querySelectorAll('input:not([type=hidden]),button,select,textarea')].filter(vis);
  let cut = 0; for (const c of controls) { if (c.getBoundingClientRect().right > W + 1) cut++; }
  let overlap = 0; const rs = controls.map(c => c.getBoundingClientRect());
  for (let i = 0; i < rs.length; i++) for (let j = i + 1; j < rs.length; j++) {
    const a = rs[i], b = rs[j];
    const w = Math.min(a.right, b.right) - Math.max(a.left, b.left), h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
    if (w > 0 && h > 0 && w * h > 0.5 * Math.min(a.width * a.height, b.width * b.height)) overlap++; }
  let blank = 0;
  for (const c of document.querySelectorAll('canvas')) { if (!vis(c) || c.width < 50 || c.height < 50) continue;
    try { const s = document.createElement('canvas'); s.width = 32; s.height = 32; const g = s.getContext('2d');
      g.drawImage(c, 0, 0, 32, 32); const d = g.getImageData(0, 0, 32, 32).data; let same = true;
      for (let k = 4; k < d.length; k += 4) { if (d[k] !== d[0] || d[k+1] !== d[1] || d[k+2] !== d[2] || d[k+3] !== d[3]) { same = false; break; } }
      if (same) blank++; } catch (e) {} }
  let blank2d = 0;
  for (const c of document.querySelectorAll('canvas')) { if (!vis(c) || c.width < 50 || c.height < 50) continue;
    let g = null; try { g = c.getContext('2d'); } catch (e) {} if (!g) continue;
    try { const d = g.getImageData(0, 0, c.width, c.height).data; let same = true;
      for (let k = 4; k < d.length; k += 4) { if (d[k] !== d[0] || d[k+1] !== d[1] || d[k+2] !== d[2] || d[k+3] !== d[3]) { same = false; break; } }
      if (same) blank2d++; } catch (e) {} }
  let hidden = 0, icut = 0, covered = 0;
  for (const id of items) { const el = document.getElementById(id); if (!el) continue;
    if (!vis(el)) { hidden++; continue; }
    const r = el.getBoundingClientRect();
    if (r.right > W + 1 || r.left < -1) icut++;
    const x = r.left + r.width / 2, y = r.top + r.height / 2;
    if (x >= 0 && x < W && y >= 0 && y < H) { const t = document.elementFromPoint(x, y);
      if (t && t !== el && !el.contains(t) && !t.contains(el)) covered++; } }
  return {named_missing: missing, named_zero: zero, h_overflow, cut_off: cut, overlap, blank_canvas: blank,
          blank_canvas_2d: blank2d, item_hidden: hidden, item_cut: icut, item_covered: covered};
}"""


def measure(apps: list[dict], settle_s: float) -> dict[str, dict]:
    """eval_id -> candidate counts (or {"error": ...})."""
    from playwright.sync_api import sync_playwright

    from schemas.config.env import RuntimeConfig
    from tasks.env.cdn import configured_mirror
    from tasks.env.extract import extract_html

    rt = RuntimeConfig()
    mirror = configured_mirror(rt)
    out: dict[str, dict] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=rt.executable_path, args=["--no-sandbox"])
        for a in apps:
            ext = extract_html(a["response"] or "")
            if ext is None:
                out[a["eval_id"]] = {"error": "no html"}
                continue
            ctx = browser.new_context(viewport={"width": 1280, "height": 800})
            page = ctx.new_page()

            def make_route(html: bytes):
                return lambda r: route(r, html)

            def route(r, html):
                url = r.request.url
                if url.startswith("http://app.test/"):
                    return r.fulfill(body=html, content_type="text/html")
                res = mirror.resolve(url, r.request.resource_type) if mirror is not None else None
                if res is not None and res.served is not None:
                    return r.fulfill(body=res.served.body, content_type=res.served.content_type)
                return r.abort()

            page.route("**/*", make_route(ext.html.encode("utf-8")))
            try:
                page.goto("http://app.test/", wait_until="load", timeout=15000)
                page.wait_for_timeout(settle_s * 1000)
                out[a["eval_id"]] = page.evaluate(MEASURE, [a["ids"], a["items"]])
            except Exception as e:  # noqa: BLE001 - a study: the app's failure is its row
                out[a["eval_id"]] = {"error": str(e)[:120]}
            ctx.close()
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", action="append", required=True)
    ap.add_argument("--models", nargs="*", default=["claude-opus-4-20250514", "gpt-5", "gemini-2.5-pro", "o3"])
    ap.add_argument("--settle", type=float, default=1.5)
    ap.add_argument("--rescore", action="store_true")
    ap.add_argument("--finding", action="append", default=[])
    ap.add_argument("--new-items", type=Path, default=None)
    args = ap.parse_args()
    from tasks.stages.store import StageStore

    rows, texts, items = [], {}, {}
    for keep in args.keep:
        try:
            got = read_rows(Path(keep))
        except Exception:  # noqa: BLE001 - evaluate still running: the parts written so far
            import pyarrow.parquet as pq

            got = [r for f in sorted(Path(keep).glob("stages/eval_results/_build-*/part-*.parquet"))
                   for r in pq.read_table(f).to_pylist()]
        rows += [r for r in got if r["model"] in args.models]
        texts.update({r["query_id"]: r["text"] for r in StageStore(Path(keep)).read(
            "queries", columns=["query_id", "text"]).to_pylist()})
        for it in StageStore(Path(keep)).read("rubric_items", columns=["query_id", "element"]).to_pylist():
            if (it["element"] or "").startswith("#"):
                items.setdefault(it["query_id"], set()).add(it["element"][1:])
    labels, dropped = official_labels(rows)
    apps = [{**r, "ids": sorted(set(NAMED_ID.findall(texts.get(r["query_id"], "")))),
             "items": sorted(items.get(r["query_id"], ()))} for r in rows
            if labels.get(r["model"], {}).get(r["query_id"]) is not None]
    if args.rescore:
        return rescore(apps, labels, args.finding, [Path(k) for k in args.keep], args.new_items)
    t0 = time.perf_counter()
    got = measure(apps, args.settle)
    wall = time.perf_counter() - t0
    print(f"{len(apps)} labelled apps ({len(dropped)} dropped) measured in {wall:.0f} s wall "
          f"({wall / max(len(apps), 1):.2f} s per app; uptime {os.popen('uptime').read().strip()})")
    errors = [a["eval_id"] for a in apps if "error" in got[a["eval_id"]]]
    print(f"apps the study could not read: {len(errors)} {errors[:5]}")
    base = within_pairs(App(r["query_id"], r["model"], r["reward"], labels[r["model"]][r["query_id"]]) for r in apps)
    print(f"label-differing pairs: {len(base)}; reward ties among them: {sum(p.verdict == 'tie' for p in base)}")
    by = {(a["model"], a["query_id"]): got[a["eval_id"]] for a in apps}
    for cand in CANDIDATES:
        dec = right = tdec = tright = 0
        flagged = sum(1 for v in by.values() if v.get(cand))
        for p in base:
            va, vb = by[(p.a.model, p.task)].get(cand), by[(p.b.model, p.task)].get(cand)
            if va is None or vb is None or va == vb:
                continue
            ok = (va < vb) == (p.a.label > p.b.label)
            dec, right = dec + 1, right + ok
            if p.verdict == "tie":
                tdec, tright = tdec + 1, tright + ok
        print(f"{cand}: apps with it {flagged} of {len(by)}; pairs decided {dec}, right {right}; "
              f"on reward ties decided {tdec}, right {tright}")
    for a in apps:
        v = got[a["eval_id"]]
        if any(v.get(c) for c in CANDIDATES) or "error" in v:
            print(f"  {a['model']}/{a['query_id']}: label {labels[a['model']][a['query_id']]:.2f}, reward "
                  f"{a['reward']}, {v}")


def decided_pairs(name: str, count: dict, old: list, labels: dict, apps: list[dict], by: dict) -> None:
    """The label-differing pairs a kind of finding decides (``count``: (model, task) -> how many the app has): the
    two apps' counts differ; right when the app with fewer has the higher label; and among the stored ties."""
    dec = right = tdec = tright = 0
    for p in old:
        ca, cb = count.get((p.a.model, p.task), 0), count.get((p.b.model, p.task), 0)
        if ca == cb:
            continue
        ok = (ca < cb) == (p.a.label > p.b.label)
        dec, right = dec + 1, right + ok
        tdec, tright = tdec + (p.verdict == "tie"), tright + (ok and p.verdict == "tie")
    print(f"{name}: apps with it {sum(1 for v in count.values() if v)} of {len(by)}; label-differing "
          f"pairs it decides {dec}, right {right}; among the stored reward's ties {tdec}, right {tright}")
    for k, v in count.items():
        if v:
            print(f"    {k[0]}/{k[1]}: {v} finding(s), label {labels[k[0]][k[1]]:.2f}, reward stored "
                  f"{next(a['reward'] for a in apps if (a['model'], a['query_id']) == k):.3f}, now {by[k].reward:.3f}")


def new_item_kinds(base_dir: Path, tasks: dict) -> dict[tuple[str, str], str]:
    """(query_id, item id) -> evidence kind of each item of the rescored rubrics that ``base_dir``'s rubric for that
    query does not have (by requirement), or has without the check it now has ("... newly checked")."""
    from tasks.stages.store import StageStore

    base: dict[tuple[str, str], bool] = {}
    for r in StageStore(base_dir).read("rubric_items", columns=["query_id", "requirement", "check"]).to_pylist():
        base[(r["query_id"], r["requirement"])] = r["check"] is not None
    out = {}
    for q, t in tasks.items():
        for it in t.rubric.initial_state + t.rubric.dynamic:
            had = base.get((q, it.requirement))
            if had is None or (not had and it.check is not None):
                out[(q, it.id)] = (it.evidence_kind or "none") + ("" if had is None else " (newly checked)")
    return out


def rescore(apps: list[dict], labels: dict, findings: list[str], keeps: list[Path],
            new_items: Path | None = None) -> None:
    """The pairs ordered by the reward scored again now, beside the stored reward, and each finding's pairs."""
    from schemas.config import load_config
    from tasks.env.score import ScoreInput, score_batch
    from tasks.llm.offline import OfflineProvider
    from tasks.rubrics import load_tasks
    from tasks.stages.store import StageStore

    tasks = {}
    for k in keeps:
        tasks.update({t.query_id: t for t in load_tasks(StageStore(k), sorted({a["query_id"] for a in apps}))})
    t0, c0 = time.perf_counter(), time.process_time()
    res = {r.key: r for r in score_batch([ScoreInput(a["eval_id"], tasks[a["query_id"]], a["response"] or "")
                                          for a in apps], provider=OfflineProvider(), cfg=load_config(None).env)}
    print(f"{len(apps)} apps scored again in {time.perf_counter() - t0:.0f} s wall, this process "
          f"{time.process_time() - c0:.0f} CPU-s (uptime {os.popen('uptime').read().strip()})")
    lab = lambda a: labels[a["model"]][a["query_id"]]  # noqa: E731
    old_apps = [App(a["query_id"], a["model"], a["reward"], lab(a)) for a in apps]
    new_apps = [App(a["query_id"], a["model"], res[a["eval_id"]].reward, lab(a)) for a in apps]
    old, new = within_pairs(old_apps), within_pairs(new_apps)
    for name, ps, group in (("stored reward", old, old_apps), ("scored again", new, new_apps)):
        right, ties = sum(p.verdict == "right" for p in ps), sum(p.verdict == "tie" for p in ps)
        gs = group_spread(group)
        print(f"{name}: {len(ps)} label-differing pairs, right {right}, ties {ties}, wrong {len(ps) - right - ties}; "
              f"groups {gs.groups}, with no reward spread {gs.flat} (labels differ in {gs.flat_labels_differ})")
    for name, rw in (("stored reward", lambda a: a["reward"]), ("scored again", lambda a: res[a["eval_id"]].reward)):
        none = [rw(a) for a in apps if lab(a) == 0.0 and rw(a) is not None]
        top = [rw(a) for a in apps if lab(a) >= 0.8 and rw(a) is not None]
        print(f"{name}: mean reward of apps passing no PFT test {sum(none) / max(len(none), 1):.3f} (n {len(none)}), "
              f"passing >= 80% {sum(top) / max(len(top), 1):.3f} (n {len(top)})")
    was = {(p.task, p.a.model, p.b.model): p.verdict for p in old}
    moved = [(p, was.get((p.task, p.a.model, p.b.model))) for p in new if was.get((p.task, p.a.model, p.b.model)) != p.verdict]
    for p, before in moved:
        print(f"  {p.task} {p.a.model} ({p.a.label:.2f}) vs {p.b.model} ({p.b.label:.2f}): {before} -> {p.verdict}")
    by = {(a["model"], a["query_id"]): res[a["eval_id"]] for a in apps}
    for text in findings:
        count = {k: sum(text in f.description for f in r.findings) for k, r in by.items()}
        decided_pairs(f"finding {text!r}", count, old, labels, apps, by)
    if new_items is not None:
        kinds = new_item_kinds(new_items, tasks)
        print(f"new items: {len(kinds)} in {len({q for q, _ in kinds})} tasks, by kind "
              f"{dict(sorted(collections.Counter(kinds.values()).items()))}")
        for kind in sorted(set(kinds.values())):
            count = {k: sum(kinds.get((k[1], f.item_id)) == kind for f in r.findings) for k, r in by.items()}
            decided_pairs(f"new items of kind {kind!r}", count, old, labels, apps, by)


if __name__ == "__main__":
    main()
