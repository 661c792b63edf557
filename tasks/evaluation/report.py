"""The evaluation report as one self-contained HTML file (no server, no network: the plot is embedded
as a data URI, every app is a sandboxed ``srcdoc`` frame without scripts).

Sections: the Table-1 layout (metrics as rows, one column per generator, delta columns against the
first; with an ingested benchmark its own metric and its agreement with ours as rows too), the spread
plot, our reward against the benchmark's own metric per app (when there is one), and one row per query
with the generators' apps side by side, each with its reward, tier, official score (its note on hover)
and top findings. The app is shown by the screenshots the browser check kept (after load, and after the
probe beside it: thumbnails embedded as JPEG data URIs, each linking to its full-size PNG beside the
stage); a row without one shows its note and the app's first paint in the frame instead.
"""
from __future__ import annotations

import base64
import html
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from tasks.env.extract import extract_html
from tasks.evaluation.screenshots import thumbnail_uri
from tasks.evaluation.summary import fmt_delta

THUMB_W, THUMB_H, THUMB_SCALE = 320, 220, 0.4  # a thumbnail renders the app at 1/THUMB_SCALE its size


def _img_uri(png: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode()


def _fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}"


def table_html(summary: dict[str, dict[str, float | None]], baseline: str | None) -> str:
    models = list(summary)
    metrics = sorted({k for m in summary.values() for k in m}, key=lambda k: (k.split("/")[0] != "pass", k))
    others = [m for m in models if baseline and m != baseline]
    head = "".join(f"<th>{html.escape(m)}</th>" for m in models)
    head += "".join(f"<th>Δ {html.escape(m)} − {html.escape(baseline or '')}</th>" for m in others)
    body = []
    for k in metrics:
        cells = "".join(f"<td>{_fmt(summary[m].get(k))}</td>" for m in models)
        for m in others:
            a, b = summary[m].get(k), summary[baseline].get(k) if baseline else None
            cells += f"<td>{fmt_delta(a, b)}</td>"
        body.append(f"<tr><th scope='row'>{html.escape(k)}</th>{cells}</tr>")
    return f"<table class='t1'><thead><tr><th>metric</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _shots(row: dict[str, Any], data_dir: Path, report_dir: Path) -> str:
    """The row's screenshots as linked thumbnails ('' when none was kept)."""
    out = []
    for moment, width, caption in (("load", THUMB_W, "after load"), ("probe", THUMB_W // 2, "after the probe")):
        rel = row.get(f"screenshot_{moment}")
        full = data_dir / rel if rel else None
        if full is None or not full.is_file():
            continue
        href = html.escape(Path(os.path.relpath(full, report_dir)).as_posix(), quote=True)
        out.append(f"<figure class='shot {moment}'><a href='{href}'><img class='shot' alt='screenshot {caption}' "
                   f"src='{thumbnail_uri(full, width)}'></a><figcaption>{caption}</figcaption></figure>")
    return f"<div class='shots'>{''.join(out)}</div>" if out else ""


def _thumb(row: dict[str, Any], data_dir: Path, report_dir: Path) -> str:
    shots = _shots(row, data_dir, report_dir)
    if shots:
        return shots
    note = f"<div class='note'>{html.escape(row['screenshot_note'])}</div>" if row.get("screenshot_note") else ""
    ext = extract_html(row.get("response") or "")
    if ext is None:
        return "<div class='noapp'>no HTML app in the response</div>"
    # sandbox without allow-scripts: the app's first paint, no script runs inside the report
    return (f"<div class='frame'><iframe sandbox='' loading='lazy' title='app' "
            f"srcdoc='{html.escape(ext.html, quote=True)}'></iframe></div>{note}")


def _cell(row: dict[str, Any] | None, data_dir: Path, report_dir: Path) -> str:
    if row is None:
        return "<td class='missing'>not evaluated</td>"
    finds = "".join(f"<li>{html.escape(f)}</li>" for f in row.get("top_findings") or [])
    verdict = "pass" if row["passed"] else "fail"
    official = ""
    if row.get("official_metric"):
        why = f" title='{html.escape(row['official_note'], quote=True)}'" if row.get("official_note") else ""
        official = f" · <span class='official'{why}>official <b>{_fmt(row.get('official_score'))}</b></span>"
    return (f"<td class='{verdict}'>{_thumb(row, data_dir, report_dir)}<div class='meta'>reward "
            f"<b>{_fmt(row['reward'])}</b> · tier <b>{html.escape(row['tier'])}</b> · {verdict}{official}</div>"
            f"<ul>{finds}</ul></td>")


def queries_html(rows: list[dict[str, Any]], data_dir: Path, report_dir: Path, run: int = 0) -> str:
    """One row per query, one column per generator (sampling run ``run``)."""
    models = list(dict.fromkeys(r["model"] for r in rows))
    by_q: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in rows:
        if r["run"] == run:
            by_q[r["query_id"]][r["model"]] = r
    head = "".join(f"<th>{html.escape(m)}</th>" for m in models)
    body = "".join(f"<tr><th scope='row'>{html.escape(q)}</th>{''.join(_cell(g.get(m), data_dir, report_dir) for m in models)}</tr>"
                   for q, g in sorted(by_q.items()))
    return f"<table class='apps'><thead><tr><th>query</th>{head}</tr></thead><tbody>{body}</tbody></table>"


CSS = f"""
body {{ font-family: system-ui, sans-serif; margin: 1.5em; color: #1b1f24; }}
table {{ border-collapse: collapse; margin: 0.8em 0; }}
th, td {{ border: 1px solid #ccd3db; padding: 4px 8px; vertical-align: top; font-size: 13px; }}
.t1 td {{ text-align: right; font-variant-numeric: tabular-nums; }}
td.pass {{ background: #eef8ee; }} td.fail {{ background: #fdf1f0; }} td.missing {{ color: #888; }}
.frame {{ width: {THUMB_W}px; height: {THUMB_H}px; overflow: hidden; border: 1px solid #aaa; background: #fff; }}
.frame iframe {{ width: {THUMB_W / THUMB_SCALE:.0f}px; height: {THUMB_H / THUMB_SCALE:.0f}px; border: 0;
  transform: scale({THUMB_SCALE}); transform-origin: 0 0; }}
.shots {{ display: flex; gap: 4px; align-items: flex-start; }}
figure.shot {{ margin: 0; }} figure.shot img {{ border: 1px solid #aaa; display: block; }}
figcaption, .note {{ font-size: 11px; color: #555; max-width: {THUMB_W}px; }}
.noapp {{ width: {THUMB_W}px; height: {THUMB_H}px; display: flex; align-items: center; justify-content: center;
  background: #eee; color: #666; }}
ul {{ margin: 4px 0 0 1em; padding: 0; max-width: {THUMB_W}px; }}
"""


def write_report(path: Path, title: str, summary: dict[str, dict[str, float | None]], baseline: str | None,
                 rows: list[dict[str, Any]], plot_png: Path, data_dir: Path, official_png: Path | None = None,
                 agreement: str = "") -> Path:
    """The report at ``path``; screenshot paths in ``rows`` are relative to ``data_dir``. With ``official_png``
    (our reward against the benchmark's own metric per app) a section shows it under its ``agreement`` line."""
    official = (f"<h2>Our reward against the official metric</h2><p class='agreement'>{html.escape(agreement)}</p>"
                f"<img class='plot official' alt='reward against the official metric' src='{_img_uri(official_png)}'>"
                if official_png is not None else "")
    # a response that failed the format gate was never judged (judge_provider 'none')
    judges = sorted({str(r["judge_provider"]) for r in rows if r.get("judge_provider") not in (None, "none")})
    doc = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
           f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>"
           f"<p>judge: {html.escape(', '.join(judges))}</p>"
           f"<h2>Table 1</h2>{table_html(summary, baseline)}"
           f"<h2>Spread</h2><img class='plot' alt='reward and pass-rate spread' src='{_img_uri(plot_png)}'>"
           f"{official}"
           f"<h2>Apps side by side (run 0)</h2>{queries_html(rows, data_dir, path.parent)}</body></html>")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(doc, encoding="utf-8")
    tmp.replace(path)
    return path
