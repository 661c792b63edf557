"""The benchmark's own metric beside ours in the Table-1 layout, and how far the two agree (pure, plus the plot).

Per generator (rows with an ``official_metric``): ``official/<metric>``, the mean official score in percent
(averaged over sampling runs, as every Table-1 rate is), ``official/unjudged`` the percentage of its apps the
protocol could not judge here, and the agreement of our reward with the official score over the apps that
have both: ``agree/spearman`` (over apps) and ``agree/pairwise`` (pairs of apps of the same task, across the
generator's runs: with one run there are none). ``pooled_agreement`` is the same over every generator's apps
(pairs within a task across generators), the figure a reader of the whole table wants. The plot puts every
app at (official score, our reward), one colour per generator.

Run: ``official_metrics(rows)``, ``pooled_agreement(rows)``, ``official_plot(rows, path)``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tasks.evaluation.agreement import pairwise_within, spearman
from tasks.evaluation.summary import by_model_run, mean_of


def _scored(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r.get("official_metric")]


def agreement(rows: list[dict[str, Any]], task_of: Any = None) -> dict[str, Any]:
    """Spearman and pairwise-within-a-task agreement of reward and official score over ``rows``."""
    task_of = task_of or (lambda r: r["query_id"])
    both = [r for r in rows if r["reward"] is not None and r.get("official_score") is not None]
    pw = pairwise_within([(task_of(r), r["reward"], r["official_score"]) for r in both])
    return {"apps": len(both), "spearman": spearman([r["reward"] for r in both], [r["official_score"] for r in both]),
            "pairwise": pw.rate, "pairs": pw.pairs, "reward_ties": pw.reward_ties}


def official_metrics(rows: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """model -> ``official/<metric>``, ``official/unjudged``, ``agree/spearman``, ``agree/pairwise``."""
    out: dict[str, dict[str, float | None]] = {}
    for model, runs in by_model_run(_scored(rows)).items():
        mrows = [r for rr in runs.values() for r in rr]
        per_run = [mean_of([100.0 * r["official_score"] for r in rr if r["official_score"] is not None])
                   for rr in runs.values()]
        unjudged = [100.0 * sum(r["official_score"] is None for r in rr) / len(rr) for rr in runs.values()]
        agree = agreement(mrows)
        out[model] = {f"official/{mrows[0]['official_metric']}": mean_of([x for x in per_run if x is not None]),
                      "official/unjudged": mean_of(unjudged), "agree/spearman": agree["spearman"],
                      "agree/pairwise": agree["pairwise"]}
    return out


def pooled_agreement(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Agreement over every generator's apps (None: no row has an official metric)."""
    scored = _scored(rows)
    return agreement(scored) if scored else None


def agreement_line(pooled: dict[str, Any] | None, metric: str | None) -> str:
    """One sentence for the report's header ('' without an official metric)."""
    if pooled is None:
        return ""
    fmt = lambda v: "—" if v is None else f"{v:.2f}"  # noqa: E731
    return (f"Our reward against the benchmark's own {metric} over {pooled['apps']} apps of all generators: "
            f"Spearman {fmt(pooled['spearman'])}, pairwise within a task {fmt(pooled['pairwise'])} "
            f"({pooled['pairs']} pairs, {pooled['reward_ties']} reward ties).")


def official_plot(rows: list[dict[str, Any]], path: Path) -> Path | None:
    """Our reward against the official score, one dot per app, one colour per generator (None: nothing to plot)."""
    scored = [r for r in _scored(rows) if r["reward"] is not None and r["official_score"] is not None]
    if not scored:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.6, 4.6))
    for k, model in enumerate(dict.fromkeys(r["model"] for r in scored)):
        mine = [r for r in scored if r["model"] == model]
        jitter = [0.012 * (((i * 0.618) % 1) - 0.5) for i in range(len(mine))]  # ties stay visible
        ax.scatter([r["official_score"] + j for r, j in zip(mine, jitter)], [r["reward"] for r in mine], s=18,
                   alpha=0.7, label=model, color=f"C{k}")
    ax.set_xlabel(f"official {scored[0]['official_metric']} per app")
    ax.set_ylabel("our reward per app")
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-0.05, 1.05)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
