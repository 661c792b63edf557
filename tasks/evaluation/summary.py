"""Evaluation summaries in the layout of the paper's Table 1: pass rate (every rubric item met and
every gate passed) overall, by difficulty, domain and category, tier rates, mean reward, output
tokens and generation time per response, each averaged over N sampling runs (the paper averages
MiniAppBench over eight runs), with the spread over runs (``spread/...``: population standard
deviation of the per-run values). Pure functions over rows.

A row: ``{"model", "run", "query_id", "difficulty", "domain", "tier", "passed", "reward"}`` and optionally
``category``, ``output_tokens``, ``generation_s``; tier is one of ``TIERS``. Rows with a missing reward
still count for pass rate and tiers (a judge failure is not a pass) but not for the mean reward.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from schemas.config.env import SCORED_TIERS as TIERS


SPREAD_OF = ("pass/overall", "reward/mean")  # metrics whose spread over runs the table shows


def mean_of(xs: list[float]) -> float | None:
    """The mean, None for no values."""
    return sum(xs) / len(xs) if xs else None


def _std(xs: list[float]) -> float | None:
    m = mean_of(xs)
    return None if m is None else (sum((x - m) ** 2 for x in xs) / len(xs)) ** 0.5


def summarize(rows: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """model -> metric -> value; metrics are ``pass/overall``, ``pass/difficulty=easy``,
    ``pass/domain=Games``, ``tier/valid``, ``reward/mean``, ``runs``; rates averaged over runs."""
    for r in rows:
        if r["tier"] not in TIERS:
            raise ValueError(f"row for {r['query_id']} has tier {r['tier']!r}; allowed: {TIERS}")
    out: dict[str, dict[str, float | None]] = {}
    for model, runs in by_model_run(rows).items():
        metrics: dict[str, list[float]] = defaultdict(list)
        for rr in runs.values():
            groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for r in rr:
                groups["overall"].append(r)
                groups[f"difficulty={r['difficulty']}"].append(r)
                groups[f"domain={r['domain']}"].append(r)
                if r.get("category") is not None:
                    groups[f"category={r['category']}"].append(r)
            for g, gr in groups.items():
                metrics[f"pass/{g}"].append(100.0 * sum(bool(r["passed"]) for r in gr) / len(gr))
            for key, col in (("tokens/output_mean", "output_tokens"), ("time/generation_s_mean", "generation_s")):
                got = [r[col] for r in rr if r.get(col) is not None]
                if got:
                    metrics[key].append(sum(got) / len(got))
            for t in TIERS:
                metrics[f"tier/{t}"].append(100.0 * sum(r["tier"] == t for r in rr) / len(rr))
            rewards = [r["reward"] for r in rr if r["reward"] is not None]
            if rewards:
                metrics["reward/mean"].append(sum(rewards) / len(rewards))
        out[model] = {k: mean_of(v) for k, v in sorted(metrics.items())}
        out[model].update({f"spread/{k}": _std(metrics[k]) for k in SPREAD_OF if metrics.get(k)})
        out[model]["runs"] = float(len(runs))
    return out


def fmt_delta(a: float | None, b: float | None) -> str:
    """``a - b`` signed to two decimals; a float residue below the last digit shows as +0.00, not -0.00."""
    if a is None or b is None:
        return "—"
    d = a - b
    return f"{0.0 if abs(d) < 0.005 else d:+.2f}"


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
            deltas.append(fmt_delta(a, b))
        lines.append("| " + " | ".join([k, *map(fmt, vals), *deltas]) + " |")
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path) -> Path:
    """The spread, not only the means: every response's reward per generator (jittered dots over a box),
    and each run's pass rate per generator (dots) with the mean over runs (bar)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(r["model"] for r in rows))
    rewards = [[r["reward"] for r in rows if r["model"] == m and r["reward"] is not None] for m in models]
    per_run = [[100.0 * mean_of([float(bool(r["passed"])) for r in rr]) for rr in by_model_run(rows)[m].values()]
               for m in models]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(max(7, 2.4 * len(models)), 4.2))
    ax1.boxplot([x or [float("nan")] for x in rewards], showfliers=False)
    for i, xs in enumerate(rewards, start=1):
        ax1.scatter([i + 0.25 * ((k * 0.618) % 1 - 0.5) for k in range(len(xs))], xs, s=10, alpha=0.6)
    ax1.set_xticks(range(1, len(models) + 1), models, rotation=20, ha="right")
    ax1.set_ylabel("reward per response")
    ax1.set_ylim(-0.05, 1.05)
    ax2.bar(range(len(models)), [mean_of(p) or 0.0 for p in per_run], color="#cfd8e3", label="mean over runs")
    for i, ps in enumerate(per_run):
        ax2.scatter([i] * len(ps), ps, color="#1f4e79", zorder=3, label="one run" if i == 0 else None)
    ax2.set_xticks(range(len(models)), models, rotation=20, ha="right")
    ax2.set_ylabel("pass rate per run (%)")
    ax2.set_ylim(0, 100)
    ax2.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def by_model_run(rows: list[dict[str, Any]]) -> dict[str, dict[int, list[dict[str, Any]]]]:
    """model -> sampling run -> its rows (models and runs in the order they first appear)."""
    out: dict[str, dict[int, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        out[r["model"]][r["run"]].append(r)
    return out
