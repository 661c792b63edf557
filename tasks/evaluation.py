"""Evaluation summaries in the layout of the paper's Table 1: pass rate (every rubric item met and
every gate passed) overall, by difficulty and by domain, tier rates and mean reward, each averaged
over N sampling runs (the paper averages MiniAppBench over eight runs). Pure functions over rows.

A row: ``{"model", "run", "query_id", "difficulty", "domain", "tier", "passed", "reward"}`` where tier is
one of ``TIERS``. Rows with a missing reward still count for pass rate and tiers (a judge failure is
not a pass) but not for the mean reward.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from schemas.config_env import SCORED_TIERS as TIERS


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def summarize(rows: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """model -> metric -> value; metrics are ``pass/overall``, ``pass/difficulty=easy``,
    ``pass/domain=Games``, ``tier/valid``, ``reward/mean``, ``runs``; rates averaged over runs."""
    by_model: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["tier"] not in TIERS:
            raise ValueError(f"row for {r['query_id']} has tier {r['tier']!r}; allowed: {TIERS}")
        by_model[r["model"]].append(r)
    out: dict[str, dict[str, float | None]] = {}
    for model, mrows in by_model.items():
        runs: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for r in mrows:
            runs[r["run"]].append(r)
        metrics: dict[str, list[float]] = defaultdict(list)
        for rr in runs.values():
            groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for r in rr:
                groups["overall"].append(r)
                groups[f"difficulty={r['difficulty']}"].append(r)
                groups[f"domain={r['domain']}"].append(r)
            for g, gr in groups.items():
                metrics[f"pass/{g}"].append(100.0 * sum(bool(r["passed"]) for r in gr) / len(gr))
            for t in TIERS:
                metrics[f"tier/{t}"].append(100.0 * sum(r["tier"] == t for r in rr) / len(rr))
            rewards = [r["reward"] for r in rr if r["reward"] is not None]
            if rewards:
                metrics["reward/mean"].append(sum(rewards) / len(rewards))
        out[model] = {k: _mean(v) for k, v in sorted(metrics.items())}
        out[model]["runs"] = float(len(runs))
    return out


def markdown_table(summary: dict[str, dict[str, float | None]], baseline: str | None = None) -> str:
    """Metrics as rows, models as columns; with ``baseline``, a delta column per other model."""
    models = list(summary)
    metrics = sorted({k for m in summary.values() for k in m}, key=lambda k: (k.split("/")[0] != "pass", k))
    others = [m for m in models if baseline and m != baseline]
    head = ["metric", *models, *[f"Δ {m} − {baseline}" for m in others]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    fmt = lambda v: "—" if v is None else f"{v:.2f}"  # noqa: E731
    for k in metrics:
        vals = [summary[m].get(k) for m in models]
        deltas = []
        for m in others:
            a, b = summary[m].get(k), summary[baseline].get(k) if baseline else None
            deltas.append("—" if a is None or b is None else f"{a - b:+.2f}")
        lines.append("| " + " | ".join([k, *map(fmt, vals), *deltas]) + " |")
    return "\n".join(lines)


def plot(summary: dict[str, dict[str, float | None]], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted({k for m in summary.values() for k in m if k.startswith("pass/")})
    fig, ax = plt.subplots(figsize=(max(6, len(keys) * 0.9), 4.5))
    width = 0.8 / max(1, len(summary))
    for i, (model, vals) in enumerate(summary.items()):
        ax.bar([j + i * width for j in range(len(keys))], [vals.get(k) or 0.0 for k in keys], width, label=model)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(keys))], [k[5:] for k in keys], rotation=40, ha="right")
    ax.set_ylabel("pass rate (%)")
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
