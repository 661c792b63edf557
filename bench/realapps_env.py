"""The environment's sections of ``bench_realapps.py``: runtime-invalid apps by cause, and the CDN mirror's coverage.

``causes_section(rows, labels, before, before_mirror)`` prints, for the bench's ``eval_results`` rows and, when
given, the rows of an earlier run of the same bench (``--before DIR``, e.g. a run of the main branch), how many
apps are runtime-invalid because of the app (an error the browser saw), of time (load timeout, unresponsive,
hung by an action) or of the environment (a library the mirror lacked: an environment gap, which the current
environment turns into a missing reward). An earlier run's rows carry no cause: an app is counted against the
environment there when it loads a library version that run's mirror (``--before-mirror``) did not have. Then
the apps passing at least half of their PFT tests that are still runtime-invalid or missing, with the cause.

``mirror_section(root, apps)`` prints the mirror's coverage of the library URLs of every model's answers on the
A-M tasks and, separately, on the N-Z tasks, and of the bench's own apps; and its size on disk.
"""
from __future__ import annotations

import argparse
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from tasks.env.cdn import CdnMirror
from tasks.env.cdn_urls import exact_version, parse_cdn_url
from tasks.env.extract import extract_html
from tasks.env.mirror import ScanReport, library_urls, scan_htmls

CAUSES = ("app error", "environment gap", "time")
TIME_WORDS = ("never finished loading", "became unresponsive", "stop responding")


def app_html_of(row: dict[str, Any]) -> str | None:
    ex = extract_html(row.get("response") or "")
    return ex.html if ex else None


def lacks_library(html: str | None, mirror: CdnMirror) -> list[str]:
    """The library URLs of an app that ``mirror`` does not have (gaps, in the current exact-version sense)."""
    return [u for u in library_urls(html or "") if mirror.resolve(u).outcome == "environment_gap"]


def cause(row: dict[str, Any], mirror: CdnMirror | None = None) -> str | None:
    """Why a row is runtime-invalid, or missing for the environment's sake (None: neither). Rows of this run say
    it (``tier_cause``); an earlier run's are read from their findings and, with ``mirror``, their libraries."""
    tier = row.get("tier")
    if "tier_cause" in row:
        if tier == "missing" and row["tier_cause"] == "environment_gap":
            return "environment gap"
        if tier == "runtime_invalid":
            return {"time": "time", "judge": "app error", "app_error": "app error"}.get(row["tier_cause"], "app error")
        return None
    if tier != "runtime_invalid":
        return None
    if mirror is not None and lacks_library(app_html_of(row), mirror):
        return "environment gap"
    text = " ".join(row.get("top_findings") or [])
    return "time" if any(w in text for w in TIME_WORDS) else "app error"


def _read_rows(data: Path) -> list[dict[str, Any]]:
    from tasks.stages.store import StageStore

    return StageStore(data).read("eval_results").to_pylist()


def causes_section(rows: list[dict[str, Any]], label_of: dict[tuple[str, str], float], before: Path | None = None,
                   before_mirror: Path | None = None) -> None:
    """``label_of``: (model, query id) -> PFT pass share; ``rows`` carry ``model_label`` (the corpus model)."""
    print("\n== runtime-invalid by cause (app error / environment gap / time)")
    after = Counter(c for r in rows if (c := cause(r)) is not None)
    old_rows = _read_rows(before) if before is not None else []
    old_mirror = CdnMirror(before_mirror) if before_mirror is not None else None
    old = Counter(c for r in old_rows if (c := cause(r, old_mirror)) is not None)
    print(f"{'cause':<16} | {'before':>6} | {'after':>5}   (after: an environment gap is a missing reward, not a "
          "runtime-invalid app)")
    for c in CAUSES:
        print(f"{c:<16} | {old[c] if old_rows else '-':>6} | {after[c]:>5}")
    good = [r for r in rows if (label_of.get((r["model_label"], r["query_id"])) or 0) >= 0.5]
    bad = [(r, cause(r)) for r in good if r["tier"] in ("runtime_invalid", "missing")]
    print(f"apps passing >= half of their PFT tests: {len(good)}; runtime-invalid or missing: {len(bad)} "
          f"({', '.join(f'{c} {n}' for c, n in Counter(c or r['tier_cause'] for r, c in bad).items()) or 'none'})")
    for r, c in bad:
        print(f"  {r['model_label']}/{r['query_id']}: PFT {label_of[(r['model_label'], r['query_id'])]:.2f}, "
              f"{r['tier']} ({c or r['tier_cause']}) {' '.join(r.get('environment_gaps') or [])}")
    if old_rows:
        flips = Counter((o["tier"], n["tier"]) for o in old_rows for n in rows
                        if (o["model"], o["query_id"]) == (n["model"], n["query_id"]) and o["tier"] != n["tier"])
        print("tier changes before -> after: " + (", ".join(f"{a} -> {b} {k}" for (a, b), k in flips.most_common())
                                                  or "none"))


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--before", type=Path, default=None, help="data directory of an earlier run of this bench "
                    "(e.g. the main branch's, kept with --keep): its runtime-invalid apps by cause beside this run's")
    ap.add_argument("--before-mirror", type=Path, default=None, help="that run's CDN mirror (node_modules): an app it "
                    "could not serve the exact library of counts against the environment")


def _line(name: str, r: ScanReport) -> str:
    cov = r.coverage()
    return (f"{name:<28} | {r.apps:>5} | " + " | ".join(f"{r.uses(o):>6}" for o in
                                                       ("served", "not_found", "environment_gap", "refused"))
            + f" | {'n/a' if cov is None else f'{cov:.1%}'}")


def _versions(r: ScanReport) -> set[tuple[str, str | None]]:
    out = set()
    for u in r.urls:
        ref = parse_cdn_url(u.url)
        if ref is not None:
            out.add((ref.package, exact_version(ref.version, ref.package) or ref.version))
    return out


def mirror_section(corpus_root: Path, mirror_root: Path, bench_htmls: list[str | None]) -> None:
    """Coverage of every model's answers on A-M and, separately, N-Z; of the bench's apps; size on disk."""
    mirror = CdnMirror(mirror_root)
    print("\n== mirror coverage (library uses served among those a real CDN serves: served + gaps; a 404 the real "
          "CDN gives too is not a gap)")
    print(f"{'apps':<28} | {'n':>5} | served | 404    | gap    | refused | coverage")
    halves = {}
    for split, first, last in (("A-M", "A", "M"), ("N-Z", "N", "Z")):
        htmls = []
        for f in sorted((corpus_root / "eval").glob("interactscience_*.jsonl")):
            for line in f.read_text(encoding="utf-8").splitlines():
                obj = json.loads(line) if line.strip() else {}
                if isinstance(obj.get("answer"), str) and first <= obj.get("id", " ")[:1].upper() <= last:
                    ex = extract_html(obj["answer"])
                    htmls.append(ex.html if ex else None)
        halves[split] = scan_htmls(htmls, mirror)
        print(_line(f"{split}, every model's answers", halves[split]))
    print(_line("the bench's apps", scan_htmls(bench_htmls, mirror)))
    nz = halves["N-Z"]
    seen = _versions(halves["A-M"])
    new = sum(u.apps for u in nz.urls if u.outcome in ("served", "environment_gap")
              and (p := parse_cdn_url(u.url)) is not None
              and (p.package, exact_version(p.version, p.package) or p.version) not in seen)
    print(f"N-Z library uses naming a version no A-M answer names: {new} of "
          f"{nz.uses('served') + nz.uses('environment_gap')} (a lock built from A-M alone could not have them)")
    size = sum(f.stat().st_size for f in mirror_root.rglob("*") if f.is_file())
    print(f"mirror on disk: {size / 2**30:.2f} GiB, {sum(len(v) for v in mirror.index().values())} package copies "
          f"({mirror_root}); uptime {os.popen('uptime').read().strip()}")
