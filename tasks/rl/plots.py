"""Plots of a GRPO run from its ``rollouts`` stage: reward by step, tier shares, valid-app rate and the
weighted-token share (paper 3.5: the share of response tokens whose weight was set by attribution,
i.e. differs from the sign's ordinary weight). One PNG written with the run, linked from the artifact.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from schemas.config.attribution import AttributionConfig
from schemas.config.train import RULE_OF_MODE
from schemas.contracts.env import TIERS
from tasks.attribution.weights import OTHER, token_weights


def step_series(rows: list[dict[str, Any]], attribution: AttributionConfig) -> dict[str, list[Any]]:
    """Per step: mean reward, tier shares (% of responses), valid-app rate (%), weighted-token share (%).

    A token counts as weighted when its weight differs from what the one weight rule
    (``tasks.attribution.weights``) gives an unattributed token for the response's advantage, under the
    rule the row's training mode applied (``mode``: uniform weights are never attributed).
    """
    by_step: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_step[r["step"]].append(r)
    out: dict[str, list[Any]] = defaultdict(list)
    for step in sorted(by_step):
        rs = by_step[step]
        rewards = [r["reward"] for r in rs if r["reward"] is not None]
        out["step"].append(step)
        out["reward_mean"].append(sum(rewards) / len(rewards) if rewards else float("nan"))
        for t in TIERS:
            out[f"tier/{t}"].append(100.0 * sum(r["tier"] == t for r in rs) / len(rs))
        out["valid_rate"].append(100.0 * sum(r["tier"] == "valid" for r in rs) / len(rs))
        tokens = weighted = 0
        for r in rs:
            other = float(token_weights([OTHER], r["advantage"], attribution, rule=RULE_OF_MODE[r["mode"]])[0][0])
            ws = r["token_weights"] or []
            tokens += len(ws)
            weighted += sum(abs(w - other) > 1e-6 for w in ws)
        out["weighted_token_share"].append(100.0 * weighted / tokens if tokens else 0.0)
    return dict(out)


def plot_run(series: dict[str, list[Any]], path: Path, title: str = "") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = series.get("step", [])
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.5))
    ax = axes[0][0]
    ax.plot(steps, series.get("reward_mean", []), marker="o")
    ax.set_title("mean reward by step")
    ax = axes[0][1]
    bottom = [0.0] * len(steps)
    for t in TIERS:
        vals = series.get(f"tier/{t}", [0.0] * len(steps))
        ax.bar(steps, vals, bottom=bottom, label=t)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_title("tier shares (%)")
    ax.legend(fontsize=7)
    axes[1][0].plot(steps, series.get("valid_rate", []), marker="o", color="green")
    axes[1][0].set_title("valid-app rate (%)")
    axes[1][0].set_ylim(0, 100)
    axes[1][1].plot(steps, series.get("weighted_token_share", []), marker="o", color="purple")
    axes[1][1].set_title("weighted-token share (%)")
    for a in axes.flat:
        a.set_xlabel("step")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def write_run_plots(store: Any, run_dir: Path, attribution: Any) -> Path:
    """``<run_dir>/train_rl.png`` from the run's published ``rollouts`` stage."""
    cols = ["step", "reward", "tier", "advantage", "token_weights", "mode"]
    series = step_series(store.read("rollouts", columns=cols).to_pylist(), attribution)
    return plot_run(series, run_dir / "train_rl.png", f"train-rl {run_dir.name}")
